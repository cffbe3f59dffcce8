//! [`Alarm`]: the driver's one `tokio::time::Sleep`, and how it is armed for
//! a tick boundary.
//!
//! It lives behind the driver's pass lock, beside the waker buffer, so that
//! whichever side runs a pass (the hook inside tokio's timer processing, or
//! the driver task) re-arms it in the same pass: the wheel's next busy tick
//! is armed the moment the last one was processed, whether or not the task
//! gets a turn (see `driver.rs`).
//!
//! # Meeting tokio's millisecond grid
//!
//! tokio fires a sleep once its clock has passed the millisecond boundary at
//! or after the deadline (counted from the runtime's start), while the
//! wheel's ticks count from the timer's origin, which need not lie on that
//! grid. On a runtime whose clock tests can pause (current-thread), the
//! alarm first arms for the millisecond *before* the tick boundary: tokio
//! then fires it at the first processing at or after the boundary's
//! millisecond, which on a paused clock is the first instant it can reach at
//! or after the boundary. If that was still short of the boundary, it arms
//! for the boundary itself, which tokio never fires early. So a wheel sleep
//! is never later than `tokio::time::sleep_until` of its tick boundary, and
//! never early.
//!
//! The early arm is used at most once per boundary: an early arm that tokio
//! has fired (the sleep reports itself elapsed) marks its boundary spent.
//! When tokio has already processed the millisecond before the boundary (a
//! boundary off the grid, less than a millisecond ahead), that arm fires at
//! once, without the clock moving; armed early again it would fire again,
//! and on a paused clock the driver would never return. With it, the passes
//! end whatever the tick and the origin: an exact arm fires only once the
//! clock has reached its boundary, and the scan then moves the boundary on.
//!
//! # Why the alarm is retired, not just dropped
//!
//! The tokio sleep holds the hook's waker while it is armed, and the hook
//! holds the driver that holds the alarm: a cycle, broken when tokio fires
//! the sleep or when the alarm lets it go. When the driver task ends (the
//! timer shut down, or the runtime dropped the task), the task retires the
//! alarm: the sleep is dropped and no later pass, from a hook still running
//! on another worker, can arm a new one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::time::Instant;

/// Just under tokio's timer resolution: arming this much before a tick
/// boundary makes tokio fire at the millisecond of the boundary itself.
const TOKIO_ROUNDING: Duration = Duration::from_nanos(999_999);

/// How the sleep is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Armed {
    /// The tick boundary the driver waits for.
    boundary: Instant,
    /// The instant the tokio sleep was set to (a millisecond early, or the
    /// boundary itself).
    at: Instant,
}

impl Armed {
    fn early(&self) -> bool {
        self.at != self.boundary
    }
}

/// What [`Alarm::arm`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arming {
    /// The sleep will fire at or after the boundary; the hook is registered.
    Waiting,
    /// The sleep was already due: the caller scans again.
    Due,
    /// The alarm was retired, or tokio's timer is shutting down: nothing is
    /// armed and nothing will be.
    Off,
}

#[derive(Debug)]
pub(crate) struct Alarm {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: Option<Armed>,
    /// The boundary whose early arm tokio has fired already.
    early_spent: Option<Instant>,
    /// Arm a millisecond early first (current-thread runtimes, whose clock
    /// can be paused; elsewhere it would cost a second wake-up per busy tick
    /// for no gain).
    arm_early: bool,
    retired: bool,
    /// The runtime the driver runs on, whose clock the sleep uses.
    runtime: Handle,
}

impl Alarm {
    /// `runtime` has its time driver (see `tokio_compat::has_time_driver`).
    pub(crate) fn new(runtime: Handle) -> Self {
        Alarm {
            arm_early: runtime.runtime_flavor() == RuntimeFlavor::CurrentThread,
            runtime,
            sleep: None,
            armed: None,
            early_spent: None,
            retired: false,
        }
    }

    /// Arms the sleep for `boundary`, with `hook` as its waker.
    ///
    /// Never called once tokio's timer has begun to shut down: a runtime
    /// drops its tasks, the driver task among them, before it shuts its
    /// timer down, and the task retires the alarm as it is dropped.
    pub(crate) fn arm(&mut self, boundary: Instant, hook: &Waker) -> Arming {
        if self.retired {
            return Arming::Off;
        }
        if let (Some(armed), Some(sleep)) = (self.armed, &self.sleep) {
            if armed.early() && sleep.is_elapsed() {
                self.early_spent = Some(armed.boundary);
            }
        }
        let at = if self.arm_early && self.early_spent != Some(boundary) {
            boundary.checked_sub(TOKIO_ROUNDING).unwrap_or(boundary)
        } else {
            boundary
        };
        self.armed = Some(Armed { boundary, at });
        let sleep = match &mut self.sleep {
            Some(sleep) => {
                sleep.as_mut().reset(at);
                sleep
            }
            None => {
                // The hook can arm too, from inside tokio's timer processing:
                // make the sleep on the timer's runtime, whatever is current.
                let _runtime = self.runtime.enter();
                self.sleep.insert(Box::pin(tokio::time::sleep_until(at)))
            }
        };
        // Polled outside any task's budget: tokio's budget must never keep
        // the driver's own timer from registering.
        let mut cx = Context::from_waker(hook);
        let mut unbudgeted = tokio::task::coop::unconstrained(sleep.as_mut());
        if Pin::new(&mut unbudgeted).poll(&mut cx).is_ready() {
            Arming::Due
        } else {
            Arming::Waiting
        }
    }

    /// Whether the sleep is armed to fire by `boundary`.
    pub(crate) fn wakes_by(&self, boundary: Instant) -> bool {
        self.armed.is_some_and(|armed| armed.boundary <= boundary)
    }

    /// Holds no tokio timer (a paused clock's auto-advance never stops for
    /// a driver with nothing to wait for).
    pub(crate) fn disarm(&mut self) {
        self.sleep = None;
        self.armed = None;
    }

    /// Disarms for good (see the module docs).
    pub(crate) fn retire(&mut self) {
        self.retired = true;
        self.disarm();
    }
}
