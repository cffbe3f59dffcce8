//! Who is measured ([`Sys`]), on what ([`Work`]), at which sizes
//! ([`Sizes`]), and what a child reports ([`Figures`]).

use std::collections::BTreeMap;
use std::time::Duration;

/// Who is measured: a timer, or the no-timer floor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sys {
    Floor,
    /// tickwheel through a held `Timer` handle (`timer.sleep(d)`).
    Tickwheel,
    /// tickwheel through `tickwheel::time`'s free functions, on the
    /// runtime's default timer, with no handle held (W2 only).
    Ambient,
    Tokio,
    Pingora,
}

impl Sys {
    pub const ALL: [Sys; 5] = [
        Sys::Floor,
        Sys::Tickwheel,
        Sys::Ambient,
        Sys::Tokio,
        Sys::Pingora,
    ];
    pub const TIMERS: [Sys; 3] = [Sys::Tickwheel, Sys::Tokio, Sys::Pingora];
    /// W1: the floor and the three timers.
    pub const FLOOR_AND_TIMERS: [Sys; 4] = [Sys::Floor, Sys::Tickwheel, Sys::Tokio, Sys::Pingora];
    /// The delay-queue workloads: tickwheel's queue, and tokio-util's (on
    /// `tokio::time`) under the `tokio` name.
    pub const QUEUES: [Sys; 2] = [Sys::Tickwheel, Sys::Tokio];

    pub fn name(self) -> &'static str {
        match self {
            Sys::Floor => "floor",
            Sys::Tickwheel => "tickwheel",
            Sys::Ambient => "ambient",
            Sys::Tokio => "tokio",
            Sys::Pingora => "pingora",
        }
    }

    pub fn parse(name: &str) -> Option<Sys> {
        Sys::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Work {
    W1Ct,
    W1Mt,
    W2,
    W3,
    W4,
    W5,
    W6,
    W7,
    /// A trickle of short sleeps on a current-thread runtime (`trickle.rs`).
    W8,
    /// The same trickle on a 2-worker runtime.
    W8Mt,
    /// A task per sleep (`task_sleeps.rs`), in one of its shapes.
    W9(TaskSleeps),
    /// tickwheel alone at a shard count (`shards.rs`): a new timer's heap,
    /// idle wake-ups, W8's trickle and W9 on 2 workers.
    W11(Shards),
    /// Sleeps of tasks on a runtime kept busy (`busy.rs`), in one of its
    /// configurations.
    W12(Busy),
    /// Registrations on another thread while 100,000 sleeps due at one
    /// instant fire (`registrations.rs`).
    W13,
    /// A saturated runtime's sleeps, wheel and tokio side by side, with and
    /// without a task whose sleep is first polled after its tick
    /// (`late_poll.rs`), in one of its configurations.
    W14(LatePoll),
    /// An HTTP service under `wrk` (`http.rs`), in one of its
    /// configurations.
    W10(Http),
    /// Delay queues (`delay_queue.rs`): 1M inserted then expired, insert+remove
    /// churn, insert+reset churn.
    Dq1,
    Dq2,
    Dq3,
}

impl Work {
    pub const ALL: [Work; 37] = [
        Work::W1Ct,
        Work::W1Mt,
        Work::W2,
        Work::W3,
        Work::W4,
        Work::W5,
        Work::W6,
        Work::W7,
        Work::W8,
        Work::W8Mt,
        Work::W9(TaskSleeps::SPAWNED_CT),
        Work::W9(TaskSleeps::SPAWNED_MT),
        Work::W9(TaskSleeps::JOINSET_CT),
        Work::W9(TaskSleeps::JOINSET_MT),
        Work::W9(TaskSleeps::NOTIFY_CT),
        Work::W9(TaskSleeps::NOTIFY_MT),
        Work::W11(Shards::S4),
        Work::W11(Shards::S16),
        Work::W11(Shards::S64),
        Work::W12(Busy::W1T100),
        Work::W12(Busy::W1T1000),
        Work::W12(Busy::W2T100),
        Work::W12(Busy::W2T1000),
        Work::W13,
        Work::W14(LatePoll::BASE_1),
        Work::W14(LatePoll::LATE_1),
        Work::W14(LatePoll::BASE_2),
        Work::W14(LatePoll::LATE_2),
        Work::W10(Http::BASE_1X32),
        Work::W10(Http::BASE_1X1000),
        Work::W10(Http::BASE_2X32),
        Work::W10(Http::BASE_2X1000),
        Work::W10(Http::OUTLIVE_2X1000),
        Work::W10(Http::HEAVY_2X1000),
        Work::Dq1,
        Work::Dq2,
        Work::Dq3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Work::W1Ct => "w1ct",
            Work::W1Mt => "w1mt",
            Work::W2 => "w2",
            Work::W3 => "w3",
            Work::W4 => "w4",
            Work::W5 => "w5",
            Work::W6 => "w6",
            Work::W7 => "w7",
            Work::W8 => "w8",
            Work::W8Mt => "w8mt",
            Work::W9(tasks) => tasks.name(),
            Work::W11(shards) => shards.name(),
            Work::W12(busy) => busy.name(),
            Work::W13 => "w13",
            Work::W14(late) => late.name(),
            Work::W10(http) => http.name(),
            Work::Dq1 => "dq1",
            Work::Dq2 => "dq2",
            Work::Dq3 => "dq3",
        }
    }

    pub fn parse(name: &str) -> Option<Work> {
        Work::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The configuration, as the report names it: the runtime, shape or
    /// load that tells this workload from its family's others ("" for a
    /// workload alone, and for W11, whose goals name their shard count).
    pub fn configuration(self) -> String {
        match self {
            Work::W8 => "current-thread".into(),
            Work::W8Mt => "2 workers".into(),
            Work::W9(tasks) => format!("{}, {}", tasks.runtime(), tasks.label()),
            Work::W12(busy) => busy.label(),
            Work::W14(late) => late.label(),
            Work::W10(http) => http.label(),
            _ => String::new(),
        }
    }

    /// Whether `--workloads` item `item` selects this workload: its name
    /// (and then only it), its family (`w9`, `w10`, `w11`, `w12`, `w14`),
    /// or a part of its family before a dash (`w10-base` for every
    /// `w10-base-*`, `w14-late` for both `w14-late-*`).
    pub fn selected_by(self, item: &str) -> bool {
        if Work::parse(item).is_some() {
            return self.name() == item;
        }
        let family = match self {
            Work::W9(_) => "w9",
            Work::W10(_) => "w10",
            Work::W11(_) => "w11",
            Work::W12(_) => "w12",
            Work::W14(_) => "w14",
            _ => self.name(),
        };
        family == item
            || self
                .name()
                .strip_prefix(item)
                .is_some_and(|rest| rest.starts_with('-'))
    }

    /// Whether this workload's children take turns with `other`'s within
    /// each repetition, as a workload's systems do: W11's shard counts, whose
    /// goals compare one count with another, so a noisy moment of the
    /// machine weighs on all of them.
    pub fn takes_turns_with(self, other: Work) -> bool {
        matches!((self, other), (Work::W11(_), Work::W11(_)))
    }

    pub fn systems(self) -> &'static [Sys] {
        match self {
            Work::W1Ct | Work::W1Mt => &Sys::FLOOR_AND_TIMERS,
            Work::W2 => &Sys::ALL,
            Work::W7 | Work::W8 | Work::W8Mt | Work::W12(_) | Work::W13 | Work::W10(_) => {
                &[Sys::Tickwheel, Sys::Tokio]
            }
            Work::W9(_) => &[Sys::Floor, Sys::Tickwheel, Sys::Tokio],
            // tickwheel against itself at another shard count.
            Work::W11(_) => &[Sys::Tickwheel],
            // One child measures both: the wheel's sleeps and tokio's,
            // side by side in the same runtime (see `late_poll`).
            Work::W14(_) => &[Sys::Tickwheel],
            Work::Dq1 | Work::Dq2 | Work::Dq3 => &Sys::QUEUES,
            _ => &Sys::TIMERS,
        }
    }
}

/// W9's shapes: how the tasks are spawned and how their end is awaited.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TaskShape {
    /// Spawned by a task, in one poll; each task counts itself down, the
    /// last notifies the spawning task (`w9ct`, `w9mt`).
    Spawned,
    /// Spawned from `block_on` into a `JoinSet`, which `block_on` drains
    /// (`-joinset`).
    JoinSet,
    /// Spawned from `block_on`, detached; each task counts itself down, the
    /// last notifies `block_on` (`-notify`).
    Notify,
}

/// W9's configurations: a shape on a current-thread runtime or on 2
/// workers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TaskSleeps {
    pub shape: TaskShape,
    pub two_workers: bool,
}

impl TaskSleeps {
    pub const SPAWNED_CT: TaskSleeps = TaskSleeps::new(TaskShape::Spawned, false);
    pub const SPAWNED_MT: TaskSleeps = TaskSleeps::new(TaskShape::Spawned, true);
    pub const JOINSET_CT: TaskSleeps = TaskSleeps::new(TaskShape::JoinSet, false);
    pub const JOINSET_MT: TaskSleeps = TaskSleeps::new(TaskShape::JoinSet, true);
    pub const NOTIFY_CT: TaskSleeps = TaskSleeps::new(TaskShape::Notify, false);
    pub const NOTIFY_MT: TaskSleeps = TaskSleeps::new(TaskShape::Notify, true);
    /// In the order of W9's table: a runtime's shapes together.
    pub const ALL: [TaskSleeps; 6] = [
        TaskSleeps::SPAWNED_CT,
        TaskSleeps::JOINSET_CT,
        TaskSleeps::NOTIFY_CT,
        TaskSleeps::SPAWNED_MT,
        TaskSleeps::JOINSET_MT,
        TaskSleeps::NOTIFY_MT,
    ];

    const fn new(shape: TaskShape, two_workers: bool) -> TaskSleeps {
        TaskSleeps { shape, two_workers }
    }

    /// The workload's name on the command line: `w9ct`, `w9mt` (spawned by
    /// a task, as before the other shapes), `w9<ct|mt>-<joinset|notify>`.
    pub fn name(self) -> &'static str {
        match (self.shape, self.two_workers) {
            (TaskShape::Spawned, false) => "w9ct",
            (TaskShape::Spawned, true) => "w9mt",
            (TaskShape::JoinSet, false) => "w9ct-joinset",
            (TaskShape::JoinSet, true) => "w9mt-joinset",
            (TaskShape::Notify, false) => "w9ct-notify",
            (TaskShape::Notify, true) => "w9mt-notify",
        }
    }

    pub fn runtime(self) -> &'static str {
        if self.two_workers {
            "2 workers"
        } else {
            "current-thread"
        }
    }

    /// As the report names it.
    pub fn label(self) -> &'static str {
        match self.shape {
            TaskShape::Spawned => "spawned by a task, counter + Notify",
            TaskShape::JoinSet => "spawned from block_on, JoinSet",
            TaskShape::Notify => "spawned from block_on, counter + Notify",
        }
    }
}

/// W12's configurations: worker threads x busy tasks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Busy {
    W1T100,
    W1T1000,
    W2T100,
    W2T1000,
}

impl Busy {
    pub const ALL: [Busy; 4] = [Busy::W1T100, Busy::W1T1000, Busy::W2T100, Busy::W2T1000];

    pub fn workers(self) -> usize {
        match self {
            Busy::W1T100 | Busy::W1T1000 => 1,
            Busy::W2T100 | Busy::W2T1000 => 2,
        }
    }

    pub fn tasks(self) -> usize {
        match self {
            Busy::W1T100 | Busy::W2T100 => 100,
            Busy::W1T1000 | Busy::W2T1000 => 1_000,
        }
    }

    /// The workload's name on the command line: `w12-<workers>x<tasks>`.
    pub fn name(self) -> &'static str {
        match self {
            Busy::W1T100 => "w12-1x100",
            Busy::W1T1000 => "w12-1x1000",
            Busy::W2T100 => "w12-2x100",
            Busy::W2T1000 => "w12-2x1000",
        }
    }

    /// As the report names it.
    pub fn label(self) -> String {
        let workers = self.workers();
        format!(
            "{workers} worker{}, {} tasks",
            if workers == 1 { "" } else { "s" },
            self.tasks()
        )
    }
}

/// W14's configurations: worker threads, and whether the task whose
/// sleep is first polled after its tick runs beside the measured ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LatePoll {
    /// 1 or 2.
    two_workers: bool,
    pub late_task: bool,
}

impl LatePoll {
    pub const BASE_1: LatePoll = LatePoll::new(false, false);
    pub const LATE_1: LatePoll = LatePoll::new(false, true);
    pub const BASE_2: LatePoll = LatePoll::new(true, false);
    pub const LATE_2: LatePoll = LatePoll::new(true, true);
    /// In the order of W14's table: a runtime's two together.
    pub const ALL: [LatePoll; 4] = [
        LatePoll::BASE_1,
        LatePoll::LATE_1,
        LatePoll::BASE_2,
        LatePoll::LATE_2,
    ];

    const fn new(two_workers: bool, late_task: bool) -> LatePoll {
        LatePoll {
            two_workers,
            late_task,
        }
    }

    pub fn workers(self) -> usize {
        if self.two_workers {
            2
        } else {
            1
        }
    }

    /// The workload's name on the command line:
    /// `w14-<base|late>-<workers>`, so `w14-late` selects the two with the
    /// late task.
    pub fn name(self) -> &'static str {
        match (self.late_task, self.two_workers) {
            (false, false) => "w14-base-1",
            (true, false) => "w14-late-1",
            (false, true) => "w14-base-2",
            (true, true) => "w14-late-2",
        }
    }

    /// As the report names it.
    pub fn label(self) -> String {
        let workers = self.workers();
        format!(
            "{workers} worker{}, {}",
            if workers == 1 { "" } else { "s" },
            if self.late_task {
                "with the late task"
            } else {
                "without the late task"
            }
        )
    }
}

/// W11's shard counts: a child each, so one count's heap, threads and
/// caches never weigh on another's figures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shards {
    S4,
    S16,
    S64,
}

impl Shards {
    pub const ALL: [Shards; 3] = [Shards::S4, Shards::S16, Shards::S64];

    /// The count given to `Builder::shards`.
    pub fn count(self) -> usize {
        match self {
            Shards::S4 => 4,
            Shards::S16 => 16,
            Shards::S64 => 64,
        }
    }

    /// The workload's name on the command line: `w11-<shards>`.
    pub fn name(self) -> &'static str {
        match self {
            Shards::S4 => "w11-4",
            Shards::S16 => "w11-16",
            Shards::S64 => "w11-64",
        }
    }
}

/// W10's shapes of request (see `http`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// One backend call under a deadline that does not fire.
    Base,
    /// 5% of calls outlive their deadline, 1% of requests the request's.
    Outlive,
    /// 8 timers per request.
    Heavy,
}

impl Shape {
    pub fn label(self) -> &'static str {
        match self {
            Shape::Base => "baseline",
            Shape::Outlive => "5% outlive",
            Shape::Heavy => "timer-heavy",
        }
    }
}

/// W10's configurations: a shape of request, worker threads, wrk's
/// connections.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Http {
    shape: Shape,
    workers: u8,
    /// 32 or 1,000.
    wide: bool,
}

impl Http {
    pub const BASE_1X32: Http = Http::new(Shape::Base, 1, false);
    pub const BASE_1X1000: Http = Http::new(Shape::Base, 1, true);
    pub const BASE_2X32: Http = Http::new(Shape::Base, 2, false);
    pub const BASE_2X1000: Http = Http::new(Shape::Base, 2, true);
    pub const OUTLIVE_2X1000: Http = Http::new(Shape::Outlive, 2, true);
    pub const HEAVY_2X1000: Http = Http::new(Shape::Heavy, 2, true);
    pub const ALL: [Http; 6] = [
        Http::BASE_1X32,
        Http::BASE_1X1000,
        Http::BASE_2X32,
        Http::BASE_2X1000,
        Http::OUTLIVE_2X1000,
        Http::HEAVY_2X1000,
    ];

    const fn new(shape: Shape, workers: u8, wide: bool) -> Http {
        Http {
            shape,
            workers,
            wide,
        }
    }

    pub fn shape(self) -> Shape {
        self.shape
    }

    pub fn workers(self) -> usize {
        self.workers.into()
    }

    pub fn connections(self) -> usize {
        if self.wide {
            1_000
        } else {
            32
        }
    }

    /// The workload's name on the command line:
    /// `w10-<shape>-<workers>x<connections>`, so `w10-base` selects the
    /// four baseline configurations.
    pub fn name(self) -> &'static str {
        match (self.shape, self.workers, self.wide) {
            (Shape::Base, 1, false) => "w10-base-1x32",
            (Shape::Base, 1, true) => "w10-base-1x1000",
            (Shape::Base, _, false) => "w10-base-2x32",
            (Shape::Base, _, true) => "w10-base-2x1000",
            (Shape::Outlive, _, _) => "w10-outlive-2x1000",
            (Shape::Heavy, _, _) => "w10-heavy-2x1000",
        }
    }

    /// As the report names it.
    pub fn label(self) -> String {
        format!(
            "{}, {} worker{}, {} connections",
            self.shape.label(),
            self.workers,
            if self.workers == 1 { "" } else { "s" },
            self.connections()
        )
    }
}

/// Sizes: the full run and `--quick`.
#[derive(Clone, Copy)]
pub struct Sizes {
    /// W1/W2 operations per round, and rounds (best one kept).
    pub ops: u64,
    pub rounds: u32,
    /// W3/W4/W6 timers.
    pub mass: usize,
    /// W3 and W6 deadlines, and W9's sleeps, are spread uniformly over this
    /// window.
    pub spread: Duration,
    /// W6's first deadline, after the start of registration.
    pub w6_lead: Duration,
    /// W4 registrations measured.
    pub w4_ops: usize,
    /// W5 idle window.
    pub idle: Duration,
    /// W7 long-lived sleeps, and resets per task.
    pub w7_sleeps: usize,
    pub w7_resets: usize,
    /// How long W8 registers a sleep every millisecond.
    pub trickle: Duration,
    /// How long each W12 child keeps its runtime busy.
    pub busy: Duration,
    /// W9's tasks, each awaiting one sleep of up to `spread` (and W11's
    /// W9 part).
    pub w9_tasks: usize,
    /// W11's idle window (W5's is longer: W11 runs three children per
    /// repetition).
    pub w11_idle: Duration,
    /// How long wrk drives each W10 child.
    pub http: Duration,
    /// W13's tasks, each awaiting a sleep until one common instant, and
    /// how far ahead of the first spawn that instant is (time enough to
    /// spawn and register them all).
    pub w13_tasks: usize,
    pub w13_lead: Duration,
    /// Child processes per (workload, system), unless `--reps` says otherwise.
    pub reps: usize,
}

pub const FULL: Sizes = Sizes {
    ops: 1_000_000,
    rounds: 5,
    mass: 1_000_000,
    spread: Duration::from_secs(1),
    // Registering 1M takes up to a second or so on a loaded machine.
    w6_lead: Duration::from_secs(3),
    w4_ops: 200_000,
    idle: Duration::from_secs(5),
    w7_sleeps: 100_000,
    w7_resets: 1_000_000,
    trickle: Duration::from_secs(3),
    busy: Duration::from_secs(3),
    w9_tasks: 200_000,
    w11_idle: Duration::from_secs(1),
    // 12 W10 children of 10 s per repetition: about 2 minutes each.
    http: Duration::from_secs(10),
    w13_tasks: 100_000,
    // Spawning 100,000 tasks and registering their sleeps took up to 250
    // ms on 2 loaded cores (tokio's, all due at one instant); the probes
    // begin just before the instant whatever the lead.
    w13_lead: Duration::from_secs(1),
    reps: 5,
};

pub const QUICK: Sizes = Sizes {
    ops: 100_000,
    rounds: 3,
    mass: 100_000,
    // Shorter windows than the full run's: with two repetitions, the waits
    // of W3, W5 and W6 are most of a quick run's time.
    spread: Duration::from_millis(300),
    w6_lead: Duration::from_millis(700),
    w4_ops: 20_000,
    idle: Duration::from_millis(300),
    w7_sleeps: 20_000,
    w7_resets: 100_000,
    trickle: Duration::from_millis(500),
    // Eight W12 children per repetition: 0.3 s each keeps them under 5 s
    // of a quick run.
    busy: Duration::from_millis(300),
    w9_tasks: 20_000,
    w11_idle: Duration::from_millis(300),
    // W10 runs under --quick only when named in --workloads.
    http: Duration::from_secs(2),
    w13_tasks: 20_000,
    w13_lead: Duration::from_millis(300),
    reps: 2,
};

/// A child's results, printed as `key=value` lines.
pub type Figures = BTreeMap<String, f64>;

pub fn emit(out: &mut Figures, key: &str, value: f64) {
    out.insert(key.to_string(), value);
}
