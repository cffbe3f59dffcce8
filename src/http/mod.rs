//! HTTP request timeouts on the wheel that answer `408 Request Timeout`
//! themselves (feature `http`), like tower-http's `TimeoutLayer`.
//!
//! Most HTTP services put their request deadline in tower-http's
//! `TimeoutLayer`, which waits on `tokio::time` and, when a request takes
//! too long, drops the handler and answers with an empty response of status
//! 408 instead of failing the connection. [`TimeoutLayer`] does the same on
//! the wheel, with the same types (`http::Request<B>` in,
//! `http::Response<B>` out, the inner service's error type unchanged), so
//! it drops into a hyper or axum stack where tower-http's was:
//!
//! | tower-http | tickwheel |
//! |---|---|
//! | `tower_http::timeout::TimeoutLayer::new(d)` | [`TimeoutLayer::new(d)`](TimeoutLayer::new) (the runtime's default timer) |
//! | `TimeoutLayer::with_status_code(status, d)` | [`TimeoutLayer::with_status_code(status, d)`](TimeoutLayer::with_status_code) |
//! | | [`TimeoutLayer::with_timer(d, timer)`](TimeoutLayer::with_timer), on a timer you hold |
//! | `tower_http::timeout::Timeout::new(svc, d)` | [`Timeout::new(svc, d)`](Timeout::new) |
//! | `Timeout::with_status_code(svc, status, d)`, `Timeout::layer_with_status_code(status, d)` | [`Timeout::with_status_code`], [`Timeout::layer_with_status_code`] |
//!
//! # What a client gets
//!
//! - The handler answered in time: its response, unchanged.
//! - The deadline passed first: the handler's future is dropped and the
//!   response is `ResBody::default()` with the layer's status (408 unless
//!   set otherwise), as with tower-http. Never before the deadline. The
//!   deadline is looked at before the handler is polled, as tower-http
//!   does, so a handler ready in the same poll as its deadline passes
//!   (one finishing at its deadline, or polled late under load) gets this
//!   answer too, not its own.
//! - The timer refused the request a deadline (it is at its
//!   [`max_pending`](crate::Builder::max_pending) limit, or shut down), or
//!   shut down while the request waited: `503 Service Unavailable`, at
//!   once, without calling the handler when no deadline could be set. The
//!   timer's refusals are load shedding, not a slow request, so they are
//!   kept apart from 408.
//! - The handler failed: its error, unchanged.
//!
//! The layer needs tower's `Layer` and `Service` traits, so the `http`
//! feature turns on the `tower` feature too.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::convert::Infallible;
//! use std::time::Duration;
//! use http::{Request, Response, StatusCode};
//! use tickwheel::http::TimeoutLayer;
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! let handler = service_fn(|req: Request<String>| async move {
//!     if req.uri().path() == "/slow" {
//!         tickwheel::time::sleep(Duration::from_secs(10)).await;
//!     }
//!     Ok::<_, Infallible>(Response::new(String::from("hello")))
//! });
//! let mut app = ServiceBuilder::new()
//!     .layer(TimeoutLayer::new(Duration::from_secs(1)))
//!     .service(handler);
//!
//! let fast = app.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
//! assert_eq!(fast.status(), StatusCode::OK);
//! assert_eq!(fast.body(), "hello");
//!
//! let slow = Request::builder().uri("/slow").body(String::new()).unwrap();
//! let slow = app.ready().await.unwrap().call(slow).await.unwrap();
//! assert_eq!(slow.status(), StatusCode::REQUEST_TIMEOUT);
//! assert!(slow.body().is_empty());
//! # }
//! ```
//!
//! # With hyper
//!
//! hyper 1 serves its own `Service` trait, so a tower stack is adapted per
//! connection (hyper-util's `TowerToHyperService` does the same; it needs
//! hyper-util's `service` feature). The response body needs `Default` for
//! the timeout's empty answer: `String`, or http-body-util's `Full` or
//! `Empty`.
//!
//! ```no_run
//! use std::convert::Infallible;
//! use std::time::Duration;
//! use http::{Request, Response};
//! use hyper::body::Incoming;
//! use hyper_util::rt::TokioIo;
//! use tickwheel::http::TimeoutLayer;
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! async fn handler(_: Request<Incoming>) -> Result<Response<String>, Infallible> {
//!     Ok(Response::new("hello".to_string()))
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let app = ServiceBuilder::new()
//!         .layer(TimeoutLayer::new(Duration::from_secs(10)))
//!         .service(service_fn(handler));
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     loop {
//!         let (stream, _) = listener.accept().await?;
//!         let app = app.clone();
//!         let service = hyper::service::service_fn(move |request| {
//!             let mut app = app.clone();
//!             async move { app.ready().await?.call(request).await }
//!         });
//!         tokio::spawn(
//!             hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
//!         );
//!     }
//! }
//! ```
//!
//! The crate's `http_service` example (`cargo run --example http_service
//! --features http`) runs such a server and calls it over loopback.

mod timeout;

pub use self::timeout::{ResponseFuture, Timeout, TimeoutLayer};
