//! Every workload of the comparison (W1-W6), for tickwheel, `tokio::time` and `pingora-timeout`,
//! in one run: a table of absolute figures and ratios against `tokio::time`,
//! a MET/MISSED line per target, and an SVG chart of the ratios.
//!
//! ```text
//! cargo run --release -p tickwheel-bench            # full run, a few minutes
//! cargo run --release -p tickwheel-bench -- --quick # smaller sizes, for development and CI
//! ```
//!
//! Each (workload, system) pair runs in its own child process (this binary
//! re-executed with `--child <workload> <system>`), so one system's threads,
//! caches, clock thread (pingora starts one that never stops) and heap never
//! leak into another's figures. A child prints `key=value` lines; the parent
//! collects them.
//!
//! Workloads:
//!
//! - W1 `timeout(5 s, f)`, `f` pending once (waking itself) then ready:
//!   current-thread runtime, and 64 tasks on a 2-worker runtime. `floor` is
//!   `f` awaited alone. Best of several rounds, ns per operation.
//! - W2 create a 5 s sleep, poll it once, drop it. `floor` polls a boxed
//!   16-byte ready future instead. tickwheel runs it twice: through a held
//!   `Timer` handle (`timer.sleep`), and as `ambient` through
//!   `tickwheel::time::sleep` on the runtime's default timer (no handle
//!   held); the report gives the ratio of their overheads.
//! - W3 1M sleeps due 0.1-1.1 s after creation (pseudo-random order),
//!   registered by polling each once with one shared counting waker, all
//!   fired, then polled to completion and dropped: process CPU time over the
//!   whole, and bytes per pending timer (the element the caller stores plus
//!   the live-heap growth per timer, from a counting global allocator).
//! - W4 registration (`sleep(d)` + first poll, kept registered; `d` 1-5 s) in
//!   chunks of 1,000 dropped untimed, with 0 and with 1M timers already
//!   pending (due 10-1000 s out). Best of several rounds.
//! - W5 a 2-worker runtime idle for 5 s after its one timer fired: driver
//!   wake-ups (tickwheel's `stats().wakeups`), context switches of all the
//!   process's threads, process CPU time.
//! - W6 1M timers due 1-2 s after registration started, on a 2-worker runtime
//!   in real time; each timer's own waker stamps the time it is woken, so
//!   lateness = wake time - deadline (the timer's own lateness, without the
//!   scheduling of the woken task, which all systems share).
//! - DQ1-DQ3 `tickwheel::DelayQueue` against tokio-util's `DelayQueue`: 1M
//!   items inserted then all expired (CPU, bytes per item, lateness),
//!   insert+remove churn and insert+reset churn (CPU per operation). Their
//!   own table and targets follow the main ones; see `delay_queue`.
//!
//! CPU time is the sum over the process's live threads of
//! `/proc/self/task/*/schedstat` (ns on CPU), so it counts pingora's clock
//! thread and tokio's workers.
//!
//! Files: `systems` (who and what is measured, at which sizes), `workloads`
//! (W1 to W6, run in a child), `delay_queue` (DQ1 to DQ3 and their table), `measure` (the counting allocator, CPU time
//! and context switches), `report` (the table and the targets), `chart` (the
//! SVG); the runtimes and the W1 future are shared with the criterion bench
//! (`benches/churn.rs`) through this crate's library.

mod chart;
mod delay_queue;
mod measure;
mod report;
mod resets;
mod systems;
mod workloads;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::process::{Command, ExitCode};
use std::time::Instant;

use report::{print_report, rows, targets, Results};
use systems::{Figures, Sys, Work, FULL, QUICK};
use workloads::run_child;

// ---------------------------------------------------------------------------
// The parent: run every child, print, check, chart

fn spawn_child(work: Work, sys: Sys, quick: bool) -> Result<Figures, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(["--child", work.name(), sys.name()]);
    if quick {
        cmd.arg("--quick");
    }
    let output = cmd.output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{} {} failed ({}): {}",
            work.name(),
            sys.name(),
            output.status,
            stderr.lines().last().unwrap_or("")
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut figures = Figures::new();
    for line in stdout.lines() {
        if let Some((key, value)) = line.split_once('=') {
            if let Ok(value) = value.trim().parse() {
                figures.insert(key.trim().to_string(), value);
            }
        }
    }
    Ok(figures)
}

/// The repository root: the workspace's lock file and default target
/// directory are there, not in this member's directory.
fn workspace_root() -> &'static std::path::Path {
    let member = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
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
        "{cores} cores, {model}; {rustc}; tokio {}, pingora-timeout {}",
        version("tokio"),
        version("pingora-timeout")
    )
}

/// ns per `Instant::now()`: std's, and tokio's (this crate builds tokio
/// without `test-util`, so it is std's clock behind tokio's wrapper).
fn clock_costs() -> (f64, f64) {
    const N: u32 = 2_000_000;
    let time = |f: &dyn Fn()| {
        let start = Instant::now();
        for _ in 0..N {
            f();
        }
        start.elapsed().as_nanos() as f64 / f64::from(N)
    };
    let std_ns = time(&|| {
        black_box(Instant::now());
    });
    let tokio_ns = time(&|| {
        black_box(tokio::time::Instant::now());
    });
    (std_ns, tokio_ns)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let sizes = if quick { QUICK } else { FULL };

    if let Some(at) = args.iter().position(|a| a == "--child") {
        let (Some(work), Some(sys)) = (
            args.get(at + 1).and_then(|w| Work::parse(w)),
            args.get(at + 2).and_then(|s| Sys::parse(s)),
        ) else {
            eprintln!(
                "usage: compare --child <w1ct|w1mt|w2|w3|w4|w5|w6|w7|dq1|dq2|dq3> <floor|tickwheel|ambient|tokio|pingora>"
            );
            return ExitCode::FAILURE;
        };
        for (key, value) in run_child(work, sys, sizes) {
            println!("{key}={value}");
        }
        return ExitCode::SUCCESS;
    }

    let (std_ns, tokio_ns) = clock_costs();
    let machine = machine();
    let header = format!(
        "tickwheel compare{} - {}\nInstant::now(): std {std_ns:.1} ns, tokio::time {tokio_ns:.1} ns",
        if quick { " --quick" } else { "" },
        machine
    );
    eprintln!("{header}");
    let started = Instant::now();
    let mut results = Results(BTreeMap::new());
    let mut failures = Vec::new();
    for work in Work::ALL {
        for &sys in work.systems() {
            eprint!("  {} {} ... ", work.name(), sys.name());
            let t = Instant::now();
            match spawn_child(work, sys, quick) {
                Ok(figures) => {
                    eprintln!("{:.1} s", t.elapsed().as_secs_f64());
                    results.0.insert((work.name(), sys.name()), figures);
                }
                Err(e) => {
                    eprintln!("FAILED");
                    failures.push(e);
                }
            }
        }
    }
    let rows = rows(&results);
    let targets = targets(&results);
    let n = if quick { QUICK.mass } else { FULL.mass };
    let header = format!(
        "{header}\nW3/W4/W6 size: {n} timers; total run {:.0} s",
        started.elapsed().as_secs_f64()
    );
    println!("{}", print_report(&results, &rows, &targets, &header));
    println!("{}", delay_queue::report(&results));
    for failure in &failures {
        println!("FAILED: {failure}");
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let _ = std::fs::create_dir_all(&target_dir);
    let svg = target_dir.join("compare.svg");
    let caption = format!(
        "tickwheel and pingora-timeout vs tokio::time{}: {}",
        if quick { ", --quick" } else { "" },
        machine
            .split("; ")
            .filter(|part| !part.starts_with("rustc"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let text = chart::text_chart(&rows);
    println!("{text}");
    let txt = target_dir.join("compare.txt");
    match std::fs::write(&txt, &text) {
        Ok(()) => println!("text chart: {}", txt.display()),
        Err(e) => failures.push(format!("writing {}: {e}", txt.display())),
    }
    match chart::chart(&rows, &svg, &caption) {
        Ok(()) => println!("chart: {}", svg.display()),
        Err(e) => {
            println!("chart failed: {e}");
            failures.push(e);
        }
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
