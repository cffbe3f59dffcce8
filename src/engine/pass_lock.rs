//! [`PassLock`]: one driver pass at a time, run by whoever asks first, and
//! no request lost.
//!
//! Three parties want driver passes: the hook inside tokio's timer
//! processing, a registration earlier than the driver's target, and the
//! driver task. None of them may wait for another's pass (the hook runs
//! inside tokio's timer processing, a registration inside a user's poll, and
//! a waker woken by a pass may register a sleep on the same thread), so a
//! request never blocks: it raises `requested`, then tries the lock. The
//! holder runs passes until it finds no request raised, lets the lock go,
//! and looks at `requested` once more.
//!
//! Why no request is lost: a requester raises the flag, then (after a
//! `SeqCst` fence) tries the lock; the holder lets the lock go, then (after a
//! fence) reads the flag. Of two threads each writing one location and then
//! reading the other's, with a `SeqCst` fence between, at least one sees the
//! other's write: either the requester finds the lock free, or the holder
//! finds the flag raised and takes the lock again. The loom model
//! `loom_a_requested_pass_is_never_lost` checks every interleaving.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::{PoisonError, TryLockError};

use crate::engine::sync::{fence, AtomicBool, Mutex, MutexGuard};

#[derive(Debug)]
pub(crate) struct PassLock<T> {
    state: Mutex<T>,
    requested: AtomicBool,
}

impl<T> PassLock<T> {
    pub(crate) fn new(state: T) -> Self {
        PassLock {
            state: Mutex::new(state),
            requested: AtomicBool::new(false),
        }
    }

    /// Asks for a pass: runs `pass` here, as often as requests come in
    /// meanwhile, or leaves the request to the thread that holds the lock
    /// (which runs it before it lets go). `pass` returning `Break` ends the
    /// passes (requests raised since are left for the next holder).
    pub(crate) fn request(&self, mut pass: impl FnMut(&mut T) -> ControlFlow<()>) {
        self.requested.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        loop {
            let mut state = match self.state.try_lock() {
                Ok(state) => state,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            while self.requested.swap(false, Ordering::SeqCst) {
                if pass(&mut state).is_break() {
                    return;
                }
            }
            drop(state);
            fence(Ordering::SeqCst);
            if !self.requested.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// Waits for the lock (the driver task, to read what passes left, and
    /// to retire the alarm).
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
