//! `Timer::interval`: tokio's `Interval` on the wheel. Every test runs on the
//! paused clock, and the missed-tick tests run `tokio::time::interval` side by
//! side as the reference model.

mod common;

use std::time::Duration;

use futures::StreamExt;
use tickwheel::{Builder, MissedTickBehavior, Timer};
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A timer with 1 ms ticks, so every whole-millisecond instant is a tick
/// boundary and the wheel can match tokio exactly.
fn fine_timer() -> Timer {
    Timer::builder().tick(ms(1)).build().unwrap()
}

/// A timer with 10 ms ticks, for the tests of rounding to a coarse tick.
fn coarse_timer() -> Timer {
    Timer::builder().tick(ms(10)).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn first_tick_is_immediate_and_later_ticks_land_on_the_schedule() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(ms(100));
    assert_eq!(interval.tick().await, start);
    assert_eq!(Instant::now(), start, "the first tick must not wait");
    for n in 1..=5 {
        let at = interval.tick().await;
        assert_eq!(at, start + ms(100) * n);
        assert_eq!(Instant::now(), at, "tick {n} completed off schedule");
    }
}

#[tokio::test(start_paused = true)]
async fn interval_at_waits_for_its_start() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now() + ms(250);
    let mut interval = timer.interval_at(start, ms(40));
    assert_eq!(interval.tick().await, start);
    assert_eq!(Instant::now(), start);
    assert_eq!(interval.tick().await, start + ms(40));
    assert_eq!(Instant::now(), start + ms(40));
}

/// With a 10 ms tick and a period (23 ms) that is not a multiple of it,
/// each tick completes at the first tick boundary at or after its scheduled
/// instant (never before, less than one tick after), and the rounding does
/// not accumulate: the returned instants stay exactly `start + n * period`,
/// in every missed-tick mode (wheel rounding is not a missed tick).
#[tokio::test(start_paused = true)]
async fn coarse_ticks_round_up_but_never_drift() {
    let _watchdog = common::Watchdog::start();
    for behavior in [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ] {
        let timer = coarse_timer();
        let tick = timer.tick();
        assert_eq!(tick, ms(10));
        let start = Instant::now();
        let mut interval = timer.interval(ms(23));
        interval.set_missed_tick_behavior(behavior);
        interval.tick().await;
        let mut late = Vec::new();
        for n in 1..=12u32 {
            let at = interval.tick().await;
            let now = Instant::now();
            assert_eq!(at, start + ms(23) * n, "{behavior:?} drifted at tick {n}");
            assert!(now >= at, "{behavior:?}: tick {n} completed early");
            assert!(
                now - at < tick,
                "{behavior:?}: tick {n} more than a tick late"
            );
            late.push((now - at).as_millis());
        }
        // Timer origin = start, so lateness is (-23n) mod 10: up to 9 ms,
        // beyond tokio's 5 ms threshold, and still not a missed tick.
        assert_eq!(late, [7, 4, 1, 8, 5, 2, 9, 6, 3, 0, 7, 4], "{behavior:?}");
    }
}

/// One of the two intervals under comparison.
enum Ticker {
    Wheel(tickwheel::Interval),
    Tokio(tokio::time::Interval),
}

impl Ticker {
    async fn tick(&mut self) -> Instant {
        match self {
            Ticker::Wheel(i) => i.tick().await,
            Ticker::Tokio(i) => i.tick().await,
        }
    }
}

fn to_tokio(b: MissedTickBehavior) -> tokio::time::MissedTickBehavior {
    match b {
        MissedTickBehavior::Burst => tokio::time::MissedTickBehavior::Burst,
        MissedTickBehavior::Delay => tokio::time::MissedTickBehavior::Delay,
        MissedTickBehavior::Skip => tokio::time::MissedTickBehavior::Skip,
    }
}

/// Period 100 ms; tick once, stall for `stall`, then take six ticks. Returns
/// (scheduled instant, completion time) of each, in ms since the start.
async fn stalled_run(
    wheel: bool,
    behavior: MissedTickBehavior,
    stall: Duration,
) -> Vec<(u128, u128)> {
    let timer = fine_timer();
    let start = Instant::now();
    let mut ticker = if wheel {
        let mut i = timer.interval(ms(100));
        i.set_missed_tick_behavior(behavior);
        Ticker::Wheel(i)
    } else {
        let mut i = tokio::time::interval(ms(100));
        i.set_missed_tick_behavior(to_tokio(behavior));
        Ticker::Tokio(i)
    };
    ticker.tick().await;
    tokio::time::sleep(stall).await;
    let mut seen = Vec::new();
    for _ in 0..6 {
        let at = ticker.tick().await;
        seen.push((
            (at - start).as_millis(),
            (Instant::now() - start).as_millis(),
        ));
    }
    timer.shutdown();
    seen
}

#[tokio::test(start_paused = true)]
async fn missed_ticks_behave_exactly_as_tokios() {
    let _watchdog = common::Watchdog::start();
    use MissedTickBehavior::*;
    // Stalls: a long one (350 ms), one ending exactly on a grid instant
    // (300 ms), and a small one (103 ms) under tokio's 5 ms threshold.
    type Case = (MissedTickBehavior, u64, [(u128, u128); 6]);
    let expected: [Case; 9] = [
        (
            Burst,
            350,
            [
                (100, 350),
                (200, 350),
                (300, 350),
                (400, 400),
                (500, 500),
                (600, 600),
            ],
        ),
        (
            Delay,
            350,
            [
                (100, 350),
                (450, 450),
                (550, 550),
                (650, 650),
                (750, 750),
                (850, 850),
            ],
        ),
        (
            Skip,
            350,
            [
                (100, 350),
                (400, 400),
                (500, 500),
                (600, 600),
                (700, 700),
                (800, 800),
            ],
        ),
        (
            Burst,
            300,
            [
                (100, 300),
                (200, 300),
                (300, 300),
                (400, 400),
                (500, 500),
                (600, 600),
            ],
        ),
        (
            Delay,
            300,
            [
                (100, 300),
                (400, 400),
                (500, 500),
                (600, 600),
                (700, 700),
                (800, 800),
            ],
        ),
        (
            Skip,
            300,
            [
                (100, 300),
                (400, 400),
                (500, 500),
                (600, 600),
                (700, 700),
                (800, 800),
            ],
        ),
        (
            Burst,
            103,
            [
                (100, 103),
                (200, 200),
                (300, 300),
                (400, 400),
                (500, 500),
                (600, 600),
            ],
        ),
        (
            Delay,
            103,
            [
                (100, 103),
                (200, 200),
                (300, 300),
                (400, 400),
                (500, 500),
                (600, 600),
            ],
        ),
        (
            Skip,
            103,
            [
                (100, 103),
                (200, 200),
                (300, 300),
                (400, 400),
                (500, 500),
                (600, 600),
            ],
        ),
    ];
    for (behavior, stall, want) in expected {
        let tokio_seen = stalled_run(false, behavior, ms(stall)).await;
        let wheel_seen = stalled_run(true, behavior, ms(stall)).await;
        assert_eq!(
            tokio_seen, want,
            "the reference model disagrees: {behavior:?} {stall} ms"
        );
        assert_eq!(
            wheel_seen, tokio_seen,
            "{behavior:?} after a {stall} ms stall"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn reset_moves_the_schedule() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(ms(100));
    interval.tick().await;
    tokio::time::sleep(ms(30)).await;
    interval.reset();
    assert_eq!(interval.tick().await, start + ms(130));
    assert_eq!(Instant::now(), start + ms(130));
    assert_eq!(interval.tick().await, start + ms(230));

    interval.reset_after(ms(7));
    assert_eq!(interval.tick().await, start + ms(237));
    assert_eq!(Instant::now(), start + ms(237));

    interval.reset_immediately();
    assert_eq!(interval.tick().await, start + ms(237));
    assert_eq!(interval.tick().await, start + ms(337));

    interval.reset_at(start + ms(1000));
    assert_eq!(interval.tick().await, start + ms(1000));
    assert_eq!(Instant::now(), start + ms(1000));
}

/// A registered tick that is reset to later must not wake early: the wheel
/// entry moves with it.
#[tokio::test(start_paused = true)]
async fn reset_while_waiting_moves_the_wheel_entry() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(ms(100));
    interval.tick().await;
    // Register the tick at 100 ms, then give up on it after 50 ms.
    tokio::select! {
        _ = interval.tick() => panic!("ticked before its instant"),
        _ = tokio::time::sleep(ms(50)) => {}
    }
    assert_eq!(timer.pending(), 1);
    interval.reset(); // now 150 ms
    assert_eq!(interval.tick().await, start + ms(150));
    assert_eq!(Instant::now(), start + ms(150));
}

#[tokio::test(start_paused = true)]
async fn tick_is_cancel_safe() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(ms(100));
    interval.tick().await;
    for _ in 0..3 {
        tokio::select! {
            _ = interval.tick() => panic!("ticked early"),
            _ = tokio::time::sleep(ms(20)) => {}
        }
    }
    assert_eq!(interval.tick().await, start + ms(100));
    assert_eq!(interval.tick().await, start + ms(200));
}

#[tokio::test(start_paused = true)]
async fn stream_yields_the_scheduled_instants() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let ticks: Vec<Instant> = timer.interval(ms(50)).take(4).collect().await;
    let want: Vec<Instant> = (0..4).map(|n| start + ms(50) * n).collect();
    assert_eq!(ticks, want);
    assert_eq!(Instant::now(), start + ms(150));
}

#[tokio::test(start_paused = true)]
async fn after_shutdown_the_stream_ends_and_tick_panics() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(ms(1000));
    assert_eq!(interval.next().await, Some(start));
    let waiting = tokio::spawn({
        let timer = timer.clone();
        let mut interval = timer.interval(ms(1000));
        async move {
            interval.tick().await; // immediate
            interval.next().await // ends by shutdown, not after 1 s
        }
    });
    tokio::task::yield_now().await; // let it start waiting
    timer.shutdown();
    assert_eq!(waiting.await.unwrap(), None);
    assert_eq!(Instant::now(), start, "shutdown must end the wait at once");
    assert_eq!(interval.next().await, None);

    // The loop that spun before (1.2 million ticks in 200 ms) now ends with
    // the shutdown panic, having ticked only what was due.
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let looping = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            loop {
                interval.tick().await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    let err = looping.await.unwrap_err();
    assert!(err.is_panic(), "{err}");
    assert_eq!(ticks.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn zero_period_is_one_tick_not_a_panic() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let mut interval = timer.interval(Duration::ZERO);
    assert_eq!(interval.period(), timer.tick());
    assert_eq!(interval.tick().await, start);
    assert_eq!(interval.tick().await, start + ms(1));
    assert_eq!(interval.tick().await, start + ms(2));
    assert_eq!(Instant::now(), start + ms(2));

    let coarse = coarse_timer();
    assert_eq!(coarse.interval(Duration::ZERO).period(), ms(10));
    let default = Timer::new();
    assert_eq!(
        default.interval(Duration::ZERO).period(),
        Builder::DEFAULT_TICK
    );
}

#[tokio::test(start_paused = true)]
async fn default_behaviour_is_burst_like_tokio() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut interval = timer.interval(ms(10));
    assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert_eq!(
        to_tokio(interval.missed_tick_behavior()),
        tokio::time::interval(ms(10)).missed_tick_behavior()
    );
    interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Skip);
}

/// A period under the tick: ticks come in bursts at tick boundaries, one per
/// period on average, never before their scheduled instants. A fifth of
/// the tick: 2 ms on a 10 ms tick, 200 µs on the default 1 ms one.
#[tokio::test(start_paused = true)]
async fn sub_tick_periods_burst_at_tick_boundaries() {
    let _watchdog = common::Watchdog::start();
    for build in [coarse_timer, Timer::new] {
        let timer = build();
        let tick = timer.tick();
        let period = tick / 5;
        let start = Instant::now();
        let mut interval = timer.interval(period);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        assert_eq!(interval.period(), period);
        let mut completed = Vec::new();
        for n in 0..=10u32 {
            let at = interval.tick().await;
            assert_eq!(at, start + period * n);
            assert!(Instant::now() >= at);
            completed.push(Instant::now() - start);
        }
        let boundaries = [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2].map(|n| tick * n);
        assert_eq!(completed, boundaries, "{tick:?}");
    }
}
