//! The driver: what advances every shard's wheel, and the one task that
//! keeps it going.
//!
//! The driver task sleeps on a `tokio::time::Sleep` armed for the next busy
//! tick, and parks on a `Notify` when nothing can come due: an idle timer
//! costs no wake-ups at all. A registration earlier than the driver's target
//! notifies it (see `shared.rs` for that handshake).
//!
//! # Firing inside tokio's timer processing
//!
//! The tokio sleep is polled with a waker of the driver's own (the *hook*),
//! not the task's. When tokio's time driver fires it, the hook processes
//! every due tick right there, before tokio's processing returns: wheel
//! sleeps are woken in the same pass as tokio's own sleeps due at that
//! moment, so after `tokio::time::advance(d).await` (which returns once
//! tokio has processed its timers) every wheel sleep due by then has been
//! woken, exactly as every `tokio::time::Sleep` has. The hook then wakes the
//! task, which re-arms the tokio sleep for the next busy tick. Either may
//! scan; a mutex keeps one scan at a time, and each reads the clock when it
//! holds it, so nothing is processed on a stale reading.
//!
//! # Meeting tokio's millisecond grid
//!
//! tokio fires a sleep once its clock has passed the millisecond boundary at
//! or after the deadline (counted from the runtime's start), while the
//! wheel's ticks count from the timer's origin, which need not lie on that
//! grid. On a runtime whose clock tests can pause (current-thread), the
//! driver first arms for the millisecond *before* the tick boundary: tokio
//! then fires it at the first processing at or after the boundary's
//! millisecond, which on a paused clock is the first instant it can reach at
//! or after the boundary. If that was still short of the boundary, it arms
//! for the boundary itself, which tokio never fires early. So a wheel sleep
//! is never later than `tokio::time::sleep_until` of its tick boundary, and
//! never early.
//!
//! The early arm is used at most once per boundary. When tokio has already
//! processed the millisecond before the boundary (a boundary off the grid,
//! less than a millisecond ahead), that arm fires at once, without the
//! clock moving; armed early again it would fire again, and on a paused
//! clock the driver would never return. And before it re-arms, the task
//! forgets any ring of the hook it has not looked at: that ring was about
//! the sleep being replaced, and taken for the new arm's it would make an
//! early arm look spent before tokio reached it (the second of two sleeps
//! in a row a whole tick late). With both, the loop ends whatever the tick
//! and the origin: an exact arm fires only once the clock has reached its
//! boundary, and the scan then moves the boundary on.
//!
//! The driver never runs user code except `Waker::wake`; a waker that panics
//! is counted and skipped. When the task ends for any reason, including the
//! runtime dropping it at shutdown, a guard shuts the timer down so that every
//! waiting task is woken instead of waiting forever.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use tokio::runtime::RuntimeFlavor;
use tokio::time::Instant;

use crate::engine::doorbell::Doorbell;
use crate::engine::shard::WAKE_BATCH;
use crate::engine::state::Inner;
use crate::engine::trace::{debug, trace};

/// How often an orphaned driver (no `Timer` handle left, nothing registered,
/// but some unpolled sleep still alive) checks whether it may retire.
const ORPHAN_RECHECK: Duration = Duration::from_secs(1);

/// Just under tokio's timer resolution: arming this much before a tick
/// boundary makes tokio fire at the millisecond of the boundary itself.
const TOKIO_ROUNDING: Duration = Duration::from_nanos(999_999);

/// Shuts the timer down when the driver ends, however it ends.
struct ShutDownOnExit(Arc<Inner>);

impl Drop for ShutDownOnExit {
    fn drop(&mut self) {
        self.0.shut_down();
        debug!("driver stopped");
    }
}

/// What the driver task and the hook share.
struct Driver {
    inner: Arc<Inner>,
    /// One scan at a time; holds the waker buffer that scan fills.
    scan: Mutex<Vec<Waker>>,
    /// Rung by the hook after it fired, to make the task re-arm.
    doorbell: Doorbell,
    /// Set by the hook when it found a scan under way and left the work to
    /// the task's next pass.
    missed: AtomicBool,
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

impl Driver {
    /// Processes every tick due by now on every shard, wakes their tasks
    /// (outside the shard locks) and publishes the driver's next target.
    ///
    /// `wake_up` says whether this pass is a driver wake-up (the tokio sleep
    /// fired, or a notice came), rather than the task starting or re-arming
    /// after one: only wake-ups, and passes that fire timers, are counted in
    /// `Stats::wakeups` and traced.
    fn scan(&self, wake_up: bool) -> Next {
        let mut buffer = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        self.scan_locked(&mut buffer, wake_up)
    }

    fn scan_locked(&self, buffer: &mut Vec<Waker>, wake_up: bool) -> Next {
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
            let advanced = shard.advance(now_tick, now_ns, buffer, &inner.wake_panics);
            fired += advanced.fired;
            match advanced.next {
                Some(tick) => next = Some(next.map_or(tick, |n| n.min(tick))),
                None => pending += advanced.pending,
            }
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

/// The driver's waker for its tokio sleep: woken by tokio's time driver, it
/// processes the wheel on the spot (see the module docs).
struct Hook(Arc<Driver>);

impl Wake for Hook {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let driver = &self.0;
        if !driver.inner.shared.is_shutdown() {
            // If the task is scanning right now, it is about to re-arm and
            // the wake below makes it scan once more (as a wake-up).
            match driver.scan.try_lock() {
                Ok(mut buffer) => {
                    driver.scan_locked(&mut buffer, true);
                }
                Err(_) => driver.missed.store(true, Ordering::SeqCst),
            }
        }
        driver.doorbell.ring();
    }
}

/// The driver task for `inner`.
///
/// The shutdown guard is made here, before the task exists, so that a task
/// dropped before its first poll (its runtime shut down first, or was already
/// gone when the timer was built) still shuts the timer down.
pub(crate) fn run(inner: Arc<Inner>) -> impl Future<Output = ()> + Send + 'static {
    let guard = ShutDownOnExit(inner);
    async move {
        drive(&guard.0).await;
        drop(guard);
    }
}

/// How the driver's tokio sleep is armed for a tick boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Armed {
    boundary: Instant,
    /// Armed a millisecond early (see the module docs).
    early: bool,
}

async fn drive(inner: &Arc<Inner>) {
    let driver = Arc::new(Driver {
        inner: inner.clone(),
        scan: Mutex::new(Vec::with_capacity(WAKE_BATCH)),
        doorbell: Doorbell::new(),
        missed: AtomicBool::new(false),
    });
    let hook = Waker::from(Arc::new(Hook(driver.clone())));
    let shared = &inner.shared;
    // Only a current-thread runtime's clock can be paused, and only there is
    // arming early exact (see the module docs); elsewhere it would cost a
    // second wake-up per busy tick for no gain.
    let arm_early = inner.runtime.runtime_flavor() == RuntimeFlavor::CurrentThread;
    let mut sleep: Option<Pin<Box<tokio::time::Sleep>>> = None;
    let mut armed: Option<Armed> = None;
    // The boundary whose early arm has fired already.
    let mut early_spent: Option<Instant> = None;
    // Whether this pass follows the tokio sleep firing (not a notice).
    let mut timer_fired = false;
    // Whether this pass is a wake-up of its own (not the start, nor the
    // re-arm after the hook's pass).
    let mut wake_up = false;
    debug!("driver started", shards = inner.shards.len() as u64);
    loop {
        if shared.is_shutdown() {
            debug!("driver stopping: the timer was shut down");
            return;
        }
        let counted = wake_up || driver.missed.swap(false, Ordering::SeqCst);
        let wake_at = match driver.scan(counted) {
            Next::Tick(tick) => shared.clock.tick_instant(tick),
            Next::Nothing { pending: 0 } if shared.is_orphaned() => {
                if inner.no_sleeps_alive() {
                    debug!("driver stopping: no timer handle or sleep is left");
                    return;
                }
                Some(shared.now() + ORPHAN_RECHECK)
            }
            Next::Nothing { .. } => None,
        };
        let Some(boundary) = wake_at else {
            // Nothing to wait for: hold no tokio timer (a paused clock's
            // auto-advance never stops for this driver) and park.
            sleep = None;
            armed = None;
            shared.notified().await;
            (timer_fired, wake_up) = (false, true);
            continue;
        };
        // Early at most once per boundary, then exactly until the boundary
        // changes (why the loop then ends: the module docs).
        if let (
            true,
            Some(Armed {
                boundary,
                early: true,
            }),
        ) = (timer_fired, armed)
        {
            early_spent = Some(boundary);
        }
        let early = arm_early && early_spent != Some(boundary);
        let at = if early {
            boundary.checked_sub(TOKIO_ROUNDING).unwrap_or(boundary)
        } else {
            boundary
        };
        armed = Some(Armed { boundary, early });
        // A ring still unseen belongs to the sleep being replaced.
        driver.doorbell.clear();
        let sleep = match &mut sleep {
            Some(sleep) => {
                sleep.as_mut().reset(at);
                sleep
            }
            None => sleep.insert(Box::pin(tokio::time::sleep_until(at))),
        };
        // Polled with the hook, outside the task's budget: tokio's budget
        // must never keep the driver's own timer from registering.
        let due = {
            let mut hook_cx = Context::from_waker(&hook);
            let mut unbudgeted = tokio::task::coop::unconstrained(sleep.as_mut());
            Pin::new(&mut unbudgeted).poll(&mut hook_cx).is_ready()
        };
        if due {
            (timer_fired, wake_up) = (true, false); // already due: scan again
            continue;
        }
        // A wake-up by the tokio sleep was counted by the hook's pass.
        timer_fired = tokio::select! {
            biased;
            () = shared.notified() => false,
            () = poll_fn(|cx| driver.doorbell.poll_rung(cx)) => true,
        };
        wake_up = !timer_fired;
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
