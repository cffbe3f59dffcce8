//! W13, registrations during a burst: how long does registering a sleep
//! take on one thread while the timer fires a great many sleeps due at the
//! same instant? Registering, resetting, polling or dropping a sleep should
//! never make the caller's thread run another task's wake-ups or walk the
//! timer's buckets; a registration that waits for a lock held while 100,000
//! wake-ups are handed out, or that does some of that work itself, shows up
//! in the tail of this measure.
//!
//! A 2-worker runtime runs 100,000 tasks (20,000 with `--quick`), each
//! awaiting a sleep until one common instant, 1 s after the first spawn
//! (300 ms with `--quick`: time enough to spawn and register them all on a
//! loaded machine, where tokio's registrations of 100,000 sleeps due at one
//! instant took up to 250 ms). Once every task has polled its sleep, and 20
//! ms before the common instant, the child's main thread (not a worker: a
//! thread of its own, inside the runtime's context by `Handle::enter`)
//! becomes the prober: over and over, it creates a sleep of a pseudo-random
//! 1-3 ms (the same seeded sequence for every system), polls it once with a
//! no-op waker and drops it, until the last task has finished. The
//! registration is the creation and the first poll, timed together with
//! `Instant::now()` on each side (as W4 counts a registration: a timer may
//! do part of its work when the sleep is made); the drop is timed on its
//! own. A sleep found due at its first poll (the thread held up for more
//! than a millisecond between making and polling it) is counted
//! (`ready_at_once`), its times kept with the others.
//!
//! The figures are those of the probes that started at or after the common
//! instant: the burst, from the instant the sleeps fall due until the last
//! task has run. The probes before it are only counted. The child reports
//! how many registrations were measured in the burst, their p50, p99,
//! p99.9 and max, the drop's p99.9 and max, how long the burst lasted (the
//! common instant to the prober seeing the last task finished), how many of
//! the 100,000 sleeps returned before the common instant (`early`, which
//! must be 0), and how much of the lead was left once every task had
//! registered (if none, the burst began during registration).
//!
//! # Blocked or preempted
//!
//! On a 2-core machine the prober competes with the two workers for the
//! CPUs, so a registration's time can include a stretch in which the kernel
//! ran another thread: that says nothing of the timer. After each probe
//! (outside its timed parts), the prober reads its thread's context
//! switches (`getrusage(RUSAGE_THREAD)`, a few hundred ns), so each probe's
//! switches are the difference from the last reading: a voluntary one means
//! the thread blocked (waited for a lock, for instance one held by whoever
//! hands out the wake-ups), an involuntary one that it was preempted. The
//! child reports how many probes in the burst saw each (in the registration
//! or the drop: one reading per probe keeps the probes frequent), and the
//! longest registration of a probe in which the thread was never switched
//! out. The figures above count every probe, switched or not.
//!
//! The code is the same for both systems but the sleep's constructor:
//! `tokio::time::sleep`/`sleep_until`, or `tickwheel::time::sleep`/
//! `sleep_until` on the runtime's default timer (started before the load),
//! as a user would write it. The prober reads the clock twice per probe and
//! keeps a sample per probe in the burst; both systems pay that alike.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use futures::poll;
use tickwheel_bench::two_workers;

use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys};

/// The prober's sleeps, uniform in `[SHORTEST, LONGEST)`.
const SHORTEST: Duration = Duration::from_millis(1);
const LONGEST: Duration = Duration::from_millis(3);
/// How long before the common instant the probes begin (if the tasks have
/// all registered by then).
const PROBES_AHEAD: Duration = Duration::from_millis(20);
/// How long registration or the burst may take before the child gives up.
const GIVE_UP: Duration = Duration::from_secs(30);

/// What the tasks report.
#[derive(Default)]
struct Shared {
    /// Tasks that have polled their sleep once.
    registered: AtomicUsize,
    /// Tasks finished.
    done: AtomicUsize,
    /// Tasks whose sleep returned before the common instant.
    early: AtomicUsize,
}

/// One task: poll a sleep until `at` once (its registration), count
/// itself registered, await the sleep, count itself done. `sleep_until` is
/// a function item, so each system's task calls its sleep directly.
async fn sleeper<S, F>(at: Instant, shared: Arc<Shared>, sleep_until: S)
where
    S: Fn(tokio::time::Instant) -> F,
    F: Future<Output = ()>,
{
    let mut sleep = pin!(sleep_until(at.into()));
    let first = poll!(sleep.as_mut());
    shared.registered.fetch_add(1, Ordering::Release);
    if first.is_pending() {
        sleep.await;
    }
    if Instant::now() < at {
        shared.early.fetch_add(1, Ordering::Relaxed);
    }
    shared.done.fetch_add(1, Ordering::Release);
}

/// Spawns `n` tasks sleeping until `at`.
fn spawn_all<S, F>(n: usize, at: Instant, shared: &Arc<Shared>, sleep_until: S)
where
    S: Fn(tokio::time::Instant) -> F + Copy + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    for _ in 0..n {
        drop(tokio::spawn(sleeper(at, shared.clone(), sleep_until)));
    }
}

/// The calling thread's context switches so far: voluntary (it blocked:
/// waited for a lock, slept) and involuntary (the kernel took its CPU for
/// another thread).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Switches {
    voluntary: u64,
    involuntary: u64,
}

impl Switches {
    #[cfg(target_os = "linux")]
    fn now() -> Switches {
        // SAFETY: `rusage` is plain integers, for which all-zero is a value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a `rusage` getrusage may write to.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
            return Switches::default();
        }
        Switches {
            voluntary: usage.ru_nvcsw.try_into().unwrap_or(0),
            involuntary: usage.ru_nivcsw.try_into().unwrap_or(0),
        }
    }

    /// Elsewhere: never counted.
    #[cfg(not(target_os = "linux"))]
    fn now() -> Switches {
        Switches::default()
    }

    /// Whether the thread blocked, and whether it was preempted, since
    /// `earlier`.
    fn since(self, earlier: Switches) -> (bool, bool) {
        (
            self.voluntary != earlier.voluntary,
            self.involuntary != earlier.involuntary,
        )
    }
}

/// What one probe measured: how long the registration and the drop took,
/// and whether the sleep was already due at its first poll (the thread held
/// up for longer than the sleep between making and polling it).
struct Probe {
    ready_at_once: bool,
    registration: Duration,
    drop: Duration,
}

/// One probe: a sleep of `d` made and polled once (the registration), then
/// dropped.
#[inline(always)]
fn probe<S, F>(sleep: S, d: Duration, cx: &mut Context<'_>) -> Probe
where
    S: Fn(Duration) -> F,
    F: Future<Output = ()>,
{
    let start = Instant::now();
    let (pending, registered) = {
        let mut sleep = pin!(sleep(d));
        let pending = sleep.as_mut().poll(cx).is_pending();
        (pending, Instant::now())
        // The sleep is dropped here.
    };
    let dropped = Instant::now();
    Probe {
        ready_at_once: !pending,
        registration: registered - start,
        drop: dropped - registered,
    }
}

/// Nanoseconds, saturated to `u32` (4.29 s).
fn ns(d: Duration) -> u32 {
    d.as_nanos().try_into().unwrap_or(u32::MAX)
}

/// The `q` quantile (nearest rank) of sorted `ns`, in us.
fn us_at(sorted: &[u32], q: f64) -> f64 {
    let n = sorted.len();
    f64::from(sorted[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]) / 1e3
}

/// Waits, polling the counter every 100 us, until `counter` reaches `n`.
fn wait_for(counter: &AtomicUsize, n: usize, what: &str) {
    let started = Instant::now();
    while counter.load(Ordering::Acquire) < n {
        assert!(started.elapsed() < GIVE_UP, "W13: {what} within 30 s");
        std::thread::sleep(Duration::from_micros(100));
    }
}

pub fn run_w13(sys: Sys, sizes: Sizes, out: &mut Figures) {
    let rt = two_workers();
    if sys == Sys::Tickwheel {
        // The runtime's default timer, started before the load, as a
        // service's first sleep would have started it long before.
        let _guard = rt.enter();
        drop(tickwheel::Timer::current());
    }
    let n = sizes.w13_tasks;
    let shared = Arc::new(Shared::default());
    let at = Instant::now() + sizes.w13_lead;
    let task_shared = shared.clone();
    // Spawned by a task, as a request loop would spawn them (see W9).
    drop(rt.spawn(async move {
        match sys {
            Sys::Tickwheel => spawn_all(n, at, &task_shared, tickwheel::time::sleep_until),
            Sys::Tokio => spawn_all(n, at, &task_shared, tokio::time::sleep_until),
            _ => unreachable!("W13 measures tickwheel and tokio"),
        }
    }));
    wait_for(&shared.registered, n, "every task registers");
    let lead_left = at.saturating_duration_since(Instant::now());
    // The probes begin a little before the common instant, however soon
    // the tasks registered.
    std::thread::sleep(lead_left.saturating_sub(PROBES_AHEAD));

    // The prober: this thread, in the runtime's context.
    let guard = rt.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let mut rng = Rng::new(0x7A3E_19C4_D2B8_5F61);
    let (mut before, mut ready_at_once) = (0u64, 0u64);
    let mut registrations: Vec<u32> = Vec::with_capacity(1 << 20);
    let mut drops: Vec<u32> = Vec::with_capacity(1 << 20);
    let (mut blocked, mut preempted) = (0u64, 0u64);
    // The longest registration of a probe in which the thread was never
    // switched out.
    let mut unswitched_max = Duration::ZERO;
    let mut switches = Switches::now();
    let burst_end = loop {
        let now = Instant::now();
        if shared.done.load(Ordering::Acquire) == n {
            break now;
        }
        assert!(
            now < at + GIVE_UP,
            "W13: every task finishes within 30 s of the common instant"
        );
        let d = rng.between(SHORTEST, LONGEST);
        let probe = match sys {
            Sys::Tickwheel => probe(tickwheel::time::sleep, d, &mut cx),
            Sys::Tokio => probe(tokio::time::sleep, d, &mut cx),
            _ => unreachable!("W13 measures tickwheel and tokio"),
        };
        // The switches since the last probe's reading: this probe's, with
        // the loop's few instructions around it.
        let later = Switches::now();
        let (was_blocked, was_preempted) = later.since(switches);
        switches = later;
        if now >= at {
            registrations.push(ns(probe.registration));
            drops.push(ns(probe.drop));
            ready_at_once += u64::from(probe.ready_at_once);
            blocked += u64::from(was_blocked);
            preempted += u64::from(was_preempted);
            if !was_blocked && !was_preempted {
                unswitched_max = unswitched_max.max(probe.registration);
            }
        } else {
            before += 1;
        }
    };
    drop(guard);

    emit(out, "tasks", n as f64);
    emit(out, "lead_ms", sizes.w13_lead.as_secs_f64() * 1e3);
    emit(out, "lead_left_ms", lead_left.as_secs_f64() * 1e3);
    emit(
        out,
        "registered_before_deadline",
        f64::from(u8::from(!lead_left.is_zero())),
    );
    emit(out, "probes_before", before as f64);
    emit(out, "registrations", registrations.len() as f64);
    emit(
        out,
        "burst_ms",
        burst_end.saturating_duration_since(at).as_secs_f64() * 1e3,
    );
    emit(out, "early", shared.early.load(Ordering::Relaxed) as f64);
    emit(out, "ready_at_once", ready_at_once as f64);
    emit(out, "probes_blocked", blocked as f64);
    emit(out, "probes_preempted", preempted as f64);
    if !registrations.is_empty() {
        registrations.sort_unstable();
        drops.sort_unstable();
        emit(out, "reg_p50_us", us_at(&registrations, 0.50));
        emit(out, "reg_p99_us", us_at(&registrations, 0.99));
        emit(out, "reg_p999_us", us_at(&registrations, 0.999));
        emit(out, "reg_max_us", us_at(&registrations, 1.0));
        emit(
            out,
            "reg_max_unswitched_us",
            unswitched_max.as_secs_f64() * 1e6,
        );
        emit(out, "drop_p999_us", us_at(&drops, 0.999));
        emit(out, "drop_max_us", us_at(&drops, 1.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank_in_us() {
        let sorted: Vec<u32> = (1..=1000).map(|i| i * 1000).collect();
        assert_eq!(us_at(&sorted, 0.5), 500.0);
        assert_eq!(us_at(&sorted, 0.999), 999.0);
        assert_eq!(us_at(&sorted, 1.0), 1000.0);
        assert_eq!(us_at(&[7_000], 0.999), 7.0);
        assert_eq!(ns(Duration::from_secs(5)), u32::MAX);
    }
}
