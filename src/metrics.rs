//! A timer's [`Stats`] published through the [`metrics`][facade] facade,
//! so whatever exporter the service installed (Prometheus, StatsD,
//! OpenTelemetry, ...) picks them up. (Feature `metrics`.)
//!
//! - [`Timer::publish_metrics`] spawns a task that samples
//!   [`Timer::stats`] every period and records it; [`Publisher::spawn`] does
//!   the same with a prefix or labels of your own. Both return a
//!   [`MetricsTask`], which stops the task when it is dropped or
//!   [cancelled](MetricsTask::cancel).
//! - [`Publisher::record`] records one snapshot, for a loop of your own.
//!
//! # Metrics
//!
//! With the default prefix `tickwheel` (see [`Publisher::prefix`]), and the
//! labels given to [`Publisher::label`] on every one of them:
//!
//! | name | kind | from |
//! |---|---|---|
//! | `tickwheel_live` | gauge | [`Stats::live`] |
//! | `tickwheel_pending` | gauge | [`Stats::pending`] |
//! | `tickwheel_headroom` | gauge | [`Stats::headroom`], only for a timer with [`max_pending`](crate::Builder::max_pending) |
//! | `tickwheel_entry_bytes` | gauge | [`Stats::entry_bytes`] |
//! | `tickwheel_registered_total` | counter | [`Stats::registered`] |
//! | `tickwheel_fired_total` | counter | [`Stats::fired`] |
//! | `tickwheel_cancelled_total` | counter | [`Stats::cancelled`] |
//! | `tickwheel_driver_wakeups_total` | counter | [`Stats::wakeups`] |
//! | `tickwheel_wake_panics_total` | counter | [`Stats::wake_panics`] |
//! | `tickwheel_lateness_seconds` | histogram | [`Stats::lateness_histogram`] |
//!
//! Gauges are set to the snapshot's values. Counters are incremented by
//! what happened since the previous snapshot ([`Stats::delta`]), so after
//! each sample they equal the timer's totals (the first sample adds the
//! totals so far). Each metric is also described (unit and help text) to
//! the recorder.
//!
//! # The lateness histogram, at bucket resolution
//!
//! The timer does not keep each fired timer's lateness, only the buckets of
//! its [`LatenessHistogram`] (8 per power of two of microseconds). Each
//! sample records, for every bucket that gained fired timers since the last
//! sample, that many values
//! ([`Histogram::record_many`][record_many]), in
//! seconds, all equal to the largest whole microsecond the bucket holds:
//! the value the timer's own [`Lateness::p50`](crate::Lateness::p50) and
//! `p99` report. So each recorded value is exact to the (truncated)
//! microsecond below 16 µs, and above that errs late by less than an eighth
//! of itself, never early; an exporter's buckets at the timer's own
//! [`bounds`](LatenessHistogram::bounds) (such as the powers of two of
//! microseconds) count exactly the timers that were less late than the
//! bound.
//!
//! # Waiting, and stopping
//!
//! The publishing task waits on `tokio::time` on the timer's runtime (the
//! timer's own clock), not on the wheel: it is not a timer of its own in the
//! figures it reports (no live or pending sleep, no fired timer or
//! lateness of its own, no slot of `max_pending` taken). It samples at once
//! when spawned, then every period. It ends:
//!
//! - when the timer [shuts down](Timer::shutdown), or its driver stops with
//!   its runtime or retires with every handle gone: at once, after a final
//!   sample (which counts the timers the shutdown cancelled). The task holds
//!   no [`Timer`] handle, so it never keeps a timer running;
//! - when its [`MetricsTask`] is dropped or [cancelled](MetricsTask::cancel),
//!   unless it was [detached](MetricsTask::detach): without a final sample;
//! - with the runtime, which it never keeps alive: a runtime shutting down
//!   drops its tasks without polling them again, the timer's driver among
//!   them, in an order of its own. The task's final sample is then taken as
//!   it is dropped, or, if it is dropped before the driver, by the timer's
//!   shutdown once it has cancelled every timer: either way it counts the
//!   timers the shutdown cancelled. A task the runtime dropped before it
//!   ever ran takes that final sample alone; one whose handle was dropped
//!   first (such as a `MetricsTask` held in `main`'s future, dropped when
//!   `main` returns, before the runtime) takes none: hold the handle where
//!   the runtime is dropped, or detach it, to flush the counts at exit.
//!
//! # Recorders
//!
//! The task runs on the timer's runtime, so it records to the global
//! recorder ([`metrics::set_global_recorder`][set_global_recorder],
//! what exporters install). A recorder set with
//! [`with_local_recorder`][with_local_recorder] only applies to
//! the calling thread inside its closure: the task sees it only when the
//! whole runtime, a current-thread one, runs inside that closure (and is
//! dropped there, for the final sample taken when the runtime ends: a
//! multi-thread runtime's workers drop its tasks, on threads of their own).
//! For [`Publisher::record`], any recorder in scope where it is called.
//!
//! # Examples
//!
//! A tiny recorder (hidden) keeps each metric's value by name:
//!
//! ```
//! # use std::collections::BTreeMap;
//! # use std::sync::{Arc, Mutex};
//! # use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};
//! # /// Gauges' last values, counters' totals, histograms' value counts.
//! # #[derive(Clone, Default)]
//! # struct Values(Arc<Mutex<BTreeMap<String, f64>>>);
//! # struct Cell(Values, String);
//! # impl Values {
//! #     fn get(&self, name: &str) -> Option<f64> { self.0.lock().unwrap().get(name).copied() }
//! #     fn cell(&self, key: &Key) -> Arc<Cell> { Arc::new(Cell(self.clone(), key.name().to_owned())) }
//! #     fn add(&self, name: &str, n: f64) { *self.0.lock().unwrap().entry(name.to_owned()).or_default() += n; }
//! # }
//! # impl metrics::CounterFn for Cell {
//! #     fn increment(&self, n: u64) { self.0.add(&self.1, n as f64) }
//! #     fn absolute(&self, n: u64) { self.0.0.lock().unwrap().insert(self.1.clone(), n as f64); }
//! # }
//! # impl metrics::GaugeFn for Cell {
//! #     fn increment(&self, n: f64) { self.0.add(&self.1, n) }
//! #     fn decrement(&self, n: f64) { self.0.add(&self.1, -n) }
//! #     fn set(&self, n: f64) { self.0.0.lock().unwrap().insert(self.1.clone(), n); }
//! # }
//! # impl metrics::HistogramFn for Cell {
//! #     fn record(&self, _: f64) { self.0.add(&self.1, 1.0) }
//! # }
//! # impl metrics::Recorder for Values {
//! #     fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//! #     fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//! #     fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//! #     fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter { Counter::from_arc(self.cell(key)) }
//! #     fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge { Gauge::from_arc(self.cell(key)) }
//! #     fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram { Histogram::from_arc(self.cell(key)) }
//! # }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//!
//! let values = Values::default(); // any metrics::Recorder: an exporter's
//! metrics::set_global_recorder(values.clone()).unwrap();
//!
//! let timer = tickwheel::Timer::builder().max_pending(100).build().unwrap();
//! let _metrics = timer.publish_metrics(Duration::from_secs(1));
//! for _ in 0..3 {
//!     timer.sleep(Duration::from_millis(200)).await;
//! }
//! let _held = timer.sleep(Duration::from_secs(60));
//! tokio::time::sleep(Duration::from_secs(1)).await; // the next sample
//! assert_eq!(values.get("tickwheel_fired_total"), Some(3.0));
//! assert_eq!(values.get("tickwheel_live"), Some(1.0));
//! assert_eq!(values.get("tickwheel_headroom"), Some(99.0));
//! assert_eq!(values.get("tickwheel_lateness_seconds"), Some(3.0)); // 3 values
//! # }
//! ```
//!
//! [facade]: https://docs.rs/metrics/0.24/metrics/
//! [record_many]: https://docs.rs/metrics/0.24/metrics/struct.Histogram.html#method.record_many
//! [set_global_recorder]: https://docs.rs/metrics/0.24/metrics/fn.set_global_recorder.html
//! [with_local_recorder]: https://docs.rs/metrics/0.24/metrics/fn.with_local_recorder.html
use std::fmt;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ::metrics::{Key, Label, Level, Metadata, SharedString, Unit};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::engine::state::Inner;
use crate::stats::Stats;
use crate::timer::Timer;
use crate::LatenessHistogram;

/// Where the metrics say they come from (recorders may filter on it).
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The default name prefix.
const PREFIX: &str = "tickwheel";

/// Each metric: its name after the prefix, unit and help text.
const LIVE: (&str, Unit, &str) = (
    "live",
    Unit::Count,
    "Sleeps and timeouts alive, registered or not (what max_pending bounds).",
);
const PENDING: (&str, Unit, &str) = ("pending", Unit::Count, "Timers registered in the wheel.");
const HEADROOM: (&str, Unit, &str) = (
    "headroom",
    Unit::Count,
    "Sleeps the timer still accepts before max_pending refuses one.",
);
const ENTRY_BYTES: (&str, Unit, &str) = (
    "entry_bytes",
    Unit::Bytes,
    "Bytes of entry storage the wheels hold.",
);
const REGISTERED: (&str, Unit, &str) = (
    "registered_total",
    Unit::Count,
    "Timers registered in the wheel since the timer started.",
);
const FIRED: (&str, Unit, &str) = (
    "fired_total",
    Unit::Count,
    "Timers the driver fired at their deadline.",
);
const CANCELLED: (&str, Unit, &str) = (
    "cancelled_total",
    Unit::Count,
    "Timers removed before firing (dropped, reset, or ended by shutdown).",
);
const WAKEUPS: (&str, Unit, &str) = (
    "driver_wakeups_total",
    Unit::Count,
    "Times the timer's driver task woke up.",
);
const WAKE_PANICS: (&str, Unit, &str) = (
    "wake_panics_total",
    Unit::Count,
    "Wakers that panicked when the driver woke them.",
);
const LATENESS: (&str, Unit, &str) = (
    "lateness_seconds",
    Unit::Seconds,
    "How late fired timers were, at the timer's bucket resolution.",
);

/// The keys of every metric, made once per prefix and label set.
#[derive(Debug, Clone)]
struct Keys {
    live: Key,
    pending: Key,
    headroom: Key,
    entry_bytes: Key,
    registered: Key,
    fired: Key,
    cancelled: Key,
    wakeups: Key,
    wake_panics: Key,
    lateness: Key,
}

impl Keys {
    fn new(prefix: &str, labels: &[Label]) -> Keys {
        let key = |(name, _, _): (&str, Unit, &str)| {
            let name = if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}_{name}")
            };
            Key::from_parts(name, labels.to_vec())
        };
        Keys {
            live: key(LIVE),
            pending: key(PENDING),
            headroom: key(HEADROOM),
            entry_bytes: key(ENTRY_BYTES),
            registered: key(REGISTERED),
            fired: key(FIRED),
            cancelled: key(CANCELLED),
            wakeups: key(WAKEUPS),
            wake_panics: key(WAKE_PANICS),
            lateness: key(LATENESS),
        }
    }
}

/// Records a timer's [`Stats`] to the current `metrics`
/// recorder, under a name prefix and labels of your choosing; see the
/// [module docs](self) for the metrics and what they mean.
///
/// A publisher remembers the last snapshot it recorded, to increment the
/// counters by the difference: use one publisher per timer.
/// [`spawn`](Publisher::spawn) runs one on a task of its own;
/// [`record`](Publisher::record) records one snapshot in a loop of yours.
///
/// # Examples
///
/// Two timers told apart by a label:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::metrics::Publisher;
///
/// let rpc = tickwheel::Timer::new();
/// let sessions = tickwheel::Timer::new();
/// let every = Duration::from_secs(10);
/// let _rpc = Publisher::new().label("timer", "rpc").spawn(&rpc, every);
/// let _sessions = Publisher::new().label("timer", "sessions").spawn(&sessions, every);
/// // tickwheel_live{timer="rpc"}, tickwheel_live{timer="sessions"}, ...
/// # tokio::task::yield_now().await;
/// # assert_eq!(_rpc.samples(), 1);
/// # }
/// ```
pub struct Publisher {
    prefix: String,
    labels: Vec<Label>,
    keys: Keys,
    last: Option<Stats>,
}

impl Default for Publisher {
    fn default() -> Self {
        Publisher::new()
    }
}

impl Publisher {
    /// A publisher with the prefix `tickwheel` and no labels, that has
    /// recorded nothing yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use tickwheel::metrics::Publisher;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut publisher = Publisher::new();
    /// // Without a recorder installed, the metrics go nowhere, and recording
    /// // costs next to nothing.
    /// publisher.record(&timer.stats());
    /// let debug = format!("{publisher:?}");
    /// assert!(debug.contains(r#"prefix: "tickwheel""#) && debug.contains("recorded: true"));
    /// # }
    /// ```
    pub fn new() -> Publisher {
        Publisher {
            prefix: PREFIX.to_owned(),
            labels: Vec::new(),
            keys: Keys::new(PREFIX, &[]),
            last: None,
        }
    }

    /// What every metric's name begins with, followed by `_` (default
    /// `tickwheel`: `tickwheel_live`, ...). An empty prefix gives the bare
    /// names (`live`, `fired_total`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use tickwheel::metrics::Publisher;
    ///
    /// let publisher = Publisher::new().prefix("rpc_timer");
    /// assert!(format!("{publisher:?}").contains("rpc_timer"));
    /// ```
    pub fn prefix(mut self, prefix: impl Into<String>) -> Publisher {
        self.prefix = prefix.into();
        self.keys = Keys::new(&self.prefix, &self.labels);
        self
    }

    /// Adds a label to every metric, such as `("timer", "rpc")`, so that
    /// several timers can be told apart. Call it again for more labels.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickwheel::metrics::Publisher;
    ///
    /// let publisher = Publisher::new().label("timer", "rpc").label("shard", "eu");
    /// assert!(format!("{publisher:?}").contains("rpc"));
    /// ```
    pub fn label(
        mut self,
        key: impl Into<SharedString>,
        value: impl Into<SharedString>,
    ) -> Publisher {
        self.labels.push(Label::new(key, value));
        self.keys = Keys::new(&self.prefix, &self.labels);
        self
    }

    /// Records `stats` to the current recorder: sets the gauges to it,
    /// increments the counters by what happened since the snapshot this
    /// publisher recorded last (by the totals on the first call), and
    /// records the fired timers' lateness of that interval into the
    /// histogram, at bucket resolution (see the [module docs](self)).
    ///
    /// For a loop of your own; [`spawn`](Publisher::spawn) runs one. Pass
    /// snapshots of one timer, oldest first. Counters only move forward: a
    /// snapshot that is behind the last one recorded in any counter (an
    /// older one, or another timer's) sets the gauges and records nothing
    /// else, and the next snapshot is counted from the last one recorded.
    ///
    /// # Examples
    ///
    /// With a tiny recorder (hidden) that keeps each metric's value by name:
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use std::sync::{Arc, Mutex};
    /// # use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};
    /// # #[derive(Clone, Default)]
    /// # struct Values(Arc<Mutex<BTreeMap<String, f64>>>);
    /// # struct Cell(Values, String);
    /// # impl Values {
    /// #     fn get(&self, name: &str) -> Option<f64> { self.0.lock().unwrap().get(name).copied() }
    /// #     fn cell(&self, key: &Key) -> Arc<Cell> { Arc::new(Cell(self.clone(), key.name().to_owned())) }
    /// #     fn add(&self, name: &str, n: f64) { *self.0.lock().unwrap().entry(name.to_owned()).or_default() += n; }
    /// # }
    /// # impl metrics::CounterFn for Cell {
    /// #     fn increment(&self, n: u64) { self.0.add(&self.1, n as f64) }
    /// #     fn absolute(&self, n: u64) { self.0.0.lock().unwrap().insert(self.1.clone(), n as f64); }
    /// # }
    /// # impl metrics::GaugeFn for Cell {
    /// #     fn increment(&self, n: f64) { self.0.add(&self.1, n) }
    /// #     fn decrement(&self, n: f64) { self.0.add(&self.1, -n) }
    /// #     fn set(&self, n: f64) { self.0.0.lock().unwrap().insert(self.1.clone(), n); }
    /// # }
    /// # impl metrics::HistogramFn for Cell {
    /// #     fn record(&self, _: f64) { self.0.add(&self.1, 1.0) }
    /// # }
    /// # impl metrics::Recorder for Values {
    /// #     fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter { Counter::from_arc(self.cell(key)) }
    /// #     fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge { Gauge::from_arc(self.cell(key)) }
    /// #     fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram { Histogram::from_arc(self.cell(key)) }
    /// # }
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::metrics::Publisher;
    ///
    /// let values = Values::default();
    /// let timer = tickwheel::Timer::new();
    /// let mut publisher = Publisher::new().prefix("rpc_timer");
    /// for round in 1..=3 {
    ///     timer.sleep(Duration::from_millis(100)).await;
    ///     metrics::with_local_recorder(&values, || publisher.record(&timer.stats()));
    ///     assert_eq!(values.get("rpc_timer_fired_total"), Some(round as f64));
    /// }
    /// assert_eq!(values.get("rpc_timer_pending"), Some(0.0));
    /// assert_eq!(values.get("rpc_timer_headroom"), None); // no max_pending
    /// # }
    /// ```
    pub fn record(&mut self, stats: &Stats) {
        // Counters only move forward: a snapshot behind the last one in any
        // counter (an older one, or another timer's) sets the gauges only.
        let interval = match &self.last {
            None => Some(stats.clone()),
            Some(last) if behind(stats, last) => None,
            Some(last) => Some(stats.delta(last)),
        };
        let keys = &self.keys;
        ::metrics::with_recorder(|recorder| {
            for (key, (_, unit, help)) in [
                (&keys.live, LIVE),
                (&keys.pending, PENDING),
                (&keys.headroom, HEADROOM),
                (&keys.entry_bytes, ENTRY_BYTES),
            ] {
                recorder.describe_gauge(key.name().to_owned().into(), Some(unit), help.into());
            }
            for (key, (_, unit, help)) in [
                (&keys.registered, REGISTERED),
                (&keys.fired, FIRED),
                (&keys.cancelled, CANCELLED),
                (&keys.wakeups, WAKEUPS),
                (&keys.wake_panics, WAKE_PANICS),
            ] {
                recorder.describe_counter(key.name().to_owned().into(), Some(unit), help.into());
            }
            let (_, unit, help) = LATENESS;
            recorder.describe_histogram(
                keys.lateness.name().to_owned().into(),
                Some(unit),
                help.into(),
            );

            let gauge = |key: &Key, value: usize| {
                recorder.register_gauge(key, &METADATA).set(value as f64);
            };
            gauge(&keys.live, stats.live);
            gauge(&keys.pending, stats.pending);
            if let Some(headroom) = stats.headroom() {
                gauge(&keys.headroom, headroom);
            }
            gauge(&keys.entry_bytes, stats.entry_bytes);

            let Some(interval) = &interval else {
                return;
            };
            let counter = |key: &Key, delta: u64| {
                recorder.register_counter(key, &METADATA).increment(delta);
            };
            counter(&keys.registered, interval.registered);
            counter(&keys.fired, interval.fired);
            counter(&keys.cancelled, interval.cancelled);
            counter(&keys.wakeups, interval.wakeups);
            counter(&keys.wake_panics, interval.wake_panics);

            let histogram = recorder.register_histogram(&keys.lateness, &METADATA);
            record_lateness(&histogram, &interval.lateness_histogram);
        });
        if interval.is_some() {
            self.last = Some(stats.clone());
        }
    }

    /// Spawns a task on `timer`'s runtime that [records](Publisher::record)
    /// `timer.stats()` at once and then every `period`, until the timer
    /// shuts down or the returned handle is dropped or cancelled (see the
    /// [module docs](self#waiting-and-stopping)).
    ///
    /// Samples come at a fixed rate on the timer's clock (at start, then
    /// every `period`): one late by less than a period keeps that grid;
    /// after a stall that skipped a sample's time (a busy runtime) the next
    /// one is one period after the late one, without a burst of catch-up
    /// samples. A
    /// zero `period` is raised to the timer's [`tick`](Timer::tick); one too
    /// long for the clock (such as `Duration::MAX`) saturates: the first
    /// sample, then only the final one at shutdown.
    ///
    /// It never panics: on a timer that has already shut down, the task
    /// records the timer's figures and ends at once; on a timer whose
    /// runtime has ended, the task cannot run: the runtime drops it at once,
    /// and it records only the final sample, before `spawn` returns. A
    /// recorder that panics in a final sample taken as the runtime drops the
    /// task has that panic contained (the runtime's shutdown goes on).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::metrics::Publisher;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = Publisher::new()
    ///     .label("timer", "rpc")
    ///     .spawn(&timer, Duration::from_secs(15));
    /// tokio::time::sleep(Duration::from_secs(40)).await;
    /// assert_eq!(task.samples(), 3); // at 0, 15 and 30 s
    /// # }
    /// ```
    pub fn spawn(self, timer: &Timer, period: Duration) -> MetricsTask {
        let period = if period.is_zero() {
            timer.tick()
        } else {
            period
        };
        let state = Arc::new(TaskState::default());
        let publishing = Publishing {
            inner: timer.inner().clone(),
            publisher: Some(self),
            state: state.clone(),
        };
        let task = timer.runtime().spawn(publish(publishing, period));
        MetricsTask {
            task: Some(task),
            state,
            period,
        }
    }
}

/// `stats` has a counter below `last`'s: it was taken before it, or is
/// another timer's (one timer's counters never go down).
fn behind(stats: &Stats, last: &Stats) -> bool {
    stats.registered < last.registered
        || stats.fired < last.fired
        || stats.cancelled < last.cancelled
        || stats.wakeups < last.wakeups
        || stats.wake_panics < last.wake_panics
        || stats.lateness_histogram.count() < last.lateness_histogram.count()
}

/// Records the histogram's buckets into `histogram`, each fired timer as
/// the largest whole microsecond of its bucket, in seconds.
fn record_lateness(histogram: &::metrics::Histogram, lateness: &LatenessHistogram) {
    for bucket in lateness.buckets() {
        // Every bound is at least 1 µs.
        let value = bucket.le.saturating_sub(Duration::from_micros(1));
        let mut left = bucket.count;
        while left > 0 {
            let now = usize::try_from(left).unwrap_or(usize::MAX);
            histogram.record_many(value.as_secs_f64(), now);
            left -= now as u64;
        }
    }
}

/// What a publishing task and its [`MetricsTask`] share.
#[derive(Debug, Default)]
struct TaskState {
    samples: AtomicU64,
    /// Set by the handle when it stops the task (dropped or cancelled):
    /// the task then owes no final sample.
    stopped: AtomicBool,
}

/// The publishing task's state, which owes a final sample until it has
/// taken one. The task takes it itself when it sees the timer shut down;
/// when the task is dropped first (its runtime shutting down drops every
/// task without polling it again, the driver's included, in an order of its
/// own; or it never ran), `Drop` hands the final sample to the timer's
/// shutdown, which takes it once every shard is drained (at once if they
/// are): the final sample counts the timers the shutdown cancelled either
/// way.
struct Publishing {
    inner: Arc<Inner>,
    /// `None` once the final sample is taken, or while a sample is being
    /// recorded (so a recorder that panics leaves nothing owed).
    publisher: Option<Publisher>,
    state: Arc<TaskState>,
}

impl Publishing {
    /// Records a sample; the last one if `last`.
    fn sample(&mut self, last: bool) {
        if let Some(mut publisher) = self.publisher.take() {
            publisher.record(&Stats::of(&self.inner));
            self.state.samples.fetch_add(1, Ordering::Release);
            if !last {
                self.publisher = Some(publisher);
            }
        }
    }
}

impl Drop for Publishing {
    fn drop(&mut self) {
        let Some(mut publisher) = self.publisher.take() else {
            return;
        };
        if self.state.stopped.load(Ordering::Acquire) {
            return;
        }
        let state = self.state.clone();
        self.inner.after_drain(Box::new(move |inner| {
            // The handle may have stopped it meanwhile.
            if !state.stopped.load(Ordering::Acquire) {
                publisher.record(&Stats::of(inner));
                state.samples.fetch_add(1, Ordering::Release);
            }
        }));
    }
}

/// The publishing task: sample, wait for the next period or the timer's
/// shutdown, repeat; after a shutdown, one final sample (and if the task is
/// dropped first, `Publishing`'s `Drop` sees to it).
async fn publish(mut publishing: Publishing, period: Duration) {
    let mut next = Some(Instant::now());
    loop {
        publishing.sample(false);
        let now = Instant::now();
        next = next.and_then(|at| at.checked_add(period)).map(|at| {
            if at > now {
                at
            } else {
                // Late: no catch-up burst.
                now.checked_add(period).unwrap_or(at)
            }
        });
        // A period too long for the clock: only the shutdown is left.
        let wait = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = publishing.inner.shut_down_notice() => {
                publishing.sample(true);
                return;
            }
            () = wait => {}
        }
    }
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labels: Vec<_> = self
            .labels
            .iter()
            .map(|label| (label.key(), label.value()))
            .collect();
        f.debug_struct("Publisher")
            .field("prefix", &self.prefix)
            .field("labels", &labels)
            .field("recorded", &self.last.is_some())
            .finish()
    }
}

/// The handle to a publishing task, from [`Timer::publish_metrics`] or
/// [`Publisher::spawn`].
///
/// Dropping it stops the task, as [`cancel`](MetricsTask::cancel) does;
/// [`detach`](MetricsTask::detach) lets the task run until the timer shuts
/// down instead. The task also ends by itself when the timer shuts down
/// (see the [module docs](self#waiting-and-stopping)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let mut task = timer.publish_metrics(Duration::from_secs(1));
/// tokio::time::sleep(Duration::from_millis(2500)).await;
/// assert_eq!(task.samples(), 3); // at 0, 1 and 2 s
/// timer.shutdown();
/// task.stopped().await;
/// assert_eq!(task.samples(), 4); // and a final one at shutdown
/// assert!(task.is_finished());
/// # }
/// ```
#[must_use = "dropping a MetricsTask stops its task; call `.detach()` to keep it running"]
pub struct MetricsTask {
    /// `None` once detached, or once `stopped` has seen the task end.
    task: Option<JoinHandle<()>>,
    state: Arc<TaskState>,
    period: Duration,
}

impl MetricsTask {
    /// Stops the task: no sample starts after it returns. A sample is
    /// recorded within one poll of the task, so none is ever cut in half (on
    /// a multi-threaded runtime, one in progress on another thread
    /// finishes).
    /// Returns `true` if this call stopped it, `false` if it had already
    /// ended (by shutdown or an earlier `cancel`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(1));
    /// tokio::task::yield_now().await;
    /// assert!(task.cancel());
    /// assert!(!task.cancel());
    /// tokio::time::sleep(Duration::from_secs(5)).await;
    /// assert_eq!(task.samples(), 1); // only the one at start
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        match &self.task {
            Some(task) if !task.is_finished() => {
                let first = !self.state.stopped.swap(true, Ordering::AcqRel);
                task.abort();
                first
            }
            _ => false,
        }
    }

    /// `true` once the task has ended: the timer shut down (and the task
    /// recorded its final sample), or the task was cancelled and the runtime
    /// has dropped it (at its next turn).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(1));
    /// assert!(!task.is_finished());
    /// timer.shutdown();
    /// tokio::task::yield_now().await;
    /// assert!(task.is_finished());
    /// # }
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// How many snapshots the task has recorded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(10));
    /// assert_eq!(task.samples(), 0); // spawned, not yet run
    /// tokio::time::sleep(Duration::from_secs(25)).await;
    /// assert_eq!(task.samples(), 3); // at 0, 10 and 20 s
    /// # }
    /// ```
    pub fn samples(&self) -> u64 {
        self.state.samples.load(Ordering::Acquire)
    }

    /// The time between samples (a zero period given is raised to the
    /// timer's tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::ZERO);
    /// assert_eq!(task.period(), timer.tick());
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Lets the task run without its handle: until the timer shuts down (or
    /// its runtime does). For a service that publishes for the timer's
    /// whole life.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.publish_metrics(Duration::from_secs(10)).detach();
    /// # tokio::time::sleep(Duration::from_secs(1)).await;
    /// # timer.shutdown();
    /// # }
    /// ```
    pub fn detach(mut self) {
        // Dropping a tokio JoinHandle detaches its task.
        self.task = None;
    }

    /// Waits until the task has ended: after the timer's shutdown (once its
    /// final sample is recorded), or after [`cancel`](MetricsTask::cancel).
    /// Returns at once if it already has. It does not end the task itself:
    /// awaited on a running timer, it waits until the timer shuts down.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes leaves the task
    /// and this handle as they were, and it can be awaited again.
    ///
    /// # Panics
    ///
    /// With the task's panic, if it panicked: only a recorder that panics
    /// can make it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut task = timer.publish_metrics(Duration::from_secs(1));
    /// let stopper = timer.clone();
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_millis(3500)).await;
    ///     stopper.shutdown();
    /// });
    /// task.stopped().await;
    /// assert_eq!(task.samples(), 5); // at 0, 1, 2 and 3 s, and at shutdown
    /// # }
    /// ```
    pub async fn stopped(&mut self) {
        if let Some(task) = &mut self.task {
            let ended = task.await;
            self.task = None;
            if let Err(err) = ended {
                if err.is_panic() {
                    resume_unwind(err.into_panic());
                }
            }
        }
    }
}

impl Drop for MetricsTask {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            self.state.stopped.store(true, Ordering::Release);
            task.abort();
        }
    }
}

impl fmt::Debug for MetricsTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsTask")
            .field("period", &self.period)
            .field("samples", &self.samples())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl Timer {
    /// Publishes this timer's [`stats`](Timer::stats) through the
    /// `metrics` facade every `period`, from a task on the
    /// timer's runtime, under the default names (`tickwheel_live`,
    /// `tickwheel_fired_total`, `tickwheel_lateness_seconds`, ...; see
    /// [`tickwheel::metrics`](crate::metrics)). (Feature `metrics`.)
    ///
    /// `Publisher::new().spawn(self, period)`: use a
    /// [`Publisher`] for another prefix or labels. The task stops when the
    /// timer shuts down (after a final sample) or when the returned handle
    /// is dropped or cancelled; it is not a timer of its own in the stats
    /// it reports. A zero `period` is raised to the [`tick`](Timer::tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let metrics = timer.publish_metrics(Duration::from_secs(10));
    /// timer.sleep(Duration::from_secs(25)).await;
    /// assert_eq!(metrics.samples(), 3); // at 0, 10 and 20 s
    /// assert_eq!(timer.stats().fired, 1); // the publisher is not a timer
    /// # }
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn publish_metrics(&self, period: Duration) -> MetricsTask {
        Publisher::new().spawn(self, period)
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use ::metrics::{
        Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use tokio_test::{assert_pending, task};

    use super::{publish, Publisher, Publishing, TaskState};
    use crate::engine::wheel::watchdog::block_on_paused;
    use crate::Timer;

    const HOUR: Duration = Duration::from_secs(3600);

    /// Counters' totals by name (gauges and histograms go nowhere).
    #[derive(Clone, Default)]
    struct Counters(Arc<Mutex<BTreeMap<String, u64>>>);

    struct Cell(Counters, String);

    impl CounterFn for Cell {
        fn increment(&self, n: u64) {
            *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += n;
        }
        fn absolute(&self, n: u64) {
            self.0 .0.lock().unwrap().insert(self.1.clone(), n);
        }
    }

    impl Counters {
        fn cancelled(&self) -> u64 {
            let counters = self.0.lock().unwrap();
            counters
                .get("tickwheel_cancelled_total")
                .copied()
                .unwrap_or(0)
        }
    }

    impl Recorder for Counters {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(Arc::new(Cell(self.clone(), key.name().to_owned())))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// When the handle stops the task, if it does.
    #[derive(Clone, Copy, PartialEq)]
    enum Stop {
        Never,
        BeforeTheRuntimeDropsIt,
        AfterTheRuntimeDroppedIt,
    }

    /// A publishing task, polled once (its first sample), with 3 registered
    /// sleeps on its timer, is dropped while the driver still runs (as a
    /// shutting-down runtime may drop it before the driver); then the timer
    /// shuts down. Returns the samples taken before the shutdown and after
    /// it, and the cancellations recorded after it.
    fn drop_the_task_before_the_driver(stop: Stop) -> (u64, u64, u64) {
        let counters = Counters::default();
        ::metrics::with_local_recorder(&counters, || {
            block_on_paused(async {
                let timer = Timer::new();
                let mut sleeps: Vec<_> = (0..3).map(|_| task::spawn(timer.sleep(HOUR))).collect();
                for sleep in &mut sleeps {
                    assert_pending!(sleep.poll());
                }
                let state = Arc::new(TaskState::default());
                let publishing = Publishing {
                    inner: timer.inner().clone(),
                    publisher: Some(Publisher::new()),
                    state: state.clone(),
                };
                let mut task = task::spawn(publish(publishing, HOUR));
                assert_pending!(task.poll());
                let handle_stops = || state.stopped.store(true, super::Ordering::Release);
                if stop == Stop::BeforeTheRuntimeDropsIt {
                    handle_stops();
                }
                drop(task);
                if stop == Stop::AfterTheRuntimeDroppedIt {
                    handle_stops();
                }
                let before = state.samples.load(super::Ordering::Acquire);
                assert_eq!(counters.cancelled(), 0, "recorded before the drain");
                assert_eq!(timer.shutdown(), 3);
                let after = state.samples.load(super::Ordering::Acquire);
                (before, after, counters.cancelled())
            })
        })
    }

    /// Dropped before the driver, the task leaves its final sample to the
    /// shutdown, which takes it once every shard is drained: it counts the
    /// 3 sleeps the shutdown cancelled.
    #[test]
    fn a_task_dropped_before_the_shutdown_leaves_its_final_sample_to_it() {
        assert_eq!(drop_the_task_before_the_driver(Stop::Never), (1, 2, 3));
    }

    /// A task its handle stopped owes no final sample, whether the handle
    /// stopped it before the runtime dropped it or between that and the
    /// shutdown.
    #[test]
    fn a_task_its_handle_stopped_takes_no_final_sample() {
        for stop in [
            Stop::BeforeTheRuntimeDropsIt,
            Stop::AfterTheRuntimeDroppedIt,
        ] {
            assert_eq!(drop_the_task_before_the_driver(stop), (1, 1, 0));
        }
    }
}
