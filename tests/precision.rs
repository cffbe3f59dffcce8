//! Behaviours 1 and 2: never early, at most one tick late, and exactly
//! deterministic on tokio's paused clock.

mod common;

use std::time::Duration;

use tickwheel::Timer;
use tokio::time::Instant;

/// The instant a sleep with `deadline` must complete at on a paused clock:
/// the first tick boundary (counted from the timer's origin) at or after it.
fn boundary_after(origin: Instant, deadline: Instant, tick: Duration) -> Instant {
    let since = deadline.saturating_duration_since(origin).as_nanos();
    let tick_ns = tick.as_nanos();
    let ticks = since.div_ceil(tick_ns);
    origin + Duration::from_nanos((ticks * tick_ns) as u64)
}

/// A timer with a 10 ms tick and 512 slots (a revolution of 5.12 s), beside
/// the default one (1 ms x 8192, 8.192 s).
fn coarse_timer() -> Timer {
    common::old_default_timer()
}

#[tokio::test(start_paused = true)]
async fn sleeps_end_exactly_on_the_next_tick_boundary_never_before() {
    let _watchdog = common::Watchdog::start();
    for build in [Timer::new, coarse_timer] {
        let timer = build();
        let origin = Instant::now(); // the paused clock has not moved since build
        let tick = timer.tick();
        let revolution = tick * timer.slots() as u32;
        let cases = [
            Duration::from_nanos(1),
            Duration::from_millis(1),
            tick - Duration::from_micros(1),
            tick,
            tick + Duration::from_nanos(1),
            tick * 3 / 2,
            // Each sleep starts where the last one ended: one revolution
            // away, just past it, and nearly three away (the overflow level).
            revolution,
            revolution + tick * 7 / 10,
            revolution * 3 - tick,
            Duration::from_secs(3600),
        ];
        for d in cases {
            let sleep = timer.sleep(d);
            let deadline = sleep.deadline();
            sleep.await;
            let now = Instant::now();
            assert!(now >= deadline, "{d:?}: woke {:?} early", deadline - now);
            assert_eq!(
                now,
                boundary_after(origin, deadline, tick),
                "{d:?}: not on the first boundary after the deadline ({tick:?} tick)"
            );
            assert!(now - deadline < tick, "{d:?}: more than a tick late");
        }
        assert_eq!(
            timer.stats().migrated,
            2,
            "the last two, through the overflow"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_sleeps_each_fire_on_their_own_boundary() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(3))
        .slots(64)
        .build()
        .unwrap();
    let origin = Instant::now();
    let tick = timer.tick();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut tasks = Vec::new();
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // 0..2 s in microseconds: many revolutions of 64 x 3 ms.
        let d = Duration::from_micros(seed % 2_000_000);
        let timer = timer.clone();
        tasks.push(tokio::spawn(async move {
            let sleep = timer.sleep(d);
            let deadline = sleep.deadline();
            sleep.await;
            (deadline, Instant::now())
        }));
    }
    for task in tasks {
        let (deadline, woke) = task.await.unwrap();
        assert!(woke >= deadline, "woke early by {:?}", deadline - woke);
        assert_eq!(woke, boundary_after(origin, deadline, tick));
    }
    let stats = timer.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.registered, stats.fired + stats.cancelled);
    assert!(stats.lateness.max < tick, "{}", stats.lateness);
}

#[tokio::test(start_paused = true)]
async fn the_same_program_gives_the_same_wakeups_every_run() {
    let _watchdog = common::Watchdog::start();
    async fn run() -> Vec<Duration> {
        let timer = Timer::new();
        let start = Instant::now();
        let mut woke = Vec::new();
        for d in [7u64, 30, 1, 999, 5_200, 12] {
            timer.sleep(Duration::from_millis(d)).await;
            woke.push(start.elapsed());
        }
        woke
    }
    assert_eq!(run().await, run().await);
}

/// Sleeps of a tenth, a half, one and two and a half ticks in a row, each
/// from a tick boundary: 0.9, 0.5, 0 and 0.5 ticks late, on the default
/// tick (0.1 to 2.5 ms) as on a 10 ms one (1 to 25 ms).
#[tokio::test(start_paused = true)]
async fn lateness_is_reported_and_never_negative() {
    let _watchdog = common::Watchdog::start();
    for build in [Timer::new, coarse_timer] {
        let timer = build();
        let tick = timer.tick();
        for d in [tick / 10, tick / 2, tick, tick * 5 / 2] {
            timer.sleep(d).await;
        }
        let lateness = timer.stats().lateness;
        assert_eq!(lateness.count, 4);
        // Each rounds up to the next boundary; all are under one tick late.
        assert!(lateness.max < tick, "{lateness}");
        assert!(lateness.max > Duration::ZERO, "rounding up must show");
        assert_eq!(lateness.max, tick * 9 / 10, "{lateness}");
    }
}

/// `last_tick()`, the cached clock, is the last processed tick: within a
/// tick of the clock right after a timer fired, and as far behind as the
/// driver has been parked once nothing is due (what its name and docs say).
#[tokio::test(start_paused = true)]
async fn last_tick_is_the_last_processed_tick() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    timer.sleep(Duration::from_millis(1234)).await;
    let now = Instant::now();
    assert_eq!(timer.now(), now);
    assert!(timer.last_tick() <= now);
    assert!(now - timer.last_tick() < timer.tick());
    let fired_at = timer.last_tick();
    // Idle: the driver parks and processes no tick.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(timer.last_tick(), fired_at);
    assert_eq!(timer.now() - timer.last_tick(), Instant::now() - fired_at);
}
