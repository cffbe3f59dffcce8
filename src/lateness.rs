//! The lateness histogram each wheel records its fired timers into, merged
//! and summarised by `Timer::stats` (see `Lateness` in `stats.rs` for the
//! bucket layout and the accuracy it gives).

use std::fmt;

const EXACT: usize = 16;
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = EXACT + (64 - 4) * SUB;

/// Lateness histogram in microseconds.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum_us: u128,
    max_us: u64,
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("max_us", &self.max_us)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum_us: 0,
            max_us: 0,
        }
    }
}

impl Histogram {
    pub(crate) fn record_ns(&mut self, late_ns: u64) {
        let us = late_ns / 1_000;
        self.counts[bucket_of(us)] += 1;
        self.count += 1;
        self.sum_us += u128::from(us);
        self.max_us = self.max_us.max(us);
    }

    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    /// Number of values recorded.
    pub(crate) fn count(&self) -> u64 {
        self.count
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
}
