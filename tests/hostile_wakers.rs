//! Wakers are user code: the timer calls their `clone`, `wake` and `drop`.
//! Whatever they do (panic, panic with a payload that panics again, call back
//! into the same timer), no timer lock is held while they run, no waiting
//! task is lost, no capacity unit leaks and the driver survives.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

use common::{poll_with, CountingWaker};
use tickwheel::Timer;

/// A waker that panics with a payload that itself panics when dropped: the
/// driver contains both panics, wakes every other task of the batch and stays
/// alive. (Before, the second panic unwound out of the driver, the rest of
/// the batch was dropped unwoken, and the timer shut down.)
#[tokio::test(start_paused = true)]
async fn a_wake_panic_whose_payload_panics_on_drop_loses_no_waker() {
    let _watchdog = common::Watchdog::start();
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("this panic payload panics when dropped");
        }
    }
    struct Panicky;
    impl std::task::Wake for Panicky {
        fn wake(self: std::sync::Arc<Self>) {
            std::panic::panic_any(Bomb);
        }
    }
    let timer = Timer::new();
    let bad = std::task::Waker::from(std::sync::Arc::new(Panicky));
    let (counter, good) = CountingWaker::new();
    let mut sleeps: Vec<_> = (0..5)
        .map(|_| timer.sleep(Duration::from_millis(20)))
        .collect();
    for (i, sleep) in sleeps.iter_mut().enumerate() {
        let waker = if i == 2 { &bad } else { &good };
        assert!(poll_with(sleep, waker).is_pending());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(counter.wakes(), 4, "every other task of the batch is woken");
    assert_eq!(timer.stats().wake_panics, 1);
    assert!(!timer.is_shutdown(), "the driver survived");
    timer.sleep(Duration::from_millis(20)).await;
}

/// A waker whose last drop panics must not leak the sleep's `max_pending`
/// unit: before, `Sleep::drop` dropped the cancelled waker first, the panic
/// skipped the release, and with `max_pending(1)` every later sleep was
/// refused for good. The cancelled waker is now kept for the thread's next
/// registration of the same task; the cancel that replaces it drops it, with
/// its panic contained.
#[tokio::test(start_paused = true)]
async fn a_waker_that_panics_on_drop_leaks_no_capacity() {
    let _watchdog = common::Watchdog::start();
    static DROPPED: AtomicBool = AtomicBool::new(false);
    struct PanicsOnDrop;
    impl std::task::Wake for PanicsOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            DROPPED.store(true, Ordering::SeqCst);
            panic!("this waker panics when its last clone is dropped");
        }
    }
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let mut sleep = timer.try_sleep(Duration::from_secs(5)).unwrap();
    {
        let waker = Waker::from(Arc::new(PanicsOnDrop));
        assert!(poll_with(&mut sleep, &waker).is_pending());
        // `waker` goes out of scope here; the wheel holds the last clone.
    }
    assert_eq!(timer.pending(), 1);
    drop(sleep);
    assert_eq!(timer.pending(), 0);
    let again = timer.try_sleep(Duration::from_secs(5));
    assert!(again.is_ok(), "the capacity unit leaked: {:?}", again.err());
    // Another task's cancel replaces the kept waker: its drop panics there,
    // contained, and the timer goes on.
    let mut again = again.unwrap();
    assert!(poll_with(&mut again, Waker::noop()).is_pending());
    drop(again);
    assert!(
        DROPPED.load(Ordering::SeqCst),
        "the kept waker was replaced"
    );
    assert_eq!(timer.pending(), 0);
    assert!(timer.try_sleep(Duration::from_secs(5)).is_ok());
}

/// The timer a [`reentrant_waker`] calls back into.
static REENTERED: OnceLock<Timer> = OnceLock::new();

/// A waker whose `clone` calls into the timer (`pending()`, which locks every
/// shard). Cloned under a shard lock, it deadlocks that shard for good.
fn reentrant_waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        let _ = REENTERED.get().map(Timer::pending);
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: the vtable's functions ignore the data pointer (null) and do
    // nothing unsafe; `clone` returns a waker with the same vtable.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// Registering with, and switching to, a waker whose `clone` calls back into
/// the same timer: before, the clone ran under the shard lock and the
/// thread deadlocked on that lock (and with it the driver).
#[test]
fn a_waker_whose_clone_calls_into_the_timer_does_not_deadlock() {
    let _watchdog = common::Watchdog::start();
    let (rt, timer) = common::runtime_with_timer(0);
    let _ = REENTERED.set(timer.clone());
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let waker = reentrant_waker();
        // First poll: the registration clones the waker.
        let mut first = timer.sleep(Duration::from_secs(5));
        assert!(poll_with(&mut first, &waker).is_pending());
        // Another task polls a registered sleep: the new waker is cloned.
        let mut second = timer.sleep(Duration::from_secs(5));
        assert!(poll_with(&mut second, Waker::noop()).is_pending());
        assert!(poll_with(&mut second, &waker).is_pending());
        assert_eq!(timer.pending(), 2);
        drop((first, second));
        done.send(timer.pending()).unwrap();
    });
    let Ok(pending) = finished.recv_timeout(Duration::from_secs(30)) else {
        // The runtime's shutdown would wait on the deadlocked shard too.
        std::mem::forget(rt);
        panic!("a waker's clone deadlocked the timer");
    };
    assert_eq!(pending, 0);
    worker.join().unwrap();
    drop(rt);
}
