//! Conversion between tokio instants and wheel ticks.
//!
//! Everything inside the wheel is measured in nanoseconds since the timer's
//! `origin` and in ticks of `tick_ns` nanoseconds. The origin is the instant
//! the timer was built, moved back to the last point of tokio's millisecond
//! grid when the tick is a whole number of milliseconds (`on_tokio_grid`, in
//! `tokio_compat.rs`),
//! so that every tick boundary is a millisecond at which tokio fires its own
//! timers and the driver's tokio sleep adds no second rounding.
//! This file owns the rounding rules that make the precision contract hold:
//! a deadline maps to the *next* tick boundary at or after it (the ceiling of
//! its division by the tick, [`TickDiv::ceil`]), and the driver only processes
//! a tick once the clock has reached its boundary (the floor of now's).
//!
//! It also owns where "now" comes from: [`TimeSource`] reads the clock of the
//! runtime that hosts the timer's driver, whichever runtime (or none) the
//! caller happens to be in; a new sleep on the system clock reads it through
//! [`MonotonicFrame`], the one piece of shared state here (an atomic that a
//! driver pass may turn off for good).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::runtime::{self, Handle, RuntimeFlavor};
use tokio::time::Instant;

use crate::engine::context;
use crate::engine::raw::monotonic;
use crate::engine::tick_div::TickDiv;
use crate::engine::trace::debug;
use crate::engine::wheel::SATURATED;

/// Where a timer reads the time: always its driver's runtime's clock, never
/// the ambient one, so a sleep made or reset from another runtime (whose test
/// clock may be paused elsewhere) still compares deadlines on the clock that
/// fires it.
#[derive(Debug, Clone)]
pub(crate) enum TimeSource {
    /// The system's monotonic clock. A multi-thread runtime's clock cannot be
    /// paused, so it always reads exactly this (tokio's test clock, unpaused,
    /// is the system clock too), and reading it costs no runtime lookup.
    System,
    /// The clock of a runtime that tests may pause and advance (a
    /// current-thread runtime), read inside that runtime's context.
    Runtime { handle: Handle, id: runtime::Id },
}

impl TimeSource {
    /// The source for a driver hosted on `handle`'s runtime.
    pub(crate) fn for_runtime(handle: &Handle) -> Self {
        match handle.runtime_flavor() {
            RuntimeFlavor::MultiThread => TimeSource::System,
            // Without tokio's `test-util` (the one build in which a runtime's
            // clock can be paused: `time::pause`, `Builder::start_paused` and
            // `time::advance` exist only there) no clock can be paused, so
            // every runtime's clock is the system's: release builds read it
            // directly, with no runtime lookup. Cargo unifies features, so
            // this is the answer for the whole program: if any crate in it
            // (a test's dev-dependencies, say) turns `test-util` on, clocks
            // may pause and every read takes the exact path. Answered at
            // compile time by whether `Builder::start_paused` exists.
            _ if !has_inherent_start_paused!(tokio::runtime::Builder) => TimeSource::System,
            // Current-thread runtimes, and any flavor tokio adds later: exact
            // whatever the flavor's clock does.
            _ => TimeSource::Runtime {
                handle: handle.clone(),
                id: handle.id(),
            },
        }
    }

    /// Whether this source's clock can be paused (then time moves only when
    /// the runtime advances it, which a reading must never miss).
    pub(crate) fn may_pause(&self) -> bool {
        matches!(self, TimeSource::Runtime { .. })
    }

    /// The driver's runtime's `Instant::now()`.
    pub(crate) fn now(&self) -> Instant {
        match self {
            TimeSource::System => Instant::from_std(std::time::Instant::now()),
            TimeSource::Runtime { handle, id } => {
                // Entered unless the ambient clock is this runtime's.
                let _context = (context::current_runtime() != Some(*id)).then(|| handle.enter());
                Instant::now()
            }
        }
    }
}

/// Whether type `$ty` has an inherent method `start_paused(&mut self, bool)`
/// returning a type that takes space (tokio's returns `&mut Self`), decided
/// at compile time. A path `<$ty>::start_paused` resolves to an inherent
/// method when there is one, and only otherwise to the method of a trait in
/// scope; the fallback trait here returns `()`, which takes no space: the
/// size of the type returned says which one was found. A change of the
/// inherent method's parameters fails to compile; a return type that takes
/// no space would read as absent, which the test
/// `the_test_util_probe_sees_the_inherent_method` catches.
macro_rules! has_inherent_start_paused {
    ($ty:ty) => {{
        // Unused whenever the inherent method exists.
        #[allow(dead_code)]
        trait Fallback {
            fn start_paused(&mut self, _: bool) {}
        }
        impl Fallback for $ty {}
        fn found<R>(_: fn(&'static mut $ty, bool) -> R) -> bool {
            std::mem::size_of::<R>() > 0
        }
        found(<$ty>::start_paused)
    }};
}
use has_inherent_start_paused;

/// The timer's frame of reference: its origin and its tick length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: Instant,
    tick: TickDiv,
    /// The latest deadline (an offset) that can ever fire: the clock's last
    /// reachable tick boundary, or just short of the horizon where that
    /// boundary is the horizon itself (see [`Clock::passed`]).
    reach: i64,
}

impl Clock {
    /// `tick_ns` must be non-zero (the builder guarantees it; `TickDiv::new`
    /// checks it).
    pub(crate) fn new(origin: Instant, tick_ns: u64) -> Self {
        let tick = TickDiv::new(tick_ns);
        Clock {
            origin,
            tick,
            // The last tick's boundary (at most `SATURATED`) is within the
            // clock.
            reach: (tick.floor(SATURATED) * tick_ns).min(SATURATED - 1) as i64,
        }
    }

    /// Signed nanoseconds from the origin to `t`, saturating at `i64` bounds
    /// (about 292 years either way): deadlines further out mean "never", yet
    /// stay registered so that shutdown still wakes them.
    ///
    /// Signed so that a deadline before the timer was built (an `Instant`
    /// captured earlier) round-trips exactly through [`Clock::instant_at`].
    pub(crate) fn offset(&self, t: Instant) -> i64 {
        if t >= self.origin {
            saturate_i64(t.duration_since(self.origin))
        } else {
            saturate_i64(self.origin.duration_since(t)).saturating_neg()
        }
    }

    /// The offset of `now + d`, saturating instead of overflowing.
    pub(crate) fn offset_after(&self, now: Instant, d: Duration) -> i64 {
        Self::after(self.offset(now), d)
    }

    /// The offset `d` after offset `now`, saturating.
    #[inline]
    pub(crate) fn after(now: i64, d: Duration) -> i64 {
        now.saturating_add(saturate_i64(d))
    }

    /// The instant at a signed offset from the origin. Offsets too large for
    /// the platform's `Instant` saturate to a far-future instant.
    pub(crate) fn instant_at(&self, offset: i64) -> Instant {
        let magnitude = Duration::from_nanos(offset.unsigned_abs());
        if offset >= 0 {
            self.origin
                .checked_add(magnitude)
                .unwrap_or_else(|| far_future(self.origin))
        } else {
            self.origin.checked_sub(magnitude).unwrap_or(self.origin)
        }
    }

    /// The instant at which tick `tick` begins, or `None` if the platform's
    /// `Instant` cannot express it (then no clock ever reaches it either).
    pub(crate) fn tick_instant(&self, tick: u64) -> Option<Instant> {
        let ns = tick.checked_mul(self.tick.ns())?;
        self.origin.checked_add(Duration::from_nanos(ns))
    }

    /// Nanoseconds since the origin as the wheel stores them: instants before
    /// the origin clamp to 0 (they are already due).
    pub(crate) fn wheel_ns(offset: i64) -> u64 {
        offset.max(0) as u64
    }

    /// Whether a deadline has passed by the clock reading `now` (both
    /// offsets from the origin), for the paths that compare a deadline
    /// with the clock instead of waiting for the wheel: never for one the
    /// wheel never fires, past the clock's last reachable tick boundary or
    /// at the horizon. The clock saturates at the horizon too, so a reading
    /// there means only "at or past it": compared as plain numbers, every
    /// saturated deadline (`Duration::MAX`, or anything 292 years away)
    /// would count as passed once the clock got that far.
    pub(crate) fn passed(&self, deadline: i64, now: i64) -> bool {
        deadline <= now && deadline <= self.reach
    }

    /// `now` as the driver needs it: nanoseconds since the origin, and the
    /// last tick whose boundary is at or before `now`.
    pub(crate) fn now_tick(&self, now: Instant) -> (u64, u64) {
        let ns = Self::wheel_ns(self.offset(now));
        (ns, self.tick.floor(ns))
    }
}

/// A timer's frame on the raw monotonic clock ([`monotonic`], the clock
/// std's `Instant` reads): the raw reading at the timer's origin, so a new
/// sleep's offset is one raw read less this. Only for a timer that reads
/// the system clock ([`TimeSource::System`]), and only once std's `Instant`
/// is seen to read that clock ([`monotonic::reading_at`]); off otherwise.
///
/// It is exact: a raw read is the value `Instant::now()` would have given
/// at that moment, so a deadline from it is the one `Instant` would give.
/// Each driver pass checks that against the `Instant` it reads anyway: a
/// raw read just before it and one just after must bracket it. If they
/// ever do not (std's `Instant` moved to another clock), the frame turns
/// off for good and every later read goes through `Instant`.
pub(crate) struct MonotonicFrame(AtomicI64);

impl MonotonicFrame {
    const OFF: i64 = i64::MIN;

    /// The frame of `clock` read from `source`.
    pub(crate) fn new(clock: &Clock, source: &TimeSource) -> Self {
        let origin = matches!(source, TimeSource::System)
            .then(|| monotonic::reading_at(clock.origin.into_std()))
            .flatten();
        let frame = origin.and_then(|raw| i64::try_from(raw).ok());
        MonotonicFrame(AtomicI64::new(frame.unwrap_or(Self::OFF)))
    }

    /// Now as an offset from the origin, from one raw read, for a new
    /// deadline; `None` if the frame is off.
    #[inline]
    pub(crate) fn offset(&self) -> Option<i64> {
        let frame = self.0.load(Ordering::Relaxed);
        if frame == Self::OFF {
            return None;
        }
        Some((monotonic::now_ns()? as i64).saturating_sub(frame))
    }

    /// The driver's reading of now (`read`, which answers it and its offset
    /// from the origin), checked against a raw read just before it and one
    /// just after: unless they bracket it, the frame turns off. No raw read
    /// if the frame is off when the check starts (only the driver's pass
    /// turns it off, and passes run one at a time).
    pub(crate) fn check<T>(&self, read: impl FnOnce() -> (T, i64)) -> T {
        let frame = self.0.load(Ordering::Relaxed);
        let before = (frame != Self::OFF).then(monotonic::now_ns).flatten();
        let (now, offset) = read();
        let raw = |raw: u64| (raw as i64).saturating_sub(frame);
        if let Some(before) = before {
            let after = monotonic::now_ns();
            if !after.is_some_and(|after| (raw(before)..=raw(after)).contains(&offset)) {
                self.0.store(Self::OFF, Ordering::Relaxed);
                debug!("the raw clock left Instant's: new deadlines read Instant");
            }
        }
        now
    }
}

fn saturate_i64(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// About 30 years ahead, as tokio uses for "never": representable on every
/// platform's `Instant`.
fn far_future(origin: Instant) -> Instant {
    origin
        .checked_add(Duration::from_secs(86_400 * 365 * 30))
        .unwrap_or(origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::wheel::deadline_tick;

    fn clock() -> Clock {
        Clock::new(Instant::now(), 10_000_000)
    }

    /// A frame on the system clock, and a reading of `Instant` as an offset.
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom)))]
    fn system_frame() -> (MonotonicFrame, impl Fn() -> i64) {
        let clock = clock();
        let frame = MonotonicFrame::new(&clock, &TimeSource::System);
        (frame, move || clock.offset(TimeSource::System.now()))
    }

    /// A deadline from the frame is the one `Instant` gives: a raw offset
    /// lies between `Instant` offsets read just before and just after it.
    #[test]
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom)))]
    fn the_frame_reads_what_instant_reads() {
        let (frame, instant) = system_frame();
        for _ in 0..100_000 {
            let before = instant();
            let raw = frame.offset().expect("the system clock's frame is on");
            let after = instant();
            assert!(
                (before..=after).contains(&raw),
                "{raw} not in {before}..={after}"
            );
        }
    }

    /// A timer whose clock may pause reads `Instant`, always.
    #[test]
    fn the_frame_is_off_for_a_runtime_clock() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let source = TimeSource::for_runtime(rt.handle());
        assert!(
            source.may_pause(),
            "test-util builds pause current-thread clocks"
        );
        let frame = MonotonicFrame::new(&clock(), &source);
        assert_eq!(frame.offset(), None);
        assert_eq!(frame.0.load(Ordering::Relaxed), MonotonicFrame::OFF);
    }

    /// The driver's check: a frame that agrees with `Instant` stays on
    /// through many passes; one that reads behind or ahead of it (as if
    /// std's `Instant` had moved to another clock) turns off at the first
    /// pass, and stays off.
    #[test]
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(tickwheel_loom)))]
    fn a_pass_turns_off_a_frame_that_disagrees_with_instant() {
        let pass = |frame: &MonotonicFrame, instant: &dyn Fn() -> i64| {
            frame.check(|| ((), instant()));
        };
        let (frame, instant) = system_frame();
        let exact = frame.0.load(Ordering::Relaxed);
        for _ in 0..10_000 {
            pass(&frame, &instant);
        }
        assert_eq!(
            frame.0.load(Ordering::Relaxed),
            exact,
            "an exact frame stays"
        );
        for wrong in [exact + 5_000_000_000, exact - 5_000_000_000] {
            frame.0.store(wrong, Ordering::Relaxed);
            pass(&frame, &instant);
            assert_eq!(frame.offset(), None, "a frame 5 s off turns off");
            pass(&frame, &instant);
            assert_eq!(frame.0.load(Ordering::Relaxed), MonotonicFrame::OFF);
        }
    }

    #[test]
    fn deadlines_round_up_to_the_next_boundary() {
        let t = TickDiv::new(10_000_000);
        assert_eq!(t.ceil(0), 0);
        assert_eq!(t.ceil(1), 1);
        assert_eq!(t.ceil(10_000_000), 1, "a boundary maps to itself");
        assert_eq!(t.ceil(10_000_001), 2);
        assert_eq!(t.ceil(u64::MAX), u64::MAX.div_ceil(10_000_000));
    }

    #[test]
    fn now_rounds_down() {
        let c = clock();
        assert_eq!(c.now_tick(c.origin), (0, 0));
        let almost = c.origin + Duration::from_nanos(9_999_999);
        assert_eq!(c.now_tick(almost), (9_999_999, 0));
        assert_eq!(c.now_tick(c.origin + Duration::from_millis(10)).1, 1);
        // Before the origin counts as the origin.
        assert_eq!(c.now_tick(c.origin - Duration::from_millis(5)), (0, 0));
    }

    #[test]
    fn offsets_round_trip_both_sides_of_the_origin() {
        let c = clock();
        for off in [-5_000_000_000i64, -1, 0, 1, 123_456_789] {
            assert_eq!(c.offset(c.instant_at(off)), off);
        }
    }

    #[test]
    fn huge_durations_saturate() {
        let c = clock();
        assert_eq!(c.offset_after(c.origin, Duration::MAX), i64::MAX);
        let later = c.origin + Duration::from_secs(1);
        assert_eq!(c.offset_after(later, Duration::MAX), i64::MAX);
        assert_eq!(Clock::wheel_ns(i64::MAX), i64::MAX as u64);
        assert_eq!(Clock::wheel_ns(-7), 0);
        // Never panics, whatever the offset.
        let _ = c.instant_at(i64::MAX);
        let _ = c.instant_at(i64::MIN);
        assert_eq!(c.tick_instant(u64::MAX), None);
    }

    /// The horizon: a saturated deadline never counts as passed, nor one
    /// past the last tick boundary the clock reaches, however far the clock
    /// reads; one up to that boundary has passed once the clock is there.
    /// A saturated deadline's tick is past the last one the clock reaches,
    /// also when the tick divides `SATURATED` (then the last boundary is
    /// the horizon itself).
    #[test]
    fn nothing_at_or_past_the_horizon_passes() {
        let max = i64::MAX;
        for tick_ns in [1_000_000, 10_000_000, 1 << 62, SATURATED, SATURATED / 7] {
            let c = Clock::new(Instant::now(), tick_ns);
            let last_tick = SATURATED / tick_ns;
            let last = (last_tick * tick_ns) as i64;
            let reach = if last == max { max - 1 } else { last };
            assert!(c.passed(reach, max) && c.passed(reach, reach));
            assert!(!c.passed(reach, reach - 1));
            assert!(!c.passed(reach + 1, max), "tick {tick_ns}");
            assert!(!c.passed(max, max), "tick {tick_ns}");
            assert!(c.passed(i64::MIN, i64::MIN) && c.passed(-5, 0));
            let tick_of = |ns| deadline_tick(c.tick, ns);
            assert_eq!(tick_of(SATURATED), last_tick + 1, "tick {tick_ns}");
            assert_eq!(tick_of(reach as u64), c.tick.ceil(reach as u64));
            assert!(tick_of(reach as u64) <= last_tick);
        }
    }

    #[test]
    fn tick_instants_are_the_boundaries() {
        let c = clock();
        assert_eq!(c.tick_instant(0), Some(c.origin));
        assert_eq!(
            c.tick_instant(3),
            Some(c.origin + Duration::from_millis(30))
        );
        // The boundary of the tick a deadline rounds up to is at or after it.
        let deadline = 25_000_001;
        let tick = c.tick.ceil(deadline);
        assert_eq!(
            c.tick_instant(tick),
            Some(c.origin + Duration::from_millis(30))
        );
    }

    /// The probe tells a type with the inherent method from one without it.
    #[test]
    fn the_test_util_probe_sees_the_inherent_method() {
        struct With;
        impl With {
            fn start_paused(&mut self, _: bool) -> &mut Self {
                self
            }
        }
        struct Without;
        assert!(has_inherent_start_paused!(With));
        assert!(!has_inherent_start_paused!(Without));
        // This crate's tests build tokio with `test-util` (a dev-dependency
        // feature), so here clocks can pause.
        assert!(has_inherent_start_paused!(tokio::runtime::Builder));
        let _ = With.start_paused(true);
    }

    /// The stand-in for instants the platform cannot express: 30 years on,
    /// as tokio's "far future". Unreachable where `Instant` spans 292 years
    /// (Linux, macOS, Windows), so checked here directly.
    #[test]
    fn the_far_future_is_thirty_years_ahead() {
        let c = clock();
        let thirty_years = Duration::from_secs(30 * 365 * 86_400);
        assert_eq!(far_future(c.origin) - c.origin, thirty_years);
    }
}
