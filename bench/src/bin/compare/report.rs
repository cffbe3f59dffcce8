//! The parent's report: the table of figures (min / median / max over the
//! repetitions) with the ratios of the medians to `tokio::time`'s, the W1
//! 2-worker figures per repetition, W8's, W9's, W11's, W12's and W13's
//! tables, and the targets.

use std::fmt::Write as _;

use crate::results::{fmt_opt, fmt_spread, paired, ratio, PerRep, Results, Spread};
use crate::runs::{Run, Variant};
use crate::systems::{Busy, Http, Shards, Sys, TaskSleeps, Work};
use crate::targets::{self, Target};

/// A column of the table: a timer as measured in the default rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Column {
    Tickwheel,
    Tokio,
    TokioAlt,
    Pingora,
}

impl Column {
    pub const ALL: [Column; 4] = [
        Column::Tickwheel,
        Column::Tokio,
        Column::TokioAlt,
        Column::Pingora,
    ];

    pub fn header(self) -> &'static str {
        match self {
            Column::Tickwheel => "tickwheel",
            Column::Tokio => "tokio::time",
            Column::TokioAlt => "tokio alt timer",
            Column::Pingora => "pingora-timeout",
        }
    }

    /// The runs that fill this column.
    pub fn source(self) -> (Sys, Variant) {
        match self {
            Column::Tickwheel => (Sys::Tickwheel, Variant::Plain),
            Column::Tokio => (Sys::Tokio, Variant::Plain),
            Column::TokioAlt => (Sys::Tokio, Variant::AltTimer),
            Column::Pingora => (Sys::Pingora, Variant::Plain),
        }
    }
}

/// One table row: a figure per column.
pub struct Row {
    pub label: String,
    pub short: String,
    pub unit: &'static str,
    pub digits: usize,
    /// Indexed by `Column as usize`.
    pub values: [Option<Spread>; 4],
    pub charted: bool,
    /// The ratio to tokio's median that a target asks of tickwheel's, drawn
    /// on the chart.
    pub target: Option<f64>,
}

impl Row {
    pub fn median(&self, column: Column) -> Option<f64> {
        Some(self.values[column as usize]?.median)
    }

    /// The ratio of `column`'s median to tokio's.
    pub fn ratio_to_tokio(&self, column: Column) -> Option<f64> {
        ratio(self.median(column), self.median(Column::Tokio))
    }
}

/// A row whose every column comes from `f(system, variant)`.
fn row(
    label: &str,
    short: &str,
    unit: &'static str,
    digits: usize,
    f: &dyn Fn(Sys, Variant) -> Option<Spread>,
) -> Row {
    Row {
        label: label.to_string(),
        short: short.to_string(),
        unit,
        digits,
        values: Column::ALL.map(|c| {
            let (sys, variant) = c.source();
            f(sys, variant)
        }),
        charted: false,
        target: None,
    }
}

impl Row {
    fn charted(mut self) -> Row {
        self.charted = true;
        self
    }

    fn target(mut self, ratio: f64) -> Row {
        self.target = Some(ratio);
        self
    }
}

/// `w6_tick_ms`: the tick of W6's second tickwheel run.
pub fn rows(r: &Results, w6_tick_ms: u32) -> Vec<Row> {
    let get = |work, key: &'static str| {
        move |sys: Sys, variant: Variant| r.spread(work, sys, variant, key)
    };
    let overhead = |work| move |sys: Sys, variant: Variant| r.overhead_spread(work, sys, variant);
    let mut rows = vec![
        row(
            "W1 timeout overhead, current-thread",
            "W1 ct",
            "ns/op",
            1,
            &overhead(Work::W1Ct),
        )
        .charted()
        .target(targets::W1_CT_MAX),
        row(
            "W1 64 tasks on 2 workers",
            "W1 mt",
            "ns/op",
            1,
            &get(Work::W1Mt, "ns_per_op"),
        )
        .charted()
        .target(targets::W1_MT_MAX),
        // tickwheel's column: the same W1 with tickwheel on a runtime with
        // tokio's alternative timer (its driver's alarm on that timer), to
        // set beside tokio's alternative timer; the others repeat their W1.
        row(
            "W1 64 tasks on 2 workers, tickwheel on an alt-timer runtime",
            "W1 mt alt",
            "ns/op",
            1,
            &|sys, variant| match sys {
                Sys::Tickwheel => r.spread(Work::W1Mt, sys, Variant::AltTimer, "ns_per_op"),
                _ => r.spread(Work::W1Mt, sys, variant, "ns_per_op"),
            },
        ),
        row(
            "W2 create+register+drop overhead",
            "W2",
            "ns/op",
            1,
            &overhead(Work::W2),
        )
        .charted()
        .target(targets::W2_MAX),
        // tickwheel's column: the same W2 through `tickwheel::time::sleep`
        // on the runtime's default timer (no handle held); the others repeat
        // their W2 overhead, for the ratios.
        row(
            "W2 overhead via tickwheel::time::sleep (ambient)",
            "W2 amb",
            "ns/op",
            1,
            &|sys, variant| match sys {
                Sys::Tickwheel => r.overhead_spread(Work::W2, Sys::Ambient, variant),
                _ => r.overhead_spread(Work::W2, sys, variant),
            },
        ),
        row(
            "W3 CPU to register and fire 1M",
            "W3 CPU",
            "s",
            3,
            &get(Work::W3, "cpu_s"),
        )
        .charted()
        .target(targets::W3_CPU_MAX),
        row(
            "W3 register, wall",
            "W3 reg",
            "ns/timer",
            0,
            &get(Work::W3, "register_ns"),
        ),
        row(
            "W3 memory per pending timer",
            "W3 mem",
            "B",
            1,
            &get(Work::W3, "bytes_per_timer"),
        )
        .charted(),
        row(
            "W4 register, 0 pending",
            "W4 0",
            "ns/op",
            1,
            &get(Work::W4, "register_ns_0"),
        )
        .target(targets::W4_MAX),
        row(
            "W4 register, 1M pending",
            "W4 1M",
            "ns/op",
            1,
            &get(Work::W4, "register_ns_1m"),
        )
        .charted()
        .target(targets::W4_MAX),
        row("W5 idle CPU", "W5 CPU", "ms", 2, &get(Work::W5, "cpu_ms")).charted(),
        row(
            "W5 memory of an idle timer (2 workers)",
            "W5 mem",
            "B",
            0,
            &get(Work::W5, "timer_bytes"),
        ),
        row(
            "W5 idle context switches",
            "W5 ctx",
            "",
            0,
            &get(Work::W5, "context_switches"),
        ),
        row(
            "W6 lateness p50",
            "W6 p50",
            "ms",
            2,
            &get(Work::W6, "p50_ms"),
        ),
        row(
            "W6 lateness p99",
            "W6 p99",
            "ms",
            2,
            &get(Work::W6, "p99_ms"),
        )
        .charted()
        .target(targets::W6_P99_MAX),
        row(
            "W6 lateness max",
            "W6 max",
            "ms",
            2,
            &get(Work::W6, "max_ms"),
        ),
        row("W6 early fires", "W6 early", "", 0, &get(Work::W6, "early")),
    ];
    // W6 again with tickwheel at the second tick (10 ms, its old default,
    // unless `--w6-tick-ms` says otherwise), beside tokio's W6 figures:
    // tokio's timers (both) have a 1 ms resolution whatever tickwheel's tick,
    // so they repeat their own figures; pingora's resolution is 10 ms
    // whatever the row, so it is left to the default rows.
    let fine = |key: &'static str| {
        move |sys: Sys, variant: Variant| match (sys, variant) {
            (Sys::Tickwheel, _) => r.spread(Work::W6, sys, Variant::TickMs(w6_tick_ms), key),
            (Sys::Tokio, _) => r.spread(Work::W6, sys, variant, key),
            _ => None,
        }
    };
    let label = |what: &str| format!("W6 {what}, tickwheel at {w6_tick_ms} ms tick");
    let short = format!("W6 {w6_tick_ms}ms");
    rows.extend([
        row(&label("lateness p50"), &short, "ms", 2, &fine("p50_ms")),
        row(&label("lateness p99"), &short, "ms", 2, &fine("p99_ms")).charted(),
        row(&label("lateness max"), &short, "ms", 2, &fine("max_ms")),
        row(&label("early fires"), &short, "", 0, &fine("early")),
        row(
            "W7 idle-timeout reset, 2 workers",
            "W7",
            "ns/reset",
            1,
            &get(Work::W7, "ns_per_reset"),
        )
        .charted()
        .target(targets::W7_MAX),
        row(
            "W13 registration during a burst of wake-ups, p99.9",
            "W13 p99.9",
            "us",
            2,
            &get(Work::W13, "reg_p999_us"),
        )
        .target(targets::W13_P999_MAX),
        row(
            "W13 registration during a burst of wake-ups, max",
            "W13 max",
            "us",
            1,
            &get(Work::W13, "reg_max_us"),
        ),
    ]);
    rows
}

/// What the report says beside the table.
pub struct Notes<'a> {
    pub header: &'a str,
    /// The tick of W6's and W8's second tickwheel run.
    pub w6_tick_ms: u32,
    /// Where the alternative timer's column comes from, or why it is empty.
    pub alt_timer: &'a str,
    /// Why W10 did not run, if it did not.
    pub w10: Option<&'a str>,
}

pub fn print_report(r: &Results, rows: &[Row], targets: &[Target], notes: &Notes<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", notes.header);
    let headers: Vec<&str> = Column::ALL.iter().map(|c| c.header()).collect();
    let _ = writeln!(
        s,
        "| workload | unit | {} | tickwheel / tokio | tickwheel / tokio alt | pingora / tokio |",
        headers.join(" | ")
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let cells: Vec<String> = row
            .values
            .iter()
            .map(|&v| fmt_spread(v, row.digits))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            row.label,
            row.unit,
            cells.join(" | "),
            fmt_opt(row.ratio_to_tokio(Column::Tickwheel), 2),
            fmt_opt(
                ratio(row.median(Column::Tickwheel), row.median(Column::TokioAlt)),
                2
            ),
            fmt_opt(row.ratio_to_tokio(Column::Pingora), 2),
        );
    }
    let _ = writeln!(
        s,
        "\nEach figure is min / median / max over {} repetitions (one value where they agree), \
         the systems taking turns within each repetition; ratios are of the medians.",
        r.reps
    );
    let floors =
        [Work::W1Ct, Work::W1Mt, Work::W2].map(|w| fmt_opt(r.get(w, Sys::Floor, "ns_per_op"), 1));
    let _ = writeln!(
        s,
        "Floors (no timer), median ns/op: W1 current-thread {}, W1 64 tasks {}, W2 {}. \
         W1 current-thread and W2 rows are overhead above the floor of the same repetition.",
        floors[0], floors[1], floors[2]
    );
    let _ = writeln!(
        s,
        "W2 ambient: tickwheel's column is W2 through tickwheel::time::sleep on the runtime's \
         default timer (no handle held); the other columns repeat their W2 overhead."
    );
    let _ = writeln!(
        s,
        "W6: tickwheel at its default {} ms tick; the rows at {} ms tick are tickwheel built \
         with that tick, for comparison (not judged), where the tokio columns repeat their W6 \
         figures (their resolution is 1 ms either way) and pingora (10 ms resolution) has none.",
        tickwheel::Builder::DEFAULT_TICK.as_millis(),
        notes.w6_tick_ms
    );
    let _ = writeln!(
        s,
        "W1 on an alt-timer runtime: tickwheel's column is W1 on 2 workers with tickwheel on a \
         runtime built with tokio's alternative timer (its driver's alarm on that timer); the \
         other columns repeat their W1, so tickwheel / tokio alt compares the two on that \
         timer. W13: registrations on a thread of their own while 100k sleeps (20k with \
         --quick) due at one instant fire (see its table)."
    );
    let _ = writeln!(s, "tokio alt timer: {}", notes.alt_timer);
    for (sys, variant) in [
        (Sys::Tickwheel, Variant::Plain),
        (Sys::Tickwheel, Variant::TickMs(notes.w6_tick_ms)),
        (Sys::Tokio, Variant::Plain),
        (Sys::Tokio, Variant::AltTimer),
        (Sys::Pingora, Variant::Plain),
    ] {
        let late = r.per_rep(Work::W6, sys, variant, "registered_before_first_deadline");
        let reps: Vec<String> = late
            .iter()
            .filter(|&(_, &v)| v == 0.0)
            .map(|(rep, _)| (rep + 1).to_string())
            .collect();
        if !reps.is_empty() {
            let _ = writeln!(
                s,
                "W6 warning: {} took longer to register its timers than the lead before the \
                 first deadline in repetition(s) {}; its lateness includes that delay.",
                Run {
                    work: Work::W6,
                    sys,
                    variant
                }
                .label(),
                reps.join(", ")
            );
        }
    }
    s.push_str(&w1_mt_per_rep(r));
    s.push_str(&w8_table(r, notes.w6_tick_ms));
    s.push_str(&w9_table(r));
    s.push_str(&w11_table(r));
    s.push_str(&w12_table(r));
    s.push_str(&w13_table(r));
    s.push_str(&w10_table(r, notes.w10));
    s.push_str(&targets::table(targets));
    s
}

/// W1 on 2 workers, repetition by repetition: ns/op, with the CPUs the
/// process kept busy and the CPUs its runnable threads waited for (other
/// work on the machine), so a slow repetition shows whether it lost a core;
/// the table's columns, then tickwheel on an alt-timer runtime.
fn w1_mt_per_rep(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nW1 64 tasks on 2 workers, per repetition: ns/op (CPUs busy, CPUs waited for)\n"
    );
    let tickwheel_alt = (Sys::Tickwheel, Variant::AltTimer);
    let sources: Vec<(Sys, Variant)> = Column::ALL
        .iter()
        .map(|c| c.source())
        .chain([tickwheel_alt])
        .collect();
    let headers: Vec<&str> = Column::ALL.iter().map(|c| c.header()).collect();
    let _ = writeln!(
        s,
        "| rep | {} | tickwheel on alt timer | tickwheel / tokio | \
         tickwheel / tokio alt (both on alt timer) |",
        headers.join(" | ")
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    let figure = |(sys, variant): (Sys, Variant), key| r.per_rep(Work::W1Mt, sys, variant, key);
    let tw = figure(Column::Tickwheel.source(), "ns_per_op");
    let tokio = figure(Column::Tokio.source(), "ns_per_op");
    let tw_alt = figure(tickwheel_alt, "ns_per_op");
    let tokio_alt = figure(Column::TokioAlt.source(), "ns_per_op");
    for rep in 0..r.reps {
        let cells: Vec<String> = sources
            .iter()
            .map(|&source| {
                let at = |key| figure(source, key).get(&rep).copied();
                match at("ns_per_op") {
                    None => "-".to_string(),
                    Some(ns) => format!(
                        "{ns:.1} ({}, {})",
                        fmt_opt(at("parallelism"), 2),
                        fmt_opt(at("cpus_waited_for"), 2)
                    ),
                }
            })
            .collect();
        let at = |figures: &PerRep| figures.get(&rep).copied();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            rep + 1,
            cells.join(" | "),
            fmt_opt(ratio(at(&tw), at(&tokio)), 2),
            fmt_opt(ratio(at(&tw_alt), at(&tokio_alt)), 2)
        );
    }
    let ratios: Vec<f64> = paired(&tw, &tokio)
        .into_iter()
        .map(|(_, t, k)| t / k)
        .collect();
    if let Some(spread) = Spread::of(ratios) {
        let _ = writeln!(
            s,
            "\ntickwheel / tokio per repetition: {}",
            fmt_spread(Some(spread), 2)
        );
    }
    let alt_ratios: Vec<f64> = paired(&tw_alt, &tokio_alt)
        .into_iter()
        .map(|(_, t, k)| t / k)
        .collect();
    if let Some(spread) = Spread::of(alt_ratios) {
        let _ = writeln!(
            s,
            "tickwheel / tokio alt per repetition, both on tokio's alternative timer: {}",
            fmt_spread(Some(spread), 2)
        );
    }
    s
}

/// W8, the trickle: tickwheel at its default tick and at `tick_ms`, and
/// tokio, each figure min / median / max over the repetitions.
fn w8_table(r: &Results, tick_ms: u32) -> String {
    let mut s = String::new();
    let registered = r.spread(Work::W8, Sys::Tokio, Variant::Plain, "registered");
    let _ = writeln!(
        s,
        "\nW8 trickle: {} sleeps of 1-50 ms, one registered every ms on a current-thread \
         runtime and on 2 workers (paced by a tokio interval, the same for every system), \
         each awaited by a task of its own. CPU: the process's, from the first registration \
         to the last fire; driver wake-ups: tickwheel's Stats::wakeups, per second and per \
         busy tick (a tick with a sleep due); lateness: the awaiting task's resumption less \
         the deadline.\n",
        fmt_opt(registered.map(|s| s.median), 0)
    );
    let _ = writeln!(
        s,
        "| system | CPU s | CPU / tokio (medians) | driver wake-ups/s | wake-ups per busy tick \
         | fired | early | lateness p50 ms | p90 ms | p99 ms |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let default_tick = tickwheel::Builder::DEFAULT_TICK.as_millis();
    for (work, label, sys, variant) in [
        (
            Work::W8,
            format!("current-thread: tickwheel, {default_tick} ms tick (default)"),
            Sys::Tickwheel,
            Variant::Plain,
        ),
        (
            Work::W8,
            format!("current-thread: tickwheel, {tick_ms} ms tick"),
            Sys::Tickwheel,
            Variant::TickMs(tick_ms),
        ),
        (
            Work::W8,
            "current-thread: tokio::time".to_string(),
            Sys::Tokio,
            Variant::Plain,
        ),
        (
            Work::W8Mt,
            format!("2 workers: tickwheel, {default_tick} ms tick (default)"),
            Sys::Tickwheel,
            Variant::Plain,
        ),
        (
            Work::W8Mt,
            "2 workers: tokio::time".to_string(),
            Sys::Tokio,
            Variant::Plain,
        ),
    ] {
        let figure = |key| r.spread(work, sys, variant, key);
        let cpu = figure("cpu_s");
        let tokio_cpu = r.spread(work, Sys::Tokio, Variant::Plain, "cpu_s");
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            fmt_spread(cpu, targets::W8_CPU_DIGITS),
            fmt_opt(ratio(cpu.map(|c| c.median), tokio_cpu.map(|c| c.median)), 2),
            fmt_spread(figure("wakeups_per_s"), 0),
            fmt_spread(figure("wakeups_per_busy_tick"), 2),
            fmt_spread(figure("fired"), 0),
            fmt_spread(figure("early"), 0),
            fmt_spread(figure("late_p50_ms"), 2),
            fmt_spread(figure("late_p90_ms"), 2),
            fmt_spread(figure("late_p99_ms"), 2),
        );
    }
    s
}

/// W9, a task per sleep: per runtime, the floor, tickwheel and tokio, each
/// figure min / median / max over the repetitions.
fn w9_table(r: &Results) -> String {
    let mut s = String::new();
    let plain = Variant::Plain;
    let size = |key| {
        TaskSleeps::ALL
            .into_iter()
            .find_map(|tasks| r.get(Work::W9(tasks), Sys::Tokio, key))
    };
    let _ = writeln!(
        s,
        "\nW9 task per sleep: {} tasks, each awaiting one sleep of up to {} ms \
         (tickwheel::time::sleep on the runtime's default timer, or tokio::time::sleep), in \
         three shapes: spawned by a task and counted down to a Notify (pseudo-random \
         deadlines), and spawned from block_on and collected by a JoinSet or counted down to a \
         Notify (task i sleeping 1 ms + (i x 7919 us mod the spread)); the floor's tasks await \
         instead a future pending once that wakes its own task. CPU: the process's, from the first spawn to the last task's end; above \
         the floor: CPU per task less the floor's of the same repetition. W3's sleeps are never \
         re-polled or dropped by a task that awaited them: W9 is the headline for sleeps \
         awaited by tasks.\n",
        fmt_opt(size("tasks"), 0),
        fmt_opt(size("spread_ms"), 0),
    );
    let _ = writeln!(
        s,
        "| runtime | shape | system | CPU s | CPU ns per task | above the floor, ns per sleep | \
         above the floor / tokio's (medians) | early |"
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|");
    for tasks in TaskSleeps::ALL {
        let (work, runtime, shape) = (Work::W9(tasks), tasks.runtime(), tasks.label());
        let key = "cpu_ns_per_op";
        let tokio = r.overhead_spread_of(work, Sys::Tokio, plain, key);
        for (sys, label) in [
            (Sys::Floor, "floor (no timer)"),
            (Sys::Tickwheel, "tickwheel"),
            (Sys::Tokio, "tokio::time"),
        ] {
            let overhead = r.overhead_spread_of(work, sys, plain, key);
            let (above, to_tokio) = if sys == Sys::Floor {
                ("-".to_string(), "-".to_string())
            } else {
                (
                    fmt_spread(overhead, 0),
                    fmt_opt(
                        ratio(overhead.map(|o| o.median), tokio.map(|t| t.median)),
                        2,
                    ),
                )
            };
            let _ = writeln!(
                s,
                "| {runtime} | {shape} | {label} | {} | {} | {above} | {to_tokio} | {} |",
                fmt_spread(r.spread(work, sys, plain, "cpu_s"), 4),
                fmt_spread(r.spread(work, sys, plain, key), 0),
                fmt_spread(r.spread(work, sys, plain, "early"), 0),
            );
        }
    }
    s
}

/// W11, shards: tickwheel at 4, 16 and 64 shards on 2 workers, each figure
/// min / median / max over the repetitions, with the CPU ratios of the
/// medians to 4 shards'.
fn w11_table(r: &Results) -> String {
    let mut s = String::new();
    let figure = |shards, key| r.spread(Work::W11(shards), Sys::Tickwheel, Variant::Plain, key);
    let _ = writeln!(
        s,
        "\nW11 shards: tickwheel alone, a timer built with Builder::shards(n) installed as a \
         2-worker runtime's default. Heap: the live heap growth across the build; idle: \
         driver wake-ups and process CPU over {} ms after one sleep fired (as W5); trickle: \
         W8's trickle on 2 workers on that timer, process CPU; W9: W9's tasks on 2 workers \
         on that timer, process CPU (not above a floor: the same at every shard count).\n",
        fmt_opt(
            Shards::ALL
                .into_iter()
                .find_map(|shards| figure(shards, "idle_ms").map(|s| s.median)),
            0
        ),
    );
    let _ = writeln!(
        s,
        "| shards | heap KB | idle wake-ups | idle CPU ms | trickle CPU s | trickle / 4 shards | \
         trickle driver wake-ups/s | W9 CPU s | W9 / 4 shards | early (trickle, W9) |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let to_four = |shards, key| {
        let m = |shards| figure(shards, key).map(|s: Spread| s.median);
        fmt_opt(ratio(m(shards), m(Shards::S4)), 2)
    };
    for shards in Shards::ALL {
        let heap_kb = figure(shards, "timer_bytes").map(|s| Spread {
            min: s.min / 1e3,
            median: s.median / 1e3,
            max: s.max / 1e3,
        });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}, {} |",
            shards.count(),
            fmt_spread(heap_kb, 0),
            fmt_spread(figure(shards, "idle_wakeups"), 0),
            fmt_spread(figure(shards, "idle_cpu_ms"), 2),
            fmt_spread(figure(shards, "trickle_cpu_s"), 4),
            to_four(shards, "trickle_cpu_s"),
            fmt_spread(figure(shards, "trickle_wakeups_per_s"), 0),
            fmt_spread(figure(shards, "w9_cpu_s"), 4),
            to_four(shards, "w9_cpu_s"),
            fmt_spread(figure(shards, "trickle_early"), 0),
            fmt_spread(figure(shards, "w9_early"), 0),
        );
    }
    s
}

/// W12, the busy runtime: per configuration, tickwheel's default timer and
/// tokio's, each figure min / median / max over the repetitions.
fn w12_table(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nW12 busy runtime: tasks looping on yield_now + 5 us of work, every tenth round a \
         sleep of 0.1-2 ms (tokio::time::sleep or tickwheel::time::sleep on the runtime's \
         default timer); lateness: the return of the sleep's .await less the deadline asked \
         for (Instant::now() + d at its creation); early: returned before it. Busy tick: a \
         tick of the timer holding some sleep's deadline; wake-ups: tickwheel's \
         Stats::wakeups. Where tokio's alternative timer was measured, its rows follow: \
         tickwheel on a runtime built with it (its driver's alarm on that timer) and tokio \
         on it, tickwheel's ratios there to tokio alt's.\n"
    );
    let _ = writeln!(
        s,
        "| configuration | system | sleeps | lateness p50 ms | p90 ms | p99 ms | max ms | \
         p50 / tokio | p99 / tokio | early | driver wake-ups/s | busy ticks/s | \
         wake-ups per busy tick |"
    );
    let _ = writeln!(
        s,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let alt = Variant::AltTimer;
    for busy in Busy::ALL {
        let work = Work::W12(busy);
        for (sys, variant, label) in [
            (Sys::Tickwheel, Variant::Plain, "tickwheel"),
            (Sys::Tokio, Variant::Plain, "tokio::time"),
            (Sys::Tickwheel, alt, "tickwheel, alt-timer runtime"),
            (Sys::Tokio, alt, "tokio alt timer"),
        ] {
            // The alternative timer's rows only where it was measured.
            if variant == alt && r.per_rep(work, sys, variant, "sleeps").is_empty() {
                continue;
            }
            let figure = |sys, key| r.spread(work, sys, variant, key);
            let to_tokio = |key| tickwheel_to_tokio_on(r, work, sys, variant, key);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                busy.label(),
                label,
                fmt_spread(figure(sys, "sleeps"), 0),
                fmt_spread(figure(sys, "late_p50_ms"), 2),
                fmt_spread(figure(sys, "late_p90_ms"), 2),
                fmt_spread(figure(sys, "late_p99_ms"), 2),
                fmt_spread(figure(sys, "late_max_ms"), 2),
                to_tokio("late_p50_ms"),
                to_tokio("late_p99_ms"),
                fmt_spread(figure(sys, "early"), 0),
                fmt_spread(figure(sys, "wakeups_per_s"), 0),
                fmt_spread(figure(sys, "busy_ticks_per_s"), 0),
                fmt_spread(figure(sys, "wakeups_per_busy_tick"), 2),
            );
        }
    }
    s
}

/// W10, the HTTP service under wrk: per configuration, tickwheel's timers
/// and tokio's, each figure min / median / max over the repetitions; or why
/// it did not run.
fn w10_table(r: &Results, skipped: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nW10 HTTP service: a hyper 1.x HTTP/1 server (keep-alive, loopback) driven by \
         `wrk -t2 -cN --latency`; hyper's timer, the 408 request deadline, a deadline \
         around each backend call and the backend's sleep on tickwheel (its hyper::rt::Timer, \
         http::TimeoutLayer, time::timeout/sleep) or on tokio (hyper-util's TokioTimer, \
         tower-http's TimeoutLayer, tokio::time). CPU: the server process's, per response, \
         over the wrk run; latency: wrk's; RSS: the server's peak; early: a call deadline or \
         408 before the deadline asked for.\n"
    );
    if let Some(why) = skipped {
        let _ = writeln!(s, "W10 {why}");
        return s;
    }
    let _ = writeln!(
        s,
        "| configuration | system | requests/s | CPU us/request | CPU / tokio | p50 ms | \
         p99 ms | p99 / tokio | RSS MB | call deadlines fired | early | 408s | early 408s | \
         socket errors | timers/request |"
    );
    let _ = writeln!(
        s,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for http in Http::ALL {
        let work = Work::W10(http);
        for sys in [Sys::Tickwheel, Sys::Tokio] {
            let figure = |sys, key| r.spread(work, sys, Variant::Plain, key);
            let to_tokio = |key| tickwheel_to_tokio(r, work, sys, key);
            let errors = Spread::of(
                r.per_rep(work, sys, Variant::Plain, "socket_errors")
                    .iter()
                    .map(|(rep, e)| {
                        e + r
                            .per_rep(work, sys, Variant::Plain, "socket_timeouts")
                            .get(rep)
                            .copied()
                            .unwrap_or(0.0)
                    }),
            );
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                http.label(),
                if sys == Sys::Tokio {
                    "tokio"
                } else {
                    "tickwheel"
                },
                fmt_spread(figure(sys, "requests_per_s"), 0),
                fmt_spread(figure(sys, "cpu_us_per_request"), 2),
                to_tokio("cpu_us_per_request"),
                fmt_spread(figure(sys, "p50_ms"), 2),
                fmt_spread(figure(sys, "p99_ms"), 2),
                to_tokio("p99_ms"),
                fmt_spread(figure(sys, "rss_mb"), 1),
                fmt_spread(figure(sys, "call_fired"), 0),
                fmt_spread(figure(sys, "call_early"), 0),
                fmt_spread(figure(sys, "r408"), 0),
                fmt_spread(figure(sys, "r408_early"), 0),
                fmt_spread(errors, 0),
                fmt_spread(figure(sys, "timers_per_request"), 2),
            );
        }
    }
    s
}

/// The row's cell for tickwheel's median `key` over tokio's, in a table with
/// a row per system: "-" on tokio's own row.
fn tickwheel_to_tokio(r: &Results, work: Work, sys: Sys, key: &str) -> String {
    tickwheel_to_tokio_on(r, work, sys, Variant::Plain, key)
}

/// [`tickwheel_to_tokio`] for both systems as `variant` (on tokio's
/// alternative timer: tickwheel on an alt-timer runtime over tokio alt).
fn tickwheel_to_tokio_on(r: &Results, work: Work, sys: Sys, variant: Variant, key: &str) -> String {
    if sys == Sys::Tokio {
        return "-".to_string();
    }
    let m = |sys| r.spread(work, sys, variant, key).map(|s: Spread| s.median);
    fmt_opt(ratio(m(Sys::Tickwheel), m(Sys::Tokio)), 2)
}

/// W13, registrations during a burst: per system (tokio's alternative timer
/// where it was measured), each figure min / median / max over the
/// repetitions.
fn w13_table(r: &Results) -> String {
    let mut s = String::new();
    let work = Work::W13;
    let size = |key| {
        [Sys::Tokio, Sys::Tickwheel]
            .into_iter()
            .find_map(|sys| r.get(work, sys, key))
    };
    let _ = writeln!(
        s,
        "\nW13 registrations during a burst: {} tasks on 2 workers, each awaiting a sleep until \
         one instant {} ms after the first spawn; once all have registered, a thread of its \
         own (not a worker, in the runtime's context) makes a sleep of 1-3 ms, polls it once \
         and drops it, over and over, until the last task has finished (tickwheel::time or \
         tokio::time, the runtime's default timer). Registration: the sleep's creation and \
         first poll, timed together; drop: the drop, timed alone; both over the probes that \
         started in the burst (at or after the common instant). Blocked / preempted: probes \
         (registration and drop) during which the prober's thread made a voluntary context \
         switch (it waited, for a lock for instance) / an involuntary one (the kernel ran \
         another thread on its CPU); max unswitched: the longest registration with neither. \
         Burst: the common instant to the last task's end; early: sleeps returned before the \
         common instant.\n",
        fmt_opt(size("tasks"), 0),
        fmt_opt(size("lead_ms"), 0),
    );
    let _ = writeln!(
        s,
        "| system | registrations in the burst | p50 us | p99 us | p99.9 us | max us | \
         p99.9 / tokio | max unswitched us | blocked | preempted | drop p99.9 us | \
         drop max us | burst ms | early |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (sys, variant, label) in [
        (Sys::Tickwheel, Variant::Plain, "tickwheel"),
        (Sys::Tokio, Variant::Plain, "tokio::time"),
        (Sys::Tokio, Variant::AltTimer, "tokio alt timer"),
    ] {
        if variant == Variant::AltTimer && r.per_rep(work, sys, variant, "tasks").is_empty() {
            continue;
        }
        let figure = |key| r.spread(work, sys, variant, key);
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            fmt_spread(figure("registrations"), 0),
            fmt_spread(figure("reg_p50_us"), 2),
            fmt_spread(figure("reg_p99_us"), 2),
            fmt_spread(figure("reg_p999_us"), 2),
            fmt_spread(figure("reg_max_us"), 1),
            tickwheel_to_tokio(r, work, sys, "reg_p999_us"),
            fmt_spread(figure("reg_max_unswitched_us"), 1),
            fmt_spread(figure("probes_blocked"), 0),
            fmt_spread(figure("probes_preempted"), 0),
            fmt_spread(figure("drop_p999_us"), 2),
            fmt_spread(figure("drop_max_us"), 1),
            fmt_spread(figure("burst_ms"), 1),
            fmt_spread(figure("early"), 0),
        );
    }
    for (sys, variant) in [
        (Sys::Tickwheel, Variant::Plain),
        (Sys::Tokio, Variant::Plain),
        (Sys::Tokio, Variant::AltTimer),
    ] {
        let late = r.per_rep(work, sys, variant, "registered_before_deadline");
        let reps: Vec<String> = late
            .iter()
            .filter(|&(_, &v)| v == 0.0)
            .map(|(rep, _)| (rep + 1).to_string())
            .collect();
        if !reps.is_empty() {
            let _ = writeln!(
                s,
                "\nW13 warning: {}'s tasks were still registering at the common instant in \
                 repetition(s) {}: the burst began before the prober did.",
                Run { work, sys, variant }.label(),
                reps.join(", ")
            );
        }
    }
    s
}
