//! The parent's report: the table of figures and ratios to `tokio::time`,
//! and a MET/MISSED verdict per performance target.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::systems::{Figures, Sys, Work};

/// All results: (workload, system) -> figures.
pub struct Results(pub BTreeMap<(&'static str, &'static str), Figures>);

impl Results {
    pub fn get(&self, work: Work, sys: Sys, key: &str) -> Option<f64> {
        self.0.get(&(work.name(), sys.name()))?.get(key).copied()
    }

    /// W1/W2 overhead above the floor.
    pub fn overhead(&self, work: Work, sys: Sys) -> Option<f64> {
        Some(self.get(work, sys, "ns_per_op")? - self.get(work, Sys::Floor, "ns_per_op")?)
    }
}

pub struct Target {
    name: &'static str,
    rule: &'static str,
    met: Option<bool>,
    detail: String,
}

pub fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// One table row: a figure per timer and the ratios to tokio's.
pub struct Row {
    pub label: &'static str,
    pub short: &'static str,
    pub unit: &'static str,
    pub digits: usize,
    pub values: [Option<f64>; 3],
    pub charted: bool,
}

pub fn rows(r: &Results) -> Vec<Row> {
    let per = |f: &dyn Fn(Sys) -> Option<f64>| [f(Sys::Tickwheel), f(Sys::Tokio), f(Sys::Pingora)];
    vec![
        Row {
            label: "W1 timeout overhead, current-thread",
            short: "W1 ct",
            unit: "ns/op",
            digits: 1,
            values: per(&|s| r.overhead(Work::W1Ct, s)),
            charted: true,
        },
        Row {
            label: "W1 64 tasks on 2 workers",
            short: "W1 mt",
            unit: "ns/op",
            digits: 1,
            values: per(&|s| r.get(Work::W1Mt, s, "ns_per_op")),
            charted: true,
        },
        Row {
            label: "W2 create+register+drop overhead",
            short: "W2",
            unit: "ns/op",
            digits: 1,
            values: per(&|s| r.overhead(Work::W2, s)),
            charted: true,
        },
        Row {
            label: "W2 overhead via tickwheel::time::sleep (ambient)",
            short: "W2 amb",
            unit: "ns/op",
            digits: 1,
            values: [
                r.overhead(Work::W2, Sys::Ambient),
                r.overhead(Work::W2, Sys::Tokio),
                r.overhead(Work::W2, Sys::Pingora),
            ],
            charted: false,
        },
        Row {
            label: "W3 CPU to register and fire 1M",
            short: "W3 CPU",
            unit: "s",
            digits: 3,
            values: per(&|s| r.get(Work::W3, s, "cpu_s")),
            charted: true,
        },
        Row {
            label: "W3 register, wall",
            short: "W3 reg",
            unit: "ns/timer",
            digits: 0,
            values: per(&|s| r.get(Work::W3, s, "register_ns")),
            charted: false,
        },
        Row {
            label: "W3 memory per pending timer",
            short: "W3 mem",
            unit: "B",
            digits: 1,
            values: per(&|s| r.get(Work::W3, s, "bytes_per_timer")),
            charted: true,
        },
        Row {
            label: "W4 register, 0 pending",
            short: "W4 0",
            unit: "ns/op",
            digits: 1,
            values: per(&|s| r.get(Work::W4, s, "register_ns_0")),
            charted: false,
        },
        Row {
            label: "W4 register, 1M pending",
            short: "W4 1M",
            unit: "ns/op",
            digits: 1,
            values: per(&|s| r.get(Work::W4, s, "register_ns_1m")),
            charted: true,
        },
        Row {
            label: "W5 idle CPU",
            short: "W5 CPU",
            unit: "ms",
            digits: 2,
            values: per(&|s| r.get(Work::W5, s, "cpu_ms")),
            charted: true,
        },
        Row {
            label: "W5 idle context switches",
            short: "W5 ctx",
            unit: "",
            digits: 0,
            values: per(&|s| r.get(Work::W5, s, "context_switches")),
            charted: false,
        },
        Row {
            label: "W6 lateness p50",
            short: "W6 p50",
            unit: "ms",
            digits: 2,
            values: per(&|s| r.get(Work::W6, s, "p50_ms")),
            charted: false,
        },
        Row {
            label: "W6 lateness p99",
            short: "W6 p99",
            unit: "ms",
            digits: 2,
            values: per(&|s| r.get(Work::W6, s, "p99_ms")),
            charted: true,
        },
        Row {
            label: "W6 lateness max",
            short: "W6 max",
            unit: "ms",
            digits: 2,
            values: per(&|s| r.get(Work::W6, s, "max_ms")),
            charted: false,
        },
        Row {
            label: "W6 early fires",
            short: "W6 early",
            unit: "",
            digits: 0,
            values: per(&|s| r.get(Work::W6, s, "early")),
            charted: false,
        },
    ]
}

/// A W1 target: tickwheel's figure `t` at most half of tokio's `k` and below
/// pingora's `p` (ns per operation).
fn half_of_tokio_below_pingora(
    name: &'static str,
    t: Option<f64>,
    k: Option<f64>,
    p: Option<f64>,
) -> Target {
    let met = match (t, k, p) {
        (Some(t), Some(k), Some(p)) => Some(t <= 0.5 * k && t < p),
        _ => None,
    };
    Target {
        name,
        rule: "<= 0.5 x tokio's, < pingora's",
        met,
        detail: format!(
            "tickwheel {} ns, tokio {} ns, pingora {} ns",
            fmt_opt(t, 1),
            fmt_opt(k, 1),
            fmt_opt(p, 1)
        ),
    }
}

pub fn targets(r: &Results) -> Vec<Target> {
    let tw = Sys::Tickwheel;
    let mut out = Vec::new();

    let (t, k, p) = (
        r.overhead(Work::W1Ct, tw),
        r.overhead(Work::W1Ct, Sys::Tokio),
        r.overhead(Work::W1Ct, Sys::Pingora),
    );
    out.push(half_of_tokio_below_pingora(
        "W1 current-thread overhead",
        t,
        k,
        p,
    ));

    let (t, k, p) = (
        r.get(Work::W1Mt, tw, "ns_per_op"),
        r.get(Work::W1Mt, Sys::Tokio, "ns_per_op"),
        r.get(Work::W1Mt, Sys::Pingora, "ns_per_op"),
    );
    out.push(half_of_tokio_below_pingora(
        "W1 64 tasks / 2 workers",
        t,
        k,
        p,
    ));

    let (t, k) = (r.overhead(Work::W2, tw), r.overhead(Work::W2, Sys::Tokio));
    out.push(Target {
        name: "W2 churn overhead",
        rule: "<= 0.5 x tokio's",
        met: t.zip(k).map(|(t, k)| t <= 0.5 * k),
        detail: format!("tickwheel {} ns, tokio {} ns", fmt_opt(t, 1), fmt_opt(k, 1)),
    });

    let (ambient, held) = (r.overhead(Work::W2, Sys::Ambient), r.overhead(Work::W2, tw));
    out.push(Target {
        name: "W2 free function vs held handle",
        rule: "<= 1.15 x the held handle's overhead",
        met: ambient.zip(held).map(|(a, h)| a <= 1.15 * h),
        detail: format!(
            "tickwheel::time::sleep {} ns, timer.sleep {} ns ({}x)",
            fmt_opt(ambient, 1),
            fmt_opt(held, 1),
            fmt_opt(ratio(ambient, held), 2)
        ),
    });

    let (t, k) = (
        r.get(Work::W3, tw, "cpu_s"),
        r.get(Work::W3, Sys::Tokio, "cpu_s"),
    );
    out.push(Target {
        name: "W3 CPU register+fire",
        rule: "<= 0.5 x tokio's",
        met: t.zip(k).map(|(t, k)| t <= 0.5 * k),
        detail: format!("tickwheel {} s, tokio {} s", fmt_opt(t, 3), fmt_opt(k, 3)),
    });

    let size = r.get(Work::W3, tw, "sleep_size");
    let entry = r.get(Work::W3, tw, "entry_bytes_per_pending");
    let total = size.zip(entry).map(|(s, e)| s + e);
    out.push(Target {
        name: "W3 memory per pending sleep",
        rule: "size_of::<Sleep>() + entry bytes <= 64 B",
        met: total.map(|b| b <= 64.0),
        detail: format!(
            "{} + {} = {} B (measured heap: {} B/timer incl. the Vec element)",
            fmt_opt(size, 0),
            fmt_opt(entry, 2),
            fmt_opt(total, 2),
            fmt_opt(r.get(Work::W3, tw, "bytes_per_timer"), 2)
        ),
    });

    let (none, full) = (
        r.get(Work::W4, tw, "register_ns_0"),
        r.get(Work::W4, tw, "register_ns_1m"),
    );
    out.push(Target {
        name: "W4 register with 1M pending",
        rule: "<= 1.5 x with none",
        met: none.zip(full).map(|(n, f)| f <= 1.5 * n),
        detail: format!(
            "{} ns vs {} ns ({}x)",
            fmt_opt(full, 1),
            fmt_opt(none, 1),
            fmt_opt(ratio(full, none), 2)
        ),
    });

    let wakeups = r.get(Work::W5, tw, "wakeups");
    out.push(Target {
        name: "W5 idle wakeups",
        rule: "0 driver wakeups",
        met: wakeups.map(|w| w == 0.0),
        detail: format!(
            "{} wakeups, {} ms CPU",
            fmt_opt(wakeups, 0),
            fmt_opt(r.get(Work::W5, tw, "cpu_ms"), 2)
        ),
    });

    let p99 = r.get(Work::W6, tw, "p99_ms");
    let tick = r.get(Work::W6, tw, "tick_ms");
    let early = r.get(Work::W6, tw, "early");
    out.push(Target {
        name: "W6 lateness",
        rule: "p99 <= 1 tick + 2 ms; 0 early",
        met: match (p99, tick, early) {
            (Some(p), Some(t), Some(e)) => Some(p <= t + 2.0 && e == 0.0),
            _ => None,
        },
        detail: format!(
            "p99 {} ms (tick {} ms), {} early",
            fmt_opt(p99, 2),
            fmt_opt(tick, 0),
            fmt_opt(early, 0)
        ),
    });
    out
}

pub fn print_report(r: &Results, rows: &[Row], targets: &[Target], header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{header}\n");
    let _ = writeln!(
        s,
        "| workload | unit | tickwheel | tokio::time | pingora-timeout | tickwheel / tokio | pingora / tokio |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let [t, k, p] = row.values;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.label,
            row.unit,
            fmt_opt(t, row.digits),
            fmt_opt(k, row.digits),
            fmt_opt(p, row.digits),
            fmt_opt(ratio(t, k), 2),
            fmt_opt(ratio(p, k), 2),
        );
    }
    let floors =
        [Work::W1Ct, Work::W1Mt, Work::W2].map(|w| fmt_opt(r.get(w, Sys::Floor, "ns_per_op"), 1));
    let _ = writeln!(
        s,
        "\nFloors (no timer), ns/op: W1 current-thread {}, W1 64 tasks {}, W2 {}. \
         W1 current-thread and W2 rows are overhead above the floor.",
        floors[0], floors[1], floors[2]
    );
    for sys in Sys::TIMERS {
        if r.get(Work::W6, sys, "registered_before_first_deadline") == Some(0.0) {
            let _ = writeln!(
                s,
                "W6 warning: {} took longer to register its timers than the lead before the \
                 first deadline; its lateness includes that delay.",
                sys.name()
            );
        }
    }
    let _ = writeln!(s, "\n| target | rule | result | figures |");
    let _ = writeln!(s, "|---|---|---|---|");
    for target in targets {
        let verdict = match target.met {
            Some(true) => "MET",
            Some(false) => "MISSED",
            None => "NO DATA",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            target.name, target.rule, verdict, target.detail
        );
    }
    s
}
