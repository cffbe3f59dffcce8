//! Every deadline is measured on the timer's own clock (the clock of the
//! runtime hosting its driver), whichever runtime a sleep is made, reset or
//! polled from. With tokio's test clock, two runtimes' clocks can differ:
//! reading the ambient one would fire sleeps early or late.

mod common;

use std::pin::Pin;
use std::time::Duration;

use common::watchdog::within_30_s;
use common::{poll_with, CountingWaker};
use tickwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

const MS: Duration = Duration::from_millis(1);

/// Two paused runtimes, `away`'s clock 10 ms ahead of `home`'s, and a 1 ms
/// timer whose driver runs on `home`.
struct Apart {
    home: tokio::runtime::Runtime,
    away: tokio::runtime::Runtime,
    timer: Timer,
    /// `home`'s now (the timer's).
    home_now: Instant,
}

fn two_clocks_apart() -> Apart {
    let home = common::paused_runtime();
    let away = common::paused_runtime();
    let timer = Timer::builder()
        .tick(MS)
        .runtime(home.handle().clone())
        .build()
        .unwrap();
    away.block_on(tokio::time::advance(10 * MS));
    let home_now = home.block_on(async { Instant::now() });
    let away_now = away.block_on(async { Instant::now() });
    assert!(away_now >= home_now + 9 * MS, "the clocks must differ");
    Apart {
        home,
        away,
        timer,
        home_now,
    }
}

/// Two paused runtimes whose clocks are 10 ms apart; the timer lives on the
/// one behind. A reset made from the one ahead to 5 ms in the timer's future
/// must wait, not complete at once; a sleep made there must end `d` after
/// the timer's now, not the other runtime's.
#[test]
fn sleeps_made_or_reset_from_another_runtime_use_the_timers_clock() {
    let _watchdog = common::Watchdog::start();
    let Apart {
        home,
        away,
        timer,
        home_now,
    } = two_clocks_apart();

    let (counter, waker) = CountingWaker::new();
    let (sleep, fresh) = away.block_on(async {
        let made_away = timer.sleep(100 * MS);
        assert_eq!(made_away.deadline(), home_now + 100 * MS);

        let mut sleep = timer.sleep(Duration::from_secs(60));
        assert!(poll_with(&mut sleep, &waker).is_pending());
        Pin::new(&mut sleep).reset(home_now + 5 * MS);
        assert!(!sleep.is_elapsed(), "reset to the timer's future completed");
        assert!(poll_with(&mut sleep, &waker).is_pending());

        // A never-polled sleep_until whose deadline has passed on this
        // runtime's clock but not on the timer's registers instead.
        let mut fresh = timer.sleep_until(home_now + 5 * MS);
        assert!(poll_with(&mut fresh, &waker).is_pending());
        (sleep, fresh)
    });
    assert_eq!(counter.wakes(), 0);

    // On the timer's clock the deadline comes 5 ms later, not before.
    home.block_on(async {
        tokio::time::sleep(4 * MS).await;
        assert_eq!(timer.pending(), 2, "fired before the deadline");
        assert_eq!(counter.wakes(), 0);
        tokio::time::sleep(MS).await;
        assert_eq!(timer.pending(), 0);
        assert_eq!(counter.wakes(), 2);
    });
    assert!(sleep.is_elapsed() && fresh.is_elapsed());
}

/// A timer on a multi-thread runtime (whose clock cannot be paused) used
/// from a paused runtime an hour ahead: its sleeps are due a second from
/// the real now, not an hour later.
#[test]
fn a_paused_runtime_does_not_move_a_real_time_timers_deadlines() {
    let _watchdog = common::Watchdog::start();
    let (_home, timer) = common::runtime_with_timer(1);
    let away = common::paused_runtime();
    away.block_on(async {
        tokio::time::advance(Duration::from_secs(3600)).await;
        let before = Instant::from_std(std::time::Instant::now());
        let sleep = timer.sleep(Duration::from_secs(1));
        let after = Instant::from_std(std::time::Instant::now());
        assert!(sleep.deadline() >= before + Duration::from_secs(1));
        assert!(
            sleep.deadline() <= after + Duration::from_secs(1),
            "the deadline followed the paused runtime's clock"
        );
    });
}

/// The same from inside a task spawned on the other runtime, which reads
/// the clock several times (a task seen once is remembered: every later
/// read must still use the timer's clock, not the task's runtime's).
#[test]
fn a_task_of_another_runtime_keeps_using_the_timers_clock() {
    let _watchdog = common::Watchdog::start();
    let Apart {
        home: _home, // the timer's runtime: it must outlive the test
        away,
        timer,
        home_now,
    } = two_clocks_apart();
    let task = away.spawn({
        let timer = timer.clone();
        async move {
            let mut deadlines = Vec::new();
            for _ in 0..3 {
                deadlines.push(timer.sleep(100 * MS).deadline());
                tokio::task::yield_now().await;
            }
            let mut sleep = timer.sleep(Duration::from_secs(60));
            assert!(futures::poll!(&mut sleep).is_pending());
            Pin::new(&mut sleep).reset(home_now + 5 * MS);
            assert!(!sleep.is_elapsed(), "reset to the timer's future completed");
            deadlines
        }
    });
    let deadlines = away.block_on(task).unwrap();
    assert_eq!(deadlines, vec![home_now + 100 * MS; 3]);
}

/// `Timer::now()` is the timer's clock now, not the last tick its driver
/// processed: after a sleep has fired and 500 ms passed with nothing to fire
/// (the driver parked), it is tokio's `Instant::now()`, and
/// `timer.sleep_until(timer.now() + d)` fires when `tokio::time::sleep(d)`
/// does, not at once.
#[test]
fn now_is_the_timers_clock_after_an_idle_stretch() {
    within_30_s(|| {
        common::paused_runtime().block_on(async {
            let timer = Timer::new();
            timer.sleep(10 * MS).await;
            // Idle: the driver finishes its pass and parks, and the paused
            // clock moves on with it parked.
            tokio::time::sleep(500 * MS).await;
            assert_eq!(timer.now(), Instant::now(), "now lags the clock");

            let mut wheel = task::spawn(timer.sleep_until(timer.now() + 100 * MS));
            let mut tokio = task::spawn(tokio::time::sleep(100 * MS));
            assert_pending!(wheel.poll(), "a sleep of 100 ms from now fired at once");
            assert_pending!(tokio.poll());
            tokio::time::advance(99 * MS).await;
            assert!(!wheel.is_woken());
            assert!(!tokio.is_woken());
            assert_pending!(wheel.poll());
            assert_pending!(tokio.poll());
            tokio::time::advance(MS).await;
            assert!(wheel.is_woken());
            assert!(tokio.is_woken());
            assert_ready!(wheel.poll());
            assert_ready!(tokio.poll());
        });
    });
}

/// Read from another runtime, `Timer::now()` is still the timer's own
/// clock: the timer's runtime fired a sleep, then moved 25 ms on idle (now
/// about 16 ms ahead of the other's), and `now()` says so from either.
#[test]
fn now_from_another_runtime_is_the_timers_clock() {
    within_30_s(|| {
        let Apart {
            home,
            away,
            timer,
            home_now,
        } = two_clocks_apart();
        let home_now = home.block_on(async {
            timer.sleep(MS).await;
            tokio::time::sleep(25 * MS).await; // idle, the driver parked
            assert_eq!(Instant::now(), home_now + 26 * MS);
            Instant::now()
        });
        away.block_on(async {
            assert_ne!(Instant::now(), home_now, "the clocks must differ");
            assert_eq!(timer.now(), home_now);
        });
        assert_eq!(timer.now(), home_now, "outside any runtime too");
    });
}
