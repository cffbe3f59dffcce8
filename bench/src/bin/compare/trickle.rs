//! W8, a trickle of timers: what a timer costs a lightly loaded service, one
//! with a request or so per millisecond, each request setting a short
//! timeout, and whether its sleeps are as timely as tokio's there. On a
//! current-thread runtime (`w8`), and on a 2-worker runtime (`w8mt`), one
//! task registers a sleep every millisecond for 3 s (0.5 s with `--quick`),
//! each of a pseudo-random 1-50 ms (the same sequence for every system) and
//! each awaited by a task of its own, so every sleep really fires. The
//! child reports the process's CPU time from the first registration to the
//! last fire, the sleeps fired (all of them, or the child fails) and how
//! many completed before their deadline by `tokio::time::Instant` (none
//! may), their lateness (p50 / p90 / p99: the time the awaiting task
//! resumed less the deadline, so the run-queue wait is in it, as a user
//! sees it), and for tickwheel its driver's wake-ups (`Stats::wakeups`),
//! the ticks its clock advanced and the busy ticks (ticks with a sleep
//! due), per second of the run. tickwheel runs at its default tick (1 ms)
//! and, on the current-thread runtime, as for W6, at the second tick
//! (`--w6-tick-ms`, 10 ms: the default before), against `tokio::time`.
//! `--child w8 floor` (by hand, not in the run plan) runs the same pacing
//! and tasks with nothing to sleep on: the share of the CPU figure that is
//! not the timers'.
//!
//! # Pacing
//!
//! The registering task is paced by `tokio::time::interval(1 ms)` (missed
//! ticks burst, tokio's default), the same for every system: registration
//! `i` happens at the interval's tick `i`, `start + i ms`, so every system
//! registers the same number of sleeps (the window in milliseconds) on the
//! same schedule, with one tokio timer entry re-armed every millisecond.
//! Not a `sleep(1 ms)` per iteration: its period is 1 ms plus the
//! iteration's own time plus tokio's rounding up to its millisecond grid
//! (about 2 ms in all), so a slower system would register fewer sleeps and
//! look cheaper. Not a std thread waking the task from outside either, the
//! nearest to requests arriving from the network: its own wake-ups and CPU
//! would be added to both sides of the ratio, and every request would cost
//! a cross-thread unpark that has nothing to do with timers. Nor a spin:
//! it would be all the CPU there is to measure.
//!
//! What the choice means for the figures: the runtime wakes every
//! millisecond anyway, for the pacing, on tokio's millisecond grid, and
//! tokio's sleeps and tickwheel's driver (whose sleep is a tokio sleep)
//! fire on that same grid. So a timer firing costs no park and unpark of
//! its own here: the CPU figure is the timers' work within a runtime that
//! is awake for its requests (registration, firing, waking, the driver's
//! passes), not what a wake-up costs a thread with nothing else to do. The
//! driver's wake-ups per second are reported beside it for that; the
//! pacing alone, `--child w8 floor`, is most of the CPU figure.
//!
//! Wake-ups per busy tick (a tick with a sleep due) can be below 1: a
//! wake-up that comes late processes two busy ticks at once. They depend on
//! where tickwheel's ticks fall against tokio's millisecond grid. The timer
//! is built just after the runtime, so its boundaries lie a few
//! microseconds after a grid millisecond, and on a current-thread runtime
//! the driver's early arm (armed for the millisecond before a boundary, see
//! the driver's module docs) wakes once the boundary has passed and fires
//! the tick. A timer built at another phase wakes there before the
//! boundary and again after it, up to two wake-ups per busy tick.
//!
//! The deadline of each sleep is read once (`tokio::time::Instant::now() +
//! d`) and given to `sleep_until`, so "early" compares the completion time
//! with the very deadline the timer was given.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::Either;
use tickwheel_bench::{current_thread, new_timer};
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::measure::{context_switches, cpu_ns, lateness_ns, Lateness, NOT_FIRED};
use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys};

/// One registration per this, on a fixed schedule.
const PERIOD: Duration = Duration::from_millis(1);
/// The sleeps' durations, uniform in `[SHORTEST, LONGEST)`.
const SHORTEST: Duration = Duration::from_millis(1);
const LONGEST: Duration = Duration::from_millis(50);
/// How long the last sleeps may take to fire before the child gives up.
const GIVE_UP: Duration = Duration::from_secs(10);

/// What the sleeping tasks report.
struct Shared {
    /// Per sleep: ns from its deadline to its completion (negative: early).
    late_ns: Vec<AtomicI64>,
    fired: AtomicUsize,
    /// Notified when the last sleep has fired.
    done: Notify,
}

/// What each task awaits: tickwheel's sleep, tokio's, or (the floor)
/// nothing.
type AnySleep = Either<Either<tickwheel::Sleep, tokio::time::Sleep>, std::future::Ready<()>>;

/// One sleep of `sys` due at `deadline`: created by the registering task
/// (so no task holds a `Timer` handle of its own), registered by the first
/// poll in the task that awaits it, and not boxed (a request handler awaits
/// its sleep in place).
fn sleep_until(sys: Sys, timer: Option<&tickwheel::Timer>, deadline: Instant) -> AnySleep {
    match sys {
        Sys::Tickwheel => Either::Left(Either::Left(
            timer
                .expect("tickwheel needs a timer")
                .sleep_until(deadline),
        )),
        Sys::Tokio => Either::Left(Either::Right(tokio::time::sleep_until(deadline))),
        Sys::Floor => Either::Right(std::future::ready(())),
        Sys::Ambient | Sys::Pingora => unreachable!("W8 measures tickwheel and tokio"),
    }
}

/// The tick (counted from `grid`, a tick boundary) in which a sleep due at
/// `deadline` fires: deadlines round up to the next boundary.
fn fire_tick(deadline: Instant, grid: Instant, tick: Duration) -> i128 {
    let offset = if deadline >= grid {
        (deadline - grid).as_nanos() as i128
    } else {
        -((grid - deadline).as_nanos() as i128)
    };
    let tick = tick.as_nanos() as i128;
    -(-offset).div_euclid(tick)
}

/// W8 on a current-thread runtime, or (`two_workers`, W8 on 2 workers) on
/// a 2-worker one.
pub fn run_w8(sys: Sys, sizes: Sizes, two_workers: bool, out: &mut Figures) {
    let rt = if two_workers {
        tickwheel_bench::two_workers()
    } else {
        current_thread()
    };
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    trickle(&rt, sys, timer.as_ref(), sizes, out);
}

/// The trickle on `rt`, on `timer` for tickwheel (W8, and W11 on a timer of
/// a given shard count).
pub fn trickle(
    rt: &Runtime,
    sys: Sys,
    timer: Option<&tickwheel::Timer>,
    sizes: Sizes,
    out: &mut Figures,
) {
    let n = (sizes.trickle.as_nanos() / PERIOD.as_nanos()) as usize;
    let shared = Arc::new(Shared {
        late_ns: (0..n).map(|_| AtomicI64::new(NOT_FIRED)).collect(),
        fired: AtomicUsize::new(0),
        done: Notify::new(),
    });
    let stats_before = timer.map(tickwheel::Timer::stats);
    let switches_before = context_switches();
    let cpu_before = cpu_ns();
    let started = std::time::Instant::now();
    let task_timer = timer.cloned();
    let task_shared = shared.clone();
    let deadlines = rt.block_on(async move {
        // Spawned, as a request loop would be: waking the `block_on` future
        // takes a different path from waking a task.
        tokio::spawn(async move {
            let mut rng = Rng::new(0x7F4A_7C15_9E37_79B9);
            let mut deadlines = Vec::with_capacity(n);
            let mut pace = tokio::time::interval(PERIOD);
            for i in 0..n {
                pace.tick().await;
                let deadline = Instant::now() + rng.between(SHORTEST, LONGEST);
                deadlines.push(deadline);
                let sleep = sleep_until(sys, task_timer.as_ref(), deadline);
                let shared = task_shared.clone();
                tokio::spawn(async move {
                    sleep.await;
                    let late = lateness_ns(Instant::now().into_std(), deadline.into_std());
                    shared.late_ns[i].store(late, Ordering::Relaxed);
                    if shared.fired.fetch_add(1, Ordering::AcqRel) + 1 == n {
                        shared.done.notify_one();
                    }
                });
            }
            tokio::time::timeout(GIVE_UP, task_shared.done.notified())
                .await
                .expect("every W8 sleep fires within 10 s of the last registration");
            deadlines
        })
        .await
        .expect("the W8 task panicked")
    });
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_ns() - cpu_before;
    let switches = context_switches() - switches_before;

    emit(out, "registered", n as f64);
    emit(out, "fired", shared.fired.load(Ordering::Acquire) as f64);
    emit(out, "cpu_s", cpu as f64 / 1e9);
    emit(out, "window_s", elapsed);
    emit(out, "context_switches_per_s", switches as f64 / elapsed);
    // The floor's tasks complete at once, early by their whole sleep: it has
    // no lateness to speak of.
    if sys != Sys::Floor {
        let late = Lateness::from_atomics(&shared.late_ns);
        emit(out, "early", late.early() as f64);
        emit(out, "late_p50_ms", late.ms_at(0.50));
        emit(out, "late_p90_ms", late.ms_at(0.90));
        emit(out, "late_p99_ms", late.ms_at(0.99));
    }
    if let (Some(timer), Some(before)) = (timer, stats_before) {
        driver_figures(out, timer, &before, deadlines, elapsed);
    }
}

/// tickwheel's driver over `window` seconds since `before`: its tick, its
/// wake-ups (in all, per second, and per busy tick: a tick in which one of
/// `deadlines` fell, the wake-ups a driver needs at the least), the ticks
/// its clock advanced and the busy ticks, per second (W8, W12).
pub fn driver_figures(
    out: &mut Figures,
    timer: &tickwheel::Timer,
    before: &tickwheel::Stats,
    deadlines: impl IntoIterator<Item = Instant>,
    window: f64,
) {
    let delta = timer.stats().delta(before);
    // `last_tick` is a tick boundary, which fixes the grid.
    let (tick, grid) = (timer.tick(), timer.last_tick());
    let mut busy: Vec<i128> = deadlines
        .into_iter()
        .map(|d| fire_tick(d, grid, tick))
        .collect();
    busy.sort_unstable();
    busy.dedup();
    let wakeups = delta.wakeups as f64;
    emit(out, "tick_ms", tick.as_secs_f64() * 1e3);
    emit(out, "driver_wakeups", wakeups);
    emit(out, "wakeups_per_s", wakeups / window);
    emit(out, "ticks_per_s", delta.ticks as f64 / window);
    emit(out, "busy_ticks_per_s", busy.len() as f64 / window);
    emit(out, "wakeups_per_busy_tick", wakeups / busy.len() as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_fires_at_the_first_boundary_at_or_after_it() {
        let grid = Instant::now();
        let ms = Duration::from_millis;
        let tick = ms(10);
        assert_eq!(fire_tick(grid, grid, tick), 0);
        assert_eq!(fire_tick(grid + ms(10), grid, tick), 1);
        assert_eq!(fire_tick(grid + ms(1), grid, tick), 1);
        assert_eq!(fire_tick(grid + ms(11), grid, tick), 2);
        // Before the grid's boundary too (the grid is the last tick, after
        // every deadline).
        assert_eq!(fire_tick(grid - ms(1), grid, tick), 0);
        assert_eq!(fire_tick(grid - ms(10), grid, tick), -1);
        assert_eq!(fire_tick(grid - ms(11), grid, tick), -1);
    }
}
