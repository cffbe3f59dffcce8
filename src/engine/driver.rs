//! The driver: what advances every shard's wheel, and the one task that
//! keeps it going.
//!
//! The driver arms one `tokio::time::Sleep` (its [`Alarm`]) for the next
//! busy tick, and holds none when nothing can come due: an idle timer costs
//! no wake-ups at all. A registration earlier than the driver's target
//! notifies the task, which re-arms (see `shared.rs` for that handshake).
//!
//! # Moving when tokio's clock does
//!
//! The alarm is polled with a waker of the driver's own (the *hook*), not
//! the task's. When tokio's time driver fires it, the hook runs a whole pass
//! right there, before tokio's processing returns: it processes every due
//! tick, wakes their tasks, and arms the alarm for the next busy tick. So the
//! wheel advances in the same pass that fires tokio's own sleeps due at that
//! moment, tick after tick, whether or not the driver task can get a turn:
//! on a runtime whose run queue is full, tokio still processes its timers
//! every few dozen task polls (`event_interval`) and whenever a worker parks,
//! and the wheel moves with it. After `tokio::time::advance(d).await` (which
//! returns once tokio has processed its timers) every wheel sleep due by
//! then has been woken, exactly as every `tokio::time::Sleep` has.
//!
//! A registration earlier than the driver's target does not wait for the
//! task either: it runs a pass through the hook on its own thread (see
//! `shared.rs`), so the alarm is re-armed for it at once. The task runs a
//! pass when it starts and when a notice comes (a shutdown, the last handle
//! gone, a cancel that may let an orphaned driver retire), and ends when a
//! pass finds the timer shut down or ready to retire.
//!
//! # One pass at a time, and none lost
//!
//! A [`PassLock`] keeps one pass at a time, and nobody waits for it: a pass
//! asked for while another runs is run by that pass's thread before it lets
//! go. So the hook never blocks inside tokio's timer processing, and a waker
//! that registers a sleep from inside a pass only leaves a request that the
//! same thread then runs. Each pass reads the clock once it holds the lock,
//! so nothing is processed on a stale reading.
//!
//! The driver never runs user code except `Waker::wake`; a waker that panics
//! is counted and skipped. When the task ends for any reason, including the
//! runtime dropping it at shutdown, a guard retires the alarm and another
//! shuts the timer down, so that every waiting task is woken instead of
//! waiting forever.

use std::future::{poll_fn, Future};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};
use std::time::Duration;

use crate::engine::alarm::{Alarm, Arming};
use crate::engine::doorbell::Doorbell;
use crate::engine::pass_lock::PassLock;
use crate::engine::shard::WAKE_BATCH;
use crate::engine::shared::Kick;
use crate::engine::state::Inner;
use crate::engine::trace::{debug, trace};

/// How often an orphaned driver (no `Timer` handle left, nothing registered,
/// but some unpolled sleep still alive) checks whether it may retire.
const ORPHAN_RECHECK: Duration = Duration::from_secs(1);

/// Shuts the timer down when the driver ends, however it ends.
struct ShutDownOnExit(Arc<Inner>);

impl Drop for ShutDownOnExit {
    fn drop(&mut self) {
        self.0.shut_down();
        debug!("driver stopped");
    }
}

/// Retires the alarm when the task ends, however it ends (see `alarm.rs`).
struct RetireOnExit(Arc<Driver>);

impl Drop for RetireOnExit {
    fn drop(&mut self) {
        self.0.pass.lock().alarm.retire();
    }
}

/// What one pass needs, behind the lock that keeps one pass at a time.
struct PassState {
    /// The wakers a scan collects, woken outside the shard locks.
    buffer: Vec<Waker>,
    alarm: Alarm,
    /// Set by the pass that found the task must end (`Retire` or `Off`).
    stop: Option<Pass>,
}

/// What the driver task and the hook share.
struct Driver {
    inner: Arc<Inner>,
    pass: PassLock<PassState>,
    /// A whole pass is wanted (the alarm fired, or the task asks).
    scan_wanted: AtomicBool,
    /// The earliest tick a registration asked the alarm to be armed for
    /// (`u64::MAX`: none).
    arm_wanted: AtomicU64,
    /// Rung when a pass found that the task must end.
    doorbell: Doorbell,
}

/// Where the driver stands after a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The earliest tick some shard needs processed.
    Tick(u64),
    /// Nothing can come due; `pending` entries are registered anyway
    /// (deadlines that never fire).
    Nothing { pending: usize },
}

/// What a pass left the driver waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The alarm is armed for the next busy tick (or the orphan recheck).
    Armed,
    /// Nothing can come due: no alarm, wait for a notice.
    Parked,
    /// No handle, nothing registered and no sleep alive: the task may end.
    Retire,
    /// The timer is shut down, or the alarm retired: the task ends.
    Off,
}

impl Driver {
    /// Processes every tick due by now on every shard, wakes their tasks
    /// (outside the shard locks), publishes the driver's next target and
    /// arms the alarm for it, with `hook` as the alarm's waker.
    ///
    /// `wake_up` says whether this pass is a driver wake-up (the alarm
    /// fired, or a notice came), rather than the task starting: only
    /// wake-ups, and scans that fire timers, are counted in
    /// `Stats::wakeups` and traced.
    fn pass(&self, state: &mut PassState, hook: &Waker, mut wake_up: bool) -> Pass {
        let inner = &*self.inner;
        let shared = &inner.shared;
        loop {
            if shared.is_shutdown() {
                state.alarm.disarm();
                return Pass::Off;
            }
            let boundary = match self.scan(&mut state.buffer, wake_up) {
                Next::Tick(tick) => shared.clock.tick_instant(tick),
                Next::Nothing { pending: 0 } if shared.is_orphaned() => {
                    if inner.no_sleeps_alive() {
                        state.alarm.disarm();
                        return Pass::Retire;
                    }
                    Some(shared.now() + ORPHAN_RECHECK)
                }
                Next::Nothing { .. } => None,
            };
            let Some(boundary) = boundary else {
                state.alarm.disarm();
                return Pass::Parked;
            };
            match state.alarm.arm(boundary, hook) {
                Arming::Waiting => return Pass::Armed,
                Arming::Due => wake_up = false, // already due: scan again
                Arming::Off => return Pass::Off,
            }
        }
    }

    /// Asks for a whole pass: run here and now, or by the thread whose pass
    /// is under way (see `pass_lock.rs`). `wake_up` says whether it is a
    /// wake-up (all but the task's first pass are).
    fn request_pass(&self, hook: &Waker, wake_up: bool) {
        self.scan_wanted.store(true, Ordering::SeqCst);
        self.run_requests(hook, wake_up);
    }

    /// Asks for the alarm to be armed no later than `tick`'s boundary (a
    /// registration earlier than the target). Unlike a pass, this locks no
    /// shard, so a registering thread does not wait for another shard's
    /// lock; only if that tick has come by the time the alarm is armed (a
    /// deadline within microseconds) does it run the whole pass itself.
    fn request_arm(&self, tick: u64, hook: &Waker) {
        self.arm_wanted.fetch_min(tick, Ordering::SeqCst);
        self.run_requests(hook, true);
    }

    fn run_requests(&self, hook: &Waker, mut wake_up: bool) {
        let mut ring = false;
        self.pass.request(|state| {
            if state.stop.is_some() {
                return ControlFlow::Break(());
            }
            let pass = if self.scan_wanted.swap(false, Ordering::SeqCst) {
                // A pass scans after this: it sees every entry whose tick
                // was asked for so far.
                self.arm_wanted.store(u64::MAX, Ordering::SeqCst);
                self.pass(state, hook, wake_up)
            } else {
                match self.arm_wanted.swap(u64::MAX, Ordering::SeqCst) {
                    u64::MAX => return ControlFlow::Continue(()),
                    tick => self.arm_for(state, tick, hook),
                }
            };
            wake_up = true;
            if matches!(pass, Pass::Retire | Pass::Off) {
                state.stop = Some(pass);
                ring = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
        if ring {
            self.doorbell.ring();
        }
    }

    /// Moves the alarm to `tick`'s boundary if it would wake later, without
    /// a scan; a whole pass if that tick is due already.
    fn arm_for(&self, state: &mut PassState, tick: u64, hook: &Waker) -> Pass {
        let shared = &self.inner.shared;
        if shared.is_shutdown() {
            state.alarm.disarm();
            return Pass::Off;
        }
        let Some(boundary) = shared.clock.tick_instant(tick) else {
            return Pass::Armed; // no clock reaches it: nothing to arm
        };
        if state.alarm.wakes_by(boundary) {
            return Pass::Armed;
        }
        trace!("driver re-armed", next_tick = tick);
        match state.alarm.arm(boundary, hook) {
            Arming::Waiting => Pass::Armed,
            Arming::Due => self.pass(state, hook, true),
            Arming::Off => Pass::Off,
        }
    }

    fn scan(&self, buffer: &mut Vec<Waker>, wake_up: bool) -> Next {
        let inner = &*self.inner;
        let shared = &inner.shared;
        shared.look_for_pause();
        shared.begin_scan();
        // The clock is read after `begin_scan`: a registration that missed
        // this reading sees the cleared target and notifies.
        let (now_ns, now_tick) = shared.clock.now_tick(shared.now());
        let mut next: Option<u64> = None;
        let mut pending = 0;
        let mut fired = 0u64;
        for shard in inner.shards.iter() {
            // A shard with nothing due by now is not locked (see
            // `Shard::due`): a pass costs in proportion to the busy shards.
            let due = shard.due();
            let next_here = if due > now_tick {
                (due != u64::MAX).then_some(due)
            } else {
                let advanced = shard.advance(now_tick, now_ns, buffer, &inner.wake_panics);
                fired += advanced.fired;
                advanced.next
            };
            if let Some(tick) = next_here {
                next = Some(next.map_or(tick, |n| n.min(tick)));
            }
        }
        if next.is_none() {
            // Parking: count what is registered anyway (never-due entries).
            pending = inner.shards.iter().map(|shard| shard.pending()).sum();
        }
        shared.end_scan(next.unwrap_or(u64::MAX));
        let before = inner.clock_tick.fetch_max(now_tick, Ordering::Relaxed);
        if wake_up || fired > 0 {
            inner.wakeups.fetch_add(1, Ordering::Relaxed);
            trace!(
                "driver wake-up",
                tick = now_tick,
                ticks = now_tick.saturating_sub(before),
                fired = fired,
                next_tick = next.unwrap_or(u64::MAX),
            );
        }
        match next {
            Some(tick) => Next::Tick(tick),
            None => Next::Nothing { pending },
        }
    }
}

/// The driver's hook: the alarm's waker, woken by tokio's time driver. It
/// runs a pass on the spot (see the module docs).
///
/// It holds the driver weakly, as the registrations' way in does: the
/// alarm's tokio sleep holds the hook, and the timer's shared state the way
/// in, while the driver holds both.
struct Hook(Weak<Driver>);

impl Wake for Hook {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(driver) = self.0.upgrade() {
            driver.request_pass(&Waker::from(self.clone()), true);
        }
    }
}

/// The driver task for `inner`.
///
/// The shutdown guard is made here, before the task exists, so that a task
/// dropped before its first poll (its runtime shut down first, or was already
/// gone when the timer was built) still shuts the timer down.
pub(crate) fn run(inner: Arc<Inner>) -> impl Future<Output = ()> + Send + 'static {
    let guard = ShutDownOnExit(inner);
    // Made now, not when the task is first polled: registrations reach the
    // driver through its hook from now on, however long the task waits.
    let driver = Arc::new(Driver {
        inner: guard.0.clone(),
        pass: PassLock::new(PassState {
            buffer: Vec::with_capacity(WAKE_BATCH),
            alarm: Alarm::new(guard.0.runtime.clone()),
            stop: None,
        }),
        scan_wanted: AtomicBool::new(false),
        arm_wanted: AtomicU64::new(u64::MAX),
        doorbell: Doorbell::new(),
    });
    let hook = Waker::from(Arc::new(Hook(Arc::downgrade(&driver))));
    let kick = {
        let (driver, hook) = (Arc::downgrade(&driver), hook.clone());
        move |tick| {
            if let Some(driver) = driver.upgrade() {
                driver.request_arm(tick, &hook);
            }
        }
    };
    guard.0.shared.install_kick(Kick(Box::new(kick)));
    let retire = RetireOnExit(driver);
    async move {
        drive(&retire.0, &hook).await;
        drop(retire);
        drop(guard);
    }
}

async fn drive(driver: &Driver, hook: &Waker) {
    let shared = &driver.inner.shared;
    debug!("driver started", shards = driver.inner.shards.len() as u64);
    // The first pass is the task's start, not a wake-up.
    let mut wake_up = false;
    loop {
        driver.request_pass(hook, wake_up);
        wake_up = true;
        // Read under the lock: a pass under way elsewhere may be setting it.
        match driver.pass.lock().stop {
            Some(Pass::Retire) => {
                debug!("driver stopping: no timer handle or sleep is left");
                return;
            }
            Some(_) => {
                debug!("driver stopping: the timer was shut down");
                return;
            }
            None => {}
        }
        tokio::select! {
            biased;
            () = shared.notified() => {}
            () = poll_fn(|cx| driver.doorbell.poll_rung(cx)) => {}
        }
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use crate::engine::wheel::watchdog::block_on_paused;
    use crate::Timer;

    /// Tasks alive on the current runtime: the driver is one while it runs.
    fn tasks_alive() -> usize {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    }

    /// With every `Timer` handle gone but a sleep never polled still alive,
    /// the driver checks once a second whether it may retire, and retires at
    /// the first check after that sleep is dropped (dropping a sleep that
    /// never registered tells the driver nothing).
    #[test]
    fn an_orphaned_driver_retires_once_its_last_unpolled_sleep_is_gone() {
        block_on_paused(async {
            let timer = Timer::new();
            let sleep = timer.sleep(Duration::from_secs(3600));
            drop(timer);
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "the driver runs while a sleep exists");
            tokio::time::advance(Duration::from_secs(5)).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "the driver runs while a sleep exists");
            drop(sleep);
            tokio::time::advance(super::ORPHAN_RECHECK).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 0, "the driver outlived its last sleep");
        });
    }

    /// An orphaned driver whose only entries can never fire (a registered
    /// `Duration::MAX` sleep) parks: it wakes neither every tick nor for the
    /// once-a-second retirement check, which is for timers with nothing
    /// registered.
    #[test]
    fn an_orphaned_driver_with_never_due_entries_parks() {
        block_on_paused(async {
            let timer = Timer::new();
            let inner = timer.inner().clone();
            let mut forever = tokio_test::task::spawn(timer.sleep(Duration::MAX));
            tokio_test::assert_pending!(forever.poll());
            drop(timer);
            tokio::task::yield_now().await;
            let before = inner.wakeups.load(Ordering::Relaxed);
            tokio::time::advance(Duration::from_secs(60)).await;
            tokio::task::yield_now().await;
            assert_eq!(inner.wakeups.load(Ordering::Relaxed), before);
            assert_eq!(tasks_alive(), 1, "registered: the driver stays");
            assert!(!forever.is_woken());
        });
    }
}
