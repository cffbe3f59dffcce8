//! [`Backoff`]: the delays between attempts, as an iterator.
//!
//! One type covers constant and exponential backoff (a constant backoff is
//! an exponential one with factor 1), so every option (jitter, caps, seed)
//! exists once. The arithmetic saturates: no setting or attempt count can
//! overflow, panic or produce a delay shorter than the formula asks for
//! (before jitter).

use std::time::Duration;

use super::jitter::{Jitter, Rng};

/// The delays a retry waits between attempts: an `Iterator<Item = Duration>`
/// yielding one delay per retry, and ending when retries should stop.
///
/// Built with [`Backoff::constant`] or [`Backoff::exponential`] and the
/// options below. Any other `Iterator<Item = Duration>` works with
/// [`Timer::retry`](crate::Timer::retry) too.
///
/// The `n`-th delay (from 0) is computed as:
///
/// 1. `initial * factor^n`, saturating at `Duration::MAX`;
/// 2. randomised by [`jitter`](Backoff::jitter);
/// 3. capped by [`max_delay`](Backoff::max_delay).
///
/// The sequence ends after `max_attempts - 1` delays (one per retry), or
/// before the delay that would take the sum of all delays past
/// [`max_total_delay`](Backoff::max_total_delay).
///
/// # Defaults
///
/// | option | default |
/// |---|---|
/// | `factor` | 1.0 for [`constant`](Backoff::constant), 2.0 for [`exponential`](Backoff::exponential) |
/// | `max_attempts` | 4 (the first call and 3 retries) |
/// | `max_delay` | none |
/// | `max_total_delay` | none |
/// | `jitter` | [`Jitter::None`] |
/// | `seed` | random per run of delays |
///
/// A `Backoff` is `Copy` settings: [`into_iter`](IntoIterator::into_iter)
/// (what `Timer::retry` and a `for` loop call) yields a fresh run of
/// [`Delays`] each time, so one value can be stored and reused.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::Backoff;
///
/// let ms = Duration::from_millis;
/// let backoff = Backoff::exponential(ms(100))
///     .factor(3.0)
///     .max_delay(ms(2_000))
///     .max_attempts(6);
/// let delays: Vec<Duration> = backoff.into_iter().collect();
/// assert_eq!(delays, [ms(100), ms(300), ms(900), ms(2_000), ms(2_000)]);
/// // Settings, not state: each iteration starts afresh.
/// let again: Vec<Duration> = backoff.into_iter().collect();
/// assert_eq!(again, delays);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use = "a backoff does nothing until it is iterated or given to `Timer::retry`"]
pub struct Backoff {
    initial: Duration,
    factor: f64,
    max_attempts: usize,
    max_delay: Option<Duration>,
    max_total_delay: Option<Duration>,
    jitter: Jitter,
    seed: Option<u64>,
}

/// One run of a [`Backoff`]'s delays: what `Backoff::into_iter` returns,
/// holding the iteration state (counters and the jitter's random numbers),
/// so that the settings can be kept and reused while each run starts afresh.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::{Backoff, Delays};
///
/// let settings = Backoff::exponential(Duration::from_millis(100));
/// let mut run: Delays = settings.into_iter();
/// assert_eq!(run.next(), Some(Duration::from_millis(100)));
/// assert_eq!(run.next(), Some(Duration::from_millis(200)));
/// // A new run starts afresh from the same settings:
/// assert_eq!(settings.into_iter().next(), Some(Duration::from_millis(100)));
/// ```
#[derive(Debug, Clone)]
pub struct Delays {
    settings: Backoff,
    rng: Option<Rng>,
    retries: usize,
    total: Duration,
}

impl Backoff {
    /// The same `delay` before every retry.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let delays: Vec<Duration> = Backoff::constant(Duration::from_secs(3)).into_iter().collect();
    /// assert_eq!(delays, [Duration::from_secs(3); 3]);
    /// ```
    pub const fn constant(delay: Duration) -> Self {
        Self::with_factor(delay, 1.0)
    }

    /// `initial` before the first retry, then `factor` (default 2) times the
    /// previous delay before each next one: `initial * factor^n`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let ms = Duration::from_millis;
    /// let delays: Vec<Duration> = Backoff::exponential(ms(50)).into_iter().collect();
    /// assert_eq!(delays, [ms(50), ms(100), ms(200)]);
    /// ```
    pub const fn exponential(initial: Duration) -> Self {
        Self::with_factor(initial, 2.0)
    }

    const fn with_factor(initial: Duration, factor: f64) -> Self {
        Backoff {
            initial,
            factor,
            max_attempts: 4,
            max_delay: None,
            max_total_delay: None,
            jitter: Jitter::None,
            seed: None,
        }
    }

    /// Growth per retry. Values below 1, and NaN, are taken as 1 (a constant
    /// backoff); infinity saturates the second delay at `Duration::MAX`
    /// (then capped by `max_delay`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let s = Duration::from_secs;
    /// let grown: Vec<Duration> = Backoff::exponential(s(1)).factor(3.0).into_iter().collect();
    /// assert_eq!(grown, [s(1), s(3), s(9)]);
    /// let clamped: Vec<Duration> = Backoff::exponential(s(1)).factor(0.5).into_iter().collect();
    /// assert_eq!(clamped, [s(1); 3]);
    /// ```
    pub const fn factor(mut self, factor: f64) -> Self {
        self.factor = if factor >= 1.0 { factor } else { 1.0 }; // NaN fails `>=` too
        self
    }

    /// How many times the operation may be called in all, the first call
    /// included: the backoff yields `max_attempts - 1` delays. 0 is taken as
    /// 1 (no retries). `usize::MAX` retries for as long as the other caps
    /// allow.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// // 5 calls in all: the first and 4 retries, so 4 waits.
    /// let backoff = Backoff::constant(Duration::from_secs(3)).max_attempts(5);
    /// assert_eq!(backoff.into_iter().count(), 4);
    /// ```
    pub const fn max_attempts(mut self, max_attempts: usize) -> Self {
        self.max_attempts = if max_attempts == 0 { 1 } else { max_attempts };
        self
    }

    /// Caps each delay, after jitter: a jittered delay is never longer than
    /// `max_delay`, and with [`Jitter::Equal`] a delay whose half is past the
    /// cap is exactly the cap.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let s = Duration::from_secs;
    /// let delays: Vec<Duration> = Backoff::exponential(s(1)).max_attempts(6).max_delay(s(5)).into_iter().collect();
    /// assert_eq!(delays, [s(1), s(2), s(4), s(5), s(5)]);
    /// ```
    pub const fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = Some(max_delay);
        self
    }

    /// Caps the time spent waiting in all: the backoff ends instead of
    /// yielding a delay that would take the sum of its delays past
    /// `max_total`. (To cap the time since the first attempt, including the
    /// attempts themselves, see [`Retry::max_elapsed`](super::Retry::max_elapsed).)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let ms = Duration::from_millis;
    /// let delays: Vec<Duration> = Backoff::exponential(ms(100))
    ///     .max_attempts(usize::MAX)
    ///     .max_total_delay(ms(1_000))
    ///     .into_iter()
    ///     .collect();
    /// assert_eq!(delays, [ms(100), ms(200), ms(400)]); // + 800 would pass 1 s
    /// ```
    pub const fn max_total_delay(mut self, max_total: Duration) -> Self {
        self.max_total_delay = Some(max_total);
        self
    }

    /// Randomises each delay; see [`Jitter`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::{Backoff, Jitter};
    ///
    /// let delays: Vec<Duration> = Backoff::exponential(Duration::from_millis(100))
    ///     .jitter(Jitter::Full)
    ///     .into_iter()
    ///     .collect();
    /// assert_eq!(delays.len(), 3);
    /// assert!(delays[0] <= Duration::from_millis(100));
    /// assert!(delays[2] <= Duration::from_millis(400));
    /// ```
    pub const fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Seeds the jitter, so the sequence is the same on every run (for
    /// tests). Without a seed each backoff draws its own, from std's
    /// `RandomState`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::{Backoff, Jitter};
    ///
    /// let jittered = || Backoff::exponential(Duration::from_millis(100)).jitter(Jitter::Full);
    /// let a: Vec<Duration> = jittered().seed(42).into_iter().collect();
    /// let b: Vec<Duration> = jittered().seed(42).into_iter().collect();
    /// assert_eq!(a, b);
    /// ```
    pub const fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The delay before the first retry, before jitter and caps.
    #[cfg(feature = "tower")]
    pub(crate) fn initial(&self) -> Duration {
        self.initial
    }

    /// `initial * factor^n`, saturating.
    fn raw(&self, n: usize) -> Duration {
        if self.factor == 1.0 || self.initial.is_zero() {
            return self.initial;
        }
        let exponent = i32::try_from(n).unwrap_or(i32::MAX);
        // Nanoseconds in f64 are exact for the usual initial delays and
        // integer factors, so 100 ms * 2^n is exactly 100 ms * 2^n.
        let nanos = (self.initial.as_nanos() as f64 * self.factor.powi(exponent)).round();
        if nanos.is_finite() && nanos < Duration::MAX.as_nanos() as f64 {
            let nanos = nanos as u128;
            let secs = (nanos / 1_000_000_000) as u64;
            Duration::new(secs, (nanos % 1_000_000_000) as u32)
        } else {
            Duration::MAX
        }
    }
}

/// Each iteration starts a fresh run of delays: a `Backoff` is settings
/// only, so the same value can be stored and handed to many retries.
impl IntoIterator for Backoff {
    type Item = Duration;
    type IntoIter = Delays;

    fn into_iter(self) -> Delays {
        Delays {
            settings: self,
            rng: None,
            retries: 0,
            total: Duration::ZERO,
        }
    }
}

impl Iterator for Delays {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let settings = &self.settings;
        if self.retries >= settings.max_attempts - 1 {
            return None;
        }
        let mut delay = settings.raw(self.retries);
        if settings.jitter != Jitter::None {
            let seed = settings.seed;
            let rng = self
                .rng
                .get_or_insert_with(|| Rng::new(seed.unwrap_or_else(Rng::random_seed)));
            delay = settings.jitter.apply(delay, rng);
        }
        if let Some(max) = settings.max_delay {
            delay = delay.min(max);
        }
        let total = self.total.saturating_add(delay);
        if settings.max_total_delay.is_some_and(|max| total > max) {
            self.retries = settings.max_attempts; // stay ended
            return None;
        }
        self.total = total;
        self.retries += 1;
        Some(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn exponential_is_initial_times_factor_to_the_n() {
        let delays: Vec<_> = Backoff::exponential(ms(100))
            .max_attempts(8)
            .into_iter()
            .collect();
        assert_eq!(
            delays,
            [
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1600),
                ms(3200),
                ms(6400)
            ]
        );
        let delays: Vec<_> = Backoff::exponential(ms(10))
            .factor(1.5)
            .max_attempts(5)
            .into_iter()
            .collect();
        assert_eq!(
            delays,
            [
                ms(10),
                ms(15),
                Duration::from_micros(22_500),
                Duration::from_micros(33_750)
            ]
        );
    }

    #[test]
    fn constant_repeats_and_stops_after_max_attempts() {
        let delays: Vec<_> = Backoff::constant(ms(7))
            .max_attempts(3)
            .into_iter()
            .collect();
        assert_eq!(delays, [ms(7), ms(7)]);
        assert_eq!(
            Backoff::constant(ms(7)).max_attempts(1).into_iter().count(),
            0
        );
        assert_eq!(
            Backoff::constant(ms(7)).max_attempts(0).into_iter().count(),
            0
        );
        assert_eq!(
            Backoff::constant(ms(7)).into_iter().count(),
            3,
            "default: 3 retries"
        );
    }

    #[test]
    fn max_delay_caps_after_jitter() {
        // Equal jitter of 1 s is at least 500 ms; a 300 ms cap applied after
        // it yields exactly 300 ms every time.
        let delays: Vec<_> = Backoff::constant(ms(1000))
            .jitter(Jitter::Equal)
            .max_delay(ms(300))
            .max_attempts(50)
            .into_iter()
            .collect();
        assert!(delays.iter().all(|d| *d == ms(300)), "{delays:?}");
        // Full jitter of a huge delay, capped, stays within the cap.
        let delays: Vec<_> = Backoff::exponential(ms(100))
            .factor(10.0)
            .jitter(Jitter::Full)
            .max_delay(ms(500))
            .max_attempts(40)
            .into_iter()
            .collect();
        assert_eq!(delays.len(), 39);
        assert!(delays.iter().all(|d| *d <= ms(500)));
    }

    /// A `Backoff` is settings: a run half consumed, or a `seed` set after
    /// it started, never changes what the next run yields.
    #[test]
    fn each_run_starts_afresh_from_the_same_settings() {
        let backoff = Backoff::exponential(ms(10))
            .jitter(Jitter::Full)
            .seed(9)
            .max_attempts(6);
        let mut first = backoff.into_iter();
        let head: Vec<_> = first.by_ref().take(2).collect();
        let whole: Vec<_> = backoff.into_iter().collect();
        assert_eq!(whole.len(), 5);
        assert_eq!(head, whole[..2]);
        assert_eq!(first.collect::<Vec<_>>(), whole[2..]);
        let reseeded = backoff.seed(9);
        assert_eq!(reseeded, backoff);
        assert_eq!(reseeded.into_iter().collect::<Vec<_>>(), whole);
    }

    #[test]
    fn jitter_is_deterministic_with_a_seed_and_bounded() {
        let make = |seed| {
            Backoff::exponential(ms(100))
                .jitter(Jitter::Full)
                .seed(seed)
                .max_attempts(10)
        };
        let a: Vec<_> = make(5).into_iter().collect();
        let b: Vec<_> = make(5).into_iter().collect();
        let c: Vec<_> = make(6).into_iter().collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let plain: Vec<_> = Backoff::exponential(ms(100))
            .max_attempts(10)
            .into_iter()
            .collect();
        for (jittered, full) in a.iter().zip(&plain) {
            assert!(jittered <= full);
        }
        let equal: Vec<_> = Backoff::exponential(ms(100))
            .jitter(Jitter::Equal)
            .max_attempts(10)
            .into_iter()
            .collect();
        for (jittered, full) in equal.iter().zip(&plain) {
            assert!(*jittered >= *full / 2 && jittered <= full);
        }
    }

    #[test]
    fn max_total_delay_ends_before_the_sum_passes_it() {
        let delays: Vec<_> = Backoff::exponential(ms(100))
            .max_attempts(usize::MAX)
            .max_total_delay(ms(1000))
            .into_iter()
            .collect();
        // 100 + 200 + 400 = 700; adding 800 would pass 1000.
        assert_eq!(delays, [ms(100), ms(200), ms(400)]);
    }

    #[test]
    fn bad_factors_and_huge_values_saturate_without_panicking() {
        let nan: Vec<_> = Backoff::exponential(ms(5))
            .factor(f64::NAN)
            .into_iter()
            .collect();
        assert_eq!(nan, [ms(5); 3]);
        let shrinking: Vec<_> = Backoff::exponential(ms(5))
            .factor(0.5)
            .into_iter()
            .collect();
        assert_eq!(shrinking, [ms(5); 3]);
        let negative: Vec<_> = Backoff::exponential(ms(5))
            .factor(-3.0)
            .into_iter()
            .collect();
        assert_eq!(negative, [ms(5); 3]);
        let inf: Vec<_> = Backoff::exponential(ms(5))
            .factor(f64::INFINITY)
            .into_iter()
            .collect();
        assert_eq!(inf, [ms(5), Duration::MAX, Duration::MAX]);
        let huge: Vec<_> = Backoff::exponential(Duration::MAX)
            .max_attempts(usize::MAX)
            .into_iter()
            .take(100)
            .collect();
        assert!(huge.iter().all(|d| *d == Duration::MAX));
        // Far past 2^31 retries the exponent saturates too.
        let mut far = Backoff::exponential(ms(1))
            .max_attempts(usize::MAX)
            .into_iter();
        far.retries = usize::MAX - 2;
        assert_eq!(far.next(), Some(Duration::MAX));
        assert_eq!(far.next(), None);
    }
}
