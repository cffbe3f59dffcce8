//! Many concurrent RPCs, each under `timer.timeout` and retried with
//! exponential backoff and jitter: the everyday use of a wheel timer in a
//! client library.
//!
//! 10,000 calls run at once against a simulated server that is overloaded for
//! its first 2 seconds (most calls stall past their 300 ms deadline), then
//! recovers. Each call gets up to 6 attempts, waiting 100 ms, 200 ms, 400 ms,
//! ... (full jitter, so the clients that failed together do not come back
//! together). The runtime runs on tokio's paused clock, so the simulated
//! seconds pass in milliseconds and the run is the same every time.
//!
//! It prints how many calls succeeded at each attempt, how many gave up, and
//! the timer's statistics, and exits non-zero unless every call finished,
//! no attempt timed out early, and the wheel ended empty.
//!
//! Run: `cargo run --example rpc_timeouts`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickwheel::retry::{Backoff, Jitter};
use tickwheel::Timer;
use tokio::task::JoinSet;
use tokio::time::Instant;

const CALLS: u64 = 10_000;
const ATTEMPTS: usize = 6;
const DEADLINE: Duration = Duration::from_millis(300);
/// The server stalls most calls until this long after the start.
const OVERLOADED_FOR: Duration = Duration::from_secs(2);

/// The simulated server: while overloaded, 9 calls in 10 take 1 s; after
/// that every call takes 20 ms.
async fn server_call(timer: &Timer, started: Instant, call: u64, attempt: u64) -> u64 {
    let overloaded = started.elapsed() < OVERLOADED_FOR;
    let stalls = (call * 7 + attempt * 13) % 10 != 0;
    let latency = if overloaded && stalls {
        Duration::from_secs(1)
    } else {
        Duration::from_millis(20)
    };
    timer.sleep(latency).await;
    call
}

#[derive(Default)]
struct Tally {
    /// `succeeded_at[n]`: calls that succeeded on attempt `n + 1`.
    succeeded_at: [AtomicU64; ATTEMPTS],
    gave_up: AtomicU64,
    timeouts: AtomicU64,
    early_timeouts: AtomicU64,
}

async fn call_with_retries(timer: Timer, started: Instant, call: u64, tally: Arc<Tally>) {
    let mut attempt = 0;
    let result = timer
        .retry(
            Backoff::exponential(Duration::from_millis(100))
                .jitter(Jitter::Full)
                .seed(call)
                .max_attempts(ATTEMPTS),
            || {
                attempt += 1;
                let (timer, tally) = (timer.clone(), tally.clone());
                let this_attempt = attempt;
                async move {
                    let sent = Instant::now();
                    let reply = timer
                        .timeout(DEADLINE, server_call(&timer, started, call, this_attempt))
                        .await;
                    if reply.is_err() {
                        tally.timeouts.fetch_add(1, Ordering::Relaxed);
                        if sent.elapsed() < DEADLINE {
                            tally.early_timeouts.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    reply.map(|value| (value, this_attempt))
                }
            },
        )
        .await;
    match result {
        Ok((_, attempt)) => {
            tally.succeeded_at[attempt as usize - 1].fetch_add(1, Ordering::Relaxed);
        }
        Err(_timed_out) => {
            tally.gave_up.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let ok = runtime.block_on(async {
        let timer = Timer::new();
        let tally = Arc::new(Tally::default());
        let started = Instant::now();
        let mut calls = JoinSet::new();
        for call in 0..CALLS {
            calls.spawn(call_with_retries(
                timer.clone(),
                started,
                call,
                tally.clone(),
            ));
        }
        while let Some(done) = calls.join_next().await {
            done.expect("a call task panicked");
        }

        println!(
            "{CALLS} calls, {DEADLINE:?} deadline per attempt, up to {ATTEMPTS} attempts, \
             server overloaded for {OVERLOADED_FOR:?}"
        );
        let mut finished = 0;
        for (n, count) in tally.succeeded_at.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            finished += count;
            println!("succeeded on attempt {}: {count:>6}", n + 1);
        }
        let gave_up = tally.gave_up.load(Ordering::Relaxed);
        let early = tally.early_timeouts.load(Ordering::Relaxed);
        println!("gave up:               {gave_up:>6}");
        println!(
            "attempts timed out:    {:>6}",
            tally.timeouts.load(Ordering::Relaxed)
        );
        println!("simulated time:        {:?}", started.elapsed());
        println!("timer: {:?}", timer.stats());
        finished + gave_up == CALLS && early == 0 && timer.pending() == 0
    });
    if !ok {
        eprintln!(
            "rpc_timeouts: a call was lost, a timeout fired early, or the wheel kept a timer"
        );
        std::process::exit(1);
    }
}
