//! The system's monotonic clock, read without going through
//! `std::time::Instant`.
//!
//! A sleep made with a duration (`sleep(d)`, `timeout(d, f)`) reads the
//! clock once, for its deadline's offset from the timer's origin. Through
//! `Instant`, that is a read, then `Instant::duration_since` and a `u128`
//! conversion: about 100 instructions more than the read itself (W2: 756 ->
//! 655 per operation, about 9 ns here; BENCHMARKS.md, the eleventh stop).
//! Here it is the read and two multiplications.
//!
//! **What this relies on.** On Linux and Android, std's `Instant::now()`
//! reads `clock_gettime(CLOCK_MONOTONIC)` (std documents that table as what
//! it does today, and says it may change). A deadline taken from this read
//! is only as right as that is. So `clock.rs` never trusts it blindly:
//! - its frame is calibrated against `Instant`, the raw read first, so it
//!   can only place a deadline later than `Instant` would, by the few
//!   nanoseconds between the two reads, never earlier;
//! - every driver pass checks it against the `Instant` the pass reads anyway,
//!   and moves the frame back at once if the raw clock has fallen behind.
//!
//! The test `std_instant_reads_clock_monotonic` below fails loudly if
//! std's `Instant` stops reading this clock. Elsewhere (and in the loom
//! models), [`now_ns`] answers `None` and every read goes through
//! `Instant`.

/// Nanoseconds on `CLOCK_MONOTONIC`, or `None` where this build does not
/// read it (then callers read `Instant`).
#[inline]
pub(crate) fn now_ns() -> Option<u64> {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable `timespec` that outlives the
        // call, and `clock_gettime` writes nothing else. Every Linux kernel
        // has `CLOCK_MONOTONIC`; a failure is reported, not assumed away.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        // Time since boot: `tv_sec` is never negative, `tv_nsec` below
        // 10^9, and the sum fits a `u64` for 584 years of uptime.
        (status == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom))))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// It reads on this platform, and only forward.
    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn it_reads_and_never_goes_back() {
        let first = now_ns().expect("CLOCK_MONOTONIC is read on Linux");
        let mut last = first;
        for _ in 0..10_000 {
            let now = now_ns().expect("every read succeeds");
            assert!(now >= last, "went back from {last} to {now}");
            last = now;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = now_ns().expect("every read succeeds");
        assert!(
            later - first >= 2_000_000,
            "{} ns over a 2 ms sleep",
            later - first
        );
    }

    /// What this module relies on: std's `Instant::now()` reads
    /// `CLOCK_MONOTONIC`. Its `Debug` shows the `timespec` it holds on
    /// Linux, which must lie between two reads of that clock. If std moves
    /// to another clock (or another `Debug`), this fails, and the frame in
    /// `clock.rs` needs a look before anything else.
    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn std_instant_reads_clock_monotonic() {
        let field = |debug: &str, name: &str| -> u64 {
            let start = debug.find(name).expect(name) + name.len();
            let digits: String = debug[start..]
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().expect("a number")
        };
        for _ in 0..1_000 {
            let before = now_ns().unwrap();
            let debug = format!("{:?}", std::time::Instant::now());
            let after = now_ns().unwrap();
            let instant = field(&debug, "tv_sec") * 1_000_000_000 + field(&debug, "tv_nsec");
            assert!(
                (before..=after).contains(&instant),
                "std's Instant ({debug}) is not CLOCK_MONOTONIC ({before}..={after})"
            );
        }
    }
}
