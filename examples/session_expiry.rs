//! A session table whose entries expire after 30 s of idle time and are
//! refreshed on every use: one `DelayQueue` and one task for all sessions,
//! instead of a task and a sleep per session.
//!
//! A simulated server handles requests from 2,000 users for 3 simulated
//! minutes. Each user logs in, sends requests at random gaps, and some users
//! pause for longer than the idle timeout. The table keeps each session's
//! `Key` in the queue; a request refreshes it with `reset` (moving its
//! deadline later costs one write), a logout removes it, and the task
//! draining the queue expires the idle ones. Every request records whether
//! its session was still alive, and the example checks the table against
//! what the users did:
//!
//! - a request less than 30 s after the same user's previous one always
//!   finds the session alive (never expired early);
//! - a request more than 30 s + one tick after the previous one always
//!   finds it expired;
//! - every session ends as exactly one of: logged out, expired, or still
//!   live at the end.
//!
//! It runs on tokio's paused clock, so the 3 minutes take well under a
//! second and the output is the same on every run. It exits with status 1
//! if a check fails.
//!
//! ```text
//! cargo run --example session_expiry
//! ```

use std::collections::HashMap;
use std::process;
use std::time::Duration;

use futures::StreamExt;
use tickwheel::delay_queue::{DelayQueue, Key};
use tickwheel::Timer;
use tokio::sync::mpsc;
use tokio::time::Instant;

const IDLE: Duration = Duration::from_secs(30);
const USERS: u64 = 2_000;
const RUN_FOR: Duration = Duration::from_secs(180);

/// What a user sends.
#[derive(Debug)]
enum Event {
    Login(u64),
    Request(u64),
    Logout(u64),
}

/// The session table: each live session's key in the expiry queue, by
/// user, and the queue.
struct Table {
    sessions: HashMap<u64, Key>,
    expiry: DelayQueue<u64>,
}

#[derive(Debug, Default)]
struct Outcome {
    logins: u64,
    served: u64,
    refused: u64,
    logouts: u64,
    expired: u64,
}

impl Table {
    /// Handles one event; returns whether a request found its session.
    fn handle(&mut self, event: Event, outcome: &mut Outcome) -> Option<bool> {
        match event {
            Event::Login(user) => {
                let key = self.expiry.insert(user, IDLE);
                let old = self.sessions.insert(user, key);
                assert!(old.is_none(), "user {user} logged in twice");
                outcome.logins += 1;
                None
            }
            Event::Request(user) => match self.sessions.get_mut(&user) {
                Some(key) => {
                    // Used: the session lives another IDLE from now.
                    self.expiry.reset(key, IDLE);
                    outcome.served += 1;
                    Some(true)
                }
                None => {
                    outcome.refused += 1;
                    Some(false)
                }
            },
            Event::Logout(user) => {
                if let Some(key) = self.sessions.remove(&user) {
                    let expired = self.expiry.remove(&key);
                    assert_eq!(expired.into_inner(), user);
                    outcome.logouts += 1;
                }
                None
            }
        }
    }

    /// An idle session's timeout came: it leaves the table.
    fn expire(&mut self, user: u64, outcome: &mut Outcome) {
        assert!(
            self.sessions.remove(&user).is_some(),
            "an expiring session is in the table"
        );
        outcome.expired += 1;
    }
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// One user's life: log in, send requests at random gaps (some longer than
/// the idle timeout), maybe log out. Each request reports its gap since the
/// previous one and whether the session was found.
async fn user(
    timer: Timer,
    id: u64,
    events: mpsc::UnboundedSender<(Event, Option<mpsc::UnboundedSender<bool>>)>,
    checks: mpsc::UnboundedSender<(u64, Duration, bool)>,
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id.wrapping_mul(0x1000_0001) + 1));
    timer.sleep(Duration::from_millis(rng.below(10_000))).await;
    let _ = events.send((Event::Login(id), None));
    let mut last = Instant::now();
    let (answer_tx, mut answers) = mpsc::unbounded_channel();
    loop {
        // Mostly short gaps; one in eight longer than the idle timeout.
        let gap = if rng.below(8) == 0 {
            Duration::from_millis(30_500 + rng.below(20_000))
        } else {
            Duration::from_millis(500 + rng.below(20_000))
        };
        timer.sleep(gap).await;
        if rng.below(40) == 0 {
            let _ = events.send((Event::Logout(id), None));
            return;
        }
        let _ = events.send((Event::Request(id), Some(answer_tx.clone())));
        let Some(found) = answers.recv().await else {
            return;
        };
        let now = Instant::now();
        let _ = checks.send((id, now - last, found));
        if !found {
            return; // expired: this user goes away
        }
        last = now;
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let timer = Timer::new();
    let start = Instant::now();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (checks_tx, mut checks) = mpsc::unbounded_channel();
    for id in 0..USERS {
        tokio::spawn(user(
            timer.clone(),
            id,
            events_tx.clone(),
            checks_tx.clone(),
        ));
    }
    drop((events_tx, checks_tx));

    let mut table = Table {
        sessions: HashMap::new(),
        expiry: DelayQueue::with_timer(&timer),
    };
    let mut outcome = Outcome::default();
    let end = timer.sleep(RUN_FOR);
    tokio::pin!(end);
    loop {
        tokio::select! {
            Some((event, answer)) = events.recv() => {
                let found = table.handle(event, &mut outcome);
                if let (Some(found), Some(answer)) = (found, answer) {
                    let _ = answer.send(found);
                }
            }
            // `Ready(None)` while the table is empty disables this branch
            // until the next loop turn; an insert wakes the task anyway.
            Some(expired) = table.expiry.next() => {
                let user = expired.into_inner();
                table.expire(user, &mut outcome);
            }
            () = &mut end => break,
        }
    }

    let mut failures = Vec::new();
    let mut requests_checked = 0;
    let tick = timer.tick();
    while let Ok((id, gap, found)) = checks.try_recv() {
        requests_checked += 1;
        if gap < IDLE && !found {
            failures.push(format!("user {id}: session gone after only {gap:?} idle"));
        }
        if gap > IDLE + tick && found {
            failures.push(format!("user {id}: session alive after {gap:?} idle"));
        }
    }
    let live = table.sessions.len() as u64;
    if outcome.logins != outcome.logouts + outcome.expired + live {
        failures.push(format!("sessions do not add up: {outcome:?}, {live} live"));
    }
    if table.expiry.len() as u64 != live {
        failures.push(format!(
            "{} timeouts queued for {live} live sessions",
            table.expiry.len()
        ));
    }
    if outcome.expired == 0 || outcome.served == 0 || outcome.refused == 0 {
        failures.push(format!("the run exercised too little: {outcome:?}"));
    }

    println!(
        "{:.0} s simulated: {} logins, {} requests served, {} refused (session expired), \
         {} logouts, {} sessions expired, {live} live at the end",
        (Instant::now() - start).as_secs_f64(),
        outcome.logins,
        outcome.served,
        outcome.refused,
        outcome.logouts,
        outcome.expired,
    );
    println!("checked {requests_checked} requests against their idle gaps");
    if !failures.is_empty() {
        for failure in failures.iter().take(10) {
            eprintln!("FAILED: {failure}");
        }
        process::exit(1);
    }
    println!("ok: no session expired early, none outlived its idle timeout by more than a tick");
}
