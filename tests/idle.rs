//! An idle timer parks (no driver wake-ups at all), and a busy one sleeps
//! straight to the next non-empty bucket instead of every tick.

mod common;

use std::time::Duration;

use tickwheel::Timer;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn idle_timer_does_not_wake_at_all() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    let before = timer.stats().wakeups;
    // An hour of paused time: a per-tick driver would wake 3.6 million times.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(timer.stats().wakeups, before);
}

#[tokio::test(start_paused = true)]
async fn idle_again_after_the_last_timer_fires() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    timer.sleep(Duration::from_millis(30)).await;
    let before = timer.stats().wakeups;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(timer.stats().wakeups, before);
}

/// A 10 s sleep, on the default timer (10,000 ticks of 1 ms; 8192 slots)
/// and on a coarse one (1000 ticks of 10 ms; 512 slots): either way it lies
/// in the ring's next lap, and the driver wakes for its registration and to
/// fire it, while the clock moves over every tick.
#[tokio::test(start_paused = true)]
async fn a_lone_timer_costs_a_few_wakeups_not_one_per_tick() {
    let _watchdog = common::Watchdog::start();
    // Each built just before its sleep: a timer left idle for more than a
    // revolution has processed no tick since, and would first move the
    // sleep in from its overflow level (one more wake-up).
    for build in [Timer::new, common::old_default_timer] {
        let timer = build();
        let sleep = Duration::from_secs(10);
        let ticks = (sleep.as_nanos() / timer.tick().as_nanos()) as u64;
        assert!(ticks >= timer.slots() as u64, "in the next lap");
        let before = timer.stats();
        timer.sleep(sleep).await;
        let after = timer.stats();
        // One wake-up for the registration's notice, one to fire.
        assert!(
            after.wakeups - before.wakeups <= 2,
            "{} wake-ups for one timer over {ticks} ticks",
            after.wakeups - before.wakeups
        );
        assert_eq!(
            after.ticks - before.ticks,
            ticks,
            "the clock still advanced {ticks} ticks"
        );
        assert_eq!(after.migrated, before.migrated, "straight into the ring");
    }
}

#[tokio::test(start_paused = true)]
async fn sparse_timers_cost_wakeups_per_busy_bucket() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    let before = timer.stats().wakeups;
    let mut tasks = Vec::new();
    for i in 1..=10u64 {
        let timer = timer.clone();
        // Ten buckets, 100 ms apart, 50 timers each.
        for _ in 0..50 {
            let timer = timer.clone();
            tasks.push(tokio::spawn(async move {
                timer.sleep(Duration::from_millis(100 * i)).await
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let wakeups = timer.stats().wakeups - before;
    // 1000 ticks passed; about one wake-up per non-empty bucket (plus a few
    // for registration notices), never one per tick.
    assert!(wakeups <= 10 + 10, "{wakeups} wake-ups for 10 busy buckets");
}

/// A registration made before the driver task ever ran arms the driver's
/// alarm itself (no notice to the task), and the pass that fires the sleep
/// is counted once: one wake-up, the alarm's.
#[tokio::test(start_paused = true)]
async fn a_sleep_registered_before_the_driver_ran_costs_one_wake_up() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    let mut sleep = task::spawn(timer.sleep(Duration::from_millis(1)));
    assert_pending!(sleep.poll());
    assert_eq!(timer.stats().wakeups, 0, "the driver has not run yet");
    tokio::time::advance(Duration::from_millis(5)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
    assert_eq!(timer.stats().fired, 1);
    // The alarm fired, and its pass fired the sleep (1). The task's first
    // pass, which found nothing due, is not a wake-up; nor is the
    // registration's re-arm, which scans nothing.
    assert_eq!(timer.stats().wakeups, 1);
}
