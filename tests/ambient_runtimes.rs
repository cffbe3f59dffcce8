//! Many runtimes one after another, each using its default timer: none of
//! their timers outlives its runtime. A counting global allocator measures
//! the live heap (its own binary, so no other test allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use tickwheel::{time, Timer};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are this allocator's; the counter is
// a relaxed atomic that neither allocates nor touches the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with
        // `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `ptr`, `layout` and `new_size`
        // are passed on unchanged.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One runtime's life: build it, sleep twice through the free functions
/// (one registered, one timeout), and drop it. Returns a handle to its
/// default timer, to check it was shut down.
fn one_runtime(multi_thread: bool) -> Timer {
    let rt = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
    }
    .unwrap();
    let timer = rt.block_on(async {
        time::sleep(Duration::from_millis(10)).await;
        let never = std::future::pending::<()>();
        assert!(time::timeout(Duration::from_millis(10), never)
            .await
            .is_err());
        Timer::current()
    });
    assert_eq!(timer.stats().fired, 2);
    drop(rt);
    timer
}

/// 1,000 current-thread runtimes (and some multi-thread ones) in turn: the
/// live heap does not grow with their number. A timer left behind per
/// runtime would cost tens of kilobytes each (its shards' rings alone).
#[test]
fn a_thousand_runtimes_leave_no_timer_behind() {
    // Warm up: thread-locals, tokio's statics, the registry's vector.
    for _ in 0..20 {
        assert!(one_runtime(false).is_shutdown());
    }
    assert!(one_runtime(true).is_shutdown());
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..1_000 {
        let timer = one_runtime(i % 100 == 99);
        assert!(timer.is_shutdown(), "runtime {i} ended, its timer lives on");
    }
    let grown = LIVE.load(Ordering::Relaxed) - before;
    assert!(
        grown < 64 * 1024,
        "the live heap grew by {grown} bytes over 1,000 runtimes"
    );
}
