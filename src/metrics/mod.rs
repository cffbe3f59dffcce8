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
//! | `tickwheel_live` | gauge | [`Stats::live`](crate::Stats::live) |
//! | `tickwheel_pending` | gauge | [`Stats::pending`](crate::Stats::pending) |
//! | `tickwheel_headroom` | gauge | [`Stats::headroom`](crate::Stats::headroom), only for a timer with [`max_pending`](crate::Builder::max_pending) |
//! | `tickwheel_entry_bytes` | gauge | [`Stats::entry_bytes`](crate::Stats::entry_bytes) |
//! | `tickwheel_registered_total` | counter | [`Stats::registered`](crate::Stats::registered) |
//! | `tickwheel_fired_total` | counter | [`Stats::fired`](crate::Stats::fired) |
//! | `tickwheel_cancelled_total` | counter | [`Stats::cancelled`](crate::Stats::cancelled) |
//! | `tickwheel_driver_wakeups_total` | counter | [`Stats::wakeups`](crate::Stats::wakeups) |
//! | `tickwheel_wake_panics_total` | counter | [`Stats::wake_panics`](crate::Stats::wake_panics) |
//! | `tickwheel_lateness_seconds` | histogram | [`Stats::lateness_histogram`](crate::Stats::lateness_histogram) |
//!
//! Gauges are set to the snapshot's values. Counters are incremented by
//! what happened since the previous snapshot ([`Stats::delta`](crate::Stats::delta)), so after
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
//! [`bounds`](crate::LatenessHistogram::bounds) (such as the powers of two of
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
//!   it is dropped, or, if it is dropped before the driver, as soon as the
//!   timer's shutdown (the driver's, as it is dropped) has cancelled every
//!   timer, on the thread that shuts it down: either way it counts the
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
//! [`LatenessHistogram`]: crate::LatenessHistogram
//! [`Stats`]: crate::Stats

// publisher.rs: `Publisher`, which records one snapshot; keys.rs: the
// metrics' names, units and help texts; task.rs: the task that samples every
// period, and its final sample; handle.rs: `MetricsTask`, the user's handle
// to that task.
mod handle;
mod keys;
mod publisher;
mod task;

use std::time::Duration;

use ::metrics::{Level, Metadata};

use crate::timer::Timer;

pub use handle::MetricsTask;
pub use publisher::Publisher;

/// Where the metrics say they come from (recorders may filter on it): this
/// module, `tickwheel::metrics`.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

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
