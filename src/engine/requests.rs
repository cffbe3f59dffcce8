//! [`Requests`]: what the driver's three parties ask of it, and what each
//! may run on its own thread.
//!
//! The hook (inside tokio's timer processing), a registration (inside a
//! user's poll) and the driver task each raise a request (a scan, an arm
//! for the driver's target, the alarm's retirement) and then offer to run the requests
//! raised so far, through one [`PassLock`]: whoever holds it runs every
//! request raised meanwhile before it lets go, and nobody waits for it.
//! What the runner does depends on who it is:
//!
//! - the hook and the task run scans (whole passes) and arms;
//! - a registration runs arms only. A scan it finds raised, or an arm whose
//!   tick turns out due, is left raised for the hook: the registration
//!   arms the alarm for the first millisecond tokio has not processed
//!   ([`Work::keep_hook`]), so tokio's next timer processing calls the
//!   hook, whose pass runs the scan, whether or not the driver task gets a
//!   turn. Only if tokio will not take that arm is the scan left to the
//!   task, which the caller is told to ring. So a user's poll never scans,
//!   and never leaves the wheel waiting for the task's turn.
//!
//! A pass that finds the task must end sets [`Stop`] once; from then on no
//! request runs. A retirement is always run first, by whoever runs next.
//! The loom models `loom_requests_*` check these rules over every
//! interleaving, with a stand-in for the work.
//!
//! # A pass that panics
//!
//! The pass lock lets go as the panic unwinds (`pass_lock.rs`), and
//! [`Requests::run`] catches it: the party raises the scan again (the
//! panicking pass may have taken it), and runs the requests once more. If
//! that panics too, the scan stays raised and the task is told. Either way
//! no request is left to nobody, and the panic ends here, counted in
//! [`Answer::panics`], not in tokio's timer processing or a user's poll.

use std::sync::atomic::Ordering;

use crate::engine::pass_lock::PassLock;
use crate::engine::sync::{AtomicBool, AtomicU8};
use crate::engine::unwind::run_contained;

/// Who asks, which decides what it may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Party {
    /// Inside tokio's timer processing.
    Hook,
    /// The driver task.
    Task,
    /// Inside a user's poll: arms only.
    Registration,
}

impl Party {
    pub(crate) fn may_scan(self) -> bool {
        self != Party::Registration
    }
}

/// Why the driver task ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Not asked to.
    Running = 0,
    /// No handle, nothing registered and no sleep alive.
    Retire = 1,
    /// The timer is shut down, or the alarm retired.
    Off = 2,
}

/// What a pass or an arm left the driver waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Nothing for anyone to do until the alarm (or the backstop) fires;
    /// with nothing that can come due, nothing is armed.
    Armed,
    /// A scan this party may not run: the alarm is armed to call the hook
    /// at tokio's next timer processing, and the hook's pass runs it.
    LeftToHook,
    /// A scan this party may not run and the alarm could not be armed for,
    /// or that ran out of rounds: left to the task.
    LeftToTask,
    /// The task must end.
    Stop(Stop),
}

/// The work the requests stand for, on the state behind the lock.
pub(crate) trait Work<T> {
    /// A whole pass: scan every busy shard, arm for the next busy tick.
    fn pass(&self, state: &mut T, wake_up: bool) -> Outcome;
    /// Arm for the driver's target (`Shared::target`, the one place the
    /// earliest tick to wake for is kept) if the alarm would wake later; a
    /// target already due is a pass if `party` may scan, else
    /// [`Work::keep_hook`]'s answer.
    fn arm(&self, state: &mut T, party: Party) -> Outcome;
    /// A scan is due that this party may not run: arm the alarm, if it
    /// would wake later, for the first millisecond tokio has not processed
    /// (`LeftToHook`), or, if tokio will not take that, `LeftToTask`.
    fn keep_hook(&self, state: &mut T) -> Outcome;
    /// Retire the alarm for good.
    fn retire(&self, state: &mut T);
}

pub(crate) struct Requests<T> {
    lock: PassLock<T>,
    /// A whole pass is wanted.
    ///
    /// Every write to it, and to `arm`, is a read-modify-write: so the
    /// writes form one release sequence, and the runner's swap that takes a
    /// request synchronises with every party that raised one before it,
    /// even one whose raise another party's raise overwrote (its data
    /// reaches the pass by happens-before, not only through `SeqCst`'s
    /// total order). A plain store would be as correct under `SeqCst`, but
    /// loom cannot check it: it lets a store racing a read-modify-write
    /// land between the latter's read and write (tokio-rs/loom#254), which
    /// makes up lost requests in the `loom_requests_*` models.
    scan: AtomicBool,
    /// A registration lowered the driver's target: arm for it.
    arm: AtomicBool,
    /// The task is ending: retire the alarm.
    retire: AtomicBool,
    /// A [`Stop`], set once from `Running`.
    stop: AtomicU8,
}

impl<T> Requests<T> {
    pub(crate) fn new(state: T) -> Self {
        Requests {
            lock: PassLock::new(state),
            scan: AtomicBool::new(false),
            arm: AtomicBool::new(false),
            retire: AtomicBool::new(false),
            stop: AtomicU8::new(Stop::Running as u8),
        }
    }

    /// Asks for a whole pass.
    #[must_use = "the driver task must be told when the answer says so"]
    pub(crate) fn pass(&self, party: Party, work: &impl Work<T>, wake_up: bool) -> Answer {
        // A swap, not a store (see `scan`).
        let _ = self.scan.swap(true, Ordering::SeqCst);
        self.run(party, work, wake_up)
    }

    /// A registration that lowered the driver's target asks for the alarm
    /// to be armed for it.
    #[must_use = "the driver task must be told when the answer says so"]
    pub(crate) fn arm(&self, work: &impl Work<T>) -> Answer {
        // A swap, not a store (see `scan`).
        let _ = self.arm.swap(true, Ordering::SeqCst);
        self.run(Party::Registration, work, true)
    }

    /// The task, ending: the alarm is retired here or by the party running
    /// requests now, before it lets go (the pass lock never lets go with a
    /// request raised, even once a stop is set: a first version did, and
    /// the loom models found a retirement left to nobody).
    pub(crate) fn retire(&self, work: &impl Work<T>) -> Answer {
        self.retire.store(true, Ordering::SeqCst);
        self.run(Party::Task, work, false)
    }

    /// Why the task must end, if it must.
    pub(crate) fn stopped(&self) -> Stop {
        match self.stop.load(Ordering::SeqCst) {
            0 => Stop::Running,
            1 => Stop::Retire,
            _ => Stop::Off,
        }
    }

    /// Whether a scan is raised and not yet run (left to the task).
    #[cfg(tickwheel_loom)]
    pub(crate) fn scan_pending(&self) -> bool {
        self.scan.load(Ordering::SeqCst)
    }

    /// Holds the pass lock as a party running passes would, until the
    /// result is dropped (for the tests).
    #[cfg(all(test, not(tickwheel_loom)))]
    pub(crate) fn hold_lock(&self) -> impl Drop + '_ {
        self.lock.hold()
    }

    /// Raises a scan without offering to run it, as a hook does when
    /// another party holds the lock (for the tests).
    #[cfg(all(test, not(tickwheel_loom)))]
    pub(crate) fn raise_scan(&self) {
        let _ = self.scan.swap(true, Ordering::SeqCst);
    }

    /// Waits for the state the work runs on (the models, to read what the
    /// stand-in work recorded once every party is done).
    #[cfg(tickwheel_loom)]
    pub(crate) fn state(&self) -> crate::engine::sync::MutexGuard<'_, T> {
        self.lock.lock()
    }

    fn set_stop(&self, why: Stop) {
        let _ = self.stop.compare_exchange(
            Stop::Running as u8,
            why as u8,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Runs every request raised so far, and those raised meanwhile, as far
    /// as `party` may, containing a pass that panics (see the module docs).
    fn run(&self, party: Party, work: &impl Work<T>, wake_up: bool) -> Answer {
        // A run that panics leaves `answer` as it was: only a second panic
        // sets more than `panics`.
        let mut answer = Answer::default();
        for panics in 0..2 {
            if run_contained(|| answer = self.run_once(party, work, wake_up)) {
                answer.panics = panics;
                return answer;
            }
            // The pass may have taken the scan before it panicked.
            let _ = self.scan.swap(true, Ordering::SeqCst);
        }
        // Twice in a row: the scan stays raised for the task. The task
        // itself does not run it again at once (a pass that always panics
        // would spin): its backstop runs it, once it finds the tick late.
        answer.panics = 2;
        answer.tell_task = true;
        answer
    }

    fn run_once(&self, party: Party, work: &impl Work<T>, mut wake_up: bool) -> Answer {
        let mut answer = Answer::default();
        answer.ran_here = self.lock.request(|state| {
            if self.retire.load(Ordering::SeqCst) {
                work.retire(state);
                self.set_stop(Stop::Off);
                return;
            }
            if self.stopped() != Stop::Running {
                return;
            }
            let outcome = if party.may_scan() && self.scan.swap(false, Ordering::SeqCst) {
                // The scan sees every entry kicked so far. A swap, not a
                // store (see `scan`).
                let _ = self.arm.swap(false, Ordering::SeqCst);
                work.pass(state, wake_up)
            } else {
                let armed = if self.arm.swap(false, Ordering::SeqCst) {
                    work.arm(state, party)
                } else {
                    Outcome::Armed
                };
                // A scan raised while a registration runs (the hook's,
                // called from inside an arm that tokio fired at once). A
                // registration that could not keep the hook armed does not
                // try again in this run (tokio answered "processed" for
                // every instant it offered): the scan is the task's.
                let raised = !party.may_scan() && self.scan.load(Ordering::SeqCst);
                match armed {
                    Outcome::Armed if raised && !answer.left_here => work.keep_hook(state),
                    Outcome::Armed if raised => Outcome::LeftToTask,
                    other => other,
                }
            };
            wake_up = true;
            match outcome {
                Outcome::Stop(why) => self.set_stop(why),
                Outcome::LeftToHook | Outcome::LeftToTask => {
                    let _ = self.scan.swap(true, Ordering::SeqCst);
                }
                Outcome::Armed => {}
            }
            // The task is told of a scan left to it, and that it ends.
            answer.left_here |= outcome == Outcome::LeftToTask;
            answer.tell_task |= answer.left_here || matches!(outcome, Outcome::Stop(_));
        });
        answer
    }
}

/// What [`Requests::run`] did, for the party that asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    /// A scan was left to the task, or the task must end.
    tell_task: bool,
    /// A pass run on this thread left a scan to the task. For the task
    /// itself: its own pass ran out of rounds and left it a scan, to run
    /// again once the tasks it woke had a turn.
    pub(crate) left_here: bool,
    /// This party ran the requests (rather than leaving them to the party
    /// running passes now).
    pub(crate) ran_here: bool,
    /// Passes that panicked on this thread (contained).
    pub(crate) panics: u32,
}

impl Answer {
    /// Whether `party`, which asked, must ring the driver task: a scan was
    /// left to it, or it must end. The task itself is never told by its own
    /// request (see [`Answer::left_here`]).
    pub(crate) fn tell(&self, party: Party) -> bool {
        party != Party::Task && self.tell_task
    }
}
