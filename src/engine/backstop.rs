//! [`Backstop`]: the driver task's own tokio sleep, which keeps the wheel
//! moving if tokio stops calling the driver's hook back (see `driver.rs`).
//!
//! It is armed for the boundary of the earliest tick any shard needs
//! processed, plus a slack ([`backstop_slack`]). When it fires, the task
//! looks: a tick still due that long after its boundary means the hook has
//! failed, and the task runs the pass itself.
//!
//! # Who moves it
//!
//! Both the task and the passes. While timers keep coming due, the earliest
//! due tick moves on with every pass, and a backstop only the task could
//! move would wake the task about once per slack just to move it. So a pass
//! that has armed the alarm for a boundary moves the backstop too, when it
//! would otherwise fire by that boundary (the one pass in two, or fewer,
//! that finds it close), and when the wheel has gone idle (it drops it). It
//! re-registers the task's waker as it does, so what wakes the task stays
//! the backstop's own expiry, whichever thread moved it last. Moving it is
//! never needed for correctness, only for fewer wake-ups: a pass that finds
//! the backstop held by the task leaves it, and it fires early, once.
//!
//! # The handshake
//!
//! Whoever moves it stores the tick it covers in `Shared::backstop`, then
//! reads every shard's `due` again (the backstop handshake in `shared.rs`),
//! all under this module's lock, so the tick stored there and the sleep's
//! deadline always belong together.

use std::future::Future;
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::engine::alarm::poll_unbudgeted;
use crate::engine::notice::Reasons;
use crate::engine::state::Inner;
use crate::engine::sync::{Mutex, MutexGuard};

/// How often an orphaned driver (no `Timer` handle left, nothing registered,
/// but some sleep still alive) looks again at whether it may retire: its
/// backstop is armed no later than this (see [`Backstop::cover`]).
pub(crate) const ORPHAN_RECHECK: Duration = Duration::from_secs(1);

/// How far behind its boundary a due tick may fall before the backstop runs
/// a pass: two ticks, and at least 2 ms (tokio's own resolution is 1 ms).
pub(crate) fn backstop_slack(tick_ns: u64) -> Duration {
    Duration::from_nanos(tick_ns.saturating_mul(2)).max(Duration::from_millis(2))
}

/// The driver task's backstop sleep (see the module docs).
#[derive(Debug)]
pub(crate) struct Backstop {
    armed: Mutex<Armed>,
    slack: Duration,
    /// Test-only: how often a pass has moved it.
    #[cfg(test)]
    pub(crate) moves: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Armed {
    /// `None` while no tick is due anywhere: an idle timer holds no tokio
    /// timer and costs no wake-ups.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The driver task's waker, from its last poll.
    task: Option<Waker>,
}

impl Backstop {
    pub(crate) fn new(tick_ns: u64) -> Self {
        Backstop {
            armed: Mutex::new(Armed::default()),
            slack: backstop_slack(tick_ns),
            #[cfg(test)]
            moves: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether the earliest due tick's boundary is the slack or more behind
    /// now: `Some(true)` if some timer is registered too (the hook has not
    /// kept the wheel moving), `Some(false)` if none is (the tick is that of
    /// an entry cancelled since, which only a pass clears).
    pub(crate) fn late(&self, inner: &Inner) -> Option<bool> {
        let shared = &inner.shared;
        shared
            .clock
            .tick_instant(inner.earliest_due())
            .and_then(|boundary| boundary.checked_add(self.slack))
            .is_some_and(|late| late <= shared.now())
            .then(|| inner.pending() > 0)
    }

    /// Driver task: arms the backstop for the earliest due tick, or, with
    /// no `Timer` handle and no timer registered left, for the driver's
    /// next look at whether it may retire ([`ORPHAN_RECHECK`]).
    pub(crate) fn cover(&self, inner: &Inner) {
        let mut armed = self.lock();
        self.cover_locked(&mut armed, inner);
    }

    /// A pass that armed the alarm for `boundary` (`None`: the wheel is
    /// idle): moves the backstop on if it would fire by then, unless the
    /// task holds it right now (then it may fire early, once).
    pub(crate) fn follow(&self, inner: &Inner, boundary: Option<Instant>) {
        let Some(mut armed) = self.try_lock() else {
            return;
        };
        let Some(sleep) = &armed.sleep else {
            return; // none armed: a registration tells the task to arm one
        };
        if boundary.is_some_and(|boundary| sleep.deadline() > boundary) {
            return; // the next pass comes first and can move it then
        }
        #[cfg(test)]
        self.moves
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.cover_locked(&mut armed, inner);
        let Armed { sleep, task } = &mut *armed;
        if let (Some(sleep), Some(task)) = (sleep, task) {
            // The task's waker stays registered whoever reset the sleep,
            // whether or not tokio keeps it across a reset.
            let polled = poll_contained(sleep, task);
            if polled != Some(Poll::Pending) {
                task.wake_by_ref(); // ready, or tokio panicked: the task looks
            }
        }
    }

    /// Driver task: whether the backstop has fired (never while none is
    /// armed).
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut armed = self.lock();
        let Armed { sleep, task } = &mut *armed;
        if !task.as_ref().is_some_and(|task| task.will_wake(cx.waker())) {
            *task = Some(cx.waker().clone());
        }
        match sleep {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }

    /// Stores the earliest due tick as the one covered (the handshake), and
    /// sets the sleep for its boundary plus the slack, never for a moment
    /// less than a slack from now: after a backstop pass that could not run
    /// (left to a party holding the pass lock), the next look comes a slack
    /// later, not at once.
    fn cover_locked(&self, armed: &mut Armed, inner: &Inner) {
        let shared = &inner.shared;
        let covered = loop {
            let due = inner.earliest_due();
            shared.set_backstop(due);
            if inner.earliest_due() >= due {
                break due;
            }
        };
        let now = shared.now();
        let earliest = now.checked_add(self.slack);
        let mut at = shared
            .clock
            .tick_instant(covered)
            .and_then(|boundary| boundary.checked_add(self.slack))
            .map(|at| earliest.map_or(at, |earliest| at.max(earliest)));
        if shared.is_orphaned() && inner.pending() == 0 {
            // Only sleeps that registered nothing (or nothing at all) keep
            // the driver: nothing tells it when the last of them is dropped.
            let recheck = now.checked_add(ORPHAN_RECHECK);
            at = at.into_iter().chain(recheck).min();
        }
        match (at, &mut armed.sleep) {
            (Some(at), Some(sleep)) => {
                if crate::engine::unwind::run_contained(|| sleep.as_mut().reset(at)) {
                    return;
                }
                // tokio refused (its timer shutting down): the task makes a
                // new one when it next covers, or is dropped first.
                armed.sleep = None;
                shared.notice().ring(Reasons::BACKSTOP);
            }
            (Some(at), None) => {
                let _runtime = inner.runtime.enter();
                armed.sleep = Some(Box::pin(tokio::time::sleep_until(at)));
            }
            (None, _) => armed.sleep = None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Armed> {
        self.armed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_lock(&self) -> Option<MutexGuard<'_, Armed>> {
        match self.armed.try_lock() {
            Ok(armed) => Some(armed),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// Polls `sleep` once with `waker`, outside any task's coop budget; `None`
/// if tokio panicked (contained).
fn poll_contained(sleep: &mut Pin<Box<Sleep>>, waker: &Waker) -> Option<Poll<()>> {
    let mut polled = None;
    crate::engine::unwind::run_contained(|| polled = Some(poll_unbudgeted(sleep, waker)));
    polled
}
