//! The hooks a [`Retry`](crate::Retry) calls, as traits with a no-op default
//! each, so that `Retry` holds them by value: no `Box`, no `'static`, no
//! `Send` bound of its own. A hook may borrow from its caller and use types
//! that are not `Send` (on a `LocalSet`); a `Retry` is `Send` whenever its
//! operation, backoff and hooks are. Closures implement them, so users never
//! name these traits: `.when(|e| ..)`, `.notify(|e, d| ..)`,
//! `.retry_after(|e| ..)`.

use std::time::Duration;

/// Decides whether an error is retried ([`Retry::when`](crate::Retry::when)).
///
/// A closure `FnMut(&E) -> bool` is a `When`; [`Retry::when`](crate::Retry::when)
/// takes one.
///
/// # Examples
///
/// ```
/// use std::io::ErrorKind;
/// use tickwheel::retry::When;
///
/// let mut transient = |kind: &ErrorKind| *kind == ErrorKind::TimedOut;
/// assert!(transient.retry(&ErrorKind::TimedOut));
/// assert!(!transient.retry(&ErrorKind::PermissionDenied));
/// ```
pub trait When<E> {
    /// `true` to retry after `error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickwheel::retry::{Always, When};
    ///
    /// let mut every_third = {
    ///     let mut seen = 0;
    ///     move |_: &&str| { seen += 1; seen % 3 == 0 }
    /// };
    /// let answers: Vec<bool> = (0..3).map(|_| every_third.retry(&"busy")).collect();
    /// assert_eq!(answers, [false, false, true]);
    /// assert!(Always.retry(&"busy"));
    /// ```
    fn retry(&mut self, error: &E) -> bool;
}

/// Hears of each retry before its wait ([`Retry::notify`](crate::Retry::notify)).
///
/// A closure `FnMut(&E, Duration)` is a `Notify`;
/// [`Retry::notify`](crate::Retry::notify) takes one.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::Notify;
///
/// let mut log = Vec::new();
/// let mut record = |err: &&str, delay: Duration| log.push(format!("{err} in {delay:?}"));
/// record.notify(&"busy", Duration::from_millis(100));
/// assert_eq!(log, ["busy in 100ms"]);
/// ```
pub trait Notify<E> {
    /// `error` is retried after `delay`.
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
    /// let mut waits = Vec::new();
    /// let result: Result<(), &str> = timer
    ///     .retry(Backoff::exponential(Duration::from_millis(10)).max_attempts(3), || async {
    ///         Err("busy")
    ///     })
    ///     .notify(|_: &&str, delay: Duration| waits.push(delay))
    ///     .await;
    /// assert_eq!(result, Err("busy"));
    /// assert_eq!(waits, [Duration::from_millis(10), Duration::from_millis(20)]);
    /// # }
    /// ```
    fn notify(&mut self, error: &E, delay: Duration);
}

/// Lets an error set the next wait ([`Retry::retry_after`](crate::Retry::retry_after)).
///
/// A closure `FnMut(&E) -> Option<Duration>` is a `RetryAfter`;
/// [`Retry::retry_after`](crate::Retry::retry_after) takes one.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::RetryAfter;
///
/// // An HTTP 503 with a `Retry-After: 2` header, say:
/// let mut from_header = |status: &(u16, Option<u64>)| status.1.map(Duration::from_secs);
/// assert_eq!(from_header.retry_after(&(503, Some(2))), Some(Duration::from_secs(2)));
/// assert_eq!(from_header.retry_after(&(500, None)), None); // the backoff's delay
/// ```
pub trait RetryAfter<E> {
    /// The wait `error` asks for, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::retry::{NoOverride, RetryAfter};
    ///
    /// let mut throttled = |e: &&str| (*e == "throttled").then_some(Duration::from_secs(5));
    /// assert_eq!(throttled.retry_after(&"throttled"), Some(Duration::from_secs(5)));
    /// assert_eq!(throttled.retry_after(&"reset"), None);
    /// assert_eq!(NoOverride.retry_after(&"throttled"), None);
    /// ```
    fn retry_after(&mut self, error: &E) -> Option<Duration>;
}

impl<E, F: FnMut(&E) -> bool> When<E> for F {
    fn retry(&mut self, error: &E) -> bool {
        self(error)
    }
}

impl<E, F: FnMut(&E, Duration)> Notify<E> for F {
    fn notify(&mut self, error: &E, delay: Duration) {
        self(error, delay)
    }
}

impl<E, F: FnMut(&E) -> Option<Duration>> RetryAfter<E> for F {
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        self(error)
    }
}

/// The default [`When`]: every error is retried.
///
/// # Examples
///
/// ```
/// use tickwheel::retry::{Always, When};
///
/// assert!(Always.retry(&std::io::Error::other("any error at all")));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Always;

impl<E> When<E> for Always {
    fn retry(&mut self, _: &E) -> bool {
        true
    }
}

/// The default [`Notify`]: nothing is told.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::retry::{Always, Backoff, NoOverride, Quiet};
/// use tickwheel::Retry;
///
/// let timer = tickwheel::Timer::new();
/// // Without `when`, `notify` or `retry_after`, the hooks are the defaults:
/// let retry: Retry<_, _, _, Always, Quiet, NoOverride> =
///     timer.retry(Backoff::constant(Duration::from_millis(10)), || async { Ok::<_, ()>(1) });
/// assert_eq!(retry.await, Ok(1));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl<E> Notify<E> for Quiet {
    fn notify(&mut self, _: &E, _: Duration) {}
}

/// The default [`RetryAfter`]: the backoff's delays are used as they are.
///
/// # Examples
///
/// ```
/// use tickwheel::retry::{NoOverride, RetryAfter};
///
/// assert_eq!(NoOverride.retry_after(&"503 with Retry-After: 30"), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOverride;

impl<E> RetryAfter<E> for NoOverride {
    fn retry_after(&mut self, _: &E) -> Option<Duration> {
        None
    }
}
