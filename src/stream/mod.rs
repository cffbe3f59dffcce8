//! Stream adapters on the wheel: [`StreamTimerExt`] puts a per-item time
//! limit ([`Timeout`], [`TimeoutRepeating`]) or a minimum spacing between
//! items ([`Throttle`]) on any [`futures_core::Stream`], with the semantics
//! of tokio-stream's `StreamExt::timeout`, `timeout_repeating` and
//! `throttle`, waiting on a [`Timer`] instead of `tokio::time`.
//!
//! Each adapter holds one [`Sleep`](crate::Sleep) (or one
//! [`Interval`]) for its whole life and moves its deadline
//! in place after each item, so a stream costs one wheel entry while it
//! waits, and nothing per item beyond moving that entry.

// - this file: the extension trait, and what the adapters share (shutdown,
//   budget and precision rules);
// - `timeout.rs`, `timeout_repeating.rs`, `throttle.rs`: one adapter each.
mod throttle;
mod timeout;
mod timeout_repeating;

use std::time::Duration;

use futures_core::Stream;

use crate::interval::Interval;
use crate::timer::Timer;

pub use self::throttle::Throttle;
pub use self::timeout::Timeout;
pub use self::timeout_repeating::TimeoutRepeating;

/// Time limits and throttling for any [`Stream`], on a [`Timer`]'s wheel.
///
/// The methods are tokio-stream's `StreamExt::timeout`, `timeout_repeating`
/// and `throttle`, with the same items and semantics, but waiting on the
/// wheel; the `_on` suffix names the timer they wait on (and keeps the names
/// apart from tokio-stream's, so both traits can be in scope at once). It is
/// implemented for every `Stream`; bring it into scope with
/// `use tickwheel::stream::StreamTimerExt;`.
///
/// # Precision
///
/// As for every wheel timer: a deadline rounds up to the timer's next tick
/// boundary, and nothing fires before its deadline. A [`Timeout`] never
/// yields its error before `duration` has passed since the last item (or
/// since it was created), and a [`Throttle`] never yields an item before
/// `duration` has passed since the previous one; either may be up to one
/// tick later than that.
///
/// # Budget
///
/// The adapters take part in tokio's cooperative budget the way a
/// [`Sleep`](crate::Sleep) and a [`crate::Timeout`] do: a deadline that has
/// already passed completes only with budget left (so a loop over a stream
/// whose deadlines are all behind it yields to the scheduler), while one that
/// fired after waiting completes whatever the budget, and a time limit is
/// checked outside the budget when the inner stream spent it. A stream that
/// spends the task's budget on every poll never keeps its time limit from
/// firing.
///
/// # Shutdown
///
/// No adapter spins or hangs on a timer that has [shut
/// down](Timer::shutdown):
///
/// - a [`Timeout`] or [`TimeoutRepeating`] yields one `Err(Elapsed)` whose
///   [`is_shutdown`](crate::Elapsed::is_shutdown) is `true`, then passes the
///   inner stream's items through with no time limit and no further error (a
///   dead timer can measure none);
/// - a [`Throttle`] ends (yields `None`) instead of yielding an item it can
///   no longer space out (one with a zero duration never uses the timer, and
///   goes on passing items through); its [`into_inner`](Throttle::into_inner) gives back
///   the inner stream and the items left in it.
///
/// Creating an adapter panics on a timer already shut down, or at its
/// [`max_pending`](crate::Builder::max_pending) limit, as
/// [`Timer::sleep`] does: each adapter holds one live sleep.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use futures::StreamExt;
/// use tickwheel::stream::StreamTimerExt;
///
/// let timer = tickwheel::Timer::new();
/// let ms = Duration::from_millis;
///
/// // One item, then silence: the time limit elapses once, then the stream
/// // waits for the next item.
/// let (tx, rx) = futures::channel::mpsc::unbounded();
/// let mut replies = rx.timeout_on(&timer, ms(100));
/// tx.unbounded_send("pong").unwrap();
/// assert_eq!(replies.next().await, Some(Ok("pong")));
/// assert!(replies.next().await.unwrap().is_err()); // after 100 ms of silence
///
/// // At most one item every 50 ms.
/// let start = tokio::time::Instant::now();
/// let mut pings = futures::stream::repeat("ping").throttle_on(&timer, ms(50));
/// for _ in 0..3 {
///     pings.next().await;
/// }
/// assert_eq!(start.elapsed(), ms(100)); // at 0, 50 and 100 ms
/// # }
/// ```
pub trait StreamTimerExt: Stream {
    /// A per-item time limit of `duration` on `timer`: tokio-stream's
    /// `StreamExt::timeout` on the wheel.
    ///
    /// Each item comes through as `Ok(item)`. When `duration` passes with no
    /// item (counted from the last item, or from this call for the first
    /// one), the stream yields one `Err(Elapsed)` and goes on waiting for the
    /// inner stream: the limit restarts at the next item, and a silence
    /// longer than `duration` yields one error, not one per `duration` (see
    /// [`timeout_repeating_on`](StreamTimerExt::timeout_repeating_on) for
    /// that). The stream ends when the inner stream ends.
    ///
    /// See the trait's documentation for precision, budget and shutdown.
    ///
    /// # Panics
    ///
    /// As [`Timer::sleep`]: if the timer has shut down, or is at its
    /// `max_pending` limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let ms = Duration::from_millis;
    /// // Items 30 ms and 300 ms apart, under a 100 ms limit.
    /// let slow = futures::stream::iter([30, 300]).then(|gap| {
    ///     let timer = timer.clone();
    ///     async move {
    ///         timer.sleep(ms(gap)).await;
    ///         gap
    ///     }
    /// });
    /// let items: Vec<_> = slow.timeout_on(&timer, ms(100)).collect().await;
    /// assert_eq!(items.len(), 3);
    /// assert_eq!(items[0], Ok(30));
    /// assert!(items[1].is_err()); // once, after 100 ms without an item
    /// assert_eq!(items[2], Ok(300));
    /// # }
    /// ```
    #[track_caller]
    fn timeout_on(self, timer: &Timer, duration: Duration) -> Timeout<Self>
    where
        Self: Sized,
    {
        Timeout::new(self, timer.sleep(duration), duration)
    }

    /// A per-item time limit that repeats: tokio-stream's
    /// `StreamExt::timeout_repeating` on the wheel, with a tickwheel
    /// [`Interval`] (which names its timer).
    ///
    /// Each item comes through as `Ok(item)` and restarts the interval
    /// ([`Interval::reset`]: its next tick is a period later). While the
    /// inner stream is pending, each tick of the interval yields one
    /// `Err(Elapsed)`, so a long silence yields an error every period: the
    /// shape of "close the connection after three missed heartbeats".
    ///
    /// As with tokio-stream, the interval's own schedule applies until the
    /// first item: an interval from [`Timer::interval`] ticks at once, so a
    /// stream pending on its first poll yields an error at once. Use
    /// [`Timer::interval_at`]`(now + period, period)` to allow a full period
    /// before the first error. Catch-up ticks after a stall follow the
    /// interval's [`MissedTickBehavior`](crate::MissedTickBehavior).
    ///
    /// See the trait's documentation for precision, budget and shutdown.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let period = Duration::from_secs(5);
    /// // A peer that sends one heartbeat, then goes silent.
    /// let heartbeats = futures::stream::iter([()]).chain(futures::stream::pending());
    /// let mut watched = heartbeats
    ///     .timeout_repeating_on(timer.interval_at(Instant::now() + period, period));
    /// assert_eq!(watched.next().await, Some(Ok(())));
    /// let mut missed = 0;
    /// while let Some(Err(_)) = watched.next().await {
    ///     missed += 1;
    ///     if missed == 3 {
    ///         break; // close the connection
    ///     }
    /// }
    /// # }
    /// ```
    fn timeout_repeating_on(self, interval: Interval) -> TimeoutRepeating<Self>
    where
        Self: Sized,
    {
        TimeoutRepeating::new(self, interval)
    }

    /// At most one item per `duration`, waiting on `timer`: tokio-stream's
    /// `StreamExt::throttle` on the wheel.
    ///
    /// The first item comes through as soon as the inner stream yields it;
    /// after each item, the inner stream is not polled again until
    /// `duration` has passed, so each item comes at least `duration` after
    /// the one before. A zero `duration` passes items through unchanged and
    /// never waits on the timer.
    ///
    /// See the trait's documentation for precision, budget and shutdown.
    ///
    /// # Panics
    ///
    /// As [`Timer::sleep`]: if the timer has shut down, or is at its
    /// `max_pending` limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let start = Instant::now();
    /// let mut pings = futures::stream::repeat("ping").throttle_on(&timer, Duration::from_secs(2));
    /// for _ in 0..3 {
    ///     assert_eq!(pings.next().await, Some("ping"));
    /// }
    /// assert_eq!(start.elapsed(), Duration::from_secs(4)); // at 0, 2 and 4 s
    /// # }
    /// ```
    #[track_caller]
    fn throttle_on(self, timer: &Timer, duration: Duration) -> Throttle<Self>
    where
        Self: Sized,
    {
        Throttle::new(self, timer.sleep(Duration::ZERO), duration)
    }

    /// [`timeout_on`](StreamTimerExt::timeout_on) on the current runtime's
    /// default timer ([`Timer::current`]): tokio-stream's `timeout(duration)`
    /// with the same name and arguments.
    ///
    /// If tokio-stream's `StreamExt` is in scope too, the two `timeout`
    /// methods are ambiguous: call this one as
    /// `StreamTimerExt::timeout(stream, duration)`, or use `timeout_on`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio_stream::StreamExt::timeout` does;
    /// and as [`timeout_on`](StreamTimerExt::timeout_on).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let mut silent = futures::stream::pending::<()>().timeout(Duration::from_secs(1));
    /// let start = tokio::time::Instant::now();
    /// assert!(silent.next().await.unwrap().is_err());
    /// assert_eq!(start.elapsed(), Duration::from_secs(1));
    /// # }
    /// ```
    #[track_caller]
    fn timeout(self, duration: Duration) -> Timeout<Self>
    where
        Self: Sized,
    {
        self.timeout_on(&Timer::current(), duration)
    }

    /// [`timeout_repeating_on`](StreamTimerExt::timeout_repeating_on) under
    /// tokio-stream's name: the interval (from [`crate::time::interval`] on
    /// the default timer, or from any timer) names the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    /// use tickwheel::time::{self, Instant};
    ///
    /// let period = Duration::from_secs(1);
    /// let mut silent = futures::stream::pending::<()>()
    ///     .timeout_repeating(time::interval_at(Instant::now() + period, period));
    /// assert!(silent.next().await.unwrap().is_err()); // at 1 s
    /// assert!(silent.next().await.unwrap().is_err()); // at 2 s
    /// # }
    /// ```
    fn timeout_repeating(self, interval: Interval) -> TimeoutRepeating<Self>
    where
        Self: Sized,
    {
        self.timeout_repeating_on(interval)
    }

    /// [`throttle_on`](StreamTimerExt::throttle_on) on the current runtime's
    /// default timer ([`Timer::current`]): tokio-stream's
    /// `throttle(duration)` with the same name and arguments (see
    /// [`timeout`](StreamTimerExt::timeout) if both traits are in scope).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime; and as
    /// [`throttle_on`](StreamTimerExt::throttle_on).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let start = tokio::time::Instant::now();
    /// let mut pings = futures::stream::repeat("ping").throttle(Duration::from_millis(10));
    /// for _ in 0..3 {
    ///     pings.next().await;
    /// }
    /// assert_eq!(start.elapsed(), Duration::from_millis(20));
    /// # }
    /// ```
    #[track_caller]
    fn throttle(self, duration: Duration) -> Throttle<Self>
    where
        Self: Sized,
    {
        self.throttle_on(&Timer::current(), duration)
    }
}

impl<S: Stream + ?Sized> StreamTimerExt for S {}
