//! What a timer reports about itself: [`Stats`] and its [`Lateness`] summary.
//!
//! Counters live per shard (under the shard's own lock, which the event that
//! bumps them already holds) and are only summed when [`Timer::stats`] is
//! called, so no counter is a cache line that every core writes.
//!
//! [`Timer::stats`]: crate::Timer::stats

use std::fmt;
use std::time::Duration;

use crate::lateness::Histogram;

/// A snapshot of a timer's activity, from [`Timer::stats`](crate::Timer::stats).
///
/// Counts are totals since the timer was built. The shards are read one after
/// another, so under concurrent use the fields are each exact but not taken at
/// one single instant. Once activity stops, they satisfy
/// `registered == fired + cancelled + pending`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// timer.sleep(Duration::from_millis(50)).await;
/// let stats = timer.stats();
/// assert_eq!(stats.fired, 1);
/// assert_eq!(stats.pending, 0);
/// assert!(stats.lateness.max <= Duration::from_millis(10)); // one 10 ms tick
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Timers registered in the wheel now (same as [`Timer::pending`](crate::Timer::pending)).
    pub pending: usize,
    /// Timers ever registered in the wheel (a sleep registers on its first
    /// poll, and only if its deadline has not already passed).
    pub registered: u64,
    /// Timers whose deadline the driver reached and whose task it woke.
    pub fired: u64,
    /// Timers removed before firing: dropped or reset to a passed deadline
    /// while registered, or woken early by [`Timer::shutdown`](crate::Timer::shutdown).
    pub cancelled: u64,
    /// Far-future timers moved from the overflow level into the wheel when
    /// their revolution came (each registration or reset moves at most once).
    pub migrated: u64,
    /// Ticks the wheel's clock has advanced since the timer was built.
    pub ticks: u64,
    /// Times the driver task woke up. Stays flat while nothing is pending, and
    /// grows with non-empty buckets, not with elapsed ticks.
    pub wakeups: u64,
    /// Wakers that panicked when the driver woke them. The driver catches the
    /// panic and goes on waking the rest of the bucket.
    pub wake_panics: u64,
    /// Bytes of entry storage the wheels hold. Pages are reused while timers
    /// come and go, and a shard that empties releases all but its first page.
    pub entry_bytes: usize,
    /// How late fired timers were relative to their exact deadlines.
    pub lateness: Lateness,
}

/// Distribution of `fire time - deadline` over fired timers.
///
/// Never negative: a timer never fires before its deadline. Percentiles come
/// from a log-linear histogram with 8 sub-buckets per power of two of
/// microseconds, and are reported as the bucket's upper bound (so they err
/// late, by at most 12.5%); `max` and `mean` are exact to the microsecond.
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
    pub(crate) fn of(histogram: &Histogram) -> Lateness {
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
        let mut h = Histogram::default();
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
        let mut a = Histogram::default();
        let mut b = Histogram::default();
        a.record_ns(1_000);
        b.record_ns(3_000_000);
        a.merge(&b);
        let s = Lateness::of(&a);
        assert_eq!(s.count, 2);
        assert_eq!(s.max, Duration::from_millis(3));
        assert_eq!(Lateness::of(&Histogram::default()), Lateness::default());
    }
}
