//! `hyper::rt::Timer` for [`Timer`], and for [`HyperTimer`] (the current
//! runtime's default timer, found at each sleep): hyper 1.x's connection
//! timers (the HTTP/1 header-read timeout, HTTP/2 keep-alive pings) on the
//! wheel.
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

use crate::ambient;
use crate::error::Error;
use crate::sleep::{Refuse, Sleep, Until};
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

/// hyper 1.x's timer on the wheel, made anywhere: each of hyper's sleeps
/// goes on the default timer ([`Timer::current`]) of the runtime current
/// when hyper makes it, as [`tickwheel::time::sleep`](crate::time::sleep)
/// does. Where hyper users write `.timer(TokioTimer::new())`. (Feature
/// `hyper`.)
///
/// hyper-util's `TokioTimer` holds nothing and uses whichever runtime is
/// current when each sleep is made; so does this handle. It can be made
/// before any runtime exists (while a connection builder is set up), and
/// one builder serves connections on several runtimes, each connection's
/// sleeps on its own runtime's default timer. A [`Timer`] passed to
/// `.timer(..)` instead puts every sleep on that one timer (and
/// [`Timer::current`] panics outside a runtime): hold one for a timer of
/// your own settings.
///
/// - `sleep` and `sleep_until` return a [`Sleep`] on the current runtime's
///   default timer, boxed.
/// - `reset` moves a tickwheel sleep in place ([`Sleep::reset`]): it stays
///   on the timer that made it, as a reset `tokio::time::Sleep` stays on its
///   runtime. A sleep from another `hyper::rt::Timer` is replaced by a new
///   one, made as `sleep_until` makes it.
/// - `now` is `tokio::time::Instant::now()`, the current runtime's clock
///   (which its default timer reads), as `TokioTimer`'s: hyper computes its
///   deadlines from it, so they follow tokio's paused clock in tests. It
///   never panics (outside a runtime it is the system clock).
///
/// At the default timer's [`max_pending`](crate::Builder::max_pending)
/// limit, and after it was [shut down](Timer::shutdown) by hand, a new (or
/// reset) sleep falls back to `tokio::time`, as [`Timer`]'s own impl does:
/// no panic inside hyper's connection task.
///
/// # Panics
///
/// `sleep` and `sleep_until` (and `reset` of a sleep it cannot move in
/// place) panic outside a tokio runtime, and in a runtime built without its
/// time driver: as [`tickwheel::time::sleep`](crate::time::sleep) and
/// `TokioTimer` do. hyper makes its sleeps in the connection's task, inside
/// the runtime that runs it.
///
/// # Examples
///
/// A server connection whose client never sends its request head is closed
/// when hyper's header-read timeout, timed on the runtime's default timer,
/// runs out; the builder is made before the runtime:
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use hyper::{body::Incoming, service::service_fn, Request, Response};
/// use hyper_util::rt::TokioIo;
///
/// let mut builder = hyper::server::conn::http1::Builder::new();
/// // was: builder.timer(hyper_util::rt::TokioTimer::new())
/// builder
///     .timer(tickwheel::HyperTimer::new())
///     .header_read_timeout(Duration::from_secs(5));
///
/// let runtime = tokio::runtime::Builder::new_current_thread()
///     .enable_all()
///     .start_paused(true)
///     .build()
///     .unwrap();
/// runtime.block_on(async {
///     let (_client, server) = tokio::io::duplex(1024); // the client stays silent
///     let service = service_fn(|_: Request<Incoming>| async {
///         Ok::<_, Infallible>(Response::new(String::new()))
///     });
///     let start = tokio::time::Instant::now();
///     let result = builder.serve_connection(TokioIo::new(server), service).await;
///     assert!(result.unwrap_err().is_timeout());
///     assert!(start.elapsed() >= Duration::from_secs(5));
///     assert_eq!(tickwheel::Timer::current().stats().fired, 1);
/// });
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperTimer {
    _private: (),
}

impl HyperTimer {
    /// The handle; it holds nothing, and can be made anywhere, inside a
    /// runtime or not (see [`HyperTimer`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // No runtime yet: a server connection builder set up in `main`, as
    /// // with hyper-util's `TokioTimer::new()`.
    /// let mut builder = hyper::server::conn::http1::Builder::new();
    /// builder
    ///     .timer(tickwheel::HyperTimer::new())
    ///     .header_read_timeout(Duration::from_secs(30));
    /// ```
    pub const fn new() -> HyperTimer {
        HyperTimer { _private: () }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
impl rt::Timer for HyperTimer {
    #[track_caller]
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn rt::Sleep>> {
        on_the_wheel(ambient::sleep(Until::After(duration), Refuse::Error))
            .unwrap_or_else(|| Box::pin(Fallback::new(tokio::time::sleep(duration))))
    }

    #[track_caller]
    fn sleep_until(&self, deadline: StdInstant) -> Pin<Box<dyn rt::Sleep>> {
        let deadline = Instant::from_std(deadline);
        on_the_wheel(ambient::sleep(Until::At(deadline), Refuse::Error))
            .unwrap_or_else(|| Box::pin(Fallback::new(tokio::time::sleep_until(deadline))))
    }

    fn now(&self) -> StdInstant {
        Instant::now().into_std()
    }

    #[track_caller]
    fn reset(&self, sleep: &mut Pin<Box<dyn rt::Sleep>>, new_deadline: StdInstant) {
        let deadline = Instant::from_std(new_deadline);
        if let Some(ours) = sleep.as_mut().downcast_mut_pin::<Sleep>() {
            if ours.try_reset(deadline).is_ok() {
                return;
            }
            // Its timer shut down: a new sleep, as `sleep_until` makes one.
        } else if let Some(fallback) = sleep.as_mut().downcast_mut_pin::<Fallback>() {
            fallback.project().inner.reset(deadline);
            return;
        }
        *sleep = rt::Timer::sleep_until(self, new_deadline);
    }
}

/// A sleep the wheel accepted, boxed for hyper; `None` if it refused one
/// (at `max_pending`, or shut down).
fn on_the_wheel(sleep: Result<Sleep, Error>) -> Option<Pin<Box<dyn rt::Sleep>>> {
    match sleep {
        Ok(sleep) => Some(Box::pin(sleep)),
        Err(_) => None,
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
