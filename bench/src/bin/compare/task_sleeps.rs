//! W9, a task per sleep: the pattern services run, where each sleep is
//! awaited by a task of its own, so the woken task re-polls its sleep and
//! drops it (which W3 never does: its sleeps are polled by hand with one
//! shared waker). 200,000 tasks (20,000 with `--quick`), each
//! `async move { sleep(d).await }`, on a current-thread runtime and on 2
//! workers, a child per shape, runtime and system, in three shapes:
//!
//! - spawned by a task (`w9ct`, `w9mt`): one spawned task spawns them all in
//!   one poll, detached, with `d` pseudo-random in `[0, spread)` (1 s; 0.3 s
//!   with `--quick`; the same seeded sequence for every system); each task
//!   reads the clock before and after its sleep (to count sleeps returned
//!   early, which must be 0) and counts itself down, and the last one
//!   notifies the spawning task (a `Notify`, awaited under a 60 s tokio
//!   timeout). The shape of a request loop that spawns a task per request.
//! - spawned from `block_on` into a `JoinSet` that `block_on` then drains
//!   (`w9ct-joinset`, `w9mt-joinset`), and spawned from `block_on`,
//!   detached, each task counting itself down and the last notifying
//!   `block_on` (`w9ct-notify`, `w9mt-notify`): the two ways a user's own
//!   harness waits for a batch of tasks, with nothing else in the task but
//!   the sleep. Task `i` sleeps `1 ms + (i * 7919 us mod spread)`, so a
//!   harness of a few lines elsewhere reproduces the same deadlines.
//!
//! On 2 workers the shapes differ most: a task that spawns puts each new
//! task in its worker's own queue (half a queue at a time spilling into the
//! runtime's shared one), and that worker runs none of them until its loop
//! ends; `block_on` runs on a thread that is no worker, so every spawn goes
//! to the shared queue and may wake a parked worker. A `JoinSet` keeps every
//! task's handle: each task's end wakes the collecting future, and the task
//! is freed where its output is read. A detached task is freed by the worker
//! that ran it. Those costs are the runtime's, paid alike by every system,
//! but where and when they are paid moves each timer's share differently,
//! which is why W9 is measured in more than one shape.
//!
//! The child reports the process's CPU time from the first spawn to the
//! last task's end (`cpu_s`, and per task `cpu_ns_per_op`), the tasks that
//! finished, and for the spawned shape the sleeps that returned before
//! their deadline (`early`).
//!
//! tickwheel sleeps through `tickwheel::time::sleep`, on the runtime's
//! default timer (started before the measurement, as a service's first
//! sleep would have started it long before), tokio through
//! `tokio::time::sleep`: the one line that differs.
//!
//! # The floor
//!
//! The floor (`floor`) runs the same tasks, each awaiting
//! [`yield_once`] instead of the sleep: a
//! future that is pending once, waking its task through the task's own
//! waker, and ready on the next poll. So the floor's task, like the sleeping
//! one, is spawned, polled, suspended, woken through the runtime's waker
//! (not tokio's `yield_now`, which defers its wake by a path of its own),
//! rescheduled, polled again and completed, and the task holds no timer
//! state. What the floor does not have is the timer's own cost: creating
//! the sleep, registering it, the sleep's bytes in the task, the timer's
//! passes and wake-ups over the spread, firing and waking from the timer's
//! side, the re-poll that finds the sleep done, and the drop. A floor of
//! tasks that await nothing would count the runtime's suspend, wake and
//! second poll as the timer's, a cost no timer can avoid, and make every
//! timer's overhead look alike. The overhead above the floor is each
//! repetition's figure less the floor of the same repetition, as W1 and
//! W2's are.
//!
//! # Early
//!
//! In the spawned shape, each task reads `Instant::now() + d` just before it creates its sleep
//! and, once the sleep returns, counts itself early if the clock is still
//! before that deadline. The timer reads the clock again when it makes the
//! sleep, so its own deadline is a few ns later: a sleep counted early here
//! returned before the deadline it was asked for. The floor's tasks read
//! the clock the same way (so the floor pays what the sleeping tasks pay
//! for it) and are all "early"; their count is not reported. The other
//! shapes read no clock in the task (a user's task would not); their sleeps
//! are the same timers', whose earliness the spawned shape checks.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwheel_bench::{current_thread, two_workers, yield_once};
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::measure::cpu_ns;
use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys, TaskShape, TaskSleeps};

/// How long the last task may take to finish before the child gives up.
const GIVE_UP: Duration = Duration::from_secs(60);

/// What the tasks report.
struct Shared {
    /// Tasks not finished yet.
    left: AtomicUsize,
    /// Tasks whose sleep returned before its deadline.
    early: AtomicUsize,
    /// Notified when the last task has finished.
    done: Notify,
}

/// One task: sleep `d` (or, the floor, yield once) and count itself done.
/// `sleep` is a function item (a type of its own, no pointer to call
/// through), so each system's task calls its sleep directly.
async fn task<S, F>(d: Duration, shared: Arc<Shared>, sleep: S)
where
    S: Fn(Duration) -> F,
    F: Future<Output = ()>,
{
    let deadline = Instant::now() + d;
    sleep(d).await;
    if Instant::now() < deadline {
        shared.early.fetch_add(1, Ordering::Relaxed);
    }
    if shared.left.fetch_sub(1, Ordering::AcqRel) == 1 {
        shared.done.notify_one();
    }
}

/// Spawns a task per duration, each with its own future type, so a task's
/// size is that of its own sleep (or of none, for the floor).
fn spawn_all<S, F>(durations: &[Duration], shared: &Arc<Shared>, sleep: S)
where
    S: Fn(Duration) -> F + Copy + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    for &d in durations {
        drop(tokio::spawn(task(d, shared.clone(), sleep)));
    }
}

/// The floor's "sleep": pending once, woken by its own waker.
fn no_timer(_: Duration) -> tickwheel_bench::YieldOnce {
    yield_once()
}

/// W9 in one of its shapes.
pub fn run_w9(tasks: TaskSleeps, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = if tasks.two_workers {
        two_workers()
    } else {
        current_thread()
    };
    if sys == Sys::Tickwheel {
        // The runtime's default timer, started before the measurement.
        let _guard = rt.enter();
        drop(tickwheel::Timer::current());
    }
    if tasks.shape == TaskShape::Spawned {
        return tasks_sleeping(&rt, sys, sizes, out);
    }
    let spread = sizes.spread.as_micros() as u64;
    let durations: Vec<Duration> = (0..sizes.w9_tasks as u64)
        .map(|i| Duration::from_millis(1) + Duration::from_micros(i * 7919 % spread))
        .collect();
    let joinset = tasks.shape == TaskShape::JoinSet;
    // A watchdog, not a tokio timeout: the shape has no timer but the
    // tasks' own.
    std::thread::spawn(|| {
        std::thread::sleep(GIVE_UP);
        eprintln!("W9: the tasks did not finish within 60 s");
        std::process::exit(1);
    });
    let cpu_before = cpu_ns();
    let started = Instant::now();
    match sys {
        Sys::Floor => user_shape(&rt, &durations, joinset, no_timer),
        Sys::Tickwheel => user_shape(&rt, &durations, joinset, tickwheel::time::sleep),
        Sys::Tokio => user_shape(&rt, &durations, joinset, tokio::time::sleep),
        Sys::Ambient | Sys::Pingora => unreachable!("W9 measures tickwheel and tokio"),
    }
    report(out, sizes, durations.len(), started, cpu_ns() - cpu_before);
}

/// What each W9 child reports.
fn report(out: &mut Figures, sizes: Sizes, n: usize, started: Instant, cpu: u64) {
    emit(out, "tasks", n as f64);
    emit(out, "spread_ms", sizes.spread.as_secs_f64() * 1e3);
    emit(out, "finished", n as f64);
    emit(out, "window_s", started.elapsed().as_secs_f64());
    emit(out, "cpu_s", cpu as f64 / 1e9);
    emit(out, "cpu_ns_per_op", cpu as f64 / n as f64);
}

/// A task per duration spawned from `block_on`, each
/// `async move { sleep(d).await }`, then awaited: all of them through a
/// `JoinSet` (`joinset`), or detached and counted down to a `Notify`.
fn user_shape<S, F>(rt: &Runtime, durations: &[Duration], joinset: bool, sleep: S)
where
    S: Fn(Duration) -> F + Copy + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    rt.block_on(async {
        if joinset {
            let mut set = JoinSet::new();
            for &d in durations {
                set.spawn(async move { sleep(d).await });
            }
            while let Some(done) = set.join_next().await {
                done.expect("a W9 task panicked");
            }
        } else {
            let countdown = Arc::new((AtomicUsize::new(durations.len()), Notify::new()));
            for &d in durations {
                let countdown = countdown.clone();
                drop(tokio::spawn(async move {
                    sleep(d).await;
                    if countdown.0.fetch_sub(1, Ordering::AcqRel) == 1 {
                        countdown.1.notify_one();
                    }
                }));
            }
            countdown.1.notified().await;
        }
    });
}

/// W9's spawned shape on `rt`: tickwheel's tasks on the runtime's default
/// timer (W9, and W11 on a timer installed with a given shard count).
pub fn tasks_sleeping(rt: &Runtime, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let n = sizes.w9_tasks;
    let durations = Rng::new(0x5DEE_CE66_D1CE_4E5B).durations(n, Duration::ZERO, sizes.spread);
    let shared = Arc::new(Shared {
        left: AtomicUsize::new(n),
        early: AtomicUsize::new(0),
        done: Notify::new(),
    });
    let task_shared = shared.clone();
    let cpu_before = cpu_ns();
    let started = Instant::now();
    rt.block_on(async move {
        // Spawned, as a request loop would be (see W8).
        tokio::spawn(async move {
            match sys {
                Sys::Floor => spawn_all(&durations, &task_shared, no_timer),
                Sys::Tickwheel => spawn_all(&durations, &task_shared, tickwheel::time::sleep),
                Sys::Tokio => spawn_all(&durations, &task_shared, tokio::time::sleep),
                Sys::Ambient | Sys::Pingora => unreachable!("W9 measures tickwheel and tokio"),
            }
            tokio::time::timeout(GIVE_UP, task_shared.done.notified())
                .await
                .expect("every W9 task finishes within 60 s");
        })
        .await
        .expect("the W9 spawning task panicked");
    });
    let cpu = cpu_ns() - cpu_before;
    assert_eq!(
        shared.left.load(Ordering::Acquire),
        0,
        "every W9 task finished"
    );
    report(out, sizes, n, started, cpu);
    if sys != Sys::Floor {
        emit(out, "early", shared.early.load(Ordering::Relaxed) as f64);
    }
}
