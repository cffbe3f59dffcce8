//! tokio's cooperative budget never keeps a wheel timer from firing: a
//! future that spends the task's budget on every poll (a stream over a fast
//! socket, a loop on a ready channel) still loses the race to its deadline,
//! as with `tokio::time::timeout` (tokio-rs/tokio#4291). Most run on the real
//! clock (a busy task never lets a paused clock auto-advance), each under a
//! watchdog so that a livelock fails the test instead of hanging it; those
//! whose timers are due before the race starts run on a paused clock moved
//! by `advance`.

mod common;

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use common::block_on_paused;
use common::coop::{beside_a_busy_arm, busy, spend_the_budget};
use tickwheel::Timer;
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, task};

/// Runs `body` on a fresh current-thread runtime in another thread; fails if
/// it has not finished within 30 s (the timers involved are milliseconds).
fn within_watchdog<F, Fut>(body: F)
where
    F: FnOnce(Timer) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let timer = Timer::builder()
                .tick(Duration::from_millis(1))
                .build()
                .unwrap();
            body(timer).await;
        });
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("a timer racing a budget-spending future never fired");
}

#[test]
fn a_timeout_around_a_busy_future_fires() {
    within_watchdog(|timer| async move {
        let start = tokio::time::Instant::now();
        let outcome = timer.timeout(Duration::from_millis(50), busy()).await;
        let err = outcome.unwrap_err();
        assert!(!err.is_shutdown());
        assert!(start.elapsed() >= Duration::from_millis(50), "fired early");
    });
}

#[test]
fn a_zero_timeout_around_a_busy_future_fires_at_once() {
    within_watchdog(|timer| async move {
        let outcome = timer.timeout(Duration::ZERO, busy()).await;
        assert!(outcome.is_err());
    });
}

/// An interval in a `select!` whose other arm spends the budget on every
/// poll (and is polled first) still ticks. (Its first tick, due at once, is
/// taken before the race: ticks that complete without waiting take part in
/// the budget, as tokio's do, so that a burst of catch-up ticks yields.)
#[test]
fn an_interval_racing_a_busy_arm_ticks() {
    within_watchdog(|timer| async move {
        let mut interval = timer.interval(Duration::from_millis(10));
        interval.tick().await;
        for _ in 0..3 {
            beside_a_busy_arm(interval.tick()).await;
        }
    });
}

/// A plain sleep raced the same way (as hyper's and backon's sleeps are,
/// inside their own futures) completes once it fired.
#[test]
fn a_sleep_racing_a_busy_arm_completes() {
    within_watchdog(|timer| async move {
        beside_a_busy_arm(timer.sleep(Duration::from_millis(20))).await;
    });
}

/// A stream whose every poll spends the task's budget without yielding an
/// item (a filter over a fast source that drops everything, say).
fn busy_stream() -> impl futures::Stream<Item = ()> {
    futures::stream::once(busy())
}

/// A per-item time limit on such a stream still fires, as a `Timeout`
/// around a busy future does.
#[test]
fn a_stream_timeout_around_a_busy_stream_fires() {
    within_watchdog(|timer| async move {
        use futures::StreamExt;
        use tickwheel::stream::StreamTimerExt;

        let start = tokio::time::Instant::now();
        let limited = busy_stream().timeout_on(&timer, Duration::from_millis(50));
        tokio::pin!(limited);
        let err = limited.next().await.unwrap().unwrap_err();
        assert!(!err.is_shutdown());
        assert!(start.elapsed() >= Duration::from_millis(50), "fired early");
    });
}

/// A repeating limit on such a stream ticks, including the interval's
/// first tick, which is due at once (it completes without waiting, so it
/// would need budget the busy stream always spent).
#[test]
fn a_repeating_stream_timeout_around_a_busy_stream_ticks() {
    within_watchdog(|timer| async move {
        use futures::StreamExt;
        use tickwheel::stream::StreamTimerExt;

        let limited = busy_stream().timeout_repeating_on(timer.interval(Duration::from_millis(10)));
        let errors: Vec<_> = limited.take(3).collect().await;
        assert!(errors.iter().all(|e| e.is_err()), "{errors:?}");
    });
}

/// With a zero limit the deadline is behind it from the start (it completes
/// without waiting, which takes budget): it still fires at once around a
/// stream that spent the budget, as the time limit is then checked outside
/// the budget.
#[test]
fn a_zero_stream_timeout_around_a_busy_stream_fires_at_once() {
    within_watchdog(|timer| async move {
        use futures::StreamExt;
        use tickwheel::stream::StreamTimerExt;

        let limited = busy_stream().timeout_on(&timer, Duration::ZERO);
        tokio::pin!(limited);
        assert!(limited.next().await.unwrap().is_err());
    });
}

/// A sleep that completes without waiting takes a unit of the budget, as
/// tokio's does, but the budget refuses it once at most: the refused poll
/// wakes the task once it yields (tokio defers that wake-up to the
/// scheduler), and the next poll completes whatever the budget, where
/// tokio's sleep would stay pending until the task had budget again.
#[test]
fn a_sleep_the_budget_refused_completes_on_the_next_poll() {
    block_on_paused(async {
        let timer = Timer::new();
        let mut sleep = task::spawn(timer.sleep(Duration::ZERO));
        spend_the_budget().await;
        assert_pending!(sleep.poll());
        tokio::task::yield_now().await;
        assert!(sleep.is_woken(), "a refused sleep wakes its task to yield");
        // The other arm of a race spends the budget again before the sleep
        // is polled.
        spend_the_budget().await;
        assert_ready!(sleep.poll());
    });
}

/// A sleep whose deadline passed before its first poll (its task was late)
/// completes without waiting; raced by an arm that spends the budget on
/// every poll it still completes, on the poll after the one the budget
/// refused.
#[test]
fn a_sleep_passed_before_its_first_poll_racing_a_busy_arm_completes() {
    block_on_paused(async {
        let timer = Timer::new();
        let sleep = timer.sleep(Duration::from_millis(5));
        advance(Duration::from_millis(10)).await;
        beside_a_busy_arm(sleep).await;
    });
}

/// An interval that missed ticks (its task was late: on a busy host, one
/// held up for longer than a period) catches up in a `select!` whose other
/// arm spends the budget on every poll: each tick due is refused once, then
/// completes. Before, the first tick due without waiting was refused on
/// every poll, and the interval never ticked again.
#[test]
fn an_interval_that_missed_ticks_racing_a_busy_arm_catches_up() {
    block_on_paused(async {
        let timer = Timer::new();
        let start = Instant::now();
        let mut interval = timer.interval(Duration::from_millis(10));
        assert_eq!(interval.tick().await, start);
        advance(Duration::from_millis(25)).await;
        for due in [10, 20] {
            let at = beside_a_busy_arm(interval.tick()).await;
            assert_eq!(at, start + Duration::from_millis(due));
        }
    });
}
