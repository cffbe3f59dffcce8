//! [`Publisher`]: records a timer's [`Stats`] to the current `metrics`
//! recorder, as gauges, counters and a histogram.

use std::fmt;
use std::time::Duration;

use ::metrics::{Key, Label, SharedString};

use super::handle::MetricsTask;
use super::keys::{
    Keys, CANCELLED, ENTRY_BYTES, FIRED, HEADROOM, LATENESS, LIVE, PENDING, PREFIX, REGISTERED,
    WAKEUPS, WAKE_PANICS,
};
use super::{task, METADATA};
use crate::stats::Stats;
use crate::timer::Timer;
use crate::LatenessHistogram;

/// Records a timer's [`Stats`] to the current `metrics`
/// recorder, under a name prefix and labels of your choosing; see the
/// [module docs](crate::metrics) for the metrics and what they mean.
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
    /// histogram, at bucket resolution (see the [module docs](crate::metrics)).
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
    /// [module docs](crate::metrics#waiting-and-stopping)).
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
        task::spawn(self, timer, period)
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
