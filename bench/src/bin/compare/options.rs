//! The command line, of the parent (what to run) and of a child (one run).

use crate::systems::{Sys, Work};

pub const USAGE: &str = "\
usage: compare [--quick] [--reps N] [--alt-timer | --no-alt-timer] [--w6-tick-ms N]
               [--workloads LIST]
       compare --goals
       compare --child <w1ct|w1mt|w2|w3|w4|w5|w6|w7|w8|w8mt|w9ct|w9mt|
                        w9ct-joinset|w9mt-joinset|w9ct-notify|w9mt-notify|w11-4|w11-16|w11-64|
                        w12-1x100|w12-1x1000|w12-2x100|w12-2x1000|w13|
                        w14-base-1|w14-late-1|w14-base-2|w14-late-2|
                        w10-base-1x32|w10-base-1x1000|w10-base-2x32|w10-base-2x1000|
                        w10-outlive-2x1000|w10-heavy-2x1000|dq1|dq2|dq3>
                       <floor|tickwheel|ambient|tokio|pingora>
               [--quick] [--tick-ms N] [--alt-timer]

  --quick          smaller sizes and 2 repetitions: a smoke run (development, CI)
  --reps N         child processes per workload and system (default 5, 2 with --quick)
  --alt-timer      measure tokio's alternative timer too (default without --quick),
                   and tickwheel on a runtime with it (W1 on 2 workers, W12); it
                   needs a second build, with --cfg tokio_unstable, in target/alt-timer
  --no-alt-timer   do not (default with --quick)
  --w6-tick-ms N   the tick of W6's and W8's second tickwheel run, for comparison
                   with the default 1 ms tick (default 10, the default before 1 ms)
  --workloads LIST only these workloads, comma-separated: names as for --child,
                   or a family (w9: its six shapes and runtimes; w11: its three
                   shard counts; w12: its four configurations; w14: its four,
                   w14-late the two with the late task; w10: its six,
                   w10-base the four baseline ones), e.g. w8,w8mt,w9,w11,w12,w13;
                   the goals of the others say NO DATA. W10 (an HTTP service
                   under wrk) needs wrk (bench/scripts/install-wrk.sh) and runs
                   under --quick only when named here
  --goals          print the performance goals (BENCHMARKS.md's table) and exit

  A child runs one workload for one system and prints key=value lines
  (W14's one child, run as tickwheel, measures tokio's sleeps beside its own);
  --tick-ms sets tickwheel's tick, --alt-timer builds tokio's runtimes with
  its alternative timer, for either system (only in a --cfg tokio_unstable
  build).";

/// The tick of W6's and W8's second tickwheel run unless `--w6-tick-ms` says
/// otherwise: tickwheel's default before it became 1 ms, so the report shows
/// what the finer default changed.
pub const DEFAULT_W6_TICK_MS: u32 = 10;

/// What one child runs.
pub struct Child {
    pub work: Work,
    pub sys: Sys,
    pub tick_ms: Option<u32>,
    pub alt_timer: bool,
}

pub struct Options {
    pub quick: bool,
    /// `None`: the default of the sizes.
    pub reps: Option<usize>,
    /// `None`: the default (on without `--quick`).
    pub alt_timer: Option<bool>,
    pub w6_tick_ms: u32,
    /// `--workloads`: the workloads to run, in the order of [`Work::ALL`];
    /// `None`: all of them.
    pub workloads: Option<Vec<Work>>,
    pub child: Option<Child>,
    /// `--goals`: print the goals and exit.
    pub goals: bool,
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<&String>) -> Result<T, String> {
    value
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{flag} needs a number"))
}

fn at_least_one<T: PartialOrd + From<u8>>(flag: &str, n: T) -> Result<T, String> {
    if n >= T::from(1) {
        Ok(n)
    } else {
        Err(format!("{flag} must be at least 1"))
    }
}

/// The workloads `list` names (comma-separated names or families, see
/// [`Work::selected_by`]), in the order of [`Work::ALL`].
fn workloads(list: &str) -> Result<Vec<Work>, String> {
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    if let Some(unknown) = items
        .iter()
        .find(|item| !Work::ALL.iter().any(|w| w.selected_by(item)))
    {
        return Err(format!("--workloads: no workload {unknown:?}"));
    }
    Ok(Work::ALL
        .into_iter()
        .filter(|w| items.iter().any(|item| w.selected_by(item)))
        .collect())
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        quick: false,
        reps: None,
        alt_timer: None,
        w6_tick_ms: DEFAULT_W6_TICK_MS,
        workloads: None,
        child: None,
        goals: false,
    };
    let mut tick_ms = None;
    let mut child = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--reps" => options.reps = Some(at_least_one(arg, number(arg, it.next())?)?),
            "--alt-timer" => options.alt_timer = Some(true),
            "--no-alt-timer" => options.alt_timer = Some(false),
            "--w6-tick-ms" => options.w6_tick_ms = at_least_one(arg, number(arg, it.next())?)?,
            "--workloads" => {
                let list = it.next().ok_or("--workloads needs a list")?;
                options.workloads = Some(workloads(list)?);
            }
            "--tick-ms" => tick_ms = Some(at_least_one(arg, number(arg, it.next())?)?),
            "--child" => {
                let work = it.next().and_then(|w| Work::parse(w));
                let sys = it.next().and_then(|s| Sys::parse(s));
                match work.zip(sys) {
                    Some(pair) => child = Some(pair),
                    None => return Err("--child needs a workload and a system".into()),
                }
            }
            "--goals" => options.goals = true,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    match child {
        Some((work, sys)) => {
            options.child = Some(Child {
                work,
                sys,
                tick_ms,
                alt_timer: options.alt_timer == Some(true),
            });
        }
        None if tick_ms.is_some() => return Err("--tick-ms is for a --child".into()),
        None => {}
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parent_defaults_and_flags() {
        let o = parse(&args("")).unwrap();
        assert!(!o.quick && o.reps.is_none() && o.alt_timer.is_none() && o.child.is_none());
        assert_eq!(o.w6_tick_ms, 10);
        let o = parse(&args("--quick --reps 3 --alt-timer --w6-tick-ms 2")).unwrap();
        assert!(o.quick);
        assert_eq!(
            (o.reps, o.alt_timer, o.w6_tick_ms),
            (Some(3), Some(true), 2)
        );
        assert!(parse(&args("--reps 0")).is_err());
        assert!(parse(&args("--reps")).is_err());
        assert!(parse(&args("--frobnicate")).is_err());
        assert!(parse(&args("--tick-ms 1")).is_err());
    }

    #[test]
    fn workloads_by_name_and_family_in_run_order() {
        use crate::systems::Busy;
        assert!(parse(&args("")).unwrap().workloads.is_none());
        let o = parse(&args("--workloads w12,w8mt,w8")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            [
                Work::W8,
                Work::W8Mt,
                Work::W12(Busy::W1T100),
                Work::W12(Busy::W1T1000),
                Work::W12(Busy::W2T100),
                Work::W12(Busy::W2T1000),
            ]
        );
        // One configuration; `w1` is no family of `w1ct`/`w1mt` (no dash).
        let o = parse(&args("--workloads w12-2x1000")).unwrap();
        assert_eq!(o.workloads.unwrap(), [Work::W12(Busy::W2T1000)]);
        // W9's spawned shape by its names (a name selects itself alone,
        // though `w9ct-joinset` starts with it), W11's family in shard order.
        use crate::systems::{Shards, TaskSleeps};
        let o = parse(&args("--workloads w11,w9mt,w9ct")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            [
                Work::W9(TaskSleeps::SPAWNED_CT),
                Work::W9(TaskSleeps::SPAWNED_MT),
                Work::W11(Shards::S4),
                Work::W11(Shards::S16),
                Work::W11(Shards::S64),
            ]
        );
        let o = parse(&args("--workloads w11-64")).unwrap();
        assert_eq!(o.workloads.unwrap(), [Work::W11(Shards::S64)]);
        // W9's family: every shape on both runtimes.
        let o = parse(&args("--workloads w9")).unwrap();
        assert_eq!(o.workloads.unwrap().len(), TaskSleeps::ALL.len());
        let o = parse(&args("--workloads w9mt-joinset")).unwrap();
        assert_eq!(o.workloads.unwrap(), [Work::W9(TaskSleeps::JOINSET_MT)]);
        assert!(parse(&args("--workloads w1")).is_err());
        // W10: the family, a shape's family, one configuration.
        use crate::systems::Http;
        let o = parse(&args("--workloads w10")).unwrap();
        assert_eq!(o.workloads.unwrap(), Http::ALL.map(Work::W10));
        let o = parse(&args("--workloads w10-base")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            Http::ALL[..4]
                .iter()
                .map(|&h| Work::W10(h))
                .collect::<Vec<_>>()
        );
        let o = parse(&args("--workloads w10-heavy-2x1000,w8")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            [Work::W8, Work::W10(Http::HEAVY_2X1000)]
        );
        // W13 by name, after W12 in run order.
        let o = parse(&args("--workloads w13,w12-1x100")).unwrap();
        assert_eq!(o.workloads.unwrap(), [Work::W12(Busy::W1T100), Work::W13]);
        // W14: the family, the two with the late task, one configuration.
        use crate::systems::LatePoll;
        let o = parse(&args("--workloads w14")).unwrap();
        assert_eq!(o.workloads.unwrap(), LatePoll::ALL.map(Work::W14));
        let o = parse(&args("--workloads w14-late")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            [Work::W14(LatePoll::LATE_1), Work::W14(LatePoll::LATE_2)]
        );
        let o = parse(&args("--workloads w14-base-2,w13")).unwrap();
        assert_eq!(
            o.workloads.unwrap(),
            [Work::W13, Work::W14(LatePoll::BASE_2)]
        );
        assert!(parse(&args("--workloads w12,w99")).is_err());
        assert!(parse(&args("--workloads")).is_err());
    }

    #[test]
    fn child_flags() {
        let o = parse(&args("--child w6 tickwheel --tick-ms 1 --quick")).unwrap();
        let child = o.child.unwrap();
        assert_eq!((child.work, child.sys), (Work::W6, Sys::Tickwheel));
        assert_eq!((child.tick_ms, child.alt_timer), (Some(1), false));
        let child = parse(&args("--child w1mt tokio --alt-timer"))
            .unwrap()
            .child
            .unwrap();
        assert!(child.alt_timer);
        let child = parse(&args("--child dq3 tokio")).unwrap().child.unwrap();
        assert_eq!((child.work, child.sys), (Work::Dq3, Sys::Tokio));
        let child = parse(&args("--child w2 ambient")).unwrap().child.unwrap();
        assert_eq!((child.work, child.sys), (Work::W2, Sys::Ambient));
        let child = parse(&args("--child w8 tickwheel --tick-ms 10"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!((child.work, child.sys), (Work::W8, Sys::Tickwheel));
        assert_eq!(child.tick_ms, Some(10));
        let child = parse(&args("--child w12-1x1000 tickwheel"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!(
            (child.work, child.sys),
            (Work::W12(crate::systems::Busy::W1T1000), Sys::Tickwheel)
        );
        let child = parse(&args("--child w11-16 tickwheel --quick"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!(
            (child.work, child.sys),
            (Work::W11(crate::systems::Shards::S16), Sys::Tickwheel)
        );
        let child = parse(&args("--child w13 tokio --quick"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!((child.work, child.sys), (Work::W13, Sys::Tokio));
        let child = parse(&args("--child w12-2x100 tickwheel --alt-timer"))
            .unwrap()
            .child
            .unwrap();
        assert!(child.alt_timer);
        let child = parse(&args("--child w9mt floor")).unwrap().child.unwrap();
        assert_eq!(
            (child.work, child.sys),
            (Work::W9(crate::systems::TaskSleeps::SPAWNED_MT), Sys::Floor)
        );
        let child = parse(&args("--child w9ct-notify tokio"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!(child.work, Work::W9(crate::systems::TaskSleeps::NOTIFY_CT));
        assert!(parse(&args("--child w11 tickwheel")).is_err());
        assert!(parse(&args("--child w12 tokio")).is_err());
        let child = parse(&args("--child w14-late-1 tickwheel --quick"))
            .unwrap()
            .child
            .unwrap();
        assert_eq!(
            (child.work, child.sys),
            (Work::W14(crate::systems::LatePoll::LATE_1), Sys::Tickwheel)
        );
        assert!(parse(&args("--child w14 tickwheel")).is_err());
        assert!(parse(&args("--child w9 tokio")).is_err());
        assert!(parse(&args("--goals")).unwrap().goals);
        assert!(parse(&args("--child w6 tickwheel --tick-ms 0")).is_err());
    }
}
