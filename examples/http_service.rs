//! A real HTTP/1 service (hyper) whose request deadline is tickwheel's
//! `http::TimeoutLayer`: a handler that takes too long is dropped and the
//! client gets `408 Request Timeout`, as with tower-http's layer, with the
//! deadline on the wheel instead of `tokio::time`.
//!
//! The server listens on a loopback port and routes:
//! - `/hello`: answers at once;
//! - `/report?ms=N`: works for N ms (a `tickwheel::time::sleep`) before it
//!   answers, standing in for a slow database query;
//! - anything else: 404.
//!
//! Every request gets 200 ms. 200 clients then call it over real TCP
//! connections on the running clock: quick reports answer 200, slow ones
//! 408, and the example checks each answer: the status matches the work
//! asked for, no 408 came before its 200 ms deadline, and the server's
//! timer ends with nothing pending. It exits non-zero if a check fails.
//!
//! Run: `cargo run --example http_service --features http`

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tickwheel::http::TimeoutLayer;
use tickwheel::{time, Timer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

/// The time every request is given.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(200);
/// Clients calling at once.
const CLIENTS: u64 = 200;

/// The application: plain async handlers, no timeout logic of their own.
async fn handler(request: Request<Incoming>) -> Result<Response<String>, Infallible> {
    let response = match request.uri().path() {
        "/hello" => Response::new("hello\n".to_string()),
        "/report" => {
            let ms = request
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("ms="))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            time::sleep(Duration::from_millis(ms)).await; // the slow query
            Response::new(format!("report after {ms} ms\n"))
        }
        _ => {
            let mut response = Response::new(String::new());
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    };
    Ok(response)
}

/// Serves every connection with the handler behind the timeout layer.
async fn serve(listener: TcpListener) {
    let app = ServiceBuilder::new()
        .layer(TimeoutLayer::new(REQUEST_TIMEOUT))
        .service(service_fn(handler));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let app = app.clone();
        // hyper calls services through its own trait: adapt the tower one.
        let service = hyper::service::service_fn(move |request| {
            let mut app = app.clone();
            async move { app.ready().await?.call(request).await }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// One GET over a new connection: the status and how long it took.
async fn get(addr: SocketAddr, path: String) -> Result<(StatusCode, Duration), String> {
    let start = tokio::time::Instant::now();
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let request = Request::get(path)
        .header("host", "localhost")
        .body(String::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    Ok((response.status(), start.elapsed()))
}

#[tokio::main]
async fn main() {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let server = tokio::spawn(serve(listener));
    println!("serving on http://{addr} with a {REQUEST_TIMEOUT:?} request timeout");

    // Each client asks for a report of 0 to 398 ms of work: about half fit
    // in the 200 ms budget. Clear of the budget by 50 ms either way, so
    // which answer each gets does not depend on this machine's load.
    let mut clients = JoinSet::new();
    for client in 0..CLIENTS {
        let work_ms = (client * 2) % 400;
        if (150..=250).contains(&work_ms) {
            continue;
        }
        clients.spawn(async move {
            let result = get(addr, format!("/report?ms={work_ms}")).await;
            (work_ms, result)
        });
    }
    let (mut ok, mut timed_out, mut failures) = (0, 0, Vec::new());
    while let Some(joined) = clients.join_next().await {
        let (work_ms, result) = joined.expect("client task");
        match result {
            Ok((StatusCode::OK, _)) if work_ms < 150 => ok += 1,
            Ok((StatusCode::REQUEST_TIMEOUT, took)) if work_ms > 250 => {
                timed_out += 1;
                if took < REQUEST_TIMEOUT {
                    failures.push(format!("{work_ms} ms of work: 408 after {took:?}, early"));
                }
            }
            other => failures.push(format!("{work_ms} ms of work: {other:?}")),
        }
    }
    let (hello, _) = get(addr, "/hello".into()).await.expect("GET /hello");
    if hello != StatusCode::OK {
        failures.push(format!("/hello answered {hello}"));
    }

    // Give the server's connections a moment to close, then look at the
    // wheel: every deadline fired (408) or was cancelled (answered in time).
    time::sleep(Duration::from_millis(50)).await;
    let stats = Timer::current().stats();
    println!("answered in time: {ok} (200 OK)");
    println!("cut off at {REQUEST_TIMEOUT:?}: {timed_out} (408 Request Timeout)");
    // The request deadlines and the handlers' own work share the runtime's
    // default timer, so these count both.
    println!("server timer (deadlines and the handlers' sleeps): {stats}");
    if stats.pending != 0 {
        failures.push(format!("{} timers still pending", stats.pending));
    }
    server.abort();

    if failures.is_empty() {
        println!("ok: every answer as expected, no 408 before its deadline");
    } else {
        for failure in &failures {
            eprintln!("FAILED: {failure}");
        }
        std::process::exit(1);
    }
}
