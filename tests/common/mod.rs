//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub mod coop;
pub mod watchdog;

#[allow(unused_imports)] // each test binary uses a different subset
pub use watchdog::{block_on_current_thread, block_on_paused, Watchdog};

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

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

/// A timer with the earlier defaults (10 ms ticks, 512 slots), built now
/// on the current runtime: tests of coarse ticks and of the overflow level
/// run on it beside `Timer::new()`.
pub fn old_default_timer() -> tickwheel::Timer {
    tickwheel::Timer::builder()
        .tick(Duration::from_millis(10))
        .slots(512)
        .build()
        .unwrap()
}

/// A current-thread runtime whose clock starts paused.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The message of `f`'s panic (a `String` or a `&str` payload; empty for
/// another), or `None` if it returned.
pub fn panic_message(f: impl FnOnce()) -> Option<String> {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).err()?;
    Some(match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(String::new, |s| s.to_string()),
    })
}
