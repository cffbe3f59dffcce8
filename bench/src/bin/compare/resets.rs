//! W7: the idle-timeout pattern. Long-lived sleeps (a connection's idle
//! timeout, a session's lease) are pushed back to `now + 30 s` on every
//! "message"; messages land on the sleeps at random. Two tasks on two
//! workers each own half of the sleeps, as two connection-handling threads
//! would. Only tickwheel and tokio have a reset.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tickwheel_bench::{new_timer, two_workers};

use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys};

/// How far each reset pushes the deadline.
const IDLE: Duration = Duration::from_secs(30);
const TASKS: usize = 2;

enum Idle {
    Tickwheel(tickwheel::Sleep),
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

impl Idle {
    fn new(sys: Sys, timer: Option<&tickwheel::Timer>) -> Idle {
        match sys {
            Sys::Tickwheel => Idle::Tickwheel(timer.expect("tickwheel needs a timer").sleep(IDLE)),
            Sys::Tokio => Idle::Tokio(Box::pin(tokio::time::sleep(IDLE))),
            _ => unreachable!("W7 measures tickwheel and tokio"),
        }
    }

    /// What a connection does on every message.
    fn touch(&mut self) {
        let deadline = tokio::time::Instant::now() + IDLE;
        match self {
            Idle::Tickwheel(sleep) => Pin::new(sleep).reset(deadline),
            Idle::Tokio(sleep) => sleep.as_mut().reset(deadline),
        }
    }

    fn poll_pending(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        match self {
            Idle::Tickwheel(sleep) => Pin::new(sleep).poll(cx).is_pending(),
            Idle::Tokio(sleep) => sleep.as_mut().poll(cx).is_pending(),
        }
    }
}

/// ns per reset: the two tasks' times added up over all their resets.
pub fn run_w7(sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = two_workers();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    let per_task = sizes.w7_sleeps / TASKS;
    let resets = sizes.w7_resets;
    let mut best = f64::INFINITY;
    for round in 0..sizes.rounds {
        let total: Duration = rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|t| {
                    let timer = timer.clone();
                    tokio::spawn(async move {
                        let mut sleeps: Vec<Idle> = (0..per_task)
                            .map(|_| Idle::new(sys, timer.as_ref()))
                            .collect();
                        // Registered with this task's waker, as a connection
                        // task's select! would.
                        poll_fn(|cx| {
                            for sleep in &mut sleeps {
                                assert!(sleep.poll_pending(cx), "a 30 s sleep completed");
                            }
                            Poll::Ready(())
                        })
                        .await;
                        let mut rng = Rng::new(0x9E37_79B9 ^ (round as u64) << 8 ^ t as u64);
                        let start = Instant::now();
                        for _ in 0..resets {
                            let i = rng.below(per_task);
                            sleeps[i].touch();
                        }
                        start.elapsed()
                    })
                })
                .collect();
            let mut total = Duration::ZERO;
            for task in tasks {
                total += task.await.expect("a W7 task panicked");
            }
            total
        });
        best = best.min(total.as_nanos() as f64 / (resets * TASKS) as f64);
    }
    if let Some(timer) = &timer {
        assert_eq!(timer.pending(), 0, "every idle sleep was dropped");
    }
    emit(out, "ns_per_reset", best);
}
