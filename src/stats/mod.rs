//! What a timer reports about itself: [`Stats`], its [`Lateness`] summary,
//! and the difference of two snapshots ([`Stats::delta`]).
//!
//! Counters live per shard (under the shard's own lock, which the event that
//! bumps them already holds) and are only summed when [`Timer::stats`] is
//! called, so no counter is a cache line that every core writes.
//!
//! [`Timer::stats`]: crate::Timer::stats

use std::fmt;
use std::ops::Sub;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::engine::state::Inner;
use crate::engine::wheel::Tally;

mod lateness;

pub use lateness::{LatenessBucket, LatenessHistogram};

/// A snapshot of a timer's activity, from [`Timer::stats`](crate::Timer::stats).
///
/// Counters are totals since the timer was built; gauges (`live`,
/// `pending`, `entry_bytes`, `max_pending`) are values at the snapshot. The
/// shards are read one after another, so under concurrent use the fields are
/// each exact but not taken at one single instant. Once activity stops, they
/// satisfy `registered == fired + cancelled + pending`.
///
/// For rates, take snapshots at intervals and subtract them:
/// [`delta`](Stats::delta) (or `later - earlier`) gives the counters of the
/// interval.
///
/// # Live and pending
///
/// A sleep (or a timeout, an interval, a retry's wait, a stream adapter:
/// each holds one) is **live** from its creation until it is dropped; it is
/// **pending** only while it is registered in the wheel, from its first poll
/// until it fires or is dropped. A sleep created and not yet polled, or one
/// that completed and is still held (to be [`reset`](crate::Sleep::reset),
/// say), is live but not pending; so `pending <= live`.
/// [`max_pending`](crate::Builder::max_pending) bounds `live`: that is what
/// a new sleep is refused for, so the headroom left is
/// `max_pending - live` ([`headroom`](Stats::headroom)). `pending` is the
/// wheel's load: what the driver holds and will fire.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::builder().max_pending(100).build().unwrap();
/// let held = timer.sleep(Duration::from_secs(60)); // live, not pending
/// timer.sleep(Duration::from_millis(50)).await;
/// let stats = timer.stats();
/// assert_eq!(stats.fired, 1);
/// assert_eq!((stats.live, stats.pending), (1, 0));
/// assert_eq!(stats.headroom(), Some(99));
/// assert!(stats.lateness.max < timer.tick()); // under one tick (1 ms by default)
/// # drop(held);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Gauge: sleeps and timeouts that exist now (created and not dropped),
    /// registered or not: what [`max_pending`](crate::Builder::max_pending)
    /// bounds. See [Live and pending](Stats#live-and-pending).
    pub live: usize,
    /// Gauge: the timer's [`max_pending`](crate::Builder::max_pending)
    /// limit, if it has one.
    pub max_pending: Option<usize>,
    /// Gauge: timers registered in the wheel now (same as
    /// [`Timer::pending`](crate::Timer::pending)). See [Live and
    /// pending](Stats#live-and-pending).
    pub pending: usize,
    /// Counter: timers ever registered in the wheel (a sleep registers on
    /// its first poll, and only if its deadline has not already passed).
    pub registered: u64,
    /// Counter: timers whose deadline the driver reached and whose task it
    /// woke.
    pub fired: u64,
    /// Counter: timers removed before firing: dropped or reset to a passed
    /// deadline while registered, or woken early by
    /// [`Timer::shutdown`](crate::Timer::shutdown).
    pub cancelled: u64,
    /// Counter: far-future timers moved from the overflow level into the
    /// wheel when their revolution came (each registration or reset moves at
    /// most once).
    pub migrated: u64,
    /// Counter: ticks the wheel's clock has advanced since the timer was
    /// built.
    pub ticks: u64,
    /// Counter: times the driver task woke up. Stays flat while nothing is
    /// pending, and grows with non-empty buckets, not with elapsed ticks.
    pub wakeups: u64,
    /// Counter: wakers that panicked when the driver woke them. The driver
    /// catches the panic and goes on waking the rest of the bucket.
    pub wake_panics: u64,
    /// Counter: passes the driver task's backstop ran because a due tick
    /// had been left unprocessed for two ticks (at least 2 ms) past its
    /// boundary: tokio did not call the driver back in time (see the
    /// crate docs' "Precision"). Zero while tokio behaves as the driver
    /// expects; anything else is worth a report.
    pub backstop_passes: u64,
    /// Counter: times the backstop found a due tick that far behind while
    /// another party (the hook, inside tokio's timer processing) was
    /// running a pass: its pass was left to that party, which runs it
    /// before it lets go. Counted apart from
    /// [`backstop_passes`](Stats::backstop_passes); both are zero while
    /// tokio calls the driver back in time.
    pub backstop_lock_held: u64,
    /// Counter: driver passes that panicked: a bug in the driver. (A waker
    /// or a `tracing` subscriber that panics is contained where the driver
    /// calls it, and is not counted here.) The panic is contained too: the
    /// pass runs again at once, or, if that panics as well, the driver
    /// task's backstop runs it, as it would if tokio stopped calling the
    /// driver back (see the crate docs' "Precision"). Expected to stay
    /// zero.
    pub pass_panics: u64,
    /// Gauge: the timer looked for tokio's millisecond grid when it was
    /// built (whole-millisecond ticks on a clock that runs) and did not find
    /// it, as on tokio's alternative timer (always on a worker, usually off
    /// the workers, where the search races them): its tick boundaries then
    /// lie off the milliseconds at which tokio fires, and its sleeps may
    /// complete up to 1 ms later than `tokio::time`'s (never earlier).
    pub grid_missed: bool,
    /// Gauge: bytes of entry storage the wheels hold. Pages are reused while
    /// timers come and go, and a shard that empties releases all but its
    /// first page.
    pub entry_bytes: usize,
    /// Counter (summarised): how late fired timers were relative to their
    /// exact deadlines.
    pub lateness: Lateness,
    /// Counter: the buckets [`lateness`](Stats::lateness) summarises, for
    /// exporting as a histogram.
    pub lateness_histogram: LatenessHistogram,
}

impl Stats {
    /// A snapshot of the timer behind `inner`: [`Timer::stats`], for those
    /// that hold the state without a handle (a handle would keep an orphaned
    /// driver running).
    ///
    /// [`Timer::stats`]: crate::Timer::stats
    pub(crate) fn of(inner: &Inner) -> Stats {
        let mut tally = Tally::default();
        for shard in inner.shards.iter() {
            shard.tally_into(&mut tally);
        }
        Stats {
            live: inner.live(),
            max_pending: inner.shared.max_pending(),
            // Every registration ends fired or cancelled (a shutdown counts
            // what it drains as cancelled).
            pending: (tally.registered - tally.fired - tally.cancelled) as usize,
            registered: tally.registered,
            fired: tally.fired,
            cancelled: tally.cancelled,
            migrated: tally.migrated,
            ticks: inner.clock_tick.load(Ordering::Relaxed),
            wakeups: inner.wakeups.load(Ordering::Relaxed),
            wake_panics: inner.wake_panics.load(Ordering::Relaxed),
            backstop_passes: inner.backstop_passes.load(Ordering::Relaxed),
            backstop_lock_held: inner.backstop_lock_held.load(Ordering::Relaxed),
            pass_panics: inner.pass_panics.load(Ordering::Relaxed),
            grid_missed: inner.grid_missed,
            entry_bytes: tally.entry_bytes,
            lateness: Lateness::of(&tally.lateness),
            lateness_histogram: tally.lateness,
        }
    }

    /// How many more sleeps the timer accepts before
    /// [`max_pending`](crate::Builder::max_pending) refuses one
    /// (`max_pending - live`), or `None` for a timer without a limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().max_pending(2).build().unwrap();
    /// let _held = timer.sleep(Duration::from_secs(1));
    /// assert_eq!(timer.stats().headroom(), Some(1));
    /// assert_eq!(tickwheel::Timer::new().stats().headroom(), None);
    /// # }
    /// ```
    pub fn headroom(&self) -> Option<usize> {
        self.max_pending.map(|max| max.saturating_sub(self.live))
    }

    /// What happened between `earlier` and this snapshot (both from the
    /// same timer, `earlier` taken first): per-interval figures, to divide
    /// by the time between the two for rates. `later - earlier` is the same.
    ///
    /// - **Counters** are subtracted, saturating at zero (two snapshots
    ///   taken in the wrong order, or of different timers, give zeros, not
    ///   a panic or a wrap): `registered`, `fired`, `cancelled`, `migrated`,
    ///   `ticks`, `wakeups`, `wake_panics`, `backstop_passes`,
    ///   `backstop_lock_held`, `pass_panics`, and the
    ///   lateness histogram, bucket by bucket.
    /// - **Gauges** are this (the later) snapshot's: `live`, `pending`,
    ///   `entry_bytes`, `max_pending`, `grid_missed`.
    /// - **`lateness`** is the summary of the interval's histogram: its
    ///   count, mean, p50 and p99 are the interval's; its `max` is an upper
    ///   bound (the interval's highest bucket, capped at the largest
    ///   lateness ever seen), since the exact maximum of an interval is not
    ///   recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (before, t0) = (timer.stats(), Instant::now());
    /// for _ in 0..5 {
    ///     timer.sleep(Duration::from_millis(100)).await;
    /// }
    /// let interval = timer.stats().delta(&before);
    /// let per_second = interval.fired as f64 / t0.elapsed().as_secs_f64();
    /// assert_eq!(interval.fired, 5);
    /// assert_eq!(per_second, 10.0);
    /// assert_eq!(interval.lateness.count, 5);
    /// # }
    /// ```
    pub fn delta(&self, earlier: &Stats) -> Stats {
        let lateness_histogram = self.lateness_histogram.since(&earlier.lateness_histogram);
        Stats {
            live: self.live,
            max_pending: self.max_pending,
            pending: self.pending,
            registered: self.registered.saturating_sub(earlier.registered),
            fired: self.fired.saturating_sub(earlier.fired),
            cancelled: self.cancelled.saturating_sub(earlier.cancelled),
            migrated: self.migrated.saturating_sub(earlier.migrated),
            ticks: self.ticks.saturating_sub(earlier.ticks),
            wakeups: self.wakeups.saturating_sub(earlier.wakeups),
            wake_panics: self.wake_panics.saturating_sub(earlier.wake_panics),
            backstop_passes: self.backstop_passes.saturating_sub(earlier.backstop_passes),
            backstop_lock_held: self
                .backstop_lock_held
                .saturating_sub(earlier.backstop_lock_held),
            pass_panics: self.pass_panics.saturating_sub(earlier.pass_panics),
            grid_missed: self.grid_missed,
            entry_bytes: self.entry_bytes,
            lateness: Lateness::of(&lateness_histogram),
            lateness_histogram,
        }
    }
}

/// One compact line for logs: the gauges, the main counters and the
/// lateness summary, without the histogram's buckets (`{:?}` has every
/// field, the non-empty buckets included).
///
/// `live L pending P [headroom H] fired F cancelled C wakeups W lateness p50
/// X p99 Y max Z`: `headroom` only for a timer with
/// [`max_pending`](crate::Builder::max_pending), and `lateness none` when no
/// timer has fired. Durations are printed as `Duration`'s `{:?}` prints them
/// (`610µs`, `1.2ms`). On a [`delta`](Stats::delta) the counters are the
/// interval's.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::builder()
///     .tick(Duration::from_millis(10))
///     .max_pending(100)
///     .build()
///     .unwrap();
/// let _held = timer.sleep(Duration::from_secs(60));
/// timer.sleep(Duration::from_millis(15)).await; // fires at 20 ms: 5 ms late
/// let line = timer.stats().to_string();
/// // live 1 pending 0 headroom 99 fired 1 cancelled 0 wakeups 2 lateness p50 5ms p99 5ms max 5ms
/// assert!(line.starts_with("live 1 pending 0 headroom 99 fired 1 cancelled 0 wakeups "));
/// assert!(line.ends_with(" lateness p50 5ms p99 5ms max 5ms"));
/// assert_eq!(line.lines().count(), 1);
/// # }
/// ```
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "live {} pending {}", self.live, self.pending)?;
        if let Some(headroom) = self.headroom() {
            write!(f, " headroom {headroom}")?;
        }
        write!(
            f,
            " fired {} cancelled {} wakeups {} lateness ",
            self.fired, self.cancelled, self.wakeups
        )?;
        let lateness = &self.lateness;
        if lateness.count == 0 {
            f.write_str("none")
        } else {
            write!(
                f,
                "p50 {:?} p99 {:?} max {:?}",
                lateness.p50, lateness.p99, lateness.max
            )
        }
    }
}

/// `later - earlier` is [`later.delta(&earlier)`](Stats::delta).
impl Sub for Stats {
    type Output = Stats;

    fn sub(self, earlier: Stats) -> Stats {
        self.delta(&earlier)
    }
}

/// `&later - &earlier` is [`later.delta(&earlier)`](Stats::delta).
impl Sub<&Stats> for &Stats {
    type Output = Stats;

    fn sub(self, earlier: &Stats) -> Stats {
        self.delta(earlier)
    }
}

/// Distribution of `fire time - deadline` over fired timers.
///
/// Never negative: a timer never fires before its deadline. Percentiles come
/// from a log-linear histogram with 8 sub-buckets per power of two of
/// microseconds ([`Stats::lateness_histogram`], where the buckets themselves
/// are), and are reported as the bucket's upper bound (so they err late, by
/// at most 12.5%); `max` and `mean` are exact to the microsecond (except the
/// `max` of a [`Stats::delta`], an upper bound).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::builder().tick(Duration::from_millis(10)).build().unwrap();
/// // 25 ms rounds up to the 30 ms tick boundary: 5 ms late.
/// timer.sleep(Duration::from_millis(25)).await;
/// let lateness = timer.stats().lateness;
/// assert_eq!(lateness.count, 1);
/// assert!(lateness.max >= Duration::from_millis(5) && lateness.max < Duration::from_millis(6));
/// assert!(lateness.p99 >= lateness.max, "percentiles err late, never early");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Lateness {
    /// Number of fired timers measured.
    pub count: u64,
    /// Mean lateness.
    pub mean: Duration,
    /// Median lateness (upper bound of its histogram bucket).
    pub p50: Duration,
    /// 99th-percentile lateness (upper bound of its histogram bucket).
    pub p99: Duration,
    /// Largest lateness seen.
    pub max: Duration,
}

impl fmt::Display for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={} mean={:?} p50<={:?} p99<={:?} max={:?}",
            self.count, self.mean, self.p50, self.p99, self.max
        )
    }
}

impl Lateness {
    /// The summary of `histogram`.
    pub(crate) fn of(histogram: &LatenessHistogram) -> Lateness {
        if histogram.count() == 0 {
            return Lateness::default();
        }
        Lateness {
            count: histogram.count(),
            mean: Duration::from_micros(histogram.mean_us()),
            p50: Duration::from_micros(histogram.quantile_us(0.50)),
            p99: Duration::from_micros(histogram.quantile_us(0.99)),
            max: Duration::from_micros(histogram.max_us()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_quantiles_within_an_eighth() {
        let mut h = LatenessHistogram::default();
        for ms in 1..=100u64 {
            h.record_ns(ms * 1_000_000);
        }
        let s = Lateness::of(&h);
        assert_eq!(s.count, 100);
        assert_eq!(s.max, Duration::from_millis(100));
        assert_eq!(s.mean, Duration::from_micros(50_500));
        let p50 = s.p50.as_micros() as f64;
        assert!((50_000.0..=50_000.0 * 1.125).contains(&p50), "{p50}");
        let p99 = s.p99.as_micros() as f64;
        assert!((99_000.0..=100_000.0).contains(&p99), "{p99}");
    }

    #[test]
    fn merge_adds_up() {
        let mut a = LatenessHistogram::default();
        let mut b = LatenessHistogram::default();
        a.record_ns(1_000);
        b.record_ns(3_000_000);
        a.merge(&b);
        let s = Lateness::of(&a);
        assert_eq!(s.count, 2);
        assert_eq!(s.max, Duration::from_millis(3));
        assert_eq!(
            Lateness::of(&LatenessHistogram::default()),
            Lateness::default()
        );
    }
}
