//! `Timeout`: tokio's semantics on the wheel.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tickwheel::Timer;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_ready_future_never_touches_the_wheel() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    assert_eq!(
        timer.timeout(Duration::from_secs(1), async { 5 }).await,
        Ok(5)
    );
    assert_eq!(timer.stats().registered, 0);
}

#[tokio::test(start_paused = true)]
async fn elapses_at_the_deadline_and_not_before() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let start = Instant::now();
    let err = timer
        .timeout(Duration::from_millis(300), std::future::pending::<()>())
        .await
        .unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(start.elapsed() < Duration::from_millis(300) + timer.tick());
    assert_eq!(err.to_string(), "deadline has elapsed");
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn the_inner_future_wins_a_tie() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let d = Duration::from_millis(100);
    // Both fire on the same tick; the inner future is polled first.
    let inner = timer.sleep(d);
    assert_eq!(timer.timeout(d, inner).await, Ok(()));
    let at = Instant::now() + d;
    assert_eq!(timer.timeout_at(at, timer.sleep_until(at)).await, Ok(()));
}

/// Pending once (waking itself), then ready: an RPC that answers in time.
struct PendingOnce(bool);
impl Future for PendingOnce {
    type Output = &'static str;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready("reply")
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_in_time_registers_then_cancels() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let reply = timer
        .timeout(Duration::from_secs(5), PendingOnce(false))
        .await;
    assert_eq!(reply, Ok("reply"));
    let stats = timer.stats();
    assert_eq!(
        (stats.registered, stats.cancelled, stats.pending),
        (1, 1, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn accessors_reach_the_inner_future() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut t = timer.timeout(Duration::from_secs(1), PendingOnce(false));
    assert!(!t.get_ref().0);
    t.get_mut().0 = true;
    let inner = t.into_inner();
    assert!(inner.0);
    assert_eq!(timer.pending(), 0);
}
