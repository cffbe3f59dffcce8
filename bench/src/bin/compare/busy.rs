//! W12, a busy runtime: are sleeps on time when every worker has a long run
//! queue? A multi-thread runtime of 1 or 2 workers runs 100 or 1,000 tasks
//! (one child per configuration and system), each looping on
//! `tokio::task::yield_now().await` plus about 5 us of work, so the run
//! queue is never empty; every tenth round a task
//! sleeps a pseudo-random 0.1-2 ms (each task its own seeded sequence, the
//! same for every system) and records how late the sleep returned. The
//! tasks run for 3 s (0.3 s with `--quick`), then finish the sleep they are
//! in and stop. The code is the same for both systems but the sleep line:
//! `tokio::time::sleep(d)` or `tickwheel::time::sleep(d)`, the latter on
//! the runtime's default timer (1 ms tick), as a user would write it.
//!
//! # Lateness
//!
//! Each sleep's deadline is read as `Instant::now() + d` just before the
//! sleep is created, and its lateness is the time its `.await` returned
//! less that deadline. Each timer reads the clock again when it makes the
//! sleep, so its own deadline is a few ns later than this one: a sleep
//! counted early here (lateness below 0) returned before the deadline it
//! was asked for, whatever the timer rounds it up to (tokio: its
//! millisecond grid; tickwheel: the next tick boundary). The lateness
//! includes the time the woken task waits in the run queue, which is what
//! a user of either timer gets, and is the same for both systems.
//!
//! # Wake-ups per busy tick (tickwheel)
//!
//! A busy tick is a tick of the timer in which some sleep's deadline fell:
//! the distinct values of `ceil((deadline - grid) / tick)`, with the grid a
//! tick boundary of the timer (`Timer::last_tick`) and the deadlines those
//! above; at the default 1 ms tick, the distinct milliseconds of the
//! timer's clock that held a deadline. A driver on time wakes once per busy
//! tick (about 1.0; less than 1 means ticks handled several at once, late);
//! the wake-ups are `Stats::wakeups` of the runtime's default timer over
//! the run, from `Timer::current().stats()`.
//!
//! # The work
//!
//! The 5 us of work is a loop on a counter until `Instant` says 5 us have
//! passed: CPU a request handler would spend, not a wait, and on a clock so
//! that it is the same time for both systems whatever the CPU's speed.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwheel_bench::{join_within, multi_thread};

use crate::measure::{lateness_ns, Lateness};
use crate::rng::Rng;
use crate::systems::{emit, Busy, Figures, Sizes, Sys};
use crate::trickle::driver_figures;

/// The work of each round, between two yields.
const WORK: Duration = Duration::from_micros(5);
/// A sleep every this many rounds.
const SLEEP_EVERY: u64 = 10;
/// The sleeps' durations, uniform in `[SHORTEST, LONGEST)`.
const SHORTEST: Duration = Duration::from_micros(100);
const LONGEST: Duration = Duration::from_millis(2);
/// How long the tasks may take to finish their last sleep once told to
/// stop, before the child gives up.
const GIVE_UP: Duration = Duration::from_secs(30);

/// What one task measured.
#[derive(Default)]
struct TaskLog {
    /// Per sleep: ns from its deadline to the return of its `.await`.
    late_ns: Vec<i64>,
    deadlines: Vec<Instant>,
    rounds: u64,
}

/// About `d` of CPU: a counter incremented until the clock says so (W14's
/// busy and late tasks work with it too).
pub fn work(d: Duration) {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < d {
        n = black_box(n + 1);
    }
}

/// One busy task: yield, work, and every tenth round sleep and record.
async fn busy_task(sys: Sys, index: usize, stop: Arc<AtomicBool>) -> TaskLog {
    let mut rng = Rng::new(0xB5AD_4ECE_DA1C_E2A9 ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9));
    let mut log = TaskLog::default();
    // Staggered, so the tasks do not all sleep in the same round.
    let mut round = index as u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::task::yield_now().await;
        work(WORK);
        round += 1;
        log.rounds += 1;
        if round % SLEEP_EVERY == 0 {
            let d = rng.between(SHORTEST, LONGEST);
            let deadline = Instant::now() + d;
            match sys {
                Sys::Tickwheel => tickwheel::time::sleep(d).await,
                Sys::Tokio => tokio::time::sleep(d).await,
                _ => unreachable!("W12 measures tickwheel and tokio"),
            }
            log.late_ns.push(lateness_ns(Instant::now(), deadline));
            log.deadlines.push(deadline);
        }
    }
    log
}

pub fn run_w12(busy: Busy, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = multi_thread(busy.workers());
    // The runtime's default timer, started before the load as the first
    // sleep would start it; tokio's children never touch it.
    let timer = (sys == Sys::Tickwheel).then(|| {
        let _guard = rt.enter();
        tickwheel::Timer::current()
    });
    let stats_before = timer.as_ref().map(tickwheel::Timer::stats);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..busy.tasks())
        .map(|index| rt.spawn(busy_task(sys, index, stop.clone())))
        .collect();
    std::thread::sleep(sizes.busy);
    stop.store(true, Ordering::Relaxed);
    let window = started.elapsed().as_secs_f64();
    let logs: Vec<TaskLog> = join_within(&rt, handles, GIVE_UP, "the W12 tasks");

    let late = Lateness::new(
        logs.iter()
            .flat_map(|l| l.late_ns.iter().copied())
            .collect(),
    );
    let sleeps: usize = logs.iter().map(|l| l.late_ns.len()).sum();
    let rounds: u64 = logs.iter().map(|l| l.rounds).sum();
    emit(out, "workers", busy.workers() as f64);
    emit(out, "tasks", busy.tasks() as f64);
    emit(out, "window_s", window);
    emit(out, "sleeps", sleeps as f64);
    emit(out, "rounds_per_s", rounds as f64 / window);
    emit(out, "early", late.early() as f64);
    emit(out, "late_p50_ms", late.ms_at(0.50));
    emit(out, "late_p90_ms", late.ms_at(0.90));
    emit(out, "late_p99_ms", late.ms_at(0.99));
    emit(out, "late_max_ms", late.max_ms());
    if let (Some(timer), Some(before)) = (&timer, stats_before) {
        let deadlines = logs.iter().flat_map(|l| l.deadlines.iter());
        driver_figures(out, timer, &before, deadlines.map(|&d| d.into()), window);
    }
}
