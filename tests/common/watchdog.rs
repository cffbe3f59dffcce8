//! A watchdog for integration tests that run a timer's driver on the paused
//! clock. A bug there tends to hang rather than fail (the driver loops, or a
//! task is never woken and the paused clock has nowhere to go), and a hung
//! test stalls CI instead of failing it. So the test runs on a thread of its
//! own, and the test thread gives up on it after a limit of real time.

use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `test` on a current-thread runtime with a paused clock (what
/// `#[tokio::test(start_paused = true)]` builds), on a thread of its own,
/// and fails if it has not finished after `watchdog` of real time (a stuck
/// thread is left behind; the test binary exits anyway). A panic in `test`
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
        Err(_) => panic!(
            "{name}: no result after {watchdog:?} of real time: the driver or a timer is stuck"
        ),
    }
}

/// Real time a short test may take before it counts as hung: each takes
/// well under a second, even in a debug build on a loaded machine.
pub const WATCHDOG: Duration = Duration::from_secs(60);

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
