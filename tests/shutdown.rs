//! Shutdown, explicit or by the runtime going away: every waiter is woken,
//! nothing waits forever, and later use fails fast or completes at once.
//! Also: sleeps work on executors other than the driver's runtime.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{panic_message, poll_once, poll_with, CountingWaker};
use tickwheel::Timer;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_every_waiter_and_reports_how_many() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut tasks = Vec::new();
    for i in 0..100u64 {
        let timer = timer.clone();
        tasks.push(tokio::spawn(async move {
            timer
                .timeout(
                    Duration::from_secs(60 + i * 1000),
                    std::future::pending::<()>(),
                )
                .await
        }));
    }
    while timer.pending() < 100 {
        tokio::task::yield_now().await; // let the tasks start waiting
    }
    assert_eq!(timer.pending(), 100);
    assert_eq!(timer.shutdown(), 100);
    assert_eq!(timer.pending(), 0);
    for task in tasks {
        let err = task.await.unwrap().unwrap_err();
        assert!(err.is_shutdown(), "{err}");
    }
    assert_eq!(timer.shutdown(), 0, "a second shutdown finds nothing");
}

/// Asserts that `f` panics with tickwheel's shut-down message.
#[track_caller]
fn assert_shutdown_panic(f: impl FnOnce()) {
    let message = panic_message(f).expect("a new wait on a shut-down timer must panic");
    assert!(message.contains("the timer has shut down"), "{message}");
}

/// Waits that existed when the timer shut down end; new ones fail loudly
/// (the plain forms panic, the `try_*` forms return an error), so nothing
/// after a shutdown can be mistaken for elapsed time.
#[tokio::test(start_paused = true)]
async fn after_shutdown_new_waits_fail_loudly_and_old_ones_end() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut old_sleep = timer.sleep(Duration::from_secs(60));
    let old_timeout = timer.timeout(Duration::from_secs(60), std::future::pending::<()>());
    let old_ready = timer.timeout(Duration::from_secs(1), async { 3 });
    timer.shutdown();
    assert!(timer.is_shutdown());
    // What existed before ends: at once, and as a shutdown.
    assert!(poll_once(&mut old_sleep).is_ready());
    assert!(old_timeout.await.unwrap_err().is_shutdown());
    // A future that is ready still wins: the inner future is polled first.
    assert_eq!(old_ready.await, Ok(3));
    // New waits panic...
    assert_shutdown_panic(|| drop(timer.sleep(Duration::from_secs(60))));
    assert_shutdown_panic(|| drop(timer.sleep(Duration::ZERO)));
    assert_shutdown_panic(|| drop(timer.sleep_until(Instant::now() + Duration::from_secs(1))));
    assert_shutdown_panic(|| drop(timer.timeout(Duration::from_secs(1), async {})));
    assert_shutdown_panic(|| drop(timer.timeout_at(Instant::now(), async {})));
    assert_shutdown_panic(|| {
        std::pin::Pin::new(&mut old_sleep).reset(Instant::now() + Duration::from_secs(1))
    });
    // ... or, in their try_* forms, return the error.
    assert!(timer
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_shutdown());
    assert!(timer
        .try_sleep_until(Instant::now())
        .unwrap_err()
        .is_shutdown());
    assert!(timer
        .try_timeout(Duration::from_secs(1), async {})
        .map(drop)
        .unwrap_err()
        .is_shutdown());
    assert!(timer
        .try_timeout_at(Instant::now(), async {})
        .map(drop)
        .unwrap_err()
        .is_shutdown());
    let again = Instant::now() + Duration::from_secs(1);
    assert!(std::pin::Pin::new(&mut old_sleep)
        .try_reset(again)
        .unwrap_err()
        .is_shutdown());
}

/// The loop every service has, `loop { sleep; work }`, on a timer that shut
/// down: before, every sleep completed at once and the loop spun (1.7
/// million turns in 200 ms); now its first new sleep panics, and the task
/// ends with that panic after at most one turn.
#[tokio::test(start_paused = true)]
async fn a_sleep_loop_on_a_shut_down_timer_fails_loudly_instead_of_spinning() {
    let _watchdog = common::Watchdog::start();
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let timer = Timer::new();
    let turns = Arc::new(AtomicUsize::new(0));
    let task = tokio::spawn({
        let (timer, turns) = (timer.clone(), turns.clone());
        async move {
            loop {
                timer.sleep(Duration::from_millis(100)).await;
                turns.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(turns.load(Ordering::Relaxed), 2);
    timer.shutdown();
    let err = task.await.unwrap_err();
    assert!(err.is_panic(), "the loop must end with a panic: {err}");
    let payload = err.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(message.contains("the timer has shut down"), "{message}");
    assert!(turns.load(Ordering::Relaxed) <= 3, "the loop spun");
}

/// A timer kept in a `static` outlives the runtime that hosted its driver
/// (consecutive `#[tokio::test]`s do this): used from the next runtime, it
/// must fail loudly. Before, a 200 ms sleep there returned after 630 ns.
#[test]
fn a_timer_whose_runtime_ended_fails_loudly_in_the_next_runtime() {
    let _watchdog = common::Watchdog::start();
    use std::sync::OnceLock;
    static TIMER: OnceLock<Timer> = OnceLock::new();

    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    first.block_on(async {
        let timer = TIMER.get_or_init(Timer::new);
        timer.sleep(Duration::from_millis(20)).await;
    });
    drop(first);
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        let timer = TIMER.get().unwrap();
        assert!(timer.is_shutdown());
        let start = std::time::Instant::now();
        assert_shutdown_panic(|| drop(timer.sleep(Duration::from_millis(200))));
        assert!(timer
            .try_sleep(Duration::from_millis(200))
            .unwrap_err()
            .is_shutdown());
        assert!(start.elapsed() < Duration::from_secs(5));
    });
}

#[tokio::test(start_paused = true)]
async fn a_timeout_that_really_elapsed_is_not_blamed_on_shutdown() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let err = timer
        .timeout(Duration::from_millis(10), std::future::pending::<()>())
        .await
        .unwrap_err();
    assert!(!err.is_shutdown());
}

/// `Elapsed::is_shutdown` tells a deadline that was reached from a wait the
/// shutdown cut short, by the timer's clock at the moment the timeout ends:
/// a deadline at or before that moment elapsed (even though the timer is
/// shut down by then), a later one was cut short. Boundaries on the paused
/// clock: deadlines 1 ms before, exactly at, and 1 ns and 1 ms after the
/// shutdown instant, each both polled (registered in the wheel) and never
/// polled before the shutdown.
#[tokio::test(start_paused = true)]
async fn a_deadline_reached_by_shutdown_time_is_elapsed_and_a_later_one_is_cut_short() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let start = Instant::now();
    let at = |ns: u64| start + Duration::from_nanos(ns);
    let ms = 1_000_000;
    // (deadline, whether the timeout must report a shutdown)
    let cases = [
        (at(9 * ms), false),
        (at(10 * ms), false),
        (at(10 * ms + 1), true),
        (at(11 * ms), true),
    ];
    let mut polled = Vec::new();
    let mut unpolled = Vec::new();
    for &(deadline, _) in &cases {
        let mut t = timer.timeout_at(deadline, std::future::pending::<()>());
        assert!(poll_once(&mut t).is_pending());
        polled.push(t);
        unpolled.push(timer.timeout_at(deadline, std::future::pending::<()>()));
    }
    // To the shutdown instant. Whether the driver fired the earlier ones on
    // the way or not, the answer depends on the deadline alone.
    tokio::time::advance(Duration::from_millis(10)).await;
    assert_eq!(Instant::now(), at(10 * ms));
    timer.shutdown();
    for (((deadline, shutdown), mut p), mut u) in cases.into_iter().zip(polled).zip(unpolled) {
        let offset = deadline - start;
        for (which, t) in [("polled", &mut p), ("unpolled", &mut u)] {
            let std::task::Poll::Ready(outcome) = poll_once(t) else {
                panic!("{which} timeout at {offset:?} still pending after shutdown");
            };
            let err = outcome.unwrap_err();
            assert_eq!(
                err.is_shutdown(),
                shutdown,
                "{which} timeout at {offset:?}, shut down at 10 ms: {err}"
            );
        }
    }
}

/// The driver's runtime shuts down while a task on another thread waits:
/// that task is woken and its sleep completes instead of hanging.
#[test]
fn dropping_the_driver_runtime_wakes_waiters_elsewhere() {
    let _watchdog = common::Watchdog::start();
    let (rt, timer) = common::runtime_with_timer(0);
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let timer = timer.clone();
        std::thread::spawn(move || {
            let sleep = timer.sleep(Duration::from_secs(3600));
            let timeout = timer.timeout(Duration::from_secs(3600), std::future::pending::<()>());
            tx.send("registered").unwrap();
            let outcome = futures::executor::block_on(async { futures::join!(sleep, timeout).1 });
            tx.send(if outcome.unwrap_err().is_shutdown() {
                "woken by shutdown"
            } else {
                "elapsed?"
            })
            .unwrap();
        })
    };
    assert_eq!(rx.recv().unwrap(), "registered");
    // Let the driver run once so it is parked waiting, then kill its runtime.
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
    drop(rt);
    let msg = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a waiter hung after the driver's runtime shut down");
    assert_eq!(msg, "woken by shutdown");
    waiter.join().unwrap();
    assert!(timer.is_shutdown());
    assert!(timer
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_shutdown());
}

#[test]
fn sleeps_work_on_other_executors() {
    let _watchdog = common::Watchdog::start();
    let (_rt, timer) = common::runtime_with_timer(1);
    let start = Instant::now();
    futures::executor::block_on(timer.sleep(Duration::from_millis(50)));
    assert!(start.elapsed() >= Duration::from_millis(50));
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let got = other.block_on(timer.timeout(Duration::from_secs(5), async { 9 }));
    assert_eq!(got, Ok(9));
}

#[tokio::test(start_paused = true)]
async fn sleeps_outlive_their_timer_handle() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let sleep = timer.sleep(Duration::from_millis(500));
    drop(timer); // the last handle: the driver keeps going for the live sleep
    let start = Instant::now();
    sleep.await;
    assert!(start.elapsed() >= Duration::from_millis(490));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_stop_the_driver() {
    let _watchdog = common::Watchdog::start();
    struct Panicky;
    impl std::task::Wake for Panicky {
        fn wake(self: std::sync::Arc<Self>) {
            panic!("this waker panics on purpose");
        }
    }
    let timer = Timer::new();
    let bad = std::task::Waker::from(std::sync::Arc::new(Panicky));
    let (counter, good) = CountingWaker::new();
    let mut sleeps: Vec<_> = (0..3)
        .map(|_| timer.sleep(Duration::from_millis(20)))
        .collect();
    assert!(poll_with(&mut sleeps[0], &good).is_pending());
    assert!(poll_with(&mut sleeps[1], &bad).is_pending());
    assert!(poll_with(&mut sleeps[2], &good).is_pending());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(counter.wakes(), 2, "the rest of the bucket still fires");
    assert_eq!(timer.stats().wake_panics, 1);
    // The driver is still alive.
    assert!(!timer.is_shutdown());
    timer.sleep(Duration::from_millis(20)).await;
}

/// Found in review: a driver task dropped before its first poll (its runtime
/// never ran, or was already gone) must still shut the timer down, or every
/// sleep on it would wait forever.
#[test]
fn a_driver_that_never_ran_still_shuts_the_timer_down() {
    let _watchdog = common::Watchdog::start();
    let (rt, timer) = common::runtime_with_timer(0);
    let sleep = timer.sleep(Duration::from_millis(20));
    drop(rt); // the driver task was spawned but never polled
    assert!(timer.is_shutdown());
    let (tx, rx) = mpsc::channel();
    let sleeper = std::thread::spawn(move || {
        futures::executor::block_on(sleep);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("a sleep hung on a timer whose driver never ran");
    sleeper.join().unwrap();
}

#[test]
fn building_on_a_dead_runtime_gives_a_shut_down_timer() {
    let _watchdog = common::Watchdog::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    drop(rt);
    let timer = Timer::builder().runtime(handle).build().unwrap();
    assert!(timer.is_shutdown());
    assert_shutdown_panic(|| drop(timer.sleep(Duration::from_secs(1))));
    assert!(timer
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_shutdown());
}

/// Sleeps that complete at once (here: zero durations) take part in tokio's
/// task budget, as `tokio::time::Sleep` does: a loop of them yields to the
/// scheduler instead of starving every other task on the thread.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_loop_of_instant_sleeps_yields_to_other_tasks() {
    let _watchdog = common::Watchdog::start();
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    const LOOPS: usize = 10_000;
    let timer = tickwheel::Timer::new();
    let done = Arc::new(AtomicUsize::new(0));
    let counter = done.clone();
    let spinner = tokio::spawn(async move {
        for _ in 0..LOOPS {
            timer.sleep(Duration::ZERO).await;
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    // The spinner runs as soon as this task yields; without a budget it would
    // finish all its loops before this task runs again.
    tokio::task::yield_now().await;
    let seen = done.load(Ordering::Relaxed);
    assert!(
        seen > 0 && seen < LOOPS,
        "the spinner ran {seen} of {LOOPS} loops before yielding"
    );
    spinner.await.unwrap();
    assert_eq!(done.load(Ordering::Relaxed), LOOPS);
}

/// Sleeps spread over the ring and the overflow level: `n` of them, with a
/// counting waker each, all polled once (registered).
fn register_many(timer: &Timer, n: u64) -> Vec<(tickwheel::Sleep, std::sync::Arc<CountingWaker>)> {
    (0..n)
        .map(|i| {
            // 10 ms to about 28 hours: many revolutions of the wheel.
            let mut sleep = timer.sleep(Duration::from_millis(10 + i * 997));
            let (counter, waker) = CountingWaker::new();
            assert!(poll_with(&mut sleep, &waker).is_pending());
            (sleep, counter)
        })
        .collect()
}

/// Every one of the sleeps was woken exactly once, and now completes.
fn all_woken_once(sleeps: &mut [(tickwheel::Sleep, std::sync::Arc<CountingWaker>)]) {
    for (i, (sleep, counter)) in sleeps.iter_mut().enumerate() {
        assert_eq!(
            counter.wakes(),
            1,
            "sleep {i} was woken {} times",
            counter.wakes()
        );
        assert!(poll_once(sleep).is_ready(), "sleep {i} did not complete");
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_a_hundred_thousand_pending_wakes_every_one() {
    let _watchdog = common::Watchdog::start();
    const N: u64 = 100_000;
    let timer = Timer::new();
    let mut sleeps = register_many(&timer, N);
    assert_eq!(timer.pending(), N as usize);
    assert_eq!(timer.shutdown(), N as usize);
    assert_eq!(timer.pending(), 0);
    // Polled by hand from one task, 100,000 ready sleeps would run out of
    // tokio's task budget (as tokio's own sleeps do): check them unbudgeted.
    tokio::task::unconstrained(async { all_woken_once(&mut sleeps) }).await;
    let stats = timer.stats();
    assert_eq!((stats.registered, stats.cancelled, stats.fired), (N, N, 0));
}

#[test]
fn dropping_the_runtime_with_a_hundred_thousand_pending_wakes_every_one() {
    let _watchdog = common::Watchdog::start();
    const N: u64 = 100_000;
    let (rt, timer) = common::runtime_with_timer(0);
    // Registered from this thread, outside the runtime.
    let mut sleeps = register_many(&timer, N);
    assert_eq!(timer.pending(), N as usize);
    drop(rt);
    assert!(timer.is_shutdown());
    assert_eq!(timer.pending(), 0);
    all_woken_once(&mut sleeps);
}

#[test]
fn a_sleep_polled_after_its_timer_and_runtime_are_gone_completes() {
    let _watchdog = common::Watchdog::start();
    let (rt, timer) = common::runtime_with_timer(2);
    let mut registered = timer.sleep(Duration::from_secs(3600));
    let (counter, waker) = CountingWaker::new();
    assert!(poll_with(&mut registered, &waker).is_pending());
    let mut never_polled = timer.sleep(Duration::from_secs(3600));
    drop(timer);
    drop(rt);
    assert_eq!(counter.wakes(), 1, "the registered sleep's task was woken");
    assert!(poll_once(&mut registered).is_ready());
    assert!(poll_once(&mut never_polled).is_ready());
}
