//! The contract on tokio's alternative timer (`Builder::enable_alt_timer`,
//! behind `--cfg tokio_unstable`), where tokio's timers are heading: every
//! runtime here is a multi-thread one built with `enable_alt_timer()` (the
//! only kind it applies to), and the timer's driver arms its alarm, a
//! `tokio::time::Sleep`, on that timer. Real clock throughout (a
//! multi-thread runtime cannot pause), so exactness is checked against the
//! clock (never early, never before the tick boundary) and lateness only
//! with generous bounds; the figures are printed (`-- --nocapture`).
//!
//! Built and run only with the flag, in a target directory of its own (the
//! flag changes the build of every crate):
//! `RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=target/alt-timer
//! cargo test --test alt_timer -- --nocapture`; `.ci/run` does.
//!
//! # `advance`
//!
//! The paused clock does not meet the alternative timer in tokio 1.54:
//! `start_paused(true)` (like `time::pause()`) panics on a multi-thread
//! runtime ("`time::pause()` requires the `current_thread` Tokio runtime"),
//! and a current-thread runtime ignores `enable_alt_timer()` (its builder
//! resets the flavour to the traditional timer, as the method's docs say:
//! "Attempting to use this option with any other runtime type will have no
//! effect"). So `advance` is checked on a current-thread builder that asked
//! for the alternative timer (what a shared builder configuration does),
//! and a tripwire fails once a multi-thread runtime can start paused, the
//! day the exact `advance` contract can be tested on the alternative timer
//! itself.
#![cfg(tokio_unstable)]

mod common;

use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::watchdog::within_30_s;
use tickwheel::Timer;
use tokio::runtime::{Builder, Runtime};
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// A multi-thread runtime of `workers` workers on tokio's alternative timer.
fn alt_runtime(workers: usize) -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .enable_alt_timer()
        .build()
        .expect("a multi-thread runtime on the alternative timer")
}

/// A timer of `tick` whose driver runs on `rt`.
fn timer_on(rt: &Runtime, tick: Duration) -> Timer {
    Timer::builder()
        .tick(tick)
        .runtime(rt.handle().clone())
        .build()
        .expect("a valid tick")
}

/// The first boundary at or after `deadline` of the tick grid through
/// `grid` (any tick boundary of the timer, such as `Timer::last_tick`),
/// which may lie on either side of the deadline.
fn boundary(grid: Instant, tick: Duration, deadline: Instant) -> Instant {
    let tick_ns = tick.as_nanos();
    let ns = |n: u128| Duration::from_nanos(n as u64);
    match deadline.checked_duration_since(grid) {
        Some(since) => grid + ns(since.as_nanos().div_ceil(tick_ns) * tick_ns),
        None => grid - ns(((grid - deadline).as_nanos() / tick_ns) * tick_ns),
    }
}

/// Signed milliseconds from `from` to `to`.
fn ms_between(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -((from - to).as_secs_f64() * 1e3),
    }
}

/// The value at quantile `q` of `values` (sorted here).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// `count p50 p90 p99 max`, for a line of figures.
fn figures(values: &mut [f64]) -> String {
    format!(
        "n {:5}  p50 {:7.3}  p90 {:7.3}  p99 {:7.3}  max {:7.3} ms",
        values.len(),
        quantile(values, 0.5),
        quantile(values, 0.9),
        quantile(values, 0.99),
        quantile(values, 1.0),
    )
}

/// Awaits `fut` and returns when it completed.
async fn completion(fut: impl Future<Output = ()>) -> Instant {
    fut.await;
    Instant::now()
}

/// Never early: sleeps of durations on and off the millisecond grid, on
/// timers of 1 ms (its origin on tokio's grid, if the grid search found
/// it), 1.5 ms and 10 ms ticks, each task sleeping several times in a row so
/// deadlines fall at every phase. On completion, the clock has reached both
/// the deadline and the deadline's tick boundary. Beside each wheel sleep,
/// the same task waits on `tokio::time::sleep_until(that boundary)`, and the
/// figures of both (lateness past the boundary) are printed: the contract's
/// "never later than tokio at the tick boundary" on a real clock, shown,
/// not asserted.
#[test]
fn sleeps_never_complete_before_their_deadline_or_its_tick_boundary() {
    within_30_s(|| {
        let rt = alt_runtime(2);
        let ticks = [ms(1), us(1_500), ms(10)];
        let durations = [us(100), ms(1), us(1_300), us(2_700), ms(10), ms(50)];
        const TASKS_PER_CASE: usize = 20;
        const ROUNDS: usize = 3;
        for tick in ticks {
            let timer = timer_on(&rt, tick);
            let results = rt.block_on(async {
                let mut tasks = Vec::new();
                for (i, d) in durations.iter().copied().enumerate() {
                    for t in 0..TASKS_PER_CASE {
                        let timer = timer.clone();
                        tasks.push(tokio::spawn(async move {
                            let mut out = Vec::new();
                            // A different phase for each task.
                            tokio::time::sleep(us((i * TASKS_PER_CASE + t) as u64 * 37)).await;
                            for _ in 0..ROUNDS {
                                let grid = timer.last_tick();
                                let sleep = timer.sleep(d);
                                let deadline = sleep.deadline();
                                let edge = boundary(grid, timer.tick(), deadline);
                                let (wheel, tokio) = tokio::join!(
                                    completion(sleep),
                                    completion(tokio::time::sleep_until(edge))
                                );
                                out.push((d, deadline, edge, wheel, tokio));
                            }
                            out
                        }));
                    }
                }
                let mut results = Vec::new();
                for task in tasks {
                    results.extend(task.await.expect("a sleeping task"));
                }
                results
            });
            let mut early = Vec::new();
            let (mut wheel_late, mut tokio_late) = (Vec::new(), Vec::new());
            for &(d, deadline, edge, wheel, tokio) in &results {
                if wheel < deadline || wheel < edge {
                    early.push(format!(
                        "{d:?}: completed {:.3} ms after its deadline, {:.3} ms after its boundary",
                        ms_between(deadline, wheel),
                        ms_between(edge, wheel)
                    ));
                }
                wheel_late.push(ms_between(edge, wheel));
                tokio_late.push(ms_between(edge, tokio));
            }
            let mut behind_tokio: Vec<f64> = results
                .iter()
                .map(|&(.., wheel, tokio)| ms_between(tokio, wheel))
                .collect();
            println!(
                "tick {tick:?}: past the boundary, wheel  {}",
                figures(&mut wheel_late)
            );
            println!(
                "tick {tick:?}: past the boundary, tokio  {}",
                figures(&mut tokio_late)
            );
            println!(
                "tick {tick:?}: wheel completion less tokio's         {}",
                figures(&mut behind_tokio)
            );
            assert!(
                early.is_empty(),
                "tick {tick:?}: {} of {} sleeps early: {early:#?}",
                early.len(),
                results.len()
            );
            assert_eq!(timer.pending(), 0);
        }
    });
}

/// Never lost: thousands of sleeps from 0.1 ms to 300 ms, in tasks on the
/// runtime, and sleeps awaited on plain threads (their registrations made
/// away from the runtime's workers, which may all be parked), all complete,
/// none early and none more than a generous bound late, and the wheel
/// empties.
#[test]
fn every_sleep_fires_on_the_runtime_and_from_plain_threads() {
    within_30_s(|| {
        const BOUND: Duration = Duration::from_secs(2);
        let rt = alt_runtime(2);
        for tick in [ms(1), us(1_500)] {
            let timer = timer_on(&rt, tick);
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let timer = timer.clone();
                    std::thread::spawn(move || {
                        let mut late = Vec::new();
                        for i in 0..40u64 {
                            let sleep = timer.sleep(us(100 + (t * 40 + i) * 73 % 3_000));
                            let deadline = sleep.deadline();
                            futures::executor::block_on(sleep);
                            late.push(ms_between(deadline, timer.now()));
                        }
                        late
                    })
                })
                .collect();
            let late_on_runtime = rt.block_on(async {
                let mut tasks = Vec::new();
                for i in 0..5_000u64 {
                    let timer = timer.clone();
                    tasks.push(tokio::spawn(async move {
                        let sleep = timer.sleep(us(100 + i * 7_919 % 300_000));
                        let deadline = sleep.deadline();
                        sleep.await;
                        ms_between(deadline, Instant::now())
                    }));
                }
                let mut late = Vec::new();
                for task in tasks {
                    late.push(task.await.expect("a sleeping task"));
                }
                late
            });
            let mut late_on_threads = Vec::new();
            for thread in threads {
                late_on_threads.extend(thread.join().expect("a sleeping thread"));
            }
            for (place, mut late) in [
                ("runtime tasks", late_on_runtime),
                ("plain threads", late_on_threads),
            ] {
                println!(
                    "tick {tick:?}, {place}: late {}",
                    figures(&mut late.clone())
                );
                let early = late.iter().filter(|&&l| l < 0.0).count();
                assert_eq!(early, 0, "tick {tick:?}, {place}: {early} sleeps early");
                let worst = quantile(&mut late, 1.0);
                assert!(
                    worst < BOUND.as_secs_f64() * 1e3,
                    "tick {tick:?}, {place}: a sleep {worst:.3} ms late"
                );
            }
            let stats = timer.stats();
            assert_eq!(timer.pending(), 0);
            // A sleep first polled after its deadline (a thread or task
            // kept waiting that long) completes without registering.
            assert!(stats.registered <= 5_000 + 4 * 40);
            assert_eq!(
                stats.fired, stats.registered,
                "a registered sleep did not fire"
            );
            assert_eq!(stats.cancelled, 0);
        }
    });
}

/// About `d` of CPU: a counter incremented until the clock says so.
fn work(d: Duration) {
    let start = std::time::Instant::now();
    let mut n = 0u64;
    while start.elapsed() < d {
        n = black_box(n + 1);
    }
}

/// On time under load, W12's shape (BENCHMARKS.md): two workers, 300 tasks
/// looping on `yield_now` plus 5 µs of work, so the run queues never
/// empty; every tenth round a task sleeps 1-5 ms, on tickwheel and on
/// `tokio::time::sleep` in turn (same tasks, same runtime, same run), and
/// records how late its `.await` returned past the deadline asked for.
/// Generous bounds only (the machine is shared): no wheel sleep early,
/// tickwheel's median within tokio's + 2 ms, none later than 500 ms.
#[test]
fn under_load_wheel_sleeps_keep_pace_with_tokios() {
    within_30_s(|| {
        const TASKS: usize = 300;
        const WINDOW: Duration = Duration::from_millis(1_500);
        let rt = alt_runtime(2);
        let timer = timer_on(&rt, ms(1));
        let before = timer.stats();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..TASKS)
            .map(|index| {
                let (timer, stop) = (timer.clone(), stop.clone());
                rt.spawn(async move {
                    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (index as u64 + 1);
                    let (mut wheel, mut tokio) = (Vec::new(), Vec::new());
                    let mut round = index as u64;
                    while !stop.load(Ordering::Relaxed) {
                        tokio::task::yield_now().await;
                        work(us(5));
                        round += 1;
                        if round % 10 != 0 {
                            continue;
                        }
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let d = us(1_000 + seed % 4_000);
                        let deadline = Instant::now() + d;
                        if (round / 10) % 2 == 0 {
                            timer.sleep(d).await;
                            wheel.push(ms_between(deadline, Instant::now()));
                        } else {
                            tokio::time::sleep(d).await;
                            tokio.push(ms_between(deadline, Instant::now()));
                        }
                    }
                    (wheel, tokio)
                })
            })
            .collect();
        let started = std::time::Instant::now();
        std::thread::sleep(WINDOW);
        stop.store(true, Ordering::Relaxed);
        let (mut wheel, mut tokio) = rt.block_on(async {
            let (mut wheel, mut tokio) = (Vec::new(), Vec::new());
            for task in tasks {
                let (w, t) = task.await.expect("a busy task");
                wheel.extend(w);
                tokio.extend(t);
            }
            (wheel, tokio)
        });
        let window = started.elapsed().as_secs_f64();
        let wakeups = timer.stats().delta(&before).wakeups;
        println!("under load, tickwheel   late {}", figures(&mut wheel));
        println!("under load, tokio::time late {}", figures(&mut tokio));
        println!(
            "under load: driver wake-ups {wakeups} over {window:.2} s ({:.0}/s)",
            wakeups as f64 / window
        );
        assert!(
            wheel.len() >= 100 && tokio.len() >= 100,
            "too few sleeps to compare: {} and {}",
            wheel.len(),
            tokio.len()
        );
        let early = wheel.iter().filter(|&&l| l < 0.0).count();
        assert_eq!(early, 0, "{early} wheel sleeps returned early");
        let (p50, tokio_p50) = (quantile(&mut wheel, 0.5), quantile(&mut tokio, 0.5));
        assert!(
            p50 <= tokio_p50 + 2.0,
            "tickwheel's median lateness {p50:.3} ms, tokio's {tokio_p50:.3} ms"
        );
        let max = quantile(&mut wheel, 1.0);
        assert!(max < 500.0, "a wheel sleep {max:.3} ms late");
    });
}

/// The wake-ups counted over `window` of real time.
fn wakeups_over(timer: &Timer, window: Duration) -> u64 {
    let before = timer.stats().wakeups;
    std::thread::sleep(window);
    timer.stats().wakeups - before
}

/// 0 wake-ups when idle: a timer nothing ever slept on, and a timer after
/// its last sleep fired (and a moment to settle), each count no driver
/// wake-up over 200 ms of real time.
#[test]
fn an_idle_timer_does_not_wake() {
    within_30_s(|| {
        const WINDOW: Duration = Duration::from_millis(200);
        let rt = alt_runtime(2);
        let fresh = timer_on(&rt, ms(1));
        std::thread::sleep(ms(20)); // the driver task starts and parks
        let idle = wakeups_over(&fresh, WINDOW);
        println!("idle: a fresh timer woke {idle} times in {WINDOW:?}");
        assert_eq!(idle, 0, "a timer that never had a sleep woke");

        for tick in [ms(1), us(1_500)] {
            let timer = timer_on(&rt, tick);
            rt.block_on(async {
                let tasks: Vec<_> = (1..=40u64)
                    .map(|i| {
                        let timer = timer.clone();
                        tokio::spawn(async move { timer.sleep(us(500 * i)).await })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("a sleeping task");
                }
            });
            assert_eq!(timer.pending(), 0);
            let busy = timer.stats().wakeups;
            std::thread::sleep(ms(50)); // settle: the last pass ends
            let idle = wakeups_over(&timer, WINDOW);
            println!(
                "idle: tick {tick:?}, {busy} wake-ups for 40 sleeps, then {idle} in {WINDOW:?}"
            );
            assert_eq!(
                idle, 0,
                "tick {tick:?}: the driver woke after the last sleep"
            );
        }
    });
}

/// Shutdown wakes everyone: sleeps and timeouts (minutes away) waiting in
/// tasks and on a plain thread all end promptly once `shutdown()` is called,
/// the timeouts with `Elapsed::is_shutdown`; new waits are refused.
#[test]
fn shutdown_wakes_every_waiter_promptly() {
    within_30_s(|| {
        const PROMPT: Duration = Duration::from_secs(2);
        let rt = alt_runtime(2);
        let timer = timer_on(&rt, ms(1));
        let sleeps: Vec<_> = (0..500u64)
            .map(|i| {
                let timer = timer.clone();
                rt.spawn(async move {
                    timer.sleep(Duration::from_secs(60) + ms(i)).await;
                    std::time::Instant::now()
                })
            })
            .collect();
        let timeouts: Vec<_> = (0..500u64)
            .map(|i| {
                let timer = timer.clone();
                rt.spawn(async move {
                    let out = timer
                        .timeout(
                            Duration::from_secs(90) + ms(i),
                            std::future::pending::<()>(),
                        )
                        .await;
                    (out, std::time::Instant::now())
                })
            })
            .collect();
        let thread = {
            let timer = timer.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(timer.sleep(Duration::from_secs(120)));
                std::time::Instant::now()
            })
        };
        let waiting = std::time::Instant::now();
        while timer.pending() < 1_001 {
            assert!(
                waiting.elapsed() < Duration::from_secs(10),
                "never registered"
            );
            std::thread::sleep(ms(1));
        }
        let shutdown = std::time::Instant::now();
        assert_eq!(timer.shutdown(), 1_001);
        let mut ended = rt.block_on(async {
            let mut ended = Vec::new();
            for task in sleeps {
                ended.push(task.await.expect("a sleeping task"));
            }
            for task in timeouts {
                let (out, at) = task.await.expect("a waiting task");
                let err = out.expect_err("a timeout ends with an error at shutdown");
                assert!(err.is_shutdown(), "{err}");
                ended.push(at);
            }
            ended
        });
        ended.push(thread.join().expect("the sleeping thread"));
        let mut after: Vec<f64> = ended
            .iter()
            .map(|at| at.saturating_duration_since(shutdown).as_secs_f64() * 1e3)
            .collect();
        println!("shutdown: waiters ended {}", figures(&mut after));
        let last = quantile(&mut after, 1.0);
        assert!(
            last < PROMPT.as_secs_f64() * 1e3,
            "a waiter ended {last:.3} ms after shutdown"
        );
        assert_eq!(timer.pending(), 0);
        assert!(timer
            .try_sleep(ms(1))
            .expect_err("a new sleep after shutdown")
            .is_shutdown());
    });
}

/// Shutdown by the runtime's end: sleeps awaited on plain threads, whose
/// driver ran on a runtime on the alternative timer, complete when that
/// runtime is dropped (with sleeps of its own tasks still pending too), and
/// the process lives on. Fifty runtimes in a row: the failure this catches
/// (a panic on a worker thread while the runtime shuts down, which tokio
/// turns into a process abort) does not come with every runtime. The body
/// runs in a child process (the test below), so that an abort fails this
/// test with the child's message instead of ending the whole binary.
#[test]
fn dropping_the_runtime_wakes_sleeps_waiting_elsewhere() {
    within_30_s(|| {
        let child = "dropping_the_runtime_wakes_sleeps_waiting_elsewhere_in_this_process";
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([child, "--exact", "--ignored", "--nocapture"])
            .output()
            .expect("run the test binary");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{child} ({}): {stderr}", out.status);
        print!("{}", String::from_utf8_lossy(&out.stdout));
    });
}

#[test]
#[ignore = "run in a child process by dropping_the_runtime_wakes_sleeps_waiting_elsewhere"]
fn dropping_the_runtime_wakes_sleeps_waiting_elsewhere_in_this_process() {
    within_30_s(|| {
        for _ in 0..50 {
            let rt = alt_runtime(2);
            let timer = timer_on(&rt, ms(1));
            for i in 0..2u64 {
                let timer = timer.clone();
                rt.spawn(async move { timer.sleep(Duration::from_secs(60 + i)).await });
            }
            let threads: Vec<_> = (0..2u64)
                .map(|i| {
                    let timer = timer.clone();
                    std::thread::spawn(move || {
                        futures::executor::block_on(timer.sleep(Duration::from_secs(60 + i)));
                        std::time::Instant::now()
                    })
                })
                .collect();
            while timer.pending() < 4 {
                std::thread::sleep(ms(1));
            }
            let dropped = std::time::Instant::now();
            drop(rt);
            for thread in threads {
                let after = thread.join().expect("a sleeping thread") - dropped;
                assert!(
                    after < Duration::from_secs(2),
                    "woken {after:?} after the runtime ended"
                );
            }
            assert!(timer.is_shutdown());
        }
    });
}

/// `advance` where the alternative timer was asked for and a clock can
/// pause: a current-thread runtime (the flag has no effect there in tokio
/// 1.54, see the module docs), the exact paused-clock contract: a 10 ms
/// sleep is pending after `advance(9 ms)`, and woken and ready after
/// `advance(1 ms)` more.
#[test]
fn advance_is_exact_on_a_current_thread_builder_that_asked_for_the_alt_timer() {
    within_30_s(|| {
        let rt = Builder::new_current_thread()
            .enable_all()
            .enable_alt_timer()
            .start_paused(true)
            .build()
            .expect("a paused current-thread runtime");
        rt.block_on(async {
            let timer = Timer::new();
            let mut sleep = task::spawn(timer.sleep(ms(10)));
            let mut tokio = task::spawn(tokio::time::sleep(ms(10)));
            assert_pending!(sleep.poll());
            assert_pending!(tokio.poll());
            tokio::time::advance(ms(9)).await;
            assert!(!sleep.is_woken(), "woken a millisecond early");
            assert_pending!(sleep.poll());
            tokio::time::advance(ms(1)).await;
            assert!(tokio.is_woken());
            assert!(sleep.is_woken(), "not woken with tokio's at 10 ms");
            assert_ready!(sleep.poll());
        });
    });
}

/// The tripwire of the module docs: tokio 1.54 cannot pause a multi-thread
/// runtime, the only kind the alternative timer applies to. If this fails,
/// a newer tokio can: write the `advance` test above on `alt_runtime`
/// with `start_paused(true)`, and drop this one.
#[test]
fn a_multi_thread_runtime_on_the_alt_timer_cannot_start_paused() {
    within_30_s(|| {
        let built = std::panic::catch_unwind(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .enable_alt_timer()
                .start_paused(true)
                .build()
        });
        assert!(
            built.is_err(),
            "a multi-thread runtime on the alternative timer started paused: \
             test `advance` on it (see the module docs)"
        );
    });
}

/// tokio's alternative timer answers the grid search's probes two ways.
/// On a worker a reset is queued and answers "not processed" for every
/// deadline, so a whole-millisecond timer built there never finds tokio's
/// millisecond grid and says so (`Stats::grid_missed`). Off the workers the
/// probes race them: a "processed" answer is true, a "not processed" one may
/// only mean that no worker had filed the probe yet. The search then
/// usually gives up (`grid_missed`), and finds the grid when the workers
/// answered every probe it checks (seen on a loaded machine: CI's run of
/// this suite beside the others). Either outcome is correct: a found grid
/// must be tokio's, which counts whole milliseconds from the instant its
/// time driver started, inside `build()`; so the first tick boundary at or
/// after the instant read before `build()` comes no later than the instant
/// read after it. Ticks that are not whole milliseconds never look for the
/// grid.
#[test]
fn a_timer_on_the_alt_timer_finds_tokios_grid_or_reports_it_missed() {
    within_30_s(|| {
        // The narrowest bracket of a few builds, so that a wrong grid point
        // (anywhere in the millisecond) rarely falls inside it by chance.
        let (rt, built_from, built_by) = (0..8)
            .map(|_| {
                let from = Instant::now();
                let rt = alt_runtime(2);
                (rt, from, Instant::now())
            })
            .min_by_key(|(_, from, by)| *by - *from)
            .expect("eight builds");
        let bracket = built_by - built_from;
        let mut found = 0;
        for _ in 0..20 {
            // Off the workers (the test's thread), and on a worker.
            let timer = timer_on(&rt, ms(1));
            if !timer.stats().grid_missed {
                found += 1;
                let first = boundary(timer.last_tick(), ms(1), built_from);
                assert!(
                    first - built_from <= bracket,
                    "built off the workers, the timer found a grid that is not tokio's: \
                     its first tick boundary after the runtime's build began came {:?} after, \
                     and tokio's time driver started within {bracket:?}",
                    first - built_from,
                );
            }
            let on_worker = rt
                .block_on(rt.spawn(async { Timer::new().stats().grid_missed }))
                .unwrap();
            assert!(on_worker, "built on a worker, the timer found a grid");
        }
        println!(
            "alt timer: built off the workers, 1 ms timers found tokio's grid {found} times in 20 \
             (runtime built within {bracket:?})"
        );
        assert!(
            !timer_on(&rt, us(1_500)).stats().grid_missed,
            "no grid to look for"
        );
    });
}
