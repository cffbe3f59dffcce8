//! Diagnostics macros: `tracing` events with the `tracing` feature, nothing
//! without it.
//!
//! The driver and the timer call `debug!` and `trace!` unconditionally, so
//! their code carries no `cfg` attributes. With the feature off, a call
//! expands to an `if false` block that only type-checks its fields: the
//! values are never evaluated, the variables they name still count as used,
//! and the optimiser removes the block entirely.
//!
//! Only one form is accepted, a message then `name = value` fields:
//! `trace!("driver wake-up", ticks = n, fired = f)`. Events go to the
//! `tickwheel` target, so a filter such as `tickwheel=trace` selects them
//! without knowing the module layout.
//!
//! A subscriber is user code, called from inside driver passes (in tokio's
//! timer processing), from the driver's exit guards and from a shutdown: a
//! panic in it is contained at the event, as a waker's is, so a subscriber
//! that panics loses that event and nothing else. (The process's panic hook
//! still reports it.)

/// Emits an event, containing a panic of the subscriber's.
#[cfg(feature = "tracing")]
macro_rules! event {
    ($level:ident, $msg:literal $(, $field:ident = $value:expr)* $(,)?) => {{
        let _ = $crate::engine::unwind::run_contained(|| {
            ::tracing::$level!(target: "tickwheel", $($field = $value,)* $msg)
        });
    }};
}

#[cfg(not(feature = "tracing"))]
macro_rules! event {
    ($level:ident, $msg:literal $(, $field:ident = $value:expr)* $(,)?) => {
        if false {
            $(let _ = &$value;)*
        }
    };
}

macro_rules! debug {
    ($($event:tt)*) => { $crate::engine::trace::event!(debug, $($event)*) };
}

macro_rules! trace {
    ($($event:tt)*) => { $crate::engine::trace::event!(trace, $($event)*) };
}

pub(crate) use {debug, event, trace};
