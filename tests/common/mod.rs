//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A waker that counts how often it was woken.
#[derive(Default)]
pub struct CountingWaker {
    wakes: AtomicUsize,
}

impl CountingWaker {
    pub fn new() -> (Arc<Self>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }

    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Polls `fut` once with a waker that does nothing.
pub fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_with(fut, Waker::noop())
}

/// A runtime with `workers` worker threads (0 for a current-thread runtime),
/// and a timer whose driver runs on it.
pub fn runtime_with_timer(workers: usize) -> (tokio::runtime::Runtime, tickwheel::Timer) {
    let mut builder = if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    };
    let rt = builder.enable_all().build().expect("build a runtime");
    let timer = tickwheel::Timer::builder()
        .runtime(rt.handle().clone())
        .build()
        .expect("default settings are valid");
    (rt, timer)
}

/// How long one test that runs a driver may take: each finishes in well
/// under a second, even in a debug build on a loaded machine.
pub const TEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Ends the test process if the test that started it outlives
/// [`TEST_LIMIT`]: a driver that never returns from a poll (a livelock on a
/// paused clock, where time never moves) must fail the run, not stall it. A
/// running test thread cannot be stopped from outside, so the process is
/// aborted, which `cargo test` reports as a failed test binary. Dropping the
/// watchdog (the test returned or panicked) disarms it.
pub struct Watchdog {
    _armed: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    pub fn start() -> Self {
        let (armed, disarmed) = std::sync::mpsc::channel::<()>();
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                disarmed.recv_timeout(TEST_LIMIT)
            {
                eprintln!("{test} still runs after {TEST_LIMIT:?}: a driver or a waiter hangs");
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
pub fn paused<F: Future>(test: F) -> F::Output {
    let watchdog = Watchdog::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let output = runtime.block_on(test);
    drop(runtime);
    drop(watchdog);
    output
}

/// Runs `test` as `#[tokio::test]` would (a current-thread runtime on the
/// real clock, which the test may pause), under a [`Watchdog`] armed until
/// the runtime is gone.
pub fn current_thread<F: Future>(test: F) -> F::Output {
    let watchdog = Watchdog::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let output = runtime.block_on(test);
    drop(runtime);
    drop(watchdog);
    output
}
