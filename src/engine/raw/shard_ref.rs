//! [`ShardRef`]: a pointer to a shard, kept alive by the shard's
//! [`LiveCount`] instead of an `Arc`'s count.
//!
//! A shard is allocated once, by its timer, and freed by whichever party
//! brings its count to zero: the timer's state when it goes, the last
//! sleep, a thread's claim or ambient cache as it lets go. Each kind of
//! reference says, by its [`Hold`], what it counts for and how it lets go;
//! a `ShardRef` exists only while its count is held, which is what makes
//! its `Deref` sound.
//!
//! Why not an `Arc`: a sleep made and dropped on the thread that owns its
//! shard then counts itself with two plain stores instead of two atomic
//! read-modify-writes (`live_count.rs`), on the path every timeout takes.

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

use crate::engine::claim;
use crate::engine::live_count::{Then, ThreadNo};
use crate::engine::shard::Shard;

/// What a [`ShardRef`] counts for, and how it lets go.
pub(crate) trait Hold {
    /// Lets go of what this reference counted, the shard still alive;
    /// [`Then::Free`] if it was the last of everything.
    fn let_go(shard: &Shard) -> Then;
}

/// The timer's own reference to each of its shards (one holder).
pub(crate) enum TimerHold {}
/// A thread's ambient cache (one holder).
pub(crate) enum CacheHold {}
/// A thread's claim (one holder, and the owner's word: `claim.rs`).
pub(crate) enum ClaimHold {}
/// A `Sleep` (one sleep).
pub(crate) enum SleepHold {}

impl Hold for TimerHold {
    fn let_go(shard: &Shard) -> Then {
        shard.count.let_go()
    }
}

impl Hold for CacheHold {
    fn let_go(shard: &Shard) -> Then {
        shard.count.let_go()
    }
}

impl Hold for ClaimHold {
    fn let_go(shard: &Shard) -> Then {
        shard.unclaim(claim::me());
        shard.count.let_go()
    }
}

impl Hold for SleepHold {
    #[inline]
    fn let_go(shard: &Shard) -> Then {
        let me = claim::me();
        match shard.count.dropped(me) {
            Then::Merge => {
                shard.merge_word(me);
                Then::Kept
            }
            then => then,
        }
    }
}

/// A pointer to a live shard, counted in its [`LiveCount`] as `H` says.
pub(crate) struct ShardRef<H: Hold> {
    ptr: NonNull<Shard>,
    hold: PhantomData<H>,
}

// SAFETY: a `ShardRef` gives out only `&Shard` (it is an `Arc<Shard>` in
// all but the count), so sending or sharing one shares a `Shard` between
// threads, which `Shard: Send + Sync` allows; letting go may free it on
// any thread, which `Shard: Send` allows.
unsafe impl<H: Hold> Send for ShardRef<H> where Shard: Send + Sync {}
// SAFETY: as above.
unsafe impl<H: Hold> Sync for ShardRef<H> where Shard: Send + Sync {}

impl ShardRef<TimerHold> {
    /// Allocates `shard`, whose new count holds one holder: this reference.
    pub(crate) fn new(shard: Shard) -> Self {
        ShardRef {
            ptr: NonNull::from(Box::leak(Box::new(shard))),
            hold: PhantomData,
        }
    }
}

impl<H: Hold> ShardRef<H> {
    /// Another reference to the same shard, counted by the caller.
    fn counted<K: Hold>(&self) -> ShardRef<K> {
        ShardRef {
            ptr: self.ptr,
            hold: PhantomData,
        }
    }

    /// A reference for a new sleep made on this thread: in the owner's
    /// word if this thread owns the shard or claims it now, else in the
    /// shared count.
    #[inline]
    pub(crate) fn sleep(&self) -> ShardRef<SleepHold> {
        let me = claim::me();
        if !self.count.owned_by(me) {
            claim::offer(self);
        }
        if self.count.made(me) == Then::Merge {
            self.merge_word(me);
        }
        self.counted()
    }

    /// A reference for this thread's ambient cache.
    pub(crate) fn cache(&self) -> ShardRef<CacheHold> {
        self.count.hold();
        self.counted()
    }

    /// A claim for thread `me`, if nobody owns the shard.
    pub(crate) fn claim(&self, me: ThreadNo) -> Option<ShardRef<ClaimHold>> {
        self.count.claim(me).then(|| self.counted())
    }
}

impl<H: Hold> Deref for ShardRef<H> {
    type Target = Shard;

    #[inline]
    fn deref(&self) -> &Shard {
        // SAFETY: `ptr` came from `Box::leak` (`ShardRef::new`) and is
        // freed only by the party that brings the shard's count to zero
        // (`Drop` below). This reference's own count is part of that
        // count until this reference is dropped, so the count cannot reach
        // zero while `&self` lives: each constructor adds to it (the timer's
        // holder in `LiveCount::new`, `hold`, `claim`, `made`) before the
        // reference exists, from a reference that was itself alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<H: Hold> Drop for ShardRef<H> {
    #[inline]
    fn drop(&mut self) {
        if H::let_go(self) == Then::Free {
            free(self.ptr);
        }
    }
}

/// Frees the shard whose count just reached zero (out of line: the drops
/// of sleeps inline the path that does not free).
#[cold]
#[inline(never)]
fn free(ptr: NonNull<Shard>) {
    // SAFETY: the count is zero: no holder and no sleep is left, so no
    // other `ShardRef` to this shard exists (each holds a part of the
    // count) and none can be made (one is made only from another).
    // `let_go` fenced with `Acquire` after the decrement that reached zero,
    // so every use of the shard by the others happened before this. The
    // pointer came from `Box::leak`, and only this call frees it.
    drop(unsafe { Box::from_raw(ptr.as_ptr()) });
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::clock::{Clock, TimeSource};
    use crate::engine::shared::Shared;
    use crate::engine::wheel::TimerWheel;

    /// A timer's shard, and its shared state: the shard holds the only
    /// other reference to that, so its count says whether the shard lives.
    fn timer_shard() -> (ShardRef<TimerHold>, Arc<Shared>) {
        let shared = Arc::new(Shared::new(
            Clock::new(tokio::time::Instant::now(), 1_000_000),
            TimeSource::System,
            None,
        ));
        let shard = ShardRef::new(Shard::new(TimerWheel::new(8, 1_000_000), shared.clone()));
        (shard, shared)
    }

    fn alive(shared: &Arc<Shared>) -> bool {
        Arc::strong_count(shared) == 2
    }

    /// Sleeps outliving the timer keep the shard, and the last one frees
    /// it, on whichever thread drops it; the thread that made them claimed
    /// the shard, and its claim goes as it exits.
    #[test]
    fn the_last_sleep_after_the_timer_frees_the_shard() {
        let (timer, shared) = timer_shard();
        let (here, there) = std::thread::spawn(move || (timer.sleep(), timer.sleep()))
            .join()
            .unwrap();
        assert!(alive(&shared));
        std::thread::spawn(move || drop(there)).join().unwrap();
        assert!(alive(&shared));
        assert_eq!(here.sleeps(), 1);
        drop(here);
        assert!(!alive(&shared), "freed");
    }

    /// A thread that claimed the shard keeps it until it exits, and its
    /// sleeps, dropped anywhere, are counted exactly meanwhile.
    #[test]
    fn a_claim_keeps_the_shard_until_its_thread_exits() {
        let (timer, shared) = timer_shard();
        let (made, finish) = std::sync::mpsc::channel();
        let (exit, exited) = std::sync::mpsc::channel::<()>();
        let timer = Arc::new(timer);
        let claimant = {
            let timer = timer.clone();
            std::thread::spawn(move || {
                let sleep = timer.sleep();
                assert!(timer.count.owned_by(claim::me()), "claimed");
                made.send(sleep).unwrap();
                drop(timer);
                exited.recv().unwrap();
            })
        };
        let sleep = finish.recv().unwrap();
        assert_eq!(timer.sleeps(), 1);
        drop(sleep); // elsewhere: the owner's word is +1, the shared part -1
        assert_eq!(timer.sleeps(), 0);
        drop(Arc::into_inner(timer).expect("the claimant let go of its handle"));
        assert!(alive(&shared), "the claim holds it");
        exit.send(()).unwrap();
        claimant.join().unwrap();
        assert!(!alive(&shared), "freed as the claimant exited");
    }

    /// A cache's hold keeps the shard after the timer and the sleeps.
    #[test]
    fn a_cache_keeps_the_shard_until_it_lets_go() {
        let (timer, shared) = timer_shard();
        let cache = std::thread::spawn(move || {
            let cache = timer.cache();
            drop(cache.sleep());
            cache
        })
        .join()
        .unwrap();
        assert!(alive(&shared));
        drop(cache);
        assert!(!alive(&shared));
    }
}
