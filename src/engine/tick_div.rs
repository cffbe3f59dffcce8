//! Dividing nanoseconds into ticks without a divide instruction.
//!
//! Every registration, reset and fired timer turns a deadline into its tick
//! (`ceil(ns / tick_ns)`), and the tick length is only known at run time, so
//! the compiler emits a 64-bit `div`: 15 to 40 cycles, the largest single
//! instruction cost on the path after the clock read and the atomics. The
//! divisor never changes once the timer is built, so it is replaced by a
//! multiplication by a precomputed reciprocal and a shift (Granlund and
//! Montgomery, "Division by invariant integers using multiplication", 1994,
//! theorem 4.2): with `l = ceil(log2 d)` and `m = ceil(2^(63 + l) / d)`,
//! `floor(x / d) == (x * m) >> (63 + l)` for every `x < 2^63`, and `m` fits
//! in 64 bits. Larger `x` (never a deadline: they are nanoseconds since the
//! origin, below `i64::MAX`) take the plain division, as does every `x` of a
//! 1 ns tick (`l = 0`). Every other tick has `63 + l >= 64`, so the product's
//! high word is shifted by `l - 1`: one multiplication and one shift (a
//! 128-bit shift by a run-time amount is a double-word shift, another shift
//! and a select, on the path of every registration).

/// A tick length in nanoseconds, with its reciprocal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TickDiv {
    ns: u64,
    magic: u64,
    /// How far the high 64 bits of `x * magic` shift right: `63 + l - 64`.
    shift: u32,
    /// The largest `x` the multiplication serves (`2^63 - 1`; 0 for a
    /// 1 ns tick, whose `63 + l` is below 64: it divides by 1).
    fast_max: u64,
}

impl TickDiv {
    /// `ns` must be non-zero.
    pub(crate) fn new(ns: u64) -> Self {
        assert!(ns > 0, "a tick is at least 1 ns");
        // ceil(log2 ns): 0 for 1, 64 above 2^63.
        let l = 64 - (ns - 1).leading_zeros();
        let shift = 63 + l;
        let magic = (1u128 << shift).div_ceil(u128::from(ns));
        TickDiv {
            ns,
            magic: u64::try_from(magic).expect("the reciprocal fits in 64 bits"),
            shift: shift.saturating_sub(64),
            fast_max: if l == 0 { 0 } else { (1 << 63) - 1 },
        }
    }

    /// The tick length in nanoseconds.
    pub(crate) fn ns(self) -> u64 {
        self.ns
    }

    /// `floor(x / ns)`: the last tick boundary at or before `x`.
    #[inline]
    pub(crate) fn floor(self, x: u64) -> u64 {
        if x > self.fast_max {
            return x / self.ns;
        }
        // The high word, then a shift of under 64 bits: a 128-bit shift by
        // a run-time amount costs a double-word shift and a select.
        (((u128::from(x) * u128::from(self.magic)) >> 64) as u64) >> self.shift
    }

    /// `ceil(x / ns)`: the first tick boundary at or after `x`.
    #[inline]
    pub(crate) fn ceil(self, x: u64) -> u64 {
        x.checked_sub(1).map_or(0, |x| self.floor(x) + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(d: u64, x: u64) {
        let t = TickDiv::new(d);
        assert_eq!(t.floor(x), x / d, "floor({x} / {d})");
        assert_eq!(t.ceil(x), x.div_ceil(d), "ceil({x} / {d})");
    }

    #[test]
    fn edges_of_every_divisor_shape() {
        let divisors = [
            1,
            2,
            3,
            7,
            1_000,
            999_999,
            1_000_000,
            1_000_003,
            1_500_000,
            10_000_000,
            (1 << 33) + 1,
            (1 << 62) - 1,
            1 << 62,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for d in divisors {
            for x in [0, 1, 2, d - 1, d, d.saturating_add(1)] {
                check(d, x);
            }
            for x in [d.saturating_mul(2) - 1, d.saturating_mul(2)] {
                check(d, x);
            }
            for x in [
                (1 << 63) - 2,
                (1 << 63) - 1,
                1 << 63,
                (1 << 63) + 1,
                u64::MAX - 1,
                u64::MAX,
            ] {
                check(d, x);
            }
            // Multiples and their neighbours near the top of the range.
            let q = ((1u64 << 63) - 1) / d;
            for x in [(q * d).saturating_sub(1), q * d, q * d + 1] {
                check(d, x);
            }
        }
    }

    proptest! {
        #[test]
        fn matches_division(d in 1u64.., x in any::<u64>()) {
            check(d, x);
        }

        #[test]
        fn matches_division_for_tick_lengths(d in 1u64..100_000_000_000, x in 0u64..(1 << 63)) {
            check(d, x);
        }
    }
}
