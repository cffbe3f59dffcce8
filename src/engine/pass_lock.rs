//! [`PassLock`]: one driver pass at a time, run by whoever asks first, and
//! no request lost.
//!
//! Three parties want driver passes: the hook inside tokio's timer
//! processing, a registration earlier than the driver's target, and the
//! driver task. None of them may wait for another's pass (the hook runs
//! inside tokio's timer processing, a registration inside a user's poll, and
//! a waker woken by a pass may register a sleep on the same thread), so a
//! request never blocks: it raises `REQUESTED` in one atomic word and, if
//! nobody is `RUNNING`, makes itself the runner. The runner runs passes
//! until it can clear `RUNNING` while no request is raised. Every step is
//! one read-modify-write of that word, so there is no window in which a
//! request raised after the runner's last look goes unseen: the runner's
//! final compare-and-swap fails, and it takes the requests and runs once
//! more, having read (so synchronised with) every request raised so far.
//! The loom models `loom_a_requested_pass_is_never_lost`,
//! `loom_a_pass_requested_from_inside_a_pass_runs_after_it` and
//! `loom_three_parties_never_lose_a_request_or_its_data` check every
//! interleaving.
//!
//! The state sits behind a mutex only because that is how safe code shares
//! mutable state between threads: the flags already make the runner the one
//! thread that touches it, so the runner's lock never waits (two uncontended
//! atomics per run). Nobody else locks it but the tests and the loom models,
//! which read what the passes left once every party is done.
//!
//! # A pass that panics
//!
//! A pass can panic (a bug reaching an `unreachable!`, a `debug_assert!`):
//! a guard then lets the lock go as the panic unwinds out of
//! [`PassLock::request`], so the next request becomes the runner instead
//! of finding `RUNNING` set forever. Requests raised while the pass ran
//! stay raised (the flag is not cleared): the caller, which catches the
//! panic (`requests.rs`), hands them on.

use std::sync::atomic::Ordering;

use crate::engine::sync::{lock_unpoisoned, AtomicU8, Mutex, MutexGuard};

/// Lets the lock go if a pass unwinds out of [`PassLock::request`]; on the
/// normal way out the runner lets go itself (and forgets this guard).
struct LetGoOnUnwind<'a>(&'a AtomicU8);

impl Drop for LetGoOnUnwind<'_> {
    fn drop(&mut self) {
        // `REQUESTED` stays as it is: requests raised during the pass are
        // taken by the next runner, or handed on by the caller.
        self.0.fetch_and(!RUNNING, Ordering::AcqRel);
    }
}

/// A request is raised.
const REQUESTED: u8 = 0b01;
/// A thread is running passes.
const RUNNING: u8 = 0b10;

pub(crate) struct PassLock<T> {
    state: Mutex<T>,
    /// `REQUESTED` and `RUNNING`.
    flags: AtomicU8,
}

impl<T> PassLock<T> {
    pub(crate) fn new(state: T) -> Self {
        PassLock {
            state: Mutex::new(state),
            flags: AtomicU8::new(0),
        }
    }

    /// Asks for a pass: runs `pass` here, as often as requests come in
    /// meanwhile, or leaves the request to the thread that runs passes now
    /// (which runs one more before it stops). There is no way to stop early:
    /// a runner that let go with a request raised would leave it to nobody
    /// (a `pass` with nothing left to do returns at once instead).
    ///
    /// Returns `true` if this call ran the passes, `false` if it left its
    /// request to the runner (the party running passes already, or that
    /// became the runner first). If `pass` panics, the lock is let go and
    /// the panic goes on unwinding (see the module docs).
    pub(crate) fn request(&self, mut pass: impl FnMut(&mut T)) -> bool {
        // Raise the request; unless a runner is running (it sees the
        // request before it stops), become the runner, taking every request
        // raised so far. That fails if another thread became the runner
        // (and took this request), or has already run it.
        if self.flags.fetch_or(REQUESTED, Ordering::AcqRel) & RUNNING != 0
            || self
                .flags
                .compare_exchange(REQUESTED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return false;
        }
        // Declared before the state's guard, so dropped after it: on unwind
        // the mutex is free before another party can become the runner.
        let running = LetGoOnUnwind(&self.flags);
        let mut state = self.lock();
        loop {
            pass(&mut state);
            // Stop only if no request came in meanwhile; else take every
            // request raised so far. Taking them is a read-modify-write,
            // not a store: it reads the latest value of the word, so it
            // synchronises with a request raised after the failed
            // compare-and-swap (a store would overwrite that request unseen,
            // and the pass below could miss what it asked for).
            if self
                .flags
                .compare_exchange(RUNNING, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                std::mem::forget(running);
                return true;
            }
            self.flags.fetch_and(!REQUESTED, Ordering::AcqRel);
        }
    }

    /// Test-only: holds the lock as a runner would (requests made meanwhile
    /// are left raised) until the result is dropped.
    #[cfg(all(test, not(tickwheel_loom)))]
    pub(crate) fn hold(&self) -> impl Drop + '_ {
        let held = self.flags.fetch_or(RUNNING, Ordering::AcqRel);
        assert_eq!(held & RUNNING, 0, "the lock is held already");
        LetGoOnUnwind(&self.flags)
    }

    /// The state: for the runner, which never waits for it, and for the
    /// tests and models once every party is done. Not to be called from
    /// inside a pass.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        lock_unpoisoned(&self.state)
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// A pass that panics lets the lock go: the next request becomes the
    /// runner and runs, and the state is still there (poisoning ignored).
    #[test]
    fn a_pass_that_panics_lets_the_lock_go() {
        let lock = PassLock::new(0u32);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            lock.request(|passes| {
                *passes += 1;
                panic!("a pass panics");
            })
        }));
        assert!(unwound.is_err());
        assert!(lock.request(|passes| *passes += 1));
        assert_eq!(*lock.lock(), 2);
    }

    /// A request raised while the panicking pass ran (here, from inside it,
    /// as a waker woken by a pass would) is not lost: it stays raised, and
    /// the next runner takes it with its own and runs once for both.
    #[test]
    fn a_request_raised_during_a_panicking_pass_stays_raised() {
        let lock = PassLock::new(0u32);
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            lock.request(|_| {
                assert!(!lock.request(|_| unreachable!("left")));
                panic!("a pass panics");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(lock.flags.load(Ordering::SeqCst), REQUESTED);
        assert!(lock.request(|passes| *passes += 1));
        assert_eq!(*lock.lock(), 1, "one pass for both requests");
        assert_eq!(lock.flags.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_request_made_while_another_runs_is_left_to_it() {
        let lock = PassLock::new(0u32);
        let inner = lock.request(|passes| {
            *passes += 1;
            if *passes == 1 {
                assert!(!lock.request(|_| unreachable!("left")));
            }
        });
        assert!(inner);
        assert_eq!(*lock.lock(), 2, "the runner ran the request left to it");
    }
}
