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
//! On a runtime whose clock tests can pause (current-thread), the alarm
//! first arms a millisecond early (`tokio_compat::early_arm`, assumption 3
//! there), so that tokio fires it at the first processing at or after the
//! boundary's millisecond; if that was still short of the boundary, it arms
//! again for the boundary itself, at once, within the same call. So a wheel
//! sleep is never later than `tokio::time::sleep_until` of its tick
//! boundary, and never early.
//!
//! # Bounded, whatever tokio answers
//!
//! [`Alarm::arm`] polls the tokio sleep at most three times: the early arm,
//! the boundary, and, if tokio calls even the boundary processed while the
//! timer's clock has not reached it (its processed mark ahead of
//! `Instant::now()`), the millisecond after. If that is still processed,
//! it reports [`Arming::Waiting`] all the same, with the rest left to the
//! driver task's backstop (which covers every due tick whatever the alarm
//! does): no caller loops on an alarm that keeps answering "due".
//!
//! # Why the alarm is retired, not just dropped
//!
//! The tokio sleep holds the hook's waker while it is armed, and the hook
//! holds the driver that holds the alarm: a cycle, broken when tokio fires
//! the sleep or when the alarm lets it go. When the driver task ends (the
//! timer shut down, or the runtime dropped the task), the task retires the
//! alarm: the sleep is dropped, and the stop that the retirement sets
//! (`requests.rs`) keeps every later pass, from a hook still running on
//! another worker, from arming a new one. An arm that fails (below) stops
//! the driver the same way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::time::Instant;

use crate::engine::tokio_compat::early_arm;

/// What [`Alarm::arm`] found.
pub(crate) enum Arming {
    /// Nothing for the caller to do now: the sleep will fire at or after
    /// the boundary and call the hook, or (where tokio calls the boundary,
    /// and the millisecond after it, processed while the clock has not
    /// reached it) the driver task's backstop scans once the clock gets
    /// there.
    Waiting,
    /// A scan is due now that no hook call will run: the boundary has come
    /// (tokio says so, and so does the clock), or, from
    /// [`Alarm::arm_soon`], tokio takes no arm at all. The caller scans, or
    /// leaves the scan to the driver task.
    Due,
    /// Arming failed (tokio's timer shutting down): nothing is armed, and
    /// the driver stops, so nothing will be.
    Off,
}

pub(crate) struct Alarm {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The instant the sleep is armed to wake the driver for: a tick
    /// boundary, or (see [`Alarm::arm_soon`]) the soonest instant tokio
    /// fires for.
    boundary: Option<Instant>,
    /// Arm a millisecond early first (current-thread runtimes, whose clock
    /// can be paused; elsewhere the grid search aligns the ticks instead,
    /// and an early arm would cost a second wake-up per busy tick).
    arm_early: bool,
    /// The runtime the driver runs on, whose clock the sleep uses.
    runtime: Handle,
    /// The sleep's waker: the driver's hook, whatever arms it.
    hook: Waker,
}

impl Alarm {
    /// `runtime` has its time driver (see `tokio_compat::has_time_driver`);
    /// `hook` is the waker every arm gives the sleep.
    pub(crate) fn new(runtime: Handle, hook: Waker) -> Self {
        Alarm {
            arm_early: runtime.runtime_flavor() == RuntimeFlavor::CurrentThread,
            runtime,
            hook,
            sleep: None,
            boundary: None,
        }
    }

    /// Arms the sleep for `boundary`, with the hook as its waker; `now`
    /// reads the timer's clock.
    ///
    /// Never called once tokio's timer has begun to shut down (assumption 4
    /// in `tokio_compat.rs`): the driver task retires the alarm as its
    /// runtime drops it.
    pub(crate) fn arm(&mut self, boundary: Instant, now: impl Fn() -> Instant) -> Arming {
        // Whether the sleep armed for `boundary` has fired, if it is.
        let fired = (self.boundary == Some(boundary))
            .then(|| self.sleep.as_ref().map(|sleep| sleep.is_elapsed()))
            .flatten();
        // Armed for it already (not fired): arming again would be worse
        // than useless: tokio may call the hook from inside a reset to a
        // processed deadline (the early arm), and the pass that call asks
        // for would arm again, round and round. Or tokio fired the sleep
        // before its deadline, which it does only as it shuts its timers
        // down (tokio's alternative timer, before the runtime drops its
        // tasks: assumption 4 in `tokio_compat.rs`), when a reset would
        // panic: left to the backstop, which the shutdown ends anyway.
        if fired == Some(false) || (fired == Some(true) && !self.arm_early && now() < boundary) {
            return Arming::Waiting;
        }
        self.boundary = Some(boundary);
        let early = self.arm_early.then(|| early_arm(boundary));
        for at in early.into_iter().chain([boundary]) {
            if let Some(armed) = self.set(at) {
                return armed;
            }
        }
        if now() >= boundary {
            return Arming::Due;
        }
        // tokio's processed mark is ahead of the clock: a millisecond later
        // is the least it can still fire for.
        // If even that is processed, left to the backstop: see the module
        // docs.
        let later = boundary.checked_add(Duration::from_millis(1));
        later.and_then(|at| self.set(at)).unwrap_or(Arming::Waiting)
    }

    /// Sets the tokio sleep to `at` and polls it once with the hook: `None`
    /// if tokio fired it on that poll (it has processed `at`), else
    /// `Waiting`, or `Off` if arming failed.
    ///
    /// tokio's alternative timer panics in `reset` once its runtime is
    /// shutting down, and calls the hook then (assumption 4 in
    /// `tokio_compat.rs`): the panic is contained and the alarm disarmed;
    /// `Off` stops the driver, as the driver task would retire the alarm a
    /// moment later.
    /// The poll is outside any task's budget: tokio's budget must never
    /// keep the driver's own timer from registering.
    fn set(&mut self, at: Instant) -> Option<Arming> {
        let mut polled = Poll::Pending;
        let set = crate::engine::unwind::run_contained(|| {
            if let Some(sleep) = &mut self.sleep {
                sleep.as_mut().reset(at);
            }
            let sleep = self.sleep.get_or_insert_with(|| {
                // The hook can arm too, from inside tokio's timer
                // processing: make the sleep on the timer's runtime,
                // whatever is current.
                let _runtime = self.runtime.enter();
                Box::pin(tokio::time::sleep_until(at))
            });
            let mut unbudgeted = tokio::task::coop::unconstrained(sleep.as_mut());
            polled = Pin::new(&mut unbudgeted).poll(&mut Context::from_waker(&self.hook));
        });
        if !set {
            self.disarm();
            return Some(Arming::Off);
        }
        polled.is_pending().then_some(Arming::Waiting)
    }

    /// Whether the sleep is armed to wake the driver by `boundary`: armed
    /// for it or earlier, and not yet fired (a fired sleep holds no tokio
    /// timer, and calls the hook no more).
    pub(crate) fn wakes_by(&self, boundary: Instant) -> bool {
        self.armed_by(boundary) && self.sleep.as_ref().is_some_and(|sleep| !sleep.is_elapsed())
    }

    /// Whether the sleep was last armed for `boundary` or earlier, fired
    /// since or not.
    pub(crate) fn armed_by(&self, boundary: Instant) -> bool {
        self.boundary.is_some_and(|armed| armed <= boundary)
    }

    /// Arms the sleep for the first millisecond tokio has not processed,
    /// unless it wakes the driver by then already: for a scan that is due
    /// now and that the party arming may not run (a registration), so that
    /// tokio's next timer processing calls the hook and the hook's pass
    /// runs it, whether or not the driver task gets a turn. `now` reads the
    /// timer's clock.
    ///
    /// tokio files a deadline under the millisecond after it, so an instant
    /// just past now is the soonest it fires for; if it calls even that
    /// processed (its processed mark ahead of the clock), a millisecond
    /// later is the least it can still fire for. If that too is processed,
    /// [`Arming::Due`]: the caller leaves the scan to the driver task.
    pub(crate) fn arm_soon(&mut self, now: impl Fn() -> Instant) -> Arming {
        // An arm a millisecond on, the fallback below, is as good: taking
        // it for not soon enough would arm again, and again, while tokio
        // keeps answering "processed" for the instant just past now (its
        // hook calls raising a request each time) until the clock caught up.
        if self.wakes_by(now() + Duration::from_millis(1)) {
            return Arming::Waiting;
        }
        for at in [Duration::from_nanos(1), Duration::from_millis(1)].map(|d| now() + d) {
            self.boundary = Some(at);
            if let Some(armed) = self.set(at) {
                return armed;
            }
        }
        Arming::Due
    }

    /// Holds no tokio timer (a paused clock's auto-advance never stops for
    /// a driver with nothing to wait for).
    pub(crate) fn disarm(&mut self) {
        self.sleep = None;
        self.boundary = None;
    }
}
