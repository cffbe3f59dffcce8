//! W14, a late first poll: does one sleep first polled after its tick make
//! the other sleeps on its timer late? A multi-thread runtime of 1 or 2
//! workers is saturated by 1,000 tasks, each looping on about 50 us of work
//! (`busy::work`) and `tokio::task::yield_now().await`, so a turn of its
//! run queue takes 25-50 ms. One `tickwheel::Timer`, built with
//! `Timer::builder().runtime(handle)` (its driver a task of that runtime,
//! 1 ms tick), serves every wheel sleep. 200 measuring tasks each make five
//! rounds of a wheel sleep (`timer.sleep(d)`) and a `tokio::time::sleep(d)`
//! of the same pseudo-random 5-11 ms, made at the same moment and awaited
//! together (`futures::future::join`): both systems in the same runtime, at
//! the same moments, under the same load.
//!
//! In the configurations with the late task (`w14-late-*`), one more task
//! loops for the whole run: it makes `timer.sleep(1 ms)`, works 3 ms, then
//! awaits that sleep, whose first poll therefore comes after its tick (the
//! shape of a sleep made before some work and awaited after it, or of a
//! `select!` arm built early). Without it (`w14-base-*`) the scene is the
//! same otherwise. The scene is issue 39's item 4: there, with the late
//! task, the measuring tasks' wheel sleeps were woken far later than the
//! tokio sleeps beside them (a timer left to its driver task's turn in the
//! run queue), and level without it; BENCHMARKS.md has the figures.
//!
//! # Lateness at the waker
//!
//! Each measured sleep is polled through [`AtWaker`], which hands the sleep
//! a waker of its own: the first time it is called, it reads the clock, then
//! wakes the task. Lateness is that instant less the deadline,
//! `Instant::now() + d` read just before the two sleeps are made: when the
//! timer woke the task, not when the task ran again (which, in a 25-50 ms
//! run queue, would drown the timer's part in the scheduler's, the same for
//! both systems). Each timer reads the clock again when it makes its sleep,
//! so its own deadline is a few ns later: a wake counted early here (below
//! 0) came before the deadline asked for. A sleep that completed at a poll
//! with no wake before it (`unwoken`) counts at the instant that poll saw
//! it ready. Beside p50 / p99 / max, `*_late_10ms` counts the wakes 10 ms
//! or more late: tokio's stay below that on a quiet host, a wake that
//! waited for a turn of the run queue does not.
//!
//! # The late task
//!
//! Its sleep is polled once after the work (`futures::poll!`): pending, it
//! is then awaited; ready at that poll (as a timer may complete a sleep
//! whose deadline has passed), the task yields instead. Without that
//! yield, a loop whose sleeps all completed at once would hold its worker
//! until tokio's budget refused one (128 loops of 3 ms): a timer that
//! completed them so would be measured on a starved runtime, where its
//! sleeps and tokio's are late alike and the goal's ratio says nothing.
//! With it the task takes one turn of the run queue per loop either way.
//! `late_loops` counts its loops over the measuring window,
//! `late_ready_at_first_poll` those whose sleep was ready at that poll.
//!
//! # The run
//!
//! The busy tasks (and the late task) start first; 100 ms later, so the
//! load is steady, the measuring tasks are spawned. The measuring window
//! runs from their spawn to the end of the last one (0.3-0.4 s on 2
//! workers, 0.7-1 s on 1); then the busy tasks and the late task are told
//! to stop. `--quick` runs the same scene (it is short already), with its
//! 2 repetitions instead of 5. The child also
//! reports the CPUs its threads waited for over the window (other work on
//! the machine), and the timer's driver wake-ups and backstop passes
//! (`Stats::wakeups`, `Stats::backstop_passes`) over it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tickwheel_bench::{join_within, multi_thread};

use crate::busy::work;
use crate::measure::{lateness_ns, runqueue_wait_ns, Lateness};
use crate::rng::Rng;
use crate::systems::{emit, Figures, LatePoll, Sys};

/// Tasks that keep every worker's run queue long.
const BUSY_TASKS: usize = 1_000;
/// The work of a busy task between two yields.
const BUSY_WORK: Duration = Duration::from_micros(50);
/// Measuring tasks, each making `ROUNDS` pairs of sleeps.
const MEASURING_TASKS: usize = 200;
/// Pairs of sleeps per measuring task.
const ROUNDS: usize = 5;
/// The measured sleeps' durations, uniform in `[SHORTEST, LONGEST)`.
const SHORTEST: Duration = Duration::from_millis(5);
const LONGEST: Duration = Duration::from_millis(11);
/// The late task's sleep, and the work between making and awaiting it.
const LATE_SLEEP: Duration = Duration::from_millis(1);
const LATE_WORK: Duration = Duration::from_millis(3);
/// A wake this late or later is counted apart (`*_late_10ms`): tokio's
/// own stay well below it on a quiet host (p99 about 3-5 ms), a wake left
/// to a 1,000-task run queue's turn (25-50 ms) does not.
const FAR: Duration = Duration::from_millis(10);
/// From the start of the load to the measuring tasks' spawn.
const SETTLE: Duration = Duration::from_millis(100);
/// How long the measuring tasks may take, and the others to stop, before
/// the child gives up.
const GIVE_UP: Duration = Duration::from_secs(60);

/// The waker [`AtWaker`] gives its future: stamps its first call, then
/// wakes the task that last polled.
struct Stamp {
    first: OnceLock<Instant>,
    task: Mutex<Waker>,
}

impl Wake for Stamp {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let now = Instant::now();
        let _ = self.first.set(now);
        self.task.lock().expect("a stamp's waker").wake_by_ref();
    }
}

/// When a future's waker was first called: `at`; `by_waker` false if the
/// future completed with no call before it (`at` is then the poll that saw
/// it ready).
#[derive(Clone, Copy, Debug)]
pub struct Woken {
    pub at: Instant,
    pub by_waker: bool,
}

/// `inner`, polled with a waker of its own (see [`Stamp`]).
pub struct AtWaker<F> {
    inner: F,
    stamp: Arc<Stamp>,
    waker: Waker,
}

impl<F: Future + Unpin> AtWaker<F> {
    pub fn new(inner: F) -> AtWaker<F> {
        let stamp = Arc::new(Stamp {
            first: OnceLock::new(),
            task: Mutex::new(Waker::noop().clone()),
        });
        AtWaker {
            inner,
            waker: Waker::from(stamp.clone()),
            stamp,
        }
    }
}

impl<F: Future + Unpin> Future for AtWaker<F> {
    type Output = Woken;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Woken> {
        let this = &mut *self;
        {
            let mut task = this.stamp.task.lock().expect("a stamp's waker");
            if !task.will_wake(cx.waker()) {
                task.clone_from(cx.waker());
            }
        }
        match Pin::new(&mut this.inner).poll(&mut Context::from_waker(&this.waker)) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(_) => Poll::Ready(match this.stamp.first.get() {
                Some(&at) => Woken { at, by_waker: true },
                None => Woken {
                    at: Instant::now(),
                    by_waker: false,
                },
            }),
        }
    }
}

/// One busy task: work, yield, until told to stop.
async fn busy_task(stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        work(BUSY_WORK);
        tokio::task::yield_now().await;
    }
}

/// The late task's loops, and those whose sleep was ready at its first
/// poll.
#[derive(Default)]
struct LateCounts {
    loops: AtomicU64,
    ready_at_first_poll: AtomicU64,
}

/// The late task: a 1 ms sleep made, 3 ms of work, then the sleep awaited
/// (its first poll after its tick), until told to stop.
async fn late_task(timer: tickwheel::Timer, stop: Arc<AtomicBool>, counts: Arc<LateCounts>) {
    while !stop.load(Ordering::Relaxed) {
        let mut sleep = timer.sleep(LATE_SLEEP);
        work(LATE_WORK);
        if futures::poll!(&mut sleep).is_ready() {
            counts.ready_at_first_poll.fetch_add(1, Ordering::Relaxed);
            tokio::task::yield_now().await;
        } else {
            sleep.await;
        }
        counts.loops.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one measuring task saw, per pair of sleeps.
#[derive(Default)]
struct PairLog {
    /// ns from the deadline to the first call of each sleep's waker.
    wheel_ns: Vec<i64>,
    tokio_ns: Vec<i64>,
    wheel_unwoken: usize,
    tokio_unwoken: usize,
}

/// One measuring task: five rounds of a wheel sleep and a tokio sleep of
/// the same duration, made together and awaited together.
async fn measuring_task(timer: tickwheel::Timer, index: usize) -> PairLog {
    let mut rng = Rng::new(0x1A7E_F125_7B01_D5E3 ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9));
    let mut log = PairLog::default();
    for _ in 0..ROUNDS {
        let d = rng.between(SHORTEST, LONGEST);
        let deadline = Instant::now() + d;
        let wheel = AtWaker::new(timer.sleep(d));
        let tokio = AtWaker::new(Box::pin(tokio::time::sleep(d)));
        let (wheel, tokio) = futures::future::join(wheel, tokio).await;
        log.wheel_ns.push(lateness_ns(wheel.at, deadline));
        log.tokio_ns.push(lateness_ns(tokio.at, deadline));
        log.wheel_unwoken += usize::from(!wheel.by_waker);
        log.tokio_unwoken += usize::from(!tokio.by_waker);
    }
    log
}

pub fn run_w14(late: LatePoll, sys: Sys, out: &mut Figures) {
    assert_eq!(
        sys,
        Sys::Tickwheel,
        "W14's one child measures tickwheel's sleeps and tokio's side by side"
    );
    let rt = multi_thread(late.workers());
    let timer = tickwheel::Timer::builder()
        .runtime(rt.handle().clone())
        .build()
        .expect("a timer with the default settings");
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..BUSY_TASKS)
        .map(|_| rt.spawn(busy_task(stop.clone())))
        .collect();
    let counts = Arc::new(LateCounts::default());
    let late_handle = late
        .late_task
        .then(|| rt.spawn(late_task(timer.clone(), stop.clone(), counts.clone())));
    std::thread::sleep(SETTLE);

    let stats_before = timer.stats();
    let loops_before = counts.loops.load(Ordering::Relaxed);
    let ready_before = counts.ready_at_first_poll.load(Ordering::Relaxed);
    let wait_before = runqueue_wait_ns();
    let started = Instant::now();
    let measuring: Vec<_> = (0..MEASURING_TASKS)
        .map(|index| rt.spawn(measuring_task(timer.clone(), index)))
        .collect();
    let logs: Vec<PairLog> = join_within(&rt, measuring, GIVE_UP, "the W14 measuring tasks");
    let window = started.elapsed();
    let waited = runqueue_wait_ns() - wait_before;
    let stats = timer.stats().delta(&stats_before);
    let loops = counts.loops.load(Ordering::Relaxed) - loops_before;
    let ready = counts.ready_at_first_poll.load(Ordering::Relaxed) - ready_before;

    stop.store(true, Ordering::Relaxed);
    join_within(
        &rt,
        busy.into_iter().chain(late_handle),
        GIVE_UP,
        "the W14 busy and late tasks",
    );

    let window_s = window.as_secs_f64();
    emit(out, "workers", late.workers() as f64);
    emit(out, "late_task", f64::from(u8::from(late.late_task)));
    emit(out, "window_s", window_s);
    emit(out, "cpus_waited_for", waited as f64 / 1e9 / window_s);
    let wheel: Vec<i64> = logs
        .iter()
        .flat_map(|l| l.wheel_ns.iter().copied())
        .collect();
    let tokio: Vec<i64> = logs
        .iter()
        .flat_map(|l| l.tokio_ns.iter().copied())
        .collect();
    let wheel_unwoken: usize = logs.iter().map(|l| l.wheel_unwoken).sum();
    let tokio_unwoken: usize = logs.iter().map(|l| l.tokio_unwoken).sum();
    for (name, samples, unwoken) in [
        ("wheel", wheel, wheel_unwoken),
        ("tokio", tokio, tokio_unwoken),
    ] {
        emit(out, &format!("{name}_sleeps"), samples.len() as f64);
        let late = Lateness::new(samples);
        emit(out, &format!("{name}_p50_ms"), late.ms_at(0.50));
        emit(out, &format!("{name}_p99_ms"), late.ms_at(0.99));
        emit(out, &format!("{name}_max_ms"), late.max_ms());
        emit(out, &format!("{name}_early"), late.early() as f64);
        emit(out, &format!("{name}_late_10ms"), late.at_least(FAR) as f64);
        emit(out, &format!("{name}_unwoken"), unwoken as f64);
    }
    emit(out, "late_loops", loops as f64);
    emit(out, "late_ready_at_first_poll", ready as f64);
    emit(out, "wakeups_per_s", stats.wakeups as f64 / window_s);
    emit(out, "backstop_passes", stats.backstop_passes as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Pending until its waker has been taken and `ready` set.
    #[derive(Default)]
    struct Gate {
        waker: Arc<Mutex<Option<Waker>>>,
        ready: Arc<AtomicBool>,
    }

    impl Future for Gate {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.ready.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_first_call_of_the_waker_is_stamped_and_every_call_reaches_the_task() {
        let gate = Gate::default();
        let (slot, ready) = (gate.waker.clone(), gate.ready.clone());
        let mut stamped = AtWaker::new(gate);
        let task = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut stamped).poll(&mut cx).is_pending());
        let inner = slot.lock().unwrap().take().expect("the gate took a waker");
        // The future sees the stamp's waker, not the task's.
        assert!(!inner.will_wake(&waker));
        let before = Instant::now();
        inner.wake_by_ref();
        let after = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        inner.wake();
        assert_eq!(task.0.load(Ordering::SeqCst), 2);
        ready.store(true, Ordering::SeqCst);
        let Poll::Ready(woken) = Pin::new(&mut stamped).poll(&mut cx) else {
            panic!("ready once the gate is open");
        };
        assert!(woken.by_waker);
        assert!(before <= woken.at && woken.at <= after, "{woken:?}");
    }

    #[test]
    fn a_future_ready_without_a_wake_counts_at_the_poll_that_saw_it() {
        let gate = Gate::default();
        gate.ready.store(true, Ordering::SeqCst);
        let before = Instant::now();
        let mut stamped = AtWaker::new(gate);
        let Poll::Ready(woken) =
            Pin::new(&mut stamped).poll(&mut Context::from_waker(Waker::noop()))
        else {
            panic!("ready at once");
        };
        assert!(!woken.by_waker);
        assert!(woken.at >= before);
    }

    #[test]
    fn a_later_poll_by_another_task_moves_the_wake_to_it() {
        let gate = Gate::default();
        let slot = gate.waker.clone();
        let mut stamped = AtWaker::new(gate);
        let (first, second) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        for task in [&first, &second] {
            let waker = Waker::from(task.clone());
            assert!(Pin::new(&mut stamped)
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        }
        slot.lock().unwrap().take().unwrap().wake();
        assert_eq!(
            (
                first.0.load(Ordering::SeqCst),
                second.0.load(Ordering::SeqCst)
            ),
            (0, 1)
        );
    }

    #[test]
    fn wakes_at_least_a_bound_late_are_counted() {
        let ms = 1_000_000;
        let late = Lateness::new(vec![-ms, 3 * ms, 10 * ms - 1, 10 * ms, 40 * ms]);
        assert_eq!(late.at_least(FAR), 2);
        assert_eq!(late.at_least(Duration::ZERO), 4);
        assert_eq!(late.early(), 1);
    }
}
