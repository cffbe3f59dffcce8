//! [`LiveCount`]: how many sleeps of a shard exist, and who keeps the
//! shard's memory, counted so that a sleep made and dropped on the thread
//! that claimed the shard takes no atomic read-modify-write.
//!
//! A `Sleep` points at its shard without an `Arc` (`raw/shard_ref.rs`): an
//! `Arc`'s count is an atomic increment when the sleep is made and a
//! decrement when it is dropped, two of the four read-modify-writes a
//! timeout armed and cancelled before its tick used to pay. The count that
//! replaces it has three parts:
//!
//! - `shared`: an atomic that holds [`REF`] for each *holder* (the timer,
//!   each thread's claim, each thread's ambient cache) plus the sleeps
//!   counted here: those made or dropped on a thread that does not own the
//!   shard. Whoever brings it to zero frees the shard.
//! - `owner`: the thread that has claimed the shard (`claim.rs`), if any.
//!   One thread at a time; its claim is a holder, so the shard cannot be
//!   freed while it owns it.
//! - `word`: the owner's count of the sleeps made minus dropped on it,
//!   written only by the owner, with a plain store.
//!
//! A sleep made on one thread and dropped on another adds on one side and
//! subtracts on the other: only the sum means anything, and each side
//! alone drifts. The owner moves its word into `shared` when it lets go of
//! its claim, and whenever the word drifts past [`DRIFT`], so the sleeps'
//! part of `shared` stays far below [`REF`].
//!
//! # Who reads the sum, and why it is exact for them
//!
//! The driver's retirement reads it (a timer with no handle left retires
//! once no sleep exists), and so does `Stats::live`. Both read under the
//! shard's lock, and the owner moves its word only under that lock
//! ([`LiveCount::merge`]), so a reader never sees a word both in `shared`
//! and in `word`, nor in neither. Outside a merge, each sleep made or
//! dropped changes one place by one. For retirement that is enough: it
//! reads only once the last handle is gone, every sleep is made through a
//! handle (or through a thread's ambient cache, whose timer is shut down
//! before its last handle goes), so every sleep's making happens before the
//! read; a drop the read misses makes the sum look higher, which only
//! delays the retirement to its next look.

use std::sync::atomic::Ordering;

use crate::engine::sync::{self, AtomicI64, AtomicU64};

/// What one holder adds to `shared`. Sleeps counted in `shared` take its
/// low 40 bits, signed (see [`sleeps_part`]); the words are merged long
/// before they could reach them ([`DRIFT`]).
pub(crate) const REF: i64 = 1 << 40;

/// How far the owner's word may drift from zero before the owner moves it
/// into `shared` (under the shard's lock). Far below [`REF`], and far above
/// what a burst of sleeps moves it, so a merge is rare.
pub(crate) const DRIFT: i64 = 1 << 32;

/// A thread's number for [`LiveCount::owner`]; 0 names no thread.
pub(crate) type ThreadNo = u64;

/// The count of one shard (see the module docs).
pub(crate) struct LiveCount {
    shared: AtomicI64,
    owner: AtomicU64,
    word: AtomicI64,
}

/// What a change to the count asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Then {
    /// Nothing.
    Kept,
    /// The owner's word has drifted: merge it under the shard's lock.
    Merge,
    /// The count reached zero: no holder and no sleep is left, so free the
    /// shard.
    Free,
}

/// The sleeps' part of a value of `shared`: its low 40 bits, signed.
fn sleeps_part(shared: i64) -> i64 {
    (shared << 24) >> 24
}

impl LiveCount {
    /// A count with one holder (the timer) and no sleep.
    pub(crate) fn new() -> Self {
        LiveCount {
            shared: AtomicI64::new(REF),
            owner: AtomicU64::new(0),
            word: AtomicI64::new(0),
        }
    }

    /// Whether thread `me` owns the shard. Exact on `me` itself: only `me`
    /// ever stores `me` here, and only `me` clears it.
    #[inline]
    pub(crate) fn owned_by(&self, me: ThreadNo) -> bool {
        me != 0 && self.owner.load(Ordering::Relaxed) == me
    }

    /// A sleep was made on thread `me`. The caller holds the shard alive
    /// (a holder's reference, or another sleep's).
    #[inline]
    pub(crate) fn made(&self, me: ThreadNo) -> Then {
        if self.owned_by(me) {
            self.add_to_word(1)
        } else {
            // As `Arc::clone`: the caller's reference keeps the count
            // above zero, so no ordering is needed here; the making reaches
            // a retirement's read through the handle's drop (see the
            // module docs).
            self.shared.fetch_add(1, Ordering::Relaxed);
            Then::Kept
        }
    }

    /// A sleep was dropped on thread `me`: [`Then::Free`] if it was the
    /// last of everything.
    #[inline]
    pub(crate) fn dropped(&self, me: ThreadNo) -> Then {
        if self.owned_by(me) {
            // The owner's claim is a holder: this cannot be the last.
            self.add_to_word(-1)
        } else {
            self.release_shared(1)
        }
    }

    /// The owner's plain add: only the owner writes the word, so a load
    /// and a store make an exact add. `Release`, for a reader that sees it
    /// (a `mov` on x86).
    #[inline]
    fn add_to_word(&self, by: i64) -> Then {
        let word = self.word.load(Ordering::Relaxed) + by;
        self.word.store(word, Ordering::Release);
        if word.abs() >= DRIFT {
            Then::Merge
        } else {
            Then::Kept
        }
    }

    /// Takes `by` off `shared`; [`Then::Free`] if that brought it to zero.
    fn release_shared(&self, by: i64) -> Then {
        // As `Arc`'s drop: `Release` so everything this party did with the
        // shard happens before the free, and the freeing party's `Acquire`
        // fence sees all of it.
        if self.shared.fetch_sub(by, Ordering::Release) == by {
            sync::fence(Ordering::Acquire);
            Then::Free
        } else {
            Then::Kept
        }
    }

    /// A new holder (a thread's ambient cache): the caller holds the shard
    /// alive meanwhile.
    pub(crate) fn hold(&self) {
        self.shared.fetch_add(REF, Ordering::Relaxed);
    }

    /// A holder let go (the timer, a cache, a claim already merged).
    pub(crate) fn let_go(&self) -> Then {
        self.release_shared(REF)
    }

    /// Thread `me` claims the shard if nobody owns it: from now on its
    /// sleeps here are counted in the word. The caller holds the shard
    /// alive; the claim is a holder of its own.
    pub(crate) fn claim(&self, me: ThreadNo) -> bool {
        debug_assert_ne!(me, 0);
        // `Acquire`: the word as the last owner left it (zero, after its
        // merge).
        let claimed = self
            .owner
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if claimed {
            self.hold();
        }
        claimed
    }

    /// Moves the owner's word into `shared`. Only the owner calls it, under
    /// the shard's lock, which every reader of [`LiveCount::sum`] holds.
    pub(crate) fn merge(&self, me: ThreadNo) {
        debug_assert!(self.owned_by(me), "only the owner merges its word");
        let word = self.word.load(Ordering::Relaxed);
        if word != 0 {
            self.shared.fetch_add(word, Ordering::Release);
            self.word.store(0, Ordering::Release);
        }
    }

    /// The owner lets go of its claim, after [`LiveCount::merge`] (under
    /// the shard's lock): the next claimant starts from a zero word. Then
    /// [`LiveCount::let_go`], outside the lock, drops the claim's hold.
    pub(crate) fn unclaim(&self, me: ThreadNo) {
        debug_assert!(self.owned_by(me), "only the owner lets go");
        debug_assert_eq!(self.word.load(Ordering::Relaxed), 0, "merged first");
        self.owner.store(0, Ordering::Release);
    }

    /// The sleeps that exist: exact under the shard's lock for a reader
    /// every making happens before (see the module docs).
    pub(crate) fn sleeps(&self) -> usize {
        let shared = sleeps_part(self.shared.load(Ordering::Acquire));
        let word = self.word.load(Ordering::Acquire);
        usize::try_from(shared + word).unwrap_or(0)
    }

    /// The holders and the sleeps' part of `shared`, for tests.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (i64, i64, i64) {
        let shared = self.shared.load(Ordering::SeqCst);
        let sleeps = sleeps_part(shared);
        (
            (shared - sleeps) / REF,
            sleeps,
            self.word.load(Ordering::SeqCst),
        )
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_sleeps_part_is_signed() {
        assert_eq!(sleeps_part(REF * 3 + 5), 5);
        assert_eq!(sleeps_part(REF * 3 - 5), -5);
        assert_eq!(sleeps_part(-5), -5);
        assert_eq!(sleeps_part(REF - 1), -1);
    }

    /// Made on the owner and dropped elsewhere, and the other way round:
    /// each side drifts, the sum stays exact, and the shard is freed only
    /// once the last holder and the last sleep are gone.
    #[test]
    fn sleeps_crossing_threads_keep_the_sum_exact() {
        let count = LiveCount::new();
        let (owner, other) = (1, 2);
        assert!(count.claim(owner));
        assert!(!count.claim(other), "one owner at a time");
        assert_eq!(count.made(owner), Then::Kept);
        assert_eq!(count.made(other), Then::Kept);
        assert_eq!(count.sleeps(), 2);
        assert_eq!(count.dropped(other), Then::Kept);
        assert_eq!(count.dropped(other), Then::Kept);
        assert_eq!(count.sleeps(), 0);
        assert_eq!(count.parts(), (2, -1, 1), "each side drifted");
        assert_eq!(count.made(other), Then::Kept);
        assert_eq!(count.let_go(), Then::Kept, "the timer");
        count.merge(owner);
        count.unclaim(owner);
        assert_eq!(count.parts(), (1, 1, 0));
        assert_eq!(count.let_go(), Then::Kept, "a sleep is left");
        assert_eq!(count.sleeps(), 1);
        assert_eq!(count.dropped(owner), Then::Free, "no longer the owner");
    }

    #[test]
    fn a_drifting_word_asks_for_a_merge() {
        let count = LiveCount::new();
        assert!(count.claim(7));
        count.word.store(DRIFT - 1, Ordering::Relaxed);
        assert_eq!(count.made(7), Then::Merge);
        count.merge(7);
        assert_eq!(count.parts(), (2, DRIFT, 0));
        count.word.store(-(DRIFT - 1), Ordering::Relaxed);
        assert_eq!(count.dropped(7), Then::Merge);
        count.merge(7);
        assert_eq!(count.parts(), (2, 0, 0));
        assert_eq!(count.sleeps(), 0);
    }

    #[test]
    fn a_released_claim_can_be_taken_by_another_thread() {
        let count = LiveCount::new();
        assert!(count.claim(1));
        assert_eq!(count.made(1), Then::Kept);
        count.merge(1);
        count.unclaim(1);
        assert_eq!(count.let_go(), Then::Kept);
        assert!(count.claim(2));
        assert_eq!(count.dropped(2), Then::Kept);
        assert_eq!(count.parts(), (2, 1, -1));
        assert_eq!(count.sleeps(), 0);
        assert_eq!(count.made(0), Then::Kept, "thread 0 owns nothing");
        assert_eq!(count.parts(), (2, 2, -1));
    }
}
