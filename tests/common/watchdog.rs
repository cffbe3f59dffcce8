//! A watchdog for integration tests that run a timer's driver: the body runs
//! on a thread of its own, and the test fails if it has not returned within
//! 30 s. A sleep that never fires (its driver on a runtime nobody drives, or
//! a paused clock that never reaches it) then fails the test with a message
//! instead of stalling CI.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How long a watched body may take: the bodies run in well under a second
/// of real time (their clocks are paused), even in a debug build on a loaded
/// machine.
const LIMIT: Duration = Duration::from_secs(30);

/// Runs `body` on a thread of its own and returns what it returns; panics
/// if the body panicked (its own message is printed above), or if it is
/// still running after 30 s (the thread is left behind: a running thread
/// cannot be stopped, and the test process ends after the run anyway).
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
            panic!("still running after {LIMIT:?}: a timer never fired or a driver never yielded")
        }
    }
}
