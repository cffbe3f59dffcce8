//! [`Timeout`]: a future raced against a [`Sleep`] on the wheel.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::task::coop;

use crate::error::Elapsed;
use crate::sleep::Sleep;

pin_project! {
    /// A future with a time limit, created by
    /// [`Timer::timeout`](crate::Timer::timeout) or
    /// [`Timer::timeout_at`](crate::Timer::timeout_at).
    ///
    /// Resolves to `Ok(output)` if the inner future completes first, or to
    /// `Err(Elapsed)` once the deadline passes. The inner future is polled
    /// before the deadline is looked at, so a future that is ready on its
    /// first poll never touches the wheel, and one that completes in the same
    /// poll as the deadline passes still wins.
    ///
    /// It mirrors [`tokio::time::Timeout`]: same output, same
    /// [`get_ref`](Timeout::get_ref), [`get_mut`](Timeout::get_mut) and
    /// [`into_inner`](Timeout::into_inner).
    ///
    /// # Cancel safety
    ///
    /// Dropping a `Timeout` before it completes drops the inner future and
    /// unregisters its timer in O(1); nothing else is kept or leaked. So a
    /// `Timeout` is exactly as cancel safe as the future it wraps: whatever
    /// dropping that future loses, dropping the `Timeout` loses too.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let fast = timer.timeout(Duration::from_millis(100), async { 7 }).await;
    /// assert_eq!(fast, Ok(7));
    ///
    /// let slow = timer
    ///     .timeout(Duration::from_millis(100), timer.sleep(Duration::from_secs(5)))
    ///     .await;
    /// assert!(slow.is_err());
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        value: F,
        delay: Sleep,
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(value: F, delay: Sleep) -> Self {
        Timeout { value, delay }
    }

    /// The inner future.
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
    /// let wake_at = Instant::now() + Duration::from_secs(5);
    /// let call = timer.timeout(Duration::from_secs(1), timer.sleep_until(wake_at));
    /// assert_eq!(call.get_ref().deadline(), wake_at);
    /// assert!(call.await.is_err());
    /// # }
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.value
    }

    /// The inner future, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut call = timer.timeout(Duration::from_secs(1), timer.sleep(Duration::from_secs(5)));
    /// // Bring the inner sleep forward, inside the time limit:
    /// Pin::new(call.get_mut()).reset(Instant::now() + Duration::from_millis(10));
    /// assert_eq!(call.await, Ok(()));
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.value
    }

    /// Consumes the timeout, returning the inner future (its timer entry is
    /// unregistered).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let call = timer.timeout(Duration::from_millis(10), async { "slow reply" });
    /// assert_eq!(timer.stats().live, 1);
    /// let reply = call.into_inner(); // no time limit any more
    /// assert_eq!(timer.stats().live, 0);
    /// assert_eq!(reply.await, "slow reply");
    /// # }
    /// ```
    pub fn into_inner(self) -> F {
        self.value
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = self.project();
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(output) = me.value.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        // If the inner future spent the task's budget, the deadline is
        // checked regardless of it (tokio's rule for its own `Timeout`):
        // otherwise a future that spends the budget on every poll would keep
        // its timeout from ever firing.
        let delay = if had_budget && !coop::has_budget_remaining() {
            me.delay.poll_unbudgeted(cx)
        } else {
            Pin::new(&mut *me.delay).poll(cx)
        };
        match delay {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new(me.delay.ended_by_shutdown()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
