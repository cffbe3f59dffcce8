//! A watchdog for the unit tests that drive a wheel by hand (the wheel's
//! and the shard's own): a wheel that stops making progress (an `advance`
//! that loops forever inside the wheel) must fail the run quickly, not hang
//! it until an outer timeout.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How long one such test may take: every one finishes in well under a
/// second, even in a debug build on a loaded machine.
const TEST_LIMIT: Duration = Duration::from_secs(20);

/// Ends the test process if the test that started it outlives
/// [`TEST_LIMIT`]. A running test thread cannot be stopped from outside, so
/// the process is ended instead, which `cargo test` reports as a failed test
/// binary. Dropping the watchdog (a test that returns or panics) disarms it.
pub(crate) struct Watchdog {
    _armed: mpsc::Sender<()>,
}

impl Watchdog {
    pub(crate) fn start() -> Self {
        let (armed, disarmed) = mpsc::channel::<()>();
        let test = std::thread::current()
            .name()
            .unwrap_or("a wheel test")
            .to_owned();
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = disarmed.recv_timeout(TEST_LIMIT) {
                eprintln!(
                    "{test} still runs after {TEST_LIMIT:?}: the wheel stopped making progress"
                );
                std::process::abort();
            }
        });
        Watchdog { _armed: armed }
    }
}
