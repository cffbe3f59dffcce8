//! Deterministic pseudo-random numbers (xorshift64*), so every system gets
//! the same deadlines in the same order. A leaf: every workload uses it, it
//! uses nothing of this binary.

use std::time::Duration;

pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value but 0 works; 0 is mapped away).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_f64() * n as f64) as usize).min(n - 1)
    }

    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn between(&mut self, lo: Duration, hi: Duration) -> Duration {
        lo + (hi - lo).mul_f64(self.next_f64())
    }

    /// `count` durations uniform in `[lo, hi)`.
    pub fn durations(&mut self, count: usize, lo: Duration, hi: Duration) -> Vec<Duration> {
        (0..count).map(|_| self.between(lo, hi)).collect()
    }
}
