//! [`Timeout`]: a per-item time limit on a stream, one [`Sleep`] moved after
//! each item.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use pin_project_lite::pin_project;
use tokio::task::coop;

use crate::error::Elapsed;
use crate::sleep::Sleep;

/// What the time limit is doing while the inner stream is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    /// Running: the sleep's deadline is the limit for the next item.
    Armed,
    /// Elapsed and reported; the next item arms it again.
    Reported,
    /// The timer shut down when an item came, so the limit could not be
    /// moved: report that once at the next wait.
    ShutDown,
    /// The shutdown was reported: items pass through with no limit.
    Off,
}

pin_project! {
    /// A stream with a per-item time limit, from
    /// [`StreamTimerExt::timeout_on`](super::StreamTimerExt::timeout_on).
    ///
    /// Yields `Ok(item)` for each item of the inner stream, and one
    /// `Err(`[`Elapsed`]`)` each time the limit passes with no item; it ends
    /// when the inner stream ends (and stays ended: the inner stream is not
    /// polled after its `None`). `Unpin` when the inner stream is.
    ///
    /// # Cancel safety
    ///
    /// `next()` on it is cancel safe: the adapter holds no item between
    /// polls and keeps its time limit in itself, so a `next()` future dropped before it
    /// completes (a losing `tokio::select!` branch) loses no item, and the
    /// next call goes on with the same limit (it restarts at an item, not at a call).
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
    /// let mut silent = futures::stream::pending::<u8>().timeout_on(&timer, Duration::from_secs(1));
    /// let err = silent.next().await.unwrap().unwrap_err();
    /// assert!(!err.is_shutdown());
    /// # }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Timeout<S> {
        #[pin]
        stream: S,
        deadline: Sleep,
        duration: Duration,
        limit: Limit,
        ended: bool,
    }
}

impl<S> Timeout<S> {
    pub(super) fn new(stream: S, deadline: Sleep, duration: Duration) -> Self {
        Timeout {
            stream,
            deadline,
            duration,
            limit: Limit::Armed,
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
    /// let mut s = futures::stream::iter(1..=3).timeout_on(&timer, Duration::from_secs(1));
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
    /// let mut s = futures::stream::iter(1..=3).timeout_on(&timer, Duration::from_secs(1));
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
    /// let mut s = std::pin::pin!(futures::stream::iter(1..=3).timeout_on(&timer, Duration::from_secs(1)));
    /// assert_eq!(s.as_mut().get_pin_mut().next().await, Some(1));
    /// assert_eq!(s.next().await, Some(Ok(2)));
    /// # }
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().stream
    }

    /// Consumes the adapter, returning the inner stream (the time limit's
    /// wheel entry is dropped).
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
    /// let mut limited = futures::stream::iter(1..=3).timeout_on(&timer, Duration::from_secs(1));
    /// assert_eq!(limited.next().await, Some(Ok(1)));
    /// assert_eq!(timer.stats().live, 1);
    /// let rest: Vec<_> = limited.into_inner().collect().await;
    /// assert_eq!((rest, timer.stats().live), (vec![2, 3], 0));
    /// # }
    /// ```
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: Stream> Stream for Timeout<S> {
    type Item = Result<S::Item, Elapsed>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let me = self.project();
        if *me.ended {
            return Poll::Ready(None);
        }
        let had_budget = coop::has_budget_remaining();
        match me.stream.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                // The limit restarts at every item. A timer that has shut
                // down cannot run it any more: say so once, at the next wait.
                if *me.limit != Limit::Off {
                    let reset = Pin::new(&mut *me.deadline).try_reset_after(*me.duration);
                    *me.limit = match reset {
                        Ok(()) => Limit::Armed,
                        Err(_) => Limit::ShutDown,
                    };
                }
                return Poll::Ready(Some(Ok(item)));
            }
            Poll::Ready(None) => {
                *me.ended = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        match *me.limit {
            Limit::Armed => {
                // As in `crate::Timeout`: if the inner stream spent the
                // task's budget, the deadline is checked regardless of it.
                if had_budget && !coop::has_budget_remaining() {
                    ready!(me.deadline.poll_unbudgeted(cx));
                } else {
                    ready!(Pin::new(&mut *me.deadline).poll(cx));
                }
                let shutdown = me.deadline.ended_by_shutdown();
                *me.limit = if shutdown {
                    Limit::Off
                } else {
                    Limit::Reported
                };
                Poll::Ready(Some(Err(Elapsed::new(shutdown))))
            }
            Limit::ShutDown => {
                *me.limit = Limit::Off;
                Poll::Ready(Some(Err(Elapsed::new(true))))
            }
            Limit::Reported | Limit::Off => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.ended {
            return (0, Some(0));
        }
        // At most one error before each item and one after the last.
        let (lower, upper) = self.stream.size_hint();
        let upper = upper.and_then(|n| n.checked_mul(2)?.checked_add(1));
        (lower, upper)
    }
}
