//! Retry loops on the wheel: [`Timer::retry`], the [`Retry`] future it
//! returns, and the [`Backoff`] delays it waits between attempts.
//!
//! The waits are wheel `Sleep`s, so a retry costs one wheel entry while it
//! waits and nothing while its operation runs; no user code runs on the
//! driver.

// - `backoff.rs`: the delay sequence (constant or exponential, jitter, caps).
// - `jitter.rs`: the jitter choice and its seedable generator.
// - `hooks.rs`: the hook traits and their no-op defaults.
// - this file: the future that calls, waits and calls again.

mod backoff;
mod hooks;
mod jitter;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::TryFuture;
use pin_project_lite::pin_project;
use tokio::time::Instant;

use crate::sleep::Sleep;
use crate::timer::Timer;

pub use self::backoff::{Backoff, Delays};
pub use self::hooks::{Always, NoOverride, Notify, Quiet, RetryAfter, When};
pub use self::jitter::Jitter;

impl Timer {
    /// Calls `operation` until it succeeds, waiting on this timer between
    /// attempts for the delays `backoff` yields.
    ///
    /// The returned [`Retry`] resolves to the first `Ok`, or to the last
    /// `Err` once it stops retrying: when `backoff` ends, when an error does
    /// not pass [`when`](Retry::when), when [`max_elapsed`](Retry::max_elapsed)
    /// would be passed, or when the timer [shuts down](Timer::shutdown) (a
    /// wait in progress ends at once; a retry never spins or hangs on a
    /// stopped timer). On a timer already shut down, the operation is called
    /// once and its error returned. It also stops, with the last error, if
    /// the wait cannot be registered because the timer is at its
    /// [`max_pending`](crate::Builder::max_pending).
    ///
    /// `backoff` is any `IntoIterator<Item = Duration>`: a [`Backoff`], or
    /// your own. Each item is one retry: the first call is made at once, and
    /// each failure that may be retried takes the next item as the wait
    /// before the next call, so `n` items allow `n + 1` calls in all. Each
    /// wait rounds up to the timer's tick, like every sleep (never early, at
    /// most one tick late). A first call that succeeds never touches the
    /// wheel.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut calls = 0;
    /// let result = timer
    ///     .retry(Backoff::exponential(Duration::from_millis(100)), || {
    ///         calls += 1;
    ///         let attempt = calls;
    ///         async move { if attempt < 3 { Err("busy") } else { Ok(attempt) } }
    ///     })
    ///     .await;
    /// assert_eq!(result, Ok(3)); // after waits of 100 ms and 200 ms
    /// # }
    /// ```
    pub fn retry<B, F, Fut>(&self, backoff: B, operation: F) -> Retry<B::IntoIter, F, Fut>
    where
        B: IntoIterator<Item = Duration>,
        F: FnMut() -> Fut,
        Fut: TryFuture,
    {
        Retry {
            timer: self.clone(),
            backoff: backoff.into_iter(),
            operation,
            when: Always,
            notify: Quiet,
            retry_after: NoOverride,
            max_elapsed: None,
            started: None,
            last_error: None,
            state: State::Idle,
        }
    }
}

pin_project! {
    /// A retry loop: the future returned by [`Timer::retry`].
    ///
    /// Resolves to the operation's first `Ok`, or to its last `Err` when the
    /// loop stops (see [`Timer::retry`]). The hooks are held by value (the
    /// type parameters `W`, `N` and `A`, no-ops by default): they may borrow
    /// and need not be `Send`, and a `Retry` is `Send` whenever its
    /// operation, backoff and hooks are.
    ///
    /// # Panics
    ///
    /// If polled again after it completed.
    ///
    /// # Cancel safety
    ///
    /// A `Retry` is not cancel safe: dropping it before it completes drops
    /// the attempt in progress (what that attempt had not finished is lost)
    /// or, between attempts, cancels the wait and frees its wheel entry; the
    /// loop's progress (the attempts made, the backoff's position, the last
    /// error) goes with it, and a new `Retry` starts over. Polling a pinned
    /// `&mut retry` (as in a `tokio::select!` loop) is cancel safe: dropping
    /// that borrow leaves the loop where it was.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut calls = 0;
    /// let mut retry = std::pin::pin!(timer.retry(Backoff::constant(Duration::from_millis(100)), || {
    ///     calls += 1;
    ///     let attempt = calls;
    ///     async move { if attempt < 3 { Err(attempt) } else { Ok(attempt) } }
    /// }));
    /// tokio::select! {
    ///     _ = timer.sleep(Duration::from_millis(150)) => {} // wins, mid-wait
    ///     _ = &mut retry => unreachable!(),
    /// }
    /// assert_eq!(retry.await, Ok(3)); // carries on from its second wait
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Retry<B, F, Fut, W = Always, N = Quiet, A = NoOverride>
    where
        Fut: TryFuture,
    {
        timer: Timer,
        backoff: B,
        operation: F,
        when: W,
        notify: N,
        retry_after: A,
        max_elapsed: Option<Duration>,
        started: Option<Instant>,
        // The error of the attempt before the current wait.
        last_error: Option<Fut::Error>,
        #[pin]
        state: State<Fut>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<Fut> {
        // The next attempt has not been started yet.
        Idle,
        Running { #[pin] attempt: Fut },
        Waiting { sleep: Sleep },
        Done,
    }
}

impl<B, F, Fut, W, N, A> Retry<B, F, Fut, W, N, A>
where
    Fut: TryFuture,
{
    /// Retries only errors for which `when` returns `true`; any other error
    /// is returned at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::io;
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let result: Result<(), io::Error> = timer
    ///     .retry(Backoff::constant(Duration::from_secs(1)), || async {
    ///         Err(io::Error::from(io::ErrorKind::PermissionDenied))
    ///     })
    ///     .when(|e: &io::Error| e.kind() == io::ErrorKind::TimedOut)
    ///     .await;
    /// assert_eq!(result.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    /// assert_eq!(timer.stats().registered, 0); // never waited
    /// # }
    /// ```
    pub fn when<W2>(self, when: W2) -> Retry<B, F, Fut, W2, N, A>
    where
        W2: FnMut(&Fut::Error) -> bool,
    {
        Retry {
            timer: self.timer,
            backoff: self.backoff,
            operation: self.operation,
            when,
            notify: self.notify,
            retry_after: self.retry_after,
            max_elapsed: self.max_elapsed,
            started: self.started,
            last_error: self.last_error,
            state: self.state,
        }
    }

    /// Calls `notify` with each error that will be retried and the delay
    /// before the retry, just before the wait starts: the place to log or
    /// count retries.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let result: Result<(), &str> = timer
    ///     .retry(Backoff::constant(Duration::from_millis(10)).max_attempts(2), || async {
    ///         Err("unavailable")
    ///     })
    ///     .notify(|err: &&str, delay: Duration| eprintln!("{err}; retrying in {delay:?}"))
    ///     .await;
    /// assert_eq!(result, Err("unavailable"));
    /// # }
    /// ```
    pub fn notify<N2>(self, notify: N2) -> Retry<B, F, Fut, W, N2, A>
    where
        N2: FnMut(&Fut::Error, Duration),
    {
        Retry {
            timer: self.timer,
            backoff: self.backoff,
            operation: self.operation,
            when: self.when,
            notify,
            retry_after: self.retry_after,
            max_elapsed: self.max_elapsed,
            started: self.started,
            last_error: self.last_error,
            state: self.state,
        }
    }

    /// Lets an error say how long to wait (a server's `Retry-After`): when
    /// `retry_after` returns `Some(delay)`, the next wait is `delay` instead
    /// of the backoff's.
    ///
    /// How the override meets the backoff:
    ///
    /// - It replaces the length of one wait, not the backoff's count: each
    ///   retry still takes one delay from the backoff, and the loop ends if
    ///   there is none left. So an overridden wait counts as a retry, and
    ///   [`Backoff::max_attempts`] bounds the calls as before.
    /// - The backoff's own caps see only the delays it yielded: the server's
    ///   delay is neither cut by [`Backoff::max_delay`] nor added to the sum
    ///   that [`Backoff::max_total_delay`] caps (a server asking for 30 s gets
    ///   30 s, not `max_delay`).
    /// - [`max_elapsed`](Retry::max_elapsed) does apply: a server delay that
    ///   would end past it stops the loop at once with that error. Set it
    ///   when servers are not trusted: without it, an override of
    ///   `Duration::MAX` waits until the timer shuts down.
    /// - [`notify`](Retry::notify) is called with the overriding delay.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tokio::time::Instant;
    ///
    /// #[derive(Debug)]
    /// struct Busy { retry_after: Option<Duration> }
    ///
    /// let timer = tickwheel::Timer::new();
    /// let start = Instant::now();
    /// let mut first = true;
    /// let result = timer
    ///     .retry(Backoff::constant(Duration::from_millis(100)), || {
    ///         let fail = std::mem::take(&mut first);
    ///         async move {
    ///             if fail { Err(Busy { retry_after: Some(Duration::from_secs(2)) }) } else { Ok(()) }
    ///         }
    ///     })
    ///     .retry_after(|e: &Busy| e.retry_after)
    ///     .await;
    /// assert!(result.is_ok());
    /// assert!(start.elapsed() >= Duration::from_secs(2));
    /// # }
    /// ```
    pub fn retry_after<A2>(self, retry_after: A2) -> Retry<B, F, Fut, W, N, A2>
    where
        A2: FnMut(&Fut::Error) -> Option<Duration>,
    {
        Retry {
            timer: self.timer,
            backoff: self.backoff,
            operation: self.operation,
            when: self.when,
            notify: self.notify,
            retry_after,
            max_elapsed: self.max_elapsed,
            started: self.started,
            last_error: self.last_error,
            state: self.state,
        }
    }

    /// Stops retrying rather than wait past `max_elapsed` after the first
    /// attempt started, as measured by `tokio::time::Instant::now()`: a
    /// retry whose wait would end later is not made, and the last error is
    /// returned. Unlike [`Backoff::max_total_delay`], this counts the time
    /// the attempts themselves take, and it also bounds waits set by
    /// [`retry_after`](Retry::retry_after).
    ///
    /// The check uses the delay as asked; the wait itself rounds up to the
    /// timer's tick, so the last attempt can start up to one tick past
    /// `max_elapsed`. tokio's clock is used rather than
    /// [`Timer::now`](crate::Timer::now), which moves in whole ticks and
    /// stands still while the driver is parked.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut calls = 0;
    /// let result: Result<(), ()> = timer
    ///     .retry(Backoff::constant(Duration::from_secs(1)).max_attempts(usize::MAX), || {
    ///         calls += 1;
    ///         async { Err(()) }
    ///     })
    ///     .max_elapsed(Duration::from_millis(3_500))
    ///     .await;
    /// assert!(result.is_err());
    /// assert_eq!(calls, 4); // at 0, 1, 2 and 3 s; a wait to 4 s would pass 3.5 s
    /// # }
    /// ```
    pub fn max_elapsed(mut self, max_elapsed: Duration) -> Self {
        self.max_elapsed = Some(max_elapsed);
        self
    }
}

impl<B, F, Fut, W, N, A> Future for Retry<B, F, Fut, W, N, A>
where
    B: Iterator<Item = Duration>,
    F: FnMut() -> Fut,
    Fut: TryFuture,
    W: When<Fut::Error>,
    N: Notify<Fut::Error>,
    A: RetryAfter<Fut::Error>,
{
    type Output = Result<Fut::Ok, Fut::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Idle => {
                    let timer = &*this.timer;
                    this.started.get_or_insert_with(|| timer.now());
                    let attempt = (this.operation)();
                    this.state.set(State::Running { attempt });
                }
                StateProj::Running { attempt } => {
                    let error = match ready!(attempt.try_poll(cx)) {
                        Ok(value) => {
                            this.state.set(State::Done);
                            return Poll::Ready(Ok(value));
                        }
                        Err(error) => error,
                    };
                    let wait = next_delay(
                        this.timer,
                        this.backoff,
                        this.when,
                        this.retry_after,
                        *this.max_elapsed,
                        *this.started,
                        &error,
                    );
                    // `try_sleep` fails only at `max_pending` or after
                    // shutdown: both are reasons to stop, not to panic.
                    let Some(sleep) = wait.and_then(|delay| {
                        let sleep = this.timer.try_sleep(delay).ok()?;
                        this.notify.notify(&error, delay);
                        Some(sleep)
                    }) else {
                        this.state.set(State::Done);
                        return Poll::Ready(Err(error));
                    };
                    *this.last_error = Some(error);
                    this.state.set(State::Waiting { sleep });
                }
                StateProj::Waiting { sleep } => {
                    ready!(Pin::new(sleep).poll(cx));
                    let error = this.last_error.take();
                    if this.timer.is_shutdown() {
                        this.state.set(State::Done);
                        let error = error.expect("a waiting retry holds its last error");
                        return Poll::Ready(Err(error));
                    }
                    this.state.set(State::Idle);
                }
                StateProj::Done => panic!("`Retry` polled after it completed"),
            }
        }
    }
}

/// The wait before retrying after `error`, or `None` to stop.
fn next_delay<B, E>(
    timer: &Timer,
    backoff: &mut B,
    when: &mut impl When<E>,
    retry_after: &mut impl RetryAfter<E>,
    max_elapsed: Option<Duration>,
    started: Option<Instant>,
    error: &E,
) -> Option<Duration>
where
    B: Iterator<Item = Duration>,
{
    if !when.retry(error) || timer.is_shutdown() {
        return None;
    }
    let step = backoff.next()?;
    let delay = retry_after.retry_after(error).unwrap_or(step);
    if let (Some(max), Some(started)) = (max_elapsed, started) {
        let ends = timer
            .now()
            .saturating_duration_since(started)
            .saturating_add(delay);
        if ends > max {
            return None;
        }
    }
    Some(delay)
}

impl<B, F, Fut, W, N, A> fmt::Debug for Retry<B, F, Fut, W, N, A>
where
    B: fmt::Debug,
    Fut: TryFuture,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Idle => "idle",
            State::Running { .. } => "running",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        };
        f.debug_struct("Retry")
            .field("backoff", &self.backoff)
            .field("state", &state)
            .field("max_elapsed", &self.max_elapsed)
            .finish_non_exhaustive()
    }
}
