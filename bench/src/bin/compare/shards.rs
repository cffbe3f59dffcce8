//! W11, shards: what tickwheel's shard count costs a
//! timer that a many-core runtime would get (the default is 2 shards per
//! worker, at most 64), measured on this machine at 4, 16 and 64 shards
//! (`w11-4`, `w11-16`, `w11-64`: a child each, so one count's heap, threads
//! and caches never weigh on another's figures). tickwheel alone, against
//! itself at 4 shards (the default on 2 workers).
//!
//! Each child builds a 2-worker runtime and installs on it a timer built
//! with `Timer::builder().shards(n)` as the runtime's default
//! (`Builder::install`), then, in this order, on that timer:
//!
//! - (a) `timer_bytes`: the live heap growth across the build (the counting
//!   global allocator, as W3 and W5 count bytes): rings, bitmaps, overflow
//!   arrays and histograms of every shard, the driver task, the runtime's
//!   registry entry.
//! - (b) `idle_wakeups`, `idle_cpu_ms`: as W5, one 20 ms sleep fires, then
//!   the runtime idles for 1 s (0.3 s with `--quick`); the driver's
//!   wake-ups over the idle window (`Stats::wakeups`) and the process's CPU.
//! - (c) `trickle_cpu_s`, `trickle_early`, `trickle_wakeups_per_s`: W8's
//!   trickle on 2 workers (a 1-50 ms sleep registered every ms for 3 s,
//!   0.5 s with `--quick`, each awaited by its own task) with `timer.sleep_until`
//!   on this timer; the process's CPU over the run. A trickle keeps few
//!   shards with anything due, so a driver pass that visits every shard
//!   shows here.
//! - (d) `w9_cpu_s`, `w9_early`: W9's tasks (200,000, each awaiting a
//!   `tickwheel::time::sleep` of up to 1 s; 20,000 of up to 0.3 s with
//!   `--quick`), on the installed timer; the process's CPU over the run.
//!   Whole CPU, not above a floor: the goals compare one shard count with
//!   another, whose floors are the same.
//!
//! The goals (`goals`): a new timer at 64 shards holds at most 1 MB
//! (10^6 bytes), and the trickle's and W9's CPU at 64 shards is at most
//! 1.1 x that at 4 (medians).

use std::time::Duration;

use tickwheel_bench::two_workers;

use crate::measure::{cpu_ns, live_bytes};
use crate::systems::{emit, Figures, Shards, Sizes, Sys};
use crate::task_sleeps::tasks_sleeping;
use crate::trickle::trickle;

/// Copies `keys` of `from` into `out`, each as `<prefix>_<key>`.
fn prefixed(out: &mut Figures, prefix: &str, from: &Figures, keys: &[&str]) {
    for key in keys {
        if let Some(&value) = from.get(*key) {
            emit(out, &format!("{prefix}_{key}"), value);
        }
    }
}

pub fn run_w11(shards: Shards, sys: Sys, sizes: Sizes, out: &mut Figures) {
    assert_eq!(sys, Sys::Tickwheel, "W11 measures tickwheel alone");
    let rt = two_workers();

    // (a) The heap a new timer holds.
    let before = live_bytes();
    let timer = tickwheel::Timer::builder()
        .shards(shards.count())
        .runtime(rt.handle().clone())
        .install()
        .expect("a new runtime has no default timer yet");
    let timer_bytes = live_bytes().saturating_sub(before);
    assert_eq!(timer.shards(), shards.count());
    let current = rt.block_on(async { tickwheel::Timer::current().shards() });
    assert_eq!(
        current,
        shards.count(),
        "the installed timer is the default"
    );
    emit(out, "shards", timer.shards() as f64);
    emit(out, "timer_bytes", timer_bytes as f64);

    // (b) Idle after one timer fired, as W5.
    rt.block_on(async {
        timer.sleep(Duration::from_millis(20)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    let wakeups_before = timer.stats().wakeups;
    let cpu_before = cpu_ns();
    std::thread::sleep(sizes.w11_idle);
    let idle_cpu = cpu_ns() - cpu_before;
    assert_eq!(timer.pending(), 0);
    emit(
        out,
        "idle_wakeups",
        (timer.stats().wakeups - wakeups_before) as f64,
    );
    emit(out, "idle_cpu_ms", idle_cpu as f64 / 1e6);
    emit(out, "idle_ms", sizes.w11_idle.as_secs_f64() * 1e3);

    // (c) W8's trickle on 2 workers, on this timer.
    let mut figures = Figures::new();
    trickle(&rt, Sys::Tickwheel, Some(&timer), sizes, &mut figures);
    assert_eq!(
        figures.get("fired"),
        figures.get("registered"),
        "every trickle sleep fired"
    );
    prefixed(
        out,
        "trickle",
        &figures,
        &["cpu_s", "early", "wakeups_per_s", "registered"],
    );

    // (d) W9's tasks on 2 workers, on this timer (the runtime's default).
    let mut figures = Figures::new();
    tasks_sleeping(&rt, Sys::Tickwheel, sizes, &mut figures);
    prefixed(out, "w9", &figures, &["cpu_s", "early", "tasks"]);
}
