//! The parent's report, in two shapes every workload fills in: a table of
//! figures by system (the main table and the DelayQueue's: a row per
//! figure, a column per system, with the ratios of the medians), and a
//! workload's own table (a row per run, a column per figure: W8, W9, W10,
//! W11, W12, W13, W14); then W1's figures per repetition and the goals'
//! verdicts.

use std::fmt::Write as _;

use crate::goals::{self, Verdict};
use crate::results::{fmt_opt, fmt_spread, paired, ratio, PerRep, Results, Spread};
use crate::runs::{Run, Variant};
use crate::systems::{Busy, Http, LatePoll, Shards, Sys, TaskSleeps, Work};

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
    /// The ratio to tokio's median that a goal asks of tickwheel's, drawn
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

/// Where a row of the main table takes its figures from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Every column from its own runs.
    Plain,
    /// The same, above the floor of each repetition.
    AboveFloor,
    /// tickwheel's column from tickwheel on an alt-timer runtime.
    TickwheelOnAltTimer,
    /// tickwheel's column from the ambient runs, above the floor.
    Ambient,
    /// tickwheel's column at the second tick; tokio's repeat their own,
    /// pingora (10 ms resolution) has none.
    SecondTick,
}

/// A row of the main table: label, the chart's label, unit, digits,
/// workload, figure, source, charted.
type MainRow = (
    &'static str,
    &'static str,
    &'static str,
    usize,
    Work,
    &'static str,
    Source,
    bool,
);

#[rustfmt::skip]
const MAIN: [MainRow; 24] = [
    ("W1 timeout overhead, current-thread", "W1 ct", "ns/op", 1, Work::W1Ct, "ns_per_op", Source::AboveFloor, true),
    ("W1 64 tasks on 2 workers", "W1 mt", "ns/op", 1, Work::W1Mt, "ns_per_op", Source::Plain, true),
    ("W1 64 tasks on 2 workers, tickwheel on an alt-timer runtime", "W1 mt alt", "ns/op", 1, Work::W1Mt, "ns_per_op", Source::TickwheelOnAltTimer, false),
    ("W2 create+register+drop overhead", "W2", "ns/op", 1, Work::W2, "ns_per_op", Source::AboveFloor, true),
    ("W2 overhead via tickwheel::time::sleep (ambient)", "W2 amb", "ns/op", 1, Work::W2, "ns_per_op", Source::Ambient, false),
    ("W3 CPU to register and fire 1M", "W3 CPU", "s", 3, Work::W3, "cpu_s", Source::Plain, true),
    ("W3 register, wall", "W3 reg", "ns/timer", 0, Work::W3, "register_ns", Source::Plain, false),
    ("W3 memory per pending timer", "W3 mem", "B", 1, Work::W3, "bytes_per_timer", Source::Plain, true),
    ("W4 register, 0 pending", "W4 0", "ns/op", 1, Work::W4, "register_ns_0", Source::Plain, false),
    ("W4 register, 1M pending", "W4 1M", "ns/op", 1, Work::W4, "register_ns_1m", Source::Plain, true),
    ("W5 idle CPU", "W5 CPU", "ms", 2, Work::W5, "cpu_ms", Source::Plain, true),
    ("W5 memory of an idle timer (2 workers)", "W5 mem", "B", 0, Work::W5, "timer_bytes", Source::Plain, false),
    ("W5 idle context switches", "W5 ctx", "", 0, Work::W5, "context_switches", Source::Plain, false),
    ("W6 lateness p50", "W6 p50", "ms", 2, Work::W6, "p50_ms", Source::Plain, false),
    ("W6 lateness p99", "W6 p99", "ms", 2, Work::W6, "p99_ms", Source::Plain, true),
    ("W6 lateness max", "W6 max", "ms", 2, Work::W6, "max_ms", Source::Plain, false),
    ("W6 early fires", "W6 early", "", 0, Work::W6, "early", Source::Plain, false),
    ("W6 lateness p50", "", "ms", 2, Work::W6, "p50_ms", Source::SecondTick, false),
    ("W6 lateness p99", "", "ms", 2, Work::W6, "p99_ms", Source::SecondTick, true),
    ("W6 lateness max", "", "ms", 2, Work::W6, "max_ms", Source::SecondTick, false),
    ("W6 early fires", "", "", 0, Work::W6, "early", Source::SecondTick, false),
    ("W7 idle-timeout reset, 2 workers", "W7", "ns/reset", 1, Work::W7, "ns_per_reset", Source::Plain, true),
    ("W13 registration during a burst of wake-ups, p99.9", "W13 p99.9", "us", 2, Work::W13, "reg_p999_us", Source::Plain, false),
    ("W13 registration during a burst of wake-ups, max", "W13 max", "us", 1, Work::W13, "reg_max_us", Source::Plain, false),
];

/// The DelayQueue table's rows: label, unit, digits, workload, figure.
#[rustfmt::skip]
const DQ: [(&str, &str, usize, Work, &str); 11] = [
    ("DQ1 CPU: insert 1M, all expire", "s", 3, Work::Dq1, "cpu_s"),
    ("DQ1 insert, wall", "ns/item", 1, Work::Dq1, "insert_ns"),
    ("DQ1 memory per item (u64 value)", "B", 1, Work::Dq1, "bytes_per_item"),
    ("DQ1 lateness p50", "ms", 2, Work::Dq1, "p50_ms"),
    ("DQ1 lateness p99", "ms", 2, Work::Dq1, "p99_ms"),
    ("DQ1 lateness max", "ms", 2, Work::Dq1, "max_ms"),
    ("DQ1 early items", "", 0, Work::Dq1, "early"),
    ("DQ2 CPU: insert+remove, one timeout, in order", "ns/op", 1, Work::Dq2, "cpu_ns_per_op"),
    ("DQ2 variant: random delays", "ns/op", 1, Work::Dq2, "cpu_ns_per_op_random"),
    ("DQ3 CPU: insert+reset, idle timeouts refreshed", "ns/op", 1, Work::Dq3, "cpu_ns_per_op"),
    ("DQ3 variant: reset to random delays", "ns/op", 1, Work::Dq3, "cpu_ns_per_op_random"),
];

/// A row of `key` in `work`, each column's figure from `source`.
fn row(
    r: &Results,
    work: Work,
    key: &str,
    source: Source,
    second_tick_ms: u32,
) -> [Option<Spread>; 4] {
    Column::ALL.map(|c| {
        let (sys, variant) = c.source();
        match (source, sys) {
            (Source::TickwheelOnAltTimer, Sys::Tickwheel) => {
                r.spread(work, sys, Variant::AltTimer, key)
            }
            (Source::Ambient, Sys::Tickwheel) => {
                r.overhead_spread_of(work, Sys::Ambient, variant, key)
            }
            (Source::Ambient | Source::AboveFloor, _) => {
                r.overhead_spread_of(work, sys, variant, key)
            }
            (Source::SecondTick, Sys::Tickwheel) => {
                r.spread(work, sys, Variant::TickMs(second_tick_ms), key)
            }
            (Source::SecondTick, Sys::Pingora) => None,
            _ => r.spread(work, sys, variant, key),
        }
    })
}

/// The main table's rows; `w6_tick_ms`: the tick of W6's second tickwheel
/// run.
pub fn rows(r: &Results, w6_tick_ms: u32) -> Vec<Row> {
    MAIN.iter()
        .map(
            |&(label, short, unit, digits, work, key, source, charted)| {
                let (label, short) = if source == Source::SecondTick {
                    (
                        format!("{label}, tickwheel at {w6_tick_ms} ms tick"),
                        format!("W6 {w6_tick_ms}ms"),
                    )
                } else {
                    (label.to_string(), short.to_string())
                };
                let judged = matches!(source, Source::Plain | Source::AboveFloor);
                Row {
                    label,
                    short,
                    unit,
                    digits,
                    values: row(r, work, key, source, w6_tick_ms),
                    charted,
                    target: goals::ratio_bound(work, key).filter(|_| judged),
                }
            },
        )
        .collect()
}

/// The DelayQueue's rows, tickwheel's queue against tokio-util's (the
/// `tokio` column).
pub fn dq_rows(r: &Results) -> Vec<Row> {
    DQ.iter()
        .map(|&(label, unit, digits, work, key)| Row {
            label: label.to_string(),
            short: String::new(),
            unit,
            digits,
            values: row(r, work, key, Source::Plain, 0),
            charted: false,
            target: None,
        })
        .collect()
}

/// A table of `rows`: label, unit, a column per `columns` (header,
/// column), then a ratio of the medians per `ratios` (header, over,
/// under).
fn figure_table(
    rows: &[Row],
    columns: &[(&str, Column)],
    ratios: &[(&str, Column, Column)],
) -> String {
    let mut s = String::from("| workload | unit |");
    for (header, _) in columns {
        let _ = write!(s, " {header} |");
    }
    for (header, _, _) in ratios {
        let _ = write!(s, " {header} |");
    }
    let _ = writeln!(
        s,
        "\n|---|---|{}",
        "---:|".repeat(columns.len() + ratios.len())
    );
    for row in rows {
        let _ = write!(s, "| {} | {} |", row.label, row.unit);
        for &(_, c) in columns {
            let _ = write!(s, " {} |", fmt_spread(row.values[c as usize], row.digits));
        }
        for &(_, over, under) in ratios {
            let _ = write!(
                s,
                " {} |",
                fmt_opt(ratio(row.median(over), row.median(under)), 2)
            );
        }
        s.push('\n');
    }
    s
}

/// What fills a cell of a workload's table, for the run of its row.
#[derive(Clone, Copy)]
enum Cell {
    /// `key`, min / median / max to `digits`.
    Fig(&'static str, usize),
    /// The same in thousands.
    Kilo(&'static str, usize),
    /// `key` above the floor of each repetition ("-" on the floor's row).
    AboveFloor(&'static str, usize),
    /// tickwheel's median `key` over tokio's in the row's setting (tokio's
    /// default where it has none there); "-" on tokio's and the floor's
    /// rows.
    ToTokio(&'static str),
    /// The same above the floor.
    AboveFloorToTokio(&'static str),
    /// The row's median `key` over the same in another workload (W11: at 4
    /// shards).
    ToWork(&'static str, Work),
    /// The row's median of one key over its median of another (W14: the
    /// wheel's sleeps against tokio's, measured in the same run).
    Over(&'static str, &'static str),
}

/// A row of a workload's table: its labels, and the run its figures are
/// from.
struct Line {
    labels: Vec<String>,
    work: Work,
    sys: Sys,
    variant: Variant,
}

fn line(labels: &[&str], work: Work, sys: Sys, variant: Variant) -> Line {
    Line {
        labels: labels.iter().map(|l| l.to_string()).collect(),
        work,
        sys,
        variant,
    }
}

impl Cell {
    fn show(self, r: &Results, l: &Line) -> String {
        let spread = |key| r.spread(l.work, l.sys, l.variant, key);
        let above = |sys, key| match sys {
            Sys::Floor => None,
            _ => r.overhead_spread_of(l.work, sys, l.variant, key),
        };
        let to_tokio = |mine: Option<Spread>, tokio: &dyn Fn(Variant) -> Option<Spread>| {
            if matches!(l.sys, Sys::Tokio | Sys::Floor) {
                return "-".to_string();
            }
            let theirs = tokio(l.variant).or_else(|| tokio(Variant::Plain));
            fmt_opt(ratio(mine.map(|s| s.median), theirs.map(|s| s.median)), 2)
        };
        match self {
            Cell::Fig(key, digits) => fmt_spread(spread(key), digits),
            Cell::Kilo(key, digits) => fmt_spread(
                spread(key).map(|s| Spread {
                    min: s.min / 1e3,
                    median: s.median / 1e3,
                    max: s.max / 1e3,
                }),
                digits,
            ),
            Cell::AboveFloor(key, digits) => fmt_spread(above(l.sys, key), digits),
            Cell::ToTokio(key) => to_tokio(spread(key), &|v| r.spread(l.work, Sys::Tokio, v, key)),
            Cell::AboveFloorToTokio(key) => to_tokio(above(l.sys, key), &|v| {
                r.overhead_spread_of(l.work, Sys::Tokio, v, key)
            }),
            Cell::ToWork(key, other) => {
                let m = |work| r.spread(work, l.sys, l.variant, key).map(|s| s.median);
                fmt_opt(ratio(m(l.work), m(other)), 2)
            }
            Cell::Over(key, under) => {
                let m = |key| spread(key).map(|s| s.median);
                fmt_opt(ratio(m(key), m(under)), 2)
            }
        }
    }
}

/// A workload's table: `intro`, then a row per line whose run reported
/// figures, its labels under `labels` and a cell per column.
fn table(
    r: &Results,
    intro: &str,
    labels: &[&str],
    cols: &[(&str, Cell)],
    lines: &[Line],
) -> String {
    let mut s = format!("\n{intro}\n\n|");
    for header in labels.iter().chain(cols.iter().map(|(h, _)| h)) {
        let _ = write!(s, " {header} |");
    }
    let _ = writeln!(
        s,
        "\n|{}{}",
        "---|".repeat(labels.len()),
        "---:|".repeat(cols.len())
    );
    let mut shown = 0;
    for l in lines.iter().filter(|l| r.ran(l.work, l.sys, l.variant)) {
        shown += 1;
        let cells: Vec<String> = cols.iter().map(|(_, c)| c.show(r, l)).collect();
        let _ = writeln!(s, "| {} | {} |", l.labels.join(" | "), cells.join(" | "));
    }
    if shown == 0 {
        let _ = writeln!(s, "(not run)");
    }
    s
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

pub fn print_report(r: &Results, rows: &[Row], verdicts: &[Verdict], notes: &Notes<'_>) -> String {
    let mut s = format!("{}\n\n", notes.header);
    let columns = Column::ALL.map(|c| (c.header(), c));
    s.push_str(&figure_table(
        rows,
        &columns,
        &[
            ("tickwheel / tokio", Column::Tickwheel, Column::Tokio),
            ("tickwheel / tokio alt", Column::Tickwheel, Column::TokioAlt),
            ("pingora / tokio", Column::Pingora, Column::Tokio),
        ],
    ));
    let floors =
        [Work::W1Ct, Work::W1Mt, Work::W2].map(|w| fmt_opt(r.get(w, Sys::Floor, "ns_per_op"), 1));
    let _ = writeln!(
        s,
        "\nEach figure is min / median / max over {} repetitions (one value where they agree), \
         the systems taking turns within each repetition; ratios are of the medians.\n\
         Floors (no timer), median ns/op: W1 current-thread {}, W1 64 tasks {}, W2 {}. \
         W1 current-thread and W2 rows are overhead above the floor of the same repetition.\n\
         W2 ambient: tickwheel's column is W2 through tickwheel::time::sleep on the runtime's \
         default timer (no handle held); the other columns repeat their W2 overhead.\n\
         W6: tickwheel at its default {} ms tick; the rows at {} ms tick are tickwheel built \
         with that tick, for comparison (not judged), where the tokio columns repeat their W6 \
         figures (their resolution is 1 ms either way) and pingora (10 ms resolution) has none.\n\
         W1 on an alt-timer runtime: tickwheel's column is W1 on 2 workers with tickwheel on a \
         runtime built with tokio's alternative timer (its driver's alarm on that timer); the \
         other columns repeat their W1, so tickwheel / tokio alt compares the two on that \
         timer. W13: registrations on a thread of their own while 100k sleeps (20k with \
         --quick) due at one instant fire (see its table).\n\
         tokio alt timer: {}",
        r.reps,
        floors[0],
        floors[1],
        floors[2],
        tickwheel::Builder::DEFAULT_TICK.as_millis(),
        notes.w6_tick_ms,
        notes.alt_timer
    );
    let w6_runs = [
        (Sys::Tickwheel, Variant::Plain),
        (Sys::Tickwheel, Variant::TickMs(notes.w6_tick_ms)),
        (Sys::Tokio, Variant::Plain),
        (Sys::Tokio, Variant::AltTimer),
        (Sys::Pingora, Variant::Plain),
    ];
    s.push_str(&late_starts(
        r,
        Work::W6,
        &w6_runs,
        "registered_before_first_deadline",
        "W6 warning: {} took longer to register its timers than the lead before the first \
         deadline in repetition(s) {}; its lateness includes that delay.",
    ));
    s.push_str(&w1_mt_per_rep(r));
    s.push_str(&w8_table(r, notes.w6_tick_ms));
    s.push_str(&w9_table(r));
    s.push_str(&w11_table(r));
    s.push_str(&w12_table(r));
    s.push_str(&w13_table(r));
    s.push_str(&w14_table(r));
    s.push_str(&w10_table(r, notes.w10));
    let _ = writeln!(
        s,
        "\nDelayQueue: tickwheel against tokio-util's (on tokio::time)\n"
    );
    s.push_str(&figure_table(
        &dq_rows(r),
        &[
            ("tickwheel", Column::Tickwheel),
            ("tokio-util", Column::Tokio),
        ],
        &[("tickwheel / tokio-util", Column::Tickwheel, Column::Tokio)],
    ));
    let _ = writeln!(
        s,
        "\nEach figure is min / median / max over {} repetitions (one value where they agree), \
         the two queues taking turns within each repetition; ratios are of the medians.",
        r.reps
    );
    s.push_str(&goals::table(verdicts));
    s
}

/// A warning for each of `runs` of `work` whose `key` was 0 in some
/// repetition (it had not registered its sleeps by the time it meant to):
/// `message` with the run and the repetitions in its two `{}`.
fn late_starts(
    r: &Results,
    work: Work,
    runs: &[(Sys, Variant)],
    key: &str,
    message: &str,
) -> String {
    let mut s = String::new();
    for &(sys, variant) in runs {
        let reps: Vec<String> = r
            .per_rep(work, sys, variant, key)
            .iter()
            .filter(|&(_, &v)| v == 0.0)
            .map(|(rep, _)| (rep + 1).to_string())
            .collect();
        if !reps.is_empty() {
            let label = Run { work, sys, variant }.label();
            let _ = writeln!(
                s,
                "{}",
                message
                    .replacen("{}", &label, 1)
                    .replacen("{}", &reps.join(", "), 1)
            );
        }
    }
    s
}

/// W1 on 2 workers, repetition by repetition: ns/op, with the CPUs the
/// process kept busy and the CPUs its runnable threads waited for (other
/// work on the machine), so a slow repetition shows whether it lost a core;
/// the table's columns, then tickwheel on an alt-timer runtime.
fn w1_mt_per_rep(r: &Results) -> String {
    let tickwheel_alt = (Sys::Tickwheel, Variant::AltTimer);
    let sources: Vec<(Sys, Variant)> = Column::ALL
        .iter()
        .map(|c| c.source())
        .chain([tickwheel_alt])
        .collect();
    let headers: Vec<&str> = Column::ALL.iter().map(|c| c.header()).collect();
    let mut s = format!(
        "\nW1 64 tasks on 2 workers, per repetition: ns/op (CPUs busy, CPUs waited for)\n\n\
         | rep | {} | tickwheel on alt timer | tickwheel / tokio | \
         tickwheel / tokio alt (both on alt timer) |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        headers.join(" | ")
    );
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
    for (what, mine, theirs) in [
        ("tickwheel / tokio per repetition", &tw, &tokio),
        (
            "tickwheel / tokio alt per repetition, both on tokio's alternative timer",
            &tw_alt,
            &tokio_alt,
        ),
    ] {
        let ratios = paired(mine, theirs).into_iter().map(|(_, t, k)| t / k);
        if let Some(spread) = Spread::of(ratios) {
            let _ = writeln!(s, "\n{what}: {}", fmt_spread(Some(spread), 2));
        }
    }
    s
}

/// W8, the trickle: tickwheel at its default tick and at `tick_ms`, and
/// tokio, on each runtime.
fn w8_table(r: &Results, tick_ms: u32) -> String {
    let registered = r.get(Work::W8, Sys::Tokio, "registered");
    let intro = format!(
        "W8 trickle: {} sleeps of 1-50 ms, one registered every ms on a current-thread \
         runtime and on 2 workers (paced by a tokio interval, the same for every system), \
         each awaited by a task of its own. CPU: the process's, from the first registration \
         to the last fire; driver wake-ups: tickwheel's Stats::wakeups, per second and per \
         busy tick (a tick with a sleep due); lateness: the awaiting task's resumption less \
         the deadline.",
        fmt_opt(registered, 0)
    );
    let default_tick = tickwheel::Builder::DEFAULT_TICK.as_millis();
    let (tw, tokio, plain) = (Sys::Tickwheel, Sys::Tokio, Variant::Plain);
    let lines = [
        line(
            &[&format!(
                "current-thread: tickwheel, {default_tick} ms tick (default)"
            )],
            Work::W8,
            tw,
            plain,
        ),
        line(
            &[&format!("current-thread: tickwheel, {tick_ms} ms tick")],
            Work::W8,
            tw,
            Variant::TickMs(tick_ms),
        ),
        line(&["current-thread: tokio::time"], Work::W8, tokio, plain),
        line(
            &[&format!(
                "2 workers: tickwheel, {default_tick} ms tick (default)"
            )],
            Work::W8Mt,
            tw,
            plain,
        ),
        line(&["2 workers: tokio::time"], Work::W8Mt, tokio, plain),
    ];
    table(
        r,
        &intro,
        &["system"],
        &[
            ("CPU s", Cell::Fig("cpu_s", 4)),
            ("CPU / tokio (medians)", Cell::ToTokio("cpu_s")),
            ("driver wake-ups/s", Cell::Fig("wakeups_per_s", 0)),
            (
                "wake-ups per busy tick",
                Cell::Fig("wakeups_per_busy_tick", 2),
            ),
            ("fired", Cell::Fig("fired", 0)),
            ("early", Cell::Fig("early", 0)),
            ("lateness p50 ms", Cell::Fig("late_p50_ms", 2)),
            ("p90 ms", Cell::Fig("late_p90_ms", 2)),
            ("p99 ms", Cell::Fig("late_p99_ms", 2)),
        ],
        &lines,
    )
}

/// W9, a task per sleep: per shape and runtime, the floor, tickwheel and
/// tokio.
fn w9_table(r: &Results) -> String {
    let size = |key| {
        TaskSleeps::ALL
            .into_iter()
            .find_map(|tasks| r.get(Work::W9(tasks), Sys::Tokio, key))
    };
    let intro = format!(
        "W9 task per sleep: {} tasks, each awaiting one sleep of up to {} ms \
         (tickwheel::time::sleep on the runtime's default timer, or tokio::time::sleep), in \
         three shapes: spawned by a task and counted down to a Notify (pseudo-random \
         deadlines), and spawned from block_on and collected by a JoinSet or counted down to a \
         Notify (task i sleeping 1 ms + (i x 7919 us mod the spread)); the floor's tasks await \
         instead a future pending once that wakes its own task. CPU: the process's, from the \
         first spawn to the last task's end; above the floor: CPU per task less the floor's of \
         the same repetition. W3's sleeps are never re-polled or dropped by a task that awaited \
         them: W9 is the headline for sleeps awaited by tasks.",
        fmt_opt(size("tasks"), 0),
        fmt_opt(size("spread_ms"), 0),
    );
    let mut lines = Vec::new();
    for tasks in TaskSleeps::ALL {
        for (sys, label) in [
            (Sys::Floor, "floor (no timer)"),
            (Sys::Tickwheel, "tickwheel"),
            (Sys::Tokio, "tokio::time"),
        ] {
            let labels = [tasks.runtime(), tasks.label(), label];
            lines.push(line(&labels, Work::W9(tasks), sys, Variant::Plain));
        }
    }
    table(
        r,
        &intro,
        &["runtime", "shape", "system"],
        &[
            ("CPU s", Cell::Fig("cpu_s", 4)),
            ("CPU ns per task", Cell::Fig("cpu_ns_per_op", 0)),
            (
                "above the floor, ns per sleep",
                Cell::AboveFloor("cpu_ns_per_op", 0),
            ),
            (
                "above the floor / tokio's (medians)",
                Cell::AboveFloorToTokio("cpu_ns_per_op"),
            ),
            ("early", Cell::Fig("early", 0)),
        ],
        &lines,
    )
}

/// W11, shards: tickwheel at 4, 16 and 64 shards on 2 workers, with the CPU
/// ratios of the medians to 4 shards'.
fn w11_table(r: &Results) -> String {
    let idle_ms = Shards::ALL
        .into_iter()
        .find_map(|shards| r.get(Work::W11(shards), Sys::Tickwheel, "idle_ms"));
    let intro = format!(
        "W11 shards: tickwheel alone, a timer built with Builder::shards(n) installed as a \
         2-worker runtime's default. Heap: the live heap growth across the build; idle: \
         driver wake-ups and process CPU over {} ms after one sleep fired (as W5); trickle: \
         W8's trickle on 2 workers on that timer, process CPU; W9: W9's tasks on 2 workers \
         on that timer, process CPU (not above a floor: the same at every shard count).",
        fmt_opt(idle_ms, 0),
    );
    let four = Work::W11(Shards::S4);
    let lines: Vec<Line> = Shards::ALL
        .map(|shards| {
            let count = shards.count().to_string();
            line(&[&count], Work::W11(shards), Sys::Tickwheel, Variant::Plain)
        })
        .into();
    table(
        r,
        &intro,
        &["shards"],
        &[
            ("heap KB", Cell::Kilo("timer_bytes", 0)),
            ("idle wake-ups", Cell::Fig("idle_wakeups", 0)),
            ("idle CPU ms", Cell::Fig("idle_cpu_ms", 2)),
            ("trickle CPU s", Cell::Fig("trickle_cpu_s", 4)),
            ("trickle / 4 shards", Cell::ToWork("trickle_cpu_s", four)),
            (
                "trickle driver wake-ups/s",
                Cell::Fig("trickle_wakeups_per_s", 0),
            ),
            ("W9 CPU s", Cell::Fig("w9_cpu_s", 4)),
            ("W9 / 4 shards", Cell::ToWork("w9_cpu_s", four)),
            ("trickle early", Cell::Fig("trickle_early", 0)),
            ("W9 early", Cell::Fig("w9_early", 0)),
        ],
        &lines,
    )
}

/// W12, the busy runtime: per configuration, tickwheel's default timer and
/// tokio's, then both on tokio's alternative timer where it was measured.
fn w12_table(r: &Results) -> String {
    let intro = "W12 busy runtime: tasks looping on yield_now + 5 us of work, every tenth round \
         a sleep of 0.1-2 ms (tokio::time::sleep or tickwheel::time::sleep on the runtime's \
         default timer); lateness: the return of the sleep's .await less the deadline asked \
         for (Instant::now() + d at its creation); early: returned before it. Busy tick: a \
         tick of the timer holding some sleep's deadline; wake-ups: tickwheel's \
         Stats::wakeups. Where tokio's alternative timer was measured, its rows follow: \
         tickwheel on a runtime built with it (its driver's alarm on that timer) and tokio \
         on it, tickwheel's ratios there to tokio alt's.";
    let mut lines = Vec::new();
    for busy in Busy::ALL {
        for (sys, variant, label) in [
            (Sys::Tickwheel, Variant::Plain, "tickwheel"),
            (Sys::Tokio, Variant::Plain, "tokio::time"),
            (
                Sys::Tickwheel,
                Variant::AltTimer,
                "tickwheel, alt-timer runtime",
            ),
            (Sys::Tokio, Variant::AltTimer, "tokio alt timer"),
        ] {
            lines.push(line(&[&busy.label(), label], Work::W12(busy), sys, variant));
        }
    }
    table(
        r,
        intro,
        &["configuration", "system"],
        &[
            ("sleeps", Cell::Fig("sleeps", 0)),
            ("lateness p50 ms", Cell::Fig("late_p50_ms", 2)),
            ("p90 ms", Cell::Fig("late_p90_ms", 2)),
            ("p99 ms", Cell::Fig("late_p99_ms", 2)),
            ("max ms", Cell::Fig("late_max_ms", 2)),
            ("p50 / tokio", Cell::ToTokio("late_p50_ms")),
            ("p99 / tokio", Cell::ToTokio("late_p99_ms")),
            ("early", Cell::Fig("early", 0)),
            ("driver wake-ups/s", Cell::Fig("wakeups_per_s", 0)),
            ("busy ticks/s", Cell::Fig("busy_ticks_per_s", 0)),
            (
                "wake-ups per busy tick",
                Cell::Fig("wakeups_per_busy_tick", 2),
            ),
        ],
        &lines,
    )
}

/// W14, a late first poll: per configuration, the wheel's sleeps and
/// tokio's beside them, from the one child that measured both.
fn w14_table(r: &Results) -> String {
    let intro = "W14 late first poll: a runtime of 1 or 2 workers busy with 1,000 tasks (50 us of \
         work, then yield_now); 200 tasks each make five pairs of a timer.sleep(d) on one \
         tickwheel Timer and a tokio::time::sleep(d), d 5-11 ms, made together and awaited \
         together; with the late task, one more task loops on timer.sleep(1 ms), 3 ms of work, \
         then awaits that sleep (its first poll after its tick). Lateness at the waker: the \
         first call of each measured sleep's waker less Instant::now() + d read before the \
         pair was made (not the task's resumption). Both systems in the same child, so the \
         ratio compares the same moments. Late-task loops: over the measuring window, and \
         those whose sleep was ready at that first poll; wake-ups and backstop passes: the \
         Timer's Stats over it; CPUs waited for: the child's runnable threads waiting for a \
         CPU (other work on the machine).";
    let lines: Vec<Line> = LatePoll::ALL
        .map(|late| {
            line(
                &[&late.label()],
                Work::W14(late),
                Sys::Tickwheel,
                Variant::Plain,
            )
        })
        .into();
    table(
        r,
        intro,
        &["configuration"],
        &[
            ("wheel p50 ms", Cell::Fig("wheel_p50_ms", 2)),
            ("wheel p99 ms", Cell::Fig("wheel_p99_ms", 2)),
            ("wheel max ms", Cell::Fig("wheel_max_ms", 2)),
            ("tokio p50 ms", Cell::Fig("tokio_p50_ms", 2)),
            ("tokio p99 ms", Cell::Fig("tokio_p99_ms", 2)),
            ("tokio max ms", Cell::Fig("tokio_max_ms", 2)),
            (
                "p99 wheel / tokio",
                Cell::Over("wheel_p99_ms", "tokio_p99_ms"),
            ),
            ("wheel >= 10 ms", Cell::Fig("wheel_late_10ms", 0)),
            ("tokio >= 10 ms", Cell::Fig("tokio_late_10ms", 0)),
            ("wheel early", Cell::Fig("wheel_early", 0)),
            ("late-task loops", Cell::Fig("late_loops", 0)),
            (
                "ready at first poll",
                Cell::Fig("late_ready_at_first_poll", 0),
            ),
            ("driver wake-ups/s", Cell::Fig("wakeups_per_s", 0)),
            ("backstop passes", Cell::Fig("backstop_passes", 0)),
            ("CPUs waited for", Cell::Fig("cpus_waited_for", 2)),
        ],
        &lines,
    )
}

/// W10, the HTTP service under wrk: per configuration, tickwheel's timers
/// and tokio's; or why it did not run.
fn w10_table(r: &Results, skipped: Option<&str>) -> String {
    let intro = "W10 HTTP service: a hyper 1.x HTTP/1 server (keep-alive, loopback) driven by \
         `wrk -t2 -cN --latency`; hyper's timer, the 408 request deadline, a deadline \
         around each backend call and the backend's sleep on tickwheel (its hyper::rt::Timer, \
         http::TimeoutLayer, time::timeout/sleep) or on tokio (hyper-util's TokioTimer, \
         tower-http's TimeoutLayer, tokio::time). CPU: the server process's, per response, \
         over the wrk run; latency: wrk's; RSS: the server's peak; early: a call deadline or \
         408 before the deadline asked for.";
    if let Some(why) = skipped {
        return format!("\n{intro}\n\nW10 {why}\n");
    }
    let mut lines = Vec::new();
    for http in Http::ALL {
        for (sys, label) in [(Sys::Tickwheel, "tickwheel"), (Sys::Tokio, "tokio")] {
            lines.push(line(
                &[&http.label(), label],
                Work::W10(http),
                sys,
                Variant::Plain,
            ));
        }
    }
    table(
        r,
        intro,
        &["configuration", "system"],
        &[
            ("requests/s", Cell::Fig("requests_per_s", 0)),
            ("CPU us/request", Cell::Fig("cpu_us_per_request", 2)),
            ("CPU / tokio", Cell::ToTokio("cpu_us_per_request")),
            ("p50 ms", Cell::Fig("p50_ms", 2)),
            ("p99 ms", Cell::Fig("p99_ms", 2)),
            ("p99 / tokio", Cell::ToTokio("p99_ms")),
            ("RSS MB", Cell::Fig("rss_mb", 1)),
            ("call deadlines fired", Cell::Fig("call_fired", 0)),
            ("early", Cell::Fig("call_early", 0)),
            ("408s", Cell::Fig("r408", 0)),
            ("early 408s", Cell::Fig("r408_early", 0)),
            ("socket errors", Cell::Fig("socket_errors", 0)),
            ("socket timeouts", Cell::Fig("socket_timeouts", 0)),
            ("timers/request", Cell::Fig("timers_per_request", 2)),
        ],
        &lines,
    )
}

/// W13, registrations during a burst: per system (tokio's alternative timer
/// where it was measured).
fn w13_table(r: &Results) -> String {
    let work = Work::W13;
    let size = |key| {
        [Sys::Tokio, Sys::Tickwheel]
            .into_iter()
            .find_map(|sys| r.get(work, sys, key))
    };
    let intro = format!(
        "W13 registrations during a burst: {} tasks on 2 workers, each awaiting a sleep until \
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
         common instant.",
        fmt_opt(size("tasks"), 0),
        fmt_opt(size("lead_ms"), 0),
    );
    let runs = [
        (Sys::Tickwheel, Variant::Plain, "tickwheel"),
        (Sys::Tokio, Variant::Plain, "tokio::time"),
        (Sys::Tokio, Variant::AltTimer, "tokio alt timer"),
    ];
    let lines: Vec<Line> = runs
        .iter()
        .map(|&(sys, variant, label)| line(&[label], work, sys, variant))
        .collect();
    let mut s = table(
        r,
        &intro,
        &["system"],
        &[
            ("registrations in the burst", Cell::Fig("registrations", 0)),
            ("p50 us", Cell::Fig("reg_p50_us", 2)),
            ("p99 us", Cell::Fig("reg_p99_us", 2)),
            ("p99.9 us", Cell::Fig("reg_p999_us", 2)),
            ("max us", Cell::Fig("reg_max_us", 1)),
            ("p99.9 / tokio", Cell::ToTokio("reg_p999_us")),
            ("max unswitched us", Cell::Fig("reg_max_unswitched_us", 1)),
            ("blocked", Cell::Fig("probes_blocked", 0)),
            ("preempted", Cell::Fig("probes_preempted", 0)),
            ("drop p99.9 us", Cell::Fig("drop_p999_us", 2)),
            ("drop max us", Cell::Fig("drop_max_us", 1)),
            ("burst ms", Cell::Fig("burst_ms", 1)),
            ("early", Cell::Fig("early", 0)),
        ],
        &lines,
    );
    let runs = runs.map(|(sys, variant, _)| (sys, variant));
    s.push_str(&late_starts(
        r,
        work,
        &runs,
        "registered_before_deadline",
        "\nW13 warning: {}'s tasks were still registering at the common instant in \
         repetition(s) {}: the burst began before the prober did.",
    ));
    s
}
