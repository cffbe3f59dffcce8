//! Extreme and invalid input saturates or errors; nothing
//! panics, overflows, fires early or hangs.

mod common;

use std::time::Duration;

use common::poll_once;
use tickwheel::{BuildError, Builder, Timer};
use tokio::time::Instant;

const YEAR: Duration = Duration::from_secs(365 * 86_400);

#[tokio::test(start_paused = true)]
async fn duration_max_saturates_and_never_fires() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut sleep = timer.sleep(Duration::MAX);
    assert!(poll_once(&mut sleep).is_pending());
    assert!(sleep.deadline() > Instant::now() + 200 * YEAR);
    let mut timeout = Box::pin(timer.timeout(Duration::MAX, std::future::pending::<()>()));
    assert!(futures::poll!(timeout.as_mut()).is_pending());
    tokio::time::advance(3 * YEAR).await;
    assert!(poll_once(&mut sleep).is_pending());
    assert!(!sleep.is_elapsed());
    assert!(futures::poll!(timeout.as_mut()).is_pending());
    assert_eq!(timer.pending(), 2);
    // Still registered, so shutdown still reaches them.
    assert_eq!(timer.shutdown(), 2);
    assert!(poll_once(&mut sleep).is_ready());
}

#[tokio::test(start_paused = true)]
async fn far_instants_keep_their_exact_deadline() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let far = Instant::now() + 200 * YEAR;
    let mut sleep = timer.sleep_until(far);
    assert_eq!(sleep.deadline(), far);
    assert!(poll_once(&mut sleep).is_pending());
}

#[tokio::test(start_paused = true)]
async fn zero_and_past_deadlines_complete_on_first_poll() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    tokio::time::advance(Duration::from_secs(5)).await;
    let now = Instant::now();
    let before_the_timer = now - Duration::from_secs(60);
    assert!(poll_once(&mut timer.sleep(Duration::ZERO)).is_ready());
    assert!(poll_once(&mut timer.sleep_until(now)).is_ready());
    assert!(poll_once(&mut timer.sleep_until(now - Duration::from_millis(1))).is_ready());
    let mut old = timer.sleep_until(before_the_timer);
    assert_eq!(
        old.deadline(),
        before_the_timer,
        "exact even before the timer's origin"
    );
    assert!(poll_once(&mut old).is_ready());
    let mut t = Box::pin(timer.timeout(Duration::ZERO, std::future::pending::<()>()));
    assert!(matches!(
        futures::poll!(t.as_mut()),
        std::task::Poll::Ready(Err(_))
    ));
    // Completing again is still Ready, and none of them touched the wheel.
    assert!(poll_once(&mut old).is_ready());
    assert_eq!(timer.stats().registered, 0);
}

/// The same on a running clock, where the timer has never seen a pause and
/// skips the clock read it can (a `sleep(d)`'s first poll): a deadline that
/// has passed, or is just now, is still `Ready` on the first poll and never
/// registers, though the driver is a whole tick from reaching it.
#[tokio::test]
async fn on_a_running_clock_passed_deadlines_complete_on_first_poll() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_secs(1))
        .build()
        .unwrap();
    let built = Instant::now();
    assert!(poll_once(&mut timer.sleep_until(built)).is_ready());
    assert!(poll_once(&mut timer.sleep_until(Instant::now())).is_ready());
    let mut t = Box::pin(timer.timeout_at(built, std::future::pending::<()>()));
    assert!(matches!(
        futures::poll!(t.as_mut()),
        std::task::Poll::Ready(Err(_))
    ));
    assert_eq!(timer.stats().registered, 0);
}

#[tokio::test(start_paused = true)]
async fn reset_to_extremes_is_safe() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut sleep = timer.sleep(Duration::from_secs(1));
    assert!(poll_once(&mut sleep).is_pending());
    std::pin::Pin::new(&mut sleep).reset(Instant::now() + 250 * YEAR);
    assert!(poll_once(&mut sleep).is_pending());
    assert_eq!(timer.pending(), 1);
    std::pin::Pin::new(&mut sleep).reset(Instant::now() - YEAR);
    assert!(poll_once(&mut sleep).is_ready());
    assert_eq!(timer.pending(), 0);
}

#[tokio::test]
async fn every_bad_builder_setting_is_a_typed_error() {
    let _watchdog = common::Watchdog::start();
    type Check = fn(&BuildError) -> bool;
    let cases: Vec<(Builder, Check)> = vec![
        (Timer::builder().tick(Duration::ZERO), |e| {
            matches!(e, BuildError::TickTooShort { .. })
        }),
        (Timer::builder().tick(Duration::from_micros(999)), |e| {
            matches!(e, BuildError::TickTooShort { .. })
        }),
        (Timer::builder().slots(0), |e| {
            matches!(e, BuildError::ZeroSlots)
        }),
        (Timer::builder().slots(Builder::MAX_SLOTS + 1), |e| {
            matches!(e, BuildError::TooManySlots { .. })
        }),
        (Timer::builder().slots(usize::MAX), |e| {
            matches!(e, BuildError::TooManySlots { .. })
        }),
        (Timer::builder().tick(Duration::MAX), |e| {
            matches!(e, BuildError::SpanOverflow { .. })
        }),
        (
            Timer::builder()
                .tick(Duration::from_secs(200_000))
                .slots(Builder::MAX_SLOTS),
            |e| matches!(e, BuildError::SpanOverflow { .. }),
        ),
        (Timer::builder().max_pending(0), |e| {
            matches!(e, BuildError::ZeroMaxPending)
        }),
    ];
    for (builder, is_expected) in cases {
        let err = builder
            .clone()
            .build()
            .expect_err(&format!("{builder:?} must fail"));
        assert!(is_expected(&err), "{builder:?} gave {err:?}");
        assert!(!err.to_string().is_empty());
    }
    // The limits themselves are fine.
    let timer = Timer::builder()
        .tick(Builder::MIN_TICK)
        .slots(Builder::MAX_SLOTS)
        .max_pending(1)
        .build()
        .unwrap();
    assert_eq!(timer.slots(), Builder::MAX_SLOTS);
    // ... and their driver works.
    let start = Instant::now();
    timer.sleep(Duration::from_millis(3)).await;
    assert!(start.elapsed() >= Duration::from_millis(3));
}

/// Every extreme input at once, then an ordinary sleep: the driver is still
/// alive and on time, nothing was shut down, nothing panicked.
#[tokio::test(start_paused = true)]
async fn the_driver_survives_every_extreme_input() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .slots(8)
        .build()
        .unwrap();
    let now = Instant::now();
    let far = now + Duration::from_secs(200 * 365 * 24 * 3600);
    let mut extremes = vec![
        timer.sleep(Duration::MAX),
        timer.sleep_until(far),
        timer.sleep(Duration::ZERO),
        timer.sleep_until(now - Duration::from_secs(1)),
        timer.sleep(Duration::from_nanos(1)),
    ];
    for sleep in extremes.iter_mut() {
        let _ = common::poll_once(sleep);
    }
    for sleep in extremes.iter_mut() {
        std::pin::Pin::new(&mut *sleep).reset(now - Duration::from_secs(5));
        std::pin::Pin::new(&mut *sleep).reset(far);
    }
    tokio::time::advance(Duration::from_millis(50)).await;
    for sleep in extremes.iter_mut() {
        // Polling again, completed or not, is always allowed.
        let _ = common::poll_once(sleep);
        let _ = common::poll_once(sleep);
    }
    let start = Instant::now();
    timer.sleep(Duration::from_millis(7)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(7));
    assert!(!timer.is_shutdown());
    assert_eq!(timer.stats().wake_panics, 0);
    assert_eq!(
        timer.pending(),
        extremes.len(),
        "all reset to the far instant"
    );
    drop(extremes);
    assert_eq!(timer.pending(), 0);
}

#[test]
fn building_outside_a_runtime_is_an_error() {
    let _watchdog = common::Watchdog::start();
    assert_eq!(Timer::builder().build().unwrap_err(), BuildError::NoRuntime);
}

#[test]
#[should_panic(expected = "must be called from within a Tokio runtime")]
fn new_outside_a_runtime_panics_with_a_clear_message() {
    let _watchdog = common::Watchdog::start();
    let _ = Timer::new();
}

/// Mutation check: the saturating add only matters once the clock has moved
/// away from the timer's origin.
#[tokio::test(start_paused = true)]
async fn duration_max_saturates_after_time_has_passed() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    tokio::time::advance(Duration::from_millis(1500)).await;
    let mut sleep = timer.sleep(Duration::MAX);
    assert!(
        poll_once(&mut sleep).is_pending(),
        "Duration::MAX must never be due"
    );
    assert!(sleep.deadline() > Instant::now() + 200 * YEAR);
    let mut tried = timer.try_sleep(Duration::MAX).unwrap();
    assert!(poll_once(&mut tried).is_pending());
    tokio::time::advance(3 * YEAR).await;
    assert!(poll_once(&mut sleep).is_pending());
    assert_eq!(timer.pending(), 2);
}

/// Mutation check: with the driver parked, the wheel's processed tick is stale,
/// so only the sleep's own clock check makes a past deadline ready at once.
#[tokio::test(start_paused = true)]
async fn past_deadlines_are_ready_on_first_poll_while_the_driver_is_parked() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    tokio::time::advance(Duration::from_secs(5)).await; // and stays parked
    let now = Instant::now();
    for past in [
        now,
        now - Duration::from_millis(1),
        now - Duration::from_secs(2),
    ] {
        let mut sleep = timer.sleep_until(past);
        assert!(
            poll_once(&mut sleep).is_ready(),
            "deadline {:?} ago",
            now - past
        );
        assert!(sleep.is_elapsed());
    }
    let mut t =
        Box::pin(timer.timeout_at(now - Duration::from_secs(1), std::future::pending::<()>()));
    assert!(matches!(
        futures::poll!(t.as_mut()),
        std::task::Poll::Ready(Err(_))
    ));
    assert_eq!(
        timer.stats().registered,
        0,
        "a past deadline never touches the wheel"
    );
}
