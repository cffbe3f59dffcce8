//! The synchronisation primitives that futures and the driver share, in one
//! place so the loom models (`src/engine/loom_tests.rs`, built with
//! `RUSTFLAGS="--cfg tickwheel_loom"`) can swap in loom's checked versions.
//!
//! Only state that crosses between a `Sleep` and the driver, or between the
//! driver's hook and its task, goes through here: the shard locks' flag
//! (`raw/lock.rs`, which swaps in loom's cell itself), the driver's wake-up
//! target and shutdown flag, the capacity budget, the pass lock and the
//! driver task's notice.

#[cfg(not(tickwheel_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(tickwheel_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(tickwheel_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(tickwheel_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

use std::sync::PoisonError;

/// Locks `mutex`, poisoned or not: the state behind each of these locks is
/// left whole by a panic (a pass that panics, see `pass_lock.rs`; the
/// notice's waker slot is only ever taken or replaced).
pub(crate) fn lock_unpoisoned<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
