//! `Timer::retry` on the paused clock: when attempts happen, what stops the
//! loop, and what the hooks see.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickwheel::retry::{Backoff, Jitter};
use tickwheel::Timer;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A timer with 1 ms ticks, so waits end exactly on their instants.
fn fine_timer() -> Timer {
    Timer::builder().tick(ms(1)).build().unwrap()
}

/// An operation that fails `failures` times, then succeeds, recording the
/// offset from `start` of every call.
fn flaky(
    start: Instant,
    failures: usize,
    calls: Arc<Mutex<Vec<Duration>>>,
) -> impl FnMut() -> std::future::Ready<Result<usize, String>> {
    move || {
        let mut calls = calls.lock().unwrap();
        calls.push(start.elapsed());
        let n = calls.len();
        std::future::ready(if n <= failures {
            Err(format!("failure {n}"))
        } else {
            Ok(n)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn attempts_happen_exactly_after_each_exponential_delay() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::exponential(ms(100)).max_attempts(10),
            flaky(start, 4, calls.clone()),
        )
        .await;
    assert_eq!(result, Ok(5));
    assert_eq!(
        *calls.lock().unwrap(),
        [ms(0), ms(100), ms(300), ms(700), ms(1500)]
    );
    let stats = timer.stats();
    assert_eq!((stats.registered, stats.fired, stats.pending), (4, 4, 0));
}

#[tokio::test(start_paused = true)]
async fn coarse_ticks_make_attempts_late_by_less_than_a_tick_never_early() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().tick(ms(10)).build().unwrap();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(33)).max_attempts(5),
            flaky(start, 10, calls.clone()),
        )
        .await;
    assert_eq!(result, Err("failure 5".to_string()));
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 5, "the first call and 4 retries");
    for pair in calls.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= ms(33) && gap < ms(33) + ms(10), "{calls:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_backoff_ending_returns_the_last_error() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(5)).max_attempts(3),
            flaky(Instant::now(), 100, calls.clone()),
        )
        .await;
    assert_eq!(result, Err("failure 3".to_string()));
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(5), ms(10)]);
}

#[tokio::test(start_paused = true)]
async fn any_iterator_is_a_backoff() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let delays = vec![ms(7), ms(1), ms(20)];
    let result = timer
        .retry(delays, flaky(Instant::now(), 100, calls.clone()))
        .await;
    assert!(result.is_err());
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(7), ms(8), ms(28)]);
}

#[tokio::test(start_paused = true)]
async fn when_stops_at_an_error_it_rejects() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(5)).max_attempts(10),
            flaky(Instant::now(), 100, calls.clone()),
        )
        .when(|e: &String| e != "failure 3")
        .await;
    assert_eq!(result, Err("failure 3".to_string()));
    assert_eq!(calls.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn notify_sees_each_retried_error_and_its_delay() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let result = timer
        .retry(
            Backoff::exponential(ms(10)).max_attempts(4),
            flaky(Instant::now(), 100, Arc::default()),
        )
        .notify(move |e: &String, delay| log.lock().unwrap().push((e.clone(), delay)))
        .await;
    assert_eq!(result, Err("failure 4".to_string()));
    // Three retries were made, so three notices; the final error has none.
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("failure 1".to_string(), ms(10)),
            ("failure 2".to_string(), ms(20)),
            ("failure 3".to_string(), ms(40)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_overrides_the_delay_but_still_takes_a_backoff_step() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(10)).max_attempts(4),
            flaky(Instant::now(), 100, calls.clone()),
        )
        // The server asks for 500 ms after the second failure only.
        .retry_after(|e: &String| (e == "failure 2").then_some(ms(500)))
        .await;
    assert!(result.is_err());
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(10), ms(510), ms(520)]);
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_counts_the_attempts_too() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let record = calls.clone();
    let result: Result<(), ()> = timer
        .retry(Backoff::constant(ms(100)).max_attempts(usize::MAX), || {
            record.lock().unwrap().push(start.elapsed());
            // Each attempt takes 50 ms before failing.
            async {
                tokio::time::sleep(ms(50)).await;
                Err(())
            }
        })
        .max_elapsed(ms(500))
        .await;
    assert!(result.is_err());
    // Attempts at 0, 150, 300; after the third fails at 350 ms, a 100 ms
    // wait would end at 450 ms (allowed), the fourth attempt at 450 fails at
    // 500, and a wait to 600 ms would pass the 500 ms cap.
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(150), ms(300), ms(450)]);
    assert_eq!(start.elapsed(), ms(500));
}

#[tokio::test(start_paused = true)]
async fn jittered_waits_stay_within_their_bounds() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let backoff = Backoff::constant(ms(100))
        .jitter(Jitter::Equal)
        .seed(3)
        .max_attempts(20);
    let expected: Vec<Duration> = backoff.into_iter().collect();
    let result = timer.retry(backoff, flaky(start, 100, calls.clone())).await;
    assert!(result.is_err());
    let calls = calls.lock().unwrap();
    for (pair, delay) in calls.windows(2).zip(&expected) {
        let gap = pair[1] - pair[0];
        assert!(gap >= ms(50) && gap <= ms(100), "{gap:?}");
        // With 1 ms ticks, each wait is its delay rounded up to the ms.
        assert!(
            gap >= *delay && gap < *delay + ms(1),
            "{gap:?} vs {delay:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_during_a_wait_returns_the_last_error_at_once() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let retry = tokio::spawn(timer.retry(
        Backoff::constant(Duration::from_secs(3600)).max_attempts(100),
        flaky(Instant::now(), 1000, calls.clone()),
    ));
    tokio::time::sleep(ms(10)).await; // the first attempt failed; it waits
    assert_eq!(timer.pending(), 1);
    let stopped_at = Instant::now();
    timer.shutdown();
    let result = retry.await.unwrap();
    assert_eq!(result, Err("failure 1".to_string()));
    assert_eq!(Instant::now(), stopped_at, "no time passed");
    assert_eq!(calls.lock().unwrap().len(), 1, "no retry after shutdown");
}

#[tokio::test(start_paused = true)]
async fn on_a_shut_down_timer_the_operation_runs_once() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    timer.shutdown();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(1)).max_attempts(usize::MAX),
            flaky(Instant::now(), usize::MAX, calls.clone()),
        )
        .await;
    assert_eq!(result, Err("failure 1".to_string()));
    assert_eq!(calls.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn at_max_pending_the_retry_gives_up_instead_of_panicking() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _hold = timer.sleep(Duration::from_secs(60)); // the one allowed sleep
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(10)),
            flaky(Instant::now(), 100, calls.clone()),
        )
        .await;
    assert_eq!(result, Err("failure 1".to_string()));
}

#[tokio::test(start_paused = true)]
async fn success_on_the_first_call_never_touches_the_wheel() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let result = timer
        .retry(Backoff::constant(ms(10)), || async { Ok::<_, ()>(42) })
        .await;
    assert_eq!(result, Ok(42));
    assert_eq!(timer.stats().registered, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_retry_frees_its_wheel_entry() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let retry = timer.retry(
        Backoff::constant(Duration::from_secs(60)),
        flaky(Instant::now(), 100, Arc::default()),
    );
    let mut retry = Box::pin(retry);
    assert!(futures::poll!(retry.as_mut()).is_pending());
    assert_eq!(timer.pending(), 1);
    drop(retry);
    assert_eq!(timer.pending(), 0);
}

#[test]
fn a_retry_is_send_when_its_parts_are() {
    let _watchdog = common::Watchdog::start();
    fn assert_send<T: Send>(_: &T) {}
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let timer = Timer::new();
        let retry = timer.retry(Backoff::constant(ms(1)), || async { Ok::<_, ()>(()) });
        assert_send(&retry);
    });
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_not_capped_by_max_delay_and_notify_sees_it() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let result = timer
        .retry(
            Backoff::constant(ms(10)).max_delay(ms(20)).max_attempts(3),
            flaky(start, 1, calls.clone()),
        )
        // The server's word wins over the backoff's own cap.
        .retry_after(|_: &String| Some(ms(300)))
        .notify(move |e: &String, delay| log.lock().unwrap().push((e.clone(), delay)))
        .await;
    assert_eq!(result, Ok(2));
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(300)]);
    assert_eq!(*seen.lock().unwrap(), [("failure 1".to_string(), ms(300))]);
}

#[tokio::test(start_paused = true)]
async fn max_elapsed_refuses_a_retry_after_that_would_pass_it() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let result = timer
        .retry(
            Backoff::constant(ms(10)).max_attempts(10),
            flaky(start, 100, calls.clone()),
        )
        // A server asking for an hour (or `Duration::MAX`) cannot park the
        // retry past its cap: it gives up at once with that error.
        .retry_after(|e: &String| (e == "failure 2").then_some(Duration::MAX))
        .max_elapsed(Duration::from_secs(60))
        .await;
    assert_eq!(result, Err("failure 2".to_string()));
    assert_eq!(*calls.lock().unwrap(), [ms(0), ms(10)]);
    assert_eq!(start.elapsed(), ms(10), "no wait was started");
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_during_an_attempt_returns_its_error_without_retrying() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let calls = Arc::new(Mutex::new(0));
    let count = calls.clone();
    let retry = tokio::spawn(
        timer.retry(Backoff::constant(ms(1)).max_attempts(100), move || {
            *count.lock().unwrap() += 1;
            async {
                // The attempt runs on tokio's clock, not the wheel, and
                // fails after the timer has been shut down.
                tokio::time::sleep(ms(50)).await;
                Err::<(), _>("refused")
            }
        }),
    );
    tokio::time::sleep(ms(10)).await;
    timer.shutdown();
    let start = Instant::now();
    assert_eq!(retry.await.unwrap(), Err("refused"));
    assert_eq!(start.elapsed(), ms(40), "ended when the attempt did");
    assert_eq!(*calls.lock().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn zero_delays_yield_to_other_tasks_instead_of_spinning() {
    let _watchdog = common::Watchdog::start();
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    // A backoff of endless zero waits and an operation that fails at once
    // until another task on this one thread says stop: the retry must give
    // the thread back (the sleeps take part in tokio's task budget), or
    // that task never runs and this test hangs.
    let timer = fine_timer();
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (stop.clone(), calls.clone());
    let retry = tokio::spawn(timer.retry(std::iter::repeat(Duration::ZERO), move || {
        count.fetch_add(1, Ordering::SeqCst);
        let done = flag.load(Ordering::SeqCst);
        async move {
            if done {
                Ok(())
            } else {
                Err(())
            }
        }
    }));
    tokio::task::yield_now().await;
    stop.store(true, Ordering::SeqCst);
    assert_eq!(retry.await.unwrap(), Ok(()));
    assert!(calls.load(Ordering::SeqCst) > 1);
    assert_eq!(timer.stats().registered, 0, "zero waits skip the wheel");
}

/// The hooks are held by value, not boxed as `'static + Send`: they can
/// borrow from the caller's stack, and hooks that are not `Send` (an `Rc`)
/// work on a `LocalSet`.
#[tokio::test(start_paused = true)]
async fn hooks_may_borrow_and_need_not_be_send() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    // Borrowed: plain locals the hooks write to, read after the retry.
    let mut notified = Vec::new();
    let mut asked = 0;
    let result = timer
        .retry(Backoff::constant(ms(10)), flaky(start, 2, calls.clone()))
        .when(|e: &String| {
            asked += 1;
            e.starts_with("failure")
        })
        .notify(|e: &String, d| notified.push((e.clone(), d)))
        .await;
    assert_eq!(result, Ok(3));
    assert_eq!(asked, 2);
    assert_eq!(
        notified,
        [
            ("failure 1".to_string(), ms(10)),
            ("failure 2".to_string(), ms(10))
        ]
    );

    // Not Send: an Rc counter, on a LocalSet.
    let local = tokio::task::LocalSet::new();
    let seen = std::rc::Rc::new(std::cell::Cell::new(0));
    let counter = seen.clone();
    let retry = timer
        .retry(
            Backoff::constant(ms(10)),
            flaky(start, 1, Default::default()),
        )
        .retry_after(move |_: &String| {
            counter.set(counter.get() + 1);
            Some(ms(30))
        });
    let outcome = local
        .run_until(async move { tokio::task::spawn_local(retry).await })
        .await;
    assert!(outcome.unwrap().is_ok());
    assert_eq!(seen.get(), 1);
}
