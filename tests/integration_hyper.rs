//! The `hyper` feature: hyper 1.x's timers run on the wheel.

mod common;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Sleep as HyperSleep, Timer as HyperTimer};
use hyper::{body::Incoming, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{advance, Instant};

use common::poll_once;

const SECOND: Duration = Duration::from_secs(1);

/// `now` follows tokio's clock, which hyper needs: it computes deadlines as
/// `timer.now() + timeout`. On the paused clock `std::time::Instant::now()`
/// would not move, and deadlines made from it would lie in the wheel's past.
#[tokio::test(start_paused = true)]
async fn now_reads_tokios_clock() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let start = HyperTimer::now(&timer);
    assert_eq!(start, Instant::now().into_std());
    advance(Duration::from_secs(3600)).await;
    assert_eq!(HyperTimer::now(&timer) - start, Duration::from_secs(3600));
}

#[tokio::test(start_paused = true)]
async fn sleep_registers_in_the_wheel_and_fires_at_its_deadline() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let mut sleep = HyperTimer::sleep(&timer, 2 * SECOND);
    assert!(poll_once(&mut sleep).is_pending());
    assert_eq!(timer.pending(), 1, "hyper's sleep is a wheel entry");

    advance(2 * SECOND - Duration::from_millis(1)).await;
    assert!(poll_once(&mut sleep).is_pending(), "never early");
    advance(Duration::from_millis(1)).await;
    assert!(poll_once(&mut sleep).is_ready());
    assert_eq!(timer.stats().fired, 1);
}

#[tokio::test(start_paused = true)]
async fn sleep_until_takes_a_deadline_from_now() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let deadline = HyperTimer::now(&timer) + 3 * SECOND;
    let start = Instant::now();
    HyperTimer::sleep_until(&timer, deadline).await;
    assert_eq!(start.elapsed(), 3 * SECOND);
    assert_eq!(timer.stats().registered, 1);
}

/// Resetting a sleep made by this timer moves its wheel entry (no second
/// registration), earlier or later, and keeps the task's waker.
#[tokio::test(start_paused = true)]
async fn reset_moves_our_sleep_in_place() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let start = Instant::now();
    let mut sleep = HyperTimer::sleep(&timer, 60 * SECOND);
    assert!(poll_once(&mut sleep).is_pending());

    HyperTimer::reset(&timer, &mut sleep, (start + 2 * SECOND).into_std());
    assert!(sleep
        .as_mut()
        .downcast_mut_pin::<tickwheel::Sleep>()
        .is_some());
    (&mut sleep).await;
    assert_eq!(start.elapsed(), 2 * SECOND);

    // A completed sleep can be reset to run again, later.
    HyperTimer::reset(&timer, &mut sleep, (start + 5 * SECOND).into_std());
    (&mut sleep).await;
    assert_eq!(start.elapsed(), 5 * SECOND);

    let stats = timer.stats();
    assert_eq!(stats.registered, 2, "one entry, reused after it fired");
    assert_eq!(stats.cancelled, 0, "reset moved the entry, not replaced it");
    assert_eq!(stats.fired, 2);
}

/// A hyper sleep made by some other timer.
struct Foreign(Pin<Box<tokio::time::Sleep>>);

impl Future for Foreign {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl HyperSleep for Foreign {}

/// A sleep from another `hyper::rt::Timer` cannot be moved in place: reset
/// replaces it with one of ours at the new deadline.
#[tokio::test(start_paused = true)]
async fn reset_replaces_a_foreign_sleep() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let start = Instant::now();
    let mut sleep: Pin<Box<dyn HyperSleep>> =
        Box::pin(Foreign(Box::pin(tokio::time::sleep(60 * SECOND))));
    HyperTimer::reset(&timer, &mut sleep, (start + SECOND).into_std());
    assert!(sleep.as_mut().downcast_mut_pin::<Foreign>().is_none());
    assert!(sleep
        .as_mut()
        .downcast_mut_pin::<tickwheel::Sleep>()
        .is_some());
    sleep.await;
    assert_eq!(start.elapsed(), SECOND);
    assert_eq!(timer.stats().fired, 1);
}

/// At the `max_pending` limit hyper still gets a working sleep (on
/// `tokio::time`), rather than a panic inside its connection task; it too
/// can be reset.
#[tokio::test(start_paused = true)]
async fn at_capacity_sleeps_fall_back_to_tokio_time() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::builder().max_pending(1).build().unwrap();
    let _held = timer.sleep(60 * SECOND);
    let start = Instant::now();
    let mut sleep = HyperTimer::sleep(&timer, 60 * SECOND);
    assert!(sleep
        .as_mut()
        .downcast_mut_pin::<tickwheel::Sleep>()
        .is_none());
    HyperTimer::reset(&timer, &mut sleep, (start + 2 * SECOND).into_std());
    sleep.await;
    assert_eq!(start.elapsed(), 2 * SECOND);
    HyperTimer::sleep_until(&timer, (start + 3 * SECOND).into_std()).await;
    assert_eq!(start.elapsed(), 3 * SECOND);
    assert_eq!(timer.stats().registered, 0);
}

/// After shutdown hyper's new and reset sleeps fall back to `tokio::time`:
/// they wait exactly (no instant completion a connection would mistake for a
/// timeout, no panic inside hyper's task).
#[tokio::test(start_paused = true)]
async fn after_shutdown_sleeps_fall_back_to_tokio() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let mut reset = HyperTimer::sleep(&timer, 60 * SECOND);
    timer.shutdown();
    let start = Instant::now();
    HyperTimer::sleep(&timer, 2 * SECOND).await;
    assert_eq!(start.elapsed(), 2 * SECOND);
    HyperTimer::sleep_until(&timer, (start + 3 * SECOND).into_std()).await;
    assert_eq!(start.elapsed(), 3 * SECOND);
    HyperTimer::reset(&timer, &mut reset, (start + 4 * SECOND).into_std());
    reset.await;
    assert_eq!(start.elapsed(), 4 * SECOND);
}

const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves one HTTP/1 connection on `io` with hyper's header-read timeout
/// driven by `timer`; resolves to the connection's outcome and when it ended.
fn serve(
    timer: &tickwheel::Timer,
    io: tokio::io::DuplexStream,
) -> tokio::task::JoinHandle<(Result<(), hyper::Error>, Instant)> {
    let service = service_fn(|_: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(String::from("hello")))
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(timer.clone())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(io), service);
    tokio::spawn(async move {
        let result = conn.await;
        (result, Instant::now())
    })
}

/// A client that connects and never sends its request head is cut off when
/// the header-read timeout, timed by the wheel, runs out: not before, and
/// within a tick after.
#[tokio::test(start_paused = true)]
async fn header_read_timeout_closes_a_silent_connection() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let (mut client, server) = tokio::io::duplex(4096);
    let start = Instant::now();
    let conn = serve(&timer, server);

    let mut buf = Vec::new();
    let read = client.read_to_end(&mut buf).await.unwrap();
    assert_eq!(read, 0, "the server closes without a response");
    let closed = start.elapsed();

    let (result, ended) = conn.await.unwrap();
    assert!(result.unwrap_err().is_timeout());
    assert_eq!(ended - start, closed);
    assert!(
        closed >= HEADER_READ_TIMEOUT && closed < HEADER_READ_TIMEOUT + timer.tick(),
        "closed after {closed:?}"
    );
    let stats = timer.stats();
    assert_eq!(stats.registered, 1, "hyper's timeout was a wheel entry");
    assert_eq!(stats.fired, 1);
}

/// A client that sends its request in time is answered; the timeout starts
/// again for the next request head on the kept-alive connection, and the
/// connection closes once that one runs out.
#[tokio::test(start_paused = true)]
async fn a_timely_request_is_served_and_the_next_head_is_timed_again() {
    let _watchdog = common::Watchdog::start();
    let timer = tickwheel::Timer::new();
    let (mut client, server) = tokio::io::duplex(4096);
    let start = Instant::now();
    let conn = serve(&timer, server);

    tokio::time::sleep(2 * SECOND).await;
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    client.read_to_end(&mut buf).await.unwrap();
    let closed = start.elapsed();
    let response = String::from_utf8(buf).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nhello"), "{response}");

    let (result, _) = conn.await.unwrap();
    assert!(result.unwrap_err().is_timeout());
    let expected = 2 * SECOND + HEADER_READ_TIMEOUT;
    assert!(
        closed >= expected && closed < expected + timer.tick(),
        "closed after {closed:?}"
    );
    let stats = timer.stats();
    assert_eq!(stats.registered, 2, "one timeout per request head");
    assert_eq!(
        stats.cancelled, 1,
        "the first was dropped when the head came"
    );
    assert_eq!(stats.fired, 1);
}
