//! Per-timer cost, side by side: tickwheel vs `tokio::time` vs
//! `pingora-timeout` (its `sleep`/`timeout`, i.e. `fast_sleep`/`fast_timeout`),
//! in one criterion run: the workloads that fit criterion's iteration model
//! (W1, W2, W4). The heavy ones (W3 mass expiry, W5 idle, W6 lateness) are
//! in the `compare` binary of this crate (`src/bin/compare/`), which also
//! runs W1, W2 and W4 again and judges every figure against the project's
//! performance goals (`compare --goals`).
//!
//! ```text
//! cargo bench -p tickwheel-bench                            # about 3 minutes
//! TICKWHEEL_BENCH_QUICK=1 cargo bench -p tickwheel-bench    # shorter runs
//! ```
//!
//! Groups:
//!
//! - `w2_churn` (W2): make a 5 s sleep, poll it once (which registers it),
//!   drop it (which cancels it). The timer never fires; this is the
//!   create/cancel churn of a timeout that is almost never hit.
//! - `w1_timeout` (W1, current-thread): `timeout(5 s, f)` awaited to
//!   completion, where `f` is pending once (waking itself) and ready on its
//!   second poll. Every iteration goes back to the runtime once (the task
//!   yields, is woken and polled again), so the floor includes a scheduler
//!   round trip.
//! - `w1_timeout_inline`: the same timeout, but polled twice by hand inside the
//!   task (and `f` does not wake the task), without going back to the
//!   runtime: the timer cost without the scheduler round trip.
//! - `w1_timeout_mt` (W1, multi-thread): the `w1_timeout` operation in 64
//!   tasks on a 2-worker runtime; time per operation = total time / total
//!   operations.
//! - `w4_register` (W4): registration alone (create + first poll, kept
//!   registered) with 0 and with 1,000,000 timers already pending.
//!
//! Every W1/W2 group has a `floor` variant: the same loop with no timer, so
//! `variant - floor` is the timer's own cost. In `w2_churn` the floor polls a
//! boxed 16-byte ready future (one malloc/free per iteration, as in the
//! brief); `floor_nobox` is the same without the allocation, to show how much
//! of the floor is the allocator. None of the timer variants allocate per
//! sleep in `w2_churn`, except pingora (see below); tokio's `Sleep` is pinned
//! on the stack, not boxed.
//!
//! Each sample runs its whole batch of iterations inside one spawned task
//! (64 in `w1_timeout_mt`), so entering the runtime is not measured per
//! iteration. Each variant gets its own runtime (and tickwheel its own
//! `Timer`), built once outside the closure criterion calls per sample, so one
//! variant's driver or timer entries never sit in another's runtime.
//!
//! `tokio_anchored` variants first park tokio's driver on a far sleep (see
//! `anchor_tokio_driver`); compare them with the plain `tokio` ones to see
//! what the eventfd write on an unanchored registration costs.
//!
//! Caveats:
//!
//! - tokio is built without `test-util` here (this crate is a workspace
//!   member of its own, and Cargo unifies features only across packages
//!   built together), so `tokio::time::Instant::now()` and tokio's driver
//!   clock are plain clock reads, as in a production build. Check with
//!   `cargo tree -p tickwheel-bench -e features -i tokio`.
//! - pingora rounds deadlines to 10 ms and shares one timer (an `Arc<Notify>`)
//!   per 10 ms slot; a dropped sleep leaves the slot in its tree until the
//!   slot's deadline. Its `timeout` boxes its delay future (one allocation per
//!   timeout). Its first use starts a global clock thread that wakes every
//!   10 ms for the rest of the process, i.e. during later variants too
//!   (negligible CPU, but the machine has only 2 cores).
//! - Runs are short (1 s warm-up, 3 s measurement, 30 samples) so the whole
//!   bench takes about two minutes; `TICKWHEEL_BENCH_QUICK=1` cuts that to
//!   0.2 s + 0.5 s, 10 samples, for development on a loaded machine. On a
//!   noisy machine, compare variants within one run and repeat the run.

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use futures::poll;
use tickwheel_bench::{current_thread, new_timer, pending_once, two_workers, yield_once, DEADLINE};
use tokio::runtime::Runtime;

/// A timer on `rt`, leaked so that the timed loops (spawned tasks, so
/// `'static`) can borrow it without an `Arc` clone per iteration. One per
/// variant, for the life of the bench process.
fn tickwheel_timer(rt: &Runtime) -> &'static tickwheel::Timer {
    Box::leak(Box::new(new_timer(rt)))
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    if std::env::var_os("TICKWHEEL_BENCH_QUICK").is_some() {
        group
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(500))
            .sample_size(10);
    } else {
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .sample_size(30);
    }
}

/// Registers a tokio sleep due after `due` (4 s in W1/W2: before any churned
/// 5 s sleep, after the end of any batch) and lets the runtime park once, so tokio's time driver
/// records it as its next wake-up.
///
/// tokio's driver unparks itself (an eventfd `write`, a syscall) whenever a
/// new timer is due before the wake-up it recorded when it last parked, or it
/// recorded none (its wheel was empty, or it has not parked). A batch that
/// never yields never lets it park, so without this every registration in the
/// batch pays that syscall. A runtime that parks now and then while some timer
/// is pending (a busy server) mostly does not.
async fn anchor_tokio_driver(due: Duration) -> Pin<Box<tokio::time::Sleep>> {
    let mut anchor = Box::pin(tokio::time::sleep(due));
    assert!(poll!(anchor.as_mut()).is_pending());
    tokio::task::yield_now().await;
    anchor
}

/// Whether to park tokio's driver on a pending sleep before timing (see
/// [`anchor_tokio_driver`]).
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    No,
    Tokio,
}

/// Times `iters` runs of `op` in one task spawned on `rt`, so entering the
/// runtime is not measured per iteration. Every variant, floors included,
/// pays the same per-iteration cost of calling `op` and awaiting its future.
///
/// The loop runs in a spawned task, as a request handler does, not in the
/// `block_on` future: a spawned task that wakes itself is only queued, while
/// waking the `block_on` future also writes the runtime's eventfd, a syscall
/// that would add several hundred ns to every `w1_timeout` iteration of every
/// variant and bury the timers' own cost.
fn timed<F, Fut>(rt: &Runtime, iters: u64, anchor: Anchor, mut op: F) -> Duration
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    rt.block_on(async move {
        tokio::spawn(async move {
            let _anchor = match anchor {
                Anchor::Tokio => Some(anchor_tokio_driver(Duration::from_secs(4)).await),
                Anchor::No => None,
            };
            let start = Instant::now();
            for _ in 0..iters {
                op().await;
            }
            start.elapsed()
        })
        .await
        .expect("the timed task panicked")
    })
}

fn w2_churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("w2_churn");
    configure(&mut group);

    let rt = current_thread();
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let mut f = black_box(Box::pin(std::future::ready(0u64)));
                assert!(poll!(&mut f).is_ready());
            })
        });
    });

    let rt = current_thread();
    group.bench_function("floor_nobox", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let mut f = pin!(black_box(std::future::ready(0u64)));
                assert!(poll!(f.as_mut()).is_ready());
            })
        });
    });

    let rt = current_thread();
    let timer = tickwheel_timer(&rt);
    group.bench_function("tickwheel", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let mut sleep = timer.sleep(black_box(DEADLINE));
                assert!(poll!(&mut sleep).is_pending());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    for (name, anchor) in [("tokio", Anchor::No), ("tokio_anchored", Anchor::Tokio)] {
        let rt = current_thread();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, anchor, || async {
                    // Pinned on the stack: no allocation. A pending poll does
                    // not spend coop budget, so every poll registers.
                    let mut sleep = pin!(tokio::time::sleep(black_box(DEADLINE)));
                    assert!(poll!(sleep.as_mut()).is_pending());
                })
            });
        });
    }

    let rt = current_thread();
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let mut sleep = pin!(pingora_timeout::sleep(black_box(DEADLINE)));
                assert!(poll!(sleep.as_mut()).is_pending());
            })
        });
    });

    group.finish();
}

fn w1_timeout(c: &mut Criterion) {
    let mut group = c.benchmark_group("w1_timeout");
    configure(&mut group);

    let rt = current_thread();
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| timed(&rt, iters, Anchor::No, yield_once));
    });

    let rt = current_thread();
    let timer = tickwheel_timer(&rt);
    group.bench_function("tickwheel", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let out = timer.timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    for (name, anchor) in [("tokio", Anchor::No), ("tokio_anchored", Anchor::Tokio)] {
        let rt = current_thread();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, anchor, || async {
                    let out = tokio::time::timeout(black_box(DEADLINE), yield_once()).await;
                    assert!(out.is_ok());
                })
            });
        });
    }

    let rt = current_thread();
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let out = pingora_timeout::timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
    });

    group.finish();
}

/// Polls `fut` twice with the task's own context: pending (registering the
/// timer), then ready (dropping it), without yielding to the runtime.
async fn poll_twice<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    assert!(poll!(fut.as_mut()).is_pending());
    match poll!(fut.as_mut()) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("pending on the second poll"),
    }
}

fn w1_timeout_inline(c: &mut Criterion) {
    let mut group = c.benchmark_group("w1_timeout_inline");
    configure(&mut group);

    let rt = current_thread();
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                poll_twice(pending_once()).await;
            })
        });
    });

    let rt = current_thread();
    let timer = tickwheel_timer(&rt);
    group.bench_function("tickwheel", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let out = poll_twice(timer.timeout(black_box(DEADLINE), pending_once())).await;
                assert!(out.is_ok());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    for (name, anchor) in [("tokio", Anchor::No), ("tokio_anchored", Anchor::Tokio)] {
        let rt = current_thread();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, anchor, || async {
                    let out =
                        poll_twice(tokio::time::timeout(black_box(DEADLINE), pending_once())).await;
                    assert!(out.is_ok());
                })
            });
        });
    }

    let rt = current_thread();
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let out = poll_twice(pingora_timeout::timeout(
                    black_box(DEADLINE),
                    pending_once(),
                ))
                .await;
                assert!(out.is_ok());
            })
        });
    });

    group.finish();
}

/// 64 tasks on a 2-worker runtime each run their share of `iters`
/// operations; returns the total wall time (so ns/op = time / iters, as
/// `compare`'s W1 counts it).
fn timed_mt<F, Fut>(rt: &Runtime, iters: u64, op: F) -> Duration
where
    F: Fn() -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = ()> + Send,
{
    const TASKS: u64 = 64;
    rt.block_on(async move {
        // Every variant: see `anchor_tokio_driver`. The 1 ms sleep lets the
        // worker holding tokio's driver park again with the anchor recorded.
        let _anchor = anchor_tokio_driver(Duration::from_secs(4)).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let op = op.clone();
                // Spread the remainder so the tasks run exactly `iters` ops.
                let share = iters / TASKS + u64::from(task < iters % TASKS);
                tokio::spawn(async move {
                    for _ in 0..share {
                        op().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a W1 task panicked");
        }
        start.elapsed()
    })
}

fn w1_timeout_mt(c: &mut Criterion) {
    let mut group = c.benchmark_group("w1_timeout_mt");
    configure(&mut group);

    let rt = two_workers();
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| timed_mt(&rt, iters, yield_once));
    });

    let rt = two_workers();
    let timer = tickwheel_timer(&rt);
    group.bench_function("tickwheel", |b| {
        b.iter_custom(|iters| {
            timed_mt(&rt, iters, move || async move {
                let out = timer.timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    let rt = two_workers();
    group.bench_function("tokio", |b| {
        b.iter_custom(|iters| {
            timed_mt(&rt, iters, || async {
                let out = tokio::time::timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
    });

    let rt = two_workers();
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| {
            timed_mt(&rt, iters, || async {
                let out = pingora_timeout::timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
    });

    group.finish();
}

/// Timers already pending in the `*_1m` variants of `w4_register`.
const BACKGROUND: usize = 1_000_000;

/// Registrations timed between two untimed drops.
const CHUNK: u64 = 1_000;

/// Deterministic spread of durations in `[lo, hi)` (xorshift), the same for
/// every variant.
fn spread(n: usize, lo: Duration, hi: Duration) -> Vec<Duration> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (hi - lo).mul_f64((x >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// A pending sleep of any system, kept registered.
#[allow(dead_code)] // never read: held only so that dropping it cancels the sleep
enum Held {
    Tickwheel(tickwheel::Sleep),
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Pingora(Pin<Box<dyn Future<Output = ()> + Send>>),
}

#[derive(Clone, Copy)]
enum System {
    Tickwheel(&'static tickwheel::Timer),
    Tokio,
    Pingora,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Tickwheel(_) => "tickwheel",
            System::Tokio => "tokio",
            System::Pingora => "pingora",
        }
    }

    /// Creates a sleep of `d` and polls it once (registering it).
    fn register(self, d: Duration, cx: &mut Context<'_>) -> Held {
        match self {
            System::Tickwheel(timer) => {
                let mut sleep = timer.sleep(d);
                assert!(Pin::new(&mut sleep).poll(cx).is_pending());
                Held::Tickwheel(sleep)
            }
            System::Tokio => {
                let mut sleep = Box::pin(tokio::time::sleep(d));
                assert!(sleep.as_mut().poll(cx).is_pending());
                Held::Tokio(sleep)
            }
            System::Pingora => {
                let mut sleep: Pin<Box<dyn Future<Output = ()> + Send>> =
                    Box::pin(pingora_timeout::sleep(d));
                assert!(sleep.as_mut().poll(cx).is_pending());
                Held::Pingora(sleep)
            }
        }
    }
}

/// W4: registration (create + first poll; the sleep stays registered) with
/// 0 or 1,000,000 timers already pending. Only the registrations are timed:
/// every `CHUNK` the registered sleeps are dropped, untimed, so the pending
/// count stays within `CHUNK` of the background. Every variant stores its
/// sleep the way a caller would (tokio's and pingora's boxed, since they are
/// `!Unpin`; tickwheel's inline), so the box is part of their cost.
///
/// Background timers are due 10-1000 s out (across tickwheel's ring and its
/// overflow level, and tokio's upper levels); the measured ones 1-5 s out.
/// Each sample first anchors tokio's driver on a sleep due in 900 ms, earlier
/// than every measured timer, so tokio pays no eventfd write per
/// registration (see [`anchor_tokio_driver`]).
fn w4_register(c: &mut Criterion) {
    let mut group = c.benchmark_group("w4_register");
    configure(&mut group);
    let measured = spread(4096, Duration::from_secs(1), Duration::from_secs(5));
    let far = spread(
        BACKGROUND,
        Duration::from_secs(10),
        Duration::from_secs(1000),
    );
    let noop = Waker::noop();

    for (name, background) in [("0", 0), ("1m", BACKGROUND)] {
        for system in ["tickwheel", "tokio", "pingora"] {
            // Set up once per variant, outside the closure criterion calls
            // for every warm-up step and sample.
            let rt = current_thread();
            let system = match system {
                "tickwheel" => System::Tickwheel(tickwheel_timer(&rt)),
                "tokio" => System::Tokio,
                _ => System::Pingora,
            };
            let _guard = rt.enter();
            let mut cx = Context::from_waker(noop);
            let pending: Vec<Held> = far[..background]
                .iter()
                .map(|&d| system.register(d, &mut cx))
                .collect();
            let mut chunk = Vec::with_capacity(CHUNK as usize);
            let mut next = 0usize;
            group.bench_function(format!("{}_{name}", system.name()), |b| {
                b.iter_custom(|iters| {
                    let _anchor = rt.block_on(anchor_tokio_driver(Duration::from_millis(900)));
                    let mut total = Duration::ZERO;
                    let mut left = iters;
                    while left > 0 {
                        let k = left.min(CHUNK);
                        let start = Instant::now();
                        for _ in 0..k {
                            let d = measured[next & (measured.len() - 1)];
                            next = next.wrapping_add(1);
                            chunk.push(system.register(black_box(d), &mut cx));
                        }
                        total += start.elapsed();
                        chunk.clear();
                        left -= k;
                    }
                    total
                });
            });
            drop(pending);
        }
    }

    group.finish();
}

criterion_group!(
    benches,
    w2_churn,
    w1_timeout,
    w1_timeout_inline,
    w1_timeout_mt,
    w4_register
);
criterion_main!(benches);
