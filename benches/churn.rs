//! Per-timer cost, side by side: tickwheel vs `tokio::time` vs
//! `pingora-timeout` (its `sleep`/`timeout`, i.e. `fast_sleep`/`fast_timeout`),
//! all on a `current_thread` runtime, in one criterion run.
//!
//! Groups:
//!
//! - `w2_churn`: make a 5 s sleep, poll it once (which registers it), drop it
//!   (which cancels it). The timer never fires; this is the create/cancel
//!   churn of a timeout that is almost never hit.
//! - `w1_timeout`: `timeout(5 s, f)` awaited to completion, where `f` is
//!   pending once (waking itself) and ready on its second poll. Every
//!   iteration goes back to the runtime once (the task yields, is woken and
//!   polled again), so the floor includes a scheduler round trip.
//! - `w1_timeout_inline`: the same timeout, but polled twice by hand inside the
//!   task (and `f` does not wake the task), without going back to the
//!   runtime: the timer cost without the scheduler round trip and the
//!   driver-unpark syscall that waking the `block_on` task costs.
//!
//! Every group has a `floor` variant: the same loop with no timer, so
//! `variant - floor` is the timer's own cost. In `w2_churn` the floor polls a
//! boxed 16-byte ready future (one malloc/free per iteration, as in the
//! brief); `floor_nobox` is the same without the allocation, to show how much
//! of the floor is the allocator. None of the timer variants allocate per
//! sleep in `w2_churn`, except pingora (see below); tokio's `Sleep` is pinned
//! on the stack, not boxed.
//!
//! Each sample runs its whole batch of iterations inside one `block_on`, so
//! entering the runtime is not measured per iteration. Each variant gets a
//! fresh runtime (and tickwheel a fresh `Timer`), so one variant's driver or
//! timer entries never sit in another's runtime.
//!
//! Caveats:
//!
//! - The crate's dev-dependency on tokio enables `test-util`, so
//!   `tokio::time::Instant::now()` first checks whether any clock was ever
//!   paused (one atomic load; no clock is paused here, so it then reads the
//!   system clock). tickwheel and tokio both read it once per sleep, so they
//!   pay it equally; pingora reads `std::time::Instant` and does not pay it.
//!   tokio's driver reads its (test-util, mutex-guarded) clock when it parks,
//!   which matters only for the `w1_timeout` round trip, for every variant.
//! - pingora rounds deadlines to 10 ms and shares one timer (an `Arc<Notify>`)
//!   per 10 ms slot; a dropped sleep leaves the slot in its tree until the
//!   slot's deadline. Its `timeout` boxes its delay future (one allocation per
//!   timeout). Its first use starts a global clock thread that wakes every
//!   10 ms for the rest of the process, i.e. during later variants too
//!   (negligible CPU, but the machine has only 2 cores).
//! - Runs are short (1 s warm-up, 3 s measurement, 30 samples) so the whole
//!   bench takes about a minute; on a noisy machine, compare variants within
//!   one run and repeat the run.

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use futures::poll;
use tokio::runtime::Runtime;

/// Far enough out that no timer fires during a run.
const DEADLINE: Duration = Duration::from_secs(5);

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current_thread runtime")
}

fn tickwheel_timer(rt: &Runtime) -> tickwheel::Timer {
    let _guard = rt.enter();
    tickwheel::Timer::new()
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
}

/// Registers a tokio sleep due in 4 s (before any churned 5 s sleep, after the
/// end of any batch) and lets the runtime park once, so tokio's time driver
/// records it as its next wake-up.
///
/// tokio's driver unparks itself (an eventfd `write`, a syscall) whenever a
/// new timer is due before the wake-up it recorded when it last parked, or it
/// recorded none (its wheel was empty, or it has not parked). A batch that
/// never yields never lets it park, so without this every registration in the
/// batch pays that syscall. A runtime that parks now and then while some timer
/// is pending (a busy server) mostly does not.
async fn anchor_tokio_driver() -> Pin<Box<tokio::time::Sleep>> {
    let mut anchor = Box::pin(tokio::time::sleep(Duration::from_secs(4)));
    assert!(poll!(anchor.as_mut()).is_pending());
    tokio::task::yield_now().await;
    anchor
}

/// Pending on its first poll, ready on the second: a call that does not
/// complete synchronously but completes long before its timeout.
struct YieldOnce {
    polled: bool,
    /// Wake the task when pending (needed when the runtime drives it; the
    /// inline group polls it again by hand, and waking the `block_on` task
    /// would cost a syscall to unpark the driver).
    wake: bool,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polled {
            Poll::Ready(())
        } else {
            self.polled = true;
            if self.wake {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        }
    }
}

/// Wakes itself when pending, for the runtime to poll it again.
fn yield_once() -> YieldOnce {
    YieldOnce {
        polled: false,
        wake: true,
    }
}

/// Pending once without waking: only for `poll_twice`.
fn pending_once() -> YieldOnce {
    YieldOnce {
        polled: false,
        wake: false,
    }
}

/// Whether to park tokio's driver on a pending sleep before timing (see
/// [`anchor_tokio_driver`]).
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    No,
    Tokio,
}

/// Times `iters` runs of `op` inside one `block_on`, so entering the runtime
/// is not measured per iteration. Every variant, floors included, pays the
/// same per-iteration cost of calling `op` and awaiting its future.
fn timed<F, Fut>(rt: &Runtime, iters: u64, anchor: Anchor, mut op: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    rt.block_on(async {
        let _anchor = match anchor {
            Anchor::Tokio => Some(anchor_tokio_driver().await),
            Anchor::No => None,
        };
        let start = Instant::now();
        for _ in 0..iters {
            op().await;
        }
        start.elapsed()
    })
}

fn w2_churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("w2_churn");
    configure(&mut group);

    group.bench_function("floor", |b| {
        let rt = runtime();
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let mut f = black_box(Box::pin(std::future::ready(0u64)));
                assert!(poll!(&mut f).is_ready());
            })
        });
    });

    group.bench_function("floor_nobox", |b| {
        let rt = runtime();
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let mut f = pin!(black_box(std::future::ready(0u64)));
                assert!(poll!(f.as_mut()).is_ready());
            })
        });
    });

    group.bench_function("tickwheel", |b| {
        let rt = runtime();
        let timer = &tickwheel_timer(&rt);
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let mut sleep = timer.sleep(black_box(DEADLINE));
                assert!(poll!(&mut sleep).is_pending());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    for (name, anchor) in [("tokio", Anchor::No), ("tokio_anchored", Anchor::Tokio)] {
        group.bench_function(name, |b| {
            let rt = runtime();
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

    group.bench_function("pingora", |b| {
        let rt = runtime();
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

    group.bench_function("floor", |b| {
        let rt = runtime();
        b.iter_custom(|iters| timed(&rt, iters, Anchor::No, yield_once));
    });

    group.bench_function("tickwheel", |b| {
        let rt = runtime();
        let timer = &tickwheel_timer(&rt);
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let out = timer.timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    group.bench_function("tokio", |b| {
        let rt = runtime();
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                let out = tokio::time::timeout(black_box(DEADLINE), yield_once()).await;
                assert!(out.is_ok());
            })
        });
    });

    group.bench_function("pingora", |b| {
        let rt = runtime();
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

    group.bench_function("floor", |b| {
        let rt = runtime();
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, || async {
                poll_twice(pending_once()).await;
            })
        });
    });

    group.bench_function("tickwheel", |b| {
        let rt = runtime();
        let timer = &tickwheel_timer(&rt);
        b.iter_custom(|iters| {
            timed(&rt, iters, Anchor::No, move || async move {
                let out = poll_twice(timer.timeout(black_box(DEADLINE), pending_once())).await;
                assert!(out.is_ok());
            })
        });
        assert_eq!(timer.pending(), 0);
    });

    for (name, anchor) in [("tokio", Anchor::No), ("tokio_anchored", Anchor::Tokio)] {
        group.bench_function(name, |b| {
            let rt = runtime();
            b.iter_custom(|iters| {
                timed(&rt, iters, anchor, || async {
                    let out =
                        poll_twice(tokio::time::timeout(black_box(DEADLINE), pending_once())).await;
                    assert!(out.is_ok());
                })
            });
        });
    }

    group.bench_function("pingora", |b| {
        let rt = runtime();
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

criterion_group!(benches, w2_churn, w1_timeout, w1_timeout_inline);
criterion_main!(benches);
