//! A thread's claim: the one shard whose sleeps this thread counts with
//! plain stores (`live_count.rs`).
//!
//! A thread claims the first shard it makes a sleep on that nobody owns,
//! and keeps it until it exits or the shard's timer shuts down (then the
//! next sleep it makes elsewhere lets go of it and may claim that shard).
//! One claim per thread: a thread of a runtime sticks to its shard of each
//! timer (`shard::index_for_current_thread`), and most threads use one
//! timer. Sleeps on any other shard count themselves in its shared atomic,
//! as an `Arc` would.
//!
//! A claim keeps its shard's memory (it is a holder), so a thread whose
//! timer is gone keeps that shard until it lets go; the shutdown sheds the
//! wheel's storage first (`Shard::close_and_drain`), so what stays is the
//! shard's header, not its pages.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::raw::shard_ref::{ClaimHold, Hold, ShardRef};

pub(crate) use crate::engine::live_count::ThreadNo;

thread_local! {
    /// This thread's number, 0 until it first asks (no destructor: it can
    /// be read while the thread's other thread-locals are dropped).
    static NUMBER: Cell<ThreadNo> = const { Cell::new(0) };
    /// This thread's claim; let go (merged) when the thread exits.
    static CLAIM: RefCell<Option<ShardRef<ClaimHold>>> = const { RefCell::new(None) };
}

/// This thread's number, never 0 and never another thread's. Under the
/// loom models every thread is 0, which owns nothing: their sleeps all
/// take the shared path, and `live_count.rs`'s own models check the owner's.
#[inline]
pub(crate) fn me() -> ThreadNo {
    if cfg!(tickwheel_loom) {
        return 0;
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NUMBER.with(|number| match number.get() {
        0 => {
            let new = NEXT.fetch_add(1, Ordering::Relaxed);
            number.set(new);
            new
        }
        known => known,
    })
}

/// Claims `shard` for this thread if the thread holds no live claim and
/// nobody owns the shard; a claim on a shut-down timer's shard is let go.
/// The caller holds `shard` alive.
pub(crate) fn offer<H: Hold>(shard: &ShardRef<H>) {
    if cfg!(tickwheel_loom) || shard.shared.is_shutdown() {
        return;
    }
    // Inside a claim's own drop (a thread exiting), or a waker's drop run
    // from there, the slot is gone or borrowed: no claim then.
    let old = CLAIM.try_with(|slot| {
        let mut slot = slot.try_borrow_mut().ok()?;
        if slot.as_ref().is_some_and(|held| !held.shared.is_shutdown()) {
            return None;
        }
        let old = slot.take();
        *slot = shard.claim(me());
        old
    });
    // Let go after the slot's borrow: it locks the old shard, and may free
    // it.
    drop(old);
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn threads_have_distinct_numbers() {
        let mine = me();
        assert_ne!(mine, 0);
        assert_eq!(me(), mine, "stable");
        let theirs = std::thread::spawn(me).join().unwrap();
        assert_ne!(theirs, 0);
        assert_ne!(theirs, mine);
    }
}
