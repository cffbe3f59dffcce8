//! The driver: what advances every shard's wheel, who runs it, and the
//! backstop that keeps it going whatever tokio does with its waker.
//!
//! # Every mechanism, in one list
//!
//! 1. Each shard's `due` (`shard.rs`): the earliest tick it needs
//!    processed, lowered by registrations, set by advances. An entry
//!    registered since the last pass waits unfiled in its shard's fresh
//!    list (`wheel/mod.rs`); `due` covers it all the same, and the pass's
//!    advance files it first.
//! 2. The target and the kick (`shared.rs`): a registration earlier than
//!    the target lowers it and asks for an arm for it.
//! 3. The requests (`requests.rs`): arm, scan, retire and stop, raised by
//!    the three parties below and run under one pass lock by whoever holds
//!    it.
//! 4. The alarm (`alarm.rs`): the driver's one tokio sleep, armed for the
//!    next busy boundary (a millisecond early first on current-thread
//!    runtimes, a millisecond late once if tokio's mark is ahead of the
//!    clock), or for the soonest instant tokio fires for when a scan is
//!    left to the hook.
//! 5. The backstop (`backstop.rs`): the task's own tokio sleep, a slack
//!    after the earliest due boundary, no sooner than a period that backs
//!    off to 16 slacks while the hook works (its own looks then wake the
//!    task once per 16 slacks at most); only the task moves it. Its tick
//!    is published for registrations.
//! 6. The notice (`notice.rs`): the bits a party sets to wake the task
//!    (a scan left to it, a backstop to move, a stop).
//! 7. [`PASS_ROUNDS`]: the most scans one pass makes.
//! 8. The orphan recheck (`backstop::ORPHAN_RECHECK`): while no handle
//!    is left and only sleeps keep the driver, a look a millisecond after
//!    the task was told something, backing off to once a second.
//!
//! # Three parties, one pass at a time
//!
//! A *pass* processes every tick due by now on every shard, wakes the
//! tasks of the timers it fires (outside the shard locks), publishes the
//! next busy tick as the driver's target, and arms the driver's one tokio
//! sleep (its [`Alarm`]) for that tick's boundary. Three parties ask for
//! work, through [`Requests`] (one pass lock that nobody waits on: a
//! request made while another party runs is run by that party before it
//! lets go):
//!
//! - the **hook**: the alarm's waker. When tokio's time driver fires the
//!   alarm, the hook runs a pass right there, inside tokio's timer
//!   processing, so the wheel moves in the same processing that fires
//!   tokio's own sleeps, whether or not the driver task gets a turn (on a
//!   saturated runtime tokio still processes timers every few dozen task
//!   polls and whenever a worker parks). After `tokio::time::advance(d)`
//!   every wheel sleep due by then has been woken, as every tokio sleep has.
//! - a **registration** earlier than the driver's target (the `kick`, see
//!   `shared.rs`): it re-arms the alarm for the target, now its tick or
//!   earlier, on the caller's thread, and does nothing more. It never
//!   scans or wakes another task:
//!   a scan it finds asked for (the hook's, raised while it held the lock),
//!   or a tick that turns out due already (a sleep first polled after its
//!   deadline), is left raised, and the alarm armed for the first
//!   millisecond tokio has not processed, so the hook runs it at tokio's
//!   next timer processing, whether or not the driver task gets a turn on
//!   a saturated runtime (only if tokio will not take that arm is it left
//!   to the driver task, through its
//!   [`Notice`](crate::engine::notice::Notice)). So a user's `poll` does a
//!   bounded amount of work: an atomic or two, and at most a few polls of
//!   the alarm's tokio sleep.
//! - the **driver task**: it runs a pass when it starts and when told (a
//!   shutdown, the last handle gone, a scan left to it), and keeps the
//!   backstop. It never waits on a lock another thread holds for a pass:
//!   it reads what passes decided from atomics.
//!
//! A pass is bounded too: at most [`PASS_ROUNDS`] scans, each for ticks
//! that came due while the last one ran; more is left to the task.
//!
//! # The next wake-up
//!
//! Four values say when the driver must next act, each a bound on the one
//! before:
//!
//! 1. `Shard::due`, per shard: the earliest tick that shard needs
//!    processed, lowered by registrations and set by advances under the
//!    shard's lock. It is the truth; everything below is derived from it.
//!    (A cancel leaves it as it is: it may name a tick whose entries are
//!    gone, and a pass there finds nothing to fire.)
//! 2. `Shared::target`: the one copy of the earliest tick the driver wakes
//!    for: the earliest `due` the last scan saw, or lower (a registration
//!    earlier than it lowers it, then kicks; the scan's own `end_scan`
//!    keeps such a registration's tick). `u64::MAX` from the start of a
//!    scan, so that a registration racing the scan always kicks. A kick
//!    only raises the arm request (`requests.rs`): whoever runs it arms for
//!    the target as it reads it then.
//! 3. The alarm's boundary: the target's boundary once every request has
//!    run (asserted in debug builds as each pass arms it), or the soonest
//!    instant tokio fires for once a registration has left a due scan to
//!    the hook. An alarm that has fired wakes nobody, whatever instant it
//!    was armed for (`Alarm::wakes_by`): a kick re-arms it.
//! 4. `Shared::backstop`: the tick the task's backstop covers, at or before
//!    every `due`, or the task has been told to move it.
//!
//! # The backstop
//!
//! Nothing above relies on the task, and nothing above survives tokio not
//! calling the hook back (a lost wake-up, a waker queued and never run, a
//! registration thread descheduled while it holds the pass lock). So the
//! task keeps a tokio sleep of its own, the [`Backstop`], for the boundary
//! of the earliest `due` plus [`backstop_slack`](super::backstop::backstop_slack) (two ticks, at least
//! 2 ms). When it fires and that tick is still due, the hook has failed:
//! the task runs the pass itself (counted in `Stats::backstop_passes`).
//! Only the task moves it: while the hook keeps the wheel moving, the
//! backstop backs off to one look per `backstop::WATCHDOG_MAX` slacks
//! (32 ms at the default tick), and falls back to the slack once a look
//! finds a tick late. When nothing is pending there is no backstop: an idle
//! timer costs no wake-ups. A registration earlier than the backstop's tick
//! tells the task, which moves the backstop (see the backstop handshake in
//! `shared.rs`).
//!
//! So a due sleep completes at its tick boundary when tokio calls back as
//! it does today, and by its boundary plus the slack if it never does.
//! Whatever else the backstop has to catch (tokio stopping after it called
//! back, a registration descheduled before its kick, a pass that panicked
//! twice) it catches by the boundary plus `backstop::WATCHDOG_MAX` slacks
//! the first time, and plus the slack while it keeps finding ticks late.
//!
//! # A pass that panics
//!
//! The driver runs no user code but `Waker::wake` and, with the `tracing`
//! feature, the subscriber's event callbacks; a waker or a subscriber that
//! panics is contained where it is called (`shard.rs`, `trace.rs`). A pass
//! that panics all the same (a bug) lets the pass lock go as it unwinds,
//! and the party that ran it catches the panic and runs the pass again. If
//! that panics too, the scan stays raised: the hook or a registration rings
//! the task, which runs it at once; the task's own pass is left to its
//! backstop, which finds the tick late (a pass that always panics then
//! costs one try per slack once the backstop's period is back at the
//! slack, never a loop; see `requests.rs`). Counted in
//! `Stats::pass_panics`.
//!
//! # Ending
//!
//! With no `Timer` handle left, a pass retires the driver once nothing is
//! registered and no sleep is alive (counted over the shards, not read off
//! their `due`, which can name a timer cancelled since). A registered entry
//! taken out then (a sleep dropped, or reset or polled past its deadline)
//! rings the task (a dropping sleep may still hold its shard as the pass
//! looks: the look a millisecond later then retires it); a sleep that
//! registered nothing says nothing when dropped, so while only sleeps keep
//! the driver, the backstop looks again, a millisecond after the task was
//! last told something, backing off to once every `backstop::ORPHAN_RECHECK`
//! (a `debug` event says what keeps it). When the task ends for any
//! reason, including the runtime dropping it at shutdown, a guard retires
//! the alarm and another shuts the timer down, so that every waiting task
//! is woken instead of waiting forever.

use std::future::{poll_fn, Future};
#[cfg(test)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Poll, Wake, Waker};

use crate::engine::alarm::{Alarm, Arming};
use crate::engine::backstop::Backstop;
use crate::engine::notice::Reasons;
use crate::engine::requests::{Answer, Outcome, Party, Requests, Stop, Work};
use crate::engine::shard::WAKE_BATCH;
use crate::engine::shared::Kick;
use crate::engine::state::Inner;
use crate::engine::trace::{debug, trace};

/// At most this many scans per pass. Each scan after the first processes
/// at least one tick (it runs only once the clock has reached the next
/// busy boundary: `Arming::Due`), so a pass ends when it has caught up;
/// the cap only bounds a pass that ticks keep outrunning (a pass waking
/// hundreds of thousands of tasks per tick), whose rest the driver task
/// runs after the woken tasks had a turn. Lower caps cost lateness: with 8,
/// W6's p99 (1M timers) nearly doubled.
const PASS_ROUNDS: usize = 64;

/// When the task ends, however it ends (dropped before its first poll
/// too): retires the alarm (see `alarm.rs`) by a request, which the party
/// running passes now (if any) carries out before it lets go, so the task
/// never waits for it; then shuts the timer down.
struct OnExit(Arc<Driver>);

impl Drop for OnExit {
    fn drop(&mut self) {
        let answer = self.0.requests.retire(&*self.0);
        let _ = self.0.answered(Party::Task, answer);
        self.0.inner.shut_down();
        debug!("driver stopped");
    }
}

/// What one pass needs, behind the lock that keeps one pass at a time.
struct PassState {
    /// The wakers a scan collects, woken outside the shard locks.
    buffer: Vec<Waker>,
    alarm: Alarm,
}

/// What the driver task and the hook share.
struct Driver {
    inner: Arc<Inner>,
    /// The parties' requests, and the state a pass works on.
    requests: Requests<PassState>,
    /// Test-only: the hook does nothing, as if tokio never called it back.
    #[cfg(test)]
    hook_suppressed: AtomicBool,
    /// Test-only: this many passes to come panic after their scan.
    #[cfg(test)]
    panic_in_pass: std::sync::atomic::AtomicU32,
    /// Test-only: the task's wait stays pending, as for a task that never
    /// gets its turn (a ring still wakes it; it acts once this is cleared).
    #[cfg(test)]
    task_stalled: AtomicBool,
    /// Test-only: how often the task's wait has been polled (its start, and
    /// every wake-up).
    #[cfg(test)]
    task_wakes: std::sync::atomic::AtomicU64,
}

impl Work<PassState> for Driver {
    /// Scans, arms the alarm for the next busy tick, and scans again while
    /// that tick came due meanwhile, up to [`PASS_ROUNDS`] times.
    ///
    /// `wake_up` says whether this pass is a driver wake-up (the alarm
    /// fired, or a notice came), rather than the task starting: only
    /// wake-ups, and scans that fire timers, are counted in
    /// `Stats::wakeups` and traced.
    fn pass(&self, state: &mut PassState, mut wake_up: bool) -> Outcome {
        let inner = &*self.inner;
        let shared = &inner.shared;
        for _ in 0..PASS_ROUNDS {
            if shared.is_shutdown() {
                state.alarm.disarm();
                return Outcome::Stop(Stop::Off);
            }
            // The tick to wake for (`u64::MAX`: nothing can come due).
            let target = self.scan(&mut state.buffer, wake_up);
            #[cfg(test)]
            if self
                .panic_in_pass
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                panic!("a pass panics (test)");
            }
            // With no `Timer` handle left, the driver retires once nothing
            // is registered either and no sleep is alive. A shard's `due` can
            // stay at the tick of an entry cancelled since (a far timeout
            // dropped), so a target to wake for says nothing: the shards are
            // counted.
            if shared.is_orphaned() {
                match inner.pending() {
                    0 if inner.sleeps() == 0 => {
                        state.alarm.disarm();
                        return Outcome::Stop(Stop::Retire);
                    }
                    // The task's backstop looks again (see
                    // `backstop::ORPHAN_RECHECK`). Meanwhile the pass goes on
                    // as any other: a shard may name the tick of an entry
                    // cancelled since, and the target (which a sleep still
                    // alive may register against) has been set to it.
                    0 => debug!(
                        "driver cannot retire yet: no timer handle is left, but sleeps are alive",
                        live = inner.live() as u64
                    ),
                    // Parked with only timers that never fire: say what
                    // keeps it (a pass with ticks to process is just working).
                    pending if target == u64::MAX => debug!(
                        "driver cannot retire: no timer handle is left, but timers that never fire are registered",
                        pending = pending as u64
                    ),
                    _ => {}
                }
            }
            let Some(boundary) = shared.clock.tick_instant(target) else {
                state.alarm.disarm();
                return Outcome::Armed;
            };
            match state.alarm.arm(boundary, || shared.now()) {
                Arming::Waiting => {
                    // Armed for it (or left to the backstop); it may have
                    // fired since (another worker's timer processing), its
                    // hook's request then left to this pass lock.
                    debug_assert!(state.alarm.armed_by(boundary), "armed for {boundary:?}");
                    return Outcome::Armed;
                }
                Arming::Due => wake_up = false, // came due meanwhile: again
                Arming::Off => return Outcome::Stop(Stop::Off),
            }
        }
        Outcome::LeftToTask
    }

    /// Moves the alarm to the target's boundary if it would wake later,
    /// without a scan; if that tick is due already, a whole pass, or, for a
    /// registration, the hook kept armed for it (or a pass left to the
    /// task).
    fn arm(&self, state: &mut PassState, party: Party) -> Outcome {
        let shared = &self.inner.shared;
        if shared.is_shutdown() {
            state.alarm.disarm();
            return Outcome::Stop(Stop::Off);
        }
        // Read under the pass lock, which a scan holds too: never the
        // `u64::MAX` a scan's start stores.
        let tick = shared.target();
        // No clock reaches it (nothing to arm), or the alarm wakes the
        // driver by then already.
        let boundary = shared.clock.tick_instant(tick);
        let Some(boundary) = boundary.filter(|&at| !state.alarm.wakes_by(at)) else {
            return Outcome::Armed;
        };
        trace!("driver re-armed", next_tick = tick);
        match state.alarm.arm(boundary, || shared.now()) {
            Arming::Waiting => Outcome::Armed,
            Arming::Due if party.may_scan() => self.pass(state, true),
            Arming::Due => self.keep_hook(state),
            Arming::Off => Outcome::Stop(Stop::Off),
        }
    }

    /// A scan is due that the party asking may not run (a registration):
    /// arms the alarm for the soonest instant tokio fires for, so the
    /// hook's pass runs it at tokio's next timer processing (see
    /// `requests.rs`); or, if tokio will not take it, leaves it to the task.
    fn keep_hook(&self, state: &mut PassState) -> Outcome {
        let shared = &self.inner.shared;
        if shared.is_shutdown() {
            state.alarm.disarm();
            return Outcome::Stop(Stop::Off);
        }
        match state.alarm.arm_soon(|| shared.now()) {
            Arming::Waiting => Outcome::LeftToHook,
            Arming::Due => Outcome::LeftToTask,
            Arming::Off => Outcome::Stop(Stop::Off),
        }
    }

    /// Disarms the alarm for good: the stop the requests set with it keeps
    /// every later pass from arming it again (see `alarm.rs`).
    fn retire(&self, state: &mut PassState) {
        state.alarm.disarm();
    }
}

impl Driver {
    /// Asks for a whole pass, run here and now, or by the party running
    /// requests now (see `requests.rs`), and tells the task if the answer
    /// says so.
    fn request_pass(&self, party: Party, wake_up: bool) -> Answer {
        self.answered(party, self.requests.pass(party, self, wake_up))
    }

    /// Counts the passes that panicked, and rings the task if `answer`
    /// says so.
    fn answered(&self, party: Party, answer: Answer) -> Answer {
        if answer.panics > 0 {
            self.inner
                .pass_panics
                .fetch_add(u64::from(answer.panics), Ordering::Relaxed);
        }
        if answer.tell(party) {
            self.inner.shared.nudge();
        }
        answer
    }

    /// Processes every tick due by now on every shard; returns the tick the
    /// driver wakes for next (`u64::MAX`: nothing can come due).
    fn scan(&self, buffer: &mut Vec<Waker>, wake_up: bool) -> u64 {
        let inner = &*self.inner;
        let shared = &inner.shared;
        shared.look_for_pause();
        shared.begin_scan();
        // The clock is read after `begin_scan`: a registration that missed
        // this reading sees the cleared target and kicks.
        let (now_ns, now_tick) = shared.clock.now_tick(shared.pass_now());
        let mut next = u64::MAX;
        let mut fired = 0u64;
        for shard in inner.shards.iter() {
            // A shard with nothing due by now is not locked (see
            // `Shard::due`): a pass costs in proportion to the busy shards.
            let mut due = shard.due();
            if due <= now_tick {
                let (fired_here, next_here) =
                    shard.advance(now_tick, now_ns, buffer, &inner.wake_panics);
                fired += fired_here;
                due = next_here;
            }
            next = next.min(due);
        }
        // The tick to wake for: the earliest found, or a racing
        // registration's (see the target handshake in `shared.rs`).
        let target = shared.end_scan(next);
        let before = inner.clock_tick.fetch_max(now_tick, Ordering::Relaxed);
        if wake_up || fired > 0 {
            inner.wakeups.fetch_add(1, Ordering::Relaxed);
            trace!(
                "driver wake-up",
                tick = now_tick,
                ticks = now_tick.saturating_sub(before),
                fired = fired,
                next_tick = target,
            );
        }
        target
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
    // Only `wake`: tokio fires a timer by waking its waker by value, and a
    // `wake_by_ref` (std's default) clones the `Arc` and calls this.
    fn wake(self: Arc<Self>) {
        if let Some(driver) = self.0.upgrade() {
            #[cfg(test)]
            if driver.hook_suppressed.load(Ordering::SeqCst) {
                return;
            }
            let _ = driver.request_pass(Party::Hook, true);
        }
    }
}

/// The driver task for `inner`.
///
/// The exit guard is made here, before the task exists, so that a task
/// dropped before its first poll (its runtime shut down first, or was already
/// gone when the timer was built) still shuts the timer down.
pub(crate) fn run(inner: Arc<Inner>) -> impl Future<Output = ()> + Send + 'static {
    // Made now, not when the task is first polled: registrations reach the
    // driver through its kick from now on, however long the task waits.
    let driver = Arc::new_cyclic(|driver| Driver {
        requests: Requests::new(PassState {
            buffer: Vec::with_capacity(WAKE_BATCH),
            alarm: Alarm::new(inner.runtime.clone(), Arc::new(Hook(driver.clone())).into()),
        }),
        inner,
        #[cfg(test)]
        hook_suppressed: AtomicBool::new(false),
        #[cfg(test)]
        panic_in_pass: std::sync::atomic::AtomicU32::new(0),
        #[cfg(test)]
        task_stalled: AtomicBool::new(false),
        #[cfg(test)]
        task_wakes: std::sync::atomic::AtomicU64::new(0),
    });
    let exit = OnExit(driver);
    #[cfg(all(test, not(tickwheel_loom)))]
    tests::remember(&exit.0.inner, &exit.0);
    let weak = Arc::downgrade(&exit.0);
    // A registration's kick, once it lowered the target: asks for the
    // alarm to be armed for the target's boundary. Locks no shard and scans
    // nothing (see the module docs).
    let kick = move || {
        if let Some(driver) = weak.upgrade() {
            let _ = driver.answered(Party::Registration, driver.requests.arm(&*driver));
        }
    };
    exit.0.inner.shared.install_kick(Kick(Box::new(kick)));
    async move { drive(&exit.0).await }
}

/// The task: a pass when it starts and whenever told to, the backstop in
/// between (see the module docs).
async fn drive(driver: &Driver) {
    let inner = &*driver.inner;
    let shared = &inner.shared;
    let mut backstop = Backstop::new(inner.config.tick_ns);
    debug!("driver started", shards = inner.shards.len() as u64);
    // The pass to run: whether it is a wake-up (the first is the task's
    // start), and whether it is the backstop's.
    let mut pass = Some((false, false));
    loop {
        if let Some((wake_up, backstop_pass)) = pass.take() {
            let answer = driver.request_pass(Party::Task, wake_up);
            if backstop_pass {
                // A pass the backstop ran, or found another party running
                // (it runs this request too before it lets go).
                let count = if answer.ran_here {
                    &inner.backstop_passes
                } else {
                    &inner.backstop_lock_held
                };
                count.fetch_add(1, Ordering::Relaxed);
            }
            if answer.left_here && driver.requests.stopped() == Stop::Running {
                // This task's pass ran out of rounds (ticks kept coming due
                // while it woke tasks): the rest after the tasks it woke had
                // a turn. Only then: a scan raised while another party runs
                // its pass is that party's, and looping on it here would
                // spin for as long as that pass takes.
                tokio::task::yield_now().await;
                pass = Some((true, false));
                continue;
            }
        }
        if driver.requests.stopped() != Stop::Running {
            break;
        }
        backstop.cover(inner);
        let woke = poll_fn(|cx| {
            #[cfg(test)]
            driver.task_wakes.fetch_add(1, Ordering::Relaxed);
            #[cfg(test)]
            if driver.task_stalled.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
            if let Poll::Ready(why) = shared.notice().poll_rung(cx) {
                return Poll::Ready(Some(why));
            }
            backstop.poll(cx).map(|()| None)
        })
        .await;
        pass = match woke {
            Some(why) if why.contains(Reasons::PASS) => {
                backstop.told();
                Some((true, false))
            }
            Some(_) => None, // a registration earlier than the backstop: move it
            // No pass if the hook kept the wheel moving: cover its new
            // earliest tick, a longer period on.
            None => backstop.fired(inner).map(|registered| {
                if registered {
                    debug!(
                        "driver backstop: tokio did not call the driver back in time",
                        due_tick = inner.earliest_due()
                    );
                }
                // With nothing registered, the late tick is that of an
                // entry cancelled since: the pass clears it, and is not
                // counted (nothing was late). With no handle left and no
                // tick late, the look at whether the driver may retire
                // (see `backstop::ORPHAN_RECHECK`).
                (true, registered)
            }),
        };
    }
    match driver.requests.stopped() {
        Stop::Retire => debug!("driver stopping: no timer handle or sleep is left"),
        _ => debug!("driver stopping: the timer was shut down"),
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex, Weak};
    use std::time::Duration;

    use std::future::Future;

    use tokio::time::Instant;

    use super::Driver;
    use crate::engine::backstop::{backstop_slack, Backstop, WATCHDOG_MAX};
    use crate::engine::state::Inner;
    use crate::engine::wheel::watchdog::block_on_paused;
    use crate::Timer;

    /// Every driver made in this test binary, by its timer's state, so a
    /// test can reach its timer's driver.
    static DRIVERS: Mutex<Vec<(Weak<Inner>, Weak<Driver>)>> = Mutex::new(Vec::new());

    pub(super) fn remember(inner: &Arc<Inner>, driver: &Arc<Driver>) {
        let mut drivers = DRIVERS.lock().unwrap();
        drivers.retain(|(inner, _)| inner.strong_count() > 0);
        drivers.push((Arc::downgrade(inner), Arc::downgrade(driver)));
    }

    fn driver_of(timer: &Timer) -> Arc<Driver> {
        DRIVERS
            .lock()
            .unwrap()
            .iter()
            .find(|(inner, _)| std::ptr::eq(inner.as_ptr(), Arc::as_ptr(timer.inner())))
            .and_then(|(_, driver)| driver.upgrade())
            .expect("the timer's driver is alive")
    }

    /// As if tokio never called the driver's hook back.
    fn suppress_hook(timer: &Timer) {
        driver_of(timer)
            .hook_suppressed
            .store(true, Ordering::SeqCst);
    }

    /// The instant a sleep of `d` on `timer` completes, awaited in a task
    /// of its own (the paused clock moves on by itself meanwhile).
    async fn completes_at(timer: &Timer, d: Duration) -> Duration {
        let start = Instant::now();
        let sleep = timer.sleep(d);
        tokio::spawn(async move {
            sleep.await;
            Instant::now() - start
        })
        .await
        .unwrap()
    }

    /// With the hook never called (tokio losing the driver's waker), a due
    /// sleep still completes, exactly at its tick boundary plus the
    /// backstop's slack (two ticks, at least 2 ms), and not a moment
    /// before: on the paused clock, for ticks below and above 1 ms of
    /// slack.
    #[test]
    fn a_due_sleep_fires_by_the_backstop_when_the_hook_is_never_called() {
        block_on_paused(async {
            for (tick_ms, sleep_ms, expected_ms) in [
                (1, 10, 12),    // boundary 10 ms, slack 2 ms
                (5, 12, 25),    // boundary 15 ms, slack 10 ms
                (1, 1, 3),      // boundary 1 ms
                (10, 100, 120), // on a boundary: boundary 100 ms, slack 20 ms
            ] {
                let timer = Timer::builder()
                    .tick(Duration::from_millis(tick_ms))
                    .build()
                    .unwrap();
                suppress_hook(&timer);
                let took = completes_at(&timer, Duration::from_millis(sleep_ms)).await;
                assert_eq!(
                    took,
                    Duration::from_millis(expected_ms),
                    "tick {tick_ms} ms, sleep {sleep_ms} ms"
                );
                assert_eq!(timer.stats().backstop_passes, 1, "tick {tick_ms} ms");
                assert_eq!(timer.stats().fired, 1);
            }
        });
    }

    /// The backstop keeps a busy wheel going with the hook gone: sleeps
    /// registered one after another, while others are pending and after
    /// the wheel emptied, each complete by their boundary plus the slack.
    #[test]
    fn the_backstop_keeps_firing_sleeps_registered_while_others_wait() {
        block_on_paused(async {
            let timer = Timer::new();
            suppress_hook(&timer);
            let start = Instant::now();
            let mut sleepers = tokio::task::JoinSet::new();
            for ms in [50u64, 7, 30, 3, 200] {
                let sleep = timer.sleep(Duration::from_millis(ms));
                sleepers.spawn(async move {
                    sleep.await;
                    (ms, Instant::now() - start)
                });
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let mut seen = 0;
            while let Some(done) = sleepers.join_next().await {
                let (ms, took) = done.unwrap();
                let slack = Duration::from_millis(2);
                assert!(
                    took >= Duration::from_millis(ms),
                    "{ms} ms sleep after {took:?}"
                );
                assert!(
                    took <= Duration::from_millis(ms) + Duration::from_millis(5) + slack,
                    "{ms} ms sleep after {took:?}"
                );
                seen += 1;
            }
            assert_eq!(seen, 5);
            assert!(timer.stats().backstop_passes >= 1);
            // Idle again: the backstop holds no sleep, the driver no wake-up.
            let before = timer.stats();
            tokio::time::sleep(Duration::from_secs(600)).await;
            let after = timer.stats();
            assert_eq!(after.wakeups, before.wakeups);
            assert_eq!(after.backstop_passes, before.backstop_passes);
        });
    }

    /// A backstop that finds the wheel behind while another party holds the
    /// pass lock (here held by the test, as a pass stuck on another thread
    /// would) counts that in `Stats::backstop_lock_held`, not as a pass it
    /// ran; once the lock is free its next look runs the pass, counted in
    /// `backstop_passes`, and the sleep completes a slack after.
    #[test]
    fn a_backstop_that_finds_the_pass_lock_held_counts_it_apart() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            suppress_hook(&timer);
            let mut sleepers = spawn_sleeps(&timer, &[10]);
            tokio::task::yield_now().await;
            let held = driver.requests.hold_lock();
            tokio::time::sleep(Duration::from_millis(13)).await;
            let stats = timer.stats();
            assert_eq!((stats.backstop_lock_held, stats.backstop_passes), (1, 0));
            assert_eq!(stats.fired, 0);
            drop(held);
            let (_, took) = sleepers.join_next().await.unwrap().unwrap();
            assert_eq!(
                took,
                Duration::from_millis(14),
                "a slack after the first look"
            );
            let stats = timer.stats();
            assert_eq!((stats.backstop_lock_held, stats.backstop_passes), (1, 1));
        });
    }

    /// With tokio never calling the hook back, a sleep registered and then
    /// dropped before its tick leaves its shard naming that tick with
    /// nothing registered. The backstop's pass clears it, uncounted (nothing
    /// was late), and the idle timer's task then sleeps: a backstop that
    /// ran no pass without a registered timer re-armed a slack on, and woke
    /// the task about once a millisecond for good.
    #[test]
    fn a_cancelled_tick_the_hook_never_processed_leaves_the_task_asleep() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            suppress_hook(&timer);
            let mut sleep = tokio_test::task::spawn(timer.sleep(Duration::from_millis(10)));
            tokio_test::assert_pending!(sleep.poll());
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(sleep);
            tokio::time::sleep(Duration::from_millis(20)).await;
            let before = driver.task_wakes.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_secs(1)).await;
            let wakes = driver.task_wakes.load(Ordering::Relaxed) - before;
            assert!(
                wakes < 5,
                "an idle timer woke its task {wakes} times in 1 s"
            );
            assert_eq!(timer.stats().backstop_passes, 0, "nothing was late");
        });
    }

    /// With no handle left, a pass that finds nothing registered but a
    /// sleep alive goes on as any other: here the shards name the tick of a
    /// 20 ms sleep cancelled since, the target is set to it, and a 21 ms
    /// sleep made before the handle went, polled only now, registers
    /// against that target without a kick. It completes exactly at 21 ms,
    /// not by the backstop: the alarm stayed armed for the named tick.
    #[test]
    fn an_orphaned_pass_keeps_the_alarm_for_the_tick_the_target_names() {
        block_on_paused(async {
            let start = Instant::now();
            let timer = Timer::new();
            tokio::task::yield_now().await;
            let mut cancelled = tokio_test::task::spawn(timer.sleep(Duration::from_millis(20)));
            tokio_test::assert_pending!(cancelled.poll());
            let later = timer.sleep(Duration::from_millis(21));
            let inner = timer.inner().clone();
            drop(cancelled);
            drop(timer);
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            let took = tokio::spawn(async move {
                later.await;
                Instant::now() - start
            })
            .await
            .unwrap();
            assert_eq!(took, Duration::from_millis(21));
            assert_eq!(inner.backstop_passes.load(Ordering::Relaxed), 0);
        });
    }

    /// The same on a real clock and two workers, with a generous bound: no
    /// sleep early, none lost, each within its deadline plus tick plus slack
    /// plus 250 ms of scheduling noise.
    #[test]
    fn on_a_real_clock_the_backstop_fires_every_sleep_without_the_hook() {
        let _watchdog = crate::engine::wheel::watchdog::Watchdog::start();
        {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let timer = Timer::new();
                suppress_hook(&timer);
                let mut sleepers = tokio::task::JoinSet::new();
                for i in 0..100u64 {
                    let d = Duration::from_micros(3_000 + i * 257);
                    let start = std::time::Instant::now();
                    let sleep = timer.sleep(d);
                    sleepers.spawn(async move {
                        sleep.await;
                        (d, start.elapsed())
                    });
                }
                while let Some(done) = sleepers.join_next().await {
                    let (d, took) = done.unwrap();
                    assert!(took >= d, "{d:?} sleep after {took:?}");
                    assert!(
                        took <= d + Duration::from_millis(254),
                        "{d:?} sleep after {took:?}"
                    );
                }
                assert!(timer.stats().backstop_passes >= 1);
            });
        }
    }

    /// Sleeps of `ms` registered on `timer` one per millisecond, `count` of
    /// them, each awaited in a task of its own that returns how late it
    /// completed (paused or real clock).
    async fn trickle(
        timer: &Timer,
        count: u64,
        ms: u64,
        sleepers: &mut tokio::task::JoinSet<(Duration, Duration)>,
    ) {
        for _ in 0..count {
            let d = Duration::from_millis(ms);
            let start = Instant::now();
            let sleep = timer.sleep(d);
            sleepers.spawn(async move {
                sleep.await;
                (d, Instant::now() - start)
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// While the hook keeps the wheel moving, the backstop backs off: a
    /// trickle of sleeps coming due every millisecond for a second wakes
    /// the driver task about once per `WATCHDOG_MAX` slacks (32 ms), where
    /// a backstop that followed the earliest due tick woke it once per
    /// slack or so (about 330 times). Each sleep is exactly on time, none
    /// by the backstop.
    #[test]
    fn while_the_hook_keeps_the_wheel_moving_the_task_wakes_once_a_period() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            let mut sleepers = tokio::task::JoinSet::new();
            trickle(&timer, 100, 5, &mut sleepers).await; // under way
            let (polls, passes) = (
                driver.task_wakes.load(Ordering::Relaxed),
                timer.stats().wakeups,
            );
            trickle(&timer, 1_000, 5, &mut sleepers).await;
            let polls = driver.task_wakes.load(Ordering::Relaxed) - polls;
            let passes = timer.stats().wakeups - passes;
            assert!(passes >= 990, "{passes} passes in 1 s");
            let period = backstop_slack(timer.tick().as_nanos() as u64) * WATCHDOG_MAX;
            assert_eq!(period, Duration::from_millis(32));
            // Each look polls the task's wait twice: the wake-up, and the
            // next wait's start.
            assert!(
                (50..=68).contains(&polls),
                "the task was polled {polls} times in 1 s, with a {period:?} period"
            );
            while let Some(done) = sleepers.join_next().await {
                let (d, took) = done.unwrap();
                assert_eq!(took, d, "a {d:?} sleep");
            }
            assert_eq!(timer.stats().backstop_passes, 0);
            assert_eq!(timer.stats().fired, 1_100);
        });
    }

    /// The hook gone in the middle of a trickle, after it had worked for
    /// 100 ms (long enough for the backstop to back off to its longest
    /// period, 2 + 4 + 8 + 16 ms of looks that found nothing due): no sleep
    /// is early or lost; none is later than the period (32 ms) past its
    /// deadline; and once the backstop's first late look has run, every
    /// sleep due after it completes within the slack (2 ms) of its
    /// deadline, exactly on the paused clock.
    #[test]
    fn once_a_working_hook_is_gone_the_backstop_catches_up_within_a_period() {
        block_on_paused(async {
            let timer = Timer::new();
            let mut sleepers = tokio::task::JoinSet::new();
            trickle(&timer, 100, 5, &mut sleepers).await;
            while let Some(done) = sleepers.join_next().await {
                let (d, took) = done.unwrap();
                assert_eq!(took, d, "the hook works");
            }
            suppress_hook(&timer);
            let mut sleepers = tokio::task::JoinSet::new();
            for _ in 0..60 {
                let deadline = Instant::now() + Duration::from_millis(5);
                let sleep = timer.sleep_until(deadline);
                sleepers.spawn(async move {
                    sleep.await;
                    (deadline, Instant::now())
                });
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let slack = Duration::from_millis(2);
            let period = slack * WATCHDOG_MAX;
            let mut done = Vec::new();
            while let Some(sleeper) = sleepers.join_next().await {
                let (deadline, completed) = sleeper.unwrap();
                assert!(completed >= deadline, "early by {:?}", deadline - completed);
                assert!(
                    completed - deadline <= period,
                    "late by {:?}",
                    completed - deadline
                );
                done.push((deadline, completed));
            }
            done.sort();
            // The first one waited for the backstop's next look, armed a
            // period on while the hook still worked: the back-off's cost,
            // once (here 22 ms, by this test's timing on the paused clock).
            let (first_deadline, first_look) = done[0];
            assert!(first_look - first_deadline > slack, "{done:?}");
            for &(deadline, completed) in &done {
                if deadline > first_look {
                    assert!(
                        completed - deadline <= slack,
                        "due {:?} after the first look, late by {:?}",
                        deadline - first_look,
                        completed - deadline
                    );
                }
            }
            assert!(timer.stats().backstop_passes >= 1);
            assert_eq!(timer.stats().fired, 160);
        });
    }

    /// A look that finds a tick due but not yet a slack late (the hook
    /// gone just before it) neither backs off nor arms past that tick's
    /// boundary plus the period: here the tick's boundary is 10 ms and the
    /// look at 11 ms; with a 32 ms period the next look comes at 42 ms
    /// (arming a period from the look, 43 ms, would leave the tick later
    /// than the bound the docs give), and with the period at the slack it
    /// stays there and looks at 12 ms (doubling it, or a slack from the
    /// look, would put the next look at 13 ms or later).
    #[test]
    fn a_look_that_finds_a_tick_due_arms_by_its_boundary_plus_the_period() {
        block_on_paused(async {
            let start = Instant::now();
            let timer = Timer::new();
            suppress_hook(&timer);
            tokio::task::yield_now().await; // the driver starts, and parks
            let mut sleep = tokio_test::task::spawn(timer.sleep(Duration::from_millis(10)));
            tokio_test::assert_pending!(sleep.poll());
            tokio::time::advance(Duration::from_millis(11)).await;
            assert_eq!(timer.stats().fired, 0, "the hook is silenced");
            let inner = timer.inner();
            let mut backstop = Backstop::backed_off(timer.tick().as_nanos() as u64);
            let period = backstop_slack(timer.tick().as_nanos() as u64) * WATCHDOG_MAX;
            assert_eq!(backstop.fired(inner), None, "due, not yet a slack late");
            backstop.cover(inner);
            let (kept, armed) = backstop.armed();
            assert_eq!(kept, period, "no further back-off");
            assert_eq!(armed, Some(start + Duration::from_millis(10) + period));
            // One at the slack stays there, and looks by the boundary plus
            // the slack, not a slack after this look.
            let mut backstop = Backstop::new(timer.tick().as_nanos() as u64);
            assert_eq!(backstop.fired(inner), None);
            backstop.cover(inner);
            let slack = backstop_slack(timer.tick().as_nanos() as u64);
            assert_eq!(
                backstop.armed(),
                (slack, Some(start + Duration::from_millis(10) + slack))
            );
            // A tick already a slack late (its pass left to a party holding
            // the pass lock): the next look a slack on, never at once.
            driver_of(&timer).task_stalled.store(true, Ordering::SeqCst);
            tokio::time::advance(Duration::from_millis(5)).await;
            assert_eq!(backstop.fired(inner), Some(true));
            backstop.cover(inner);
            assert_eq!(
                backstop.armed(),
                (slack, Some(start + Duration::from_millis(16) + slack))
            );
        });
    }

    /// The same on a real clock, on tokio's usual timer and (built with
    /// `--cfg tokio_unstable`) its alternative one, whose `reset` may not
    /// keep the waker a sleep was polled with: the hook gone in the middle
    /// of a trickle, no sleep completes early or is lost, each within its
    /// deadline plus tick plus slack plus 250 ms of scheduling noise.
    #[test]
    fn on_a_real_clock_the_backstop_still_fires_once_a_working_hook_is_gone() {
        let _watchdog = crate::engine::wheel::watchdog::Watchdog::start();
        #[allow(unused_mut)] // one runtime without tokio_unstable
        let mut runtimes = vec![tokio::runtime::Builder::new_multi_thread()];
        #[cfg(tokio_unstable)]
        runtimes.push({
            let mut alt = tokio::runtime::Builder::new_multi_thread();
            alt.enable_alt_timer();
            alt
        });
        for mut builder in runtimes {
            let rt = builder.worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async {
                let timer = Timer::new();
                let mut sleepers = tokio::task::JoinSet::new();
                trickle(&timer, 30, 3, &mut sleepers).await;
                suppress_hook(&timer);
                trickle(&timer, 30, 3, &mut sleepers).await;
                let mut completed = 0;
                while let Some(done) = sleepers.join_next().await {
                    let (d, took) = done.unwrap();
                    assert!(took >= d, "a {d:?} sleep completed after {took:?}");
                    assert!(
                        took <= d + Duration::from_millis(253),
                        "a {d:?} sleep completed after {took:?}"
                    );
                    completed += 1;
                }
                // Not `Stats::fired`: on a loaded host a sleep first polled
                // after its tick was processed completes without ever
                // being registered.
                assert_eq!(completed, 60);
            });
        }
    }

    /// A waker that records the threads it was woken on.
    #[derive(Default)]
    struct ThreadRecorder(Mutex<Vec<std::thread::ThreadId>>);

    impl std::task::Wake for ThreadRecorder {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.lock().unwrap().push(std::thread::current().id());
        }
    }

    /// A registration that finds a scan asked for (the hook's, raised while
    /// the registration held the pass lock), or finds the tick it re-arms
    /// for due already, runs no scan: it arms the alarm for the next
    /// millisecond, and the hook's pass wakes the hundred due sleeps there,
    /// on the runtime's thread, none on the registering thread.
    #[test]
    fn a_registration_never_wakes_other_tasks_on_its_thread() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            suppress_hook(&timer);
            tokio::task::yield_now().await; // the driver starts, and parks
            let recorder = Arc::new(ThreadRecorder::default());
            let waker = std::task::Waker::from(recorder.clone());
            let mut cx = std::task::Context::from_waker(&waker);
            let mut sleeps: Vec<_> = (0..100)
                .map(|_| Box::pin(timer.sleep(Duration::from_millis(10))))
                .collect();
            for sleep in &mut sleeps {
                assert!(sleep.as_mut().poll(&mut cx).is_pending());
            }
            tokio::time::advance(Duration::from_millis(11)).await;
            assert!(
                recorder.0.lock().unwrap().is_empty(),
                "the hook is silenced: {:?}",
                timer.stats()
            );
            driver.hook_suppressed.store(false, Ordering::SeqCst);
            let registering = {
                let driver = driver.clone();
                std::thread::spawn(move || {
                    // The hook's request, left while a registration ran...
                    driver.requests.raise_scan();
                    // ...and a kick for a target that is due already
                    // (the sleeps' tick).
                    assert!(driver.inner.shared.target() <= 11);
                    // The arm request, as the kick makes it.
                    let arm = driver.requests.arm(&*driver);
                    let _ = driver.answered(super::Party::Registration, arm);
                    std::thread::current().id()
                })
                .join()
                .unwrap()
            };
            assert!(
                recorder.0.lock().unwrap().is_empty(),
                "a registration scanned"
            );
            // The hook, at tokio's next millisecond, on the runtime's thread.
            tokio::time::advance(Duration::from_millis(1)).await;
            let woken = recorder.0.lock().unwrap().clone();
            assert_eq!(woken.len(), 100, "the hook ran the scan left to it");
            assert!(woken.iter().all(|thread| *thread != registering));
            assert_eq!(timer.stats().backstop_passes, 0, "not the backstop's doing");
        });
    }

    /// A registration for a tick tokio has processed and the wheel has not
    /// (a sleep first polled after its deadline, on a running clock, where
    /// a first poll reads no clock) keeps the hook armed: with the driver
    /// task never getting a turn (as on a saturated runtime), the hook
    /// still fires that entry at tokio's next millisecond, and every later
    /// sleep at its own boundary. Before, the alarm was left fired, later
    /// kicks took it for armed, and nothing fired until the task's turn.
    #[test]
    fn a_registration_of_a_processed_tick_keeps_the_hook_armed() {
        block_on_paused(async {
            // The default tick, one off tokio's millisecond grid, and a
            // coarse one.
            for tick in [1_000_000u64, 1_000_003, 10_000_000] {
                let timer = Timer::builder()
                    .tick(Duration::from_nanos(tick))
                    .build()
                    .unwrap();
                let start = Instant::now();
                let driver = driver_of(&timer);
                tokio::task::yield_now().await; // the driver starts, and parks
                driver.task_stalled.store(true, Ordering::SeqCst);
                let at = |ticks: u64| start + Duration::from_nanos(ticks * tick);
                let mut later =
                    tokio_test::task::spawn(timer.sleep(Duration::from_nanos(10 * tick)));
                tokio_test::assert_pending!(later.poll());
                // tokio processes through 5 ticks; the wheel had nothing due.
                tokio::time::advance(at(5) - Instant::now()).await;
                let passed = Arc::new(ThreadRecorder::default());
                let registered = timer
                    .inner()
                    .shard()
                    .register(2 * tick, &std::task::Waker::from(passed.clone()));
                assert!(
                    matches!(
                        registered,
                        crate::engine::wheel::Insert::Registered { tick: 2, .. }
                    ),
                    "{registered:?}"
                );
                tokio::time::advance(Duration::from_millis(1)).await;
                let fired = passed.0.lock().unwrap().len();
                assert_eq!(fired, 1, "tick {tick} ns: the passed entry fired");
                tokio::time::advance(at(10) - Duration::from_nanos(1) - Instant::now()).await;
                assert!(!later.is_woken(), "tick {tick} ns: fired early");
                // By the boundary's millisecond of tokio's, as tokio's own.
                tokio::time::advance(Duration::from_millis(1)).await;
                assert!(
                    later.is_woken(),
                    "tick {tick} ns: not fired at its boundary"
                );
                tokio_test::assert_ready!(later.poll());
                let stats = timer.stats();
                assert_eq!(
                    (stats.backstop_passes, stats.fired),
                    (0, 2),
                    "tick {tick} ns"
                );
                driver.task_stalled.store(false, Ordering::SeqCst);
            }
        });
    }

    /// Sleeps of these milliseconds, each awaited in a task of its own that
    /// returns when it completed (paused clock).
    fn spawn_sleeps(timer: &Timer, ms: &[u64]) -> tokio::task::JoinSet<(u64, Duration)> {
        let start = Instant::now();
        let mut sleepers = tokio::task::JoinSet::new();
        for &ms in ms {
            let sleep = timer.sleep(Duration::from_millis(ms));
            sleepers.spawn(async move {
                sleep.await;
                (ms, Instant::now() - start)
            });
        }
        sleepers
    }

    /// A pass that panics (here after its scan, before it arms the alarm)
    /// is contained, the pass lock let go, and the pass run again at once:
    /// every later sleep completes exactly at its deadline, none by the
    /// backstop; twice in a row, the second panic hands the pass to the
    /// driver task, which runs it before the next deadline. The panics are
    /// counted.
    #[test]
    fn a_pass_that_panics_leaves_every_timer_firing_on_time() {
        block_on_paused(async {
            for panics in [1, 2] {
                let timer = Timer::new();
                let driver = driver_of(&timer);
                let mut sleepers = spawn_sleeps(&timer, &[5, 10, 20, 21, 40]);
                tokio::task::yield_now().await;
                driver.panic_in_pass.store(panics, Ordering::SeqCst);
                while let Some(done) = sleepers.join_next().await {
                    let (ms, took) = done.unwrap();
                    assert_eq!(took, Duration::from_millis(ms), "{panics} panics");
                }
                let stats = timer.stats();
                assert_eq!(stats.pass_panics, u64::from(panics));
                assert_eq!((stats.fired, stats.backstop_passes), (5, 0));
                // The timer goes on taking sleeps and firing them on time.
                let mut again = spawn_sleeps(&timer, &[3, 7]);
                while let Some(done) = again.join_next().await {
                    let (ms, took) = done.unwrap();
                    assert_eq!(took, Duration::from_millis(ms), "{panics} panics");
                }
            }
        });
    }

    /// A pass that always panics (after its scan, so every due sleep is
    /// still fired) neither wedges the timer nor spins: each due sleep
    /// completes by its boundary plus the backstop's slack (2 ms), and the
    /// passes (hook and backstop) number a few per sleep, not thousands.
    #[test]
    fn a_pass_that_always_panics_neither_wedges_nor_spins() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            tokio::task::yield_now().await;
            driver.panic_in_pass.store(u32::MAX, Ordering::SeqCst);
            let mut sleepers = spawn_sleeps(&timer, &[5, 10, 20, 21, 40]);
            while let Some(done) = sleepers.join_next().await {
                let (ms, took) = done.unwrap();
                let d = Duration::from_millis(ms);
                assert!(
                    took >= d && took <= d + Duration::from_millis(2),
                    "{ms} ms: {took:?}"
                );
            }
            let panics = timer.stats().pass_panics;
            assert!((1..=60).contains(&panics), "{panics} panicking passes");
            driver.panic_in_pass.store(0, Ordering::SeqCst);
        });
    }

    /// The hook woken when nothing is due, twice in a row, and from another
    /// thread: no sleep fires early, and each still fires at its boundary
    /// (the alarm is re-armed by each of those passes).
    #[test]
    fn spurious_hook_calls_from_another_thread_fire_nothing_early() {
        block_on_paused(async {
            let timer = Timer::new();
            let driver = driver_of(&timer);
            // A hook of this driver, as the alarm's sleep holds one.
            let hook = std::task::Waker::from(Arc::new(super::Hook(Arc::downgrade(&driver))));
            let mut sleep = tokio_test::task::spawn(timer.sleep(Duration::from_millis(10)));
            tokio_test::assert_pending!(sleep.poll());
            for _ in 0..3 {
                let hook = hook.clone();
                std::thread::spawn(move || {
                    hook.wake_by_ref();
                    hook.wake();
                })
                .join()
                .unwrap();
                tokio::time::advance(Duration::from_millis(3)).await;
                assert!(!sleep.is_woken(), "fired early");
                tokio_test::assert_pending!(sleep.poll());
            }
            tokio::time::advance(Duration::from_millis(1)).await;
            assert!(sleep.is_woken());
            tokio_test::assert_ready!(sleep.poll());
            assert_eq!(timer.stats().backstop_passes, 0);
        });
    }

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
            tokio::time::advance(crate::engine::backstop::ORPHAN_RECHECK).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 0, "the driver outlived its last sleep");
        });
    }

    /// A registered sleep dropped after the last handle rings the driver,
    /// whose pass may run while the dropping sleep still holds its shard
    /// (on another thread: here the test holds clones of the shards, as the
    /// sleep holds its own until its drop returns). That pass sees a sleep
    /// alive and cannot retire; the next look comes a millisecond later,
    /// not a second: the driver is gone a millisecond after the shards are
    /// let go.
    #[test]
    fn an_orphaned_driver_retires_a_millisecond_after_a_dropping_sleep_lets_go() {
        block_on_paused(async {
            let timer = Timer::new();
            tokio::task::yield_now().await; // the driver starts, and parks
            let mut sleep = tokio_test::task::spawn(timer.sleep(Duration::from_secs(3600)));
            tokio_test::assert_pending!(sleep.poll());
            let held: Vec<_> = timer.inner().shards.to_vec();
            drop(timer);
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "a sleep is registered");
            drop(sleep); // its cancel rings the driver
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "the shards are held: a sleep is alive");
            drop(held);
            tokio::time::advance(Duration::from_millis(1)).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 0, "the driver outlived its last sleep");
        });
    }

    /// The same with tokio never calling the hook back: the look is the
    /// driver task's own (its backstop), so the driver still retires.
    #[test]
    fn an_orphaned_driver_retires_without_the_hook() {
        block_on_paused(async {
            let timer = Timer::new();
            suppress_hook(&timer);
            let sleep = timer.sleep(Duration::from_millis(30));
            drop(timer);
            tokio::time::advance(Duration::from_secs(5)).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "the driver runs while a sleep exists");
            drop(sleep);
            tokio::time::advance(crate::engine::backstop::ORPHAN_RECHECK).await;
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 0, "the driver outlived its last sleep");
        });
    }

    /// An orphaned driver kept by a timer that never fires retires once
    /// that sleep is reset to a passed deadline and then dropped: the
    /// reset's cancel tells it (found in review: only a drop's cancel did,
    /// and the driver stayed for good).
    #[test]
    fn an_orphaned_driver_retires_after_its_last_sleep_is_reset_to_the_past_and_dropped() {
        block_on_paused(async {
            let timer = Timer::new();
            let mut forever = tokio_test::task::spawn(timer.sleep(Duration::MAX));
            tokio_test::assert_pending!(forever.poll());
            drop(timer);
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1, "registered: the driver stays");
            tokio::time::advance(Duration::from_secs(1)).await;
            let past = Instant::now() - Duration::from_millis(10);
            std::pin::Pin::new(&mut *forever).reset(past);
            tokio_test::assert_ready!(forever.poll());
            drop(forever);
            for _ in 0..2 {
                tokio::time::advance(Duration::from_secs(5)).await;
                tokio::task::yield_now().await;
            }
            assert_eq!(tasks_alive(), 0, "the driver outlived its last sleep");
        });
    }

    /// A shard's earliest due tick stays that of a timer cancelled since
    /// (its entry is gone, the shard not scanned again until that tick):
    /// here an hour-long sleep, registered then dropped, and a `Duration::MAX`
    /// one reset back near. Once the last handle goes, the driver retires at
    /// once, whatever tick the shards still name. Before, the pass took the
    /// stale tick for a timer to wait for and never looked at retiring: the
    /// driver task and the whole timer stayed for the hour, on every runtime.
    #[test]
    fn a_dropped_timer_retires_though_its_shards_name_a_cancelled_tick() {
        block_on_paused(async {
            let timer = Timer::new();
            let mut far = tokio_test::task::spawn(timer.sleep(Duration::from_secs(3600)));
            tokio_test::assert_pending!(far.poll());
            let mut back = tokio_test::task::spawn(timer.sleep(Duration::MAX));
            tokio_test::assert_pending!(back.poll());
            let near = Instant::now() + Duration::from_millis(20);
            std::pin::Pin::new(&mut *back).reset(near);
            tokio_test::assert_pending!(back.poll());
            drop((far, back));
            assert_ne!(timer.inner().earliest_due(), u64::MAX, "a cancelled tick");
            assert_eq!(timer.pending(), 0);
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 1);
            drop(timer);
            tokio::task::yield_now().await;
            assert_eq!(tasks_alive(), 0, "the driver outlived its timer");
        });
    }

    /// An orphaned driver whose only entries can never fire (a registered
    /// `Duration::MAX` sleep) parks: it wakes neither every tick nor for the
    /// retirement checks, which are for timers with nothing registered.
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
