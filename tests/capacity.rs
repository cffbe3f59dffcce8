//! `max_pending`: the bound on live timers, the `try_*` errors, and the
//! documented panic of the plain methods at the limit.

mod common;

use std::time::Duration;

use common::poll_once;
use tickwheel::Timer;

#[tokio::test(start_paused = true)]
async fn try_methods_fail_fast_at_capacity_and_recover() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().max_pending(3).build().unwrap();
    assert_eq!(timer.max_pending(), Some(3));
    let a = timer.try_sleep(Duration::from_secs(1)).unwrap();
    let b = timer.try_timeout(Duration::from_secs(1), async {}).unwrap();
    let c = timer.try_sleep_until(tokio::time::Instant::now()).unwrap();
    for err in [
        timer
            .try_sleep(Duration::from_secs(1))
            .map(drop)
            .unwrap_err(),
        timer
            .try_timeout(Duration::from_secs(1), async {})
            .map(drop)
            .unwrap_err(),
        timer
            .try_timeout_at(tokio::time::Instant::now(), async {})
            .map(drop)
            .unwrap_err(),
    ] {
        assert!(err.is_at_capacity());
        assert!(!err.is_shutdown());
        assert!(err.to_string().contains("capacity"), "{err}");
    }
    drop(b);
    let mut d = timer
        .try_sleep(Duration::from_millis(5))
        .expect("room again after a drop");
    assert!(poll_once(&mut d).is_pending());
    drop((a, c, d));
    // Completed sleeps give their unit back when dropped, too.
    for _ in 0..10 {
        timer.try_sleep(Duration::from_millis(1)).unwrap().await;
    }
}

#[tokio::test]
#[should_panic(expected = "max_pending")]
async fn plain_sleep_panics_at_capacity() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _held = timer.sleep(Duration::from_secs(1));
    let _second = timer.sleep(Duration::from_secs(1));
}

#[tokio::test]
async fn unbounded_by_default() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    assert_eq!(timer.max_pending(), None);
    let sleeps: Vec<_> = (0..10_000)
        .map(|_| timer.sleep(Duration::from_secs(1)))
        .collect();
    assert_eq!(sleeps.len(), 10_000);
}
