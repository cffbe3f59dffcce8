//! What a service exports about its timer: live and pending sleeps and the
//! headroom under `max_pending`, the lateness histogram's buckets, and the
//! difference of two snapshots (per-interval counters). On the paused
//! clock, so every figure is exact.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use tickwheel::{LatenessHistogram, Stats, Timer};
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, task};

const MS: Duration = Duration::from_millis(1);

/// A timer with 10 ms ticks, so that a 15 ms sleep is 5 ms late.
fn coarse_timer() -> tickwheel::Builder {
    Timer::builder().tick(10 * MS)
}

fn live_pending(stats: &Stats) -> (usize, usize) {
    (stats.live, stats.pending)
}

/// Polls a sleep once without a task (registering it).
fn register(sleep: &mut tickwheel::Sleep) {
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(sleep).poll(&mut cx).is_pending());
}

/// Live counts sleeps from creation to drop, pending only while registered,
/// with or without a `max_pending` limit (the two are counted differently
/// inside, and must agree).
#[tokio::test(start_paused = true)]
async fn live_counts_created_sleeps_pending_registered_ones() {
    let _watchdog = common::Watchdog::start();
    for timer in [
        Timer::new(),
        Timer::builder().max_pending(1000).build().unwrap(),
    ] {
        let bounded = timer.max_pending().is_some();
        assert_eq!(live_pending(&timer.stats()), (0, 0), "bounded: {bounded}");

        let mut created = timer.sleep(Duration::from_secs(1));
        let mut waiting = task::spawn(timer.sleep(20 * MS));
        assert_eq!(live_pending(&timer.stats()), (2, 0), "bounded: {bounded}");

        register(&mut created);
        assert_pending!(waiting.poll());
        assert_eq!(live_pending(&timer.stats()), (2, 2), "bounded: {bounded}");

        // Fired but still held: live, no longer pending.
        advance(20 * MS).await;
        assert_ready!(waiting.poll());
        assert_eq!(live_pending(&timer.stats()), (2, 1), "bounded: {bounded}");

        // Everything that holds a sleep counts once: a timeout, an interval.
        let timeout = timer.timeout(Duration::from_secs(1), std::future::pending::<()>());
        let interval = timer.interval(Duration::from_secs(1));
        assert_eq!(timer.stats().live, 4, "bounded: {bounded}");

        drop((created, waiting, timeout, interval));
        assert_eq!(live_pending(&timer.stats()), (0, 0), "bounded: {bounded}");
    }
}

/// The headroom is what `try_sleep` will still accept: at zero it refuses.
#[tokio::test(start_paused = true)]
async fn headroom_is_what_max_pending_still_accepts() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().max_pending(3).build().unwrap();
    assert_eq!(timer.stats().max_pending, Some(3));
    assert_eq!(timer.stats().headroom(), Some(3));
    let mut held = Vec::new();
    while let Some(room) = timer.stats().headroom().filter(|&room| room > 0) {
        held.push(timer.try_sleep(Duration::from_secs(1)).unwrap());
        assert_eq!(timer.stats().headroom(), Some(room - 1));
    }
    assert_eq!(held.len(), 3);
    assert!(timer
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_at_capacity());
    held.pop();
    assert_eq!(timer.stats().headroom(), Some(1));

    let unbounded = Timer::new();
    assert_eq!(
        (unbounded.stats().max_pending, unbounded.stats().headroom()),
        (None, None)
    );
}

/// Each fired timer lands in the bucket of its exact lateness: a 15 ms
/// sleep on 10 ms ticks fires at 20 ms, 5 ms late, in the bucket
/// [4608 µs, 5120 µs); on-grid sleeps are on time, in the first bucket.
#[tokio::test(start_paused = true)]
async fn the_histogram_buckets_each_timer_by_its_lateness() {
    let _watchdog = common::Watchdog::start();
    let timer = coarse_timer().build().unwrap();
    tokio::task::yield_now().await;
    for _ in 0..3 {
        timer.sleep(15 * MS).await; // 5 ms late
    }
    for _ in 0..2 {
        timer.sleep(10 * MS).await; // on time
    }
    let stats = timer.stats();
    let histogram = &stats.lateness_histogram;
    assert_eq!(histogram.count(), 5);
    assert_eq!(histogram.sum(), 15 * MS);
    let buckets: Vec<_> = histogram.buckets().collect();
    assert_eq!(buckets.len(), 2, "{buckets:?}");
    assert_eq!(buckets[0].le, Duration::from_micros(1));
    assert_eq!((buckets[0].count, buckets[0].cumulative), (2, 2));
    assert_eq!(buckets[1].le, Duration::from_micros(5120));
    assert_eq!((buckets[1].count, buckets[1].cumulative), (3, 5));
    assert_eq!(histogram.count_below(Duration::from_micros(4608)), 2);
    assert_eq!(histogram.count_below(Duration::from_micros(5120)), 5);
    // The summary agrees with the buckets.
    assert_eq!(stats.lateness.count, 5);
    assert_eq!(stats.lateness.max, 5 * MS);
    assert_eq!(stats.lateness.mean, 3 * MS);
    assert!(LatenessHistogram::bounds().any(|b| b == buckets[1].le));
}

/// A fixed set of bounds (what Prometheus wants in every scrape) reads the
/// same cumulative counts as the buckets at those bounds, rises, and ends
/// at the total.
#[tokio::test(start_paused = true)]
async fn cumulative_counts_at_fixed_bounds_match_the_buckets() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().tick(MS).build().unwrap();
    tokio::task::yield_now().await;
    // Sleeps made at sub-millisecond offsets: lateness spread under 1 ms.
    let mut sleeps = Vec::new();
    for i in 0..50u64 {
        advance(Duration::from_micros(37)).await;
        let mut sleep = task::spawn(timer.sleep(Duration::from_micros(1000 + i * 13)));
        assert_pending!(sleep.poll());
        sleeps.push(sleep);
    }
    advance(10 * MS).await;
    for sleep in &mut sleeps {
        assert_ready!(sleep.poll());
    }
    let histogram = timer.stats().lateness_histogram;
    assert_eq!(histogram.count(), 50);
    let fixed: Vec<_> = LatenessHistogram::bounds()
        .filter(|b| b.as_micros().is_power_of_two() && *b <= Duration::from_secs(1))
        .collect();
    let counts: Vec<_> = fixed.iter().map(|&le| histogram.count_below(le)).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(*counts.last().unwrap(), 50);
    for bucket in histogram.buckets() {
        assert_eq!(histogram.count_below(bucket.le), bucket.cumulative);
    }
    assert!(histogram.buckets().count() > 1, "the lateness was spread");
}

/// The difference of two snapshots: counters of the interval, gauges of
/// the later snapshot, the lateness of the interval alone; saturating if
/// the snapshots are swapped; `-` is the same as `delta`.
#[tokio::test(start_paused = true)]
async fn a_delta_gives_the_intervals_counters_and_the_later_gauges() {
    let _watchdog = common::Watchdog::start();
    let timer = coarse_timer().max_pending(100).build().unwrap();
    tokio::task::yield_now().await;
    timer.sleep(15 * MS).await; // 5 ms late, before the interval
    let before = timer.stats();
    let start = Instant::now();

    let _held = timer.sleep(Duration::from_secs(60)); // a gauge: live
    let mut cancelled = timer.sleep(Duration::from_secs(60));
    register(&mut cancelled);
    drop(cancelled);
    for _ in 0..4 {
        timer.sleep(10 * MS).await; // on time
    }
    let after = timer.stats();
    let interval = after.delta(&before);

    assert_eq!(interval.fired, 4);
    assert_eq!(interval.registered, 5);
    assert_eq!(interval.cancelled, 1);
    assert_eq!(interval.wakeups, after.wakeups - before.wakeups);
    assert_eq!(interval.ticks, 4, "40 ms of 10 ms ticks");
    assert_eq!(
        (interval.live, interval.pending),
        (after.live, after.pending)
    );
    assert_eq!(interval.live, 1);
    assert_eq!(interval.headroom(), Some(99));
    assert_eq!(interval.entry_bytes, after.entry_bytes);
    // Only the interval's timers, all on time: the 5 ms before is not in it.
    assert_eq!(interval.lateness.count, 4);
    assert_eq!(interval.lateness.max, Duration::ZERO);
    assert_eq!(interval.lateness_histogram.count(), 4);
    assert_eq!(interval.lateness_histogram.sum(), Duration::ZERO);
    let rate = interval.fired as f64 / start.elapsed().as_secs_f64();
    assert_eq!(rate, 100.0);

    assert_eq!(&after - &before, interval);
    assert_eq!(after.clone() - before.clone(), interval);

    let backwards = before.delta(&after);
    assert_eq!(
        (backwards.fired, backwards.registered, backwards.wakeups),
        (0, 0, 0)
    );
    assert_eq!(backwards.lateness_histogram.count(), 0);
    assert_eq!(backwards.lateness.count, 0);
}

/// A snapshot minus itself has no activity and keeps its gauges.
#[tokio::test(start_paused = true)]
async fn a_snapshot_minus_itself_is_idle() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let _held = timer.sleep(Duration::from_secs(1));
    timer.sleep(25 * MS).await;
    let stats = timer.stats();
    let zero = &stats - &stats;
    assert_eq!((zero.fired, zero.registered, zero.ticks), (0, 0, 0));
    assert_eq!(zero.lateness_histogram.buckets().count(), 0);
    assert_eq!(zero.live, 1);
}

/// `Display` is one compact line: gauges, counters and the lateness
/// summary, `headroom` only with a limit, `lateness none` before anything
/// fired, no bucket; a delta prints the interval's counters.
#[tokio::test(start_paused = true)]
async fn display_is_one_compact_line() {
    let _watchdog = common::Watchdog::start();
    let unbounded = Timer::new();
    let line = unbounded.stats().to_string();
    assert_eq!(
        line,
        "live 0 pending 0 fired 0 cancelled 0 wakeups 0 lateness none"
    );

    let timer = coarse_timer().max_pending(50).build().unwrap();
    tokio::task::yield_now().await;
    let _held = timer.sleep(Duration::from_secs(60)); // live, not pending
    let mut waiting = task::spawn(timer.sleep(Duration::from_secs(1)));
    assert_pending!(waiting.poll()); // pending
    for _ in 0..3 {
        timer.sleep(15 * MS).await; // 5 ms late
    }
    // Never polled: neither fired nor cancelled.
    drop(timer.sleep(30 * MS));
    // Ready at once: its sleep never registers, so it is not cancelled.
    assert_eq!(timer.timeout(20 * MS, async {}).await, Ok(()));
    let mut dropped = task::spawn(timer.sleep(40 * MS));
    assert_pending!(dropped.poll());
    drop(dropped); // cancelled
    let stats = timer.stats();
    assert_eq!(
        stats.to_string(),
        format!(
            "live 2 pending 1 headroom 48 fired 3 cancelled 1 wakeups {} \
             lateness p50 5ms p99 5ms max 5ms",
            stats.wakeups
        )
    );
    assert!(stats.wakeups >= 3, "{stats}");
    // The Debug form has every field (and the buckets); Display does not.
    assert!(format!("{stats:?}").contains("lateness_histogram"));
    assert!(!stats.to_string().contains("bucket"));

    let before = stats;
    timer.sleep(10 * MS).await; // on time
    let interval = timer.stats().delta(&before);
    assert_eq!(
        interval.to_string(),
        format!(
            "live 2 pending 1 headroom 48 fired 1 cancelled 0 wakeups {} \
             lateness p50 0ns p99 0ns max 0ns",
            interval.wakeups
        )
    );
}

/// On tokio's usual timer, the grid search behind whole-millisecond ticks
/// finds tokio's grid, built on a worker or off the workers: the stats say
/// it was not missed (tests/alt_timer.rs checks the alternative timer, where
/// it is).
#[test]
fn a_whole_millisecond_timer_finds_tokios_grid() {
    let _watchdog = common::Watchdog::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..20 {
        let off_workers = Timer::builder()
            .runtime(rt.handle().clone())
            .build()
            .unwrap();
        assert!(!off_workers.stats().grid_missed);
        let on_worker = rt
            .block_on(rt.spawn(async { Timer::new().stats().grid_missed }))
            .unwrap();
        assert!(!on_worker);
    }
}
