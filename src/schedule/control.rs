//! [`Control`]: the state a scheduled task's handle shares with the spawned
//! task that waits on the wheel, for both [`ScheduledTask`] and
//! [`PeriodicTask`].
//!
//! Whoever moves the state out of `Waiting` first decides: the handle's
//! `cancel` (or the task itself, on the timer's shutdown) makes it
//! `Cancelled` for good; a one-shot task makes it `Started` before polling
//! its future, so a successful cancel means the future never runs. A
//! periodic task stays `Waiting` between runs until it is cancelled.
//!
//! [`ScheduledTask`]: crate::ScheduledTask
//! [`PeriodicTask`]: crate::PeriodicTask

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

/// Where a scheduled task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting for its deadline (a periodic task: still scheduled).
    Waiting,
    /// A one-shot task's deadline passed and its future was started.
    Started,
    /// Cancelled, by the handle or by the timer's shutdown; nothing starts
    /// again.
    Cancelled,
}

const WAITING: u8 = 0;
const STARTED: u8 = 1;
const CANCELLED: u8 = 2;

#[derive(Debug)]
pub(crate) struct Control {
    state: AtomicU8,
    /// Wakes the waiting task at once on `cancel`, so it ends (and drops what
    /// it owns) promptly rather than at its deadline.
    cancelled: Notify,
}

impl Control {
    pub(crate) fn new() -> Self {
        Control {
            state: AtomicU8::new(WAITING),
            cancelled: Notify::new(),
        }
    }

    /// Cancels the task if it is still waiting, and wakes it; `true` if this
    /// call did.
    pub(crate) fn cancel(&self) -> bool {
        let won = self.leave_waiting(CANCELLED);
        if won {
            self.cancelled.notify_one();
        }
        won
    }

    /// Marks a one-shot task started if it is still waiting; `true` if this
    /// call did (a later `cancel` then returns `false`).
    pub(crate) fn start(&self) -> bool {
        self.leave_waiting(STARTED)
    }

    /// Completes once [`cancel`](Control::cancel) has been called (also if
    /// it was called before this future was created).
    pub(crate) fn cancelled(&self) -> Notified<'_> {
        self.cancelled.notified()
    }

    pub(crate) fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            WAITING => State::Waiting,
            STARTED => State::Started,
            _ => State::Cancelled,
        }
    }

    fn leave_waiting(&self, to: u8) -> bool {
        self.state
            .compare_exchange(WAITING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}
