//! Every workload of the comparison (W1-W14), for tickwheel,
//! `tokio::time`, tokio's alternative timer (multi-thread workloads) and
//! `pingora-timeout`, and the delay-queue workloads (DQ1-DQ3, tickwheel's
//! `DelayQueue` against tokio-util's), in one run: a table of absolute
//! figures (min / median / max over the repetitions) and ratios of the
//! medians to `tokio::time`'s (tokio-util's for the delay queues), W8's,
//! W9's, W11's, W12's, W13's, W14's and W10's own tables, a MET/MISSED line per
//! performance goal (the goals are data, in `goals`: `--goals` prints them
//! as BENCHMARKS.md holds them), and the W1-W7 ratios as a text chart and an
//! SVG chart.
//!
//! ```text
//! cargo run --release -p tickwheel-bench            # full run: 5 repetitions, several minutes
//! cargo run --release -p tickwheel-bench -- --quick # smaller sizes, 2 repetitions: development and CI
//! cargo run --release -p tickwheel-bench -- --help  # the options (--reps, --alt-timer, --w6-tick-ms, --workloads)
//! cargo run --release -p tickwheel-bench -- --no-alt-timer --workloads w8,w8mt,w12 # only these
//! cargo run --release -p tickwheel-bench -- --quick --workloads w13
//! cargo run --release -p tickwheel-bench -- --quick --alt-timer --workloads w1mt,w12 # on the alt timer too
//! cargo run --release -p tickwheel-bench -- --no-alt-timer --workloads w9,w11 # W9's shapes, W11
//! cargo run --release -p tickwheel-bench -- --no-alt-timer --workloads w14 # W14 alone: under a minute
//! cargo run --release -p tickwheel-bench -- --goals  # the goal table, in markdown
//! sh bench/scripts/install-wrk.sh                     # wrk, for W10 (Debian package)
//! cargo run --release -p tickwheel-bench -- --no-alt-timer --workloads w10 # W10 alone: about 10 minutes
//! ```
//!
//! `--workloads` runs only the workloads it names (comma-separated, as
//! `--child` names them, or `w9` for W9's six shapes and runtimes, `w11` for
//! W11's three shard counts, `w12` for W12's four configurations, `w14` for
//! W14's four, `w14-late` for its two with the late task, `w10` for W10's
//! six, `w10-base` for its four baseline ones); the goals of the
//! others say NO DATA, and the charts of the last full run are left as they
//! are.
//!
//! W10 needs `wrk` (`bench/scripts/install-wrk.sh` installs the Debian
//! package). Where it is absent, W10 prints "skipped: wrk not installed
//! (bench/scripts/install-wrk.sh)" and its goals say NO DATA; under
//! `--quick` (CI's smoke run) it is skipped unless `--workloads` names it.
//!
//! Each (workload, system) pair runs in its own child process (this binary
//! re-executed with `--child <workload> <system>`), so one system's threads,
//! caches, clock thread (pingora starts one that never stops) and heap never
//! leak into another's figures. A child prints `key=value` lines; the parent
//! collects them. Every child runs once per repetition (5, `--reps`), the
//! systems of a workload taking turns within each repetition, so a noisy
//! moment of the machine weighs on all of them (W11's shard counts take
//! turns in the same way, see `runs::turns`); goals on a ratio compare
//! medians, and W1 on 2 workers compares repetition by repetition.
//!
//! tokio's alternative timer (`runtime::Builder::enable_alt_timer`) needs
//! tokio built with `--cfg tokio_unstable`: the parent builds this binary
//! again with that flag in `target/alt-timer` and runs its children with
//! `--alt-timer` (skipped under `--quick` unless asked for, see
//! `alt_timer`): tokio on it for W1 on 2 workers, W5-W7, W12 and W13, and
//! tickwheel on a runtime built with it (its driver's alarm, a tokio sleep,
//! then on that timer) for W1 on 2 workers and W12, beside tokio there. W6
//! and W8 run a second time for tickwheel with a 10 ms tick, its default
//! before 1 ms (`--w6-tick-ms`).
//!
//! Workloads:
//!
//! - W1 `timeout(5 s, f)`, `f` pending once (waking itself) then ready:
//!   current-thread runtime, and 64 tasks on a 2-worker runtime. `floor` is
//!   `f` awaited alone. Best of several rounds, ns per operation. With the
//!   alternative timer, the 2-worker half runs again for tickwheel and tokio
//!   on a runtime built with it (the current-thread half cannot: tokio
//!   offers it on the multi-thread runtime only).
//! - W2 create a 5 s sleep, poll it once, drop it. `floor` polls a boxed
//!   16-byte ready future instead. tickwheel runs it twice: through a held
//!   `Timer` handle (`timer.sleep`), and as `ambient` through
//!   `tickwheel::time::sleep` on the runtime's default timer (no handle
//!   held); the report gives the ratio of their overheads (medians).
//! - W3 1M sleeps due 0.1-1.1 s after creation (0.1-0.4 s with `--quick`)
//!   in pseudo-random order, registered by polling each once with one shared
//!   counting waker, all fired, then polled to completion and dropped:
//!   process CPU time over the whole, and bytes per pending timer (the
//!   element the caller stores plus the live-heap growth per timer, from a
//!   counting global allocator). Its sleeps are never re-polled or dropped
//!   by a task that awaited them (one shared waker, polled by hand): for
//!   sleeps awaited by tasks, the pattern services run, W9 is the headline,
//!   not W3.
//! - W4 registration (`sleep(d)` + first poll, kept registered; `d` 1-5 s) in
//!   chunks of 1,000 dropped untimed, with 0 and with 1M timers already
//!   pending (due 10-1000 s out). Best of several rounds.
//! - W5 a 2-worker runtime idle for 5 s (0.3 s with `--quick`) after its one
//!   timer fired: driver wake-ups (tickwheel's `stats().wakeups`), context
//!   switches of all the process's threads, process CPU time.
//! - W6 1M timers due 3-4 s after registration started (0.7-1.0 s with
//!   `--quick`), on a 2-worker runtime in real time; each timer's own waker
//!   stamps the time it is woken, so lateness = wake time - deadline (the
//!   timer's own lateness, without the scheduling of the woken task, which
//!   all systems share). tickwheel runs it twice: at its default 1 ms tick
//!   and, for comparison, at 10 ms (the default before).
//! - W7 idle-timeout resets: 100k long-lived sleeps, each pushed to now +
//!   30 s on every "message", messages spread over them at random, by 2
//!   tasks on 2 workers (tickwheel and tokio only). Best of several rounds,
//!   ns per reset.
//! - W8 a trickle: on a current-thread runtime (`w8`), a sleep of 1-50 ms
//!   registered every millisecond for 3 s (0.5 s with `--quick`), each
//!   awaited by its own task (tickwheel, at its default tick and at 10 ms,
//!   and tokio): process CPU time, sleeps fired and early, lateness p50 /
//!   p90 / p99 (the awaiting task's resumption less the deadline),
//!   tickwheel's driver wake-ups per second. The same on a 2-worker runtime
//!   (`w8mt`, tickwheel at its default tick and tokio). What the 1 ms
//!   default costs a lightly loaded service, and whether its sleeps are as
//!   timely as tokio's there; see `trickle` for how it is paced.
//! - W9 a task per sleep: 200k tasks (20k with `--quick`), each
//!   `async move { sleep(d).await }` with `d` up to 1 s (0.3 s with
//!   `--quick`), on a current-thread runtime and on 2 workers, in three
//!   shapes: spawned by a task (`w9ct`, `w9mt`: pseudo-random `d`, the early
//!   check), and spawned from `block_on`, collected by a `JoinSet`
//!   (`w9ct-joinset`, `w9mt-joinset`) or counted down to a `Notify`
//!   (`w9ct-notify`, `w9mt-notify`), task `i` sleeping `1 ms + (i * 7919 us
//!   mod 1 s)`; tickwheel through `tickwheel::time::sleep` on the runtime's
//!   default timer, against `tokio::time::sleep`. Process CPU time from the
//!   first spawn to the last task's end, per task, and its overhead above
//!   the floor (the same tasks each awaiting a future that is pending once
//!   and wakes its own task: the suspend, wake and second poll any wait
//!   costs, without a timer). See `task_sleeps` for why that floor and what
//!   differs between the shapes.
//! - W11 shards: tickwheel alone, a timer built with
//!   `Builder::shards(n)` for 4, 16 and 64 (a child each: `w11-4`,
//!   `w11-16`, `w11-64`) installed as a 2-worker runtime's default: the
//!   heap the new timer holds, its driver's wake-ups and the process's CPU
//!   over 1 s idle (0.3 s with `--quick`) after one timer fired, W8's
//!   trickle on it (process CPU) and W9's tasks on it (process CPU); see
//!   `shards`.
//! - W12 a busy runtime: a multi-thread
//!   runtime of 1 or 2 workers kept busy by 100 or 1,000 tasks, each looping
//!   on `yield_now().await` plus 5 us of work, every tenth round sleeping a
//!   pseudo-random 0.1-2 ms (`tokio::time::sleep` or `tickwheel::time::sleep`
//!   on the runtime's default timer, the only line that differs) for 3 s
//!   (0.3 s with `--quick`); a child per configuration (`w12-1x100`,
//!   `w12-1x1000`, `w12-2x100`, `w12-2x1000`) and system. Lateness p50 /
//!   p90 / p99 / max of the sleeps (the `.await`'s return less
//!   `Instant::now() + d` at creation), sleeps and early ones, and for
//!   tickwheel its driver's wake-ups per busy tick (a tick of the timer in
//!   which some sleep's deadline fell); see `busy`. With the alternative
//!   timer, tickwheel and tokio each run it again on a runtime built with
//!   it.
//! - W13 registrations during a burst: on a 2-worker runtime, 100,000
//!   tasks (20,000 with `--quick`) each await a sleep until one common
//!   instant (1 s after the first spawn, 0.3 s with `--quick`); from just
//!   before it until the last task has finished, a thread of its own (not a
//!   worker, in the runtime's context) makes a 1-3 ms sleep, polls it once
//!   and drops it, over and over (`tickwheel::time::sleep` on the runtime's
//!   default timer, or `tokio::time::sleep`). Per system: registrations
//!   (creation and first poll, timed together) measured in the burst, their
//!   p50 / p99 / p99.9 / max, how many saw the thread block or be
//!   preempted, the drops' p99.9 / max, the burst's length, sleeps early;
//!   see `registrations`.
//! - W14 a late first poll: a multi-thread runtime of 1 or 2 workers
//!   saturated by 1,000 tasks (50 us of work, then `yield_now`); one
//!   `tickwheel::Timer`; 200 tasks each make five pairs of a wheel sleep
//!   and a `tokio::time::sleep` of the same pseudo-random 5-11 ms, made
//!   together and awaited together, each through a waker that stamps its
//!   first call. With the late task (`w14-late-1`, `w14-late-2`), one more
//!   task loops on a 1 ms wheel sleep made, 3 ms of work, then the sleep
//!   awaited (its first poll after its tick); without it (`w14-base-1`,
//!   `w14-base-2`) the scene is the same otherwise. Lateness at the waker
//!   (that first call less `Instant::now() + d` read before the pair was
//!   made) p50 / p99 / max for each system's measured sleeps, both from the
//!   one child of each configuration (run as `tickwheel`); see
//!   `late_poll`.
//! - W10 an HTTP service under a real load generator: a
//!   hyper 1.x HTTP/1 server with keep-alive on a loopback port (the child)
//!   driven by `wrk -t2 -c<32|1000> -d10s --latency` (2 s with `--quick`),
//!   on a multi-thread runtime of 1 or 2 workers. hyper's timer (its
//!   header-read timeout), a 408 request deadline, a deadline around each
//!   backend call and the backend call itself (a pseudo-random 0-2 ms
//!   sleep) are tickwheel's (`Timer::current()` as `hyper::rt::Timer`,
//!   `http::TimeoutLayer`, `time::timeout`, `time::sleep`) or tokio's
//!   (hyper-util's `TokioTimer`, tower-http's `TimeoutLayer`,
//!   `tokio::time`). Configurations (`w10-<shape>-<workers>x<connections>`):
//!   the baseline shape on 1 and 2 workers x 32 and 1,000 connections; on
//!   2 workers x 1,000, the outlive shape (5% of calls outlive their 5 ms
//!   deadline, 1% of requests their 100 ms request deadline: 408) and the
//!   timer-heavy one (8 timers per request). Requests/s, server CPU per
//!   request, p50 / p99 latency (wrk's), peak RSS, deadlines fired and
//!   early, 408s and early ones; see `http` and `wrk`. A full W10 is 12
//!   children of about 10.5 s per repetition: about 10 minutes at 5
//!   repetitions.
//! - DQ1-DQ3 `tickwheel::DelayQueue` against tokio-util's `DelayQueue`: 1M
//!   items inserted then all expired (CPU, bytes per item, lateness),
//!   insert+remove churn and insert+reset churn (CPU per operation), with
//!   repetitions like the others. Their own table follows the main ones;
//!   see `delay_queue`.
//!
//! CPU time is the sum over the process's live threads of
//! `/proc/self/task/*/schedstat` (ns on CPU), so it counts pingora's clock
//! thread and tokio's workers.
//!
//! # Modules
//!
//! Each layer imports only from the layers below it (no import cycles):
//!
//! ```text
//! main          the parent (runs, report, charts) and the child (run_child)
//!  ├─ chart     text and SVG charts of the main table's ratios
//!  ├─ report    the two table shapes every workload fills in, the verdicts
//!  │   └─ goals      the performance goals as data, and their evaluator
//!  │       └─ results    figures by run and repetition, spreads, formatting
//!  │           └─ runs   the children of a repetition ── alt_timer
//!  ├─ options   the command line
//!  ├─ workloads (W1-W6), resets (W7), trickle (W8), task_sleeps (W9),
//!  │  http (W10) ── wrk, shards (W11: trickle, task_sleeps), busy (W12:
//!  │  trickle), registrations (W13), late_poll (W14: busy), delay_queue
//!  │  (DQ1-DQ3)
//!  │   └─ leaves: systems (Sys, Work, Sizes, Figures), rng, measure
//! ```
//!
//! The runtimes and the W1 future are shared with the criterion bench
//! (`benches/churn.rs`) through this crate's library, with the child's tick
//! and timer choice in its `settings`.

mod alt_timer;
mod busy;
mod chart;
mod delay_queue;
mod goals;
mod http;
mod late_poll;
mod measure;
mod options;
mod registrations;
mod report;
mod resets;
mod results;
mod rng;
mod runs;
mod shards;
mod systems;
mod task_sleeps;
mod trickle;
mod workloads;
mod wrk;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use alt_timer::AltTimer;
use options::{Child, Options, USAGE};
use report::{print_report, rows, Notes};
use results::Results;
use runs::{runs_of, Plan, Variant};
use systems::{Figures, Sizes, Sys, Work, FULL, QUICK};

/// The repository root: the workspace's lock file and default target
/// directory are there, not in this member's directory.
fn workspace_root() -> &'static Path {
    let member = Path::new(env!("CARGO_MANIFEST_DIR"));
    member.parent().unwrap_or(member)
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim())
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc ?".to_string());
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock")).unwrap_or_default();
    let version = |name: &str| {
        let marker = format!("name = \"{name}\"\nversion = \"");
        lock.find(&marker)
            .map(|at| {
                let rest = &lock[at + marker.len()..];
                rest[..rest.find('"').unwrap_or(0)].to_string()
            })
            .unwrap_or_else(|| "?".to_string())
    };
    format!(
        "{cores} cores, {model}; {rustc}; tokio {}, pingora-timeout {}, tokio-util {}",
        version("tokio"),
        version("pingora-timeout"),
        version("tokio-util")
    )
}

/// ns per `Instant::now()` (std's, and tokio's: std's clock behind tokio's
/// wrapper, as this crate builds tokio without `test-util`) and per `Arc`
/// clone and drop (two uncontended read-modify-writes, which tokio's timer
/// leans on more than tickwheel's: BENCHMARKS.md, the tenth stop).
fn host_costs() -> [f64; 3] {
    const N: u32 = 2_000_000;
    let time = |f: &dyn Fn()| {
        let start = Instant::now();
        for _ in 0..N {
            f();
        }
        start.elapsed().as_nanos() as f64 / f64::from(N)
    };
    let shared = std::sync::Arc::new(0u64);
    [
        time(&|| _ = black_box(Instant::now())),
        time(&|| _ = black_box(tokio::time::Instant::now())),
        time(&|| drop(black_box(std::sync::Arc::clone(&shared)))),
    ]
}

/// Runs `work` for `sys`: the one place that knows which file holds which
/// workload.
fn run_child(work: Work, sys: Sys, sizes: Sizes) -> Figures {
    let mut out = Figures::new();
    let out_ = &mut out;
    match work {
        Work::W1Ct => workloads::run_serial(sys, sizes, false, out_),
        Work::W1Mt => workloads::run_w1_mt(sys, sizes, out_),
        Work::W2 => workloads::run_serial(sys, sizes, true, out_),
        Work::W3 => workloads::run_w3(sys, sizes, out_),
        Work::W4 => workloads::run_w4(sys, sizes, out_),
        Work::W5 => workloads::run_w5(sys, sizes, out_),
        Work::W6 => workloads::run_w6(sys, sizes, out_),
        Work::W7 => resets::run_w7(sys, sizes, out_),
        Work::W8 => trickle::run_w8(sys, sizes, false, out_),
        Work::W8Mt => trickle::run_w8(sys, sizes, true, out_),
        Work::W9(tasks) => task_sleeps::run_w9(tasks, sys, sizes, out_),
        Work::W11(shards) => shards::run_w11(shards, sys, sizes, out_),
        Work::W12(busy) => busy::run_w12(busy, sys, sizes, out_),
        Work::W13 => registrations::run_w13(sys, sizes, out_),
        Work::W14(late) => late_poll::run_w14(late, sys, out_),
        Work::W10(http) => http::run_w10(http, sys, sizes, out_),
        Work::Dq1 | Work::Dq2 | Work::Dq3 => delay_queue::run_dq(work, sys, sizes, out_),
    }
    out
}

/// A child: apply its settings, run its workload, print its figures.
fn child(child: Child, quick: bool) -> ExitCode {
    if let Some(ms) = child.tick_ms {
        if let Err(e) = tickwheel_bench::settings::set_tick(Duration::from_millis(ms.into())) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    if child.alt_timer {
        if let Err(e) = tickwheel_bench::settings::use_alt_timer() {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    let sizes = if quick { QUICK } else { FULL };
    if matches!(child.work, Work::W10(_)) && !wrk::installed() {
        eprintln!("W10: {}", wrk::SKIPPED);
        return ExitCode::FAILURE;
    }
    for (key, value) in run_child(child.work, child.sys, sizes) {
        println!("{key}={value}");
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match options::parse(&args) {
        Ok(options) => options,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    };
    let quick = options.quick;
    if options.goals {
        print!("{}", goals::markdown());
        return ExitCode::SUCCESS;
    }
    if let Some(c) = options.child {
        return child(c, quick);
    }
    parent(&options)
}

/// The parent: every run, repetition after repetition; then the report,
/// the goals' verdicts and the charts.
fn parent(options: &Options) -> ExitCode {
    let quick = options.quick;
    let sizes = if quick { QUICK } else { FULL };
    let reps = options.reps.unwrap_or(sizes.reps);
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("cannot find this program to run its children: {e}");
            return ExitCode::FAILURE;
        }
    };

    let [std_now_ns, tokio_now_ns, arc_ns] = host_costs();
    let machine = machine();
    let started = Instant::now();
    // The second build is as long as the first when not up to date: not
    // worth it for a smoke run, unless asked for.
    let alt = if options.alt_timer.unwrap_or(!quick) {
        eprintln!(
            "building the compare child for tokio's alternative timer (--cfg tokio_unstable) ..."
        );
        alt_timer::build(workspace_root(), &target_dir)
    } else {
        AltTimer::Unavailable(
            "not measured: skipped (the default with --quick; --alt-timer to include it)".into(),
        )
    };
    eprintln!("tokio alt timer: {}", alt.status());
    let plan = Plan {
        w6_tick_ms: options.w6_tick_ms,
        alt_timer: alt.exe().is_some(),
    };
    let title = format!(
        "tickwheel compare{} - {machine}\n\
         Instant::now(): std {std_now_ns:.1} ns, tokio::time {tokio_now_ns:.1} ns; \
         an Arc clone and drop {arc_ns:.1} ns",
        if quick { " --quick" } else { "" },
    );
    eprintln!("{title}\n{reps} repetitions, the systems taking turns within each");

    let mut results = Results::new(reps);
    let mut failures = Vec::new();
    let (works, w10) = plan_works(options.workloads.as_deref(), quick, wrk::installed());
    if let Some(note) = &w10 {
        eprintln!("W10: {note}");
    }
    for group in runs::turns(&works) {
        for rep in 0..reps {
            for &work in &group {
                eprint!("  {} rep {}/{reps}:", work.name(), rep + 1);
                for (i, &run) in runs_of(work, &plan).iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    let child_exe = match run.variant {
                        Variant::AltTimer => alt.exe().unwrap_or(&exe),
                        _ => &exe,
                    };
                    let t = Instant::now();
                    match runs::spawn(run, child_exe, quick) {
                        Ok(figures) => {
                            eprint!("{sep}{} {:.1} s", run.label(), t.elapsed().as_secs_f64());
                            results.insert(run, rep, figures);
                        }
                        Err(e) => {
                            eprint!("{sep}{} FAILED", run.label());
                            failures.push(format!("repetition {}: {e}", rep + 1));
                        }
                    }
                }
                eprintln!();
            }
        }
    }

    let rows = rows(&results, options.w6_tick_ms);
    let verdicts = goals::verdicts(&results, options.w6_tick_ms);
    let header = format!(
        "{title}\nW3/W4/W6 size: {} timers; {reps} repetitions; total run {:.0} s",
        sizes.mass,
        started.elapsed().as_secs_f64()
    );
    let notes = Notes {
        header: &header,
        w6_tick_ms: options.w6_tick_ms,
        alt_timer: alt.status(),
        w10: w10.as_deref(),
    };
    println!("{}", print_report(&results, &rows, &verdicts, &notes));
    for failure in &failures {
        println!("FAILED: {failure}");
    }
    // A run of a few workloads (`--workloads`) leaves the charts of the
    // last full run as they are: its rows would be mostly empty.
    if options.workloads.is_none() {
        charts(&rows, &target_dir, reps, quick, &machine, &mut failures);
    } else {
        println!("charts: not drawn for a run of some workloads (--workloads)");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The workloads to run: those `--workloads` names (all of them without
/// it), less W10 where wrk is not installed, and less W10 under `--quick`
/// unless `--workloads` names it (CI's smoke run needs no wrk); with why W10
/// was left out, if it was.
fn plan_works(
    selected: Option<&[Work]>,
    quick: bool,
    wrk_installed: bool,
) -> (Vec<Work>, Option<String>) {
    let works = selected.map_or(Work::ALL.to_vec(), <[Work]>::to_vec);
    let is_w10 = |w: &Work| matches!(w, Work::W10(_));
    if !works.iter().any(is_w10) {
        return (works, None);
    }
    let note = if !wrk_installed {
        wrk::SKIPPED.to_string()
    } else if quick && selected.is_none() {
        "skipped under --quick (--workloads w10 to run it)".to_string()
    } else {
        return (works, None);
    };
    (
        works.into_iter().filter(|w| !is_w10(w)).collect(),
        Some(note),
    )
}

/// The text and SVG charts of the W1-W7 ratios, in `target_dir`.
fn charts(
    rows: &[report::Row],
    target_dir: &Path,
    reps: usize,
    quick: bool,
    machine: &str,
    failures: &mut Vec<String>,
) {
    let _ = std::fs::create_dir_all(target_dir);
    let caption = format!(
        "vs tokio::time, medians of {reps} repetitions{}: {}",
        if quick { ", --quick" } else { "" },
        machine
            .split("; ")
            .filter(|part| !part.starts_with("rustc"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let text = chart::text_chart(rows);
    println!("{text}");
    let txt = target_dir.join("compare.txt");
    match std::fs::write(&txt, &text) {
        Ok(()) => println!("text chart: {}", txt.display()),
        Err(e) => failures.push(format!("writing {}: {e}", txt.display())),
    }
    let svg = target_dir.join("compare.svg");
    match chart::chart(rows, &svg, &caption) {
        Ok(()) => println!("chart: {}", svg.display()),
        Err(e) => {
            println!("chart failed: {e}");
            failures.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::Http;

    fn w10s(works: &[Work]) -> usize {
        works.iter().filter(|w| matches!(w, Work::W10(_))).count()
    }

    #[test]
    fn w10_runs_where_wrk_is_and_under_quick_only_when_named() {
        // A full run with wrk: every workload, W10 too.
        let (all, note) = plan_works(None, false, true);
        assert_eq!((all.len(), w10s(&all), note), (Work::ALL.len(), 6, None));
        // Without wrk: the rest, and the message.
        let (rest, note) = plan_works(None, false, false);
        assert_eq!((rest.len(), w10s(&rest)), (Work::ALL.len() - 6, 0));
        assert_eq!(
            note.as_deref(),
            Some("skipped: wrk not installed (bench/scripts/install-wrk.sh)")
        );
        // --quick (CI's smoke run): no W10, wrk or not.
        let (quick, note) = plan_works(None, true, true);
        assert_eq!(w10s(&quick), 0);
        assert!(note.unwrap().starts_with("skipped under --quick"));
        // --quick --workloads naming W10: run, if wrk is there.
        let named = [Work::W8, Work::W10(Http::HEAVY_2X1000)];
        let (works, note) = plan_works(Some(&named), true, true);
        assert_eq!((works, note), (named.to_vec(), None));
        let (works, note) = plan_works(Some(&named), true, false);
        assert_eq!(works, [Work::W8]);
        assert!(note.unwrap().starts_with("skipped: wrk not installed"));
        // No W10 asked for: no note.
        assert_eq!(plan_works(Some(&[Work::W8]), true, false).1, None);
    }
}
