//! The `tower` feature: a tower client stack (timeout and retry on the
//! wheel) against a real hyper HTTP/1 server over loopback TCP, on the
//! paused clock, and tower's backoff traits on their own.

mod common;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{service::service_fn, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tickwheel::retry::Backoff;
use tickwheel::tower::{BackoffSleep, TimeoutLayer, WheelBackoff};
use tickwheel::Timer;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tower::retry::backoff::{Backoff as _, MakeBackoff};
use tower::retry::{Policy, RetryLayer};
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What the server has seen.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    flaky: AtomicUsize,
}

/// A hyper server on a loopback port: `/fast` answers at once, `/slow`
/// after 10 s (waiting on the runtime's default wheel timer), `/flaky`
/// with 503 twice and then 200, `/down` always with 503.
async fn server() -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let state = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let seen = state.clone();
            let handler = service_fn(move |req: Request<Incoming>| {
                let seen = seen.clone();
                async move {
                    seen.requests.fetch_add(1, Ordering::SeqCst);
                    let status = match req.uri().path() {
                        "/slow" => {
                            tickwheel::time::sleep(Duration::from_secs(10)).await;
                            StatusCode::OK
                        }
                        "/flaky" if seen.flaky.fetch_add(1, Ordering::SeqCst) < 2 => {
                            StatusCode::SERVICE_UNAVAILABLE
                        }
                        "/down" => StatusCode::SERVICE_UNAVAILABLE,
                        _ => StatusCode::OK,
                    };
                    let mut response = Response::new(String::new());
                    *response.status_mut() = status;
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    (addr, seen)
}

/// A tower service that sends a GET for a path to the server over a new
/// connection and returns the response's status.
#[derive(Clone)]
struct Client {
    addr: SocketAddr,
}

impl Service<&'static str> for Client {
    type Response = StatusCode;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<StatusCode, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, path: &'static str) -> Self::Future {
        let addr = self.addr;
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            let request = Request::get(path)
                .header("host", "localhost")
                .body(String::new())?;
            Ok(sender.send_request(request).await?.status())
        })
    }
}

/// Retries 503s, waiting the backoff's delays on the wheel, until the
/// backoff's attempts are used up.
#[derive(Clone)]
struct RetryUnavailable(WheelBackoff);

impl Policy<&'static str, StatusCode, BoxError> for RetryUnavailable {
    type Future = BackoffSleep;

    fn retry(
        &mut self,
        _: &mut &'static str,
        result: &mut Result<StatusCode, BoxError>,
    ) -> Option<BackoffSleep> {
        match result {
            Ok(status) if *status == StatusCode::SERVICE_UNAVAILABLE => self.0.try_next_backoff(),
            _ => None,
        }
    }

    fn clone_request(&mut self, path: &&'static str) -> Option<&'static str> {
        Some(*path)
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_request_times_out_with_towers_elapsed() {
    let _watchdog = common::Watchdog::start();
    let (addr, seen) = server().await;
    let mut client = ServiceBuilder::new()
        .layer(TimeoutLayer::new(Duration::from_secs(1)))
        .service(Client { addr });

    assert_eq!(
        client.ready().await.unwrap().call("/fast").await.unwrap(),
        StatusCode::OK
    );

    let start = Instant::now();
    let err = client
        .ready()
        .await
        .unwrap()
        .call("/slow")
        .await
        .unwrap_err();
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(1),
        "never early, not late"
    );
    // tower's own type, so a handler written for tower::timeout matches
    // it unchanged; not tickwheel's Elapsed.
    assert!(
        err.is::<tower::timeout::error::Elapsed>(),
        "a timeout is tower's Elapsed, got {err:?}"
    );
    assert!(!err.is::<tickwheel::Elapsed>());
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
    // Both timeouts and the server's 10 s sleep were wheel entries of this
    // runtime's default timer.
    assert_eq!(Timer::current().stats().registered, 3);
}

#[tokio::test(start_paused = true)]
async fn retries_wait_their_backoff_on_the_given_timer() {
    let _watchdog = common::Watchdog::start();
    let (addr, seen) = server().await;
    let timer = Timer::builder().tick(ms(1)).build().unwrap();
    let backoff = WheelBackoff::with_timer(Backoff::constant(ms(100)), timer.clone());
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryUnavailable(backoff)))
        .layer(TimeoutLayer::with_timer(
            Duration::from_secs(1),
            timer.clone(),
        ))
        .service(Client { addr });

    let start = Instant::now();
    let status = client.ready().await.unwrap().call("/flaky").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(start.elapsed(), ms(200), "two waits of 100 ms");
    assert_eq!(seen.requests.load(Ordering::SeqCst), 3);
    let stats = timer.stats();
    assert_eq!(stats.fired, 2, "the two backoff waits fired on the timer");
    assert_eq!(stats.registered, 5, "and three request timeouts registered");
}

/// The backoff's `max_attempts` bounds tower's retries when the policy
/// uses `try_next_backoff`: 3 attempts, 2 waits, then the last answer.
#[tokio::test(start_paused = true)]
async fn the_backoff_settings_bound_the_retries() {
    let _watchdog = common::Watchdog::start();
    let (addr, seen) = server().await;
    let backoff = WheelBackoff::new(Backoff::exponential(ms(100)).max_attempts(3));
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryUnavailable(backoff)))
        .service(Client { addr });
    let start = Instant::now();
    let status = client.ready().await.unwrap().call("/down").await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), ms(300), "100 ms, then 200 ms");
    assert_eq!(seen.requests.load(Ordering::SeqCst), 3);

    // Each request gets a fresh session (tower clones the policy per
    // request, and a clone starts afresh).
    let status = client.ready().await.unwrap().call("/down").await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.requests.load(Ordering::SeqCst), 6);
}

/// At the timer's `max_pending` limit a request is shed at once with
/// tickwheel's `Error`, and never reaches the server.
#[tokio::test(start_paused = true)]
async fn a_request_refused_a_timer_is_shed() {
    let _watchdog = common::Watchdog::start();
    let (addr, seen) = server().await;
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let mut client = ServiceBuilder::new()
        .layer(TimeoutLayer::with_timer(
            Duration::from_secs(1),
            timer.clone(),
        ))
        .service(Client { addr });
    let held = timer.sleep(Duration::from_secs(5));
    let err = client
        .ready()
        .await
        .unwrap()
        .call("/fast")
        .await
        .unwrap_err();
    let refused = err
        .downcast_ref::<tickwheel::Error>()
        .expect("tickwheel's Error");
    assert!(refused.is_at_capacity());
    assert_eq!(seen.requests.load(Ordering::SeqCst), 0);
    drop(held);
    assert_eq!(
        client.ready().await.unwrap().call("/fast").await.unwrap(),
        StatusCode::OK
    );
}

/// A timer shut down while a request waits ends it with tickwheel's
/// `Error` (`is_shutdown()`), not with tower's `Elapsed`: the deadline did
/// not pass, the timer went away.
#[tokio::test(start_paused = true)]
async fn shutdown_ends_a_waiting_request() {
    let _watchdog = common::Watchdog::start();
    let (addr, _) = server().await;
    let timer = Timer::new();
    let mut client = ServiceBuilder::new()
        .layer(TimeoutLayer::with_timer(
            Duration::from_secs(60),
            timer.clone(),
        ))
        .service(Client { addr });
    let call = client.ready().await.unwrap().call("/slow");
    let request = tokio::spawn(call);
    tokio::time::sleep(ms(500)).await;
    assert_eq!(timer.shutdown(), 1);
    let err = request.await.unwrap().unwrap_err();
    assert!(!err.is::<tower::timeout::error::Elapsed>());
    assert!(err
        .downcast_ref::<tickwheel::Error>()
        .expect("tickwheel's Error")
        .is_shutdown());
    // A request made after the shutdown is refused at once, the same way.
    let err = client
        .ready()
        .await
        .unwrap()
        .call("/fast")
        .await
        .unwrap_err();
    assert!(err
        .downcast_ref::<tickwheel::Error>()
        .expect("tickwheel's Error")
        .is_shutdown());
}

// ---------------------------------------------------------------------------
// The backoff traits on their own

#[tokio::test(start_paused = true)]
async fn make_backoff_for_the_settings_waits_on_the_default_timer() {
    let _watchdog = common::Watchdog::start();
    let mut maker = Backoff::exponential(ms(100));
    let mut backoff = maker.make_backoff();
    let start = Instant::now();
    for _ in 0..3 {
        let wait = backoff.next_backoff();
        assert!(wait.is_on_wheel());
        wait.await;
    }
    assert_eq!(start.elapsed(), ms(700), "100 + 200 + 400");
    // Past the settings' run (4 attempts: 3 delays), the last delay again.
    assert!(
        backoff.clone().try_next_backoff().is_some(),
        "a clone is fresh"
    );
    backoff.next_backoff().await;
    assert_eq!(start.elapsed(), ms(1_100));
    assert_eq!(Timer::current().stats().fired, 4);
}

/// A timer that refuses the wait makes the backoff fall back to
/// `tokio::time`: it still waits its delay, it does not panic.
#[tokio::test(start_paused = true)]
async fn a_refused_wait_falls_back_to_tokio() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let held = timer.sleep(Duration::from_secs(5));
    let mut backoff = WheelBackoff::with_timer(Backoff::constant(ms(100)), timer.clone());
    let wait = backoff.next_backoff();
    assert!(!wait.is_on_wheel());
    let start = Instant::now();
    wait.await;
    assert_eq!(start.elapsed(), ms(100));
    drop(held);
    timer.shutdown();
    let wait = backoff.next_backoff();
    assert!(!wait.is_on_wheel(), "a shut-down timer: tokio::time too");
    wait.await;
    assert_eq!(start.elapsed(), ms(200));
}
