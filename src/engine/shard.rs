//! A shard: one wheel behind its own lock, and the registration protocol a
//! `Sleep` follows to use it.
//!
//! A timer has several shards, and each thread sticks to one of them (picked
//! round-robin the first time the thread makes a sleep), so two threads
//! registering and cancelling at once lock different mutexes: no lock is
//! shared by the whole timer, which is the cost tokio's per-runtime timer
//! mutex has. A sleep remembers its shard, so a sleep that migrates to
//! another worker still cancels in its own shard.
//!
//! Wakers are always woken, and replaced or removed wakers always dropped,
//! after the lock is released: waking or dropping a waker runs executor code,
//! which must never run under a wheel lock. The lock is private to this file,
//! so every operation on a wheel (registration, the driver's advance, the
//! drain at shutdown, the statistics) goes through a method here that keeps
//! that rule.
//!
//! # What a timeout cancelled before its tick costs
//!
//! Registering pushes the entry onto the wheel's fresh list and cancelling
//! unlinks it from there (`wheel/mod.rs`): no bucket, no bitmap, no
//! overflow, unless a driver pass came in between and filed it (or the
//! shard already held 64 unfiled entries: a burst is filed as it comes,
//! so no pass has to file it all at once). What is left is one clock read
//! (when the sleep is made), the sleep's reference to its shard (an atomic
//! increment, and a decrement at its drop), the waker's clone and drop (two
//! more, on tokio's task, unless the thread kept this task's waker from its
//! last cancel: `spare.rs`), and this shard's lock taken twice, mostly
//! uncontended (each thread usually has a shard of its own): a
//! compare-and-swap each time, and a plain store to release it
//! (`raw/lock.rs`). Those six atomic read-modify-writes (four with a kept
//! waker) and some 750 instructions are the cost (removing two saved 4-8
//! ns on the 2-core machine BENCHMARKS.md reports from): what safe Rust,
//! plus that lock, needs to hand a waker to another thread and take
//! it back; see BENCHMARKS.md, "Round 6: lean registration".

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;

use crate::engine::raw::lock::WheelLock;
use crate::engine::shared::Shared;
use crate::engine::spare;
use crate::engine::sync;
use crate::engine::unwind;
use crate::engine::wheel::{Advance, Insert, Key, Reset, Tally, TimerWheel, WakerCheck};

/// Wakers collected under a shard lock before it is released to wake them.
pub(crate) const WAKE_BATCH: usize = 64;

#[repr(align(128))] // one shard's lock word never shares a cache line with another's
pub(crate) struct Shard {
    /// The lock does not poison (`raw/lock.rs`): no user code runs under
    /// it, so only a wheel's own debug assertion can panic there.
    wheel: WheelLock<TimerWheel>,
    pub(crate) shared: Arc<Shared>,
    /// The earliest tick this shard needs the driver to process (`u64::MAX`:
    /// none), lowered by registrations and set by advances, always under
    /// the lock; read without it by the driver's scan, which skips a shard
    /// with nothing due (see `Shard::due`).
    due: sync::AtomicU64,
}

impl Shard {
    pub(crate) fn new(wheel: TimerWheel, shared: Arc<Shared>) -> Self {
        Shard {
            due: sync::AtomicU64::new(u64::MAX),
            wheel: WheelLock::new(wheel),
            shared,
        }
    }

    /// Registers `waker` for `deadline_ns`, waking the driver if needed.
    #[inline]
    pub(crate) fn register(&self, deadline_ns: u64, waker: &Waker) -> Insert {
        let mut waker = Some(spare::clone_of(waker));
        let outcome = {
            let mut wheel = self.wheel.lock();
            let outcome = wheel.insert(deadline_ns, &mut waker);
            if let Insert::Registered { tick, .. } = outcome {
                self.lower_due(tick);
            }
            outcome
        };
        drop(waker); // still here if the wheel refused it: drop after the lock
        if let Insert::Registered { tick, .. } = outcome {
            self.shared.registered(tick);
        }
        outcome
    }

    /// Re-poll of a registered sleep: [`Polled::Pending`] while it is still
    /// pending (with `waker` now the one to wake), [`Polled::Fired`] once it
    /// fired or was cancelled, [`Polled::Passed`] if its deadline was last
    /// set by a reset that read no clock and `passed()` (which reads it,
    /// outside the lock) says it has passed: the entry is then removed.
    ///
    /// The common re-poll (same task) locks once; a different task's waker
    /// is cloned between two locks, so no waker code runs under the lock.
    pub(crate) fn poll_registered(
        &self,
        key: Key,
        waker: &Waker,
        passed: impl FnOnce() -> bool,
    ) -> Polled {
        let (check, unchecked) = self.wheel.lock().check_waker(key, waker);
        if unchecked && passed() {
            // Fired meanwhile or not, the sleep is complete; a waker taken
            // back is dropped here, unlocked.
            drop(self.cancel(key));
            return Polled::Passed;
        }
        match check {
            WakerCheck::Gone => Polled::Fired,
            WakerCheck::Same => Polled::Pending,
            WakerCheck::Different => {
                let new = waker.clone();
                let swapped = self.wheel.lock().swap_waker(key, new);
                // Old waker, or the new one handed back: dropped unlocked.
                swapped.map_or(Polled::Fired, |_| Polled::Pending)
            }
        }
    }

    /// Unregisters `key` (a sleep dropped, or reset or polled past its
    /// deadline); returns its waker if it was still pending. With no handle
    /// left, a parked driver only learns here that the entry it kept alive
    /// for is gone: it is told (a sleep still alive then, the dropping one
    /// included, is looked for again once a second).
    pub(crate) fn cancel(&self, key: Key) -> Option<Waker> {
        let waker = self.wheel.lock().remove(key);
        // Told after the lock, whose guard ended with the `let`.
        waker.inspect(|_| self.removed_one())
    }

    /// An entry was removed outside a pass: an orphaned driver is told.
    fn removed_one(&self) {
        if self.shared.is_orphaned() {
            self.shared.nudge();
        }
    }

    /// Moves registered `key` to `deadline_ns`; `unchecked` if the caller
    /// did not compare it with the clock (the next poll then does).
    /// A reset recorded in place ([`Reset::InPlace`]) tells nobody: the
    /// list it stays in was told when it was linked.
    pub(crate) fn reset(&self, key: Key, deadline_ns: u64, unchecked: bool) -> Reset {
        let outcome = {
            let mut wheel = self.wheel.lock();
            let outcome = wheel.reset(key, deadline_ns, unchecked);
            if let Reset::Moved { tick } = outcome {
                self.lower_due(tick);
            }
            outcome
        };
        match outcome {
            Reset::Moved { tick } => self.shared.registered(tick),
            Reset::Elapsed(_) => self.removed_one(),
            _ => {}
        }
        outcome
    }

    /// The earliest tick this shard needs processed (`u64::MAX`: none), read
    /// without the lock. A scan that finds it later than the tick it
    /// processes to skips the shard.
    ///
    /// Why that misses no registration: one that does not lower it is due
    /// no earlier than the value the scan read (only this shard's lock
    /// writes it, and an advance's write reaches the next scan through the
    /// driver's pass lock), so the driver wakes for it anyway. One that
    /// lowers it does so *before* it compares its tick with the driver's
    /// target, with a `SeqCst` fence between, and the scan clears the
    /// target *before* it reads this, with a fence between
    /// (`Shared::begin_scan`): so either the scan sees the lowered value, or
    /// the registration sees the cleared (or the final) target and tells the
    /// driver, as when the scan's lock came first (`shared.rs`). The loom
    /// models `loom_register_racing_the_scan_*`, `loom_register_*_idle_skip_*`
    /// and `loom_two_shards_racing_registrations_are_never_missed` check it.
    pub(crate) fn due(&self) -> u64 {
        self.due.load(Ordering::Relaxed)
    }

    /// Under the lock: `tick` was just linked (see [`Shard::due`]).
    fn lower_due(&self, tick: u64) {
        if tick < self.due.load(Ordering::Relaxed) {
            self.due.store(tick, Ordering::Relaxed);
            // Before the registration reads the driver's target.
            sync::fence(Ordering::SeqCst);
        }
    }

    /// Whether the wheel has processed `tick` (so fired every entry in it):
    /// the loom models tell a race's order by it.
    #[cfg(all(test, tickwheel_loom))]
    pub(crate) fn has_fired(&self, tick: u64) -> bool {
        tick <= self.wheel.lock().elapsed()
    }

    pub(crate) fn is_live(&self, key: Key) -> bool {
        self.wheel.lock().is_live(key)
    }

    /// Fires every entry due by `now_tick` (`now_ns`), waking their tasks in
    /// batches of `WAKE_BATCH`, each after the lock is released. `wakers` is
    /// the (empty) buffer to collect them in; wakers that panic are counted in
    /// `panics`. If anything panics on the way, the wakers already taken out
    /// of the wheel are still woken. Returns how many fired, and the next
    /// tick this shard needs processed (`u64::MAX`: none).
    pub(crate) fn advance(
        &self,
        now_tick: u64,
        now_ns: u64,
        wakers: &mut Vec<Waker>,
        panics: &AtomicU64,
    ) -> (u64, u64) {
        let batch = Batch { wakers, panics };
        let mut fired = 0u64;
        loop {
            let next = {
                let mut wheel = self.wheel.lock();
                let next = match wheel.advance(now_tick, now_ns, batch.wakers, WAKE_BATCH) {
                    Advance::Until(tick) => Some(tick),
                    Advance::Idle => Some(u64::MAX),
                    Advance::BatchFull => None, // not done: due now
                };
                self.due.store(next.unwrap_or(0), Ordering::Relaxed);
                next
            };
            fired += batch.wakers.len() as u64;
            wake_all(batch.wakers, batch.panics);
            if let Some(next) = next {
                return (fired, next);
            }
        }
    }

    /// Cancels every entry and closes the wheel for good (later
    /// registrations are refused), then wakes their tasks outside the lock,
    /// counting wakers that panic in `panics`. Returns how many were pending.
    pub(crate) fn close_and_drain(&self, wakers: &mut Vec<Waker>, panics: &AtomicU64) -> usize {
        let total = self.wheel.lock().close_and_drain(wakers);
        wake_all(wakers, panics);
        total
    }

    /// The number of entries registered now.
    pub(crate) fn pending(&self) -> usize {
        self.wheel.lock().pending()
    }

    /// Slots in use: the pending entries, and the fired ones whose sleeps
    /// have not freed them yet.
    #[cfg(all(test, tickwheel_loom))]
    pub(crate) fn slots_in_use(&self) -> usize {
        self.wheel.lock().slots_in_use()
    }

    /// Adds this shard's counters, entry storage and lateness to `tally`.
    pub(crate) fn tally_into(&self, tally: &mut Tally) {
        self.wheel.lock().tally_into(tally);
    }

    /// Holds this shard's lock until the result is dropped, for tests that
    /// check one shard's lock does not block another.
    #[cfg(test)]
    pub(crate) fn hold_lock(&self) -> impl Sized + '_ {
        self.wheel.lock()
    }
}

/// Wakers taken out of the wheel and not yet woken. Wakes them if dropped
/// early (a panic during the advance), since their entries have already left
/// the wheel and shutdown could no longer find them.
struct Batch<'a> {
    wakers: &'a mut Vec<Waker>,
    panics: &'a AtomicU64,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        wake_all(self.wakers, self.panics);
    }
}

/// Wakes and empties `wakers`. A waker that panics is counted in `panics`
/// and does not stop the others, even if its panic payload panics again when
/// dropped. Wakers are taken out one at a time, so whatever happens, every
/// waker still in the vector stays there for the caller's guard to wake.
fn wake_all(wakers: &mut Vec<Waker>, panics: &AtomicU64) {
    while let Some(waker) = wakers.pop() {
        if !unwind::run_contained(|| waker.wake()) {
            panics.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What a re-poll of a registered sleep found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Polled {
    /// Still waiting.
    Pending,
    /// The driver fired it (or it was cancelled): it waited.
    Fired,
    /// A reset that read no clock had moved it to a deadline that had
    /// already passed: complete without having waited.
    Passed,
}

/// The shard index this thread uses in a timer of `shards` shards (a power
/// of two). Threads get consecutive numbers, so the first `shards` threads to
/// make sleeps each get a shard of their own.
#[inline]
pub(crate) fn index_for_current_thread(shards: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static HINT: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    HINT.with(|hint| *hint) & (shards - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::clock::Clock;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Two shards of one timer: they share everything a timer shares.
    fn two_shards() -> (Arc<Shard>, Arc<Shard>) {
        let shared = Arc::new(Shared::new(
            Clock::new(tokio::time::Instant::now(), 1_000_000),
            crate::engine::clock::TimeSource::System,
            None,
        ));
        let shard = || Arc::new(Shard::new(TimerWheel::new(64, 1_000_000), shared.clone()));
        (shard(), shard())
    }

    #[test]
    fn threads_get_distinct_shards_round_robin() {
        let hints: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(|| index_for_current_thread(1 << 20)))
            .map(|t| t.join().unwrap())
            .collect();
        for (i, a) in hints.iter().enumerate() {
            for b in &hints[i + 1..] {
                assert_ne!(a, b, "two threads share a hint: {hints:?}");
            }
        }
    }

    /// Whether the driver task was told to run a pass (consuming the
    /// notice).
    fn noticed(shard: &Shard) -> bool {
        use crate::engine::notice::Reasons;
        shard
            .shared
            .notice()
            .take()
            .is_some_and(|why| why.contains(Reasons::PASS))
    }

    #[test]
    fn a_re_poll_is_pending_until_the_entry_fires_or_is_cancelled() {
        // It advances the wheel by hand: a wheel that never finishes an
        // advance must fail the run, not hang it.
        let _watchdog = crate::engine::wheel::watchdog::Watchdog::start();
        let (a, _) = two_shards();
        let waker = Waker::noop();
        let Insert::Registered { key, .. } = a.register(5_000_000, waker) else {
            panic!("registration failed");
        };
        let never = || unreachable!("no reset, no clock read");
        assert_eq!(
            a.poll_registered(key, waker, never),
            Polled::Pending,
            "same waker"
        );
        assert_eq!(
            a.poll_registered(key, &futures::task::noop_waker(), never),
            Polled::Pending
        );
        let mut woken = Vec::new();
        assert!(matches!(
            a.wheel.lock().advance(5, 5_000_000, &mut woken, 8),
            crate::engine::wheel::Advance::Idle
        ));
        assert_eq!(woken.len(), 1);
        assert_eq!(a.poll_registered(key, waker, never), Polled::Fired);
        assert!(!a.is_live(key));
        let Insert::Registered { key, .. } = a.register(9_000_000, waker) else {
            panic!("registration failed");
        };
        assert!(a.is_live(key));
        assert!(a.cancel(key).is_some());
        assert_eq!(
            a.poll_registered(key, waker, never),
            Polled::Fired,
            "cancelled"
        );
        assert!(!a.is_live(key));
        assert!(a.cancel(key).is_none(), "cancelled twice");
    }

    /// A registration the wheel refuses (every key in use) gets its clone
    /// of the waker back from the wheel and drops it after the lock, as
    /// every waker here: a waker's drop is executor code, which could use
    /// this very shard. The wheel hands it back instead of dropping it
    /// under the lock; the clone is gone once `register` returns.
    #[test]
    fn a_refused_registration_drops_its_waker_outside_the_lock() {
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let (a, _) = two_shards();
        a.wheel.lock().retire_every_key();
        let task = Arc::new(Task);
        let waker = Waker::from(Arc::clone(&task));
        let mut clone = Some(waker.clone());
        assert!(matches!(
            a.wheel.lock().insert(5_000_000, &mut clone),
            Insert::NoKeys
        ));
        assert!(clone.is_some(), "the wheel handed the waker back");
        drop(clone);
        assert_eq!(Arc::strong_count(&task), 2);
        assert!(matches!(a.register(5_000_000, &waker), Insert::NoKeys));
        assert_eq!(Arc::strong_count(&task), 2, "the clone was dropped");
    }

    /// A cancel nudges the driver only when no handle is left (the driver
    /// may be parked for the entry it removed) and it removed an entry.
    #[test]
    fn a_cancel_nudges_the_driver_only_once_orphaned() {
        let (a, _) = two_shards();
        let waker = Waker::noop();
        let register = |deadline| match a.register(deadline, waker) {
            Insert::Registered { key, .. } => key,
            other => panic!("registration failed: {other:?}"),
        };
        let key = register(u64::MAX);
        assert!(!noticed(&a), "a never-firing entry never notifies");
        assert!(a.cancel(key).is_some());
        assert!(!noticed(&a), "a handle is left");
        a.shared.drop_handle();
        assert!(noticed(&a), "the last handle went");
        assert!(a.cancel(key).is_none());
        assert!(!noticed(&a), "nothing was removed");
        let key = register(u64::MAX);
        assert!(a.cancel(key).is_some());
        assert!(noticed(&a), "orphaned, and an entry was removed");
    }

    /// Whatever number a thread drew, its index is a valid shard: with one
    /// shard every thread uses shard 0, with two each uses 0 or 1.
    #[test]
    fn indexes_stay_below_the_shard_count() {
        let (ones, twos): (Vec<usize>, Vec<usize>) = (0..4)
            .map(|_| {
                std::thread::spawn(|| (index_for_current_thread(1), index_for_current_thread(2)))
            })
            .map(|t| t.join().unwrap())
            .unzip();
        assert_eq!(ones, [0; 4]);
        assert!(twos.iter().all(|&i| i < 2), "{twos:?}");
    }

    /// A batch dropped before its wakers were woken (a panic on the way
    /// through an advance unwinds past `wake_all`) wakes every one of them,
    /// even past a waker that panics: their entries have left the wheel, so
    /// nothing else could wake them.
    #[test]
    fn a_batch_dropped_early_wakes_what_it_holds() {
        use std::task::Wake;
        struct Count(AtomicUsize, bool);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
                assert!(!self.1, "a waker that panics");
            }
        }
        let calm = Arc::new(Count(AtomicUsize::new(0), false));
        let angry = Arc::new(Count(AtomicUsize::new(0), true));
        let mut wakers: Vec<Waker> = vec![
            calm.clone().into(),
            angry.clone().into(),
            calm.clone().into(),
        ];
        let panics = AtomicU64::new(0);
        drop(Batch {
            wakers: &mut wakers,
            panics: &panics,
        });
        assert!(wakers.is_empty());
        assert_eq!(calm.0.load(Ordering::SeqCst), 2);
        assert_eq!(angry.0.load(Ordering::SeqCst), 1);
        assert_eq!(panics.load(Ordering::SeqCst), 1);
    }

    /// Registering and cancelling in one shard does not wait for another
    /// shard's lock. If shards shared one lock, the second thread
    /// would block until the first lets go, and the channel would time out.
    #[test]
    fn a_held_shard_lock_does_not_block_another_shard() {
        let (a, b) = two_shards();
        let held = a.wheel.lock();
        let (tx, rx) = mpsc::channel();
        let b2 = b.clone();
        let worker = std::thread::spawn(move || {
            let waker = Waker::noop();
            for i in 0..1000u64 {
                let Insert::Registered { key, .. } = b2.register(5_000_000_000 + i, waker) else {
                    panic!("registration failed");
                };
                assert!(b2.cancel(key).is_some());
            }
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("registration in shard b waited on shard a's lock");
        drop(held);
        worker.join().unwrap();
        assert_eq!(b.wheel.lock().pending(), 0);
    }
}
