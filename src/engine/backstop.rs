//! [`Backstop`]: the driver task's own tokio sleep, which keeps the wheel
//! moving if tokio stops calling the driver's hook back (see `driver.rs`).
//!
//! It is armed for the boundary of the earliest tick any shard needs
//! processed, plus a slack ([`backstop_slack`]). When it fires, the task
//! looks: a tick still due that long after its boundary means the hook has
//! failed, and the task runs the pass itself.
//!
//! # Only the task moves it
//!
//! While timers keep coming due, the earliest due tick moves on with every
//! pass, and a backstop that followed it exactly would wake the task about
//! once per slack just to find the hook had done its work (round 5
//! measured that: 7% more CPU on a 2-worker trickle). So the backstop is a
//! watchdog whose floor backs off: while the earliest due boundary is less
//! than a *period* away, it is armed no sooner than a period from now (or
//! after that boundary, whichever comes first). The period starts at the
//! slack, doubles each time the backstop fires and finds nothing due yet
//! (the hook has processed every tick up to now), up to [`WATCHDOG_MAX`]
//! slacks, and falls back to the slack as soon as it finds a tick late.
//! So every tick is looked at by its boundary plus the period at the
//! latest: whatever the backstop has to catch (tokio not calling the hook
//! back, a registration descheduled before its kick, a pass that panicked
//! twice), it catches within [`WATCHDOG_MAX`] slacks of the boundary the
//! first time, and within the slack while it keeps finding ticks late; a
//! hook that never calls back costs each tick at most the slack. Its own
//! looks cost a working hook's task at most one wake-up per
//! [`WATCHDOG_MAX`] slacks (a registration earlier than the tick it covers
//! still wakes the task, to move it). No pass touches it: it is the task's
//! alone, polled with the task's own waker, so nothing rests on whether
//! tokio keeps a sleep's waker across `reset`.
//!
//! # The handshake
//!
//! The task stores the tick it covers in `Shared::backstop`, then reads
//! every shard's `due` again (the backstop handshake in `shared.rs`), so a
//! registration earlier than the covered tick either is seen or rings the
//! task, which moves the backstop.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Sleep;

use crate::engine::notice::Reasons;
use crate::engine::state::Inner;

/// How often, at the least, an orphaned driver (no `Timer` handle left,
/// nothing registered, but some sleep still alive) looks again at whether
/// it may retire: its backstop is armed no later than this (see
/// [`Backstop::cover`]). The first look after the task was told something
/// (the last handle gone, a registered sleep dropped) comes after
/// [`ORPHAN_FIRST_RECHECK`], and each look after that twice as long after
/// the one before, up to this: a sleep whose drop told the driver while it
/// still held its shard (so the pass saw it alive) is seen gone within a
/// millisecond or two, and a sleep that never registered, whose drop tells
/// nobody, within this.
pub(crate) const ORPHAN_RECHECK: Duration = Duration::from_secs(1);

/// The first of an orphaned driver's looks (see [`ORPHAN_RECHECK`]).
pub(crate) const ORPHAN_FIRST_RECHECK: Duration = Duration::from_millis(1);

/// The watchdog's longest period, in slacks (32 ms at the default 1 ms
/// tick): what a working hook costs the task, at most one wake-up per
/// period, and what the first late tick costs once a working hook stops.
pub(crate) const WATCHDOG_MAX: u32 = 16;

/// How far behind its boundary a due tick may fall before the backstop runs
/// a pass: two ticks, and at least 2 ms (tokio's own resolution is 1 ms).
pub(crate) fn backstop_slack(tick_ns: u64) -> Duration {
    Duration::from_nanos(tick_ns.saturating_mul(2)).max(Duration::from_millis(2))
}

/// The driver task's backstop sleep (see the module docs).
pub(crate) struct Backstop {
    /// `None` while no tick is due anywhere: an idle timer holds no tokio
    /// timer and costs no wake-ups.
    sleep: Option<Pin<Box<Sleep>>>,
    slack: Duration,
    /// The least it is armed ahead of now (see the module docs).
    period: Duration,
    /// How long after now an orphaned driver looks again whether it may
    /// retire (see [`ORPHAN_RECHECK`]).
    orphan_recheck: Duration,
}

impl Backstop {
    pub(crate) fn new(tick_ns: u64) -> Self {
        let slack = backstop_slack(tick_ns);
        Backstop {
            sleep: None,
            slack,
            period: slack,
            orphan_recheck: ORPHAN_FIRST_RECHECK,
        }
    }

    /// The task was told something (a ring for a pass): an orphaned
    /// driver's next look comes after [`ORPHAN_FIRST_RECHECK`] again.
    pub(crate) fn told(&mut self) {
        self.orphan_recheck = ORPHAN_FIRST_RECHECK;
    }

    /// Once it fired: whether the earliest due tick's boundary is the slack
    /// or more behind now: `Some(true)` if some timer is registered too
    /// (the hook has not kept the wheel moving), `Some(false)` if none is
    /// (the tick is that of an entry cancelled since, which only a pass
    /// clears). The watchdog's period falls back to the slack if so, backs
    /// off if nothing is due yet (the hook has processed every tick up to
    /// now), and stays as it is in between.
    ///
    /// With no tick late and no `Timer` handle left, `Some(false)` too: the
    /// look at whether the driver may retire, the next one twice as long
    /// after, up to [`ORPHAN_RECHECK`].
    pub(crate) fn fired(&mut self, inner: &Inner) -> Option<bool> {
        let shared = &inner.shared;
        let now = shared.now();
        let boundary = shared.clock.tick_instant(inner.earliest_due());
        let late = boundary
            .and_then(|boundary| boundary.checked_add(self.slack))
            .is_some_and(|late| late <= now);
        if late {
            self.period = self.slack;
        } else if boundary.is_none_or(|boundary| boundary > now) {
            self.period = (self.period * 2).min(self.slack * WATCHDOG_MAX);
        }
        let orphan_look = !late && shared.is_orphaned();
        if orphan_look {
            self.orphan_recheck = (self.orphan_recheck * 2).min(ORPHAN_RECHECK);
        }
        (late || orphan_look).then(|| late && inner.pending() > 0)
    }

    /// Stores the earliest due tick as the one covered (the handshake), and
    /// sets the sleep for its boundary plus the slack, but, while the
    /// boundary is less than a period away, no sooner than the period from
    /// now or the period after the boundary, whichever comes first: so a
    /// covered tick is looked at by its boundary plus the period at the
    /// latest. A tick already a slack late (a backstop pass that could not
    /// run, left to a party holding the pass lock) is looked at again a
    /// slack later, not at once. With no `Timer` handle and no timer
    /// registered left, it is armed no later than the driver's next look at
    /// whether it may retire (see [`ORPHAN_RECHECK`]).
    pub(crate) fn cover(&mut self, inner: &Inner) {
        let shared = &inner.shared;
        let covered = loop {
            let due = inner.earliest_due();
            shared.set_backstop(due);
            if inner.earliest_due() >= due {
                break due;
            }
        };
        let now = shared.now();
        let mut at = shared.clock.tick_instant(covered).and_then(|boundary| {
            let at = boundary.checked_add(self.slack)?;
            let floor = now.min(boundary).checked_add(self.period);
            let at = floor.map_or(at, |floor| at.max(floor));
            // A tick already a slack late (its pass left to a party holding
            // the pass lock): the next look a slack on, not at once.
            Some(if at <= now {
                now.checked_add(self.slack).unwrap_or(at)
            } else {
                at
            })
        });
        if shared.is_orphaned() && inner.pending() == 0 {
            // Only sleeps that registered nothing (or nothing at all) keep
            // the driver: nothing tells it when the last of them is dropped.
            let recheck = now.checked_add(self.orphan_recheck);
            at = at.into_iter().chain(recheck).min();
        }
        match (at, &mut self.sleep) {
            (Some(at), Some(sleep)) => {
                if crate::engine::unwind::run_contained(|| sleep.as_mut().reset(at)) {
                    return;
                }
                // tokio refused (its timer shutting down): the task makes a
                // new one when it next covers, or is dropped first.
                self.sleep = None;
                shared.notice().ring(Reasons::BACKSTOP);
            }
            (Some(at), None) => {
                let _runtime = inner.runtime.enter();
                self.sleep = Some(Box::pin(tokio::time::sleep_until(at)));
            }
            (None, _) => self.sleep = None,
        }
    }

    /// Test-only: one whose period has backed off all the way.
    #[cfg(all(test, not(tickwheel_loom)))]
    pub(crate) fn backed_off(tick_ns: u64) -> Self {
        let mut backstop = Backstop::new(tick_ns);
        backstop.period = backstop.slack * WATCHDOG_MAX;
        backstop
    }

    /// Test-only: the period, and the instant the sleep is armed for.
    #[cfg(all(test, not(tickwheel_loom)))]
    pub(crate) fn armed(&self) -> (Duration, Option<tokio::time::Instant>) {
        (
            self.period,
            self.sleep.as_ref().map(|sleep| sleep.deadline()),
        )
    }

    /// Whether the backstop has fired (never while none is armed).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.sleep
            .as_mut()
            .map_or(Poll::Pending, |sleep| sleep.as_mut().poll(cx))
    }
}
