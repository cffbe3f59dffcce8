//! The `test-util` feature: a test module written for `tokio::time`
//! (`use tokio::time;`, then `time::pause()`, `time::advance(..)`,
//! `time::resume()`) compiles and passes with `use tickwheel::time;`
//! instead, and the re-exported clock functions drive the wheel's sleeps
//! exactly as they drive tokio's.

mod common;

use tickwheel::time::{self, Duration, Instant};
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test]
async fn pause_advance_resume_drive_the_wheel_through_tickwheel_time() {
    let _watchdog = common::Watchdog::start();
    time::pause();
    let start = Instant::now();
    let mut sleep = task::spawn(time::sleep(Duration::from_millis(250)));
    assert_pending!(sleep.poll());

    time::advance(Duration::from_millis(249)).await;
    assert!(!sleep.is_woken());
    assert_pending!(sleep.poll());

    time::advance(Duration::from_millis(1)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
    assert_eq!(start.elapsed(), Duration::from_millis(250));

    // Back on the running clock, the wheel follows real time again.
    time::resume();
    let before = std::time::Instant::now();
    time::sleep(Duration::from_millis(20)).await;
    assert!(before.elapsed() >= Duration::from_millis(20));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_under_advance_is_exact() {
    let _watchdog = common::Watchdog::start();
    let mut call = task::spawn(time::timeout(
        Duration::from_secs(2),
        std::future::pending::<()>(),
    ));
    assert_pending!(call.poll());
    time::advance(Duration::from_millis(1999)).await;
    assert_pending!(call.poll());
    time::advance(Duration::from_millis(1)).await;
    assert!(call.is_woken());
    let elapsed = assert_ready!(call.poll()).unwrap_err();
    assert!(!elapsed.is_shutdown());
}

#[tokio::test(start_paused = true)]
async fn an_interval_ticks_on_each_advance_by_its_period() {
    let _watchdog = common::Watchdog::start();
    let start = Instant::now();
    let mut ticks = time::interval(Duration::from_secs(1));
    assert_eq!(ticks.tick().await, start);
    let mut next = task::spawn(async move {
        let at = ticks.tick().await;
        (at, ticks)
    });
    assert_pending!(next.poll());
    time::advance(Duration::from_secs(1)).await;
    assert!(next.is_woken());
    let (at, _) = assert_ready!(next.poll());
    assert_eq!(at, start + Duration::from_secs(1));
}
