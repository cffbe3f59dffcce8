//! Watchdogs for integration tests that run a timer's driver. A bug there
//! tends to hang rather than fail (the driver loops, or a task is never
//! woken and the paused clock has nowhere to go), and a hung test stalls CI
//! instead of failing it. Either the body runs on a thread of its own and
//! the test fails if it has not returned in time ([`within_30_s`],
//! [`watched`]), or a [`Watchdog`] armed on the test's own thread aborts the
//! test binary after 30 s (a `#[tokio::test]` body cannot be moved to
//! another thread; [`block_on_paused`] wraps a runtime's whole life in one). A sleep that never fires (its driver on a runtime nobody drives, or
//! a paused clock that never reaches it) then fails the test with a message
//! instead of stalling CI.

use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How long a watched body may take: the bodies run in well under a second
/// of real time (their clocks are paused), even in a debug build on a loaded
/// machine.
const LIMIT: Duration = Duration::from_secs(30);

/// Runs `body` on a thread of its own and returns what it returns; panics
/// if the body panicked (its own message is printed above), and ends the
/// test binary if it is still running after 30 s (a running thread cannot
/// be stopped otherwise).
pub fn within_30_s<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let output = body();
        // The receiver is gone only if the watchdog already gave up.
        let _ = done.send(output);
    });
    match finished.recv_timeout(LIMIT) {
        Ok(output) => output,
        Err(RecvTimeoutError::Disconnected) => {
            panic!("an assertion failed on the watched thread (see its message above)")
        }
        Err(RecvTimeoutError::Timeout) => {
            // As in `paused`: a thread left spinning would slow or hang the
            // rest of the run, so the binary ends here.
            eprintln!(
                "still running after {LIMIT:?}: a timer never fired or a driver never yielded"
            );
            std::process::abort();
        }
    }
}

/// Ends the test process if the test that started it outlives
/// [`LIMIT`]: a driver that never returns from a poll (a livelock on a
/// paused clock, where time never moves) must fail the run, not stall it. A
/// running test thread cannot be stopped from outside, so the process is
/// aborted, which `cargo test` reports as a failed test binary. Dropping the
/// watchdog (the test returned or panicked) disarms it.
pub struct Watchdog {
    _armed: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    pub fn start() -> Self {
        Watchdog::with_limit(LIMIT)
    }

    /// A watchdog for a test that runs real-clock load for longer than
    /// [`LIMIT`].
    pub fn with_limit(limit: Duration) -> Self {
        let (armed, disarmed) = mpsc::channel::<()>();
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = disarmed.recv_timeout(limit) {
                eprintln!("{test} still runs after {limit:?}: a driver or a waiter hangs");
                std::process::abort();
            }
        });
        Watchdog { _armed: armed }
    }
}

/// Runs `test` as `#[tokio::test(start_paused = true)]` would (a
/// current-thread runtime, its clock paused at the start), under a
/// [`Watchdog`] that stays armed until the runtime is gone: dropping the
/// runtime fires the timer's driver one last time, after the body returned.
pub fn block_on_paused<F: Future>(test: F) -> F::Output {
    block_on_watched(true, test)
}

/// Runs `test` as `#[tokio::test]` would (a current-thread runtime on the
/// real clock, which the test may pause), under a [`Watchdog`] armed until
/// the runtime is gone.
pub fn block_on_current_thread<F: Future>(test: F) -> F::Output {
    block_on_watched(false, test)
}

fn block_on_watched<F: Future>(start_paused: bool, test: F) -> F::Output {
    let watchdog = Watchdog::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(start_paused)
        .build()
        .expect("a current-thread runtime");
    let output = runtime.block_on(test);
    drop(runtime);
    drop(watchdog);
    output
}

/// Runs `test` on a current-thread runtime with a paused clock (what
/// `#[tokio::test(start_paused = true)]` builds), on a thread of its own,
/// and ends the test binary if it has not finished after `watchdog` of real
/// time (a stuck thread cannot be stopped otherwise). A panic in `test`
/// is the test's panic, so `#[should_panic(expected = ...)]` still works.
pub fn paused<F, Fut>(name: &str, watchdog: Duration, test: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (done, result) = mpsc::channel();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap();
            // `test()` runs inside the runtime, so it can build a `Timer`.
            // The runtime is dropped inside the watched run too: dropping it
            // fires the driver one last time.
            let run = move || {
                rt.block_on(async { test().await });
                drop(rt);
            };
            let _ = done.send(catch_unwind(AssertUnwindSafe(run)));
        })
        .unwrap();
    match result.recv_timeout(watchdog) {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => {
            // The stuck thread cannot be stopped, and left spinning it would
            // slow every later test (and hang each that meets the same bug):
            // end the test binary, which fails the run at once.
            eprintln!(
                "{name}: no result after {watchdog:?} of real time: the driver or a timer is stuck"
            );
            std::process::abort();
        }
    }
}

/// Real time a short test may take before it counts as hung: each takes
/// well under a second, even in a debug build on a loaded machine.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// [`paused`] under the calling test's name, with [`WATCHDOG`].
pub fn watched<F, Fut>(test: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let name = std::thread::current()
        .name()
        .unwrap_or("a paused test")
        .to_owned();
    paused(&name, WATCHDOG, test);
}
