//! [`TimeoutRepeating`]: a time limit on a stream that yields an error every
//! period of silence, one [`Interval`] restarted after each item.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokio::task::coop;

use crate::error::Elapsed;
use crate::interval::{Budget, Interval};

/// What the interval is doing while the inner stream is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// Each tick of the interval is one error.
    Ticking,
    /// The timer shut down when an item came, so the interval could not be
    /// restarted: report that once at the next wait.
    ShutDown,
    /// The shutdown was reported: items pass through with no limit.
    Off,
}

pin_project! {
    /// A stream whose silences yield an error every period, from
    /// [`StreamTimerExt::timeout_repeating_on`](super::StreamTimerExt::timeout_repeating_on).
    ///
    /// Yields `Ok(item)` for each item of the inner stream, and one
    /// `Err(`[`Elapsed`]`)` for each tick of its interval while the inner
    /// stream is pending; each item restarts the interval. It ends when the
    /// inner stream ends (and stays ended: the inner stream is not polled
    /// after its `None`). `Unpin` when the inner stream is.
    ///
    /// # Cancel safety
    ///
    /// `next()` on it is cancel safe: the adapter holds no item between
    /// polls and keeps its interval in itself, so a `next()` future dropped before it
    /// completes (a losing `tokio::select!` branch) loses no item, and the
    /// next call goes on with the same interval (it restarts at an item, not at a call).
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
    /// let period = Duration::from_millis(100);
    /// let start = Instant::now();
    /// let silent = futures::stream::pending::<u8>()
    ///     .timeout_repeating_on(timer.interval_at(start + period, period));
    /// let errors: Vec<_> = silent.take(3).collect().await;
    /// assert!(errors.iter().all(|e| e.is_err()));
    /// assert_eq!(start.elapsed(), 3 * period);
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct TimeoutRepeating<S> {
        #[pin]
        stream: S,
        interval: Interval,
        watch: Watch,
        ended: bool,
    }
}

impl<S> TimeoutRepeating<S> {
    pub(super) fn new(stream: S, interval: Interval) -> Self {
        TimeoutRepeating {
            stream,
            interval,
            watch: Watch::Ticking,
            ended: false,
        }
    }

    /// The inner stream.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::{Stream, StreamExt};
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut s = futures::stream::iter(1..=3)
    ///     .timeout_repeating_on(timer.interval(Duration::from_secs(1)));
    /// assert_eq!(s.get_ref().size_hint(), (3, Some(3)));
    /// assert_eq!(s.next().await, Some(Ok(1)));
    /// assert_eq!(s.get_ref().size_hint(), (2, Some(2)));
    /// # }
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The inner stream, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::{Stream, StreamExt};
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut s = futures::stream::iter(1..=3)
    ///     .timeout_repeating_on(timer.interval(Duration::from_secs(1)));
    /// assert_eq!(s.next().await, Some(Ok(1)));
    /// // Straight from the inner stream, past the adapter's timing:
    /// assert_eq!(s.get_mut().next().await, Some(2));
    /// assert_eq!(s.get_ref().size_hint(), (1, Some(1)));
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The inner stream, pinned.
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
    /// let mut s = std::pin::pin!(futures::stream::iter(1..=3)
    ///     .timeout_repeating_on(timer.interval(Duration::from_secs(1))));
    /// assert_eq!(s.as_mut().get_pin_mut().next().await, Some(1));
    /// assert_eq!(s.next().await, Some(Ok(2)));
    /// # }
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().stream
    }

    /// Consumes the adapter, returning the inner stream and the interval.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::stream::StreamTimerExt;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let watched = futures::stream::iter([1]).timeout_repeating_on(timer.interval(Duration::from_secs(5)));
    /// let (_stream, interval) = watched.into_inner();
    /// assert_eq!(interval.period(), Duration::from_secs(5));
    /// # }
    /// ```
    pub fn into_inner(self) -> (S, Interval) {
        (self.stream, self.interval)
    }
}

impl<S: Stream> Stream for TimeoutRepeating<S> {
    type Item = Result<S::Item, Elapsed>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let me = self.project();
        if *me.ended {
            return Poll::Ready(None);
        }
        let had_budget = coop::has_budget_remaining();
        match me.stream.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                if *me.watch == Watch::Ticking && me.interval.try_reset().is_err() {
                    *me.watch = Watch::ShutDown;
                }
                return Poll::Ready(Some(Ok(item)));
            }
            Poll::Ready(None) => {
                *me.ended = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        match *me.watch {
            Watch::Ticking => {
                // As in `crate::Timeout`: if the inner stream spent the
                // task's budget, a due tick completes regardless of it.
                let budget = if had_budget && !coop::has_budget_remaining() {
                    Budget::Skip
                } else {
                    Budget::Take
                };
                match ready!(me.interval.poll_tick_unless_shutdown(cx, budget)) {
                    Some(_) => Poll::Ready(Some(Err(Elapsed::new(false)))),
                    None => {
                        *me.watch = Watch::Off;
                        Poll::Ready(Some(Err(Elapsed::new(true))))
                    }
                }
            }
            Watch::ShutDown => {
                *me.watch = Watch::Off;
                Poll::Ready(Some(Err(Elapsed::new(true))))
            }
            Watch::Off => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.ended {
            return (0, Some(0));
        }
        // Any number of errors may come between two items.
        (self.stream.size_hint().0, None)
    }
}
