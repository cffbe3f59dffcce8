//! W10, an HTTP service under a real load generator: a
//! hyper 1.x HTTP/1 server with keep-alive on a loopback port, run in the
//! child, driven by `wrk` (a process of its own, so its CPU is not the
//! server's) for 10 s (2 s with `--quick`), with 32 or 1,000 connections,
//! on a multi-thread runtime of 1 or 2 workers.
//!
//! The server is built twice, the timers the only difference:
//!
//! | | tokio | tickwheel |
//! |---|---|---|
//! | hyper's timer (header read, armed per request head) | hyper-util's `TokioTimer` | `tickwheel::Timer::current()` (`hyper::rt::Timer`) |
//! | request deadline, 408 | tower-http's `TimeoutLayer` | `tickwheel::http::TimeoutLayer` |
//! | a deadline around each backend call | `tokio::time::timeout` | `tickwheel::time::timeout` |
//! | the backend call: a short sleep | `tokio::time::sleep` | `tickwheel::time::sleep` |
//!
//! tickwheel's are all on the runtime's default timer (1 ms tick), as a
//! user who swaps the imports gets.
//!
//! # Shapes (the variants)
//!
//! - `base`: one backend call of 0-2 ms (pseudo-random) under a 50 ms
//!   deadline, a 1 s request deadline: no timeout fires, since the call's
//!   sleep is due before its deadline and the timeout polls the call first.
//!   4 timers per request (hyper's header read, the request deadline, the
//!   call's deadline, its sleep).
//! - `outlive`: the same with a 5 ms call deadline and a 100 ms request
//!   deadline; 5% of calls sleep 20 ms, so their deadline fires (the
//!   handler answers 200 with a fallback body), and 1% of requests make a
//!   200 ms call under a 500 ms deadline, so the request deadline fires
//!   first (408). Timeouts fire, and none may fire early. (The request
//!   deadline is far from the handlers' 0-20 ms: tower-http's layer polls
//!   its deadline before the handler, tickwheel's the handler first, so a
//!   request whose handler waits in the run queue past a tight deadline
//!   gets a 408 from tower-http and a 200 from tickwheel; at 1,000
//!   connections a 10 ms deadline made most of tokio's answers 408s.)
//! - `heavy` (timer-heavy): a 100 ms budget deadline around two sequential
//!   backend calls of 0-1 ms, each under a 50 ms deadline, with a retry
//!   budget's pause (a sleep of 0-0.5 ms) between them; a 1 s request
//!   deadline. 8 timers per request, none firing but the sleeps: where the
//!   timer's share of the server's CPU is largest.
//!
//! # Early
//!
//! For each call deadline that fired, the handler checks the time since
//! just before it built the timeout against the deadline asked for; for
//! each 408, a layer outside the timeout layer checks the time since just
//! before it called the stack against the request deadline. Each timer
//! reads the clock after that start, so its own deadline is later: a fire
//! counted early here came before the deadline the user asked for.
//!
//! # Figures
//!
//! Over the wrk run (from just before wrk starts to its exit): the
//! server process's CPU (`/proc/self/task/*/schedstat`, its threads only)
//! per response it completed; wrk's requests/s and latency percentiles; the
//! peak RSS (`VmHWM`); call deadlines fired and early; 408s and early ones;
//! wrk's socket errors and non-2xx responses; for tickwheel, timers
//! registered per response (`Stats::registered` of the default timer).

use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tickwheel_bench::multi_thread;
use tower::{Service, ServiceBuilder, ServiceExt};

use crate::measure::cpu_ns;
use crate::systems::{emit, Figures, Http, Shape, Sizes, Sys};
use crate::wrk;

/// hyper's header-read timeout: never reached under wrk; its timer is
/// armed for every request head all the same.
const HEADER_READ: Duration = Duration::from_secs(30);

/// What one shape asks of the handler.
struct Plan {
    request_deadline: Duration,
    call_deadline: Duration,
}

fn plan(shape: Shape) -> Plan {
    let ms = Duration::from_millis;
    match shape {
        Shape::Base | Shape::Heavy => Plan {
            request_deadline: ms(1_000),
            call_deadline: ms(50),
        },
        Shape::Outlive => Plan {
            request_deadline: ms(100),
            call_deadline: ms(5),
        },
    }
}

/// The outlive shape: calls that outlive their deadline, and requests
/// whose call outlives the request deadline.
const OUTLIVE_CALLS: f64 = 0.05;
const OUTLIVE_REQUESTS: f64 = 0.01;
const OUTLIVING: Duration = Duration::from_millis(20);
/// The outliving requests' call: past the request deadline, under a
/// deadline of its own further out.
const SLOW_CALL: Duration = Duration::from_millis(200);
const SLOW_CALL_DEADLINE: Duration = Duration::from_millis(500);
const HEAVY_BUDGET: Duration = Duration::from_millis(100);

/// The server's counts, shared by its tasks.
#[derive(Default)]
struct Counts {
    responses: AtomicU64,
    call_fired: AtomicU64,
    call_early: AtomicU64,
    r408: AtomicU64,
    r408_early: AtomicU64,
}

/// The timers a server uses: `tokio::time` or tickwheel's runtime default.
trait Clock: Copy + Send + Sync + 'static {
    fn sleep(self, d: Duration) -> impl Future<Output = ()> + Send;
    /// `Some` with the output, or `None` if the deadline came first.
    fn timeout<F: Future + Send>(
        self,
        d: Duration,
        f: F,
    ) -> impl Future<Output = Option<F::Output>> + Send;
}

#[derive(Clone, Copy)]
struct TokioClock;
#[derive(Clone, Copy)]
struct WheelClock;

impl Clock for TokioClock {
    fn sleep(self, d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
    async fn timeout<F: Future + Send>(self, d: Duration, f: F) -> Option<F::Output> {
        tokio::time::timeout(d, f).await.ok()
    }
}

impl Clock for WheelClock {
    fn sleep(self, d: Duration) -> impl Future<Output = ()> + Send {
        tickwheel::time::sleep(d)
    }
    async fn timeout<F: Future + Send>(self, d: Duration, f: F) -> Option<F::Output> {
        tickwheel::time::timeout(d, f).await.ok()
    }
}

thread_local! {
    /// xorshift64 state per worker thread: no shared state between
    /// requests, the same generator for both systems.
    static RNG: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
}

/// Uniform in `[0, 1)`.
fn draw() -> f64 {
    RNG.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

fn up_to(max: Duration) -> Duration {
    max.mul_f64(draw())
}

/// The backend: a call that takes `d`, on the same timers.
async fn backend<C: Clock>(clock: C, d: Duration) {
    clock.sleep(d).await;
}

/// One backend call of `d` under `deadline`: whether it answered in time.
/// A deadline that fired is counted, and checked against `deadline`.
async fn call<C: Clock>(clock: C, deadline: Duration, d: Duration, counts: &Counts) -> bool {
    let start = Instant::now();
    if clock.timeout(deadline, backend(clock, d)).await.is_some() {
        return true;
    }
    let elapsed = start.elapsed();
    counts.call_fired.fetch_add(1, Relaxed);
    if elapsed < deadline {
        counts.call_early.fetch_add(1, Relaxed);
    }
    false
}

/// The application: the shape's backend calls, then a short answer.
async fn handle<C: Clock>(
    clock: C,
    shape: Shape,
    counts: Arc<Counts>,
) -> Result<Response<String>, Infallible> {
    let plan = plan(shape);
    let ms = Duration::from_millis;
    let ok = match shape {
        Shape::Base => call(clock, plan.call_deadline, up_to(ms(2)), &counts).await,
        Shape::Outlive => {
            let roll = draw();
            if roll < OUTLIVE_REQUESTS {
                // A call whose deadline is past the request's: the 408
                // layer answers first.
                call(clock, SLOW_CALL_DEADLINE, SLOW_CALL, &counts).await
            } else if roll < OUTLIVE_REQUESTS + OUTLIVE_CALLS {
                call(clock, plan.call_deadline, OUTLIVING, &counts).await
            } else {
                call(clock, plan.call_deadline, up_to(ms(2)), &counts).await
            }
        }
        Shape::Heavy => {
            let calls = async {
                let first = call(clock, plan.call_deadline, up_to(ms(1)), &counts).await;
                // The retry budget's pause before the next attempt.
                clock.sleep(up_to(Duration::from_micros(500))).await;
                let second = call(clock, plan.call_deadline, up_to(ms(1)), &counts).await;
                first && second
            };
            clock.timeout(HEAVY_BUDGET, calls).await.unwrap_or(false)
        }
    };
    Ok(Response::new(
        if ok { "ok\n" } else { "fallback\n" }.to_string(),
    ))
}

/// hyper's service for one connection: the tower stack `app`, with each
/// response counted and each 408 checked against the request deadline.
fn connection_service<A>(
    app: A,
    counts: Arc<Counts>,
    request_deadline: Duration,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<String>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<String>, Infallible>> + Send,
> + Send
       + 'static
where
    A: Service<Request<Incoming>, Response = Response<String>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    A::Future: Send,
{
    hyper::service::service_fn(move |request| {
        let app = app.clone();
        let counts = counts.clone();
        let start = Instant::now();
        async move {
            let response = app.oneshot(request).await?;
            if response.status() == StatusCode::REQUEST_TIMEOUT {
                counts.r408.fetch_add(1, Relaxed);
                if start.elapsed() < request_deadline {
                    counts.r408_early.fetch_add(1, Relaxed);
                }
            }
            counts.responses.fetch_add(1, Relaxed);
            Ok(response)
        }
    })
}

/// Accepts connections on `listener` and serves each with `service()`.
async fn accept_loop<S>(
    listener: tokio::net::TcpListener,
    builder: http1::Builder,
    service: impl Fn() -> S,
) where
    S: hyper::service::Service<Request<Incoming>, Response = Response<String>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send,
{
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = builder.serve_connection(TokioIo::new(stream), service());
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

/// The server for `sys` on `listener`, in the runtime it is spawned on.
async fn serve(sys: Sys, shape: Shape, listener: tokio::net::TcpListener, counts: Arc<Counts>) {
    let deadline = plan(shape).request_deadline;
    let mut builder = http1::Builder::new();
    builder.keep_alive(true).header_read_timeout(HEADER_READ);
    match sys {
        Sys::Tokio => {
            builder.timer(TokioTimer::new());
            let handler_counts = counts.clone();
            let app = ServiceBuilder::new()
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    deadline,
                ))
                .service(tower::service_fn(move |_: Request<Incoming>| {
                    handle(TokioClock, shape, handler_counts.clone())
                }));
            accept_loop(listener, builder, || {
                connection_service(app.clone(), counts.clone(), deadline)
            })
            .await;
        }
        Sys::Tickwheel => {
            builder.timer(tickwheel::Timer::current());
            let handler_counts = counts.clone();
            let app = ServiceBuilder::new()
                .layer(tickwheel::http::TimeoutLayer::new(deadline))
                .service(tower::service_fn(move |_: Request<Incoming>| {
                    handle(WheelClock, shape, handler_counts.clone())
                }));
            accept_loop(listener, builder, || {
                connection_service(app.clone(), counts.clone(), deadline)
            })
            .await;
        }
        _ => unreachable!("W10 measures tickwheel and tokio"),
    }
}

/// The peak resident set of this process, in MB (`VmHWM`).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

pub fn run_w10(http: Http, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = multi_thread(http.workers());
    // Loopback only.
    let std_listener =
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port for W10");
    let port = std_listener.local_addr().expect("W10's port").port();
    std_listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let counts = Arc::new(Counts::default());
    let timer = (sys == Sys::Tickwheel).then(|| {
        let _guard = rt.enter();
        tickwheel::Timer::current()
    });
    {
        let _guard = rt.enter();
        let listener =
            tokio::net::TcpListener::from_std(std_listener).expect("W10's listener on tokio");
        rt.spawn(serve(sys, http.shape(), listener, counts.clone()));
    }

    let registered_before = timer.as_ref().map(|t| t.stats().registered);
    let responses_before = counts.responses.load(Relaxed);
    let cpu_before = cpu_ns();
    let started = Instant::now();
    let output = Command::new("wrk")
        .args(wrk::args(http.connections(), sizes.http, port))
        .output()
        .expect("run wrk (bench/scripts/install-wrk.sh installs it)");
    let window = started.elapsed().as_secs_f64();
    let cpu = cpu_ns() - cpu_before;
    let responses = counts.responses.load(Relaxed) - responses_before;
    let registered = timer
        .as_ref()
        .zip(registered_before)
        .map(|(t, before)| t.stats().registered - before);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wrk failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report = wrk::parse(&stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}"));
    assert!(responses > 0, "the W10 server answered no request");

    emit(out, "workers", http.workers() as f64);
    emit(out, "connections", http.connections() as f64);
    emit(out, "window_s", window);
    emit(out, "responses", responses as f64);
    emit(out, "wrk_requests", report.requests as f64);
    emit(out, "requests_per_s", report.requests_per_s);
    emit(out, "cpu_s", cpu as f64 / 1e9);
    emit(
        out,
        "cpu_us_per_request",
        cpu as f64 / 1e3 / responses as f64,
    );
    emit(out, "p50_ms", report.p50_ms);
    emit(out, "p75_ms", report.p75_ms);
    emit(out, "p90_ms", report.p90_ms);
    emit(out, "p99_ms", report.p99_ms);
    emit(out, "rss_mb", peak_rss_mb());
    emit(out, "call_fired", counts.call_fired.load(Relaxed) as f64);
    emit(out, "call_early", counts.call_early.load(Relaxed) as f64);
    emit(out, "r408", counts.r408.load(Relaxed) as f64);
    emit(out, "r408_early", counts.r408_early.load(Relaxed) as f64);
    emit(out, "socket_errors", report.socket_errors as f64);
    emit(out, "socket_timeouts", report.socket_timeouts as f64);
    emit(out, "non_2xx", report.non_2xx as f64);
    if let Some(registered) = registered {
        emit(
            out,
            "timers_per_request",
            registered as f64 / responses as f64,
        );
    }
    rt.shutdown_timeout(Duration::from_secs(1));
}
