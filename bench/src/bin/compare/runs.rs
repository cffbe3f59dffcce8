//! What the parent runs: one child process per run (a workload, a system and
//! its variant) and repetition. Within a repetition the runs of a workload
//! follow one another, so whatever else the machine is doing at that moment
//! weighs on every system alike; the next repetition then runs them all
//! again.

use std::path::Path;
use std::process::Command;

use crate::alt_timer;
use crate::systems::{Figures, Sys, Work};

/// How a system is set up beyond its defaults.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Variant {
    /// The default settings, in this binary.
    Plain,
    /// tickwheel with a tick of this many ms instead of its default (W6,
    /// W8).
    TickMs(u32),
    /// A runtime with tokio's alternative timer, in the
    /// `--cfg tokio_unstable` build (multi-thread workloads): tokio's timer
    /// itself, or tickwheel's driver with its alarm on it (W1 on 2 workers,
    /// W12).
    AltTimer,
}

/// One child: a workload, a system and its variant.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub work: Work,
    pub sys: Sys,
    pub variant: Variant,
}

impl Run {
    fn plain(work: Work, sys: Sys) -> Run {
        Run {
            work,
            sys,
            variant: Variant::Plain,
        }
    }

    /// The system and variant, as the progress lines and errors name them.
    pub fn label(&self) -> String {
        match self.variant {
            Variant::Plain => self.sys.name().to_string(),
            Variant::TickMs(ms) => format!("{} tick {ms} ms", self.sys.name()),
            Variant::AltTimer => format!("{} alt-timer", self.sys.name()),
        }
    }

    /// The child's command line after the program name.
    pub fn child_args(&self, quick: bool) -> Vec<String> {
        let mut args = vec![
            "--child".to_string(),
            self.work.name().to_string(),
            self.sys.name().to_string(),
        ];
        match self.variant {
            Variant::Plain => {}
            Variant::TickMs(ms) => args.extend(["--tick-ms".to_string(), ms.to_string()]),
            Variant::AltTimer => args.push("--alt-timer".to_string()),
        }
        if quick {
            args.push("--quick".to_string());
        }
        args
    }
}

/// The choices that add runs to the default ones.
pub struct Plan {
    /// The tick of W6's and W8's second tickwheel run.
    pub w6_tick_ms: u32,
    /// Whether the alternative-timer build is there to run.
    pub alt_timer: bool,
}

/// The runs of one repetition of `work`, in order: its systems, with
/// tickwheel's W6 and W8 at the second tick right after tickwheel, and the
/// runs on tokio's alternative timer right after the system's own
/// (tickwheel's for W1 on 2 workers and W12, tokio's wherever it applies).
pub fn runs_of(work: Work, plan: &Plan) -> Vec<Run> {
    let mut runs = Vec::new();
    for &sys in work.systems() {
        runs.push(Run::plain(work, sys));
        if matches!(work, Work::W6 | Work::W8) && sys == Sys::Tickwheel {
            runs.push(Run {
                variant: Variant::TickMs(plan.w6_tick_ms),
                ..Run::plain(work, sys)
            });
        }
        let alt = match sys {
            Sys::Tokio => alt_timer::applies(work),
            Sys::Tickwheel => alt_timer::applies_to_tickwheel(work),
            _ => false,
        };
        if plan.alt_timer && alt {
            runs.push(Run {
                variant: Variant::AltTimer,
                ..Run::plain(work, sys)
            });
        }
    }
    runs
}

/// `works` in the groups whose children take turns within each repetition
/// (see [`Work::takes_turns_with`]), in order: a group of one for most
/// workloads, W11's shard counts together.
pub fn turns(works: &[Work]) -> Vec<Vec<Work>> {
    let mut groups: Vec<Vec<Work>> = Vec::new();
    for &work in works {
        match groups.last_mut() {
            Some(group) if group[0].takes_turns_with(work) => group.push(work),
            _ => groups.push(vec![work]),
        }
    }
    groups
}

/// Runs `run` in a child process of `exe` and collects its `key=value` lines.
pub fn spawn(run: Run, exe: &Path, quick: bool) -> Result<Figures, String> {
    let output = Command::new(exe)
        .args(run.child_args(quick))
        .output()
        .map_err(|e| format!("{} {}: {e}", run.work.name(), run.label()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{} {} failed ({}): {}",
            run.work.name(),
            run.label(),
            output.status,
            // A panic's message, not the backtrace hint after it.
            stderr
                .lines()
                .rfind(|line| !line.starts_with("note: "))
                .unwrap_or("")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(work: Work, alt_timer: bool) -> Vec<String> {
        let plan = Plan {
            w6_tick_ms: crate::options::DEFAULT_W6_TICK_MS,
            alt_timer,
        };
        runs_of(work, &plan).iter().map(Run::label).collect()
    }

    #[test]
    fn every_system_of_a_workload_takes_its_turn_in_a_repetition() {
        assert_eq!(
            labels(Work::W2, true),
            ["floor", "tickwheel", "ambient", "tokio", "pingora"]
        );
        assert_eq!(
            labels(Work::W1Mt, true),
            [
                "floor",
                "tickwheel",
                "tickwheel alt-timer",
                "tokio",
                "tokio alt-timer",
                "pingora"
            ]
        );
        // Without the alternative-timer build, neither alt-timer run.
        assert_eq!(
            labels(Work::W1Mt, false),
            ["floor", "tickwheel", "tokio", "pingora"]
        );
        // W5-W7: tokio's alternative timer only.
        assert_eq!(
            labels(Work::W7, true),
            ["tickwheel", "tokio", "tokio alt-timer"]
        );
        assert_eq!(
            labels(Work::W6, false),
            ["tickwheel", "tickwheel tick 10 ms", "tokio", "pingora"]
        );
        // W8, the trickle: the same second tick as W6; current-thread, so
        // no alternative timer.
        assert_eq!(
            labels(Work::W8, true),
            ["tickwheel", "tickwheel tick 10 ms", "tokio"]
        );
        // W8 on 2 workers: tickwheel's default timer against tokio's,
        // nothing else. W12, the busy runtime: both on tokio's alternative
        // timer too.
        assert_eq!(labels(Work::W8Mt, true), ["tickwheel", "tokio"]);
        for busy in crate::systems::Busy::ALL {
            assert_eq!(
                labels(Work::W12(busy), true),
                [
                    "tickwheel",
                    "tickwheel alt-timer",
                    "tokio",
                    "tokio alt-timer"
                ]
            );
            assert_eq!(labels(Work::W12(busy), false), ["tickwheel", "tokio"]);
        }
        // W13, registrations during a burst: tokio's alternative timer
        // beside tokio's.
        assert_eq!(
            labels(Work::W13, true),
            ["tickwheel", "tokio", "tokio alt-timer"]
        );
        assert_eq!(labels(Work::W13, false), ["tickwheel", "tokio"]);
        // W9, a task per sleep: the floor, tickwheel's default timer and
        // tokio's, on both runtimes (no alternative timer, as W8 on 2
        // workers); W11: tickwheel alone at each shard count.
        for work in crate::systems::TaskSleeps::ALL.map(Work::W9) {
            assert_eq!(labels(work, true), ["floor", "tickwheel", "tokio"]);
        }
        for shards in crate::systems::Shards::ALL {
            assert_eq!(labels(Work::W11(shards), true), ["tickwheel"]);
        }
        // W14: one child per configuration measures the wheel's sleeps and
        // tokio's side by side, on no alternative timer.
        for late in crate::systems::LatePoll::ALL {
            assert_eq!(labels(Work::W14(late), true), ["tickwheel"]);
        }
        // The delay queues: tickwheel's and tokio-util's (the `tokio` system),
        // on a current-thread runtime, where the alternative timer does not
        // apply.
        for work in [Work::Dq1, Work::Dq2, Work::Dq3] {
            assert_eq!(labels(work, true), ["tickwheel", "tokio"]);
        }
    }

    #[test]
    fn w11_shard_counts_take_turns_within_a_repetition() {
        use crate::systems::Shards;
        let groups = turns(&Work::ALL);
        let w11: Vec<Work> = Shards::ALL.into_iter().map(Work::W11).collect();
        assert!(groups.contains(&w11), "{groups:?}");
        // Every other workload alone, and every workload once, in order.
        for group in &groups {
            assert!(group.len() == 1 || *group == w11, "{group:?}");
        }
        assert_eq!(groups.concat(), Work::ALL);
        // A selection of some (`--workloads w9mt,w11-4,w11-64`).
        let w9mt = Work::W9(crate::systems::TaskSleeps::SPAWNED_MT);
        assert_eq!(
            turns(&[w9mt, Work::W11(Shards::S4), Work::W11(Shards::S64)]),
            [
                vec![w9mt],
                vec![Work::W11(Shards::S4), Work::W11(Shards::S64)]
            ]
        );
    }
}
