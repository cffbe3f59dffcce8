//! [`Notice`]: the one way anything reaches the driver *task* (as opposed
//! to the passes, which the hook and the registrations run through the
//! pass lock without the task): a set of reasons, and the task's waker.
//!
//! Rung by a shutdown, the last `Timer` handle going, a cancel that may let
//! an orphaned driver retire, a registration the pass lock could not serve
//! on the caller's thread (it leaves the scan to the task), and a
//! registration earlier than the tick the task's backstop covers. A ring
//! either finds the task's waker (and wakes it, outside the lock) or is
//! seen by the task's next look: none is lost whatever the interleaving
//! (the loom model `loom_a_notice_is_never_lost` checks every one). A ring
//! whose reasons are all pending already costs one atomic read-modify-write
//! and takes no lock.

use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use crate::engine::sync::{lock_unpoisoned, AtomicU8, Mutex};

/// Why the task is told: a set of these bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reasons(u8);

impl Reasons {
    /// The task runs a pass (a shutdown, a handle gone, a scan left to it).
    pub(crate) const PASS: Reasons = Reasons(0b01);
    /// The task re-arms its backstop for an earlier tick.
    pub(crate) const BACKSTOP: Reasons = Reasons(0b10);

    pub(crate) fn contains(self, other: Reasons) -> bool {
        self.0 & other.0 == other.0
    }
}

#[derive(Default)]
pub(crate) struct Notice {
    /// Reasons rung since the task last looked (none at first).
    pending: AtomicU8,
    /// The task waiting for a ring.
    task: Mutex<Option<Waker>>,
}

impl Notice {
    /// Tells the task `why`: the waiting task (if any) is woken, and its
    /// next look sees every reason rung since its last.
    pub(crate) fn ring(&self, why: Reasons) {
        if self.pending.fetch_or(why.0, Ordering::AcqRel) & why.0 == why.0 {
            // Already pending: the task has been woken for it, or will see
            // it before it waits.
            return;
        }
        let task = lock_unpoisoned(&self.task).take();
        if let Some(task) = task {
            task.wake();
        }
    }

    /// The reasons rung since the last `Ready`; otherwise the task in `cx`
    /// is woken by the next ring.
    pub(crate) fn poll_rung(&self, cx: &mut Context<'_>) -> Poll<Reasons> {
        if let Some(rung) = self.take() {
            return Poll::Ready(rung);
        }
        let replaced = lock_unpoisoned(&self.task).replace(cx.waker().clone());
        // Dropped outside the lock. A ring between the take above and the
        // waker's store took no waker: look again now that it is in place.
        drop(replaced);
        self.take().map_or(Poll::Pending, Poll::Ready)
    }

    /// Takes what was rung without waiting (the task's two looks, and the
    /// models' view).
    pub(crate) fn take(&self) -> Option<Reasons> {
        match self.pending.swap(0, Ordering::AcqRel) {
            0 => None,
            rung => Some(Reasons(rung)),
        }
    }
}
