//! The project's performance goals, as data: [`GOALS`], one row per goal
//! (the workload and its configurations, the conditions with their bounds,
//! what each is compared with, and what the goal protects), and the one
//! evaluator that judges every goal MET or MISSED from a run's repetitions.
//! `compare --goals` prints the table as BENCHMARKS.md holds it, and a test
//! checks that BENCHMARKS.md holds it so. Beside them, [`COMPARISONS`]:
//! figures shown for comparison, never judged (tickwheel at a second tick).
//!
//! How a condition is judged: a ratio compares the medians over the
//! repetitions (tickwheel's median against the reference's), except where
//! it says "in every repetition" (tickwheel's figure of repetition k against
//! the reference's of repetition k); "0 in every repetition" and "some in
//! every repetition" need every repetition's figure; a figure "above the
//! floor" is each repetition's figure less the floor's of the same
//! repetition. A goal with a figure missing is NO DATA. A goal marked
//! `alt_timer_too` is also shown, not judged, with both systems on tokio's
//! alternative timer (its conditions against tokio, tokio alt's figures as
//! the reference).

use std::fmt::Write as _;

use crate::results::{every_rep, fmt_spread, median, paired, ratio, PerRep, Results, Spread};
use crate::runs::Variant;
use crate::systems::{Busy, Http, LatePoll, Shards, Sys, TaskSleeps, Work};

/// How the run that produced a figure was set up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Setting {
    /// The default settings.
    Plain,
    /// On a runtime with tokio's alternative timer.
    AltTimer,
    /// tickwheel at the second tick (`--w6-tick-ms`).
    SecondTick,
}

/// One figure of a run: `key` of `sys`, in the goal's workload unless
/// `work` names another.
#[derive(Clone, Copy, Debug)]
pub struct Fig {
    pub sys: Sys,
    pub setting: Setting,
    pub key: &'static str,
    /// Each repetition's figure less the floor's of the same repetition.
    pub above_floor: bool,
    pub work: Option<Work>,
}

const fn fig(sys: Sys, key: &'static str) -> Fig {
    Fig {
        sys,
        setting: Setting::Plain,
        key,
        above_floor: false,
        work: None,
    }
}

const fn tw(key: &'static str) -> Fig {
    fig(Sys::Tickwheel, key)
}

const fn tokio(key: &'static str) -> Fig {
    fig(Sys::Tokio, key)
}

impl Fig {
    const fn above_floor(self) -> Fig {
        Fig {
            above_floor: true,
            ..self
        }
    }

    const fn of(self, work: Work) -> Fig {
        Fig {
            work: Some(work),
            ..self
        }
    }

    const fn at(self, setting: Setting) -> Fig {
        Fig { setting, ..self }
    }

    /// Its figure per repetition in `work` (unless it names its own).
    fn per_rep(self, r: &Results, work: Work, second_tick_ms: u32) -> PerRep {
        let work = self.work.unwrap_or(work);
        let variant = match self.setting {
            Setting::Plain => Variant::Plain,
            Setting::AltTimer => Variant::AltTimer,
            Setting::SecondTick => Variant::TickMs(second_tick_ms),
        };
        if self.above_floor {
            r.overhead_per_rep_of(work, self.sys, variant, self.key)
        } else {
            r.per_rep(work, self.sys, variant, self.key)
        }
    }
}

/// What a condition asks of its figure.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Bound {
    /// At most this many times the reference's (medians).
    Ratio(f64),
    /// At most this many times the reference's in every repetition.
    RatioEveryRep(f64),
    /// Below the reference's (medians).
    Below,
    /// At most this, in the figure's unit (median).
    AtMost(f64),
    /// At least this (median).
    AtLeast(f64),
    /// At most the reference's plus this, in the figure's unit (medians).
    Plus(f64),
    /// At most this many times the reference's plus this, in the figure's
    /// unit, in every repetition (repetition k against the reference's k).
    RatioPlusEveryRep(f64, f64),
    /// 0 in every repetition.
    Zero,
    /// Above 0 in every repetition (else a "0 early" beside it checked
    /// nothing).
    Some,
    /// Shown beside the verdict, not judged.
    Shown,
}

/// One condition of a goal: a figure of tickwheel's, its bound, and the
/// figure it is compared with.
#[derive(Clone, Copy, Debug)]
pub struct Condition {
    /// The figure, as the rule names it.
    pub what: &'static str,
    pub subject: Fig,
    pub bound: Bound,
    /// The reference figure, and how the rule names it.
    pub reference: Option<(Fig, &'static str)>,
    pub unit: &'static str,
    pub digits: usize,
}

const fn cond(what: &'static str, subject: Fig, bound: Bound, unit: &'static str) -> Condition {
    Condition {
        what,
        subject,
        bound,
        reference: None,
        unit,
        digits: 2,
    }
}

impl Condition {
    const fn against(self, reference: Fig, name: &'static str) -> Condition {
        Condition {
            reference: Some((reference, name)),
            ..self
        }
    }

    const fn digits(self, digits: usize) -> Condition {
        Condition { digits, ..self }
    }
}

/// tickwheel's `key` at most `x` times tokio's (medians).
const fn to_tokio(what: &'static str, key: &'static str, x: f64, unit: &'static str) -> Condition {
    cond(what, tw(key), Bound::Ratio(x), unit).against(tokio(key), "tokio's")
}

/// The same above the floor of each repetition.
const fn above_floor_to_tokio(what: &'static str, key: &'static str, x: f64) -> Condition {
    cond(what, tw(key).above_floor(), Bound::Ratio(x), "ns")
        .against(tokio(key).above_floor(), "tokio's")
        .digits(1)
}

/// tokio-util's queue (the `tokio` system of the delay-queue workloads).
const fn to_tokio_util(what: &'static str, key: &'static str, unit: &'static str) -> Condition {
    cond(what, tw(key), Bound::Ratio(0.5), unit).against(tokio(key), "tokio-util's")
}

/// `key` of tickwheel's 0 in every repetition.
const fn none(what: &'static str, key: &'static str) -> Condition {
    cond(what, tw(key), Bound::Zero, "").digits(0)
}

const EARLY: Condition = none("early", "early");

/// `key` of `sys` shown beside the verdict.
const fn shown(what: &'static str, subject: Fig, unit: &'static str, digits: usize) -> Condition {
    cond(what, subject, Bound::Shown, unit).digits(digits)
}

/// A performance goal.
#[derive(Debug)]
pub struct Goal {
    /// The goal's name in the verdicts, before its configuration's.
    pub name: &'static str,
    pub workload: &'static str,
    /// The configurations, as the goal table says them.
    pub configuration: &'static str,
    /// A verdict per workload run here.
    pub works: &'static [Work],
    pub conditions: &'static [Condition],
    /// What the figures are compared with.
    pub against: &'static str,
    /// Why the goal is there: what a user would lose without it.
    pub protects: &'static str,
    /// Also shown with both systems on tokio's alternative timer.
    pub alt_timer_too: bool,
}

const fn goal(
    name: &'static str,
    workload: &'static str,
    configuration: &'static str,
    works: &'static [Work],
    conditions: &'static [Condition],
    against: &'static str,
    protects: &'static str,
) -> Goal {
    Goal {
        name,
        workload,
        configuration,
        works,
        conditions,
        against,
        protects,
        alt_timer_too: false,
    }
}

impl Goal {
    const fn alt_timer_too(self) -> Goal {
        Goal {
            alt_timer_too: true,
            ..self
        }
    }
}

const BUSY: [Work; 4] = [
    Work::W12(Busy::W1T100),
    Work::W12(Busy::W1T1000),
    Work::W12(Busy::W2T100),
    Work::W12(Busy::W2T1000),
];
const LATE_POLL: [Work; 4] = [
    Work::W14(LatePoll::LATE_1),
    Work::W14(LatePoll::LATE_2),
    Work::W14(LatePoll::BASE_1),
    Work::W14(LatePoll::BASE_2),
];
const HTTP_BASE: [Work; 4] = [
    Work::W10(Http::BASE_1X32),
    Work::W10(Http::BASE_1X1000),
    Work::W10(Http::BASE_2X32),
    Work::W10(Http::BASE_2X1000),
];
const TOKIO_SAME_REP: &str = "tokio::time, the same repetition";
const TOKIO: &str = "tokio::time";
const TOKIO_UTIL: &str = "tokio-util's DelayQueue";

/// W10: CPU per request at most `cpu` x tokio's, p99 at most tokio's, no
/// deadline early.
const fn http(cpu: f64) -> [Condition; 4] {
    [
        to_tokio("CPU/request", "cpu_us_per_request", cpu, "us"),
        to_tokio("p99", "p99_ms", 1.0, "ms"),
        none("call deadlines early", "call_early"),
        none("408s early", "r408_early"),
    ]
}
const HTTP: [Condition; 4] = http(1.0);
const HTTP_HEAVY: [Condition; 4] = http(0.95);
const HTTP_OUTLIVE: [Condition; 6] = [
    HTTP[0],
    HTTP[1],
    HTTP[2],
    HTTP[3],
    cond("call deadlines fired", tw("call_fired"), Bound::Some, "").digits(0),
    cond("408s", tw("r408"), Bound::Some, "").digits(0),
];

/// W11: `key` at 64 shards at most 1.1 x at 4 (medians), and `early` 0 at
/// every shard count in every repetition.
const fn shard_cpu(key: &'static str, early: &'static str) -> [Condition; 5] {
    [
        cond("64 shards", tw(key), Bound::Ratio(1.1), "s")
            .against(tw(key).of(Work::W11(Shards::S4)), "4 shards'")
            .digits(4),
        shown("16 shards", tw(key).of(Work::W11(Shards::S16)), "s", 4),
        none("early at 4 shards", early).subject_of(Work::W11(Shards::S4)),
        none("early at 16 shards", early).subject_of(Work::W11(Shards::S16)),
        none("early at 64 shards", early),
    ]
}

const SHARDS_TRICKLE: [Condition; 5] = shard_cpu("trickle_cpu_s", "trickle_early");
const SHARDS_W9: [Condition; 5] = shard_cpu("w9_cpu_s", "w9_early");

impl Condition {
    const fn subject_of(self, work: Work) -> Condition {
        Condition {
            subject: self.subject.of(work),
            ..self
        }
    }
}

/// The goals, in the order of the verdicts: name, workload, configuration,
/// the workloads judged, the conditions, what they are compared with, what
/// the goal protects.
#[rustfmt::skip]
pub const GOALS: &[Goal] = &[
    goal("W1 64 tasks / 2 workers", "W1", "`timeout(5 s, f)`, 64 tasks on 2 workers", &[Work::W1Mt], &[
        cond("ns/op", tw("ns_per_op"), Bound::RatioEveryRep(0.35), "ns").against(tokio("ns_per_op"), "tokio's").digits(1),
        cond("median", tw("ns_per_op"), Bound::Below, "ns").against(fig(Sys::Pingora, "ns_per_op"), "pingora's").digits(1),
        shown("tokio alt timer", tokio("ns_per_op").at(Setting::AltTimer), "ns", 1),
    ], "tokio::time in the same repetition; pingora-timeout",
    "the headline: a timeout around a call that finishes first, the commonest timer in a service, \
     costs a multi-threaded service a third of tokio's, in every repetition and not only on average")
    .alt_timer_too(),
    goal("W1 current-thread overhead", "W1", "`timeout(5 s, f)`, current-thread", &[Work::W1Ct],
        &[above_floor_to_tokio("overhead above the floor", "ns_per_op", 0.5)], TOKIO_SAME_REP,
        "the same timeout on one thread, counted above the call it wraps"),
    goal("W2 churn overhead", "W2", "a sleep made, polled once and dropped", &[Work::W2],
        &[above_floor_to_tokio("overhead above the floor", "ns_per_op", 0.5)], TOKIO_SAME_REP,
        "deadlines that are set and never needed (most of them) stay cheap"),
    goal("W2 free function vs held handle", "W2", "`tickwheel::time::sleep` against `timer.sleep`", &[Work::W2], &[
        cond("ambient overhead", fig(Sys::Ambient, "ns_per_op").above_floor(), Bound::Ratio(1.15), "ns")
            .against(tw("ns_per_op").above_floor(), "the held handle's").digits(1),
    ], "tickwheel through a held Timer",
    "the drop-in for `tokio::time::sleep` (no handle held) costs little more than holding a Timer"),
    goal("W3 CPU register+fire", "W3", "1M sleeps registered and fired, current-thread", &[Work::W3],
        &[to_tokio("CPU", "cpu_s", 0.35, "s").digits(3)], TOKIO,
        "bulk timers (a million registered and fired) cost a fraction of tokio's CPU"),
    goal("W3 bytes per pending sleep", "W3", "1M sleeps pending", &[Work::W3], &[
        cond("Sleep + entry, measured heap", tw("bytes_per_timer"), Bound::AtMost(48.0), "B"),
        shown("Sleep", tw("sleep_size"), "B", 0),
        shown("entry", tw("entry_bytes_per_pending"), "B", 2),
    ], "a fixed bound", "memory per pending timer: what a service with a million open deadlines holds"),
    goal("W4 register, 0 pending", "W4", "registration from `block_on`, none pending", &[Work::W4],
        &[to_tokio("register", "register_ns_0", 0.9, "ns").digits(1)], TOKIO,
        "registration itself is cheaper than tokio's"),
    goal("W4 register, 1M pending", "W4", "registration from `block_on`, 1M pending", &[Work::W4],
        &[to_tokio("register", "register_ns_1m", 0.9, "ns").digits(1)], TOKIO,
        "the same with a million timers pending"),
    goal("W4 register, 1M pending vs none", "W4", "registration, 1M pending against none", &[Work::W4], &[
        cond("1M pending", tw("register_ns_1m"), Bound::Ratio(1.5), "ns").against(tw("register_ns_0"), "with none").digits(1),
    ], "tickwheel with nothing pending", "registration does not slow down as timers pile up"),
    goal("W5 idle wake-ups", "W5", "2 workers idle for 5 s after one timer fired", &[Work::W5],
        &[none("driver wake-ups", "wakeups"), shown("CPU", tw("cpu_ms"), "ms", 2)], "none",
        "an idle service stays asleep: the timer wakes no thread when nothing is pending"),
    goal("W6 lateness, 1M pending, default tick", "W6", "1M sleeps pending on 2 workers, 1 ms tick", &[Work::W6], &[
        to_tokio("p99", "p99_ms", 0.75, "ms"),
        cond("p50", tw("p50_ms"), Bound::AtMost(1.5), "ms"),
        EARLY,
        shown("tick", tw("tick_ms"), "ms", 0),
    ], TOKIO, "sleeps fire on time under a million pending timers, and never early"),
    goal("W6 lateness p50 against tokio's", "W6", "1M sleeps pending on 2 workers, 1 ms tick", &[Work::W6],
        &[to_tokio("p50", "p50_ms", 1.0, "ms")], TOKIO, "the typical sleep is no later than tokio's"),
    goal("W7 idle-timeout resets", "W7", "100k idle timeouts pushed back at random, 2 tasks on 2 workers", &[Work::W7], &[
        to_tokio("reset", "ns_per_reset", 0.35, "ns").digits(1),
        shown("tokio alt timer", tokio("ns_per_reset").at(Setting::AltTimer), "ns", 1),
    ], TOKIO, "idle timeouts pushed back on every message (connections, leases) are cheap"),
    goal("W8 trickle at the default tick", "W8", "a 1-50 ms sleep every ms, current-thread, 1 ms tick", &[Work::W8], &[
        EARLY,
        cond("CPU (shown: mostly the pacing both pay)", tw("cpu_s"), Bound::Shown, "s").against(tokio("cpu_s"), "tokio's").digits(4),
        shown("driver wake-ups/s", tw("wakeups_per_s"), "", 0),
        shown("tick", tw("tick_ms"), "ms", 0),
    ], "none (CPU shown beside tokio::time's)",
    "a lightly loaded service's short sleeps are never early at the 1 ms tick"),
    goal("W8 trickle lateness", "W8", "a 1-50 ms sleep every ms, current-thread and 2 workers", &[Work::W8, Work::W8Mt], &[
        to_tokio("p99", "late_p99_ms", 1.1, "ms"),
        EARLY,
        cond("p50", tw("late_p50_ms"), Bound::Shown, "ms").against(tokio("late_p50_ms"), "tokio's"),
    ], TOKIO, "short sleeps are as timely as tokio's on either runtime"),
    goal("W9 task per sleep", "W9", "200k tasks each awaiting a sleep, spawned by a task; current-thread and 2 workers",
        &[Work::W9(TaskSleeps::SPAWNED_CT), Work::W9(TaskSleeps::SPAWNED_MT)], &[
        above_floor_to_tokio("CPU per sleep above the floor", "cpu_ns_per_op", 0.5).digits(0),
        EARLY,
        shown("floor per task", fig(Sys::Floor, "cpu_ns_per_op"), "ns", 0),
    ], TOKIO_SAME_REP,
    "a sleep awaited by its own task, the pattern services run, costs half of tokio's beyond what the \
     runtime spends on any task that waits once"),
    goal("W9 task per sleep", "W9", "the same spawned from `block_on`, collected by a JoinSet or counted down to a Notify",
        &[Work::W9(TaskSleeps::JOINSET_CT), Work::W9(TaskSleeps::JOINSET_MT),
          Work::W9(TaskSleeps::NOTIFY_CT), Work::W9(TaskSleeps::NOTIFY_MT)], &[
        above_floor_to_tokio("CPU per sleep above the floor", "cpu_ns_per_op", 0.75).digits(0),
        shown("floor per task", fig(Sys::Floor, "cpu_ns_per_op"), "ns", 0),
    ], TOKIO_SAME_REP,
    "the lead holds (three quarters of tokio's or less) in the shapes a user's own harness takes, so \
     the claim does not depend on how the tasks are spawned and collected"),
    goal("W11 new timer's heap, 64 shards", "W11", "a timer with 64 shards on 2 workers", &[Work::W11(Shards::S64)], &[
        cond("heap", tw("timer_bytes"), Bound::AtMost(1e6), "B").digits(0),
        shown("4 shards", tw("timer_bytes").of(Work::W11(Shards::S4)), "B", 0),
        shown("16 shards", tw("timer_bytes").of(Work::W11(Shards::S16)), "B", 0),
    ], "a fixed bound", "a timer sized for a many-core machine does not cost a small one its memory"),
    goal("W11 trickle CPU, 64 shards vs 4", "W11", "W8's trickle on 2 workers, 64 shards", &[Work::W11(Shards::S64)],
        &SHARDS_TRICKLE, "tickwheel at 4 shards", "a driver pass does not grow with shards that have nothing due"),
    goal("W11 W9 CPU, 64 shards vs 4", "W11", "W9's tasks on 2 workers, 64 shards", &[Work::W11(Shards::S64)],
        &SHARDS_W9, "tickwheel at 4 shards", "many shards cost a task per sleep nothing"),
    goal("W12 busy runtime", "W12", "1 or 2 workers busy with 100 or 1,000 tasks", &BUSY, &[
        to_tokio("p50", "late_p50_ms", 1.25, "ms"),
        to_tokio("p99", "late_p99_ms", 1.05, "ms"),
        cond("wake-ups per busy tick", tw("wakeups_per_busy_tick"), Bound::AtLeast(0.95), ""),
        EARLY,
    ], TOKIO,
    "sleeps on a runtime with long run queues are as timely as tokio's, the driver waking once per \
     tick that holds a deadline")
    .alt_timer_too(),
    goal("W13 registration during a burst", "W13", "registrations on a thread of their own while 100k sleeps fire", &[Work::W13], &[
        to_tokio("p99.9", "reg_p999_us", 1.0, "us"),
        cond("registrations measured", tw("registrations"), Bound::Some, "").digits(0),
        EARLY,
        cond("max", tw("reg_max_us"), Bound::Shown, "us").against(tokio("reg_max_us"), "tokio's").digits(1),
        cond("blocked", tw("probes_blocked"), Bound::Shown, "").against(tokio("probes_blocked"), "tokio's").digits(0),
        shown("tokio alt timer p99.9", tokio("reg_p999_us").at(Setting::AltTimer), "us", 2),
    ], TOKIO, "registering a sleep never waits for, or does, the wake-ups of a burst"),
    goal("W14 late first poll", "W14",
        "1 or 2 workers busy with 1,000 tasks; 200 tasks' sleeps, each beside a tokio sleep, with and without a task whose sleep is first polled after its tick",
        &LATE_POLL, &[
        cond("other wheel sleeps' p99 at the waker", tw("wheel_p99_ms"), Bound::RatioPlusEveryRep(1.5, 1.0), "ms")
            .against(tw("tokio_p99_ms"), "tokio's p99"),
        none("wheel sleeps early", "wheel_early"),
        cond("p50", tw("wheel_p50_ms"), Bound::Shown, "ms").against(tw("tokio_p50_ms"), "tokio's"),
        cond("woken 10 ms late or more", tw("wheel_late_10ms"), Bound::Shown, "").against(tw("tokio_late_10ms"), "tokio's").digits(0),
    ], "tokio::time, the same runtime and moments",
    "one sleep awaited after its tick (made before some work, or a select! arm built early) leaves the \
     other sleeps on its timer as timely as tokio's, instead of waiting for the driver task's turn in a \
     long run queue"),
    goal("W10 HTTP service", "W10", "a hyper server under wrk, baseline shape, 1 or 2 workers x 32 or 1,000 connections",
        &HTTP_BASE, &HTTP, TOKIO,
        "swapping tokio's timers for tickwheel's in a real service costs no CPU and no tail latency, and \
         no deadline fires early"),
    goal("W10 HTTP service", "W10", "the same, 2 workers x 1,000, 5% of calls and 1% of requests outliving their deadline",
        &[Work::W10(Http::OUTLIVE_2X1000)], &HTTP_OUTLIVE, TOKIO,
        "the same when deadlines fire (and they did fire, or \"none early\" checked nothing)"),
    goal("W10 HTTP service", "W10", "the same, 2 workers x 1,000, 8 timers per request",
        &[Work::W10(Http::HEAVY_2X1000)], &HTTP_HEAVY, TOKIO,
        "where timers are a larger share of a request, tickwheel's lower cost shows"),
    goal("DQ1 CPU", "DQ1", "1M items inserted, all expired", &[Work::Dq1],
        &[to_tokio_util("CPU", "cpu_s", "s").digits(3)], TOKIO_UTIL,
        "a DelayQueue of a million items costs half of tokio-util's CPU"),
    goal("DQ1 memory per item", "DQ1", "1M items pending", &[Work::Dq1],
        &[to_tokio_util("memory", "bytes_per_item", "B").digits(1)], TOKIO_UTIL, "and half of its memory"),
    goal("DQ1 lateness", "DQ1", "1M items inserted, all expired", &[Work::Dq1], &[
        cond("p99", tw("p99_ms"), Bound::Plus(2.0), "ms").against(tw("resolution_ms"), "1 tick"),
        EARLY,
    ], "the queue's tick", "items come out within a tick and 2 ms of their deadline, never before it"),
    goal("DQ2 CPU per op", "DQ2", "insert + remove, 10k pending, one timeout (replies in order)", &[Work::Dq2],
        &[to_tokio_util("CPU", "cpu_ns_per_op", "ns").digits(1)], TOKIO_UTIL,
        "a request table (insert, then remove on reply) costs half of tokio-util's"),
    goal("DQ2 CPU per op, random delays", "DQ2", "the same with random delays", &[Work::Dq2],
        &[to_tokio_util("CPU", "cpu_ns_per_op_random", "ns").digits(1)], TOKIO_UTIL,
        "the same whatever the order the items are due in"),
    goal("DQ3 CPU per op", "DQ3", "insert + reset, idle timeouts refreshed", &[Work::Dq3],
        &[to_tokio_util("CPU", "cpu_ns_per_op", "ns").digits(1)], TOKIO_UTIL,
        "idle timeouts refreshed on use cost half of tokio-util's"),
    goal("DQ3 CPU per op, reset to random delays", "DQ3", "insert + reset to random delays", &[Work::Dq3],
        &[to_tokio_util("CPU", "cpu_ns_per_op_random", "ns").digits(1)], TOKIO_UTIL,
        "the same when resets move items earlier as often as later"),
];

/// Figures shown beside the goals, never judged: tickwheel at the second
/// tick (`--w6-tick-ms`, 10 ms by default: the default tick before 1 ms).
#[rustfmt::skip]
pub const COMPARISONS: &[Goal] = &[
    goal("W6 lateness at the second tick", "W6", "", &[Work::W6], &[
        shown("p99", tw("p99_ms").at(Setting::SecondTick), "ms", 2),
        shown("p50", tw("p50_ms").at(Setting::SecondTick), "ms", 2),
        shown("early", tw("early").at(Setting::SecondTick), "", 0),
        shown("tick", tw("tick_ms").at(Setting::SecondTick), "ms", 0),
    ], "", ""),
    goal("W8 trickle at the second tick", "W8", "", &[Work::W8], &[
        cond("CPU", tw("cpu_s").at(Setting::SecondTick), Bound::Shown, "s").against(tokio("cpu_s"), "tokio's").digits(4),
        shown("early", tw("early").at(Setting::SecondTick), "", 0),
        shown("driver wake-ups/s", tw("wakeups_per_s").at(Setting::SecondTick), "", 0),
        shown("tick", tw("tick_ms").at(Setting::SecondTick), "ms", 0),
    ], "", ""),
];

/// The ratio to tokio's median that the goals ask of tickwheel's `key` in
/// `work` (the line the chart draws), if a goal asks one.
pub fn ratio_bound(work: Work, key: &str) -> Option<f64> {
    GOALS
        .iter()
        .filter(|g| g.works.contains(&work))
        .flat_map(|g| g.conditions)
        .find_map(|c| match (c.bound, c.reference) {
            (Bound::Ratio(x) | Bound::RatioEveryRep(x), Some((r, _)))
                if c.subject.key == key
                    && c.subject.sys == Sys::Tickwheel
                    && r.sys == Sys::Tokio =>
            {
                Some(x)
            }
            _ => None,
        })
}

impl Condition {
    /// The rule, as the goal table and the verdicts say it.
    fn rule(&self) -> Option<String> {
        let what = self.what;
        let reference = self.reference.map_or("", |(_, name)| name);
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        Some(match self.bound {
            Bound::Ratio(x) => format!("{what} <= {x} x {reference} (medians)"),
            Bound::RatioEveryRep(x) => format!("{what} <= {x} x {reference} in every repetition"),
            Bound::Below => format!("{what} < {reference}"),
            Bound::AtMost(x) => format!("{what} <= {x}{unit} (median)"),
            Bound::AtLeast(x) => format!("{what} >= {x}{unit} (median)"),
            Bound::Plus(x) => format!("{what} <= {reference} + {x}{unit} (medians)"),
            Bound::RatioPlusEveryRep(x, plus) => {
                format!("{what} <= {x} x {reference} + {plus}{unit} in every repetition")
            }
            Bound::Zero => format!("{what}: 0 in every repetition"),
            Bound::Some => format!("{what}: some in every repetition"),
            Bound::Shown => return None,
        })
    }

    /// Whether it holds in `work` (`None`: a figure missing; not asked of
    /// a shown figure), and its figures.
    fn judge(&self, r: &Results, work: Work, tick_ms: u32) -> (Option<Option<bool>>, String) {
        let mine = self.subject.per_rep(r, work, tick_ms);
        let theirs = self
            .reference
            .map(|(fig, name)| (fig.per_rep(r, work, tick_ms), name));
        let spread = |per_rep: &PerRep| Spread::of(per_rep.values().copied());
        let (m, t) = (
            median(spread(&mine)),
            theirs.as_ref().and_then(|(t, _)| median(spread(t))),
        );
        let x = ratio(m, t);
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let mut detail = format!(
            "{} {}{unit}",
            self.what,
            fmt_spread(spread(&mine), self.digits)
        );
        if let Some((t_rep, name)) = &theirs {
            let name = name.trim_end_matches("'s").trim_end_matches('\'');
            let _ = write!(
                detail,
                ", {name} {}{unit}",
                fmt_spread(spread(t_rep), self.digits)
            );
            // A bound with a constant term is no ratio; the repetitions
            // then say how each compared.
            let no_ratio = matches!(self.bound, Bound::Plus(_) | Bound::RatioPlusEveryRep(..));
            if let (Some(x), false) = (x, no_ratio) {
                let _ = write!(detail, ": {x:.2}x");
            }
        }
        let reps = r.reps;
        let verdict = match self.bound {
            Bound::Ratio(max) => x.map(|x| x <= max),
            Bound::RatioEveryRep(max) => {
                let ratios: PerRep = theirs
                    .as_ref()
                    .map(|(t, _)| {
                        paired(&mine, t)
                            .into_iter()
                            .map(|(k, a, b)| (k, a / b))
                            .collect()
                    })
                    .unwrap_or_default();
                let by_rep: Vec<String> = ratios.values().map(|x| format!("{x:.2}")).collect();
                detail = format!(
                    "{} by repetition: {}; {detail}",
                    self.what,
                    by_rep.join(", ")
                );
                every_rep(&ratios, reps, |x| x <= max)
            }
            Bound::Below => m.zip(t).map(|(m, t)| m < t),
            Bound::AtMost(max) => m.map(|m| m <= max),
            Bound::AtLeast(min) => m.map(|m| m >= min),
            Bound::Plus(plus) => m.zip(t).map(|(m, t)| m <= t + plus),
            Bound::RatioPlusEveryRep(max, plus) => {
                let pairs: Vec<(usize, f64, f64)> = theirs
                    .as_ref()
                    .map(|(t, _)| paired(&mine, t))
                    .unwrap_or_default();
                let digits = self.digits;
                let by_rep: Vec<String> = pairs
                    .iter()
                    .map(|&(_, a, b)| format!("{a:.digits$} (bound {:.digits$})", max * b + plus))
                    .collect();
                detail = format!(
                    "{} by repetition: {}; {detail}",
                    self.what,
                    by_rep.join(", ")
                );
                let margins: PerRep = pairs
                    .into_iter()
                    .map(|(k, a, b)| (k, a - (max * b + plus)))
                    .collect();
                every_rep(&margins, reps, |over| over <= 0.0)
            }
            Bound::Zero => every_rep(&mine, reps, |v| v == 0.0),
            Bound::Some => every_rep(&mine, reps, |v| v > 0.0),
            Bound::Shown => return (None, detail),
        };
        (Some(verdict), detail)
    }
}

impl Goal {
    /// Its conditions' rules, as one line.
    pub fn rule(&self) -> String {
        let rules: Vec<String> = self.conditions.iter().filter_map(Condition::rule).collect();
        if rules.is_empty() {
            "not judged: for comparison".to_string()
        } else {
            rules.join("; ")
        }
    }

    /// The verdict row's name in `work`.
    fn name_in(&self, work: Work) -> String {
        match work.configuration() {
            configuration if configuration.is_empty() => self.name.to_string(),
            configuration => format!("{}, {configuration}", self.name),
        }
    }

    fn verdict(&self, r: &Results, work: Work, tick_ms: u32) -> Verdict {
        self.verdict_of(self.conditions.iter().copied(), r, work, tick_ms)
    }

    fn verdict_of(
        &self,
        conditions: impl Iterator<Item = Condition>,
        r: &Results,
        work: Work,
        tick_ms: u32,
    ) -> Verdict {
        let mut met = Some(true);
        let mut judged = false;
        let mut any_figure = false;
        let mut details = Vec::new();
        for c in conditions {
            let figures = !c.subject.per_rep(r, work, tick_ms).is_empty();
            any_figure |= figures;
            // A figure shown beside the verdict, where it was measured.
            if c.bound == Bound::Shown && !figures {
                continue;
            }
            let (verdict, detail) = c.judge(r, work, tick_ms);
            if let Some(verdict) = verdict {
                judged = true;
                met = met.zip(verdict).map(|(a, b)| a && b);
            }
            details.push(detail);
        }
        Verdict {
            name: self.name_in(work),
            rule: self.rule(),
            met: if judged { met } else { None },
            judged,
            detail: if any_figure {
                details.join("; ")
            } else {
                "no figures: not run".to_string()
            },
        }
    }

    /// The same with both systems on tokio's alternative timer: the
    /// conditions against tokio, shown with whether they hold, not judged.
    fn on_alt_timer(&self, r: &Results, work: Work, tick_ms: u32) -> Verdict {
        let alt = |fig: Fig| fig.at(Setting::AltTimer);
        let conditions = self.conditions.iter().filter_map(|c| {
            let (reference, _) = c.reference?;
            (reference.sys == Sys::Tokio && c.bound != Bound::Shown).then(|| Condition {
                subject: alt(c.subject),
                reference: Some((alt(reference), "tokio alt's")),
                ..*c
            })
        });
        let mut v = self.verdict_of(conditions.clone(), r, work, tick_ms);
        let holds = match v.met {
            Some(true) => "holds",
            Some(false) => "does not hold",
            None => "no figures (the alt-timer build runs without --quick, or with --alt-timer)",
        };
        let rules: Vec<String> = conditions.filter_map(|c| c.rule()).collect();
        v.name = format!("{}, alt timer", v.name);
        v.rule = format!(
            "not judged: tickwheel on a runtime with tokio's alternative timer: {}",
            rules.join("; ")
        );
        v.detail = if v.detail.starts_with("no figures") {
            holds.to_string()
        } else {
            format!("{holds}; {}", v.detail)
        };
        v.judged = false;
        v
    }
}

/// One goal's verdict in one workload.
pub struct Verdict {
    pub name: String,
    pub rule: String,
    /// `None`: not enough figures to judge.
    pub met: Option<bool>,
    /// `false`: a row shown for comparison, whatever `met` says.
    pub judged: bool,
    pub detail: String,
}

impl Verdict {
    pub fn result(&self) -> &'static str {
        if !self.judged {
            return "not judged";
        }
        match self.met {
            Some(true) => "MET",
            Some(false) => "MISSED",
            None => "NO DATA",
        }
    }
}

/// Every goal's verdict in every workload it names, then the comparisons;
/// `tick_ms`: the second tick.
pub fn verdicts(r: &Results, tick_ms: u32) -> Vec<Verdict> {
    let mut out = Vec::new();
    for goal in GOALS {
        for &work in goal.works {
            out.push(goal.verdict(r, work, tick_ms));
            if goal.alt_timer_too {
                out.push(goal.on_alt_timer(r, work, tick_ms));
            }
        }
    }
    for comparison in COMPARISONS {
        let mut v = comparison.verdict(r, comparison.works[0], tick_ms);
        v.name = format!("{} ({tick_ms} ms)", v.name);
        out.push(v);
    }
    out
}

/// The verdicts as a table, after a blank line.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut s = String::from("\n| goal | rule | result | figures |\n|---|---|---|---|\n");
    for v in verdicts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            v.name,
            v.rule,
            v.result(),
            v.detail
        );
    }
    s
}

/// The goals as BENCHMARKS.md holds them (`compare --goals`).
pub fn markdown() -> String {
    let mut s = String::from(
        "| workload | configuration | goal | compared with | protects |\n|---|---|---|---|---|\n",
    );
    for g in GOALS {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            g.workload,
            g.configuration,
            g.rule(),
            g.against,
            g.protects
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::Run;
    use crate::systems::Figures;

    /// `key` of each (system, variant) in `work`, one figure per
    /// repetition, added to `r`.
    fn add(r: &mut Results, work: Work, key: &str, runs: &[(Sys, Variant, &[f64])]) {
        for &(sys, variant, values) in runs {
            for (rep, &v) in values.iter().enumerate() {
                r.insert_one(Run { work, sys, variant }, rep, key, v);
            }
        }
    }

    /// tickwheel's and tokio's `key` in `work`, plain.
    fn both(r: &mut Results, work: Work, key: &str, tickwheel: &[f64], tokio: &[f64]) {
        let plain = Variant::Plain;
        add(
            r,
            work,
            key,
            &[
                (Sys::Tickwheel, plain, tickwheel),
                (Sys::Tokio, plain, tokio),
            ],
        );
    }

    /// The verdict named `name`, judged with the second tick at 10 ms.
    fn verdict(r: &Results, name: &str) -> Verdict {
        verdicts(r, 10)
            .into_iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no goal {name:?}"))
    }

    fn met(r: &Results, name: &str) -> Option<bool> {
        verdict(r, name).met
    }

    /// W1 2-worker figures: (tickwheel, tokio, pingora) ns/op per repetition.
    fn w1_mt(reps: usize, figures: &[(f64, f64, f64)]) -> Results {
        let mut r = Results::new(reps);
        for (rep, &(t, k, p)) in figures.iter().enumerate() {
            for (sys, ns) in [(Sys::Tickwheel, t), (Sys::Tokio, k), (Sys::Pingora, p)] {
                let run = Run {
                    work: Work::W1Mt,
                    sys,
                    variant: Variant::Plain,
                };
                r.insert(run, rep, Figures::from([("ns_per_op".to_string(), ns)]));
            }
        }
        r
    }

    const W1_MT: &str = "W1 64 tasks / 2 workers";

    #[test]
    fn w1_on_two_workers_is_judged_in_every_repetition() {
        // Every repetition at most 0.35 x tokio's (repetition 1 exactly),
        // median below pingora's.
        let r = w1_mt(
            3,
            &[(35.0, 100.0, 50.0), (30.0, 100.0, 50.0), (20.0, 60.0, 50.0)],
        );
        let v = verdict(&r, W1_MT);
        assert_eq!(v.met, Some(true), "{}", v.detail);
        assert_eq!(
            v.rule,
            "ns/op <= 0.35 x tokio's in every repetition; median < pingora's"
        );
        assert!(
            v.detail
                .starts_with("ns/op by repetition: 0.35, 0.30, 0.33;"),
            "{}",
            v.detail
        );
        // The medians are 0.3 x tokio's, but repetition 2 is 0.36 x.
        let r = w1_mt(
            3,
            &[
                (30.0, 100.0, 50.0),
                (36.0, 100.0, 60.0),
                (25.0, 100.0, 50.0),
            ],
        );
        assert_eq!(met(&r, W1_MT), Some(false));
        // Every repetition fine against tokio, but not below pingora.
        let r = w1_mt(2, &[(30.0, 100.0, 25.0), (30.0, 100.0, 25.0)]);
        assert_eq!(met(&r, W1_MT), Some(false));
        // A repetition missing: not judged.
        let r = w1_mt(3, &[(30.0, 100.0, 50.0), (30.0, 100.0, 50.0)]);
        assert_eq!(met(&r, W1_MT), None);
        assert_eq!(verdict(&r, W1_MT).result(), "NO DATA");
    }

    #[test]
    fn overheads_pair_each_repetition_with_its_own_floor() {
        // W2: held overheads 20, 30, 25 (median 25), ambient 22, 40, 28
        // (median 28): 1.12x, though repetition 2 alone is 1.33x.
        let name = "W2 free function vs held handle";
        let w2 = |figures: &[(f64, f64, f64)]| {
            let mut r = Results::new(figures.len());
            for (rep, &(f, t, a)) in figures.iter().enumerate() {
                for (sys, ns) in [(Sys::Floor, f), (Sys::Tickwheel, t), (Sys::Ambient, a)] {
                    let run = Run {
                        work: Work::W2,
                        sys,
                        variant: Variant::Plain,
                    };
                    r.insert_one(run, rep, "ns_per_op", ns);
                }
            }
            r
        };
        let r = w2(&[(10.0, 30.0, 32.0), (20.0, 50.0, 60.0), (15.0, 40.0, 43.0)]);
        assert_eq!(met(&r, name), Some(true));
        let r = w2(&[(10.0, 30.0, 35.0), (20.0, 50.0, 55.0), (15.0, 40.0, 45.0)]);
        assert_eq!(met(&r, name), Some(false));
        // Without the floor there is no overhead to compare.
        let mut r = Results::new(1);
        let plain = Variant::Plain;
        add(
            &mut r,
            Work::W2,
            "ns_per_op",
            &[
                (Sys::Tickwheel, plain, &[30.0]),
                (Sys::Ambient, plain, &[30.0]),
            ],
        );
        assert_eq!(met(&r, name), None);
    }

    #[test]
    fn ratio_goals_hold_at_their_bound_and_not_above() {
        // (goal, workload, figure, bound, tokio's figure, the floor).
        let cases = [
            (
                "W1 current-thread overhead",
                Work::W1Ct,
                "ns_per_op",
                0.5,
                100.0,
                10.0,
            ),
            ("W2 churn overhead", Work::W2, "ns_per_op", 0.5, 100.0, 10.0),
            ("W3 CPU register+fire", Work::W3, "cpu_s", 0.35, 1.0, 0.0),
            (
                "W4 register, 0 pending",
                Work::W4,
                "register_ns_0",
                0.9,
                100.0,
                0.0,
            ),
            (
                "W4 register, 1M pending",
                Work::W4,
                "register_ns_1m",
                0.9,
                100.0,
                0.0,
            ),
            (
                "W7 idle-timeout resets",
                Work::W7,
                "ns_per_reset",
                0.35,
                100.0,
                0.0,
            ),
            ("DQ1 CPU", Work::Dq1, "cpu_s", 0.5, 1.0, 0.0),
            (
                "DQ1 memory per item",
                Work::Dq1,
                "bytes_per_item",
                0.5,
                100.0,
                0.0,
            ),
            (
                "DQ2 CPU per op",
                Work::Dq2,
                "cpu_ns_per_op",
                0.5,
                100.0,
                0.0,
            ),
            (
                "DQ2 CPU per op, random delays",
                Work::Dq2,
                "cpu_ns_per_op_random",
                0.5,
                100.0,
                0.0,
            ),
            (
                "DQ3 CPU per op",
                Work::Dq3,
                "cpu_ns_per_op",
                0.5,
                100.0,
                0.0,
            ),
            (
                "DQ3 CPU per op, reset to random delays",
                Work::Dq3,
                "cpu_ns_per_op_random",
                0.5,
                100.0,
                0.0,
            ),
        ];
        for (name, work, key, max, tokio, floor) in cases {
            let with = |tickwheel: [f64; 3]| {
                let mut r = Results::new(3);
                both(&mut r, work, key, &tickwheel, &[tokio + floor; 3]);
                if floor > 0.0 {
                    add(
                        &mut r,
                        work,
                        key,
                        &[(Sys::Floor, Variant::Plain, &[floor; 3])],
                    );
                }
                r
            };
            // At the bound in the median, though one repetition is far above.
            let at = tokio * max + floor;
            let v = verdict(&with([at, at, tokio + floor]), name);
            assert_eq!(v.met, Some(true), "{name}: {}", v.detail);
            assert!(
                v.rule.contains(&format!("<= {max} x")),
                "{name}: {}",
                v.rule
            );
            // 0.01 above it.
            let above = tokio * (max + 0.01) + floor;
            let v = verdict(&with([above, at, above]), name);
            assert_eq!(v.met, Some(false), "{name}: {}", v.detail);
            assert!(
                v.detail.ends_with(&format!("{:.2}x", max + 0.01)),
                "{}",
                v.detail
            );
        }
    }

    /// W6 over two repetitions: tickwheel's p99, p50 and early at the
    /// default tick, tokio's p99 2 ms.
    fn w6(p99: [f64; 2], p50: [f64; 2], early: [f64; 2]) -> Results {
        let mut r = Results::new(2);
        let (tw, plain) = (Sys::Tickwheel, Variant::Plain);
        add(
            &mut r,
            Work::W6,
            "p99_ms",
            &[(tw, plain, &p99), (Sys::Tokio, plain, &[2.0; 2])],
        );
        add(&mut r, Work::W6, "p50_ms", &[(tw, plain, &p50)]);
        add(&mut r, Work::W6, "early", &[(tw, plain, &early)]);
        add(&mut r, Work::W6, "tick_ms", &[(tw, plain, &[1.0; 2])]);
        r
    }

    const W6: &str = "W6 lateness, 1M pending, default tick";

    #[test]
    fn w6_is_judged_on_p99_against_tokio_p50_and_early() {
        let v = verdict(&w6([1.4, 1.6], [1.5, 1.5], [0.0; 2]), W6);
        assert_eq!(v.met, Some(true), "{}", v.detail);
        assert_eq!(
            v.rule,
            "p99 <= 0.75 x tokio's (medians); p50 <= 1.5 ms (median); early: 0 in every repetition"
        );
        assert!(
            v.detail
                .starts_with("p99 1.40 / 1.50 / 1.60 ms, tokio 2.00 ms: 0.75x"),
            "{}",
            v.detail
        );
        assert!(v.detail.ends_with("tick 1 ms"), "{}", v.detail);
        assert_eq!(met(&w6([1.52, 1.52], [1.0; 2], [0.0; 2]), W6), Some(false));
        assert_eq!(
            met(&w6([1.0, 1.0], [1.51, 1.51], [0.0; 2]), W6),
            Some(false)
        );
        assert_eq!(
            met(&w6([1.0, 1.0], [1.0, 1.0], [0.0, 1.0]), W6),
            Some(false)
        );
        // Without tokio's p99 there is no ratio to judge.
        let mut alone = Results::new(1);
        for key in ["p99_ms", "p50_ms", "early"] {
            add(
                &mut alone,
                Work::W6,
                key,
                &[(Sys::Tickwheel, Variant::Plain, &[0.0])],
            );
        }
        assert_eq!(met(&alone, W6), None);
    }

    #[test]
    fn the_second_tick_is_shown_not_judged() {
        let mut r = w6([1.0, 1.0], [1.0, 1.0], [0.0; 2]);
        let ten = Variant::TickMs(10);
        add(
            &mut r,
            Work::W6,
            "p99_ms",
            &[(Sys::Tickwheel, ten, &[10.5, 11.0])],
        );
        add(
            &mut r,
            Work::W6,
            "tick_ms",
            &[(Sys::Tickwheel, ten, &[10.0; 2])],
        );
        let v = verdict(&r, "W6 lateness at the second tick (10 ms)");
        assert_eq!((v.met, v.result()), (None, "not judged"));
        assert!(v.rule.starts_with("not judged"));
        assert!(
            v.detail.starts_with("p99 10.50 / 10.75 / 11.00 ms"),
            "{}",
            v.detail
        );
        assert!(v.detail.ends_with("tick 10 ms"), "{}", v.detail);
        // W8 at the second tick: far above tokio's CPU and early, not judged.
        let mut r = Results::new(2);
        add(
            &mut r,
            Work::W8,
            "cpu_s",
            &[
                (Sys::Tickwheel, ten, &[0.2, 0.3]),
                (Sys::Tokio, Variant::Plain, &[0.1; 2]),
            ],
        );
        add(
            &mut r,
            Work::W8,
            "early",
            &[(Sys::Tickwheel, ten, &[0.0, 1.0])],
        );
        let v = verdict(&r, "W8 trickle at the second tick, current-thread (10 ms)");
        assert_eq!((v.met, v.result()), (None, "not judged"));
        assert!(
            v.detail.starts_with(
                "CPU 0.2000 / 0.2500 / 0.3000 s, tokio 0.1000 s: 2.50x; early 0 / 0 / 1"
            ),
            "{}",
            v.detail
        );
    }

    #[test]
    fn w8_at_the_default_tick_is_judged_on_early_sleeps_alone() {
        let name = "W8 trickle at the default tick, current-thread";
        let w8 = |cpu: [f64; 2], early: [f64; 2]| {
            let mut r = Results::new(2);
            both(&mut r, Work::W8, "cpu_s", &cpu, &[0.1; 2]);
            add(
                &mut r,
                Work::W8,
                "early",
                &[(Sys::Tickwheel, Variant::Plain, &early)],
            );
            r
        };
        // 1.2 x tokio's CPU: shown, and still MET with none early.
        let v = verdict(&w8([0.12, 0.12], [0.0; 2]), name);
        assert_eq!(v.met, Some(true), "{}", v.detail);
        assert_eq!(v.rule, "early: 0 in every repetition");
        assert!(v.detail.contains("tokio 0.1000 s: 1.20x"), "{}", v.detail);
        assert_eq!(met(&w8([0.05, 0.05], [0.0, 1.0]), name), Some(false));
        let mut missing = w8([0.05, 0.05], [0.0; 2]);
        missing.reps = 3;
        assert_eq!(met(&missing, name), None);
    }

    #[test]
    fn w8_lateness_is_judged_on_each_runtime() {
        for (work, other, name) in [
            (Work::W8, Work::W8Mt, "W8 trickle lateness, current-thread"),
            (Work::W8Mt, Work::W8, "W8 trickle lateness, 2 workers"),
        ] {
            let with = |work, p99: [f64; 2], early: [f64; 2]| {
                let mut r = Results::new(2);
                both(&mut r, work, "late_p99_ms", &p99, &[2.0; 2]);
                add(
                    &mut r,
                    work,
                    "early",
                    &[(Sys::Tickwheel, Variant::Plain, &early)],
                );
                r
            };
            assert_eq!(
                met(&with(work, [2.0, 2.4], [0.0; 2]), name),
                Some(true),
                "{name}"
            );
            assert_eq!(
                met(&with(work, [2.8, 2.8], [0.0; 2]), name),
                Some(false),
                "{name}"
            );
            assert_eq!(
                met(&with(work, [1.0, 1.0], [0.0, 1.0]), name),
                Some(false),
                "{name}"
            );
            // The other runtime's figures do not count for this one.
            assert_eq!(
                met(&with(other, [1.0, 1.0], [0.0; 2]), name),
                None,
                "{name}"
            );
        }
    }

    /// W12 in `busy` over two repetitions as `variant`: tickwheel's (p50,
    /// p99, wake-ups per busy tick, early) against tokio's p50 1 ms and
    /// p99 10 ms.
    fn w12(busy: Busy, variant: Variant, tickwheel: [(f64, f64, f64, f64); 2]) -> Results {
        let mut r = Results::new(2);
        let work = Work::W12(busy);
        let run = Run {
            work,
            sys: Sys::Tickwheel,
            variant,
        };
        for (rep, (p50, p99, wakeups, early)) in tickwheel.into_iter().enumerate() {
            r.insert_one(run, rep, "late_p50_ms", p50);
            r.insert_one(run, rep, "late_p99_ms", p99);
            r.insert_one(run, rep, "wakeups_per_busy_tick", wakeups);
            r.insert_one(run, rep, "early", early);
        }
        add(
            &mut r,
            work,
            "late_p50_ms",
            &[(Sys::Tokio, variant, &[1.0; 2])],
        );
        add(
            &mut r,
            work,
            "late_p99_ms",
            &[(Sys::Tokio, variant, &[10.0; 2])],
        );
        r
    }

    #[test]
    fn w12_is_judged_per_configuration_and_shown_on_the_alt_timer() {
        let plain = Variant::Plain;
        for busy in Busy::ALL {
            let name = format!("W12 busy runtime, {}", busy.label());
            let at = w12(busy, plain, [(1.2, 9.0, 0.9, 0.0), (1.3, 11.0, 1.0, 0.0)]);
            let v = verdict(&at, &name);
            assert_eq!(v.met, Some(true), "{name}: {}", v.detail);
            for figures in [
                [(1.27, 10.0, 1.0, 0.0); 2],
                [(1.0, 10.6, 1.0, 0.0); 2],
                [(1.0, 10.0, 0.94, 0.0); 2],
                [(1.0, 10.0, 1.0, 0.0), (1.0, 10.0, 1.0, 2.0)],
            ] {
                assert_eq!(
                    met(&w12(busy, plain, figures), &name),
                    Some(false),
                    "{name}"
                );
            }
            // On the alternative timer: the same rule against tokio alt's,
            // shown whether it holds, not judged; the default row untouched.
            let alt = w12(busy, Variant::AltTimer, [(1.0, 5.0, 1.0, 0.0); 2]);
            let v = verdict(&alt, &format!("{name}, alt timer"));
            assert_eq!(
                (v.met, v.result()),
                (Some(true), "not judged"),
                "{}",
                v.detail
            );
            assert!(v.detail.starts_with("holds; p50 1.00 ms"), "{}", v.detail);
            assert_eq!(met(&alt, &name), None);
        }
        let one = w12(Busy::W1T1000, plain, [(1.0, 10.0, 1.0, 0.0); 2]);
        assert_eq!(
            met(&one, "W12 busy runtime, 1 worker, 1000 tasks"),
            Some(true)
        );
        assert_eq!(met(&one, "W12 busy runtime, 2 workers, 1000 tasks"), None);
        let v = verdict(
            &Results::new(2),
            "W12 busy runtime, 2 workers, 100 tasks, alt timer",
        );
        assert_eq!((v.met, v.judged), (None, false));
        assert!(v.detail.starts_with("no figures"), "{}", v.detail);
    }

    #[test]
    fn w1_on_the_alt_timer_is_shown_not_judged() {
        let alt = Variant::AltTimer;
        let mut r = Results::new(2);
        add(
            &mut r,
            Work::W1Mt,
            "ns_per_op",
            &[
                (Sys::Tickwheel, alt, &[30.0, 40.0]),
                (Sys::Tokio, alt, &[100.0; 2]),
            ],
        );
        let v = verdict(&r, "W1 64 tasks / 2 workers, alt timer");
        assert_eq!((v.met, v.result()), (Some(false), "not judged"));
        assert!(v
            .rule
            .starts_with("not judged: tickwheel on a runtime with tokio's alternative timer"));
        assert!(
            v.detail
                .starts_with("does not hold; ns/op by repetition: 0.30, 0.40;"),
            "{}",
            v.detail
        );
        assert_eq!(met(&r, W1_MT), None);
    }

    #[test]
    fn w9_is_judged_above_each_repetitions_floor_in_every_shape() {
        for tasks in TaskSleeps::ALL {
            let work = Work::W9(tasks);
            let name = format!("W9 task per sleep, {}", work.configuration());
            let with = |figures: [(f64, f64, f64); 2], early: [f64; 2]| {
                let mut r = Results::new(2);
                for (rep, (floor, tw, tokio)) in figures.into_iter().enumerate() {
                    for (sys, ns) in [
                        (Sys::Floor, floor),
                        (Sys::Tickwheel, tw),
                        (Sys::Tokio, tokio),
                    ] {
                        let run = Run {
                            work,
                            sys,
                            variant: Variant::Plain,
                        };
                        r.insert_one(run, rep, "cpu_ns_per_op", ns);
                    }
                }
                add(
                    &mut r,
                    work,
                    "early",
                    &[(Sys::Tickwheel, Variant::Plain, &early)],
                );
                r
            };
            // Overheads 400 and 600 against 900 and 1,100: 0.5x, the bound
            // of the shape spawned by a task (the raw figures would give
            // 0.75x); 600 and 900 against them: 0.75x, the others' bound.
            let spawned = tasks.shape == crate::systems::TaskShape::Spawned;
            let (a, b) = [(1600.0, 1900.0), (1400.0, 1600.0)][usize::from(spawned)];
            let at = with([(1000.0, a, 1900.0), (1000.0, b, 2100.0)], [0.0; 2]);
            let v = verdict(&at, &name);
            assert_eq!(v.met, Some(true), "{name}: {}", v.detail);
            // Each repetition against its own floor: 400, 400 against 900, 900.
            let own = with(
                [(1000.0, 1400.0, 1900.0), (1200.0, 1600.0, 2100.0)],
                [0.0; 2],
            );
            assert!(verdict(&own, &name).detail.contains(": 0.44x"), "{name}");
            let dear_at = if spawned { 1510.0 } else { 1760.0 };
            let dear = with([(1000.0, dear_at, 2000.0); 2], [0.0; 2]);
            assert_eq!(met(&dear, &name), Some(false), "{name}");
            // An early sleep counts in the spawned shape; the others read no clock.
            let early = with([(1000.0, 1100.0, 2000.0); 2], [0.0, 1.0]);
            assert_eq!(met(&early, &name), Some(!spawned), "{name}");
        }
    }

    fn w11(r: &mut Results, key: &str, figures: [[f64; 2]; 3]) {
        for (shards, values) in Shards::ALL.into_iter().zip(figures) {
            add(
                r,
                Work::W11(shards),
                key,
                &[(Sys::Tickwheel, Variant::Plain, &values)],
            );
        }
    }

    #[test]
    fn w11_is_judged_at_64_shards() {
        let name = "W11 new timer's heap, 64 shards";
        let mut r = Results::new(2);
        w11(
            &mut r,
            "timer_bytes",
            [[326e3; 2], [5e6; 2], [0.9e6, 1.1e6]],
        );
        assert_eq!(met(&r, name), Some(true));
        let mut r = Results::new(2);
        w11(
            &mut r,
            "timer_bytes",
            [[326e3; 2], [1e6; 2], [1e6 + 1.0; 2]],
        );
        assert_eq!(met(&r, name), Some(false));
        for (name, key, early) in [
            (
                "W11 trickle CPU, 64 shards vs 4",
                "trickle_cpu_s",
                "trickle_early",
            ),
            ("W11 W9 CPU, 64 shards vs 4", "w9_cpu_s", "w9_early"),
        ] {
            let with = |cpu, early_at_16| {
                let mut r = Results::new(2);
                w11(&mut r, key, cpu);
                w11(&mut r, early, [[0.0; 2], early_at_16, [0.0; 2]]);
                r
            };
            let v = verdict(
                &with([[0.09, 0.11], [0.5; 2], [0.09, 0.13]], [0.0; 2]),
                name,
            );
            assert_eq!(v.met, Some(true), "{name}: {}", v.detail);
            assert!(v.detail.starts_with("64 shards 0.0900 / 0.1100 / 0.1300 s, 4 shards 0.0900 / 0.1000 / 0.1100 s: 1.10x"), "{}", v.detail);
            assert_eq!(
                met(&with([[0.1; 2], [0.1; 2], [0.125; 2]], [0.0; 2]), name),
                Some(false)
            );
            assert_eq!(met(&with([[0.1; 2]; 3], [0.0, 1.0]), name), Some(false));
        }
    }

    #[test]
    fn w10_is_judged_per_configuration() {
        for http in Http::ALL {
            let name = format!("W10 HTTP service, {}", http.label());
            let heavy = http == Http::HEAVY_2X1000;
            let outlive = http == Http::OUTLIVE_2X1000;
            let with = |cpu: f64, fired: f64, early: f64| {
                let mut r = Results::new(2);
                let work = Work::W10(http);
                both(&mut r, work, "cpu_us_per_request", &[cpu; 2], &[10.0; 2]);
                both(&mut r, work, "p99_ms", &[20.0; 2], &[20.0; 2]);
                for key in ["call_fired", "r408"] {
                    add(
                        &mut r,
                        work,
                        key,
                        &[(Sys::Tickwheel, Variant::Plain, &[fired; 2])],
                    );
                }
                for key in ["call_early", "r408_early"] {
                    add(
                        &mut r,
                        work,
                        key,
                        &[(Sys::Tickwheel, Variant::Plain, &[0.0, early])],
                    );
                }
                r
            };
            let bound = if heavy { 9.5 } else { 10.0 };
            assert_eq!(met(&with(bound, 5.0, 0.0), &name), Some(true), "{name}");
            assert_eq!(
                met(&with(bound + 0.11, 5.0, 0.0), &name),
                Some(false),
                "{name}"
            );
            assert_eq!(met(&with(bound, 5.0, 1.0), &name), Some(false), "{name}");
            // Nothing fired: "none early" checked nothing where deadlines
            // should fire.
            assert_eq!(met(&with(bound, 0.0, 0.0), &name), Some(!outlive), "{name}");
        }
        let v = verdict(
            &Results::new(2),
            "W10 HTTP service, baseline, 2 workers, 32 connections",
        );
        assert_eq!(
            (v.result(), v.detail.as_str()),
            ("NO DATA", "no figures: not run")
        );
    }

    #[test]
    fn w13_is_judged_on_p999_in_the_burst() {
        let name = "W13 registration during a burst";
        let with = |p999: [f64; 2], measured: [f64; 2], early: [f64; 2]| {
            let mut r = Results::new(2);
            both(&mut r, Work::W13, "reg_p999_us", &p999, &[10.0, 12.0]);
            add(
                &mut r,
                Work::W13,
                "registrations",
                &[(Sys::Tickwheel, Variant::Plain, &measured)],
            );
            add(
                &mut r,
                Work::W13,
                "early",
                &[(Sys::Tickwheel, Variant::Plain, &early)],
            );
            r
        };
        assert_eq!(
            met(&with([9.0, 13.0], [5e4; 2], [0.0; 2]), name),
            Some(true)
        );
        assert_eq!(met(&with([11.5; 2], [5e4; 2], [0.0; 2]), name), Some(false));
        assert_eq!(
            met(&with([1.0; 2], [5e4, 0.0], [0.0; 2]), name),
            Some(false)
        );
        assert_eq!(
            met(&with([1.0; 2], [5e4; 2], [0.0, 1.0]), name),
            Some(false)
        );
    }

    /// W14 in `late` over two repetitions: the wheel's p99 and early per
    /// repetition against tokio's p99 4 ms, both from tickwheel's child.
    fn w14(late: LatePoll, wheel_p99: [f64; 2], early: [f64; 2]) -> Results {
        let mut r = Results::new(2);
        let work = Work::W14(late);
        let plain = Variant::Plain;
        add(
            &mut r,
            work,
            "wheel_p99_ms",
            &[(Sys::Tickwheel, plain, &wheel_p99)],
        );
        add(
            &mut r,
            work,
            "tokio_p99_ms",
            &[(Sys::Tickwheel, plain, &[4.0; 2])],
        );
        add(
            &mut r,
            work,
            "wheel_early",
            &[(Sys::Tickwheel, plain, &early)],
        );
        r
    }

    #[test]
    fn w14_is_judged_against_tokio_in_the_same_child_with_a_ms_of_slack() {
        for late in LatePoll::ALL {
            let name = format!("W14 late first poll, {}", late.label());
            // 1.5 x 4 ms + 1 ms = 7 ms, in each repetition.
            let v = verdict(&w14(late, [6.0, 7.0], [0.0; 2]), &name);
            assert_eq!(v.met, Some(true), "{name}: {}", v.detail);
            assert_eq!(
                v.rule,
                "other wheel sleeps' p99 at the waker <= 1.5 x tokio's p99 + 1 ms in every \
                 repetition; wheel sleeps early: 0 in every repetition"
            );
            assert!(
                v.detail.starts_with(
                    "other wheel sleeps' p99 at the waker by repetition: 6.00 (bound 7.00), \
                     7.00 (bound 7.00); other wheel sleeps' p99 at the waker 6.00 / 6.50 / \
                     7.00 ms, tokio's p99 4.00 ms; wheel sleeps early 0"
                ),
                "{}",
                v.detail
            );
            // One repetition's stall is enough: the median would hide it.
            assert_eq!(met(&w14(late, [40.0, 4.0], [0.0; 2]), &name), Some(false));
            assert_eq!(met(&w14(late, [7.1; 2], [0.0; 2]), &name), Some(false));
            assert_eq!(met(&w14(late, [4.0; 2], [0.0, 1.0]), &name), Some(false));
            // Its own configuration's figures only.
            let other = LatePoll::ALL.into_iter().find(|&o| o != late).unwrap();
            assert_eq!(met(&w14(other, [4.0; 2], [0.0; 2]), &name), None);
        }
        assert_eq!(
            LatePoll::LATE_2.label(),
            "2 workers, with the late task",
            "the verdicts' names"
        );
    }

    #[test]
    fn dq1_lateness_is_within_a_tick_and_2_ms() {
        let name = "DQ1 lateness";
        let with = |p99: [f64; 2], early: [f64; 2]| {
            let mut r = Results::new(2);
            let plain = Variant::Plain;
            add(
                &mut r,
                Work::Dq1,
                "p99_ms",
                &[(Sys::Tickwheel, plain, &p99)],
            );
            add(
                &mut r,
                Work::Dq1,
                "resolution_ms",
                &[(Sys::Tickwheel, plain, &[10.0; 2])],
            );
            add(
                &mut r,
                Work::Dq1,
                "early",
                &[(Sys::Tickwheel, plain, &early)],
            );
            r
        };
        assert_eq!(met(&with([11.0, 14.0], [0.0; 2]), name), Some(false));
        assert_eq!(met(&with([11.0, 12.5], [0.0; 2]), name), Some(true));
        assert_eq!(met(&with([11.0, 11.0], [0.0, 1.0]), name), Some(false));
    }

    #[test]
    fn the_chart_draws_the_goals_ratios() {
        let bounds = [
            (Work::W1Ct, "ns_per_op", Some(0.5)),
            (Work::W1Mt, "ns_per_op", Some(0.35)),
            (Work::W2, "ns_per_op", Some(0.5)),
            (Work::W3, "cpu_s", Some(0.35)),
            (Work::W3, "bytes_per_timer", None),
            (Work::W6, "p99_ms", Some(0.75)),
            (Work::W7, "ns_per_reset", Some(0.35)),
            (Work::W13, "reg_max_us", None),
        ];
        for (work, key, bound) in bounds {
            assert_eq!(ratio_bound(work, key), bound, "{} {key}", work.name());
        }
    }

    #[test]
    fn every_goal_says_what_it_is_compared_with_and_protects() {
        for g in GOALS {
            assert!(
                !g.protects.is_empty() && !g.against.is_empty(),
                "{}",
                g.name
            );
            assert!(!g.rule().starts_with("not judged"), "{}", g.name);
        }
    }

    #[test]
    fn benchmarks_md_holds_the_goal_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        let page = std::fs::read_to_string(&path).expect("BENCHMARKS.md");
        assert!(
            page.contains(&markdown()),
            "BENCHMARKS.md's goal table differs from `compare --goals`; paste its output:\n{}",
            markdown()
        );
    }
}
