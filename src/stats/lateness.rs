//! The lateness histogram: each wheel records its fired timers into one,
//! `Timer::stats` merges them into a [`LatenessHistogram`] for
//! [`Stats`](crate::Stats), and its buckets are what an exporter
//! (Prometheus, the `metrics` facade) reads. `Lateness` in `stats/mod.rs` is its
//! summary.
//!
//! Layout: lateness is recorded in whole microseconds (truncated), exactly
//! below 16 µs (one bucket per microsecond), then log-linear: 8 buckets per
//! power of two, so a bucket is at most 1/8 of its lower edge wide.

use std::fmt;
use std::time::Duration;

const EXACT: usize = 16;
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = EXACT + (64 - 4) * SUB;

/// The largest lateness a histogram can record, in microseconds (the
/// driver records nanoseconds in a `u64`).
const MAX_US: u64 = u64::MAX / 1_000;

/// How late fired timers were, bucketed: the histogram behind
/// [`Stats::lateness`](crate::Stats::lateness), from
/// [`Stats::lateness_histogram`](crate::Stats::lateness_histogram), for
/// exporting as it is (a Prometheus histogram, or the `metrics` facade)
/// without bucketing it again.
///
/// # Buckets
///
/// Each bucket has an exclusive upper bound, [`LatenessBucket::le`]: it
/// counts the fired timers whose lateness was at least the previous bucket's
/// bound and **strictly below** its own, exactly, to the nanosecond. The
/// bounds are fixed (they do not depend on the data): every microsecond up to
/// 16 µs, then 8 per power of two (18, 20, ..., 32 µs, 36, 40, ..., 64 µs,
/// and so on), so each bucket is at most 12.5% of its lower edge wide and
/// every power of two of microseconds is a bound. [`bounds`](Self::bounds)
/// lists them all.
///
/// - [`buckets`](Self::buckets): the non-empty buckets, each with its own
///   count and the cumulative count up to its bound.
/// - [`count_below`](Self::count_below): the cumulative count at any bound,
///   for a fixed set of bounds (what Prometheus wants: the same `le` labels
///   in every scrape).
/// - [`count`](Self::count) and [`sum`](Self::sum): Prometheus's `_count`
///   and `_sum`.
///
/// Prometheus's `le` means "at or below"; these counts are "strictly
/// below". The two differ only for a lateness exactly equal to a bound, to
/// the nanosecond.
///
/// Counts are totals since the timer was built;
/// [`Stats::delta`](crate::Stats::delta) subtracts two snapshots bucket by
/// bucket, giving the histogram of one interval.
///
/// # Examples
///
/// Prometheus text for the bounds that are powers of two up to 64 ms:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::LatenessHistogram;
///
/// let timer = tickwheel::Timer::new();
/// for ms in [5, 15, 25] {
///     timer.sleep(Duration::from_millis(ms)).await;
/// }
/// let histogram = timer.stats().lateness_histogram;
/// let mut text = String::new();
/// for le in LatenessHistogram::bounds()
///     .filter(|b| b.as_micros().is_power_of_two() && *b <= Duration::from_millis(64))
/// {
///     let count = histogram.count_below(le);
///     text += &format!("lateness_seconds_bucket{{le=\"{}\"}} {count}\n", le.as_secs_f64());
/// }
/// text += &format!("lateness_seconds_bucket{{le=\"+Inf\"}} {}\n", histogram.count());
/// text += &format!("lateness_seconds_sum {}\n", histogram.sum().as_secs_f64());
/// text += &format!("lateness_seconds_count {}\n", histogram.count());
/// assert!(text.contains("lateness_seconds_bucket{le=\"+Inf\"} 3\n"));
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct LatenessHistogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum_us: u128,
    max_us: u64,
}

/// One bucket of a [`LatenessHistogram`], from
/// [`LatenessHistogram::buckets`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// timer.sleep(Duration::from_millis(100)).await;
/// let stats = timer.stats();
/// let bucket = stats.lateness_histogram.buckets().next().unwrap();
/// assert_eq!((bucket.count, bucket.cumulative), (1, 1));
/// assert!(bucket.le > stats.lateness.max);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatenessBucket {
    /// The bucket's exclusive upper bound: it counts lateness strictly
    /// below this (and at or above the previous bucket's bound).
    pub le: Duration,
    /// Fired timers in this bucket alone.
    pub count: u64,
    /// Fired timers in this bucket and every bucket below it: the
    /// Prometheus `_bucket{le=..}` value.
    pub cumulative: u64,
}

impl fmt::Debug for LatenessHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatenessHistogram")
            .field("count", &self.count)
            .field("sum", &self.sum())
            .field("buckets", &self.buckets().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum_us: 0,
            max_us: 0,
        }
    }
}

impl LatenessHistogram {
    pub(crate) fn record_ns(&mut self, late_ns: u64) {
        let us = late_ns / 1_000;
        self.counts[bucket_of(us)] += 1;
        self.count += 1;
        self.sum_us += u128::from(us);
        self.max_us = self.max_us.max(us);
    }

    pub(crate) fn merge(&mut self, other: &LatenessHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    /// What was recorded after `earlier` (an earlier snapshot of the same
    /// histogram), bucket by bucket, saturating at zero. The largest value
    /// of the interval is not known exactly: it is bounded by the highest
    /// bucket the interval reached and by the later snapshot's largest.
    pub(crate) fn since(&self, earlier: &LatenessHistogram) -> LatenessHistogram {
        let mut delta = LatenessHistogram::default();
        for (d, (now, then)) in delta
            .counts
            .iter_mut()
            .zip(self.counts.iter().zip(earlier.counts.iter()))
        {
            *d = now.saturating_sub(*then);
        }
        delta.count = self.count.saturating_sub(earlier.count);
        delta.sum_us = self.sum_us.saturating_sub(earlier.sum_us);
        delta.max_us = match delta.counts.iter().rposition(|&n| n > 0) {
            Some(top) => bucket_upper(top).min(self.max_us),
            None => 0,
        };
        delta
    }

    /// Number of fired timers recorded (Prometheus's `_count`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.sleep(Duration::from_millis(30)).await;
    /// assert_eq!(timer.stats().lateness_histogram.count(), 1);
    /// # }
    /// ```
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the lateness recorded (Prometheus's `_sum`), each value
    /// truncated to whole microseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.sleep(Duration::from_millis(30)).await; // on a tick boundary: on time
    /// assert_eq!(timer.stats().lateness_histogram.sum(), Duration::ZERO);
    /// # }
    /// ```
    pub fn sum(&self) -> Duration {
        let secs = u64::try_from(self.sum_us / 1_000_000).unwrap_or(u64::MAX);
        let micros = (self.sum_us % 1_000_000) as u32;
        Duration::new(secs, micros * 1_000)
    }

    /// The non-empty buckets, lowest bound first, each with its own count
    /// and the cumulative count up to its bound. Empty when nothing was
    /// recorded. The last one's `cumulative` is [`count`](Self::count).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// for _ in 0..3 {
    ///     timer.sleep(Duration::from_millis(20)).await;
    /// }
    /// let histogram = timer.stats().lateness_histogram;
    /// let total: u64 = histogram.buckets().map(|b| b.count).sum();
    /// assert_eq!(total, histogram.count());
    /// assert_eq!(histogram.buckets().last().unwrap().cumulative, 3);
    /// # }
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = LatenessBucket> + '_ {
        let mut cumulative = 0;
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count > 0)
            .map(move |(index, &count)| {
                cumulative += count;
                LatenessBucket {
                    le: bucket_bound(index),
                    count,
                    cumulative,
                }
            })
    }

    /// Every bucket bound a lateness can fall under, lowest first: the `le`
    /// values of [`buckets`](Self::buckets), empty or not. They are the same
    /// for every histogram, so a subset of them is a fixed set of
    /// Prometheus buckets.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::LatenessHistogram;
    ///
    /// let bounds: Vec<_> = LatenessHistogram::bounds().collect();
    /// assert_eq!(bounds[0], Duration::from_micros(1));
    /// assert!(bounds.contains(&Duration::from_micros(1024)));
    /// assert!(bounds.windows(2).all(|w| w[0] < w[1]));
    /// ```
    pub fn bounds() -> impl Iterator<Item = Duration> {
        (0..=bucket_of(MAX_US)).map(bucket_bound)
    }

    /// How many fired timers were less than `le` late: exact when `le` is
    /// one of the [`bounds`](Self::bounds); otherwise the count below the
    /// highest bound under `le` (at most `le`'s true count).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.sleep(Duration::from_millis(20)).await;
    /// let histogram = timer.stats().lateness_histogram;
    /// assert_eq!(histogram.count_below(Duration::from_micros(1)), 1); // on time
    /// assert_eq!(histogram.count_below(Duration::ZERO), 0);
    /// # }
    /// ```
    pub fn count_below(&self, le: Duration) -> u64 {
        let le_us = u64::try_from(le.as_micros()).unwrap_or(u64::MAX);
        // Bucket `i` lies wholly below `le` when its bound does not exceed
        // it, that is when its largest value is below `le_us`.
        let below = self
            .counts
            .iter()
            .enumerate()
            .take_while(|&(index, _)| bucket_upper(index) < le_us);
        below.map(|(_, &count)| count).sum()
    }

    /// Mean of the values recorded, in microseconds (0 if none).
    pub(crate) fn mean_us(&self) -> u64 {
        match self.count {
            0 => 0,
            n => (self.sum_us / u128::from(n)) as u64,
        }
    }

    /// Largest value recorded, in microseconds.
    pub(crate) fn max_us(&self) -> u64 {
        self.max_us
    }

    /// Upper bound of the bucket holding the `q`-quantile, capped at the max.
    pub(crate) fn quantile_us(&self, q: f64) -> u64 {
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_upper(index).min(self.max_us);
            }
        }
        self.max_us
    }
}

fn bucket_of(us: u64) -> usize {
    if us < EXACT as u64 {
        return us as usize;
    }
    let exp = 63 - us.leading_zeros(); // >= 4
    let sub = ((us >> (exp - SUB_BITS)) as usize) & (SUB - 1);
    EXACT + (exp as usize - 4) * SUB + sub
}

/// Largest value (inclusive) that lands in bucket `index`.
fn bucket_upper(index: usize) -> u64 {
    if index < EXACT {
        return index as u64;
    }
    let exp = ((index - EXACT) / SUB + 4) as u32;
    let sub = ((index - EXACT) % SUB) as u64;
    let width = 1u64 << (exp - SUB_BITS);
    ((SUB as u64 + sub) << (exp - SUB_BITS)).saturating_add(width - 1)
}

/// The exclusive bound of bucket `index`, one of those a recorded value can
/// reach (so it does not overflow).
fn bucket_bound(index: usize) -> Duration {
    Duration::from_micros(bucket_upper(index) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_and_bound_it() {
        for us in (0..5000u64).chain([u64::MAX / 1000, u64::MAX]) {
            let b = bucket_of(us);
            assert!(b < BUCKETS, "{us} -> {b}");
            assert!(bucket_upper(b) >= us, "{us} above its bucket's bound");
            if b > 0 {
                assert!(bucket_upper(b - 1) < us, "{us} belongs lower");
            }
        }
    }

    /// A value exactly on a bound counts in the bucket above it, a
    /// nanosecond below in the bucket below: "strictly below `le`" holds to
    /// the nanosecond, at the edges of the exact range and of the log range.
    #[test]
    fn counts_below_a_bound_are_exact_to_the_nanosecond() {
        for bound_us in [1u64, 16, 18, 32, 1024, 10_240, 1 << 20] {
            let le = Duration::from_micros(bound_us);
            assert!(
                LatenessHistogram::bounds().any(|b| b == le),
                "{le:?} is a bound"
            );
            let mut h = LatenessHistogram::default();
            h.record_ns(bound_us * 1_000 - 1);
            h.record_ns(bound_us * 1_000);
            assert_eq!(h.count_below(le), 1, "at {le:?}");
            let buckets: Vec<_> = h.buckets().collect();
            assert_eq!(buckets.len(), 2);
            assert_eq!(buckets[0].le, le);
            assert_eq!((buckets[0].count, buckets[0].cumulative), (1, 1));
            assert_eq!((buckets[1].count, buckets[1].cumulative), (1, 2));
        }
    }

    #[test]
    fn bounds_rise_reach_the_largest_value_and_include_every_power_of_two() {
        let bounds: Vec<_> = LatenessHistogram::bounds().collect();
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        assert!(*bounds.last().unwrap() > Duration::from_micros(MAX_US));
        for k in 0..54 {
            let p = Duration::from_micros(1 << k);
            assert!(bounds.contains(&p), "2^{k} µs");
        }
        // The largest lateness the driver can record has a bucket, and a
        // bound that does not overflow.
        let mut h = LatenessHistogram::default();
        h.record_ns(u64::MAX);
        let top = h.buckets().next().unwrap();
        assert_eq!(top.le, *bounds.last().unwrap());
    }

    #[test]
    fn count_below_between_bounds_counts_up_to_the_bound_under_it() {
        let mut h = LatenessHistogram::default();
        for us in [100, 900, 1000, 5000] {
            h.record_ns(us * 1_000);
        }
        // 1 ms is not a bound: the highest bound under it is 960 µs, below
        // which 2 of the values lie (1000 µs is not counted).
        assert_eq!(h.count_below(Duration::from_millis(1)), 2);
        assert_eq!(h.count_below(Duration::from_micros(1024)), 3);
        assert_eq!(h.count_below(Duration::MAX), 4);
        assert_eq!(h.count_below(Duration::ZERO), 0);
    }

    #[test]
    fn sum_and_count_add_up() {
        let mut h = LatenessHistogram::default();
        h.record_ns(1_500); // 1 µs once truncated
        h.record_ns(2_000_000_000);
        assert_eq!(h.count(), 2);
        assert_eq!(h.sum(), Duration::from_micros(2_000_001));
        assert_eq!(LatenessHistogram::default().sum(), Duration::ZERO);
        assert_eq!(LatenessHistogram::default().buckets().count(), 0);
    }

    #[test]
    fn since_subtracts_bucket_by_bucket_and_bounds_the_max() {
        let mut earlier = LatenessHistogram::default();
        earlier.record_ns(50_000_000); // 50 ms
        let mut later = earlier.clone();
        later.record_ns(3_000); // 3 µs
        later.record_ns(3_000);
        let delta = later.since(&earlier);
        assert_eq!(delta.count(), 2);
        assert_eq!(delta.sum(), Duration::from_micros(6));
        let buckets: Vec<_> = delta.buckets().collect();
        assert_eq!(buckets.len(), 1);
        assert_eq!(
            (buckets[0].le, buckets[0].count),
            (Duration::from_micros(4), 2)
        );
        // The interval's max is not 50 ms (that was before it).
        assert_eq!(delta.max_us(), 3);
        // Backwards or unrelated snapshots saturate instead of wrapping.
        let none = earlier.since(&later);
        assert_eq!(
            (none.count(), none.sum(), none.max_us()),
            (0, Duration::ZERO, 0)
        );
        assert_eq!(none.buckets().count(), 0);
    }
}
