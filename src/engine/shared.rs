//! State every shard, the driver and every `Sleep` can reach: the clock, the
//! driver's wake-up target, the capacity budget and the shutdown flag.
//!
//! The hot path reads this state and rarely writes it. A registration writes
//! only when its deadline is earlier than anything the driver is waiting for
//! (then it lowers `target` and notifies the driver); a bounded timer
//! (`max_pending`) also pays one atomic add per sleep on its budget, which sits
//! on its own cache line.
//!
//! # The target handshake
//!
//! `target` is the one place the earliest tick the driver must wake for is
//! kept. The driver stores `u64::MAX` in it *before* it locks the shards to
//! scan them, then lowers it to the earliest tick it found *after*
//! (`fetch_min`, so a registration that lowered it during the scan stays
//! in it). A registration inserts under its shard's lock, then compares
//! its tick with `target`. Either the driver's scan locked the shard after
//! the insert (and saw the entry), or the registration's lock came after
//! the driver's scan of that shard, so it reads `u64::MAX` or the driver's
//! final target: in both cases a deadline earlier than the target lowers
//! it and asks the driver to re-arm its alarm for the target (the `kick`,
//! see `driver.rs`), which then names that tick or an earlier one.
//!
//! # The backstop handshake
//!
//! The driver task keeps a backstop (see `driver.rs`) for `backstop`, the
//! earliest tick it knew of when it armed it (`u64::MAX`: none armed). The
//! same Dekker pattern as above, with `SeqCst` on both sides: the task
//! stores the tick, then reads every shard's `due`; a registration lowers
//! its shard's `due` (with a fence), then reads `backstop`, and rings the
//! task if its tick is earlier. So either the task sees the new entry, or
//! the registration sees the backstop it must move (the loom model
//! `loom_the_backstop_covers_a_racing_registration_or_is_told`).

use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use crate::engine::clock::{Clock, MonotonicFrame, TimeSource};
use crate::engine::notice::{Notice, Reasons};
use crate::engine::sync::{fence, AtomicBool, AtomicU64, AtomicUsize};

/// How a registration earlier than the target reaches the driver (see
/// `Shared::kick`): called once it has lowered the target to its tick.
///
/// Unwind safe, so that `Timer` stays `UnwindSafe` and `RefUnwindSafe` as
/// tokio's `runtime::Handle` is (the driver's state behind it contains
/// any panic: see `unwind.rs`).
pub(crate) struct Kick(pub(crate) Box<dyn Fn() + Send + Sync + UnwindSafe + RefUnwindSafe>);

/// The capacity budget of a timer built with `max_pending`.
#[repr(align(128))] // keep the contended counter off everyone else's cache line
pub(crate) struct Capacity {
    live: AtomicUsize,
    max: usize,
}

/// A reservation refused: the timer's `max_pending` live sleeps exist
/// (the public [`Error`](crate::Error) is made from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtCapacity {
    pub(crate) max: usize,
}

pub(crate) struct Shared {
    pub(crate) clock: Clock,
    /// Where a new sleep reads the time when `source` is the system's.
    frame: MonotonicFrame,
    /// Where `now` is read: the driver's runtime's clock.
    source: TimeSource,
    /// Set for good once that clock has been seen standing still (tokio's
    /// test clock, paused): from then on a sleep's first poll reads the
    /// clock, so a deadline an `advance` passed is `Ready` on that poll.
    paused_seen: AtomicBool,
    /// The earliest tick the driver must wake for: the earliest `due` the
    /// last scan saw, or a registration's since (see the target
    /// handshake); `u64::MAX` while a scan begins or nothing can come due.
    target: AtomicU64,
    /// The earliest tick the driver task's backstop covers (`u64::MAX`:
    /// none armed); see the backstop handshake above.
    backstop: AtomicU64,
    /// The one way to the driver task.
    notice: Notice,
    /// The driver's way in: a registration earlier than the target re-arms
    /// the driver's alarm for the target on the spot (or leaves it to the
    /// pass under way), so the driver re-arms without its task waiting for
    /// a turn. Installed by the driver as the timer is built, before any
    /// registration can exist.
    kick: OnceLock<Kick>,
    shutdown: AtomicBool,
    /// Live `Timer` handles; at zero the driver may retire once no sleep is
    /// left either.
    handles: AtomicUsize,
    capacity: Option<Capacity>,
}

impl Shared {
    pub(crate) fn new(clock: Clock, source: TimeSource, max_pending: Option<usize>) -> Self {
        Shared {
            frame: MonotonicFrame::new(&clock, &source),
            clock,
            source,
            paused_seen: AtomicBool::new(false),
            target: AtomicU64::new(u64::MAX),
            backstop: AtomicU64::new(u64::MAX),
            notice: Notice::default(),
            kick: OnceLock::new(),
            shutdown: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            capacity: max_pending.map(|max| Capacity {
                live: AtomicUsize::new(0),
                max,
            }),
        }
    }

    /// The current time on the timer's clock (its driver's runtime's).
    pub(crate) fn now(&self) -> Instant {
        self.source.now()
    }

    /// Whether the timer's clock has been seen paused (see `paused_seen`).
    pub(crate) fn clock_paused(&self) -> bool {
        self.paused_seen.load(Ordering::Relaxed)
    }

    /// Looks whether the timer's clock stands still (two readings in a row
    /// agree to the nanosecond, which a running clock never does) and
    /// remembers it. Called when the timer is built and on every driver
    /// pass, both on the driver's runtime; a clock that cannot be paused is
    /// never looked at.
    pub(crate) fn look_for_pause(&self) {
        if self.source.may_pause() && !self.clock_paused() && self.now() == self.now() {
            self.paused_seen.store(true, Ordering::Relaxed);
        }
    }

    /// The current time as an offset from the timer's origin.
    pub(crate) fn now_offset(&self) -> i64 {
        self.clock.offset(self.now())
    }

    /// The deadline `d` from now, for a new sleep: one raw read where the
    /// timer reads the system clock ([`MonotonicFrame`]).
    #[inline]
    pub(crate) fn deadline_after(&self, d: Duration) -> i64 {
        Clock::after(self.frame.offset().unwrap_or_else(|| self.now_offset()), d)
    }

    /// The driver's reading of now, which also keeps the monotonic frame
    /// honest ([`MonotonicFrame::check`]).
    pub(crate) fn pass_now(&self) -> Instant {
        self.frame.check(|| {
            let now = self.now();
            (now, self.clock.offset(now))
        })
    }

    /// Called after linking an entry for `tick` (outside the shard's lock):
    /// makes the driver re-arm if it would otherwise sleep past `tick`, and
    /// its task move the backstop if that covers only later ticks.
    pub(crate) fn registered(&self, tick: u64) {
        if tick < self.target.load(Ordering::SeqCst)
            && self.target.fetch_min(tick, Ordering::SeqCst) > tick
        {
            // Always installed outside the unit tests and models, which run
            // no driver.
            if let Some(Kick(kick)) = self.kick.get() {
                kick();
            }
        }
        if tick < self.backstop.load(Ordering::SeqCst) {
            self.notice.ring(Reasons::BACKSTOP);
        }
    }

    /// Driver task: its backstop now covers `tick` (`u64::MAX`: none). The
    /// caller then reads the shards' `due` (see the backstop handshake).
    pub(crate) fn set_backstop(&self, tick: u64) {
        self.backstop.store(tick, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Driver: installs its way to be told of an earlier tick (see `kick`);
    /// once only.
    pub(crate) fn install_kick(&self, kick: Kick) {
        let installed = self.kick.set(kick).is_ok();
        debug_assert!(installed, "a timer has one driver");
    }

    /// Driver: about to scan; every registration from now on notifies.
    pub(crate) fn begin_scan(&self) {
        self.target.store(u64::MAX, Ordering::SeqCst);
        // Before the scan reads any shard's `due` unlocked (see `Shard::due`).
        fence(Ordering::SeqCst);
    }

    /// Driver: done scanning, the earliest tick found `tick` (or
    /// `u64::MAX`); returns the target, which a registration racing the
    /// scan may have lowered further: the tick the driver wakes for.
    pub(crate) fn end_scan(&self, tick: u64) -> u64 {
        self.target.fetch_min(tick, Ordering::SeqCst).min(tick)
    }

    /// The tick the driver must wake for (see the target handshake).
    pub(crate) fn target(&self) -> u64 {
        self.target.load(Ordering::SeqCst)
    }

    /// Wakes the driver task so it runs a pass (a shutdown, handles gone, a
    /// scan left to it).
    pub(crate) fn nudge(&self) {
        self.notice.ring(Reasons::PASS);
    }

    /// The driver task's one channel in.
    pub(crate) fn notice(&self) -> &Notice {
        &self.notice
    }

    /// The models' view of the backstop handshake: the tick the task's
    /// backstop covers.
    #[cfg(tickwheel_loom)]
    pub(crate) fn backstop(&self) -> u64 {
        self.backstop.load(Ordering::SeqCst)
    }

    /// A new `Timer` handle.
    pub(crate) fn add_handle(&self) {
        self.handles.fetch_add(1, Ordering::SeqCst);
    }

    /// A `Timer` handle dropped; tells the driver when it was the last one.
    pub(crate) fn drop_handle(&self) {
        if self.handles.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.nudge();
        }
    }

    /// No `Timer` handle is left: nobody can make new sleeps.
    pub(crate) fn is_orphaned(&self) -> bool {
        self.handles.load(Ordering::SeqCst) == 0
    }

    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Marks the timer shut down; returns `false` if it already was.
    pub(crate) fn set_shutdown(&self) -> bool {
        !self.shutdown.swap(true, Ordering::SeqCst)
    }

    pub(crate) fn max_pending(&self) -> Option<usize> {
        self.capacity.as_ref().map(|c| c.max)
    }

    /// Takes one unit of the budget for a new sleep, failing at the limit.
    /// Unbounded timers always succeed without touching shared memory.
    #[inline]
    pub(crate) fn try_reserve(&self) -> Result<(), AtCapacity> {
        let Some(cap) = &self.capacity else {
            return Ok(());
        };
        // A CAS loop, not add-then-undo: a transient over-count would make a
        // concurrent reservation fail below the limit.
        cap.live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |live| {
                (live < cap.max).then_some(live + 1)
            })
            .map(|_| ())
            .map_err(|_| AtCapacity { max: cap.max })
    }

    /// Returns the unit a sleep took when it was created.
    pub(crate) fn release(&self) {
        if let Some(cap) = &self.capacity {
            let before = cap.live.fetch_sub(1, Ordering::Relaxed);
            debug_assert!(before > 0, "capacity released more often than reserved");
        }
    }

    /// Live sleeps and timeouts counted against `max_pending`.
    pub(crate) fn live(&self) -> Option<usize> {
        self.capacity
            .as_ref()
            .map(|c| c.live.load(Ordering::Relaxed))
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn shared(max_pending: Option<usize>) -> Shared {
        Shared::new(
            Clock::new(Instant::now(), 1_000_000),
            TimeSource::System,
            max_pending,
        )
    }

    /// Whether the task was told to run a pass (consuming the notice).
    fn noticed(shared: &Shared) -> bool {
        shared
            .notice()
            .take()
            .is_some_and(|why| why.contains(Reasons::PASS))
    }

    /// A shared state whose kicks are counted, taken by `kicked`.
    fn kicked_shared() -> (Shared, Arc<AtomicUsize>) {
        let s = shared(None);
        let kicks = Arc::new(AtomicUsize::new(0));
        let record = kicks.clone();
        s.install_kick(Kick(Box::new(move || {
            record.fetch_add(1, Ordering::SeqCst);
        })));
        (s, kicks)
    }

    fn kicked(kicks: &AtomicUsize) -> bool {
        kicks.swap(0, Ordering::SeqCst) > 0
    }

    /// The target handshake, one step at a time: a registration asks the
    /// driver to re-arm exactly when its tick is earlier than the driver's
    /// target, having lowered the target to it first, so the same or a
    /// later tick does not ask again and the driver arms for the target.
    #[test]
    fn a_registration_kicks_only_when_earlier_than_the_target() {
        let (s, kicks) = kicked_shared();
        assert!(!kicked(&kicks));
        s.registered(50); // the driver waits for nothing yet
        assert!(kicked(&kicks));
        assert_eq!(s.target(), 50);
        for tick in [50, 70] {
            s.registered(tick);
            assert!(!kicked(&kicks), "tick {tick} is not earlier than 50");
        }
        s.registered(49);
        assert!(kicked(&kicks));
        assert_eq!(s.target(), 49);
        // The driver scanned and will wake at tick 30.
        s.begin_scan();
        assert_eq!(s.end_scan(30), 30);
        s.registered(30);
        assert!(!kicked(&kicks), "the driver already wakes at 30");
        s.registered(29);
        assert!(kicked(&kicks));
        // During a scan every registration notifies, whatever the target
        // was: the scan may have passed its shard already...
        s.begin_scan();
        s.registered(1_000);
        assert!(kicked(&kicks), "a registration during a scan");
        // ...and stays in the target however late the scan's own tick.
        assert_eq!(s.end_scan(u64::MAX), 1_000);
        assert_eq!(s.target(), 1_000);
        s.registered(1_000);
        assert!(!kicked(&kicks), "the driver wakes at 1,000 already");
        // The driver has nothing to wait for.
        s.begin_scan();
        assert_eq!(s.end_scan(u64::MAX), u64::MAX);
        s.registered(u64::MAX - 1);
        assert!(kicked(&kicks));
    }

    /// The backstop handshake: a registration earlier than the tick the
    /// task's backstop covers tells the task (once, until it looks); one at
    /// or after it does not.
    #[test]
    fn a_registration_earlier_than_the_backstop_tells_the_task() {
        let s = shared(None);
        let told = |s: &Shared| {
            s.notice()
                .take()
                .is_some_and(|why| why.contains(Reasons::BACKSTOP))
        };
        s.registered(40); // no backstop armed yet
        assert!(told(&s));
        s.set_backstop(40);
        s.registered(40);
        s.registered(90);
        assert!(!told(&s), "the backstop covers tick 40");
        s.registered(39);
        assert!(told(&s));
        s.set_backstop(u64::MAX);
        s.registered(u64::MAX);
        assert!(!told(&s), "a never-due entry needs no backstop");
    }

    #[test]
    fn the_last_handle_dropped_nudges_the_driver() {
        let s = shared(None);
        assert!(!s.is_orphaned());
        s.add_handle();
        s.drop_handle();
        assert!(!noticed(&s), "a handle is left");
        assert!(!s.is_orphaned());
        s.drop_handle();
        assert!(noticed(&s), "the last handle went");
        assert!(s.is_orphaned());
    }

    #[test]
    fn shutdown_is_set_once() {
        let s = shared(None);
        assert!(!s.is_shutdown());
        assert!(s.set_shutdown(), "the first call shuts down");
        assert!(s.is_shutdown());
        assert!(!s.set_shutdown(), "already shut down");
        assert!(s.is_shutdown());
    }

    #[test]
    fn the_budget_counts_reservations_up_to_the_limit() {
        let s = shared(Some(2));
        assert_eq!((s.max_pending(), s.live()), (Some(2), Some(0)));
        s.try_reserve().unwrap();
        s.try_reserve().unwrap();
        assert_eq!(s.live(), Some(2));
        assert_eq!(s.try_reserve(), Err(AtCapacity { max: 2 }));
        s.release();
        assert_eq!(s.live(), Some(1));
        s.try_reserve().unwrap();
        assert_eq!(s.live(), Some(2));
        let unbounded = shared(None);
        assert_eq!((unbounded.max_pending(), unbounded.live()), (None, None));
        unbounded.try_reserve().unwrap();
        assert_eq!(unbounded.live(), None);
    }
}
