//! The system's monotonic clock, read without going through
//! `std::time::Instant`, and the one thing the crate assumes of std.
//!
//! A sleep made with a duration (`sleep(d)`, `timeout(d, f)`) reads the
//! clock once, for its deadline's offset from the timer's origin. Through
//! `Instant`, that is a read, then `Instant::duration_since` and a `u128`
//! conversion: about 90 instructions more than the read itself (W2: 756 ->
//! 666 per operation, about 6 ns here; BENCHMARKS.md, the eleventh stop).
//! Here it is the read, a multiplication and an addition.
//!
//! **What this relies on.** On Linux and Android, std's `Instant::now()`
//! reads `clock_gettime(CLOCK_MONOTONIC)` (std documents that table as what
//! it does today, and says it may change), and its `Debug` shows the
//! `timespec` it holds. Nothing trusts either blindly:
//! - a timer reads this clock only after [`reading_at`] has seen a fresh
//!   `Instant` fall between two raw reads; the timer's origin is then read
//!   from its `Debug`, so a raw offset is exactly what `Instant` would give;
//! - every driver pass brackets the `Instant` it reads between two raw
//!   reads, and turns the raw read off for good if they disagree
//!   (`MonotonicFrame` in `clock.rs`).
//!
//! The test `std_instant_reads_clock_monotonic` below fails loudly if std's
//! `Instant` stops reading this clock, or stops showing it. Elsewhere (and
//! in the loom models), [`now_ns`] answers `None` and every read goes
//! through `Instant`.

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
        // call, and `clock_gettime` writes nothing else of ours. Every Linux
        // kernel has `CLOCK_MONOTONIC`; a failure is reported, not assumed
        // away.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        // The kernel keeps `tv_sec` at or above 0 (time namespaces too) and
        // `tv_nsec` below 10^9; the sum fits a `u64` for 584 years.
        (status == 0 && ts.tv_sec >= 0)
            .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom))))]
    None
}

/// The `CLOCK_MONOTONIC` reading `origin` stands for, if std's `Instant` is
/// seen to read that clock: a fresh `Instant` read between two raw reads
/// must fall between them. The reading is taken from `Instant`'s `Debug`,
/// the `timespec` std holds on these platforms (no other API shows it); if
/// that ever changes, this answers `None` and the timer reads `Instant`.
pub(crate) fn reading_at(origin: std::time::Instant) -> Option<u64> {
    let before = now_ns()?;
    let now = reading_of(std::time::Instant::now())?;
    let after = now_ns()?;
    (before..=after)
        .contains(&now)
        .then(|| reading_of(origin))?
}

/// `instant`'s `timespec` in nanoseconds, read from its `Debug`.
fn reading_of(instant: std::time::Instant) -> Option<u64> {
    let debug = format!("{instant:?}");
    let field = |name: &str| -> Option<u64> {
        let rest = &debug[debug.find(name)? + name.len()..];
        let digits = rest.trim_start_matches(|c: char| !c.is_ascii_digit());
        let end = digits.find(|c: char| !c.is_ascii_digit())?;
        digits[..end].parse().ok()
    };
    field("tv_sec:")?
        .checked_mul(1_000_000_000)?
        .checked_add(field("tv_nsec:")?)
}

#[cfg(test)]
#[cfg(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom)))]
mod tests {
    use super::*;

    /// It reads on this platform, and only forward.
    #[test]
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
    /// `CLOCK_MONOTONIC`, and shows its `timespec` in its `Debug`. The
    /// reading must lie between two reads of that clock. If std moves to
    /// another clock (or another `Debug`), this fails, and every timer reads
    /// `Instant` until it is looked at.
    #[test]
    fn std_instant_reads_clock_monotonic() {
        for _ in 0..1_000 {
            let before = now_ns().unwrap();
            let instant = std::time::Instant::now();
            let after = now_ns().unwrap();
            let reading = reading_of(instant).expect("a timespec in Instant's Debug");
            assert!(
                (before..=after).contains(&reading),
                "std's Instant ({instant:?}) is not CLOCK_MONOTONIC ({before}..={after})"
            );
        }
        let origin = std::time::Instant::now();
        let later = origin + std::time::Duration::from_millis(1500);
        assert_eq!(
            reading_at(later),
            Some(reading_at(origin).unwrap() + 1_500_000_000)
        );
    }
}
