//! What the `compare` binary and the `churn` criterion bench share: the
//! runtimes they measure on, the far deadline, and the "pending once" future
//! that W1's `timeout` wraps.
//!
//! This crate is a `publish = false` member of the tickwheel workspace, so
//! criterion, plotters, pingora-timeout and tokio-util are its dependencies, not the
//! library's: building the library, its tests or its examples compiles none
//! of them. tokio is built here without `test-util` (the library's
//! dev-dependency enables it, and Cargo unifies features only for packages
//! built together), so `tokio::time::Instant::now()` is the plain clock read.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Runtime;

pub mod settings;

/// Far enough out that no W1/W2/W4 timer fires during a run.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// A current-thread runtime with every driver enabled.
pub fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current_thread runtime")
}

/// A multi-thread runtime with 2 workers (the development machine's cores),
/// on tokio's alternative timer if [`settings::use_alt_timer`] was called.
pub fn two_workers() -> Runtime {
    multi_thread(2)
}

/// A multi-thread runtime with `workers` workers (at least 1), on tokio's
/// alternative timer if [`settings::use_alt_timer`] was called.
pub fn multi_thread(workers: usize) -> Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(workers.max(1)).enable_all();
    #[cfg(tokio_unstable)]
    if settings::alt_timer() {
        builder.enable_alt_timer();
    }
    builder.build().expect("build a multi-thread runtime")
}

/// Awaits every task of `handles` on `rt`, in order, and returns their
/// outputs; panics naming `what` if one panicked, or if they have not all
/// finished within `limit` (a workload that hangs fails its child instead
/// of stalling the run).
pub fn join_within<T: Send + 'static>(
    rt: &Runtime,
    handles: impl IntoIterator<Item = tokio::task::JoinHandle<T>>,
    limit: Duration,
    what: &str,
) -> Vec<T> {
    rt.block_on(async {
        tokio::time::timeout(limit, async {
            let mut outputs = Vec::new();
            for handle in handles {
                outputs.push(handle.await.unwrap_or_else(|err| panic!("{what}: {err}")));
            }
            outputs
        })
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
    })
}

/// A tickwheel `Timer` whose driver runs on `rt`: the default settings, or
/// the tick given to [`settings::set_tick`].
pub fn new_timer(rt: &Runtime) -> tickwheel::Timer {
    let _guard = rt.enter();
    match settings::tick() {
        Some(tick) => tickwheel::Timer::builder()
            .tick(tick)
            .build()
            .expect("a tick of at least 1 ms"),
        None => tickwheel::Timer::new(),
    }
}

/// Pending on its first poll, ready on the second: a call that does not
/// complete synchronously but completes long before its timeout.
pub struct YieldOnce {
    polled: bool,
    /// Wake the task when pending (needed when the runtime drives it; a
    /// caller that polls it again by hand must not send it back to the
    /// runtime).
    wake: bool,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polled {
            Poll::Ready(())
        } else {
            self.polled = true;
            if self.wake {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        }
    }
}

/// Pending once, waking itself, for the runtime to poll it again.
pub fn yield_once() -> YieldOnce {
    YieldOnce {
        polled: false,
        wake: true,
    }
}

/// Pending once without waking: for a caller that polls it twice by hand.
pub fn pending_once() -> YieldOnce {
    YieldOnce {
        polled: false,
        wake: false,
    }
}
