//! The `backon` feature: backon's retry loops sleep on the wheel.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use tokio::time::Instant;

/// An operation that fails `failures` times, recording when each attempt ran
/// (as an offset from `start`).
fn flaky(
    start: Instant,
    failures: usize,
    attempts: Arc<Mutex<Vec<Duration>>>,
) -> impl FnMut() -> std::future::Ready<Result<&'static str, &'static str>> {
    move || {
        let mut log = attempts.lock().unwrap();
        log.push(start.elapsed());
        std::future::ready(if log.len() <= failures {
            Err("unavailable")
        } else {
            Ok("ok")
        })
    }
}

/// 250 ms doubling: 250, 500, 1000 ms. backon scales delays in `f32`
/// seconds, and these are exact in binary (100 ms * 2 would come out a few
/// nanoseconds over 200 ms, which the wheel rounds up to the next tick).
fn backoff() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(250))
        .with_factor(2.0)
        .with_max_times(5)
}

/// Each backoff delay is one sleep registered in the wheel, and the attempts
/// run exactly when the delays say (all whole milliseconds, multiples of the
/// default 1 ms tick, so the wheel adds no rounding).
#[tokio::test(start_paused = true)]
async fn retry_sleeps_on_the_wheel_at_the_backoff_instants() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let start = Instant::now();
    let attempts = Arc::new(Mutex::new(Vec::new()));

    let result = flaky(start, 3, attempts.clone())
        .retry(backoff())
        .sleep(timer.clone())
        .await;

    assert_eq!(result, Ok("ok"));
    let ms = Duration::from_millis;
    assert_eq!(
        *attempts.lock().unwrap(),
        vec![ms(0), ms(250), ms(750), ms(1750)]
    );
    let stats = timer.stats();
    assert_eq!(stats.registered, 3, "one wheel entry per backoff wait");
    assert_eq!(stats.fired, 3);
    assert_eq!(stats.pending, 0);
}

/// A delay that is not a tick multiple rounds up to the next tick, never
/// down: the retry runs late by less than a tick, never early. A delay of
/// 3.3 ticks runs at 4: 4 ms on the default tick, 40 ms on a 10 ms one.
#[tokio::test(start_paused = true)]
async fn backoff_delays_round_up_to_the_tick() {
    let _watchdog = common::Watchdog::start();
    fn coarse() -> tickwheel::Timer {
        tickwheel::Timer::builder()
            .tick(Duration::from_millis(10))
            .build()
            .unwrap()
    }
    // Each timer built at its run's start: its ticks count from there.
    for build in [tickwheel::Timer::new, coarse] {
        let timer = build();
        let tick = timer.tick();
        let start = Instant::now();
        let attempts = Arc::new(Mutex::new(Vec::new()));

        let result = flaky(start, 1, attempts.clone())
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(tick * 33 / 10)
                    .with_max_times(1),
            )
            .sleep(timer.clone())
            .await;

        assert_eq!(result, Ok("ok"));
        assert_eq!(
            *attempts.lock().unwrap(),
            vec![Duration::ZERO, tick * 4],
            "{tick:?}"
        );
        assert_eq!(timer.stats().registered, 1);
    }
}

/// When the timer shuts down during a backoff wait, the wait ends at once,
/// and backon's next wait on the dead timer panics: the retry ends loudly at
/// the instant of the shutdown instead of spinning through its attempts or
/// hanging on a dead timer.
#[tokio::test(start_paused = true)]
async fn shutdown_ends_the_backoff_loop_loudly() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let start = Instant::now();
    let attempts = Arc::new(Mutex::new(Vec::new()));

    let retry = tokio::spawn(
        flaky(start, usize::MAX, attempts.clone())
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_secs(60))
                    .with_max_times(1000),
            )
            .sleep(timer.clone()),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(attempts.lock().unwrap().len(), 1, "waiting out 60 s");
    assert_eq!(timer.shutdown(), 1, "the backoff wait was in the wheel");

    let err = retry.await.unwrap_err();
    assert!(err.is_panic(), "{err}");
    let attempts = attempts.lock().unwrap();
    assert_eq!(
        *attempts,
        [Duration::ZERO, Duration::from_secs(1)],
        "the attempt after the cut-short wait, then no more"
    );
    assert_eq!(Instant::now(), start + Duration::from_secs(1));
}
