//! On time under load: the wheel moves in the pass tokio makes over its own
//! timers, whatever the run queue holds.
//!
//! Each test keeps a paused current-thread runtime busy with more runnable
//! tasks than tokio polls between two passes over its timers
//! (`event_interval`, 61 by default), so a task woken by a timer waits
//! several passes for its turn. The driver task is such a task: these tests
//! fail if the wheel only advances once the driver task is polled, since
//! every `advance` would then find the driver still waiting behind the busy
//! tasks, its tokio sleep spent on the tick before.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::Watchdog;
use tickwheel::{time, Timer};
use tokio::time::Instant;
use tokio_test::task;
use tokio_test::{assert_pending, assert_ready};

/// More than two of tokio's batches of task polls between timer passes.
const BUSY_TASKS: usize = 300;

/// Keeps `BUSY_TASKS` tasks runnable until dropped.
struct Busy(Arc<AtomicBool>);

impl Busy {
    fn start() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..BUSY_TASKS {
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    tokio::task::yield_now().await;
                }
            });
        }
        Busy(stop)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[tokio::test(start_paused = true)]
async fn sleeps_due_at_successive_ticks_are_woken_by_each_advance_on_a_busy_runtime() {
    let _watchdog = Watchdog::start();
    // The timer's driver has started and run (the runtime was idle).
    time::sleep(Duration::from_millis(1)).await;
    let _busy = Busy::start();
    successive_ticks_each_woken_by_their_advance().await;
}

/// The same when the runtime was busy before the timer's first sleep: the
/// driver task has had no turn yet when the first sleep registers.
#[tokio::test(start_paused = true)]
async fn a_timer_first_used_on_a_busy_runtime_wakes_its_first_sleeps_on_time() {
    let _watchdog = Watchdog::start();
    let _busy = Busy::start();
    successive_ticks_each_woken_by_their_advance().await;
}

async fn successive_ticks_each_woken_by_their_advance() {
    let mut sleeps: Vec<_> = (1..=20)
        .map(|ms| task::spawn(time::sleep(Duration::from_millis(ms))))
        .collect();
    for sleep in &mut sleeps {
        assert_pending!(sleep.poll());
    }
    for (due, sleep) in sleeps.iter_mut().enumerate() {
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            sleep.is_woken(),
            "the sleep due at {} ms was not woken",
            due + 1
        );
        assert_ready!(sleep.poll());
    }
}

/// The same with the timer's own tick (1.5 ms) and an origin off tokio's
/// millisecond grid, against `tokio::time::sleep_until` of each tick
/// boundary on the same busy runtime: after every step of the clock, a wheel
/// sleep is ready exactly when its tokio twin is (never later, and never
/// before its deadline).
#[tokio::test(start_paused = true)]
async fn an_odd_tick_off_the_grid_keeps_pace_with_tokio_on_a_busy_runtime() {
    let _watchdog = Watchdog::start();
    tokio::time::advance(Duration::from_micros(300)).await;
    let tick = Duration::from_micros(1_500);
    let timer = Timer::builder().tick(tick).build().unwrap();
    let origin = Instant::now();
    let _busy = Busy::start();
    let mut pairs: Vec<_> = (1..=12)
        .map(|k| {
            let deadline = origin + tick * k;
            (
                deadline,
                task::spawn(timer.sleep_until(deadline)),
                task::spawn(tokio::time::sleep_until(deadline)),
            )
        })
        .collect();
    for (_, wheel, tokio) in &mut pairs {
        assert_pending!(wheel.poll());
        assert_pending!(tokio.poll());
    }
    let mut done = vec![false; pairs.len()];
    let mut tokio_fired = 0;
    while tokio_fired < pairs.len() {
        assert!(Instant::now() < origin + tick * 14, "not all fired");
        tokio::time::advance(Duration::from_micros(500)).await;
        let now = Instant::now();
        for ((deadline, wheel, tokio), done) in pairs[tokio_fired..]
            .iter_mut()
            .zip(&mut done[tokio_fired..])
        {
            let at = (now - origin, *deadline - origin);
            if !*done {
                // A task is polled only once woken: a sleep that would be
                // ready on a poll but was never woken is late all the same.
                let woken = wheel.is_woken();
                *done = wheel.poll().is_ready();
                assert!(!*done || woken, "at {:?}: ready, but never woken", at.0);
                assert!(
                    !*done || now >= *deadline,
                    "at {:?}: fired early, due at {:?}",
                    at.0,
                    at.1
                );
            }
            if tokio.poll().is_pending() {
                break;
            }
            // Never later than tokio: woken in the pass that fired tokio's.
            assert!(
                *done,
                "at {:?}: tokio fired its sleep for {:?}, the wheel's is pending",
                at.0, at.1
            );
            tokio_fired += 1;
        }
    }
}
