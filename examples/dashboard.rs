//! The figures a service's dashboard plots for its timer, published
//! through the `metrics` facade (feature `metrics`): live and pending
//! sleeps, the headroom under `max_pending`, driver wake-ups and fired
//! timers per second, and the lateness histogram as Prometheus text.
//!
//! 1,000 simulated clients each keep an idle-connection sleep (created, not
//! polled: live but not pending) and loop: a backend call of 1 to 200 ms
//! under a 100 ms `timer.timeout`, then a think time of 1 to 50 ms on
//! `timer.sleep`. `timer`'s stats are published every simulated second by
//! `tickwheel::metrics::Publisher` (labelled `timer="rpc"`) to a small
//! recorder written here (a real service installs an exporter instead: any
//! `metrics::Recorder`). Just after each sample, the dashboard reads the
//! recorder, prints a row (rates from the counters' growth), and at the end
//! prints what the recorder would expose to Prometheus.
//!
//! It runs on tokio's paused clock, so 5 simulated seconds take well under
//! one real second and the figures are the same on every run. The
//! publisher waits on `tokio::time`, so the wheel's figures are the
//! workload's alone. It exits non-zero unless what the recorder received
//! agrees with what the workload counted itself and with `timer.stats()`:
//! fired timers equal the timeouts that expired plus the think times,
//! cancelled ones the calls that beat their limit, `pending <= live <=
//! max_pending` with the headroom their difference, no timer a tick or more
//! late, the histogram's buckets equal to the timer's own at every bound
//! exported, and the wheel ends empty.
//!
//! Run: `cargo run --example dashboard --features metrics`

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tickwheel::metrics::Publisher;
use tickwheel::{LatenessHistogram, Timer};
use tokio::task::JoinSet;
use tokio::time::Instant;

const CLIENTS: u64 = 1_000;
const MAX_PENDING: usize = 5_000;
const RUN_FOR: Duration = Duration::from_secs(5);
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
const CALL_LIMIT: Duration = Duration::from_millis(100);
/// The dashboard reads the recorder this long after each sample.
const READ_AFTER: Duration = Duration::from_millis(1);
const LABEL: (&str, &str) = ("timer", "rpc");

// ---------------------------------------------------------------------------
// A minimal recorder: each metric's value by name, and the Prometheus text.

/// What the recorder holds for one metric.
#[derive(Debug, Clone, Default)]
enum Value {
    #[default]
    None,
    Gauge(f64),
    Counter(u64),
    /// Each value recorded (in nanoseconds, the values being seconds) and
    /// how many times.
    Histogram(BTreeMap<u64, u64>),
}

/// The recorder's state: values by name (labels are rendered once, here
/// all the same), and each name's description.
#[derive(Debug, Default)]
struct Board {
    values: BTreeMap<String, Value>,
    help: BTreeMap<String, (Option<Unit>, String)>,
    labels: String,
}

#[derive(Debug, Clone, Default)]
struct BoardRecorder(Arc<Mutex<Board>>);

/// A handle to one metric: the recorder and the metric's name.
struct Cell(BoardRecorder, String);

impl Cell {
    fn with(&self, change: impl FnOnce(&mut Value)) {
        let mut board = self.0 .0.lock().unwrap();
        change(board.values.entry(self.1.clone()).or_default());
    }
}

impl metrics::CounterFn for Cell {
    fn increment(&self, n: u64) {
        self.with(|v| match v {
            Value::Counter(total) => *total += n,
            other => *other = Value::Counter(n),
        });
    }
    fn absolute(&self, n: u64) {
        self.with(|v| *v = Value::Counter(n));
    }
}

impl metrics::GaugeFn for Cell {
    fn increment(&self, n: f64) {
        self.with(|v| *v = Value::Gauge(gauge_of(v) + n));
    }
    fn decrement(&self, n: f64) {
        self.with(|v| *v = Value::Gauge(gauge_of(v) - n));
    }
    fn set(&self, n: f64) {
        self.with(|v| *v = Value::Gauge(n));
    }
}

impl metrics::HistogramFn for Cell {
    fn record(&self, value: f64) {
        self.record_many(value, 1);
    }
    fn record_many(&self, value: f64, count: usize) {
        let ns = (value * 1e9).round() as u64;
        self.with(|v| {
            if !matches!(v, Value::Histogram(_)) {
                *v = Value::Histogram(BTreeMap::new());
            }
            if let Value::Histogram(values) = v {
                *values.entry(ns).or_default() += count as u64;
            }
        });
    }
}

fn gauge_of(value: &Value) -> f64 {
    match value {
        Value::Gauge(v) => *v,
        _ => 0.0,
    }
}

impl BoardRecorder {
    /// The handle to `key`'s metric, which starts as `empty` if new.
    fn cell(&self, key: &Key, empty: Value) -> Arc<Cell> {
        let mut board = self.0.lock().unwrap();
        board.values.entry(key.name().to_owned()).or_insert(empty);
        if board.labels.is_empty() {
            let labels: Vec<_> = key
                .labels()
                .map(|l| format!("{}=\"{}\"", l.key(), l.value()))
                .collect();
            board.labels = labels.join(",");
        }
        Arc::new(Cell(self.clone(), key.name().to_owned()))
    }

    fn describe(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        let mut board = self.0.lock().unwrap();
        board
            .help
            .insert(name.as_str().to_owned(), (unit, help.into_owned()));
    }

    /// A copy of every value, to read without the lock.
    fn snapshot(&self) -> BTreeMap<String, Value> {
        self.0.lock().unwrap().values.clone()
    }

    /// The Prometheus text exposition of what the recorder holds. The
    /// histogram gets a fixed set of bounds: the powers of two of
    /// microseconds up to about a second, all bucket bounds of the wheel's
    /// own histogram, so the cumulative counts are exact (counted strictly
    /// below each bound, as the wheel's are).
    fn prometheus(&self) -> String {
        let board = self.0.lock().unwrap();
        let labels = &board.labels;
        let mut out = String::new();
        for (name, value) in &board.values {
            let (unit, help) = board.help.get(name).cloned().unwrap_or_default();
            let kind = match value {
                Value::Gauge(_) => "gauge",
                Value::Counter(_) => "counter",
                Value::Histogram(_) => "histogram",
                Value::None => continue,
            };
            let unit = unit.map_or(String::new(), |u| format!(" ({})", u.as_str()));
            writeln!(out, "# HELP {name} {help}{unit}").unwrap();
            writeln!(out, "# TYPE {name} {kind}").unwrap();
            match value {
                Value::Gauge(v) => writeln!(out, "{name}{{{labels}}} {v}").unwrap(),
                Value::Counter(v) => writeln!(out, "{name}{{{labels}}} {v}").unwrap(),
                Value::Histogram(values) => {
                    for le in fixed_bounds() {
                        let count = count_below(values, le);
                        let le = le.as_secs_f64();
                        writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {count}").unwrap();
                    }
                    let count: u64 = values.values().sum();
                    writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}").unwrap();
                    let sum: f64 = values.iter().map(|(ns, n)| *ns as f64 * *n as f64).sum();
                    writeln!(out, "{name}_sum{{{labels}}} {}", sum / 1e9).unwrap();
                    writeln!(out, "{name}_count{{{labels}}} {count}").unwrap();
                }
                Value::None => {}
            }
        }
        out
    }
}

impl Recorder for BoardRecorder {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, unit, help);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, unit, help);
    }
    fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.describe(name, unit, help);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key, Value::Counter(0)))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key, Value::Gauge(0.0)))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.cell(key, Value::Histogram(BTreeMap::new())))
    }
}

/// The histogram bounds exported: powers of two of microseconds to 2^20.
fn fixed_bounds() -> impl Iterator<Item = Duration> {
    LatenessHistogram::bounds()
        .filter(|le| le.as_micros().is_power_of_two() && *le <= Duration::from_micros(1 << 20))
}

/// How many recorded values lie strictly below `le`.
fn count_below(values: &BTreeMap<u64, u64>, le: Duration) -> u64 {
    values.range(..le.as_nanos() as u64).map(|(_, n)| n).sum()
}

// ---------------------------------------------------------------------------
// Reading the recorder.

fn gauge(values: &BTreeMap<String, Value>, name: &str) -> f64 {
    match values.get(name) {
        Some(Value::Gauge(v)) => *v,
        other => panic!("{name} is not a gauge the publisher set: {other:?}"),
    }
}

fn counter(values: &BTreeMap<String, Value>, name: &str) -> u64 {
    match values.get(name) {
        Some(Value::Counter(v)) => *v,
        other => panic!("{name} is not a counter the publisher set: {other:?}"),
    }
}

fn histogram(values: &BTreeMap<String, Value>, name: &str) -> BTreeMap<u64, u64> {
    match values.get(name) {
        Some(Value::Histogram(v)) => v.clone(),
        other => panic!("{name} is not a histogram the publisher set: {other:?}"),
    }
}

/// The 99th percentile of the values recorded between two readings.
fn p99_between(now: &BTreeMap<u64, u64>, before: &BTreeMap<u64, u64>) -> Duration {
    let interval: Vec<(u64, u64)> = now
        .iter()
        .map(|(ns, n)| (*ns, n - before.get(ns).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let total: u64 = interval.iter().map(|(_, n)| n).sum();
    let rank = (total as f64 * 0.99).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (ns, n) in interval {
        seen += n;
        if seen >= rank {
            return Duration::from_nanos(ns);
        }
    }
    Duration::ZERO
}

// ---------------------------------------------------------------------------
// The workload.

/// What the workload counts itself, to check the published figures against.
#[derive(Default)]
struct Counted {
    calls_ok: AtomicU64,
    calls_timed_out: AtomicU64,
    think_times: AtomicU64,
}

/// A small deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn millis(&mut self, low: u64, high: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        low + self.0 % (high - low + 1)
    }
}

async fn client(timer: Timer, id: u64, start: Instant, counted: Arc<Counted>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    // The idle-connection timeout, reset on traffic in a real server; here
    // only held, so it stays live without ever being pending.
    let _idle = timer.sleep(Duration::from_secs(60));
    while start.elapsed() < RUN_FOR {
        // The backend: never exactly the limit, so that no call ties with
        // its deadline and the counts below are exact.
        let mut latency = rng.millis(1, 200);
        if latency == CALL_LIMIT.as_millis() as u64 {
            latency += 1;
        }
        let call = tokio::time::sleep(Duration::from_millis(latency));
        match timer.timeout(CALL_LIMIT, call).await {
            Ok(()) => counted.calls_ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => counted.calls_timed_out.fetch_add(1, Ordering::Relaxed),
        };
        timer.sleep(Duration::from_millis(rng.millis(1, 50))).await;
        counted.think_times.fetch_add(1, Ordering::Relaxed);
    }
}

/// One dashboard row from two readings of the recorder `elapsed` apart;
/// checks the gauges.
fn row(
    t: Duration,
    now: &BTreeMap<String, Value>,
    before: &BTreeMap<String, Value>,
    elapsed: Duration,
) -> String {
    let per_second =
        |name: &str| (counter(now, name) - counter(before, name)) as f64 / elapsed.as_secs_f64();
    let live = gauge(now, "tickwheel_live") as usize;
    let pending = gauge(now, "tickwheel_pending") as usize;
    let headroom = gauge(now, "tickwheel_headroom") as usize;
    assert!(pending <= live, "more pending than live");
    assert!(live <= MAX_PENDING, "live beyond max_pending");
    assert!(
        live as u64 >= CLIENTS,
        "every client holds a live idle sleep"
    );
    assert_eq!(headroom, MAX_PENDING - live);
    let fired = per_second("tickwheel_fired_total");
    assert!(fired > 0.0, "nothing fired in a busy second");
    let lateness = "tickwheel_lateness_seconds";
    format!(
        "{:>4.1}s {:>6} {:>8} {:>9} {:>11.0} {:>9.0} {:>12.0} {:>12?}",
        t.as_secs_f64(),
        live,
        pending,
        headroom,
        per_second("tickwheel_driver_wakeups_total"),
        fired,
        per_second("tickwheel_cancelled_total"),
        p99_between(&histogram(now, lateness), &histogram(before, lateness)),
    )
}

/// Reads the histogram's lines back: the cumulative counts must rise, and
/// `+Inf` and `_count` must be the number of fired timers.
fn check_exposition(text: &str, fired: u64) {
    let value = |line: &str| -> u64 { line.rsplit(' ').next().unwrap().parse().unwrap() };
    let buckets: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("tickwheel_lateness_seconds_bucket"))
        .map(value)
        .collect();
    assert!(buckets.len() > 2, "no buckets in the exposition");
    assert!(
        buckets.windows(2).all(|w| w[0] <= w[1]),
        "cumulative buckets fall: {buckets:?}"
    );
    assert_eq!(
        *buckets.last().unwrap(),
        fired,
        "+Inf is not the fired count"
    );
    let count = text
        .lines()
        .find(|l| l.starts_with("tickwheel_lateness_seconds_count"))
        .map(value);
    assert_eq!(count, Some(fired));
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    // A service installs its exporter here.
    let recorder = BoardRecorder::default();
    metrics::set_global_recorder(recorder.clone()).expect("the only recorder");

    let timer = Timer::builder().max_pending(MAX_PENDING).build().unwrap();
    let start = Instant::now();
    let mut publisher = Publisher::new()
        .label(LABEL.0, LABEL.1)
        .spawn(&timer, SAMPLE_EVERY);
    let counted = Arc::new(Counted::default());
    let mut clients = JoinSet::new();
    for id in 0..CLIENTS {
        clients.spawn(client(timer.clone(), id, start, counted.clone()));
    }

    println!(
        "{} clients, {CALL_LIMIT:?} call limit, max_pending {MAX_PENDING}, tick {:?}, \
         published every {SAMPLE_EVERY:?}\n",
        CLIENTS,
        timer.tick()
    );
    println!(
        "{:>5} {:>6} {:>8} {:>9} {:>11} {:>9} {:>12} {:>12}",
        "t", "live", "pending", "headroom", "wakeups/s", "fired/s", "cancelled/s", "late p99"
    );
    // Just after each sample (the publisher samples at start, then every
    // second): the recorder then holds that sample.
    let mut reader = tokio::time::interval_at(start + SAMPLE_EVERY + READ_AFTER, SAMPLE_EVERY);
    tokio::task::yield_now().await;
    let mut before = (recorder.snapshot(), start);
    for _ in 0..RUN_FOR.as_secs() {
        let at = reader.tick().await - READ_AFTER;
        let now = (recorder.snapshot(), at);
        println!("{}", row(at - start, &now.0, &before.0, at - before.1));
        before = now;
    }

    while let Some(done) = clients.join_next().await {
        done.expect("a client panicked");
    }
    // Shutting the timer down ends the publisher after a final sample.
    timer.shutdown();
    publisher.stopped().await;
    let stats = timer.stats();
    let text = recorder.prometheus();
    println!("\n{text}");

    let ok = counted.calls_ok.load(Ordering::Relaxed);
    let timed_out = counted.calls_timed_out.load(Ordering::Relaxed);
    let thinks = counted.think_times.load(Ordering::Relaxed);
    println!("calls: {ok} ok, {timed_out} timed out; think times: {thinks}");
    println!("timer: {stats}");
    println!("published: {} samples", publisher.samples());

    let values = recorder.snapshot();
    let fired = counter(&values, "tickwheel_fired_total");
    let cancelled = counter(&values, "tickwheel_cancelled_total");
    assert!(ok > 0 && timed_out > 0, "the workload mixes both outcomes");
    assert_eq!(
        fired,
        timed_out + thinks,
        "fired timers are the expired timeouts and the think times"
    );
    assert_eq!(cancelled, ok, "a call that beat its limit cancelled it");
    assert_eq!(
        counter(&values, "tickwheel_registered_total"),
        fired + cancelled
    );
    assert_eq!(
        (fired, cancelled),
        (stats.fired, stats.cancelled),
        "the recorder has the timer's own totals"
    );
    assert_eq!(
        counter(&values, "tickwheel_driver_wakeups_total"),
        stats.wakeups
    );
    assert_eq!(
        (
            gauge(&values, "tickwheel_live"),
            gauge(&values, "tickwheel_pending"),
            gauge(&values, "tickwheel_headroom"),
        ),
        (0.0, 0.0, MAX_PENDING as f64),
        "the wheel ends empty"
    );
    let lateness = histogram(&values, "tickwheel_lateness_seconds");
    assert_eq!(lateness.values().sum::<u64>(), fired);
    for le in fixed_bounds() {
        assert_eq!(
            count_below(&lateness, le),
            stats.lateness_histogram.count_below(le),
            "the exported bucket at {le:?} is the timer's own"
        );
    }
    let latest = Duration::from_nanos(*lateness.keys().last().unwrap());
    assert!(
        latest < timer.tick(),
        "a timer fired a tick or more late on the paused clock"
    );
    check_exposition(&text, fired);
    println!("all checks passed");
}
