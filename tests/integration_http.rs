//! The `http` feature: `tickwheel::http::TimeoutLayer` answers a slow
//! request with 408 (or the status it was given) at its deadline, never
//! before; passes answers and errors through; sheds with 503 when the timer
//! refuses a deadline or shuts down; answers as tower-http's `TimeoutLayer`
//! does when the handler and the deadline are ready in the same poll; and
//! does so for a real hyper server over loopback TCP, on the paused clock.

mod common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tickwheel::http::{Timeout, TimeoutLayer};
use tickwheel::Timer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Sets its flag when dropped: tells whether the handler's future was
/// dropped (the request abandoned) rather than left running.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A handler that works `path` milliseconds (`/250` works 250 ms) on the
/// runtime's default wheel timer, then answers with a body; `/fail` fails.
async fn handler(request: Request<String>) -> Result<Response<String>, &'static str> {
    let path = request.uri().path().trim_start_matches('/');
    if path == "fail" {
        return Err("handler failed");
    }
    let work: u64 = path.parse().unwrap_or(0);
    tickwheel::time::sleep(ms(work)).await;
    Ok(Response::new(format!("worked {work} ms")))
}

fn get(path: &str) -> Request<String> {
    Request::get(path).body(String::new()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_request_answered_in_time_passes_through_unchanged() {
    let _watchdog = common::Watchdog::start();
    let mut app = ServiceBuilder::new()
        .layer(TimeoutLayer::new(ms(100)))
        .service(service_fn(handler));
    let start = Instant::now();
    let response = app.ready().await.unwrap().call(get("/99")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.body(), "worked 99 ms");
    assert_eq!(start.elapsed(), ms(99));
    // The deadline was cancelled, not fired.
    let stats = Timer::current().stats();
    assert_eq!((stats.pending, stats.cancelled), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_slow_request_gets_408_at_its_deadline_never_before() {
    let _watchdog = common::Watchdog::start();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let slow = service_fn(move |_: Request<String>| {
        let guard = DropFlag(flag.clone());
        async move {
            let _guard = guard;
            tickwheel::time::sleep(Duration::from_secs(10)).await;
            Ok::<_, Infallible>(Response::new("too late".to_string()))
        }
    });
    let mut app = Timeout::new(slow, ms(300));
    let mut call = task::spawn(app.ready().await.unwrap().call(get("/")));
    assert_pending!(call.poll());
    tokio::time::advance(ms(299)).await;
    assert!(!call.is_woken());
    assert_pending!(call.poll());
    tokio::time::advance(ms(1)).await;
    assert!(call.is_woken());
    let response = assert_ready!(call.poll()).unwrap();
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    assert!(response.body().is_empty(), "ResBody::default()");
    // As with tower-http, the handler's future lives in the response
    // future until that is dropped; it is never polled again, and dropping
    // it frees the handler's own sleep.
    assert!(!dropped.load(Ordering::SeqCst));
    assert_eq!(Timer::current().pending(), 1, "the handler's 10 s sleep");
    drop(call);
    assert!(dropped.load(Ordering::SeqCst), "the handler was dropped");
    assert_eq!(Timer::current().pending(), 0);
}

/// A handler that answers only once `gate` has a permit for it: the test
/// decides when it is ready.
fn gated_handler(
    gate: Arc<Semaphore>,
) -> impl Service<Request<String>, Response = Response<String>, Error = Infallible> {
    service_fn(move |_: Request<String>| {
        let gate = gate.clone();
        async move {
            gate.acquire().await.unwrap().forget();
            Ok(Response::new("handled".to_string()))
        }
    })
}

/// The timeout of [`status_with_the_gate_opened_at`]'s layers.
const DEADLINE: Duration = Duration::from_millis(100);

/// Calls `app` (a layer with a [`DEADLINE`] timeout over a
/// [`gated_handler`] on `gate`) once, moves the paused clock `opened_at`
/// into the request, opens the gate, and polls the response once more:
/// the status the client gets. At `opened_at == DEADLINE` the deadline and
/// the handler are both ready on that poll.
async fn status_with_the_gate_opened_at<S>(
    mut app: S,
    gate: &Semaphore,
    opened_at: Duration,
) -> StatusCode
where
    S: Service<Request<String>, Response = Response<String>, Error = Infallible>,
{
    let mut call = task::spawn(app.ready().await.unwrap().call(get("/")));
    assert_pending!(call.poll(), "the handler waits for its gate");
    tokio::time::advance(opened_at).await;
    gate.add_permits(1);
    assert!(call.is_woken());
    assert_ready!(call.poll()).unwrap().status()
}

/// Under overload a request's task can be polled late, when its handler has
/// answered and its deadline has passed too. tower-http's `TimeoutLayer`
/// looks at the deadline first and answers 408; a drop-in must answer the
/// same (tickwheel's answered with the handler's 200). Both layers are
/// driven through the same requests on the paused clock, at whole
/// milliseconds (the wheel's 1 ms ticks).
#[tokio::test(start_paused = true)]
async fn a_handler_ready_with_its_deadline_gets_the_same_answer_as_from_tower_http() {
    let _watchdog = common::Watchdog::start();
    for (opened_at, expected) in [
        // The handler answers 1 ms before the deadline: its response.
        (DEADLINE - ms(1), StatusCode::OK),
        // The handler and the deadline are ready in the same poll: 408.
        (DEADLINE, StatusCode::REQUEST_TIMEOUT),
    ] {
        let gate = Arc::new(Semaphore::new(0));
        let ours = ServiceBuilder::new()
            .layer(TimeoutLayer::new(DEADLINE))
            .service(gated_handler(gate.clone()));
        let ours = status_with_the_gate_opened_at(ours, &gate, opened_at).await;

        let gate = Arc::new(Semaphore::new(0));
        let theirs = ServiceBuilder::new()
            .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                DEADLINE,
            ))
            .service(gated_handler(gate.clone()));
        let theirs = status_with_the_gate_opened_at(theirs, &gate, opened_at).await;

        assert_eq!(
            ours, theirs,
            "tickwheel's layer and tower-http's, the gate opened {opened_at:?} into the request"
        );
        assert_eq!(
            ours, expected,
            "the gate opened {opened_at:?} into the request"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_status_can_be_set_and_the_handlers_errors_pass_through() {
    let _watchdog = common::Watchdog::start();
    let mut gateway = ServiceBuilder::new()
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            ms(50),
        ))
        .service(service_fn(handler));
    let response = gateway
        .ready()
        .await
        .unwrap()
        .call(get("/51"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);

    let mut other = ServiceBuilder::new()
        .layer(TimeoutLayer::new(ms(50)).status_code(StatusCode::SERVICE_UNAVAILABLE))
        .service(service_fn(handler));
    let response = other.ready().await.unwrap().call(get("/60")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    let err = other
        .ready()
        .await
        .unwrap()
        .call(get("/fail"))
        .await
        .unwrap_err();
    assert_eq!(err, "handler failed");
}

/// On a timer at its `max_pending` limit the request is shed with 503 at
/// once and the handler is never called; with room again, it is served.
#[tokio::test(start_paused = true)]
async fn a_request_refused_a_deadline_is_shed_with_503() {
    let _watchdog = common::Watchdog::start();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let mut app = ServiceBuilder::new()
        .layer(TimeoutLayer::with_timer(ms(100), timer.clone()))
        .service(service_fn(move |request| {
            counted.fetch_add(1, Ordering::SeqCst);
            handler(request)
        }));
    let held = timer.sleep(Duration::from_secs(5));
    let start = Instant::now();
    let response = app.ready().await.unwrap().call(get("/10")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(start.elapsed(), Duration::ZERO, "at once");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");

    drop(held);
    let response = app.ready().await.unwrap().call(get("/10")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A timer that shuts down while a request waits answers it 503, not 408:
/// its deadline did not pass. Later requests are shed the same way.
#[tokio::test(start_paused = true)]
async fn shutdown_answers_waiting_and_later_requests_with_503() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut app = ServiceBuilder::new()
        .layer(TimeoutLayer::with_timer(
            Duration::from_secs(60),
            timer.clone(),
        ))
        .service(service_fn(|_: Request<String>| async {
            std::future::pending::<Result<Response<String>, Infallible>>().await
        }));
    let mut call = task::spawn(app.ready().await.unwrap().call(get("/")));
    assert_pending!(call.poll());
    assert_eq!(timer.shutdown(), 1);
    assert!(call.is_woken());
    let response = assert_ready!(call.poll()).unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    let response = app.ready().await.unwrap().call(get("/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
}

/// A hyper HTTP/1 server behind the layer, called over loopback TCP: the
/// client reads 200 for a quick handler and 408 for a slow one, exactly at
/// the deadline.
#[tokio::test(start_paused = true)]
async fn a_hyper_server_behind_the_layer_answers_408_over_tcp() {
    let _watchdog = common::Watchdog::start();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = ServiceBuilder::new()
        .layer(TimeoutLayer::new(Duration::from_secs(1)))
        .service(service_fn(|request: Request<Incoming>| async move {
            if request.uri().path() == "/slow" {
                tickwheel::time::sleep(Duration::from_secs(5)).await;
            }
            Ok::<_, Infallible>(Response::new("hello".to_string()))
        }));
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let app = app.clone();
            let service = hyper::service::service_fn(move |request| {
                let mut app = app.clone();
                async move { app.ready().await?.call(request).await }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });

    for (path, status, took) in [
        ("/fast", StatusCode::OK, Duration::ZERO),
        ("/slow", StatusCode::REQUEST_TIMEOUT, Duration::from_secs(1)),
    ] {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        let start = Instant::now();
        let request = Request::get(path)
            .header("host", "localhost")
            .body(String::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(start.elapsed(), took, "{path}");
    }
}
