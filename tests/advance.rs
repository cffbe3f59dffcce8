//! The wheel under tokio's test clock behaves as `tokio::time` does: after
//! `tokio::time::advance(d).await` returns, every wheel sleep due by then has
//! been woken (and a poll returns `Ready`), side by side with tokio's own
//! sleeps; no extra yield is needed. Each test is written the way a
//! `tokio::time` user writes one, with tokio-test's mock tasks.

mod common;

use std::time::Duration;

use tickwheel::Timer;
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, task};

const MS: Duration = Duration::from_millis(1);

/// A 1 ms-tick timer whose driver has started and parked, as in a program
/// that has been running for a while (a driver that has not run yet would
/// process everything on its first pass whatever the design).
async fn ms_timer() -> Timer {
    let timer = Timer::builder().tick(MS).build().unwrap();
    tokio::task::yield_now().await;
    timer
}

/// A registered wheel sleep is woken by the same `advance` that wakes a
/// tokio sleep with the same deadline, and not by the one before.
#[tokio::test(start_paused = true)]
async fn advance_wakes_a_registered_wheel_sleep_with_tokios() {
    let _watchdog = common::Watchdog::start();
    let timer = ms_timer().await;
    let mut wheel = task::spawn(timer.sleep(10 * MS));
    let mut tokio = task::spawn(tokio::time::sleep(10 * MS));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());

    advance(9 * MS).await;
    assert!(!tokio.is_woken());
    assert!(!wheel.is_woken(), "woken before its deadline");
    assert_pending!(wheel.poll());

    advance(MS).await;
    assert!(tokio.is_woken());
    assert!(wheel.is_woken(), "not woken when advance returned");
    assert_ready!(tokio.poll());
    assert_ready!(wheel.poll());
}

/// A sleep never polled before the deadline passed is `Ready` on its first
/// poll, as tokio's is.
#[tokio::test(start_paused = true)]
async fn a_first_poll_after_the_deadline_is_ready() {
    let _watchdog = common::Watchdog::start();
    let timer = ms_timer().await;
    let mut wheel = task::spawn(timer.sleep(10 * MS));
    let mut tokio = task::spawn(tokio::time::sleep(10 * MS));
    advance(10 * MS).await;
    assert_ready!(tokio.poll());
    assert_ready!(wheel.poll());
}

/// One `advance` over many ticks wakes every sleep due by its end, in any
/// bucket, and none due later; the deadline is the next tick boundary (on a
/// 10 ms tick, 95 ms is due at 100 ms and 101 ms at 110 ms), on the default
/// tick and on a 10 ms one.
#[tokio::test(start_paused = true)]
async fn one_long_advance_wakes_everything_due_and_nothing_else() {
    let _watchdog = common::Watchdog::start();
    fn coarse() -> Timer {
        Timer::builder().tick(10 * MS).build().unwrap()
    }
    for build in [Timer::new, coarse] {
        let timer = build(); // built now: its ticks count from here
        let tick_ns = timer.tick().as_nanos();
        tokio::task::yield_now().await; // the driver starts, and parks
        let mut sleeps: Vec<_> = [5, 10, 15, 60, 95, 100, 101, 250]
            .iter()
            .map(|&ms| (ms, task::spawn(timer.sleep(ms * MS))))
            .collect();
        for (_, sleep) in &mut sleeps {
            assert_pending!(sleep.poll());
        }
        advance(100 * MS).await;
        for (ms, sleep) in &mut sleeps {
            // Deadlines round up to the tick's grid.
            let due = (*ms * MS).as_nanos().div_ceil(tick_ns) * tick_ns <= (100 * MS).as_nanos();
            assert_eq!(sleep.is_woken(), due, "sleep of {ms} ms");
            assert_eq!(sleep.poll().is_ready(), due, "sleep of {ms} ms");
        }
    }
}

/// Registrations and resets made between two `advance`s, earlier than what
/// the driver was waiting for, are honoured by the next `advance` alone.
#[tokio::test(start_paused = true)]
async fn earlier_registrations_and_resets_between_advances_are_seen() {
    let _watchdog = common::Watchdog::start();
    let timer = ms_timer().await;
    let mut late = task::spawn(timer.sleep(Duration::from_secs(60)));
    assert_pending!(late.poll());
    advance(5 * MS).await;
    let mut early = task::spawn(timer.sleep(2 * MS));
    assert_pending!(early.poll());
    let start = Instant::now();
    late.enter(|_, sleep| sleep.reset(start + 3 * MS));
    advance(2 * MS).await;
    assert!(early.is_woken());
    assert!(!late.is_woken());
    advance(MS).await;
    assert!(late.is_woken());
    assert_ready!(late.poll());
}

/// A sleep with a saturated deadline costs the driver no wake-up, ever:
/// not for its registration, and not when the clock passes the ~292-year
/// horizon (before, the driver then woke in a loop: 78,080 wake-ups in 10
/// yields).
#[tokio::test(start_paused = true)]
async fn a_saturated_deadline_costs_no_driver_wake_up() {
    let _watchdog = common::Watchdog::start();
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    let timer = ms_timer().await;
    let before = timer.stats().wakeups;
    let mut forever = task::spawn(timer.sleep(Duration::MAX));
    assert_pending!(forever.poll());
    for _ in 0..3 {
        advance(100 * YEAR).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }
    assert_eq!(timer.stats().wakeups, before, "the driver woke up");
    assert!(!forever.is_woken());
    assert_pending!(forever.poll());
    assert_eq!(timer.pending(), 1, "still registered for shutdown");
    assert_eq!(timer.shutdown(), 1);
    assert!(forever.is_woken());
}

/// `tokio::time::pause()` in the middle of a test leaves the clock off
/// tokio's millisecond grid. A 1 ms + 1 ns sleep on a 1 ms tick then takes
/// 2 ms, as tokio's does (before: 3 ms, the wheel's rounding and tokio's
/// added up).
#[tokio::test]
async fn after_pause_one_tick_late_at_most_like_tokio() {
    let _watchdog = common::Watchdog::start();
    tokio::time::pause();
    let timer = ms_timer().await;
    let start = Instant::now();
    timer.sleep(MS + Duration::from_nanos(1)).await;
    assert_eq!(start.elapsed(), 2 * MS);

    let start = Instant::now();
    tokio::time::sleep(MS + Duration::from_nanos(1)).await;
    assert_eq!(start.elapsed(), 2 * MS, "tokio's own, for comparison");
}

/// With the timer built before the pause, its tick grid and the paused
/// clock's millisecond phase differ. The bound that holds: a wheel sleep
/// completes no later than `tokio::time::sleep_until` of its tick boundary
/// would, and never before its deadline.
#[tokio::test]
async fn off_grid_no_later_than_tokio_at_the_tick_boundary() {
    let _watchdog = common::Watchdog::start();
    // Built on a paused clock, so its origin (tick 0) is known exactly...
    tokio::time::pause();
    let origin = Instant::now();
    let timer = ms_timer().await;
    // ... then real time moves the clock off the timer's grid.
    tokio::time::resume();
    std::thread::sleep(Duration::from_micros(300));
    tokio::time::pause();
    assert_ne!((Instant::now() - origin).as_nanos() % 1_000_000, 0);
    for extra_ns in [1, 250_000, 999_999, 1_000_000, 1_400_000] {
        let deadline = Instant::now() + MS + Duration::from_nanos(extra_ns);
        let since = (deadline - origin).as_nanos();
        let boundary =
            origin + Duration::from_nanos((since.div_ceil(1_000_000) * 1_000_000) as u64);
        let mut wheel = task::spawn(timer.sleep_until(deadline));
        let mut tokio = task::spawn(tokio::time::sleep_until(boundary));
        assert_pending!(wheel.poll());
        assert_pending!(tokio.poll());
        loop {
            if wheel.poll().is_ready() {
                assert!(Instant::now() >= deadline, "completed before its deadline");
                break;
            }
            assert!(
                !tokio.is_woken(),
                "later than tokio::time::sleep_until(boundary) ({extra_ns} ns)"
            );
            advance(Duration::from_micros(100)).await;
        }
    }
}

/// With a tick that is not a whole number of milliseconds, `advance` is
/// exactly as precise as tokio's own timers at the tick boundary: the wheel
/// sleep is woken by the same `advance` that wakes
/// `tokio::time::sleep_until(boundary)`, never by an earlier one, and never
/// before its deadline.
#[tokio::test(start_paused = true)]
async fn sub_millisecond_ticks_wake_with_tokio_at_the_boundary() {
    let _watchdog = common::Watchdog::start();
    let tick = Duration::from_micros(1500);
    let timer = Timer::builder().tick(tick).build().unwrap();
    tokio::task::yield_now().await;
    let origin = Instant::now();
    let mut wheel = task::spawn(timer.sleep(MS)); // boundary: 1.5 ms
    let mut tokio = task::spawn(tokio::time::sleep_until(origin + tick));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    let step = Duration::from_micros(250);
    while !tokio.is_woken() {
        assert!(!wheel.is_woken(), "woken before tokio at the boundary");
        advance(step).await;
    }
    assert!(wheel.is_woken(), "tokio at the boundary woke first");
    assert!(Instant::now() >= origin + tick);
    assert_ready!(wheel.poll());
}

/// The documented far-future behaviours: a `Duration::MAX` sleep never
/// fires, while an interval whose period overflows ticks once, then again
/// after about 30 years (as tokio's does), not never and not at once.
#[tokio::test(start_paused = true)]
async fn duration_max_never_fires_but_an_overflowing_interval_ticks_after_30_years() {
    let _watchdog = common::Watchdog::start();
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    let timer = Timer::new();
    let start = Instant::now();
    let mut forever = task::spawn(timer.sleep(Duration::MAX));
    assert_pending!(forever.poll());
    let mut interval = timer.interval(Duration::MAX);
    assert_eq!(interval.tick().await, start);
    let mut next = task::spawn(interval.tick());
    assert_pending!(next.poll());
    advance(30 * YEAR - Duration::from_secs(1)).await;
    assert!(!next.is_woken(), "ticked before about 30 years");
    advance(Duration::from_secs(1)).await;
    assert!(next.is_woken());
    assert_eq!(assert_ready!(next.poll()), start + 30 * YEAR);
    advance(100 * YEAR).await;
    assert!(!forever.is_woken());
    assert_pending!(forever.poll());
}
