//! Many runtimes one after another, each using its default timer: none of
//! their timers outlives its runtime. A counting global allocator measures
//! the live heap (its own binary, so no other test allocates meanwhile).

use std::time::Duration;

use tickwheel::{time, Timer};

mod common;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::live_bytes;

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
    let _watchdog = common::Watchdog::start();
    // Warm up: thread-locals, tokio's statics, the registry's vector.
    for _ in 0..20 {
        assert!(one_runtime(false).is_shutdown());
    }
    assert!(one_runtime(true).is_shutdown());
    let before = live_bytes();
    for i in 0..1_000 {
        let timer = one_runtime(i % 100 == 99);
        assert!(timer.is_shutdown(), "runtime {i} ended, its timer lives on");
    }
    let grown = live_bytes() - before;
    assert!(
        grown < 64 * 1024,
        "the live heap grew by {grown} bytes over 1,000 runtimes"
    );
}
