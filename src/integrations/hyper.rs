//! `hyper::rt::Timer` for [`Timer`]: hyper 1.x's connection timers (the
//! HTTP/1 header-read timeout, HTTP/2 keep-alive pings) on the wheel.
//!
//! hyper speaks `std::time::Instant`; the wheel speaks tokio's. The two are
//! the same clock except when tokio's clock is paused or advanced in tests,
//! so the impl also overrides `hyper::rt::Timer::now` with the wheel's own
//! clock ([`Timer::now`]): hyper computes its deadlines as
//! `timer.now() + timeout`, and they then stay on the clock the wheel fires
//! by, paused or not.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant as StdInstant};

use ::hyper::rt;
use pin_project_lite::pin_project;
use tokio::time::Instant;

use crate::sleep::Sleep;
use crate::timer::Timer;

/// Lets hyper 1.x run its timers on this wheel: pass a clone of the timer to
/// a connection builder's `timer` method. (Feature `hyper`.)
///
/// - `sleep` and `sleep_until` return this timer's [`Sleep`], boxed.
/// - `reset` moves a tickwheel sleep in place ([`Sleep::reset`]: it keeps its
///   wheel entry and its waker, on the timer that made it); a sleep from
///   another `hyper::rt::Timer` is replaced by a new one from this timer.
/// - `now` is [`Timer::now`], the timer's clock (tokio's, of the driver's
///   runtime) read exactly, so that hyper's deadlines, which it computes
///   from `now`, follow tokio's paused clock in tests just as the wheel does.
///
/// Deadlines round up to the next tick, as for every sleep on the wheel,
/// which suits hyper's timeouts (seconds, not milliseconds).
///
/// At the [`max_pending`](crate::Builder::max_pending) limit, and after the
/// timer has [shut down](Timer::shutdown), a new sleep (or a reset one) falls
/// back to `tokio::time` rather than panicking inside hyper's connection
/// task: the connection keeps exact timeouts, just off the wheel. (A sleep
/// that was waiting on the wheel when it shut down completes at once, as
/// every such sleep does.)
///
/// # Examples
///
/// A server connection whose client never sends its request head is closed
/// when hyper's header-read timeout, timed on the wheel, runs out:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use hyper::{body::Incoming, service::service_fn, Request, Response};
/// use hyper_util::rt::TokioIo;
/// use tokio::time::Instant;
///
/// let timer = tickwheel::Timer::new();
/// let (_client, server) = tokio::io::duplex(1024); // the client stays silent
/// let service = service_fn(|_: Request<Incoming>| async {
///     Ok::<_, Infallible>(Response::new(String::new()))
/// });
/// let start = Instant::now();
/// let result = hyper::server::conn::http1::Builder::new()
///     .timer(timer.clone())
///     .header_read_timeout(Duration::from_secs(5))
///     .serve_connection(TokioIo::new(server), service)
///     .await;
/// assert!(result.unwrap_err().is_timeout());
/// assert!(start.elapsed() >= Duration::from_secs(5));
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
impl rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn rt::Sleep>> {
        match self.try_sleep(duration) {
            Ok(sleep) => Box::pin(sleep),
            Err(_) => Box::pin(Fallback::new(tokio::time::sleep(duration))),
        }
    }

    fn sleep_until(&self, deadline: StdInstant) -> Pin<Box<dyn rt::Sleep>> {
        let deadline = Instant::from_std(deadline);
        match self.try_sleep_until(deadline) {
            Ok(sleep) => Box::pin(sleep),
            Err(_) => Box::pin(Fallback::new(tokio::time::sleep_until(deadline))),
        }
    }

    fn now(&self) -> StdInstant {
        Timer::now(self).into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn rt::Sleep>>, new_deadline: StdInstant) {
        let deadline = Instant::from_std(new_deadline);
        if let Some(ours) = sleep.as_mut().downcast_mut_pin::<Sleep>() {
            if ours.try_reset(deadline).is_err() {
                // Shut down: the connection's timers go on with tokio's.
                *sleep = Box::pin(Fallback::new(tokio::time::sleep_until(deadline)));
            }
        } else if let Some(fallback) = sleep.as_mut().downcast_mut_pin::<Fallback>() {
            fallback.project().inner.reset(deadline);
        } else {
            *sleep = rt::Timer::sleep_until(self, new_deadline);
        }
    }
}

/// A [`Sleep`] is `Send + Sync + Future<Output = ()>`, so hyper can hold it
/// boxed as it is; `reset` finds it again by downcasting. (Feature `hyper`.)
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
impl rt::Sleep for Sleep {}

pin_project! {
    /// A `tokio::time` sleep, for when the wheel is at its `max_pending`
    /// limit or has shut down.
    struct Fallback {
        #[pin]
        inner: tokio::time::Sleep,
    }
}

impl Fallback {
    fn new(inner: tokio::time::Sleep) -> Self {
        Fallback { inner }
    }
}

impl std::future::Future for Fallback {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().inner.poll(cx)
    }
}

impl rt::Sleep for Fallback {}
