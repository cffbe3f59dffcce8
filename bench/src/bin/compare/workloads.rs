//! W1 and W2 (per-operation cost against a no-timer floor), W3, W4 and W6
//! (a million timers) and W5 (an idle runtime), as a child runs them. The
//! other workloads have a file each (see `main`'s module list).

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures::poll;
use tickwheel_bench::{current_thread, new_timer, two_workers, yield_once, DEADLINE};

use crate::measure::{
    context_switches, cpu_ns, lateness_ns, live_bytes, runqueue_wait_ns, Lateness, NOT_FIRED,
};
use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys};

// ---------------------------------------------------------------------------
// W1 and W2

/// One W1 operation for `sys`.
async fn w1_op(sys: Sys, timer: Option<&tickwheel::Timer>) {
    let f = yield_once();
    match sys {
        Sys::Floor => f.await,
        Sys::Tickwheel => {
            let timer = timer.expect("tickwheel needs a timer");
            assert!(timer.timeout(black_box(DEADLINE), f).await.is_ok());
        }
        Sys::Tokio => assert!(tokio::time::timeout(black_box(DEADLINE), f).await.is_ok()),
        Sys::Pingora => assert!(pingora_timeout::timeout(black_box(DEADLINE), f)
            .await
            .is_ok()),
        Sys::Ambient => unreachable!("the ambient timer is measured in W2 only"),
    }
}

/// One W2 operation for `sys`.
async fn w2_op(sys: Sys, timer: Option<&tickwheel::Timer>) {
    match sys {
        Sys::Floor => {
            let mut f = black_box(Box::pin(std::future::ready(0u64)));
            assert!(poll!(&mut f).is_ready());
        }
        Sys::Tickwheel => {
            let timer = timer.expect("tickwheel needs a timer");
            let mut sleep = timer.sleep(black_box(DEADLINE));
            assert!(poll!(&mut sleep).is_pending());
        }
        Sys::Ambient => {
            let mut sleep = tickwheel::time::sleep(black_box(DEADLINE));
            assert!(poll!(&mut sleep).is_pending());
        }
        Sys::Tokio => {
            let mut sleep = pin!(tokio::time::sleep(black_box(DEADLINE)));
            assert!(poll!(sleep.as_mut()).is_pending());
        }
        Sys::Pingora => {
            let mut sleep = pin!(pingora_timeout::sleep(black_box(DEADLINE)));
            assert!(poll!(sleep.as_mut()).is_pending());
        }
    }
}

/// Registers a tokio sleep due after `due` (W1/W2: 4 s, before any 5 s timer
/// of a round and after the round's end) and lets the runtime park once, so tokio's time driver
/// records it as its next wake-up. Without it, every tokio registration in a
/// loop that never lets the driver park pays an eventfd write (the driver
/// unparks itself when a new timer is due before its recorded wake-up, or it
/// has none); a busy server with timers pending mostly does not. Harmless
/// for the other systems, so every system gets it.
async fn anchor(due: Duration) -> Pin<Box<tokio::time::Sleep>> {
    let mut anchor = Box::pin(tokio::time::sleep(due));
    assert!(poll!(anchor.as_mut()).is_pending());
    tokio::time::sleep(Duration::from_millis(1)).await;
    anchor
}

/// W1 or W2 on a current-thread runtime: best round, ns/op. The loop runs in
/// a spawned task, as a request handler would: waking a spawned task from
/// itself only queues it, while waking the `block_on` future also writes the
/// driver's eventfd (a syscall per iteration in every variant).
pub fn run_serial(sys: Sys, sizes: Sizes, w2: bool, out: &mut Figures) {
    let rt = current_thread();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    let mut best = f64::INFINITY;
    for _ in 0..sizes.rounds {
        let timer = timer.clone();
        let ops = sizes.ops;
        let elapsed = rt.block_on(async move {
            tokio::spawn(async move {
                let _anchor = anchor(Duration::from_secs(4)).await;
                let timer = timer.as_ref();
                let start = Instant::now();
                for _ in 0..ops {
                    if w2 {
                        w2_op(sys, timer).await;
                    } else {
                        w1_op(sys, timer).await;
                    }
                }
                start.elapsed()
            })
            .await
            .expect("the W1/W2 task panicked")
        });
        best = best.min(elapsed.as_nanos() as f64 / sizes.ops as f64);
    }
    if let Some(timer) = &timer {
        assert_eq!(timer.pending(), 0, "every timer was cancelled");
    }
    if sys == Sys::Ambient {
        let pending = rt.block_on(async { tickwheel::Timer::current().pending() });
        assert_eq!(pending, 0, "every timer was cancelled");
    }
    emit(out, "ns_per_op", best);
}

/// W1 with 64 tasks on a 2-worker runtime: best round, total time / total ops.
pub fn run_w1_mt(sys: Sys, sizes: Sizes, out: &mut Figures) {
    const TASKS: u64 = 64;
    let rt = two_workers();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    let per_task = sizes.ops / TASKS;
    let mut best = f64::INFINITY;
    let (mut best_parallelism, mut best_waiting) = (0.0, 0.0);
    for _ in 0..sizes.rounds {
        let cpu_before = cpu_ns();
        let wait_before = runqueue_wait_ns();
        let elapsed = rt.block_on(async {
            let _anchor = anchor(Duration::from_secs(4)).await;
            let start = Instant::now();
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let timer = timer.clone();
                    tokio::spawn(async move {
                        for _ in 0..per_task {
                            w1_op(sys, timer.as_ref()).await;
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("a W1 task panicked");
            }
            start.elapsed()
        });
        // CPU time of the whole process over the round's wall time: 2.0
        // when both workers kept busy, 1.0 when the work ran on one.
        // Threads runnable but not running, over the wall time: how much of
        // a CPU other processes took from this run.
        let parallelism = (cpu_ns() - cpu_before) as f64 / elapsed.as_nanos() as f64;
        let waiting = (runqueue_wait_ns() - wait_before) as f64 / elapsed.as_nanos() as f64;
        let per_op = elapsed.as_nanos() as f64 / (per_task * TASKS) as f64;
        if per_op < best {
            best = per_op;
            best_parallelism = parallelism;
            best_waiting = waiting;
        }
    }
    emit(out, "ns_per_op", best);
    emit(out, "parallelism", best_parallelism);
    emit(out, "cpus_waited_for", best_waiting);
}

// ---------------------------------------------------------------------------
// Mass workloads: W3, W4, W6

/// A pending timer of any of the three systems, as a caller would store it.
enum AnySleep {
    Tickwheel(tickwheel::Sleep),
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Pingora(Pin<Box<dyn Future<Output = ()> + Send>>),
}

impl AnySleep {
    /// A sleep of `sys` due at `deadline` (pingora takes a duration, computed
    /// from the clock now).
    fn until(sys: Sys, timer: Option<&tickwheel::Timer>, deadline: Instant) -> AnySleep {
        match sys {
            Sys::Tickwheel => AnySleep::Tickwheel(
                timer
                    .expect("tickwheel needs a timer")
                    .sleep_until(deadline.into()),
            ),
            Sys::Tokio => AnySleep::Tokio(Box::pin(tokio::time::sleep_until(deadline.into()))),
            Sys::Pingora => AnySleep::Pingora(Box::pin(pingora_timeout::sleep(
                deadline.saturating_duration_since(Instant::now()),
            ))),
            Sys::Floor | Sys::Ambient => unreachable!("not a mass workload's system"),
        }
    }

    /// A sleep of `sys` due `d` after now (each system reads its own clock).
    fn after(sys: Sys, timer: Option<&tickwheel::Timer>, d: Duration) -> AnySleep {
        match sys {
            Sys::Tickwheel => AnySleep::Tickwheel(timer.expect("tickwheel needs a timer").sleep(d)),
            Sys::Tokio => AnySleep::Tokio(Box::pin(tokio::time::sleep(d))),
            Sys::Pingora => AnySleep::Pingora(Box::pin(pingora_timeout::sleep(d))),
            Sys::Floor | Sys::Ambient => unreachable!("not a mass workload's system"),
        }
    }

    fn poll_with(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            AnySleep::Tickwheel(s) => Pin::new(s).poll(cx),
            AnySleep::Tokio(s) => s.as_mut().poll(cx),
            AnySleep::Pingora(s) => s.as_mut().poll(cx),
        }
    }

    /// What one stored timer costs the caller inline (the `Vec` element).
    fn element_bytes(sys: Sys) -> usize {
        match sys {
            Sys::Tickwheel => std::mem::size_of::<tickwheel::Sleep>(),
            Sys::Tokio => std::mem::size_of::<Pin<Box<tokio::time::Sleep>>>(),
            Sys::Pingora => std::mem::size_of::<Pin<Box<dyn Future<Output = ()> + Send>>>(),
            Sys::Floor | Sys::Ambient => 0,
        }
    }
}

/// Counts wakes; tells the waiting task when all `expected` arrived.
struct FireCounter {
    fired: AtomicUsize,
    expected: usize,
    done: tokio::sync::Notify,
}

impl Wake for FireCounter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.expected {
            self.done.notify_one();
        }
    }
}

/// Creates `n` sleeps due at `deadline(i)`, polls each once with `waker`.
/// Returns the stored sleeps and how many completed at once (must be none).
fn register_all(
    sys: Sys,
    timer: Option<&tickwheel::Timer>,
    deadlines: &[Instant],
    waker: impl Fn(usize) -> Waker,
) -> Vec<AnySleep> {
    let mut sleeps = Vec::with_capacity(deadlines.len());
    for (i, &deadline) in deadlines.iter().enumerate() {
        let mut sleep = AnySleep::until(sys, timer, deadline);
        let waker = waker(i);
        let mut cx = Context::from_waker(&waker);
        assert!(sleep.poll_with(&mut cx).is_pending(), "registered late");
        sleeps.push(sleep);
    }
    sleeps
}

pub fn run_w3(sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = current_thread();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    let n = sizes.mass;
    let counter = Arc::new(FireCounter {
        fired: AtomicUsize::new(0),
        expected: n,
        done: tokio::sync::Notify::new(),
    });
    let waker = Waker::from(counter.clone());
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let offsets: Vec<Duration> = (0..n)
        .map(|_| {
            let soonest = Duration::from_millis(100);
            rng.between(soonest, soonest + sizes.spread)
        })
        .collect();
    let mut sleeps: Vec<AnySleep> = Vec::with_capacity(n);
    // Unconstrained: tokio's `Sleep` spends the task's coop budget when it
    // completes, and would return `Pending` after 128 completions in one
    // task; the same wrapper for every system.
    rt.block_on(tokio::task::unconstrained(async {
        // Let the driver start before measuring.
        tokio::task::yield_now().await;
        let heap_before = live_bytes();
        let cpu_before = cpu_ns();
        let start = Instant::now();
        // Each due 0.1 s to 0.1 s + `spread` after its own creation
        // (1.1 s in the full run), not after the start: registering 1M takes
        // longer than 0.1 s, and a deadline already passed when created
        // would complete without registering.
        for &d in &offsets {
            let mut sleep = AnySleep::after(sys, timer.as_ref(), d);
            assert!(sleep
                .poll_with(&mut Context::from_waker(&waker))
                .is_pending());
            sleeps.push(sleep);
        }
        let registered = start.elapsed();
        let heap_after = live_bytes();
        if let Some(timer) = &timer {
            let stats = timer.stats();
            emit(
                out,
                "sleep_size",
                std::mem::size_of::<tickwheel::Sleep>() as f64,
            );
            emit(
                out,
                "entry_bytes_per_pending",
                stats.entry_bytes as f64 / stats.pending as f64,
            );
        }
        tokio::time::timeout(Duration::from_secs(60), counter.done.notified())
            .await
            .expect("every W3 timer fires within 60 s");
        let noop = Waker::noop();
        for sleep in &mut sleeps {
            assert!(sleep.poll_with(&mut Context::from_waker(noop)).is_ready());
        }
        sleeps.clear();
        let cpu = cpu_ns() - cpu_before;
        emit(out, "cpu_s", cpu as f64 / 1e9);
        emit(out, "register_ns", registered.as_nanos() as f64 / n as f64);
        emit(
            out,
            "bytes_per_timer",
            AnySleep::element_bytes(sys) as f64 + (heap_after - heap_before) as f64 / n as f64,
        );
    }));
    emit(out, "fired", counter.fired.load(Ordering::Relaxed) as f64);
}

pub fn run_w4(sys: Sys, sizes: Sizes, out: &mut Figures) {
    const CHUNK: usize = 1_000;
    for (key, background) in [("register_ns_0", 0), ("register_ns_1m", sizes.mass)] {
        let rt = current_thread();
        let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
        let noop = Waker::noop();
        let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
        let per_op = rt.block_on(tokio::task::unconstrained(async {
            let now = Instant::now();
            let far: Vec<Instant> = (0..background)
                .map(|_| now + rng.between(Duration::from_secs(10), Duration::from_secs(1000)))
                .collect();
            let _pending = register_all(sys, timer.as_ref(), &far, |_| noop.clone());
            let durations: Vec<Duration> = (0..CHUNK)
                .map(|_| rng.between(Duration::from_secs(1), Duration::from_secs(5)))
                .collect();
            let mut chunk = Vec::with_capacity(CHUNK);
            let mut best = f64::INFINITY;
            for _ in 0..sizes.rounds {
                // Due before every measured timer (1-5 s out), after the
                // round's end.
                let _anchor = anchor(Duration::from_millis(900)).await;
                let mut total = Duration::ZERO;
                for _ in 0..sizes.w4_ops / CHUNK {
                    let start = Instant::now();
                    for &d in &durations {
                        let mut sleep = AnySleep::after(sys, timer.as_ref(), black_box(d));
                        assert!(sleep.poll_with(&mut Context::from_waker(noop)).is_pending());
                        chunk.push(sleep);
                    }
                    total += start.elapsed();
                    chunk.clear();
                }
                best = best.min(total.as_nanos() as f64 / (sizes.w4_ops / CHUNK * CHUNK) as f64);
            }
            best
        }));
        emit(out, key, per_op);
    }
}

pub fn run_w5(sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = two_workers();
    let before = live_bytes();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    if timer.is_some() {
        // What an idle default timer holds on 2 workers (4 shards: rings,
        // bitmaps, overflow arrays, histograms), its driver task included.
        emit(
            out,
            "timer_bytes",
            live_bytes().saturating_sub(before) as f64,
        );
    }
    // One timer fires first, so each system's machinery is started, then
    // nothing is pending.
    rt.block_on(async {
        let d = Duration::from_millis(20);
        match &timer {
            Some(timer) => timer.sleep(d).await,
            None if sys == Sys::Tokio => tokio::time::sleep(d).await,
            None => pingora_timeout::sleep(d).await,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    let wakeups_before = timer.as_ref().map_or(0, |t| t.stats().wakeups);
    let switches_before = context_switches();
    let cpu_before = cpu_ns();
    std::thread::sleep(sizes.idle);
    let cpu = cpu_ns() - cpu_before;
    let switches = context_switches() - switches_before;
    if let Some(timer) = &timer {
        assert_eq!(timer.pending(), 0);
        emit(
            out,
            "wakeups",
            (timer.stats().wakeups - wakeups_before) as f64,
        );
    }
    // The main thread's own sleep is one voluntary switch.
    emit(out, "context_switches", switches.saturating_sub(1) as f64);
    emit(out, "cpu_ms", cpu as f64 / 1e6);
}

/// Stamps the lateness of timer `index` when woken.
struct LateWaker {
    index: usize,
    deadline: Instant,
    shared: Arc<LateShared>,
}

struct LateShared {
    late_ns: Vec<AtomicI64>,
    fired: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Wake for LateWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let late = lateness_ns(Instant::now(), self.deadline);
        let slot = &self.shared.late_ns[self.index];
        if slot
            .compare_exchange(NOT_FIRED, late, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
            && self.shared.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.shared.late_ns.len()
        {
            self.shared.done.notify_one();
        }
    }
}

pub fn run_w6(sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = two_workers();
    let timer = (sys == Sys::Tickwheel).then(|| new_timer(&rt));
    let n = sizes.mass;
    let shared = Arc::new(LateShared {
        late_ns: (0..n).map(|_| AtomicI64::new(NOT_FIRED)).collect(),
        fired: AtomicUsize::new(0),
        done: tokio::sync::Notify::new(),
    });
    // The first deadline is after registration (see `Sizes::w6_lead`).
    let lead = sizes.w6_lead;
    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    let start = Instant::now();
    let deadlines: Vec<Instant> = (0..n)
        .map(|_| start + lead + rng.between(Duration::ZERO, sizes.spread))
        .collect();
    let first = start + lead;
    let task_shared = shared.clone();
    let task_timer = timer.clone();
    let registered_at = rt.block_on(async move {
        tokio::spawn(tokio::task::unconstrained(async move {
            let wakers: Vec<Waker> = deadlines
                .iter()
                .enumerate()
                .map(|(index, &deadline)| {
                    Waker::from(Arc::new(LateWaker {
                        index,
                        deadline,
                        shared: task_shared.clone(),
                    }))
                })
                .collect();
            let sleeps = register_all(sys, task_timer.as_ref(), &deadlines, |i| wakers[i].clone());
            let registered_at = Instant::now();
            tokio::time::timeout(Duration::from_secs(60), task_shared.done.notified())
                .await
                .expect("every W6 timer fires within 60 s");
            drop(sleeps);
            registered_at
        }))
        .await
        .expect("the W6 task panicked")
    });
    let late = Lateness::from_atomics(&shared.late_ns);
    emit(out, "p50_ms", late.ms_at(0.50));
    emit(out, "p99_ms", late.ms_at(0.99));
    emit(out, "max_ms", late.max_ms());
    emit(out, "early", late.early() as f64);
    emit(
        out,
        "registered_before_first_deadline",
        f64::from(u8::from(registered_at <= first)),
    );
    if let Some(timer) = &timer {
        emit(out, "tick_ms", timer.tick().as_secs_f64() * 1e3);
        emit(
            out,
            "stats_p99_ms",
            timer.stats().lateness.p99.as_secs_f64() * 1e3,
        );
    }
}
