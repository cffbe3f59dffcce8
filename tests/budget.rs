//! tokio's cooperative budget never keeps a wheel timer from firing: a
//! future that spends the task's budget on every poll (a stream over a fast
//! socket, a loop on a ready channel) still loses the race to its deadline,
//! as with `tokio::time::timeout` (tokio-rs/tokio#4291). These run on the real
//! clock (a busy task never lets a paused clock auto-advance), each under a
//! watchdog so that a livelock fails the test instead of hanging it.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use tickwheel::Timer;

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

/// Spends the task's budget on every poll and never completes.
async fn busy() {
    loop {
        tokio::task::coop::consume_budget().await;
    }
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
        let busy = busy();
        tokio::pin!(busy);
        let mut ticks = 0;
        while ticks < 3 {
            tokio::select! {
                biased;
                () = &mut busy => unreachable!("busy never completes"),
                _ = interval.tick() => ticks += 1,
            }
        }
    });
}

/// A plain sleep raced the same way (as hyper's and backon's sleeps are,
/// inside their own futures) completes once it fired.
#[test]
fn a_sleep_racing_a_busy_arm_completes() {
    within_watchdog(|timer| async move {
        let sleep = timer.sleep(Duration::from_millis(20));
        tokio::pin!(sleep);
        let busy = busy();
        tokio::pin!(busy);
        tokio::select! {
            biased;
            () = &mut busy => unreachable!("busy never completes"),
            () = &mut sleep => {}
        }
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
