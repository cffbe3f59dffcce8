//! What tickwheel borrows from tokio beyond its documented API, in one
//! place: for each assumption, what the code relies on, what a tokio release
//! that stopped doing it would break, and the test that notices.
//!
//! # The time-driver probe
//!
//! *Assumed:* creating a `tokio::time::Sleep` (never polled) inside a
//! runtime's context panics if, and only if, that runtime was built without
//! its time driver (`enable_time`, `enable_all`). tokio offers no other way
//! to ask, and documents the panic only for polling.
//!
//! *If it stops:* a probe that no longer panics would let
//! [`Builder::build`](crate::Builder::build) accept a runtime without a time
//! driver, and the driver's first alarm would then panic inside whichever
//! task registered a sleep; a probe that panics on a runtime *with* a time
//! driver would refuse every timer.
//!
//! *Printed:* the probe catches the panic, but the process's panic hook runs
//! first, so tokio's message ("A Tokio 1.x context was found, but timers are
//! disabled...") is printed on stderr (or reported by a custom hook) once per
//! probe of a runtime without a time driver: once per refused `build` or
//! `install`, and once per `Timer::try_current` (or `try_*` free function)
//! in such a runtime. Nothing is printed on a runtime with a time driver.
//!
//! *Tests:* `tests/no_time_driver.rs` (both runtime flavours: `build` and
//! `install` refuse, the ambient timer panics or errs, nothing completes).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use tokio::runtime::Handle;

/// Whether `handle`'s runtime has its time driver (see the module docs: on
/// a runtime without one, tokio's panic message is printed by the panic
/// hook before it is caught).
pub(crate) fn has_time_driver(handle: &Handle) -> bool {
    let _runtime = handle.enter();
    catch_unwind(AssertUnwindSafe(make_probe)).is_ok()
}

/// Panics with tokio's own message ("timers are disabled ... call
/// `enable_time`") if the current runtime has no time driver, as
/// `tokio::time::sleep` would; the caller's location is reported.
#[track_caller]
pub(crate) fn assert_time_driver() {
    make_probe();
}

#[track_caller]
fn make_probe() {
    drop(tokio::time::sleep(Duration::ZERO));
}
