//! [`TimeoutLayer`] and [`Timeout`]: tower's timeout middleware, with each
//! request's deadline a sleep on the wheel.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use ::tower::{BoxError, Layer, Service};
use pin_project_lite::pin_project;

use crate::ambient;
use crate::error::Error;
use crate::sleep::Until;
use crate::timeout::Timeout as TimeoutFuture;
use crate::timer::Timer;

/// Applies a [`Timeout`] to every request of the services it wraps, like
/// `tower::timeout::TimeoutLayer`, with the deadlines on the wheel.
/// (Feature `tower`.)
///
/// [`new`](TimeoutLayer::new) uses the default timer of the runtime each
/// request is made in ([`Timer::current`]);
/// [`with_timer`](TimeoutLayer::with_timer) uses the timer given.
///
/// See the [module docs](crate::tower#what-a-timed-out-request-yields) for
/// the errors a request can fail with.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::tower::TimeoutLayer;
/// use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
///
/// let timer = tickwheel::Timer::builder().tick(Duration::from_millis(1)).build().unwrap();
/// let mut svc = ServiceBuilder::new()
///     .layer(TimeoutLayer::with_timer(Duration::from_millis(5), timer.clone()))
///     .service(service_fn(|n: u32| async move { Ok::<_, BoxError>(n + 1) }));
/// assert_eq!(svc.ready().await.unwrap().call(1).await.unwrap(), 2);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timeout: Duration,
    timer: Option<Timer>,
}

impl TimeoutLayer {
    /// A layer whose requests time out after `timeout`, on the default timer
    /// of the runtime the request is made in.
    ///
    /// The layer itself needs no runtime; calling the service does, as
    /// tower's does (it panics outside one, as `tokio::time::sleep`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::tower::TimeoutLayer;
    /// use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
    ///
    /// // Built without a runtime (say, while assembling a stack at start-up);
    /// // each request's deadline goes on the runtime's default timer.
    /// let layer = TimeoutLayer::new(Duration::from_millis(100));
    /// let mut svc = ServiceBuilder::new()
    ///     .layer(layer)
    ///     .service(service_fn(|()| std::future::pending::<Result<(), BoxError>>()));
    /// let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
    /// assert!(err.is::<tower::timeout::error::Elapsed>());
    /// assert_eq!(tickwheel::Timer::current().stats().fired, 1);
    /// # }
    /// ```
    pub const fn new(timeout: Duration) -> Self {
        TimeoutLayer {
            timeout,
            timer: None,
        }
    }

    /// A layer whose requests time out after `timeout`, on `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::tower::TimeoutLayer;
    /// use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
    ///
    /// // A timer of its own, capped: past 1,000 waiting requests, new ones
    /// // are shed at once with tickwheel's Error.
    /// let timer = tickwheel::Timer::builder().max_pending(1_000).build().unwrap();
    /// let mut svc = ServiceBuilder::new()
    ///     .layer(TimeoutLayer::with_timer(Duration::from_millis(100), timer.clone()))
    ///     .service(service_fn(|()| std::future::pending::<Result<(), BoxError>>()));
    /// let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
    /// assert!(err.is::<tower::timeout::error::Elapsed>());
    /// assert_eq!(timer.stats().fired, 1, "the deadline was on this timer");
    /// # }
    /// ```
    pub fn with_timer(timeout: Duration, timer: Timer) -> Self {
        TimeoutLayer {
            timeout,
            timer: Some(timer),
        }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, service: S) -> Timeout<S> {
        Timeout {
            inner: service,
            timeout: self.timeout,
            timer: self.timer.clone(),
        }
    }
}

/// A service whose requests fail if they take longer than a timeout, like
/// `tower::timeout::Timeout`; each request's deadline is a [`Sleep`] on the
/// wheel, made when the request is called. (Feature `tower`.)
///
/// Its error is a [`BoxError`]: a request whose deadline passed fails with a
/// boxed [`tower::timeout::error::Elapsed`], tower's own type, so code that
/// matched tower's timeout keeps matching it; one refused a timer (at the
/// `max_pending` limit), or cut short because the timer shut down, fails
/// with a boxed [`tickwheel::Error`](crate::Error); and the inner service's
/// errors pass through, boxed. When the response and the deadline are ready
/// in the same poll, the response wins, as with tower's (see
/// [`ResponseFuture`](ResponseFuture#ordering)).
///
/// [`Sleep`]: crate::Sleep
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::tower::Timeout;
/// use tower::{service_fn, BoxError, Service, ServiceExt};
///
/// let slow = service_fn(|()| async {
///     tickwheel::time::sleep(Duration::from_secs(10)).await;
///     Ok::<_, BoxError>("done")
/// });
/// let mut svc = Timeout::new(slow, Duration::from_secs(1));
/// let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
/// assert!(err.is::<tower::timeout::error::Elapsed>());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    timer: Option<Timer>,
}

impl<S> Timeout<S> {
    /// Wraps `inner` with a `timeout` per request, on the default timer of
    /// the runtime each request is made in.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::tower::Timeout;
    /// use tower::{service_fn, BoxError, Service, ServiceExt};
    ///
    /// let double = service_fn(|n: u32| async move { Ok::<_, BoxError>(n * 2) });
    /// let mut svc = Timeout::new(double, Duration::from_secs(1));
    /// assert_eq!(svc.ready().await.unwrap().call(21).await.unwrap(), 42);
    /// # }
    /// ```
    pub const fn new(inner: S, timeout: Duration) -> Self {
        Timeout {
            inner,
            timeout,
            timer: None,
        }
    }

    /// Wraps `inner` with a `timeout` per request, on `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::tower::Timeout;
    /// use tower::{service_fn, BoxError, Service, ServiceExt};
    ///
    /// let timer = tickwheel::Timer::new();
    /// let slow = service_fn(|()| async {
    ///     tokio::time::sleep(Duration::from_secs(5)).await;
    ///     Ok::<_, BoxError>(())
    /// });
    /// let mut svc = Timeout::with_timer(slow, Duration::from_secs(1), timer.clone());
    /// let start = tokio::time::Instant::now();
    /// let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
    /// assert!(err.is::<tower::timeout::error::Elapsed>());
    /// assert_eq!(start.elapsed(), Duration::from_secs(1));
    /// # }
    /// ```
    pub fn with_timer(inner: S, timeout: Duration, timer: Timer) -> Self {
        Timeout {
            inner,
            timeout,
            timer: Some(timer),
        }
    }

    /// The inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let svc = tickwheel::tower::Timeout::new("inner", Duration::from_secs(1));
    /// assert_eq!(*svc.get_ref(), "inner");
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut svc = tickwheel::tower::Timeout::new(1, Duration::from_secs(1));
    /// *svc.get_mut() += 1;
    /// assert_eq!(*svc.get_ref(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes the middleware, returning the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let svc = tickwheel::tower::Timeout::new(vec![1, 2], Duration::from_secs(1));
    /// assert_eq!(svc.into_inner(), vec![1, 2]);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for Timeout<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// Calls the inner service and starts the request's deadline.
    ///
    /// # Panics
    ///
    /// Without a timer of its own, outside a tokio runtime (as tower's
    /// `Timeout` does).
    #[track_caller]
    fn call(&mut self, request: Request) -> ResponseFuture<S::Future> {
        let response = self.inner.call(request);
        let until = Until::After(self.timeout);
        let delay = ambient::try_sleep_on(self.timer.as_ref(), until);
        let state = match delay {
            Ok(delay) => State::Running {
                timeout: TimeoutFuture::new(response, delay),
            },
            // The inner future is dropped unpolled: the request is shed.
            Err(error) => State::Refused { error },
        };
        ResponseFuture { state }
    }
}

pin_project! {
    /// The response future of [`Timeout`]: the inner service's response, or
    /// an error once the deadline passes. (Feature `tower`.)
    ///
    /// # Ordering
    ///
    /// Each poll polls the inner future first and looks at the deadline only
    /// while it is pending, as tower's own `ResponseFuture` does: when the
    /// response and the deadline are both ready in the same poll, the
    /// response wins. (The `tickwheel::http` layer, like tower-http's,
    /// looks at the deadline first.)
    ///
    /// # Cancel safety
    ///
    /// Dropping it before it completes drops the inner service's future
    /// and cancels the request's deadline, freeing its timer entry at once;
    /// it is as cancel safe as the inner future.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::tower::{ResponseFuture, Timeout};
    /// use tower::{service_fn, BoxError, Service, ServiceExt};
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut svc = Timeout::with_timer(
    ///     service_fn(|()| std::future::pending::<Result<(), BoxError>>()),
    ///     Duration::from_secs(30),
    ///     timer.clone(),
    /// );
    /// let mut response = svc.ready().await.unwrap().call(());
    /// // Give up on it after 1 s: dropping it cancels its deadline at once.
    /// let gave_up = tokio::time::timeout(Duration::from_secs(1), &mut response).await;
    /// assert!(gave_up.is_err());
    /// assert_eq!(timer.pending(), 1);
    /// drop::<ResponseFuture<_>>(response);
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    #[derive(Debug)]
    enum State<F> {
        Running { #[pin] timeout: TimeoutFuture<F> },
        Refused { error: Error },
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running { timeout } => Poll::Ready(match ready!(timeout.poll(cx)) {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(err)) => Err(err.into()),
                // tower's own error type, so a handler written for
                // `tower::timeout` (`err.is::<tower::timeout::error::Elapsed>()`)
                // answers the same after the switch; a wait the timer cut
                // short by shutting down is the timer's refusal, not a
                // deadline that passed, and stays `tickwheel::Error`.
                Err(elapsed) if elapsed.is_shutdown() => Err(Box::new(Error::shutdown())),
                Err(_) => Err(Box::new(::tower::timeout::error::Elapsed::new())),
            }),
            StateProj::Refused { error } => Poll::Ready(Err(Box::new(*error))),
        }
    }
}
