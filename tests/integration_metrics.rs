//! The `metrics` feature: a timer's stats published through the `metrics`
//! facade, read back from a recorder of the test's own.
//!
//! The publishing task runs on the timer's runtime, which a recorder set
//! with `metrics::with_local_recorder` does not reach, so the recorder here
//! is the global one, installed once for the whole binary. Tests run in
//! parallel, so each publishes under a label of its own (`test="<name>"`)
//! and reads only its own metrics back. Every test runs on the paused clock
//! under a watchdog: a publisher that never returns (a spin on the paused
//! clock) fails the run instead of stalling it.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tickwheel::metrics::Publisher;
use tickwheel::Timer;
use tokio::time::{sleep, sleep_until, Instant};
use tokio_test::{assert_pending, task};

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// What the recorder holds for one metric.
#[derive(Debug, Clone, Default, PartialEq)]
struct Metric {
    /// A gauge's last value.
    gauge: Option<f64>,
    /// A counter's total.
    counter: u64,
    /// Every value a histogram recorded, in order.
    histogram: Vec<f64>,
}

/// The test recorder: every metric by its name and its `test` label.
#[derive(Clone, Default)]
struct Values {
    metrics: Arc<Mutex<BTreeMap<(String, String), Metric>>>,
    units: Arc<Mutex<BTreeMap<String, Option<Unit>>>>,
}

struct Handle {
    values: Values,
    id: (String, String),
}

impl Handle {
    fn with(&self, change: impl FnOnce(&mut Metric)) {
        let mut metrics = self.values.metrics.lock().unwrap();
        change(metrics.entry(self.id.clone()).or_default());
    }
}

impl metrics::CounterFn for Handle {
    fn increment(&self, n: u64) {
        self.with(|m| m.counter += n);
    }
    fn absolute(&self, n: u64) {
        self.with(|m| m.counter = n);
    }
}

impl metrics::GaugeFn for Handle {
    fn increment(&self, n: f64) {
        self.with(|m| *m.gauge.get_or_insert(0.0) += n);
    }
    fn decrement(&self, n: f64) {
        self.with(|m| *m.gauge.get_or_insert(0.0) -= n);
    }
    fn set(&self, n: f64) {
        self.with(|m| m.gauge = Some(n));
    }
}

impl metrics::HistogramFn for Handle {
    fn record(&self, value: f64) {
        self.with(|m| m.histogram.push(value));
    }
}

impl Values {
    fn handle(&self, key: &Key) -> Arc<Handle> {
        let test = key
            .labels()
            .find(|label| label.key() == "test")
            .map_or_else(String::new, |label| label.value().to_owned());
        Arc::new(Handle {
            values: self.clone(),
            id: (key.name().to_owned(), test),
        })
    }

    fn describe(&self, name: KeyName, unit: Option<Unit>) {
        self.units
            .lock()
            .unwrap()
            .insert(name.as_str().to_owned(), unit);
    }
}

impl Recorder for Values {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(name, unit);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.handle(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.handle(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.handle(key))
    }
}

/// The global recorder, installed by the first test that asks for it.
fn recorder() -> &'static Values {
    static VALUES: OnceLock<Values> = OnceLock::new();
    VALUES.get_or_init(|| {
        let values = Values::default();
        metrics::set_global_recorder(values.clone()).expect("no other recorder in this binary");
        values
    })
}

/// One test's view of the recorder: the metrics labelled `test=<name>`.
struct Seen(&'static str);

impl Seen {
    /// A publisher whose metrics this view reads.
    fn publisher(&self) -> Publisher {
        recorder();
        Publisher::new().label("test", self.0)
    }

    fn metric(&self, name: &str) -> Option<Metric> {
        let metrics = recorder().metrics.lock().unwrap();
        metrics.get(&(name.to_owned(), self.0.to_owned())).cloned()
    }

    fn gauge(&self, name: &str) -> Option<f64> {
        self.metric(name).and_then(|m| m.gauge)
    }

    fn counter(&self, name: &str) -> Option<u64> {
        self.metric(name).map(|m| m.counter)
    }

    fn histogram(&self, name: &str) -> Vec<f64> {
        self.metric(name).map(|m| m.histogram).unwrap_or_default()
    }

    /// Every metric of this test, to compare two moments.
    fn all(&self) -> BTreeMap<String, Metric> {
        let metrics = recorder().metrics.lock().unwrap();
        metrics
            .iter()
            .filter(|((_, test), _)| test == self.0)
            .map(|((name, _), metric)| (name.clone(), metric.clone()))
            .collect()
    }
}

/// The recorder agrees with `timer.stats()` taken now, field by field.
fn assert_matches_stats(seen: &Seen, timer: &Timer) {
    let stats = timer.stats();
    assert_eq!(seen.gauge("tickwheel_live"), Some(stats.live as f64));
    assert_eq!(seen.gauge("tickwheel_pending"), Some(stats.pending as f64));
    assert_eq!(
        seen.gauge("tickwheel_headroom"),
        stats.headroom().map(|h| h as f64)
    );
    assert_eq!(
        seen.gauge("tickwheel_entry_bytes"),
        Some(stats.entry_bytes as f64)
    );
    assert_eq!(
        seen.counter("tickwheel_registered_total"),
        Some(stats.registered)
    );
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(stats.fired));
    assert_eq!(
        seen.counter("tickwheel_cancelled_total"),
        Some(stats.cancelled)
    );
    assert_eq!(
        seen.counter("tickwheel_driver_wakeups_total"),
        Some(stats.wakeups)
    );
    assert_eq!(
        seen.counter("tickwheel_wake_panics_total"),
        Some(stats.wake_panics)
    );
    assert_eq!(
        seen.histogram("tickwheel_lateness_seconds").len() as u64,
        stats.lateness_histogram.count()
    );
}

/// After a known workload, each gauge and counter is the timer's figure:
/// 3 fired, 1 cancelled, 1 pending, 2 live of at most 10.
#[tokio::test(start_paused = true)]
async fn gauges_and_counters_are_the_timers_figures() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("figures");
    let start = Instant::now();
    let timer = Timer::builder().max_pending(10).build().unwrap();
    let _task = seen.publisher().spawn(&timer, SECOND);

    for _ in 0..3 {
        timer.sleep(200 * MS).await; // fired
    }
    let mut dropped = task::spawn(timer.sleep(SECOND));
    assert_pending!(dropped.poll());
    drop(dropped); // cancelled
    let mut waiting = task::spawn(timer.sleep(60 * SECOND));
    assert_pending!(waiting.poll()); // pending
    let _held = timer.sleep(60 * SECOND); // live only

    sleep_until(start + SECOND + MS).await; // just after the sample at 1 s
    assert_eq!(seen.gauge("tickwheel_live"), Some(2.0));
    assert_eq!(seen.gauge("tickwheel_pending"), Some(1.0));
    assert_eq!(seen.gauge("tickwheel_headroom"), Some(8.0));
    assert_eq!(seen.counter("tickwheel_registered_total"), Some(5));
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(3));
    assert_eq!(seen.counter("tickwheel_cancelled_total"), Some(1));
    assert_eq!(seen.counter("tickwheel_wake_panics_total"), Some(0));
    assert!(seen.counter("tickwheel_driver_wakeups_total") >= Some(3));
    assert_matches_stats(&seen, &timer);
}

/// Counters grow by what happened between samples (never twice the same
/// timer), gauges follow the timer, and both stay equal to its figures.
#[tokio::test(start_paused = true)]
async fn counters_add_what_happened_between_samples() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("deltas");
    let start = Instant::now();
    let timer = Timer::new();
    let task = seen.publisher().spawn(&timer, SECOND);
    tokio::task::yield_now().await;
    assert_eq!(task.samples(), 1, "a sample at once");
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(0));
    assert_eq!(seen.gauge("tickwheel_live"), Some(0.0));

    let mut fired = 0;
    for (second, sleeps) in [(1, 2u64), (2, 3), (3, 0), (4, 1)] {
        for _ in 0..sleeps {
            timer.sleep(100 * MS).await;
        }
        fired += sleeps;
        sleep_until(start + second * SECOND + MS).await;
        assert_eq!(task.samples(), u64::from(second) + 1);
        assert_eq!(seen.counter("tickwheel_fired_total"), Some(fired));
        assert_eq!(
            seen.histogram("tickwheel_lateness_seconds").len() as u64,
            fired,
            "each fired timer recorded once"
        );
        assert_matches_stats(&seen, &timer);
    }
}

/// Each fired timer lands in the histogram once, as the largest whole
/// microsecond of its bucket, in seconds: on-time timers as 0, a 15 ms
/// sleep on 10 ms ticks (5 ms late, in the bucket [4608 µs, 5120 µs)) as
/// 5119 µs, never below the true lateness.
#[tokio::test(start_paused = true)]
async fn lateness_lands_in_the_histogram_at_bucket_resolution() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("lateness");
    let start = Instant::now();
    let timer = Timer::builder().tick(10 * MS).build().unwrap();
    let _task = seen.publisher().spawn(&timer, SECOND);
    tokio::task::yield_now().await;
    for _ in 0..2 {
        timer.sleep(10 * MS).await; // on time
    }
    for _ in 0..3 {
        timer.sleep(15 * MS).await; // 5 ms late
    }
    sleep_until(start + SECOND + MS).await;
    let late = Duration::from_micros(5119).as_secs_f64();
    assert_eq!(
        seen.histogram("tickwheel_lateness_seconds"),
        [0.0, 0.0, late, late, late]
    );
    let stats = timer.stats();
    let recorded_sum: f64 = seen.histogram("tickwheel_lateness_seconds").iter().sum();
    assert!(recorded_sum >= stats.lateness_histogram.sum().as_secs_f64());
    assert_eq!(
        recorder().units.lock().unwrap()["tickwheel_lateness_seconds"],
        Some(Unit::Seconds)
    );

    // A later sample with nothing fired records nothing more.
    sleep_until(start + 2 * SECOND + MS).await;
    assert_eq!(seen.histogram("tickwheel_lateness_seconds").len(), 5);
    timer.sleep(15 * MS).await;
    sleep_until(start + 3 * SECOND + MS).await;
    assert_eq!(seen.histogram("tickwheel_lateness_seconds").len(), 6);
}

/// Shutdown ends the task at once, after a final sample that counts the
/// timers the shutdown cancelled; no sample comes after it.
#[tokio::test(start_paused = true)]
async fn the_publisher_stops_when_the_timer_shuts_down() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("shutdown");
    let timer = Timer::new();
    let mut task = seen.publisher().spawn(&timer, 10 * SECOND);
    let mut waiting: Vec<_> = (0..4)
        .map(|_| task::spawn(timer.sleep(60 * SECOND)))
        .collect();
    for sleep in &mut waiting {
        assert_pending!(sleep.poll());
    }
    sleep(SECOND).await;
    assert_eq!(task.samples(), 1);
    assert_eq!(seen.gauge("tickwheel_pending"), Some(4.0));

    let shut_at = Instant::now();
    assert_eq!(timer.shutdown(), 4);
    task.stopped().await;
    assert_eq!(
        Instant::now(),
        shut_at,
        "stopped at once, not at the period"
    );
    assert!(task.is_finished());
    assert_eq!(task.samples(), 2, "the final sample");
    assert_eq!(seen.counter("tickwheel_cancelled_total"), Some(4));
    assert_eq!(seen.gauge("tickwheel_pending"), Some(0.0));
    assert_matches_stats(&seen, &timer);

    let before = seen.all();
    drop(waiting);
    sleep(60 * SECOND).await;
    assert_eq!(task.samples(), 2);
    assert_eq!(seen.all(), before, "nothing recorded after shutdown");
    assert!(!task.cancel(), "already ended");

    // Spawned on a timer that had shut down: its first sample and the
    // final one, then it ends (no panic).
    let mut late = Publisher::new().spawn(&timer, SECOND);
    late.stopped().await;
    assert_eq!(
        late.samples(),
        2,
        "the first sample, and the final one of a shut-down timer"
    );
}

/// Dropping or cancelling the handle stops the task; a detached one runs
/// on until the timer shuts down.
#[tokio::test(start_paused = true)]
async fn dropping_or_cancelling_the_handle_stops_the_publisher() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let dropped = Seen("dropped");
    let cancelled = Seen("cancelled");
    let detached = Seen("detached");
    let first = dropped.publisher().spawn(&timer, SECOND);
    let second = cancelled.publisher().spawn(&timer, SECOND);
    detached.publisher().spawn(&timer, SECOND).detach();
    sleep(1500 * MS).await; // samples at 0 and 1 s
    assert_eq!((first.samples(), second.samples()), (2, 2));
    assert_eq!(detached.gauge("tickwheel_live"), Some(0.0));

    drop(first);
    assert!(second.cancel());
    assert!(!second.cancel(), "only the first cancel stops it");
    let (dropped_before, cancelled_before) = (dropped.all(), cancelled.all());
    let held: Vec<_> = (0..3).map(|_| timer.sleep(60 * SECOND)).collect();
    sleep(5 * SECOND).await;
    assert!(second.is_finished());
    assert_eq!(second.samples(), 2);
    assert_eq!(
        dropped.all(),
        dropped_before,
        "a dropped handle's task ran on"
    );
    assert_eq!(cancelled.all(), cancelled_before);
    assert_eq!(
        detached.gauge("tickwheel_live"),
        Some(3.0),
        "detached runs on"
    );

    // The detached task ends with the timer, after its final sample.
    drop(held);
    timer.shutdown();
    tokio::task::yield_now().await;
    let after = detached.all();
    assert_eq!(detached.gauge("tickwheel_live"), Some(0.0));
    sleep(10 * SECOND).await;
    assert_eq!(detached.all(), after, "a detached task ends with the timer");
}

/// The task holds no `Timer` handle: when the last one is dropped the
/// driver retires as it would without a publisher, and the task ends.
#[tokio::test(start_paused = true)]
async fn the_publisher_never_keeps_a_timer_running() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("orphaned");
    let timer = Timer::new();
    timer.sleep(10 * MS).await;
    let mut task = seen.publisher().spawn(&timer, SECOND);
    tokio::task::yield_now().await;
    drop(timer);
    task.stopped().await;
    assert!(task.is_finished());
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(1));
}

/// The task waits on tokio's clock, not the wheel: it takes no slot of
/// `max_pending`, registers nothing, and never wakes the driver.
#[tokio::test(start_paused = true)]
async fn the_publisher_is_not_a_timer_of_its_own() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("not_a_timer");
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let task = seen.publisher().spawn(&timer, 100 * MS);
    sleep(SECOND + 50 * MS).await;
    assert_eq!(task.samples(), 11);
    let stats = timer.stats();
    assert_eq!((stats.live, stats.pending, stats.registered), (0, 0, 0));
    assert_eq!(stats.wakeups, 0, "the driver never woke");
    assert_eq!(seen.gauge("tickwheel_headroom"), Some(1.0));
    let held = timer.try_sleep(SECOND).expect("the one slot is free");
    drop(held);
}

/// A zero period is the timer's tick; one too long for the clock samples
/// at start and at shutdown only. Neither spins nor panics.
#[tokio::test(start_paused = true)]
async fn zero_and_endless_periods_neither_spin_nor_panic() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().tick(10 * MS).build().unwrap();
    let zero = Publisher::new().spawn(&timer, Duration::ZERO);
    assert_eq!(zero.period(), 10 * MS);
    let mut endless = Publisher::new().spawn(&timer, Duration::MAX);
    sleep(105 * MS).await;
    assert_eq!(zero.samples(), 11); // 0, 10, ..., 100 ms
    drop(zero);
    sleep(3600 * SECOND).await;
    assert_eq!(endless.samples(), 1);
    timer.shutdown();
    endless.stopped().await;
    assert_eq!(endless.samples(), 2);
}

/// A prefix and labels name every metric, so two timers publish side by
/// side; a timer without `max_pending` has no headroom gauge; the units
/// are described.
#[tokio::test(start_paused = true)]
async fn labels_and_prefix_tell_timers_apart() {
    let _watchdog = common::Watchdog::start();
    recorder();
    let rpc = Timer::new();
    let sessions = Timer::builder().max_pending(100).build().unwrap();
    let every = SECOND;
    let _rpc = Publisher::new()
        .prefix("svc_timer")
        .label("test", "labels_rpc")
        .label("timer", "rpc")
        .spawn(&rpc, every);
    let _sessions = Publisher::new()
        .prefix("svc_timer")
        .label("test", "labels_sessions")
        .label("timer", "sessions")
        .spawn(&sessions, every);
    let _bare = Publisher::new()
        .prefix("")
        .label("test", "labels_bare")
        .spawn(&rpc, every);
    rpc.sleep(100 * MS).await;
    let _held: Vec<_> = (0..7).map(|_| sessions.sleep(SECOND)).collect();
    sleep(SECOND + MS).await;

    let (rpc_seen, sessions_seen) = (Seen("labels_rpc"), Seen("labels_sessions"));
    assert_eq!(rpc_seen.counter("svc_timer_fired_total"), Some(1));
    assert_eq!(sessions_seen.counter("svc_timer_fired_total"), Some(0));
    assert_eq!(sessions_seen.gauge("svc_timer_live"), Some(7.0));
    assert_eq!(sessions_seen.gauge("svc_timer_headroom"), Some(93.0));
    assert_eq!(rpc_seen.gauge("svc_timer_headroom"), None);
    assert_eq!(rpc_seen.metric("tickwheel_live"), None);
    assert_eq!(Seen("labels_bare").counter("fired_total"), Some(1));

    let units = recorder().units.lock().unwrap();
    assert_eq!(units["svc_timer_entry_bytes"], Some(Unit::Bytes));
    assert_eq!(units["svc_timer_live"], Some(Unit::Count));
    assert_eq!(units["svc_timer_driver_wakeups_total"], Some(Unit::Count));
}

/// `record` in a loop of one's own: counters add the differences, and a
/// snapshot older than the last one adds nothing (and sets the gauges).
#[tokio::test(start_paused = true)]
async fn record_in_a_loop_of_ones_own() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("record");
    let mut publisher = seen.publisher();
    let timer = Timer::new();
    let old = timer.stats();
    for round in 1..=3u64 {
        timer.sleep(100 * MS).await;
        publisher.record(&timer.stats());
        assert_eq!(seen.counter("tickwheel_fired_total"), Some(round));
    }
    let _held = timer.sleep(SECOND);
    publisher.record(&timer.stats());
    publisher.record(&old); // out of order: nothing added
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(3));
    assert_eq!(seen.gauge("tickwheel_live"), Some(0.0), "the old gauge");
    publisher.record(&timer.stats());
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(3));
    assert_eq!(seen.gauge("tickwheel_live"), Some(1.0));
    assert_eq!(seen.histogram("tickwheel_lateness_seconds").len(), 3);
}

/// On a multi-thread runtime, the publisher's last sample comes after the
/// shutdown has drained every shard, so `cancelled_total` counts every
/// timer the shutdown cancelled. (A publisher woken by the shutdown flag
/// alone, which is set before the drain, sampled half-drained shards: a
/// race a 1 ms period and large shards make likely.) Real time, under a
/// watchdog.
#[test]
fn the_final_sample_comes_after_the_shutdown_drained_every_shard() {
    common::watchdog::within_30_s(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            for label in ["drained-0", "drained-1", "drained-2"] {
                let seen = Seen(label);
                let timer = Timer::new();
                let mut task = seen.publisher().spawn(&timer, MS);
                // Four tasks register 100k sleeps each, on the shards of
                // the workers they run on.
                let holders: Vec<_> = (0..4)
                    .map(|_| {
                        let timer = timer.clone();
                        tokio::spawn(async move {
                            let mut sleeps: Vec<_> =
                                (0..100_000).map(|_| timer.sleep(600 * SECOND)).collect();
                            for sleep in &mut sleeps {
                                assert!(futures::poll!(sleep).is_pending());
                            }
                            sleeps
                        })
                    })
                    .collect();
                let mut kept = Vec::new();
                for holder in holders {
                    kept.push(holder.await.unwrap());
                }
                sleep(5 * MS).await;
                let cancelled = timer.shutdown();
                assert_eq!(cancelled, 400_000);
                task.stopped().await;
                assert_eq!(
                    seen.counter("tickwheel_cancelled_total"),
                    Some(cancelled as u64),
                    "{label}: the final sample missed cancellations"
                );
                assert_eq!(seen.gauge("tickwheel_pending"), Some(0.0));
            }
        });
    });
}

/// A runtime of `workers` worker threads (0: a current-thread one) on the
/// real clock, for the tests that drop a runtime under a publisher.
fn runtime(workers: usize) -> tokio::runtime::Runtime {
    let mut builder = if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(workers);
        builder
    };
    builder.enable_all().build().unwrap()
}

const HOUR: Duration = Duration::from_secs(3600);

/// The issue's trigger: a publisher at a 1 h period and 7 registered
/// sleeps on a runtime, `spacers` other tasks spawned between the timer
/// and the publisher (which moves the two tasks about in the runtime's
/// task list, so either may be dropped first at shutdown); the runtime is
/// dropped. The final sample counts the 7 timers the shutdown cancelled.
fn final_sample_when_the_runtime_is_dropped(workers: usize, label: &'static str, spacers: usize) {
    let seen = Seen(label);
    let rt = runtime(workers);
    let (timer, task, sleeps) = rt.block_on(async {
        let timer = Timer::new();
        for _ in 0..spacers {
            tokio::spawn(std::future::pending::<()>());
        }
        let mut sleeps: Vec<_> = (0..7).map(|_| task::spawn(timer.sleep(HOUR))).collect();
        for sleep in &mut sleeps {
            assert_pending!(sleep.poll());
        }
        let task = seen.publisher().spawn(&timer, HOUR);
        // The first sample (on a multi-thread runtime, on another thread).
        while task.samples() == 0 {
            sleep(MS).await;
        }
        (timer, task, sleeps)
    });
    assert_eq!(task.samples(), 1, "{label}");
    assert_eq!(seen.counter("tickwheel_cancelled_total"), Some(0));
    assert_eq!(seen.gauge("tickwheel_pending"), Some(7.0));

    drop(rt);
    assert_eq!(timer.stats().cancelled, 7, "{label}");
    assert_eq!(
        seen.counter("tickwheel_cancelled_total"),
        Some(7),
        "{label}: no final sample when the runtime was dropped"
    );
    assert_eq!(seen.gauge("tickwheel_pending"), Some(0.0), "{label}");
    assert_eq!(task.samples(), 2, "{label}: the final sample, once");
    assert!(task.is_finished());
    for sleep in &sleeps {
        assert!(sleep.is_woken(), "{label}: the shutdown woke every sleep");
    }
    assert_matches_stats(&seen, &timer);
}

/// The issue's trigger on a current-thread runtime: dropping it takes the
/// final sample, which counts the 7 sleeps its shutdown cancelled.
#[test]
fn dropping_a_current_thread_runtime_takes_the_final_sample() {
    common::watchdog::within_30_s(|| {
        final_sample_when_the_runtime_is_dropped(0, "rt-drop-current", 0);
    });
}

/// The same on a multi-thread runtime, whose workers drop the tasks, each
/// from a task list of its own; the spacers move the publisher through its
/// 8 task lists.
#[test]
fn dropping_a_multi_thread_runtime_takes_the_final_sample() {
    common::watchdog::within_30_s(|| {
        for spacers in 0..12 {
            let label: &'static str =
                Box::leak(format!("rt-drop-multi-{spacers}").into_boxed_str());
            final_sample_when_the_runtime_is_dropped(2, label, spacers);
        }
    });
}

/// Whichever of the driver and the publisher the runtime drops first, the
/// final sample comes after the shutdown counted its cancellations: the
/// tasks spawned between them move the publisher to each of the
/// current-thread runtime's task lists in turn (4 of them, dropped in
/// order), before and after the driver's.
#[test]
fn the_final_sample_waits_for_the_driver_whichever_is_dropped_first() {
    common::watchdog::within_30_s(|| {
        for spacers in 0..8 {
            let label: &'static str =
                Box::leak(format!("rt-drop-order-{spacers}").into_boxed_str());
            final_sample_when_the_runtime_is_dropped(0, label, spacers);
        }
    });
}

/// A detached task's final sample comes with the runtime's end too; a task
/// whose handle was dropped inside the runtime records nothing more (the
/// handle stopped it); a task the runtime never ran, or that was spawned
/// after the runtime ended, records the final sample alone.
#[test]
fn detached_dropped_and_never_run_publishers_at_the_runtimes_end() {
    common::watchdog::within_30_s(|| {
        let detached = Seen("rt-drop-detached");
        let stopped = Seen("rt-drop-stopped");
        let never_ran = Seen("rt-drop-never-ran");
        let rt = runtime(0);
        let (timer, never_ran_task, held) = rt.block_on(async {
            let timer = Timer::new();
            detached.publisher().spawn(&timer, HOUR).detach();
            let stopped_task = stopped.publisher().spawn(&timer, HOUR);
            let mut held = task::spawn(timer.sleep(HOUR));
            assert_pending!(held.poll());
            tokio::task::yield_now().await;
            drop(stopped_task);
            // Spawned last, and the runtime ends before it runs.
            let never_ran_task = never_ran.publisher().spawn(&timer, HOUR);
            (timer, never_ran_task, held)
        });
        let stopped_before = stopped.all();
        assert_eq!(never_ran_task.samples(), 0);
        drop(rt);
        assert_eq!(timer.stats().cancelled, 1);
        assert_eq!(detached.counter("tickwheel_cancelled_total"), Some(1));
        assert_eq!(
            stopped.all(),
            stopped_before,
            "a stopped task sampled again"
        );
        assert_eq!(never_ran.counter("tickwheel_cancelled_total"), Some(1));
        assert_eq!(never_ran_task.samples(), 1, "the final sample alone");
        assert!(held.is_woken());

        // Spawned once the runtime has ended: the task cannot run, and the
        // runtime drops it at once, which takes the final sample.
        let late = Seen("rt-drop-late");
        let late_task = late.publisher().spawn(&timer, HOUR);
        assert_eq!(late_task.samples(), 1);
        assert_eq!(late.counter("tickwheel_cancelled_total"), Some(1));
    });
}

/// A snapshot behind the last one in any single counter (the others equal)
/// records nothing but the gauges, and the next one counts from the last
/// one recorded. Snapshots of one timer only ever fall behind in some
/// counters at once (fired without new registrations, for one), so each
/// counter is checked alone, on copies of a real snapshot.
#[tokio::test(start_paused = true)]
async fn a_snapshot_behind_in_any_one_counter_records_nothing() {
    let _watchdog = common::Watchdog::start();
    let seen = Seen("behind_one");
    let mut publisher = seen.publisher();
    let timer = Timer::new();
    timer.sleep(100 * MS).await;
    let older_lateness = timer.stats().lateness_histogram;
    timer.sleep(100 * MS).await;
    drop(timer.sleep(SECOND));
    let mut last = timer.stats();
    // Every counter at least 1 above zero (wake panics are rare; the copy
    // says some happened).
    last.cancelled = last.cancelled.max(2);
    last.wake_panics = 2;
    assert!(last.registered >= 2 && last.fired >= 2 && last.wakeups >= 1);
    publisher.record(&last);
    let recorded = seen.all();

    type Lower = fn(&mut tickwheel::Stats);
    let lowered: [(&str, Lower); 5] = [
        ("registered", |s| s.registered -= 1),
        ("fired", |s| s.fired -= 1),
        ("cancelled", |s| s.cancelled -= 1),
        ("wakeups", |s| s.wakeups -= 1),
        ("wake_panics", |s| s.wake_panics -= 1),
    ];
    for (counter, lower) in lowered {
        let mut behind = last.clone();
        lower(&mut behind);
        publisher.record(&behind);
        assert_eq!(seen.all(), recorded, "{counter} behind: recorded");
    }
    let mut behind = last.clone();
    behind.lateness_histogram = older_lateness;
    publisher.record(&behind);
    assert_eq!(seen.all(), recorded, "lateness behind: recorded");

    // The next snapshot counts from the last one recorded.
    let mut next = last.clone();
    next.fired += 1;
    next.wake_panics += 1;
    publisher.record(&next);
    assert_eq!(seen.counter("tickwheel_fired_total"), Some(last.fired + 1));
    assert_eq!(seen.counter("tickwheel_wake_panics_total"), Some(3));
    assert_eq!(
        seen.counter("tickwheel_registered_total"),
        Some(last.registered)
    );
}

/// Samples keep their grid after a sample late by less than a period; after
/// a stall that skipped a sample time (exactly one, or more) the next comes
/// a full period after the late one: no catch-up sample.
#[tokio::test(start_paused = true)]
async fn after_a_stall_samples_keep_the_grid_or_restart_from_the_late_one() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let task = Publisher::new().spawn(&timer, SECOND);
    // Moves the clock by `by` at once (the task waits through it), lets the
    // task run, and returns the samples taken so far.
    let samples_after = |by: Duration| {
        let task = &task;
        async move {
            tokio::time::advance(by).await;
            tokio::task::yield_now().await;
            task.samples()
        }
    };
    assert_eq!(samples_after(Duration::ZERO).await, 1, "at 0 s");
    // Late by half a period: at 1.5 s, then on the grid at 2 s.
    assert_eq!(samples_after(1500 * MS).await, 2);
    assert_eq!(samples_after(500 * MS - MS).await, 2);
    assert_eq!(samples_after(MS).await, 3, "at 2 s, the grid kept");
    // The 3 s sample skipped, to the instant of the next: at 4 s, then 5 s.
    assert_eq!(samples_after(2 * SECOND).await, 4, "one late sample at 4 s");
    assert_eq!(samples_after(SECOND - MS).await, 4, "no catch-up sample");
    assert_eq!(samples_after(MS).await, 5, "at 5 s");
    // Skipped by one and a half periods: at 7.5 s, then 8.5 s.
    assert_eq!(
        samples_after(2500 * MS).await,
        6,
        "one late sample at 7.5 s"
    );
    assert_eq!(samples_after(SECOND - MS).await, 6, "no catch-up sample");
    assert_eq!(samples_after(MS).await, 7, "at 8.5 s");
}

/// A task the timer's shutdown ended reports it: finished, and `cancel`
/// has nothing left to stop. `Debug` shows the settings and the progress.
#[tokio::test(start_paused = true)]
async fn a_task_ended_by_shutdown_is_finished_and_cannot_be_cancelled() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let publisher = Publisher::new().prefix("dbg").label("test", "debug");
    let shown = format!("{publisher:?}");
    assert!(
        shown.contains(r#"prefix: "dbg""#) && shown.contains("recorded: false"),
        "{shown}"
    );
    let task = publisher.spawn(&timer, SECOND);
    tokio::task::yield_now().await;
    assert!(!task.is_finished());
    let shown = format!("{task:?}");
    assert!(
        shown.contains("period: 1s")
            && shown.contains("samples: 1")
            && shown.contains("finished: false"),
        "{shown}"
    );
    timer.shutdown();
    tokio::task::yield_now().await;
    assert!(task.is_finished());
    assert!(!task.cancel(), "ended by the shutdown, not by this cancel");
    assert!(format!("{task:?}").contains("samples: 2"));
}
