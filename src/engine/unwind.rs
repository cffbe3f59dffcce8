//! Containing panics from user code the timer runs: wakers (on the driver)
//! and scheduled tasks (on their loops).
//!
//! `catch_unwind` hands back the panic's payload, and dropping that payload
//! runs user code too: a payload whose `Drop` panics would unwind out of the
//! very place that caught the first panic. Every payload the crate catches is
//! dropped through [`drop_payload`], which contains that second panic as well.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A panic payload, as `std::panic::catch_unwind` returns it.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// Drops `payload`, containing a panic raised by its own `Drop`. The payload
/// of that second panic is leaked rather than dropped: its drop could panic
/// again, without end.
pub(crate) fn drop_payload(payload: Payload) {
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(inner);
    }
}

/// Runs `f`, containing any panic it raises (payload dropped safely).
/// Returns `true` if `f` returned normally.
pub(crate) fn run_contained(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(drop_payload)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Panics when dropped.
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("payload drop");
        }
    }

    #[test]
    fn a_payload_that_panics_on_drop_is_contained() {
        assert!(!run_contained(|| std::panic::panic_any(Bomb)));
        assert!(run_contained(|| {}));
    }
}
