//! A watchdog for the unit tests that drive a wheel by hand (the wheel's
//! and the shard's own) or contend for its lock (`raw/lock.rs`): a wheel
//! that stops making progress (an `advance` that loops forever inside the
//! wheel, a lock never released) must fail the run quickly, not hang it
//! until an outer timeout.

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

/// Runs `test` on a current-thread runtime whose clock starts paused (what
/// `#[tokio::test(start_paused = true)]` builds), under a [`Watchdog`] that
/// stays armed until the runtime is gone. Dropping the runtime fires the
/// timer's driver one last time, inside tokio's timer processing on this
/// thread, after the test's body has returned: a wheel that never finishes
/// an advance must fail the test there too.
pub(crate) fn block_on_paused<F: std::future::Future>(test: F) -> F::Output {
    let watchdog = Watchdog::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let output = runtime.block_on(test);
    drop(runtime);
    drop(watchdog);
    output
}
