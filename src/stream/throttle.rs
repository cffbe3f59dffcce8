//! [`Throttle`]: a minimum spacing between a stream's items, one [`Sleep`]
//! moved after each item.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use pin_project_lite::pin_project;

use crate::sleep::Sleep;

/// Where a throttled stream stands between items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spacing {
    /// The inner stream may be polled for the next item.
    Open,
    /// An item was yielded; the sleep's deadline is when the next may be
    /// looked for.
    Waiting,
    /// The timer shut down: no item can be spaced any more, so the stream
    /// has ended.
    Ended,
}

pin_project! {
    /// A stream whose items come at least a set duration apart, from
    /// [`StreamTimerExt::throttle_on`](super::StreamTimerExt::throttle_on).
    ///
    /// After each item, the inner stream is not polled again until the
    /// duration has passed, so a fast producer is held back (its items wait
    /// in it, not here). `Unpin` when the inner stream is.
    ///
    /// # Cancel safety
    ///
    /// `next()` on it is cancel safe: the adapter holds no item between
    /// polls and keeps its spacing in itself, so a `next()` future dropped before it
    /// completes (a losing `tokio::select!` branch) loses no item, and the
    /// next call goes on from the same spacing deadline.
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
    /// let mut throttled = futures::stream::iter(1..=5).throttle_on(&timer, Duration::from_millis(100));
    /// assert_eq!(throttled.next().await, Some(1)); // at once
    /// assert_eq!(throttled.next().await, Some(2)); // 100 ms later
    /// assert_eq!(start.elapsed(), Duration::from_millis(100));
    /// let rest: Vec<_> = throttled.into_inner().collect().await;
    /// assert_eq!(rest, [3, 4, 5]);
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Throttle<S> {
        #[pin]
        stream: S,
        delay: Sleep,
        duration: Duration,
        spacing: Spacing,
    }
}

impl<S> Throttle<S> {
    pub(super) fn new(stream: S, delay: Sleep, duration: Duration) -> Self {
        Throttle {
            stream,
            delay,
            duration,
            spacing: Spacing::Open,
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
    /// let mut s = futures::stream::iter(1..=3).throttle_on(&timer, Duration::from_secs(1));
    /// assert_eq!(s.get_ref().size_hint(), (3, Some(3)));
    /// assert_eq!(s.next().await, Some(1));
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
    /// let mut s = futures::stream::iter(1..=3).throttle_on(&timer, Duration::from_secs(1));
    /// assert_eq!(s.next().await, Some(1));
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
    /// let mut s = std::pin::pin!(futures::stream::iter(1..=3).throttle_on(&timer, Duration::from_secs(1)));
    /// assert_eq!(s.as_mut().get_pin_mut().next().await, Some(1));
    /// assert_eq!(s.next().await, Some(2));
    /// # }
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().stream
    }

    /// Consumes the adapter, returning the inner stream (with the items it
    /// still holds; the spacing's wheel entry is dropped).
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
    /// let mut s = futures::stream::iter(1..=3).throttle_on(&timer, Duration::from_secs(1));
    /// assert_eq!(s.next().await, Some(1));
    /// let rest: Vec<i32> = s.into_inner().collect().await; // unthrottled
    /// assert_eq!(rest, [2, 3]);
    /// # }
    /// ```
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: Stream> Stream for Throttle<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let me = self.project();
        match *me.spacing {
            Spacing::Ended => return Poll::Ready(None),
            Spacing::Waiting => {
                // A deadline already passed takes a unit of tokio's budget
                // (as any `Sleep` that completes without waiting), so a
                // consumer slower than the spacing still yields.
                ready!(Pin::new(&mut *me.delay).poll(cx));
                if me.delay.timer_is_shut_down() {
                    // The wait was cut short, or the next one could not be
                    // timed: yielding items unspaced would lift the limit (and
                    // spin on a stream that is always ready).
                    *me.spacing = Spacing::Ended;
                    return Poll::Ready(None);
                }
                *me.spacing = Spacing::Open;
            }
            Spacing::Open => {}
        }
        let item = ready!(me.stream.poll_next(cx));
        if item.is_some() && !me.duration.is_zero() {
            // On a timer that has shut down the reset fails and leaves the
            // sleep complete; the next poll sees the shutdown and ends.
            let _ = Pin::new(&mut *me.delay).try_reset_after(*me.duration);
            *me.spacing = Spacing::Waiting;
        }
        Poll::Ready(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.spacing {
            Spacing::Ended => (0, Some(0)),
            // It may end early, if its timer shuts down.
            _ => (0, self.stream.size_hint().1),
        }
    }
}
