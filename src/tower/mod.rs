//! tower middleware on the wheel (feature `tower`): a timeout layer with
//! the shapes of `tower::timeout`, and tower's retry backoff traits for
//! [`retry::Backoff`](crate::retry::Backoff).
//!
//! tower's own `TimeoutLayer` and `ExponentialBackoff` call `tokio::time`
//! directly; these put the same timers on the wheel:
//!
//! | tower | tickwheel |
//! |---|---|
//! | `tower::timeout::TimeoutLayer::new(d)` | [`TimeoutLayer::new(d)`](TimeoutLayer::new) (the runtime's default timer), [`TimeoutLayer::with_timer(d, timer)`](TimeoutLayer::with_timer) |
//! | `tower::timeout::Timeout::new(svc, d)` | [`Timeout::new(svc, d)`](Timeout::new), [`Timeout::with_timer`] |
//! | `tower::timeout::error::Elapsed` | the same type, boxed (see below) |
//! | `ExponentialBackoffMaker` | [`retry::Backoff`](crate::retry::Backoff) (it implements `MakeBackoff`), [`BackoffMaker`] for a given timer |
//! | `ExponentialBackoff` | [`WheelBackoff`] |
//!
//! # What a timed-out request yields
//!
//! As with tower's, the service's error is a [`BoxError`], and a request
//! whose deadline passed fails with tower's own
//! [`tower::timeout::error::Elapsed`], boxed: a handler written for
//! `tower::timeout` (`err.is::<tower::timeout::error::Elapsed>()`, say to
//! answer 408) answers the same after the switch. The timer's own refusals
//! stay distinct, as a boxed [`tickwheel::Error`](crate::Error): a request
//! refused a timer at the timer's [`max_pending`](crate::Builder::max_pending)
//! limit fails at once instead of waiting unbounded (load shedding:
//! [`is_at_capacity`](crate::Error::is_at_capacity)), and one cut short
//! because the timer shut down (or refused a timer after it shut down) has
//! [`is_shutdown`](crate::Error::is_shutdown). The inner service's own
//! errors pass through unchanged, boxed.
//!
//! For HTTP services that should answer `408 Request Timeout` themselves,
//! as tower-http's `TimeoutLayer` does, see the `http` feature's
//! [`tickwheel::http`](crate::http) module.
//!
//! # Examples
//!
//! A server's handler, and a tower client stack with a timeout and retries,
//! all on the wheel:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tickwheel::retry::Backoff;
//! use tickwheel::tower::{TimeoutLayer, WheelBackoff};
//! use tower::retry::{backoff::Backoff as _, Policy, RetryLayer};
//! use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};
//!
//! // Retries failed calls, waiting on the wheel, until the backoff's
//! // attempts are used up.
//! #[derive(Clone)]
//! struct RetryErrors(WheelBackoff);
//!
//! impl<Req: Clone, Res> Policy<Req, Res, BoxError> for RetryErrors {
//!     type Future = tickwheel::tower::BackoffSleep;
//!
//!     fn retry(&mut self, _: &mut Req, result: &mut Result<Res, BoxError>) -> Option<Self::Future> {
//!         match result {
//!             Ok(_) => None,
//!             Err(_) => self.0.try_next_backoff(),
//!         }
//!     }
//!
//!     fn clone_request(&mut self, req: &Req) -> Option<Req> {
//!         Some(req.clone())
//!     }
//! }
//!
//! // A backend that takes 5 s to answer its first two calls.
//! let calls = Arc::new(AtomicUsize::new(0));
//! let backend = service_fn(move |req: &'static str| {
//!     let slow = calls.fetch_add(1, Ordering::SeqCst) < 2;
//!     async move {
//!         if slow {
//!             tickwheel::time::sleep(Duration::from_secs(5)).await;
//!         }
//!         Ok::<_, BoxError>(req.len())
//!     }
//! });
//! let backoff = WheelBackoff::new(Backoff::constant(Duration::from_millis(100)));
//! let mut client = ServiceBuilder::new()
//!     .layer(RetryLayer::new(RetryErrors(backoff)))
//!     .layer(TimeoutLayer::new(Duration::from_secs(1)))
//!     .service(backend);
//!
//! let start = tokio::time::Instant::now();
//! let len = client.ready().await.unwrap().call("ping").await.unwrap();
//! assert_eq!(len, 4);
//! // Two attempts timed out after 1 s each, with a 100 ms wait after each.
//! assert_eq!(start.elapsed(), Duration::from_millis(2_200));
//!
//! // A timeout alone: the error is tower's own `Elapsed`, boxed.
//! let mut slow = ServiceBuilder::new()
//!     .layer(TimeoutLayer::new(Duration::from_millis(10)))
//!     .service(service_fn(|()| async {
//!         tickwheel::time::sleep(Duration::from_secs(5)).await;
//!         Ok::<_, BoxError>(())
//!     }));
//! let err = slow.ready().await.unwrap().call(()).await.unwrap_err();
//! assert!(err.is::<tower::timeout::error::Elapsed>());
//! # }
//! ```

mod backoff;
mod timeout;

pub use self::backoff::{BackoffMaker, BackoffSleep, WheelBackoff};
pub use self::timeout::{ResponseFuture, Timeout, TimeoutLayer};

/// tower's type-erased error, the error type of [`Timeout`].
pub use ::tower::BoxError;
