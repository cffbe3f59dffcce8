//! [`Doorbell`]: how the driver's hook, which runs inside tokio's timer
//! processing on whatever thread processes timers, asks the driver task to
//! run a pass: when it found one under way, or found work only the task can
//! do (the timer shut down, or ready to retire).
//!
//! The flag and the task's waker sit under one lock: a ring either finds the
//! waker (and wakes the task, outside the lock) or is seen by the task's next
//! look. No ring is lost whatever the interleaving (the loom model
//! `loom_doorbell_never_loses_a_ring` checks every one). Neither side uses it per
//! timer, and the hook rings only when it could not finish a pass itself.

use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use crate::engine::sync::Mutex;

#[derive(Debug, Default)]
struct State {
    /// Rung since the task last looked.
    rung: bool,
    /// The waker of the task waiting for a ring.
    task: Option<Waker>,
}

#[derive(Debug)]
pub(crate) struct Doorbell {
    state: Mutex<State>,
}

impl Doorbell {
    pub(crate) fn new() -> Self {
        Doorbell {
            state: Mutex::new(State::default()),
        }
    }

    /// Rings: the waiting task (if any) is woken, and its next look sees it.
    pub(crate) fn ring(&self) {
        let task = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.rung = true;
            state.task.take()
        };
        if let Some(task) = task {
            task.wake();
        }
    }

    /// `Ready` once rung since the last `Ready`; otherwise the task in `cx`
    /// is woken by the next ring.
    pub(crate) fn poll_rung(&self, cx: &mut Context<'_>) -> Poll<()> {
        let replaced = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if std::mem::take(&mut state.rung) {
                return Poll::Ready(());
            }
            state.task.replace(cx.waker().clone())
        };
        drop(replaced); // outside the lock
        Poll::Pending
    }
}
