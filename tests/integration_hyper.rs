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
use tokio_test::{assert_pending, assert_ready, task};

use common::poll_once;

const SECOND: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

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

// `tickwheel::HyperTimer`: hyper-util's `TokioTimer::new()` shape, each sleep
// on the default timer of the runtime current when it is made.

/// Made before any runtime exists, then used inside one: the sleep is an
/// entry of that runtime's default timer, and fires exactly as a
/// `tokio::time` sleep would on the paused clock (never early, woken by the
/// advance that reaches its deadline).
#[test]
fn hyper_timer_made_outside_any_runtime_sleeps_on_the_current_ones_default() {
    common::watchdog::within_30_s(|| {
        let hyper_timer = tickwheel::HyperTimer::new();
        common::paused_runtime().block_on(async move {
            let start = Instant::now();
            let mut sleep = task::spawn(HyperTimer::sleep(&hyper_timer, 2 * SECOND));
            assert_pending!(sleep.poll());
            let default = tickwheel::Timer::current();
            assert_eq!(default.pending(), 1, "on the runtime's default timer");

            advance(2 * SECOND - MS).await;
            assert!(!sleep.is_woken(), "never early");
            assert_pending!(sleep.poll());
            advance(MS).await;
            assert!(sleep.is_woken());
            assert_ready!(sleep.poll());
            assert_eq!(start.elapsed(), 2 * SECOND);

            let deadline = HyperTimer::now(&hyper_timer) + 3 * SECOND;
            assert_eq!(deadline, (start + 5 * SECOND).into_std(), "tokio's clock");
            let mut until = task::spawn(HyperTimer::sleep_until(&hyper_timer, deadline));
            assert_pending!(until.poll());
            advance(3 * SECOND - MS).await;
            assert!(!until.is_woken());
            advance(MS).await;
            assert!(until.is_woken());
            assert_ready!(until.poll());
            let stats = default.stats();
            assert_eq!((stats.registered, stats.fired), (2, 2));
        });
    });
}

/// Serves one connection with hyper's header-read timeout on `builder`,
/// whose client stays silent; returns how long the connection lived.
async fn silent_connection(builder: &hyper::server::conn::http1::Builder) -> Duration {
    let (_client, server) = tokio::io::duplex(1024);
    let service = service_fn(|_: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    });
    let start = Instant::now();
    let result = builder
        .serve_connection(TokioIo::new(server), service)
        .await;
    assert!(result.unwrap_err().is_timeout());
    start.elapsed()
}

/// One connection builder, made outside any runtime, serves connections on
/// two runtimes alive side by side: each connection's timeout is an entry
/// of its own runtime's default timer, on that runtime's clock.
#[test]
fn one_hyper_timer_serves_two_runtimes_each_on_its_own_default_timer() {
    common::watchdog::within_30_s(|| {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(tickwheel::HyperTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let (a, b) = (common::paused_runtime(), common::paused_runtime());
        let a_timer = a.block_on(async { tickwheel::Timer::current() });
        let b_timer = b.block_on(async { tickwheel::Timer::current() });

        let lived = a.block_on(silent_connection(&builder));
        assert_eq!(lived, HEADER_READ_TIMEOUT, "exact on the paused clock");
        assert_eq!(a_timer.stats().fired, 1, "on a's default timer");
        assert_eq!(b_timer.stats().registered, 0, "nothing on b's");

        let lived = b.block_on(silent_connection(&builder));
        assert_eq!(lived, HEADER_READ_TIMEOUT);
        assert_eq!(b_timer.stats().fired, 1, "on b's default timer");
        assert_eq!(a_timer.stats().registered, 1, "nothing more on a's");

        // A multi-thread runtime too.
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let hyper_timer = tickwheel::HyperTimer::new();
        let fired = multi.block_on(async move {
            tokio::spawn(async move {
                HyperTimer::sleep(&hyper_timer, 10 * MS).await;
                tickwheel::Timer::current().stats().fired
            })
            .await
            .unwrap()
        });
        assert_eq!(fired, 1);
        assert_eq!(a_timer.stats().registered + b_timer.stats().registered, 2);
    });
}

/// `reset` moves a sleep in place, on the timer that made it, earlier or
/// later, exactly, even from another runtime's context or from outside any
/// runtime (as a reset `tokio::time::Sleep` stays on its runtime); a
/// foreign sleep is replaced by one on the current runtime's default timer.
#[test]
fn hyper_timer_reset_keeps_the_sleep_on_its_timer() {
    common::watchdog::within_30_s(|| {
        let hyper_timer = tickwheel::HyperTimer::new();
        let (a, b) = (common::paused_runtime(), common::paused_runtime());
        let (a_timer, mut sleep, start) = a.block_on(async {
            let mut sleep = task::spawn(HyperTimer::sleep(&hyper_timer, 60 * SECOND));
            assert_pending!(sleep.poll());
            (tickwheel::Timer::current(), sleep, Instant::now())
        });
        let b_timer = b.block_on(async {
            // Reset from b's context: stays on a's timer.
            HyperTimer::reset(&hyper_timer, &mut sleep, (start + 2 * SECOND).into_std());
            tickwheel::Timer::current()
        });
        assert_eq!(b_timer.stats().registered, 0);
        a.block_on(async {
            assert_pending!(sleep.poll());
            advance(2 * SECOND - MS).await;
            assert!(!sleep.is_woken(), "never early");
            advance(MS).await;
            assert!(sleep.is_woken());
            assert_ready!(sleep.poll());
        });
        // From outside any runtime: later, still in place.
        HyperTimer::reset(&hyper_timer, &mut sleep, (start + 5 * SECOND).into_std());
        a.block_on(async {
            assert_pending!(sleep.poll());
            advance(3 * SECOND - MS).await;
            assert_pending!(sleep.poll());
            advance(MS).await;
            assert!(sleep.is_woken());
            assert_ready!(sleep.poll());
            assert_eq!(start.elapsed(), 5 * SECOND);
        });
        let stats = a_timer.stats();
        assert_eq!(stats.registered, 2, "one entry, moved and re-armed");
        assert_eq!(stats.cancelled, 0, "moved, never replaced");
        assert_eq!(stats.fired, 2);

        // A foreign sleep: replaced, on the current runtime's default timer.
        b.block_on(async {
            let start = Instant::now();
            let mut foreign: Pin<Box<dyn HyperSleep>> =
                Box::pin(Foreign(Box::pin(tokio::time::sleep(60 * SECOND))));
            HyperTimer::reset(&hyper_timer, &mut foreign, (start + SECOND).into_std());
            assert!(foreign
                .as_mut()
                .downcast_mut_pin::<tickwheel::Sleep>()
                .is_some());
            foreign.await;
            assert_eq!(start.elapsed(), SECOND);
        });
        assert_eq!(b_timer.stats().fired, 1);
    });
}

/// After the runtime's default timer was shut down by hand, new and reset
/// sleeps fall back to `tokio::time`, exactly, without a panic in hyper's
/// task.
#[tokio::test(start_paused = true)]
async fn hyper_timer_falls_back_to_tokio_after_the_default_timer_shut_down() {
    let _watchdog = common::Watchdog::start();
    let hyper_timer = tickwheel::HyperTimer::new();
    let mut reset = HyperTimer::sleep(&hyper_timer, 60 * SECOND);
    tickwheel::Timer::current().shutdown();
    let start = Instant::now();
    let mut sleep = task::spawn(HyperTimer::sleep(&hyper_timer, 2 * SECOND));
    assert_pending!(sleep.poll());
    advance(2 * SECOND - MS).await;
    assert!(!sleep.is_woken());
    advance(MS).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
    HyperTimer::reset(&hyper_timer, &mut reset, (start + 4 * SECOND).into_std());
    assert!(reset
        .as_mut()
        .downcast_mut_pin::<tickwheel::Sleep>()
        .is_none());
    reset.await;
    assert_eq!(start.elapsed(), 4 * SECOND);
}

/// With no runtime current, `sleep` and `sleep_until` panic as
/// `tickwheel::time::sleep` does, with the same message; `now` does not
/// panic.
#[test]
fn hyper_timer_outside_any_runtime_panics_as_tickwheel_time_sleep() {
    let hyper_timer = tickwheel::HyperTimer::new();
    let message = |payload: Box<dyn std::any::Any + Send>| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .expect("a formatted panic message")
    };
    let ours =
        std::panic::catch_unwind(|| drop(HyperTimer::sleep(&hyper_timer, SECOND))).unwrap_err();
    let time = std::panic::catch_unwind(|| drop(tickwheel::time::sleep(SECOND))).unwrap_err();
    let (ours, time) = (message(ours), message(time));
    assert_eq!(ours, time);
    assert!(ours.contains("runtime"), "{ours}");
    let until = std::panic::catch_unwind(|| {
        drop(HyperTimer::sleep_until(
            &hyper_timer,
            std::time::Instant::now() + SECOND,
        ))
    })
    .unwrap_err();
    assert_eq!(message(until), ours);
    let before = std::time::Instant::now();
    assert!(HyperTimer::now(&hyper_timer) >= before);
}
