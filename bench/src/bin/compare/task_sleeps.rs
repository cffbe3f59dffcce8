//! W9, a task per sleep (issue "Speed 4"): the pattern services run, where
//! each sleep is awaited by a task of its own, so the woken task re-polls
//! its sleep and drops it (which W3 never does: its sleeps are polled by
//! hand with one shared waker). 200,000 tasks (20,000 with `--quick`) are
//! spawned by one task, each `async move { sleep(d).await }` with `d`
//! pseudo-random in `[0, spread)` (1 s; 0.3 s with `--quick`; the same
//! seeded sequence for every system), and the spawning task waits until
//! the last one has finished (a counter and a `Notify`). On a
//! current-thread runtime (`w9ct`) and on 2 workers (`w9mt`), a child per
//! system. The child reports the process's CPU time from the first spawn to
//! the last task's end (`cpu_s`, and per task `cpu_ns_per_op`), the tasks
//! that finished, and how many sleeps returned before their deadline
//! (`early`, which must be 0).
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
//! Each task reads `Instant::now() + d` just before it creates its sleep
//! and, once the sleep returns, counts itself early if the clock is still
//! before that deadline. The timer reads the clock again when it makes the
//! sleep, so its own deadline is a few ns later: a sleep counted early here
//! returned before the deadline it was asked for. The floor's tasks read
//! the clock the same way (so the floor pays what the sleeping tasks pay
//! for it) and are all "early"; their count is not reported.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwheel_bench::{current_thread, two_workers, yield_once};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

use crate::measure::cpu_ns;
use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys};

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

/// W9 on a current-thread runtime, or (`two_workers`) on 2 workers.
pub fn run_w9(sys: Sys, sizes: Sizes, two: bool, out: &mut Figures) {
    let rt = if two { two_workers() } else { current_thread() };
    if sys == Sys::Tickwheel {
        // The runtime's default timer, started before the measurement.
        let _guard = rt.enter();
        drop(tickwheel::Timer::current());
    }
    tasks_sleeping(&rt, sys, sizes, out);
}

/// W9's tasks on `rt`: tickwheel's on the runtime's default timer (W9, and
/// W11 on a timer installed with a given shard count).
pub fn tasks_sleeping(rt: &Runtime, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let n = sizes.w9_tasks;
    let mut rng = Rng::new(0x5DEE_CE66_D1CE_4E5B);
    let durations: Vec<Duration> = (0..n)
        .map(|_| rng.between(Duration::ZERO, sizes.spread))
        .collect();
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
    let window = started.elapsed().as_secs_f64();
    let cpu = cpu_ns() - cpu_before;
    let finished = n - shared.left.load(Ordering::Acquire);
    assert_eq!(finished, n, "every W9 task finished");
    emit(out, "tasks", n as f64);
    emit(out, "spread_ms", sizes.spread.as_secs_f64() * 1e3);
    emit(out, "finished", finished as f64);
    emit(out, "window_s", window);
    emit(out, "cpu_s", cpu as f64 / 1e9);
    emit(out, "cpu_ns_per_op", cpu as f64 / n as f64);
    if sys != Sys::Floor {
        emit(out, "early", shared.early.load(Ordering::Relaxed) as f64);
    }
}
