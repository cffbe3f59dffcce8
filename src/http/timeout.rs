//! [`TimeoutLayer`] and [`Timeout`]: a request deadline on the wheel that
//! answers with a status code of its own (408 by default) when it passes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::http::{Request, Response, StatusCode};
use ::tower::{Layer, Service};
use pin_project_lite::pin_project;

use crate::ambient;
use crate::sleep::{Sleep, Until};
use crate::timer::Timer;

/// Applies a [`Timeout`] to every request of the HTTP services it wraps,
/// like tower-http's `TimeoutLayer`, with the deadlines on the wheel.
/// (Feature `http`.)
///
/// A request that takes longer than the timeout is answered with an empty
/// response (`ResBody::default()`) of status 408 `Request Timeout`, or the
/// status given to [`with_status_code`](TimeoutLayer::with_status_code) or
/// [`status_code`](TimeoutLayer::status_code). See the
/// [module docs](crate::http#what-a-client-gets) for every outcome.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use http::{Request, Response, StatusCode};
/// use tickwheel::http::TimeoutLayer;
/// use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
///
/// let stuck = service_fn(|_: Request<String>| async {
///     std::future::pending::<Result<Response<String>, Infallible>>().await
/// });
/// let mut app = ServiceBuilder::new()
///     .layer(TimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, Duration::from_millis(500)))
///     .service(stuck);
/// let response = app.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
/// assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timeout: Duration,
    status: StatusCode,
    timer: Option<Timer>,
}

impl TimeoutLayer {
    /// A layer whose requests are answered with 408 `Request Timeout` after
    /// `timeout`, on the default timer of the runtime each request is made
    /// in ([`Timer::current`]).
    ///
    /// The layer itself needs no runtime; calling the service does (it
    /// panics outside one, as tower-http's does).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::http::TimeoutLayer;
    ///
    /// // Built outside any runtime, e.g. while assembling a router.
    /// let layer = TimeoutLayer::new(Duration::from_secs(30));
    /// assert_eq!(layer.timeout(), Duration::from_secs(30));
    /// assert_eq!(layer.get_status_code(), http::StatusCode::REQUEST_TIMEOUT);
    /// ```
    pub const fn new(timeout: Duration) -> Self {
        TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout)
    }

    /// A layer whose requests are answered with `status` after `timeout`,
    /// on the default timer of the runtime each request is made in (the
    /// argument order of tower-http's `with_status_code`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use http::StatusCode;
    /// use tickwheel::http::TimeoutLayer;
    ///
    /// let layer = TimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, Duration::from_secs(5));
    /// assert_eq!(layer.get_status_code(), StatusCode::GATEWAY_TIMEOUT);
    /// ```
    pub const fn with_status_code(status: StatusCode, timeout: Duration) -> Self {
        TimeoutLayer {
            timeout,
            status,
            timer: None,
        }
    }

    /// A layer whose requests are answered with 408 after `timeout`, on
    /// `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    /// use http::{Request, Response, StatusCode};
    /// use tickwheel::http::TimeoutLayer;
    /// use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
    ///
    /// let timer = tickwheel::Timer::builder().tick(Duration::from_millis(10)).build().unwrap();
    /// let mut app = ServiceBuilder::new()
    ///     .layer(TimeoutLayer::with_timer(Duration::from_millis(100), timer.clone()))
    ///     .service(service_fn(|_: Request<String>| async {
    ///         std::future::pending::<Result<Response<String>, Infallible>>().await
    ///     }));
    /// let response = app.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
    /// assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    /// assert_eq!(timer.stats().fired, 1, "the deadline fired on this timer");
    /// # }
    /// ```
    pub fn with_timer(timeout: Duration, timer: Timer) -> Self {
        TimeoutLayer {
            timeout,
            status: StatusCode::REQUEST_TIMEOUT,
            timer: Some(timer),
        }
    }

    /// The same layer, answering timed-out requests with `status` instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use http::StatusCode;
    /// use tickwheel::http::TimeoutLayer;
    ///
    /// let layer = TimeoutLayer::new(Duration::from_secs(5)).status_code(StatusCode::SERVICE_UNAVAILABLE);
    /// assert_eq!(layer.get_status_code(), StatusCode::SERVICE_UNAVAILABLE);
    /// ```
    pub fn status_code(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The time each request is given.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::http::TimeoutLayer;
    ///
    /// assert_eq!(TimeoutLayer::new(Duration::from_secs(2)).timeout(), Duration::from_secs(2));
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The status a timed-out request is answered with.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::http::TimeoutLayer;
    ///
    /// let layer = TimeoutLayer::new(Duration::from_secs(2));
    /// assert_eq!(layer.get_status_code(), http::StatusCode::REQUEST_TIMEOUT);
    /// ```
    pub fn get_status_code(&self) -> StatusCode {
        self.status
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            timeout: self.timeout,
            status: self.status,
            timer: self.timer.clone(),
        }
    }
}

/// An HTTP service whose requests are answered with a timeout status (408
/// by default) if the inner service takes longer than a timeout, like
/// tower-http's `Timeout`; each request's deadline is a
/// [`Sleep`] on the wheel, made when the request is called.
/// (Feature `http`.)
///
/// Its error type is the inner service's: a timeout is a response, not an
/// error. See the [module docs](crate::http#what-a-client-gets). When the
/// handler's response and the deadline are ready in the same poll, the
/// timeout status wins, as with tower-http (see
/// [`ResponseFuture`](ResponseFuture#ordering)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use http::{Request, Response, StatusCode};
/// use tickwheel::http::Timeout;
/// use tower::{service_fn, Service, ServiceExt};
///
/// let slow = service_fn(|_: Request<String>| async {
///     tickwheel::time::sleep(Duration::from_secs(3)).await;
///     Ok::<_, Infallible>(Response::new(String::from("late")))
/// });
/// let mut svc = Timeout::new(slow, Duration::from_secs(1));
/// let start = tokio::time::Instant::now();
/// let response = svc.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
/// assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    status: StatusCode,
    timer: Option<Timer>,
}

impl<S> Timeout<S> {
    /// Wraps `inner` with a `timeout` per request, answered with 408, on
    /// the default timer of the runtime each request is made in.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::http::Timeout;
    ///
    /// let svc = Timeout::new(tower::service_fn(|req: http::Request<String>| async move {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(req.into_body()))
    /// }), Duration::from_secs(10));
    /// # let _ = svc;
    /// ```
    pub const fn new(inner: S, timeout: Duration) -> Self {
        Timeout {
            inner,
            timeout,
            status: StatusCode::REQUEST_TIMEOUT,
            timer: None,
        }
    }

    /// Wraps `inner` with a `timeout` per request, answered with `status`,
    /// on the default timer of the runtime each request is made in
    /// (tower-http's `Timeout::with_status_code`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    /// use http::{Request, Response, StatusCode};
    /// use tickwheel::http::Timeout;
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// let stuck = service_fn(|_: Request<String>| {
    ///     std::future::pending::<Result<Response<String>, Infallible>>()
    /// });
    /// let mut svc = Timeout::with_status_code(stuck, StatusCode::GATEWAY_TIMEOUT, Duration::from_secs(1));
    /// let response = svc.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
    /// assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    /// # }
    /// ```
    pub const fn with_status_code(inner: S, status: StatusCode, timeout: Duration) -> Self {
        Timeout {
            inner,
            timeout,
            status,
            timer: None,
        }
    }

    /// A [`TimeoutLayer`] answering with `status` after `timeout`
    /// (tower-http's `Timeout::layer_with_status_code`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use http::StatusCode;
    /// use tickwheel::http::Timeout;
    ///
    /// let layer = Timeout::<()>::layer_with_status_code(StatusCode::GATEWAY_TIMEOUT, Duration::from_secs(5));
    /// assert_eq!(layer.get_status_code(), StatusCode::GATEWAY_TIMEOUT);
    /// ```
    pub const fn layer_with_status_code(status: StatusCode, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer::with_status_code(status, timeout)
    }

    /// Wraps `inner` with a `timeout` per request, answered with 408, on
    /// `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::http::Timeout;
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// let timer = tickwheel::Timer::new();
    /// let echo = service_fn(|req: http::Request<String>| async move {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(req.into_body()))
    /// });
    /// let mut svc = Timeout::with_timer(echo, Duration::from_secs(10), timer.clone());
    /// let response = svc.ready().await.unwrap().call(http::Request::new("hi".to_string())).await.unwrap();
    /// assert_eq!(response.body(), "hi");
    /// // Answered on its first poll: the deadline never had to wait.
    /// assert_eq!(timer.stats().fired, 0);
    /// # }
    /// ```
    pub fn with_timer(inner: S, timeout: Duration, timer: Timer) -> Self {
        Timeout {
            inner,
            timeout,
            status: StatusCode::REQUEST_TIMEOUT,
            timer: Some(timer),
        }
    }

    /// The inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let svc = tickwheel::http::Timeout::new("inner", Duration::from_secs(1));
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
    /// let mut svc = tickwheel::http::Timeout::new(1, Duration::from_secs(1));
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
    /// let svc = tickwheel::http::Timeout::new(vec![1, 2], Duration::from_secs(1));
    /// assert_eq!(svc.into_inner(), vec![1, 2]);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Timeout<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Default,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    /// Starts the request's deadline and calls the inner service; when the
    /// timer refuses a deadline, answers 503 at once without calling it.
    ///
    /// # Panics
    ///
    /// Without a timer of its own, outside a tokio runtime (as tower-http's
    /// `Timeout` does).
    #[track_caller]
    fn call(&mut self, request: Request<ReqBody>) -> ResponseFuture<S::Future> {
        let until = Until::After(self.timeout);
        let delay = ambient::try_sleep_on(self.timer.as_ref(), until);
        let state = match delay {
            Ok(delay) => State::Running {
                inner: self.inner.call(request),
                delay,
                status: self.status,
            },
            // Shed: the handler never runs, and the request is dropped.
            Err(_) => State::Refused,
        };
        ResponseFuture { state }
    }
}

pin_project! {
    /// The response future of [`Timeout`]: the inner service's response, or
    /// a timeout response once the deadline passes. (Feature `http`.)
    ///
    /// # Ordering
    ///
    /// Each poll looks at the deadline first and polls the inner future only
    /// while the deadline has not passed, as tower-http's `ResponseFuture`
    /// does: when the handler and the deadline are both ready in the same
    /// poll (a handler that finishes at its deadline, or a task that is
    /// polled late under load), the answer is the timeout status, not the
    /// handler's response. (The [`tower`](crate::tower) layer, like tower's
    /// own, polls the other way round.)
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
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    /// use http::{Request, Response};
    /// use tickwheel::http::{ResponseFuture, Timeout};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// let timer = tickwheel::Timer::new();
    /// let stuck = service_fn(|_: Request<String>| {
    ///     std::future::pending::<Result<Response<String>, Infallible>>()
    /// });
    /// let mut svc = Timeout::with_timer(stuck, Duration::from_secs(30), timer.clone());
    /// let mut response = svc.ready().await.unwrap().call(Request::new(String::new()));
    /// // The client went away after 1 s: dropping the future frees the deadline.
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
        Running { #[pin] inner: F, delay: Sleep, status: StatusCode },
        Refused,
    }
}

/// An empty response with `status`.
fn respond<B: Default>(status: StatusCode) -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = status;
    response
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running {
                inner,
                delay,
                status,
            } => {
                // The deadline first, then the handler, as tower-http polls
                // them: a handler ready in the same poll as its deadline
                // passes gets the timeout status, as it would there.
                if Pin::new(&mut *delay).poll(cx).is_ready() {
                    // The timer went away while the request waited: not a
                    // slow request, so not the timeout status.
                    let status = if delay.ended_by_shutdown() {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        *status
                    };
                    return Poll::Ready(Ok(respond(status)));
                }
                inner.poll(cx)
            }
            StateProj::Refused => Poll::Ready(Ok(respond(StatusCode::SERVICE_UNAVAILABLE))),
        }
    }
}
