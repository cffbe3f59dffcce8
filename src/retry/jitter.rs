//! Randomising delays: the [`Jitter`] choice and the small seedable generator
//! behind it.
//!
//! Jitter only needs numbers that differ between clients (so that clients
//! that failed together do not retry together), not cryptographic quality, so
//! a SplitMix64 generator does it without a dependency. A fixed seed makes a
//! backoff sequence reproducible in tests.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How a backoff randomises each delay `d` before `max_delay` caps it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::{Backoff, Jitter};
///
/// let delays: Vec<Duration> = Backoff::constant(Duration::from_secs(1))
///     .jitter(Jitter::Equal)
///     .seed(7)
///     .max_attempts(4)
///     .into_iter()
///     .collect();
/// assert_eq!(delays.len(), 3);
/// for d in delays {
///     assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(1));
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// The delay as computed (the default).
    #[default]
    None,
    /// Uniform in `[0, d]`: spreads retries the most.
    Full,
    /// Uniform in `[d / 2, d]`: spreads retries but keeps at least half the
    /// wait.
    Equal,
}

impl Jitter {
    /// Applies this jitter to `d` with randomness from `rng`.
    pub(crate) fn apply(self, d: Duration, rng: &mut Rng) -> Duration {
        match self {
            Jitter::None => d,
            Jitter::Full => rng.up_to(d),
            Jitter::Equal => {
                let half = d / 2;
                half + rng.up_to(d - half)
            }
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): one add and a few mixes per
/// number.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// A seed that differs between processes and between calls.
    pub(crate) fn random_seed() -> u64 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x7469_636b_7768_6565); // any input: RandomState's keys do the work
        hasher.finish()
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, d]`, to the nanosecond. Delays beyond `u64::MAX`
    /// nanoseconds (about 584 years) are drawn from `[0, u64::MAX ns]`.
    pub(crate) fn up_to(&mut self, d: Duration) -> Duration {
        let max = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        // Multiply-shift maps 64 random bits onto 0..=max without division.
        let span = u128::from(max) + 1;
        let draw = (u128::from(self.next_u64()) * span) >> 64;
        Duration::from_nanos(draw as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_numbers() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let mut c = Rng::new(43);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn draws_stay_in_bounds_and_cover_the_range() {
        let mut rng = Rng::new(1);
        let d = Duration::from_millis(100);
        let draws: Vec<Duration> = (0..10_000).map(|_| rng.up_to(d)).collect();
        assert!(draws.iter().all(|x| *x <= d));
        // Uniform draws reach both ends of the range in 10,000 tries.
        assert!(draws.iter().any(|x| *x < Duration::from_millis(1)));
        assert!(draws.iter().any(|x| *x > Duration::from_millis(99)));
        assert_eq!(rng.up_to(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn jitter_bounds() {
        let mut rng = Rng::new(9);
        let d = Duration::from_secs(2);
        for _ in 0..10_000 {
            assert_eq!(Jitter::None.apply(d, &mut rng), d);
            assert!(Jitter::Full.apply(d, &mut rng) <= d);
            let equal = Jitter::Equal.apply(d, &mut rng);
            assert!(equal >= d / 2 && equal <= d, "{equal:?}");
        }
        // Huge delays saturate instead of overflowing.
        assert!(Jitter::Full.apply(Duration::MAX, &mut rng) <= Duration::MAX);
        let equal = Jitter::Equal.apply(Duration::MAX, &mut rng);
        assert!(equal >= Duration::MAX / 2);
    }

    #[test]
    fn random_seeds_differ() {
        assert_ne!(Rng::random_seed(), Rng::random_seed());
    }
}
