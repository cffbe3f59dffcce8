//! Cache hints: for the task a fired timer is about to wake, and for the
//! next entries of a bucket being fired.
//!
//! A task woken by its timer has usually been idle for as long as it slept,
//! so its memory is cold: `Waker::wake` writes the task's state word (an
//! atomic read-modify-write on the task's header, for tokio's tasks), and
//! each of those is a cache miss, and often a TLB miss, of its own. The
//! driver takes a bucket's wakers out of its wheel in a batch, under the
//! shard's lock, and wakes them after releasing it; hinting each waker's
//! target as it leaves the wheel lets those misses overlap each other and
//! the rest of the bucket's walk, instead of being paid one after another,
//! each behind the previous wake's locked instruction.
//!
//! `compare`'s W9 (a task per sleep) measures what the hint saves; the
//! figures are in BENCHMARKS.md.
//!
//! The same hint, on a slab slot's address ([`address`]), loads a widened
//! bucket's next entries while the walk fires others (W3: 1M timers fired;
//! see "Chains" in `wheel/mod.rs`).
//!
//! The hint is `PREFETCHT0`, on x86 and x86_64; elsewhere it does nothing
//! (`core::arch`'s prefetch hints for other targets are unstable).

#[cfg(all(target_arch = "x86", target_feature = "sse"))]
use core::arch::x86 as arch;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64 as arch;

/// Asks the CPU to start loading the cache line at `at`. A hint: it reads
/// nothing the program can see and changes no state, so it is correct for
/// any address.
#[inline]
pub(crate) fn address<T>(at: *const T) {
    #[cfg(any(
        target_arch = "x86_64",
        all(target_arch = "x86", target_feature = "sse")
    ))]
    // SAFETY: `_mm_prefetch` needs the `sse` target feature, which every
    // x86_64 target has and the `cfg` checks for on x86. A prefetch is a
    // hint: it never faults, whatever the address (null, dangling,
    // unmapped), never reads or writes memory the program can observe, and
    // leaves every register and flag as it was, so no pointer value can make
    // it unsound.
    unsafe {
        arch::_mm_prefetch::<{ arch::_MM_HINT_T0 }>(at.cast());
    }
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The hint is harmless whatever the waker points at: a null data
    /// pointer (the no-op waker) and a live task, which still wakes once
    /// and only when woken.
    #[test]
    fn the_hint_changes_nothing_about_the_waker() {
        address(Waker::noop().data());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        address(waker.data());
        address(waker.data());
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "a hint wakes nothing");
        waker.wake();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(Arc::strong_count(&count), 1, "the hint holds no reference");
    }

    /// An address hint faults on no address: null, freed, past a slab's
    /// end (a walk hints the next index before it knows it is live), and
    /// leaves the memory it names as it was.
    #[test]
    fn an_address_hint_reads_and_faults_on_nothing() {
        address(std::ptr::null::<u64>());
        let freed = Box::into_raw(Box::new(7u64));
        // SAFETY: `freed` came from `Box::into_raw` just above, and is
        // freed once; after this it is only hinted, never read.
        drop(unsafe { Box::from_raw(freed) });
        address(freed.cast_const());
        address(usize::MAX as *const u64);
        let slots = [1u64, 2, 3];
        address(slots.as_ptr().wrapping_add(1000));
        address(&slots[1]);
        assert_eq!(slots, [1, 2, 3]);
    }
}
