//! What tickwheel borrows from tokio beyond its documented API, in one
//! place. The driver sleeps on tokio's clock (one `tokio::time::Sleep`, the
//! alarm, in `alarm.rs`) and runs its passes when tokio's time driver wakes
//! that sleep; everything it assumes about *how* tokio does that is here,
//! each with what a tokio release that stopped doing it would break and
//! the test that notices. The canaries in `tests/tokio_assumptions.rs` check
//! tokio itself; the tests named below check tickwheel on top of it.
//!
//! # 1. Timers are woken synchronously, and the waker may re-enter
//!
//! *Assumed:* tokio's time driver calls a fired sleep's waker on the thread
//! that processes timers, before that processing returns, outside its wheel
//! lock; the waker may reset and poll a tokio sleep (the hook re-arms the
//! alarm from inside the call). A reset to a deadline tokio has processed
//! completes the sleep at once, and calls its waker (the hook) from inside
//! `reset`: the pass lock leaves that call's request to the pass under way,
//! and `Alarm::arm` never re-arms a boundary it is armed for, so the request
//! ends in one pass that finds nothing to do. Where the party under way may
//! not scan (a registration re-arming for a tick tokio has processed and
//! the wheel has not), the alarm, fired, is armed again for the first
//! millisecond tokio has not processed (`Alarm::arm_soon`), so the hook
//! runs the scan at tokio's next timer processing. (tokio's alternative timer
//! queues the reset instead, answers "not yet", and fires it when its
//! worker parks: `arm` then waits, correctly, a little longer.)
//!
//! *If it stops:* a waker called later (queued, as tokio's alternative
//! timer may) makes wheel sleeps as late as the driver's hook is; a waker
//! that may not re-enter would deadlock the hook's pass. Sleeps still never
//! fire early, and the driver task's backstop (`driver.rs`) fires every due
//! sleep within two ticks (at least 2 ms) of its boundary even if the hook
//! is never called. *Tests:* `tokio_wakes_a_timer_synchronously_and_lets_the_waker_reset_it`,
//! `tokio_reset_to_a_processed_deadline_wakes_from_inside_reset` (canaries);
//! `tests/busy.rs` (on time under load); the backstop's tests in
//! `driver.rs` (`a_due_sleep_fires_by_the_backstop_when_the_hook_is_never_called`).
//!
//! # 2. `reset` registers eagerly and answers "processed" at once
//!
//! *Assumed:* `Sleep::reset` registers the sleep with tokio's wheel without
//! a poll, and `is_elapsed()` right after it says whether tokio has already
//! processed the deadline's millisecond: whether the deadline lies at or
//! before tokio's *processed mark*, the end of the last millisecond its
//! time driver processed, always a point of its millisecond grid. A
//! deadline before the time driver's start falls in its first millisecond,
//! which counts as processed from the start: it answers "processed" however
//! long ago tokio last processed its timers. The grid search below probes
//! tokio with this.
//!
//! The mark may lie far back: tokio's time driver processes its timers only
//! when a thread parks on it and wakes (an idle multi-thread runtime's
//! worker parks there with no timeout while no timer is due), so a runtime
//! idle for a second has its mark a second back. The search takes that mark
//! as it finds it; the probe's registration of a later deadline wakes the
//! parked worker, which processes and moves the mark up to the current
//! millisecond while the search may still be running, and the search
//! checks its result and, if the mark outran it, searches again once the
//! worker has had a moment to run. (A search that required a deadline a
//! second back to answer "processed" missed the grid off the workers of a
//! runtime idle for a second, and now and then on a worker of one.)
//!
//! *If it stops:* the grid search finds no processed deadline and gives up
//! (`None`): the timer keeps its own origin, its whole-millisecond ticks lie
//! off tokio's grid, and its sleeps may fire up to 1 ms later than tokio's
//! (never earlier). `Stats::grid_missed` says so, and a `tracing` event
//! ("tokio's millisecond grid not found") is emitted at build. If a deadline
//! before the runtime's start stopped answering "processed" on tokio's
//! usual timer, every search would take it for the alternative timer and
//! give up the same way. On tokio's alternative timer this is what happens
//! on a worker, and usually off the workers, where a probe races them: a
//! "processed" answer there is true and a "not processed" one may be early,
//! so the search finds tokio's grid only when the workers answered every
//! probe it checks. *Tests:*
//! `tokio_reset_registers_eagerly_and_answers_processed_at_once`,
//! `tokio_counts_a_deadline_before_its_start_processed_however_long_it_idled`
//! (canaries), `grid_points_found_at_different_moments_are_whole_milliseconds_apart`
//! (below), `off_grid::a_timer_built_anywhere_after_the_runtime_idled_a_second_finds_tokios_grid`,
//! `tests/alt_timer.rs`.
//!
//! # 3. Deadlines round up to whole milliseconds from the driver's start
//!
//! *Assumed:* tokio fires a sleep once it has processed the millisecond,
//! counted from its time driver's start, at or after the deadline. On a
//! clock that runs, the grid search finds that grid; on a clock tests may
//! pause (current-thread runtimes built with tokio's `test-util`), the alarm
//! is armed [`TOKIO_ROUNDING`] before the boundary first ([`early_arm`]), so
//! tokio fires it in the boundary's own millisecond whatever the grid.
//!
//! *If it stops:* with a finer resolution, the early arm fires before the
//! boundary and the alarm is re-armed for the boundary itself (one extra
//! wake-up per busy tick, never an early sleep); with a coarser one, wheel
//! sleeps are as late as tokio's own. *Tests:*
//! `tokio_rounds_deadlines_up_to_whole_milliseconds_from_its_start`
//! (canary), `tests/off_grid.rs`, `tests/precision.rs`.
//!
//! # 4. A runtime drops its tasks before its time driver shuts down
//!
//! *Assumed:* when a runtime shuts down, it drops its tasks (the driver task
//! among them, which retires the alarm) while its time driver still works,
//! so no pass arms a tokio sleep on a time driver that has shut down.
//!
//! *If it stops* (and on tokio's alternative timer it does: each worker
//! shuts its timers down, waking them, before the tasks are dropped): a pass
//! run from the hook during the shutdown would arm the alarm on a runtime
//! being shut down, and tokio's `reset` panics there ("A Tokio 1.x context
//! was found, but it is being shutdown"). `Alarm::arm` sees the alarm fired
//! before its boundary (which tokio does only when it shuts its timers
//! down) and does not re-arm it; should a reset panic all the same, it
//! contains the panic and retires the alarm (the timer then shuts down with
//! its runtime, as it would anyway). *Tests:*
//! `a_runtime_drops_its_tasks_before_its_time_driver_shuts_down`,
//! `alt_timer_shuts_its_timers_down_before_the_runtime_drops_its_tasks`
//! (canaries), `tests/shutdown.rs`, `tests/alt_timer.rs`.
//!
//! # 5. The time-driver probe
//!
//! *Assumed:* creating a `tokio::time::Sleep` (never polled) inside a
//! runtime's context panics if, and only if, that runtime was built without
//! its time driver (`enable_time`, `enable_all`). tokio documents the panic,
//! though not its message, and offers no other way to ask.
//!
//! *If it stops:* a probe that no longer panics would let
//! [`Builder::build`](crate::Builder::build) accept a runtime without a time
//! driver, and the driver's first alarm would then panic inside whichever
//! task registered a sleep; a probe that panics on a runtime *with* a time
//! driver would refuse every timer.
//!
//! *Printed:* the probe catches the panic, but the process's panic hook runs
//! first, so tokio's message ("A Tokio 1.x context was found, but timers are
//! disabled...") is printed on stderr (or reported by a custom hook) once per
//! probe of a runtime without a time driver: once per refused `build` or
//! `install`, and once per `Timer::try_current` (or `try_*` free function)
//! in such a runtime. Nothing is printed on a runtime with a time driver.
//!
//! *Tests:* `tokio_panics_on_a_sleep_made_without_a_time_driver` (canary),
//! `tests/no_time_driver.rs` (both runtime flavours: `build` and `install`
//! refuse, the ambient timer panics or errs, nothing completes).

use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

/// Whether `handle`'s runtime has its time driver (see the module docs: on
/// a runtime without one, tokio's panic message is printed by the panic
/// hook before it is caught).
pub(crate) fn has_time_driver(handle: &Handle) -> bool {
    let _runtime = handle.enter();
    crate::engine::unwind::run_contained(assert_time_driver)
}

/// Panics with tokio's own message ("timers are disabled ... call
/// `enable_time`") if the current runtime has no time driver, as
/// `tokio::time::sleep` would; the caller's location is reported.
#[track_caller]
pub(crate) fn assert_time_driver() {
    drop(tokio::time::sleep(Duration::ZERO));
}

/// Just under tokio's timer resolution: a sleep armed this much before a
/// tick boundary fires in the millisecond of the boundary itself.
pub(crate) const TOKIO_ROUNDING: Duration = Duration::from_nanos(999_999);

/// The instant to arm the alarm at first for `boundary` (assumption 3):
/// [`TOKIO_ROUNDING`] before it, so tokio fires it at the first processing
/// at or after the boundary's millisecond; if that still falls short of
/// the boundary, the alarm is armed again for the boundary itself.
pub(crate) fn early_arm(boundary: Instant) -> Instant {
    boundary.checked_sub(TOKIO_ROUNDING).unwrap_or(boundary)
}

/// The last point of tokio's millisecond grid at or before `origin` (read on
/// the current runtime's clock, whose time driver must be enabled), or
/// `None` if the grid cannot be found (see the module docs: the caller
/// keeps `origin` and says so in `Stats::grid_missed`).
///
/// tokio files a timer under the millisecond, counted from its time driver's
/// start, at or after its deadline, and fires it once it has processed that
/// millisecond; a wheel whose tick boundaries lie off that grid is rounded
/// twice (to its tick, then to tokio's millisecond), up to a millisecond
/// later than a `tokio::time` sleep for the same deadline. The grid's start
/// is not public, so it is found from what tokio's time driver tells of it:
/// a tokio sleep for a deadline in a millisecond tokio has already processed
/// completes on its first poll, and one for any later deadline does not. The
/// last processed millisecond's end, tokio's *processed mark*, is a grid
/// point; a binary search over deadlines finds it to the nanosecond, with
/// about 40 to 100 sleeps registered and dropped (some microseconds, once
/// per timer).
///
/// The mark is wherever tokio's time driver last processed its timers,
/// which may be long ago: a runtime with no timer due processes them only
/// when a worker wakes (a worker parks on the time driver with no timeout),
/// so after an idle second the mark lies a second back. It is a grid point
/// all the same. But a probe for a deadline past the mark wakes the worker
/// parked on the driver, which then processes its timers, moving the mark
/// up to the current millisecond; and another thread may run the driver
/// anyway (a busy worker's maintenance), moving it on between two probes.
/// Probes answered at different moments need not meet at a grid point, so
/// the point found is checked: the mark is always a grid point, and a point
/// `p` that was seen processed while `p + 1 ns` is still not processed after
/// the search is the mark itself. A search the mark outran is tried again,
/// after [`GRID_PAUSE`] (probes in a tight loop keep the driver's lock and
/// the CPU from the worker that is to move the mark: it then took
/// milliseconds, against a tenth of one with the pause), for up to
/// [`GRID_PATIENCE`].
///
/// A timer whose answers do not describe a grid is not trusted: tokio's
/// alternative timer queues a reset made off its workers and answers
/// "processed" or not depending on whether a worker got to the queue first
/// (and on a worker it answers "not processed" for every deadline). So a
/// deadline before the runtime's start must answer "processed" (tokio's
/// usual timer counts every such deadline in its first millisecond,
/// processed from the start, however stale its mark: assumption 2), and two
/// searches must find marks a whole number of milliseconds apart (random
/// answers almost never do), or the grid counts as not found, at once. Its
/// "processed" answers are true (a worker filed the probe after processing
/// its millisecond), so a grid found there is tokio's.
pub(crate) fn on_tokio_grid(origin: Instant) -> Option<Instant> {
    // `reset` registers the sleep without polling it (so without a waker,
    // and without the poll's panic on a runtime shutting down, where every
    // registration completes at once: see `Search::ShutDown`).
    let processed = |deadline: Instant| {
        let mut sleep = std::pin::pin!(tokio::time::sleep_until(deadline));
        sleep.as_mut().reset(deadline);
        sleep.is_elapsed()
    };
    let before_start = before_any_runtime(origin);
    let checked_mark = || {
        if !processed(before_start) {
            return Err(Search::NotTokiosGrid);
        }
        // Searched from the clock's reading now, not `origin`: a thread
        // held up since `origin` was read (a loaded host) finds tokio past
        // it, and a search that took `origin + 2 ms` for not processed would
        // end on that bound, and fail its check, on every attempt.
        let mark = processed_mark(Instant::now().max(origin), before_start, &processed);
        // Still not processed after the search: `mark` is the mark itself.
        if !processed(mark + Duration::from_nanos(1)) {
            Ok(mark)
        } else if processed(Instant::now() + Duration::from_secs(3600)) {
            Err(Search::ShutDown)
        } else {
            Err(Search::Outran)
        }
    };
    let give_up = std::time::Instant::now() + GRID_PATIENCE;
    loop {
        let found = checked_mark().and_then(|first| {
            let second = checked_mark()?;
            let apart = second.max(first) - second.min(first);
            (apart.as_nanos() % 1_000_000 == 0)
                .then_some(second)
                .ok_or(Search::NotTokiosGrid)
        });
        match found {
            Ok(mark) => return Some(last_grid_point(mark, origin)),
            Err(Search::Outran) if std::time::Instant::now() < give_up => {
                std::thread::sleep(GRID_PAUSE);
            }
            Err(_) => return None,
        }
    }
}

/// Why a grid search found no mark.
enum Search {
    /// The processed mark moved on while the search ran: try again.
    Outran,
    /// The answers describe no grid of tokio's usual timer (a deadline
    /// before the runtime's start not processed, or two marks a fraction of
    /// a millisecond apart): tokio's alternative timer.
    NotTokiosGrid,
    /// A deadline an hour ahead answers processed: the time driver is
    /// shutting down, and completes every registration at once.
    ShutDown,
}

/// How long [`on_tokio_grid`] keeps searching while tokio's processed mark
/// outruns its searches (it settles within a fraction of a millisecond of
/// the first probe that wakes the worker parked on the time driver; a
/// loaded host may keep that worker from running for some milliseconds).
const GRID_PATIENCE: Duration = Duration::from_millis(100);

/// The pause between two searches of [`on_tokio_grid`] that the mark
/// outran, for the worker that moves it to run.
const GRID_PAUSE: Duration = Duration::from_micros(100);

/// An instant before the start of any runtime this process can have: a
/// century before `from`, or, where the platform's `Instant` cannot reach
/// so far back (one counted from the machine's boot), the earliest instant
/// it can.
fn before_any_runtime(from: Instant) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    from.checked_sub(CENTURY)
        .unwrap_or_else(|| from - bisect(CENTURY, |back| from.checked_sub(back).is_some()))
}

/// The longest duration below `missed` that `reaches`, to the nanosecond
/// (`reaches` is true for zero, false for `missed`, and false after the
/// first duration it is false for).
fn bisect(mut missed: Duration, reaches: impl Fn(Duration) -> bool) -> Duration {
    let mut reached = Duration::ZERO;
    while missed - reached > Duration::from_nanos(1) {
        let mid = reached + (missed - reached) / 2;
        if reaches(mid) {
            reached = mid;
        } else {
            missed = mid;
        }
    }
    reached
}

/// The last point at or before `origin` of the millisecond grid through
/// `mark`, which may lie on either side of it (tokio may have processed
/// past `origin` by the time the search ends), or `origin` itself where
/// that point is before the platform's earliest `Instant`.
fn last_grid_point(mark: Instant, origin: Instant) -> Instant {
    const MS_NS: u128 = 1_000_000;
    let whole_ms = |ns: u128| Duration::from_millis((ns / MS_NS) as u64);
    match origin.checked_duration_since(mark) {
        Some(behind) => mark + whole_ms(behind.as_nanos()),
        // `mark` ahead of `origin`: back by that distance, rounded up.
        None => mark
            .checked_sub(whole_ms((mark - origin).as_nanos() + MS_NS - 1))
            .unwrap_or(origin),
    }
}

/// Binary search for the last deadline `processed` answers `true` for,
/// starting at `now` (the clock's reading, which tokio cannot have
/// processed past) and going back as far as `floor`, a deadline `processed`
/// answered `true` for: tokio's processed mark, if it did not move
/// meanwhile.
fn processed_mark(now: Instant, floor: Instant, processed: &impl Fn(Instant) -> bool) -> Instant {
    const MS: Duration = Duration::from_millis(1);
    // Not processed: tokio has not reached the millisecond after `now`'s.
    let mut after = now + 2 * MS;
    // Processed: a deadline far enough back, found by an exponential
    // back-off (a mark left a second back by an idle runtime takes a dozen
    // steps), or `floor`.
    let mut back = MS;
    let before = loop {
        match now.checked_sub(back).filter(|at| *at > floor) {
            Some(at) if processed(at) => break at,
            Some(at) => {
                after = at;
                back *= 2;
            }
            None => break floor,
        }
    };
    // `before` is processed, `after` is not: the mark lies between, at the
    // last processed nanosecond.
    before + bisect(after - before, |d| processed(before + d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid point before an instant is found from a mark on either side
    /// of it, and is the instant itself when it lies on the grid.
    #[test]
    fn the_last_grid_point_comes_from_a_mark_on_either_side() {
        let origin = Instant::now();
        let ns = Duration::from_nanos;
        let mark = origin - ns(3_250_000);
        assert_eq!(last_grid_point(mark, origin), origin - ns(250_000));
        assert_eq!(last_grid_point(origin, origin), origin);
        // tokio processed past `origin` while the search ran.
        assert_eq!(
            last_grid_point(origin + ns(1_250_000), origin),
            origin - ns(750_000)
        );
        assert_eq!(last_grid_point(origin + ns(2_000_000), origin), origin);
        assert_eq!(
            last_grid_point(origin + ns(1), origin),
            origin - ns(999_999)
        );
    }

    /// The farthest a platform's `Instant` reaches back is found to the
    /// nanosecond, and the limit is taken where it reaches that far.
    #[test]
    fn the_farthest_reach_back_is_found_to_the_nanosecond() {
        let limit = Duration::from_secs(100 * 365 * 24 * 3600);
        let floor = Duration::from_nanos(123_456_789_012);
        assert_eq!(bisect(limit, |back| back <= floor), floor);
        let reaches_zero = |back: Duration| back.is_zero();
        assert_eq!(bisect(limit, reaches_zero), Duration::ZERO);
        let origin = Instant::now();
        assert!(before_any_runtime(origin) < origin);
    }

    /// On a runtime whose time driver has shut down, tokio completes every
    /// registration at once: the search says at once that there is no grid
    /// (it neither takes the mark for one that keeps moving, searching for
    /// `GRID_PATIENCE`, nor finds a grid point).
    #[test]
    fn a_search_on_a_shut_down_runtime_gives_up_at_once() {
        let rt = one_worker_runtime();
        let handle = rt.handle().clone();
        drop(rt);
        let _runtime = handle.enter();
        let start = std::time::Instant::now();
        assert_eq!(on_tokio_grid(Instant::now()), None);
        assert!(start.elapsed() < GRID_PATIENCE / 2, "{:?}", start.elapsed());
    }

    /// A real-time runtime with one worker, which parks on tokio's time
    /// driver while the test's thread searches.
    fn one_worker_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    /// A search asked about an instant tokio has since processed well past
    /// (the thread was held up after reading it, as on a loaded host) still
    /// finds the grid point before that instant. Searching from the stale
    /// instant took a deadline tokio had processed for one it had not, and
    /// failed every attempt: about one timer in 300 built under load
    /// reported `grid_missed`.
    #[test]
    fn a_search_asked_about_an_instant_tokio_processed_past_finds_the_grid() {
        let rt = one_worker_runtime();
        rt.block_on(async {
            let asked = Instant::now();
            // tokio fires this once it has processed the millisecond 5 ms on.
            tokio::time::sleep(Duration::from_millis(5)).await;
            let point = on_tokio_grid(asked).expect("tokio's grid is found");
            assert!(point <= asked && asked - point < Duration::from_millis(1));
            let fresh = on_tokio_grid(Instant::now()).expect("tokio's grid is found");
            let apart = fresh.duration_since(point).as_nanos();
            assert_eq!(apart % 1_000_000, 0, "{apart} ns apart");
        });
    }

    /// Grid points found at different moments of a real-time runtime lie
    /// whole milliseconds apart, each at most a millisecond before the
    /// instant it was asked for: they are points of one grid, tokio's.
    /// (A search that found anything else, such as the instant itself, would
    /// put them a fraction of a millisecond apart.)
    #[test]
    fn grid_points_found_at_different_moments_are_whole_milliseconds_apart() {
        let rt = one_worker_runtime();
        rt.block_on(async {
            let mut points = Vec::new();
            for pause_us in [0, 1_300, 2_700, 450] {
                tokio::time::sleep(Duration::from_micros(pause_us)).await;
                std::thread::sleep(Duration::from_micros(pause_us));
                let asked = Instant::now();
                let point = on_tokio_grid(asked).expect("tokio's grid is found");
                assert!(point <= asked && asked - point < Duration::from_millis(1));
                points.push(point);
            }
            for pair in points.windows(2) {
                let apart = pair[1].duration_since(pair[0]).as_nanos();
                assert_eq!(apart % 1_000_000, 0, "{apart} ns apart");
            }
        });
    }
}
