//! On time on a saturated runtime, on a real clock, whatever a registration
//! finds: a sleep made before some work and first polled after its tick
//! (here a 1 ms sleep awaited after 3 ms of work) registers for a tick tokio
//! has processed and the wheel has not. The wheel must not then wait for
//! the driver task's turn in a run queue a thousand tasks long: the other
//! wheel sleeps are woken about as promptly as `tokio::time` sleeps made
//! beside them (lateness taken when the waker is called, which is the
//! timer's doing; the woken task's wait for its turn is the same for both).
//!
//! On 5beaac2, in this test's debug build on 2 workers, the other wheel
//! sleeps' p99 was 60-136 ms against tokio's 12-18 ms in 3 runs of 4 (on one
//! worker the driver task, woken from the worker that registered, ran next
//! from its LIFO slot, and hid the defect). The bound here is generous
//! (1.5x tokio's p99 plus 5 ms, both from the same run, so a loaded host
//! slows both), since wall-clock figures are noisy; the exact check of the
//! mechanism is `engine::driver`'s
//! `a_registration_of_a_processed_tick_keeps_the_hook_armed`.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Busy tasks: each spins this long, then yields.
const BUSY_TASKS: usize = 1000;
const SPIN: Duration = Duration::from_micros(50);
/// Measuring tasks, each awaiting `ROUNDS` pairs of sleeps of 5-11 ms.
const MEASURING: usize = 200;
const ROUNDS: usize = 10;

/// Spins on the clock for `d` (work, not a wait).
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Records the first instant its waker is called, and forwards the wake
/// to the task polling it.
#[derive(Default)]
struct WokenAt {
    at: OnceLock<Instant>,
    task: Mutex<Option<Waker>>,
}

impl Wake for WokenAt {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let _ = self.at.set(Instant::now());
        if let Some(task) = self.task.lock().unwrap().as_ref() {
            task.wake_by_ref();
        }
    }
}

/// Awaits `sleep`, returning when its waker was first called.
async fn woken_at<F: Future<Output = ()> + Unpin>(mut sleep: F) -> Instant {
    let recorder = Arc::new(WokenAt::default());
    let waker = Waker::from(recorder.clone());
    std::future::poll_fn(|cx: &mut Context<'_>| {
        *recorder.task.lock().unwrap() = Some(cx.waker().clone());
        match Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)) {
            // Completed without a wake (its deadline had passed): now.
            Poll::Ready(()) => Poll::Ready(*recorder.at.get_or_init(Instant::now)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// A pseudo-random sequence, the same on every run.
fn durations(seed: usize) -> impl Iterator<Item = Duration> {
    let mut x = (seed as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_micros(5_000 + x % 6_000)
    })
}

fn p99(mut late: Vec<Duration>) -> Duration {
    late.sort();
    late[(late.len() * 99).div_ceil(100) - 1]
}

/// The scene on `workers` workers: the p99 lateness at the waker of the
/// wheel sleeps and of the tokio sleeps made beside them.
fn scene(workers: usize) -> (Duration, Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let timer = tickwheel::Timer::builder()
        .runtime(rt.handle().clone())
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    for _ in 0..BUSY_TASKS {
        let stop = stop.clone();
        rt.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                spin(SPIN);
                tokio::task::yield_now().await;
            }
        });
    }
    {
        // The late first poll, again and again.
        let (stop, timer) = (stop.clone(), timer.clone());
        rt.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let sleep = timer.sleep(Duration::from_millis(1));
                spin(Duration::from_millis(3));
                sleep.await;
            }
        });
    }
    let measuring: Vec<_> = (0..MEASURING)
        .map(|task| {
            let timer = timer.clone();
            rt.spawn(async move {
                let mut late = (Vec::new(), Vec::new());
                for d in durations(task).take(ROUNDS) {
                    let deadline = Instant::now() + d;
                    let (wheel, tokio) = tokio::join!(
                        woken_at(timer.sleep(d)),
                        woken_at(Box::pin(tokio::time::sleep(d)))
                    );
                    assert!(wheel >= deadline, "a wheel sleep woken before its deadline");
                    late.0.push(wheel - deadline);
                    late.1.push(tokio.saturating_duration_since(deadline));
                }
                late
            })
        })
        .collect();
    let (wheel, tokio) = rt.block_on(async {
        let mut all = (Vec::new(), Vec::new());
        for task in measuring {
            let (wheel, tokio) = task.await.unwrap();
            all.0.extend(wheel);
            all.1.extend(tokio);
        }
        all
    });
    stop.store(true, Ordering::Relaxed);
    drop(rt);
    (p99(wheel), p99(tokio))
}

#[test]
fn a_late_first_poll_leaves_other_sleeps_on_time_on_a_saturated_runtime() {
    common::watchdog::within_30_s(|| {
        for workers in [1, 2] {
            let (wheel, tokio) = scene(workers);
            eprintln!("{workers} worker(s): p99 at the waker: wheel {wheel:?}, tokio {tokio:?}");
            let bound = tokio.mul_f64(1.5) + Duration::from_millis(5);
            assert!(
                wheel <= bound,
                "{workers} worker(s): wheel sleeps' p99 {wheel:?} against tokio's {tokio:?}"
            );
        }
    });
}
