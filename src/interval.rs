//! [`Interval`]: a stream of evenly spaced instants on the wheel, shaped like
//! [`tokio::time::Interval`], and [`MissedTickBehavior`], what it does after
//! a stall.
//!
//! An interval is one reusable [`Sleep`] plus the schedule arithmetic: after
//! each tick the sleep is reset to the next scheduled instant, so an interval
//! holds at most one wheel entry and allocates nothing per tick. This file
//! owns only that arithmetic; rounding to ticks is the wheel's (`clock.rs`).

use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::time::Instant;

use crate::error::Error;
use crate::sleep::Sleep;
use crate::timer::Timer;

/// How late a tick may complete before it counts as missed, at least.
///
/// tokio uses 5 ms; the wheel adds up to one tick of rounding to every
/// deadline, so the threshold is the larger of the two (see
/// [`MissedTickBehavior`]).
const LATE_AFTER: Duration = Duration::from_millis(5);

/// Roughly 30 years: where a schedule that would overflow `Instant` goes.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

impl Timer {
    /// An [`Interval`] whose first tick completes at once and whose later
    /// ticks are `period` apart, like [`tokio::time::interval`].
    ///
    /// A zero `period` does not panic (tokio's does): it is raised to the
    /// timer's [`tick`](Timer::tick), the shortest period the wheel can
    /// tell apart. [`Interval::period`] reports the period in use.
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep): if the timer has a
    /// [`max_pending`](crate::Builder::max_pending) limit and that many sleeps
    /// are already alive (an interval holds one sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let start = Instant::now();
    /// let mut interval = timer.interval(Duration::from_millis(100));
    /// assert_eq!(interval.tick().await, start); // at once
    /// assert_eq!(interval.tick().await, start + Duration::from_millis(100));
    /// assert_eq!(interval.tick().await, start + Duration::from_millis(200));
    /// # }
    /// ```
    #[track_caller]
    pub fn interval(&self, period: Duration) -> Interval {
        self.interval_at(self.now(), period)
    }

    /// An [`Interval`] whose first tick completes at `start` and whose later
    /// ticks are `period` apart, like [`tokio::time::interval_at`]. A `start`
    /// that has passed makes the first tick complete at once.
    ///
    /// A zero `period` is raised to the timer's tick, as in
    /// [`interval`](Timer::interval).
    ///
    /// # Panics
    ///
    /// As [`interval`](Timer::interval), at the `max_pending` limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let start = Instant::now() + Duration::from_secs(1);
    /// let mut interval = timer.interval_at(start, Duration::from_millis(500));
    /// assert_eq!(interval.tick().await, start);
    /// assert_eq!(Instant::now(), start);
    /// # }
    /// ```
    #[track_caller]
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        let tick = self.tick();
        Interval {
            delay: self.sleep_until(start),
            period: if period.is_zero() { tick } else { period },
            late_after: tick.max(LATE_AFTER),
            missed_tick_behavior: MissedTickBehavior::default(),
        }
    }
}

/// What an [`Interval`] does when ticks were missed, because the task that
/// owns it was busy (or the runtime stalled) past one or more scheduled
/// instants. The three behaviours are tokio's
/// ([`tokio::time::MissedTickBehavior`]), with the same meanings.
///
/// A tick counts as missed when it completes later than its scheduled instant
/// by more than the larger of 5 ms (tokio's threshold) and the timer's tick:
/// the wheel routinely completes a deadline up to one tick late (deadlines
/// round up to tick boundaries), and that is not a stall.
///
/// The examples below use a 100 ms period with ticks scheduled at 0, 100,
/// 200, ... ms and a stall that makes the tick scheduled at 100 ms complete at
/// 350 ms.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::MissedTickBehavior;
/// use tokio::time::Instant;
///
/// let timer = tickwheel::Timer::new();
/// let ms = Duration::from_millis;
/// let start = Instant::now();
/// let mut interval = timer.interval(ms(100));
/// interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// interval.tick().await; // 0 ms
/// tokio::time::sleep(ms(350)).await; // busy elsewhere
/// assert_eq!(interval.tick().await, start + ms(100)); // late, at 350 ms
/// assert_eq!(interval.tick().await, start + ms(400)); // 200 and 300 skipped
/// assert_eq!(Instant::now(), start + ms(400));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Catch up: the missed ticks complete at once, one after another, until
    /// the interval is back on its original schedule (the default, as in
    /// tokio). In the example: ticks for 100, 200 and 300 ms complete at
    /// 350 ms, then 400 ms, 500 ms, ... on time.
    ///
    /// Use it when every tick stands for work that must happen (a count of
    /// periods, a rate).
    #[default]
    Burst,
    /// Start a fresh schedule from the late tick: the next tick is one
    /// period after the moment the late tick completed. In the example: 100
    /// at 350 ms, then 450 ms, 550 ms, ... The schedule is shifted for good.
    ///
    /// Use it when ticks must be at least a period apart (a heartbeat that
    /// must not flood the peer after a stall).
    Delay,
    /// Drop the missed ticks and stay on the original grid: the next tick is
    /// the next multiple of the period (counted from the start) after the
    /// moment the late tick completed. In the example: 100 at 350 ms, then
    /// 400 ms, 500 ms, ... As in tokio, a late tick that completes exactly
    /// on a grid instant skips that instant too.
    ///
    /// Use it for work aligned to a clock (sampling, reports every minute).
    Skip,
}

impl MissedTickBehavior {
    /// The instant of the tick after one scheduled at `scheduled` that
    /// completed late, at `now`.
    fn next_after_late(self, scheduled: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => add_or_far(scheduled, period),
            MissedTickBehavior::Delay => add_or_far(now, period),
            MissedTickBehavior::Skip => {
                let behind = now.saturating_duration_since(scheduled).as_nanos();
                let into_period = behind % period.as_nanos();
                // `into_period < period`, so it fits in u64 nanoseconds.
                let into_period = Duration::from_nanos(into_period as u64);
                add_or_far(now, period - into_period)
            }
        }
    }
}

/// Whether a tick already due takes a unit of tokio's cooperative budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// It does, as a `Sleep` that completes without waiting does.
    Take,
    /// It completes whatever the budget (the caller's other work spent it).
    Skip,
}

fn add_or_far(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .or_else(|| t.checked_add(FAR_FUTURE))
        .unwrap_or(t)
}

/// Ticks at evenly spaced instants, created by
/// [`Timer::interval`] or [`Timer::interval_at`]; tickwheel's
/// [`tokio::time::Interval`].
///
/// [`tick`](Interval::tick) waits for the next scheduled instant and returns
/// it. The first tick completes at the start instant (at once for
/// [`Timer::interval`]); later ticks follow every [`period`](Interval::period),
/// or as the [`MissedTickBehavior`] says after a stall. `Interval` is also a
/// [`Stream`] of the same instants.
///
/// # Precision
///
/// The instants returned are the *scheduled* instants (`start + n * period`
/// with the default behaviour), as in tokio, not the moments the ticks were
/// observed. Each tick waits on the wheel, so it completes at the first tick
/// boundary of the timer at or after its scheduled instant: never before it,
/// at most one [`Timer::tick`] after it (plus scheduling delay). The schedule
/// does not drift: rounding one tick does not move the next.
///
/// A period shorter than the timer's tick is kept as given (only zero is
/// raised to one tick): the wheel cannot wake more often than once a tick,
/// so such ticks complete in small bursts at tick boundaries, one per period
/// on average, as tokio's do for periods under its 1 ms resolution.
///
/// # Shutdown
///
/// Once the timer [shuts down](Timer::shutdown), `tick` panics (with the
/// same message as [`Timer::sleep`]), and so do the `reset*` methods: a tick
/// that completed at once would make `loop { interval.tick().await }` spin.
/// The [`Stream`] is the non-panicking form: it ends (yields `None`) once the
/// timer has shut down, so `while let Some(_) = interval.next().await` stops
/// by itself.
///
/// # Cancel safety
///
/// [`tick`](Interval::tick) is cancel safe: dropping its future (say in a
/// `select!`) loses no tick; the next call returns the same instant. The
/// same holds for `next()` on the [`Stream`]. Dropping the `Interval`
/// itself frees its wheel entry.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let mut interval = timer.interval(Duration::from_secs(10));
/// for _ in 0..3 {
///     let at = interval.tick().await;
///     println!("heartbeat scheduled for {at:?}");
/// }
/// # }
/// ```
pub struct Interval {
    /// Completes at the next scheduled instant; its deadline *is* that
    /// instant (unrounded).
    delay: Sleep,
    period: Duration,
    /// Lateness beyond this is a missed tick.
    late_after: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns its scheduled instant.
    ///
    /// # Panics
    ///
    /// Once the timer has shut down (see [Shutdown](Interval#shutdown)).
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe: a tick is consumed only when this future
    /// completes, so if it is dropped first (a losing `tokio::select!`
    /// branch), the next call returns the same tick.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_millis(20));
    /// let first = interval.tick().await;
    /// let second = interval.tick().await;
    /// assert_eq!(second - first, Duration::from_millis(20));
    /// # }
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready` with its scheduled instant once it is
    /// due, else `Pending` (and the task in `cx` is woken when it is due).
    ///
    /// For manual `Future` and `Stream` implementations. Only the waker of
    /// the last call is woken, as with [`Sleep`].
    ///
    /// # Panics
    ///
    /// Once the timer has shut down (see [Shutdown](Interval#shutdown)).
    ///
    /// # Cancel safety
    ///
    /// A tick is consumed only by the call that returns it `Ready`; a future
    /// built on this method that is dropped while `Pending` loses no tick.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_millis(50));
    /// let first = poll_fn(|cx| interval.poll_tick(cx)).await;
    /// let second = poll_fn(|cx| interval.poll_tick(cx)).await;
    /// assert_eq!(second - first, Duration::from_millis(50));
    /// # }
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        match std::task::ready!(self.poll_tick_unless_shutdown(cx, Budget::Take)) {
            Some(scheduled) => Poll::Ready(scheduled),
            // The wait was cut short, or would be: no tick is due, and
            // completing anyway would let `loop { tick().await }` spin.
            None => crate::error::shutdown_panic(),
        }
    }

    /// [`poll_tick`](Interval::poll_tick) that returns `Ready(None)` instead
    /// of panicking once the timer has shut down (and from then on).
    ///
    /// With [`Budget::Skip`], a tick already due completes whatever tokio's
    /// budget, for a caller racing the interval against a stream that spent
    /// the budget (the rule `Timeout` follows).
    pub(crate) fn poll_tick_unless_shutdown(
        &mut self,
        cx: &mut Context<'_>,
        budget: Budget,
    ) -> Poll<Option<Instant>> {
        let delay = match budget {
            Budget::Take => Pin::new(&mut self.delay).poll(cx),
            Budget::Skip => self.delay.poll_unbudgeted(cx),
        };
        if delay.is_pending() {
            return Poll::Pending;
        }
        if self.delay.timer_is_shut_down() {
            return Poll::Ready(None);
        }
        let scheduled = self.delay.deadline();
        let now = self.delay.clock_now();
        let late = now.saturating_duration_since(scheduled) > self.late_after;
        let next = if late {
            self.missed_tick_behavior
                .next_after_late(scheduled, now, self.period)
        } else {
            add_or_far(scheduled, self.period)
        };
        // The sleep is complete, so this only records the deadline; it
        // registers again on the next poll. If the timer shut down since the
        // check above, the sleep stays complete and the next poll sees it.
        let _ = Pin::new(&mut self.delay).try_reset(next);
        Poll::Ready(Some(scheduled))
    }

    /// [`reset`](Interval::reset) that returns an error instead of
    /// panicking once the timer has shut down.
    pub(crate) fn try_reset(&mut self) -> Result<(), Error> {
        let next = add_or_far(self.delay.clock_now(), self.period);
        Pin::new(&mut self.delay).try_reset(next)
    }

    /// Restarts the schedule one period from now: the next tick is at
    /// `now + period`, as [`tokio::time::Interval::reset`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let ms = Duration::from_millis;
    /// let mut interval = timer.interval(ms(100));
    /// interval.tick().await;
    /// tokio::time::sleep(ms(30)).await;
    /// interval.reset(); // activity seen: push the next tick back
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now + ms(100));
    /// # }
    /// ```
    pub fn reset(&mut self) {
        self.reset_at(add_or_far(self.delay.clock_now(), self.period));
    }

    /// Makes the next tick complete at once; later ones follow a period
    /// apart from now, as [`tokio::time::Interval::reset_immediately`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(60));
    /// interval.tick().await;
    /// interval.reset_immediately();
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now);
    /// # }
    /// ```
    pub fn reset_immediately(&mut self) {
        self.reset_at(self.delay.clock_now());
    }

    /// Makes the next tick `after` from now, as
    /// [`tokio::time::Interval::reset_after`]. Durations that overflow
    /// `Instant` saturate to about 30 years.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(60));
    /// interval.tick().await;
    /// interval.reset_after(Duration::from_secs(5));
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now + Duration::from_secs(5));
    /// # }
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_at(add_or_far(self.delay.clock_now(), after));
    }

    /// Makes the next tick complete at `deadline` (at once if it has
    /// passed); later ones follow a period apart from it, as
    /// [`tokio::time::Interval::reset_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(60));
    /// interval.tick().await;
    /// let at = Instant::now() + Duration::from_secs(1);
    /// interval.reset_at(at);
    /// assert_eq!(interval.tick().await, at);
    /// assert_eq!(interval.tick().await, at + Duration::from_secs(60));
    /// # }
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        Pin::new(&mut self.delay).reset(deadline);
    }

    /// The period between ticks (a zero period given at creation reads as
    /// the timer's tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// assert_eq!(timer.interval(Duration::from_secs(2)).period(), Duration::from_secs(2));
    /// assert_eq!(timer.interval(Duration::ZERO).period(), timer.tick());
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The current [`MissedTickBehavior`] ([`Burst`](MissedTickBehavior::Burst)
    /// unless set).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::MissedTickBehavior;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(1));
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Skip);
    /// # }
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what happens after missed ticks; see [`MissedTickBehavior`]. It
    /// applies from the next late tick on.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::MissedTickBehavior;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(1));
    /// interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Delay);
    /// # }
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }
}

/// The ticks as a stream: each item is the scheduled instant [`tick`]
/// would return. The stream ends (yields `None`) once the timer has shut
/// down.
///
/// [`tick`]: Interval::tick
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use futures::StreamExt;
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let ticks: Vec<_> = timer.interval(Duration::from_millis(10)).take(3).collect().await;
/// assert_eq!(ticks[2] - ticks[0], Duration::from_millis(20));
/// # }
/// ```
impl Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        let this = self.get_mut();
        if this.delay.timer_is_shut_down() {
            return Poll::Ready(None);
        }
        this.poll_tick_unless_shutdown(cx, Budget::Take)
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next", &self.delay.deadline())
            .field("period", &self.period)
            .field("missed_tick_behavior", &self.missed_tick_behavior)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_after_late_matches_each_behaviour() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let (scheduled, now, period) = (t0 + ms(100), t0 + ms(350), ms(100));
        let next = |b: MissedTickBehavior| b.next_after_late(scheduled, now, period) - t0;
        assert_eq!(next(MissedTickBehavior::Burst), ms(200));
        assert_eq!(next(MissedTickBehavior::Delay), ms(450));
        assert_eq!(next(MissedTickBehavior::Skip), ms(400));
        // Exactly on a grid instant: tokio's Skip moves a whole period on.
        let on_grid = MissedTickBehavior::Skip.next_after_late(scheduled, t0 + ms(300), period);
        assert_eq!(on_grid - t0, ms(400));
    }

    #[test]
    fn interval_is_send_sync_unpin() {
        fn assert_traits<T: Send + Sync + Unpin + 'static>() {}
        assert_traits::<Interval>();
    }
}
