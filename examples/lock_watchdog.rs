//! Redisson's lock watchdog: a distributed lock is taken with a lease (30 s by
//! default), and while the holder keeps it, a watchdog renews the lease every
//! lease/3 (10 s), so a long critical section never loses the lock, while a
//! crashed holder loses it at most one lease after its last renewal.
//!
//! A simulated lock store (a map of key -> owner and lease expiry, standing in
//! for Redis) and two workers:
//!
//! 1. `worker-a` takes the lock and holds it for 95 s, three times the lease.
//!    The watchdog (`Timer::schedule_every(lease / 3, renew)`) keeps pushing
//!    the expiry back; a probe (a `Timer::interval`) shows the lease never
//!    runs out. Then
//!    `worker-a` releases it: the watchdog is cancelled and the lock is free
//!    at once.
//! 2. `worker-b` takes the lock and "crashes" at 150 s: its watchdog stops
//!    (as it would with the process) but nobody unlocks. The lease runs out
//!    30 s after the last renewal and `worker-c`, waiting for the lock, gets
//!    it then, not before.
//!
//! It runs on tokio's paused clock, so some 200 simulated seconds take a few
//! milliseconds and the output is the same on every run. It exits with
//! status 1 if the lock was ever lost while held, or freed too early.
//!
//! ```text
//! cargo run --example lock_watchdog
//! ```

use std::collections::HashMap;
use std::fmt;
use std::process;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickwheel::{PeriodicTask, Timer};
use tokio::time::Instant;

/// Redisson's default lease (`lockWatchdogTimeout`).
const LEASE: Duration = Duration::from_secs(30);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The lock store: what Redis holds for each key.
#[derive(Default)]
struct Store {
    locks: Mutex<HashMap<&'static str, (&'static str, Instant)>>,
}

/// A renewal for a lock the caller no longer holds.
#[derive(Debug)]
struct NotOwner;

impl fmt::Display for NotOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the lock is not held by this owner any more")
    }
}

impl std::error::Error for NotOwner {}

impl Store {
    /// The owner of `key` and when its lease ends, if the lease is live.
    fn holder(&self, key: &'static str) -> Option<(&'static str, Instant)> {
        let locks = self.locks.lock().unwrap();
        locks
            .get(key)
            .copied()
            .filter(|&(_, expires)| Instant::now() < expires)
    }

    fn try_lock(&self, key: &'static str, owner: &'static str) -> bool {
        let free = self.holder(key).is_none();
        if free {
            let expires = Instant::now() + LEASE;
            self.locks.lock().unwrap().insert(key, (owner, expires));
        }
        free
    }

    /// Redisson's renewal script: extend only if `owner` still holds it.
    fn renew(&self, key: &'static str, owner: &'static str) -> Result<(), NotOwner> {
        match self.holder(key) {
            Some((holder, _)) if holder == owner => {
                let expires = Instant::now() + LEASE;
                self.locks.lock().unwrap().insert(key, (owner, expires));
                Ok(())
            }
            _ => Err(NotOwner),
        }
    }

    fn unlock(&self, key: &'static str, owner: &'static str) {
        let mut locks = self.locks.lock().unwrap();
        if locks.get(key).is_some_and(|&(holder, _)| holder == owner) {
            locks.remove(key);
        }
    }
}

/// A held lock and its watchdog.
struct Guard {
    store: Arc<Store>,
    key: &'static str,
    owner: &'static str,
    watchdog: PeriodicTask,
}

impl Guard {
    /// Takes the lock (polling once a second until it is free) and starts
    /// the watchdog.
    async fn lock(
        timer: &Timer,
        store: &Arc<Store>,
        key: &'static str,
        owner: &'static str,
        start: Instant,
    ) -> Guard {
        while !store.try_lock(key, owner) {
            timer.sleep(secs(1)).await;
        }
        println!("[{:6.1}s] {owner}: took {key:?}", t(start));
        let watchdog = timer
            .schedule_every(LEASE / 3, {
                let store = store.clone();
                move || {
                    let store = store.clone();
                    async move { store.renew(key, owner) }
                }
            })
            .on_error(move |err| println!("[{:6.1}s] {owner}: watchdog: {err}", t(start)))
            .start();
        Guard {
            store: store.clone(),
            key,
            owner,
            watchdog,
        }
    }

    /// Stops the watchdog and unlocks.
    fn unlock(self, start: Instant) {
        self.watchdog.cancel();
        self.store.unlock(self.key, self.owner);
        println!(
            "[{:6.1}s] {}: released {:?} (the watchdog renewed it {} times)",
            t(start),
            self.owner,
            self.key,
            self.watchdog.runs()
        );
    }

    /// A crash: the watchdog dies with the process, nobody unlocks.
    fn crash(self, start: Instant) {
        self.watchdog.cancel();
        println!(
            "[{:6.1}s] {}: crashed while holding {:?}",
            t(start),
            self.owner,
            self.key
        );
    }
}

fn t(start: Instant) -> f64 {
    (Instant::now() - start).as_secs_f64()
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let timer = Timer::new();
    let store = Arc::new(Store::default());
    let start = Instant::now();
    let key = "orders:42";
    let mut ok = true;

    // 1. A long critical section: the lease never runs out while held.
    let a = Guard::lock(&timer, &store, key, "worker-a", start).await;
    // Probe between renewals (renewals at 10, 20, ... s; probes at 5, 15, ...).
    let mut probe = timer.interval_at(start + secs(5), secs(10));
    let hold_until = start + secs(95);
    while probe.tick().await < hold_until {
        match store.holder(key) {
            Some(("worker-a", expires)) => println!(
                "[{:6.1}s]   probe: held by worker-a, lease ends in {:.1}s",
                t(start),
                (expires - Instant::now()).as_secs_f64()
            ),
            other => {
                println!("[{:6.1}s]   probe: LOST while held: {other:?}", t(start));
                ok = false;
            }
        }
    }
    a.unlock(start);
    let free = store.holder(key).is_none();
    println!(
        "[{:6.1}s]   probe: free right after release: {free}",
        t(start)
    );
    ok &= free;
    timer.sleep(LEASE).await;
    ok &= store.holder(key).is_none();

    // 2. A crash: the lease runs out one lease after the last renewal.
    let b = Guard::lock(&timer, &store, key, "worker-b", start).await;
    timer.sleep_until(start + secs(150)).await;
    b.crash(start);
    let (_, expires) = store.holder(key).expect("worker-b's lease is still live");
    println!(
        "[{:6.1}s]   probe: worker-b's lease ends at {:.1}s",
        t(start),
        (expires - start).as_secs_f64()
    );
    let c = Guard::lock(&timer, &store, key, "worker-c", start).await;
    let waited_until = Instant::now();
    let too_early = waited_until < expires;
    let too_late = waited_until > expires + secs(1); // worker-c polls each second
    if too_early || too_late {
        println!("worker-c got the lock at the wrong time");
        ok = false;
    }
    c.unlock(start);

    println!();
    println!(
        "{}: the lease never expired while held, freed on release, expired {:.0}s after a crash",
        if ok { "OK" } else { "FAILED" },
        LEASE.as_secs_f64()
    );
    if !ok {
        process::exit(1);
    }
}
