//! Ticks that are not whole milliseconds and timers built off tokio's
//! millisecond grid. tokio fires its own timers on a 1 ms grid counted from
//! the runtime's start; a wheel's boundaries count from the timer's origin
//! in ticks of any length, so here they fall anywhere between tokio's
//! milliseconds. Whatever the tick and the origin, on tokio's paused clock:
//! the driver never loops (each test runs under a watchdog), a wheel sleep
//! is never woken before its deadline, and never after the `advance` that
//! wakes `tokio::time::sleep_until` of its tick boundary.
//!
//! And on a clock that runs: a whole-millisecond timer built on a
//! multi-thread runtime finds tokio's grid wherever it is built, however
//! long the runtime has idled before.

mod common;

use std::time::Duration;

use common::watchdog::within_30_s;
use common::{block_on_current_thread, block_on_paused};
use proptest::prelude::*;
use tickwheel::Timer;
use tokio::runtime::{Builder, Runtime};
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, task};

const MS: Duration = Duration::from_millis(1);

/// The boundary of the first tick at or after `deadline`, on the grid of a
/// timer whose tick 0 is at `origin`.
fn boundary(origin: Instant, tick: Duration, deadline: Instant) -> Instant {
    let since = deadline.saturating_duration_since(origin).as_nanos();
    let tick_ns = tick.as_nanos();
    origin + Duration::from_nanos((since.div_ceil(tick_ns) * tick_ns) as u64)
}

/// The reproduction: a 10 ms timer built 500 µs after the runtime
/// started, a far sleep registered, the clock 9.7 ms on, then a sleep for
/// the next boundary (0.3 ms away, on no millisecond of tokio's). Re-arming
/// for the millisecond before that boundary fired at once, and the driver
/// went round (early, exact, early...) without ever returning.
#[test]
fn a_boundary_in_the_last_millisecond_off_the_grid_does_not_loop_the_driver() {
    block_on_paused(async {
        advance(Duration::from_micros(500)).await;
        let origin = Instant::now();
        let tick = 10 * MS;
        let timer = Timer::builder().tick(tick).build().unwrap();
        tokio::task::yield_now().await; // the driver starts, and parks
        let mut far = task::spawn(timer.sleep(Duration::from_secs(60)));
        assert_pending!(far.poll());
        advance(Duration::from_micros(9_700)).await;
        let mut next = task::spawn(timer.sleep_until(origin + tick));
        let mut tokio = task::spawn(tokio::time::sleep_until(origin + tick));
        assert_pending!(next.poll());
        assert_pending!(tokio.poll());
        advance(Duration::from_micros(200)).await;
        assert!(!next.is_woken(), "woken 100 µs before its deadline");
        assert_pending!(next.poll());
        // tokio fires `sleep_until(boundary)` at its next millisecond, half
        // a millisecond after the boundary, and the wheel sleep with it.
        while !tokio.is_woken() {
            assert!(!next.is_woken() || Instant::now() >= origin + tick);
            advance(Duration::from_micros(100)).await;
        }
        assert!(next.is_woken(), "later than tokio's sleep_until(boundary)");
        assert_ready!(next.poll());
        assert_ready!(tokio.poll());
        assert!(!far.is_woken());
    });
}

/// tokio's `sub_ms_delayed_sleep`, on a 1 ms wheel: after `pause()` in a
/// running test the clock is off tokio's grid, and each of five sleeps of
/// 1 ms + 1 ns in a row takes 2 ms, as tokio's do (before: the second took
/// 3 ms, a whole tick late).
#[test]
fn every_sub_millisecond_remainder_sleep_in_a_row_takes_what_tokios_takes() {
    block_on_current_thread(async {
        tokio::time::pause();
        let timer = Timer::builder().tick(MS).build().unwrap();
        tokio::task::yield_now().await;
        let mut tokios = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            tokio::time::sleep_until(start + MS + Duration::from_nanos(1)).await;
            tokios.push(start.elapsed());
        }
        let mut wheels = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            timer
                .sleep_until(start + MS + Duration::from_nanos(1))
                .await;
            wheels.push(start.elapsed());
        }
        assert_eq!(wheels, tokios);
    });
}

/// What the model test does, one step at a time.
#[derive(Debug, Clone)]
enum Op {
    /// (Re)start sleep `slot` with a deadline this many ns from now.
    Sleep { slot: usize, after_ns: u64 },
    /// Reset sleep `slot` (if it exists) to this many ns from now.
    Reset { slot: usize, after_ns: u64 },
    /// Drop sleep `slot`.
    Drop { slot: usize },
    /// Move the paused clock on by this many ns.
    Advance { ns: u64 },
    /// Move the paused clock to this many ns before the next boundary of
    /// some live sleep (the last millisecond before a boundary is where a
    /// millisecond-early arm can already have been processed).
    ToBeforeBoundary { slot: usize, ns_before: u64 },
}

const SLOTS: usize = 4;
const YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;

fn op(tick_ns: u64) -> impl Strategy<Value = Op> {
    // Deadlines: anywhere in a few ticks, and now and then years away.
    let after = prop_oneof![
        8 => 0..tick_ns * 5,
        1 => (0..4u64).prop_map(move |k| k * tick_ns),
        1 => YEAR_NS..10 * YEAR_NS,
    ];
    let step = prop_oneof![
        8 => 1..tick_ns * 2,
        1 => 1..5_000u64,
        1 => YEAR_NS..3 * YEAR_NS,
    ];
    prop_oneof![
        3 => (0..SLOTS, after.clone()).prop_map(|(slot, after_ns)| Op::Sleep { slot, after_ns }),
        2 => (0..SLOTS, after).prop_map(|(slot, after_ns)| Op::Reset { slot, after_ns }),
        1 => (0..SLOTS).prop_map(|slot| Op::Drop { slot }),
        4 => step.prop_map(|ns| Op::Advance { ns }),
        2 => (0..SLOTS, 0..1_000_000u64)
            .prop_map(|(slot, ns_before)| Op::ToBeforeBoundary { slot, ns_before }),
    ]
}

/// One wheel sleep and its reference, tokio's sleep until the wheel
/// sleep's tick boundary.
struct Pair {
    deadline: Instant,
    wheel: task::Spawn<tickwheel::Sleep>,
    tokio: task::Spawn<std::pin::Pin<Box<tokio::time::Sleep>>>,
    done: bool,
}

/// Runs `ops` against a timer of `tick_ns` and `slots` built `origin_ns`
/// after the runtime started, checking after every step that no wheel sleep
/// completed before its deadline, and that every one whose reference
/// completed has completed too.
async fn model(tick_ns: u64, slots: usize, origin_ns: u64, ops: Vec<Op>) {
    advance(Duration::from_nanos(origin_ns)).await;
    let origin = Instant::now();
    let tick = Duration::from_nanos(tick_ns);
    let timer = Timer::builder().tick(tick).slots(slots).build().unwrap();
    tokio::task::yield_now().await;
    let mut pairs: Vec<Option<Pair>> = (0..SLOTS).map(|_| None).collect();
    for op in ops {
        let now = Instant::now();
        match op {
            Op::Sleep { slot, after_ns } => {
                let deadline = now + Duration::from_nanos(after_ns);
                let edge = boundary(origin, tick, deadline);
                pairs[slot] = Some(Pair {
                    deadline,
                    wheel: task::spawn(timer.sleep_until(deadline)),
                    tokio: task::spawn(Box::pin(tokio::time::sleep_until(edge))),
                    done: false,
                });
            }
            Op::Reset { slot, after_ns } => {
                if let Some(pair) = &mut pairs[slot] {
                    let deadline = now + Duration::from_nanos(after_ns);
                    let edge = boundary(origin, tick, deadline);
                    pair.deadline = deadline;
                    pair.done = false;
                    pair.wheel.enter(|_, sleep| sleep.reset(deadline));
                    pair.tokio
                        .enter(|_, sleep| sleep.get_mut().as_mut().reset(edge));
                }
            }
            Op::Drop { slot } => pairs[slot] = None,
            Op::Advance { ns } => advance(Duration::from_nanos(ns)).await,
            Op::ToBeforeBoundary { slot, ns_before } => {
                if let Some(pair) = &pairs[slot] {
                    let edge = boundary(origin, tick, pair.deadline);
                    let to = edge.checked_sub(Duration::from_nanos(ns_before));
                    if let Some(d) = to.and_then(|to| to.checked_duration_since(now)) {
                        if !d.is_zero() {
                            advance(d).await;
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        for (slot, pair) in pairs.iter_mut().enumerate() {
            let Some(pair) = pair else { continue };
            if pair.done {
                continue;
            }
            let tokio_done = pair.tokio.poll().is_ready();
            let wheel_done = pair.wheel.poll().is_ready();
            assert!(
                !wheel_done || now >= pair.deadline,
                "sleep {slot} completed {:?} before its deadline",
                pair.deadline - now
            );
            assert!(
                !tokio_done || wheel_done,
                "sleep {slot} (deadline {:?} after the origin) is later than \
                 tokio's sleep_until of its boundary",
                pair.deadline.saturating_duration_since(origin)
            );
            pair.done = wheel_done;
        }
    }
}

/// Ticks a whole number of milliseconds, ticks a few nanoseconds off one
/// (1.000003, 3.700001 and 7.919993 ms), a tick and a half, and random
/// ones down to the shortest a timer allows.
fn tick_ns() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1_000_000u64),
        Just(1_000_003),
        Just(3_700_001),
        Just(7_919_993),
        Just(10_000_000),
        Just(1_500_000),
        1_000_000..20_000_000u64,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Wheel sleeps against `tokio::time::sleep_until(tick boundary)`: odd
    /// ticks, origins on and off tokio's grid, random resets, drops, small
    /// and year-long advances and stops just before boundaries.
    #[test]
    fn wheel_sleeps_are_never_early_and_never_later_than_tokio_at_the_boundary(
        (tick_ns, ops) in tick_ns().prop_flat_map(|tick_ns| {
            (Just(tick_ns), proptest::collection::vec(op(tick_ns), 1..80))
        }),
        slots in prop_oneof![Just(7usize), Just(512)],
        origin_ns in prop_oneof![Just(0u64), 0..2_000_000u64],
    ) {
        block_on_paused(model(tick_ns, slots, origin_ns, ops));
    }
}

/// The first boundary at or after `deadline` of the tick grid through
/// `grid` (any tick boundary of a timer, such as `Timer::last_tick`), which
/// may lie on either side of the deadline.
fn grid_boundary(grid: Instant, tick: Duration, deadline: Instant) -> Instant {
    let tick_ns = tick.as_nanos();
    let ns = |n: u128| Duration::from_nanos(n as u64);
    match deadline.checked_duration_since(grid) {
        Some(since) => grid + ns(since.as_nanos().div_ceil(tick_ns) * tick_ns),
        None => grid - ns(((grid - deadline).as_nanos() / tick_ns) * tick_ns),
    }
}

/// Where a timer is built, for the grid test below.
#[derive(Debug, Clone, Copy)]
enum BuiltOn {
    /// A `std::thread` of its own, with `Builder::runtime(handle)`.
    Thread,
    /// Inside `rt.block_on(..)` (where `#[tokio::main]`'s body runs), with
    /// `Timer::new()`.
    BlockOn,
    /// A task on one of the runtime's workers, with `Timer::new()`.
    Worker,
}

/// A multi-thread runtime of `workers` workers, and the instants read just
/// before and just after building it: tokio's time driver starts, and its
/// millisecond grid counts, from an instant between the two. The narrowest
/// of a few builds, so that a grid point that is not tokio's rarely falls
/// inside the bracket by chance.
fn bracketed_runtime(workers: usize) -> (Runtime, Instant, Instant) {
    (0..8)
        .map(|_| {
            let from = Instant::now();
            let rt = Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()
                .expect("a multi-thread runtime");
            (rt, from, Instant::now())
        })
        .min_by_key(|(_, from, by)| *by - *from)
        .expect("eight builds")
}

/// Issue 39, item 2: a 1 ms timer built off the workers of a multi-thread
/// runtime that had idled for 1.2 s missed tokio's grid (`grid_missed`, its
/// tick boundaries 0.2-0.6 ms off tokio's milliseconds, so its sleeps fired
/// up to 1 ms after tokio's own for its whole life), from a `std::thread`
/// or inside `block_on`, and now and then on a worker too. An idle runtime
/// leaves tokio's timers unprocessed (no worker wakes to process them), so
/// tokio's processed mark lay 1.2 s back, and the search took a deadline a
/// second back answering "not processed" for tokio's alternative timer.
///
/// Every way of building it, on one worker and on two, finds the grid, and
/// the grid found is tokio's: tokio's time driver starts inside the
/// runtime's `build()`, so the first tick boundary at or after the instant
/// read before `build()` comes no later than the instant read after it.
#[test]
fn a_timer_built_anywhere_after_the_runtime_idled_a_second_finds_tokios_grid() {
    within_30_s(|| {
        let cases: Vec<_> = [1, 2]
            .into_iter()
            .flat_map(|workers| {
                [BuiltOn::Thread, BuiltOn::BlockOn, BuiltOn::Worker]
                    .map(|on| (workers, on, bracketed_runtime(workers)))
            })
            .collect();
        // Idle together: no task, no timer, nothing wakes a worker.
        std::thread::sleep(Duration::from_millis(1_200));
        let mut failures = Vec::new();
        for (workers, on, (rt, from, by)) in cases {
            let timer = match on {
                BuiltOn::Thread => {
                    let handle = rt.handle().clone();
                    std::thread::spawn(move || Timer::builder().runtime(handle).build())
                        .join()
                        .expect("the thread builds a timer")
                        .expect("the default tick")
                }
                BuiltOn::BlockOn => rt.block_on(async { Timer::new() }),
                BuiltOn::Worker => rt
                    .block_on(rt.spawn(async { Timer::new() }))
                    .expect("the task builds a timer"),
            };
            assert_eq!(timer.tick(), MS);
            let first = grid_boundary(timer.last_tick(), MS, from);
            if timer.stats().grid_missed {
                failures.push(format!(
                    "{workers} worker(s), built on {on:?}: tokio's grid not found (`grid_missed`; \
                     first tick boundary {:?} after the runtime's build began, tokio's time \
                     driver started within {:?})",
                    first - from,
                    by - from,
                ));
            } else if first - from > by - from {
                failures.push(format!(
                    "{workers} worker(s), built on {on:?}: the grid found is not tokio's: its \
                     first tick boundary after the runtime's build began came {:?} after it, and \
                     tokio's time driver started within {:?}",
                    first - from,
                    by - from,
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}
