//! Stress and soak: millions of timers on a 2-worker runtime in real time,
//! with random cancels (local and from another thread) and resets, then
//! checks that every timer fired exactly once or was cancelled, none early,
//! the wheel is empty, and the process's heap is back to where it was.
//!
//! Ignored by default (they take tens of seconds); `.ci/run` runs them in
//! release with bounded sizes:
//!
//! ```text
//! TICKWHEEL_STRESS_TOTAL=10000000 TICKWHEEL_STRESS_PEAK=1000000 \
//!     cargo test --release --test stress -- --ignored --test-threads=1
//! ```
//!
//! Memory is counted by a global allocator that wraps the system one and
//! keeps a running total of live bytes.
//!
//! One more runs the life of a fired sleep's slot through the public API
//! (`fired_sleeps_keep_their_slots_and_never_reach_a_newer_one`). It used to
//! run one slot through all 2^32 generations, for minutes; a timer's slot
//! has no generation since it became its sleep's until the sleep lets go.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use tickwheel::{Sleep, Timer};
use tokio::sync::mpsc;
use tokio::time::Instant;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::live_bytes;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What every timer's waker records.
struct Table {
    wakes: Vec<AtomicU8>,
    /// Deadline of each timer, in nanoseconds since `base`.
    deadline_ns: Vec<AtomicU64>,
    base: Instant,
    early: AtomicU64,
}

/// One timer's waker: counts the wake, checks it is not early, and tells
/// the owning producer which timer fired.
struct TimerWaker {
    id: u32,
    table: Arc<Table>,
    fired: Arc<Mutex<Vec<u32>>>,
}

impl Wake for TimerWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let i = self.id as usize;
        let now = self.table.base.elapsed().as_nanos() as u64;
        if now < self.table.deadline_ns[i].load(Ordering::SeqCst) {
            self.table.early.fetch_add(1, Ordering::Relaxed);
        }
        self.table.wakes[i].fetch_add(1, Ordering::SeqCst);
        self.fired.lock().unwrap().push(self.id);
    }
}

/// SplitMix64: reproducible randomness without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

/// How far off a timer's deadline must be for the producer to reset it
/// (much longer than this task is ever held up between the check and the
/// reset).
const RESET_MARGIN: Duration = Duration::from_millis(200);

/// How a producer's timers ended, for the final check.
#[derive(Default)]
struct Ended {
    /// Kept until their wake arrived: must have fired exactly once.
    fired: Vec<u32>,
    /// Dropped while registered (here or by the canceller): at most once.
    dropped: Vec<u32>,
}

/// Creates `ids`, keeping at most `cap` registered, with cancels, resets and
/// hand-offs to the canceller; returns how its timers ended.
async fn producer(
    timer: Timer,
    table: Arc<Table>,
    ids: std::ops::Range<u32>,
    cap: usize,
    canceller: mpsc::UnboundedSender<(u32, Sleep)>,
) -> Ended {
    let fired = Arc::new(Mutex::new(Vec::new()));
    let base = ids.start;
    let mut slots: Vec<Option<Sleep>> = (0..ids.len()).map(|_| None).collect();
    let mut live = 0usize;
    let mut ended = Ended::default();
    let mut rng = Rng(u64::from(base) + 1);
    let mut next = ids.start;
    let mut recent: VecDeque<u32> = VecDeque::new();
    while next < ids.end || live > 0 {
        // Collect the timers that fired: each completes on its next poll.
        let done: Vec<u32> = std::mem::take(&mut *fired.lock().unwrap());
        for id in done {
            if let Some(mut sleep) = slots[(id - base) as usize].take() {
                assert!(
                    Pin::new(&mut sleep)
                        .poll(&mut Context::from_waker(Waker::noop()))
                        .is_ready(),
                    "timer {id} was woken but is not complete"
                );
                live -= 1;
                ended.fired.push(id);
            }
        }
        // Create up to the cap.
        let mut made = 0;
        while next < ids.end && live < cap && made < 4096 {
            let id = next;
            next += 1;
            made += 1;
            let delay = rng.millis(20, 1500);
            let mut sleep = timer.sleep(delay);
            let deadline = sleep.deadline();
            table.deadline_ns[id as usize].store(
                deadline.duration_since(table.base).as_nanos() as u64,
                Ordering::SeqCst,
            );
            let waker = Waker::from(Arc::new(TimerWaker {
                id,
                table: table.clone(),
                fired: fired.clone(),
            }));
            let registered = Pin::new(&mut sleep)
                .poll(&mut Context::from_waker(&waker))
                .is_pending();
            assert!(registered, "a {delay:?} sleep completed at once");
            match rng.below(100) {
                // Cancel at once, here.
                0..=9 => {
                    drop(sleep);
                    ended.dropped.push(id);
                }
                // Hand to the canceller: dropped on another task, maybe
                // after it fired.
                10..=14 => {
                    canceller.send((id, sleep)).unwrap();
                    ended.dropped.push(id);
                }
                _ => {
                    slots[(id - base) as usize] = Some(sleep);
                    live += 1;
                    recent.push_back(id);
                    if recent.len() > 1024 {
                        recent.pop_front();
                    }
                }
            }
        }
        // Reset a few recent timers still waiting. The new deadline is
        // published before the reset, and is later than the old one, so a
        // wake from either deadline is never early against it.
        // Each timer is reset at most once (taken out of `recent`), and only
        // while timers are still being made, so every reset timer fires.
        // Only one whose deadline is still `RESET_MARGIN` away: a recent
        // timer may have fired already if this task was held up (its wake
        // not yet collected), and resetting a fired sleep makes it wait
        // again, as tokio's does, so the collection would find it pending.
        for _ in 0..16 {
            if next >= ids.end || recent.is_empty() {
                break;
            }
            let pick = rng.below(recent.len() as u64) as usize;
            let Some(id) = recent.swap_remove_back(pick) else {
                break;
            };
            let now = Instant::now();
            let deadline = table.base
                + Duration::from_nanos(table.deadline_ns[id as usize].load(Ordering::SeqCst));
            if deadline < now + RESET_MARGIN {
                continue;
            }
            if let Some(sleep) = slots[(id - base) as usize].as_mut() {
                let new = now + rng.millis(1500, 2000);
                table.deadline_ns[id as usize].store(
                    new.duration_since(table.base).as_nanos() as u64,
                    Ordering::SeqCst,
                );
                Pin::new(sleep).reset(new);
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    ended
}

/// Drops the sleeps it receives after a random few milliseconds, from its
/// own task (often on the other worker): cancels racing the driver.
async fn canceller(mut rx: mpsc::UnboundedReceiver<(u32, Sleep)>) {
    let mut held: VecDeque<(Instant, Sleep)> = VecDeque::new();
    let mut rng = Rng(7);
    loop {
        tokio::select! {
            got = rx.recv() => match got {
                Some((_, sleep)) => held.push_back((Instant::now() + rng.millis(0, 40), sleep)),
                None => break,
            },
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        while held.front().is_some_and(|(at, _)| *at <= Instant::now()) {
            held.pop_front();
        }
    }
    held.clear();
}

fn run(total: u64, peak: u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let total = u32::try_from(total).expect("at most 4 billion timers");
    let table = Arc::new(Table {
        wakes: (0..total).map(|_| AtomicU8::new(0)).collect(),
        deadline_ns: (0..total).map(|_| AtomicU64::new(0)).collect(),
        base: Instant::now(),
        early: AtomicU64::new(0),
    });
    let timer = Timer::builder()
        .runtime(runtime.handle().clone())
        .build()
        .unwrap();
    const PRODUCERS: u32 = 4;

    // Warm up: each worker's shard gets its first page, the runtime its
    // queues; the baseline is taken once all of that has settled. Each
    // task first meets the others at a barrier that blocks its worker, so
    // the two run on different workers, whatever else the host is running
    // (beside two spinning threads, the 8 tasks could all run on one
    // worker, and the other worker's shard got its first page during the
    // run instead, failing the exact check of the wheel's pages below).
    runtime.block_on(async {
        let workers = runtime.metrics().num_workers();
        let barrier = Arc::new(std::sync::Barrier::new(workers));
        let mut tasks = Vec::new();
        for i in 0..8 {
            let timer = timer.clone();
            let barrier = (i < workers).then(|| barrier.clone());
            tasks.push(tokio::spawn(async move {
                if let Some(barrier) = barrier {
                    barrier.wait();
                }
                for _ in 0..200 {
                    timer.sleep(Duration::from_millis(1)).await;
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
    let baseline_entries = timer.stats().entry_bytes;
    let baseline = live_bytes();

    let started = std::time::Instant::now();
    let mut peak_pending = 0;
    let ended = runtime.block_on(async {
        let (tx, rx) = mpsc::unbounded_channel();
        let canceller = tokio::spawn(canceller(rx));
        let per = total / PRODUCERS;
        let mut producers = Vec::new();
        for p in 0..PRODUCERS {
            let end = if p + 1 == PRODUCERS {
                total
            } else {
                (p + 1) * per
            };
            // Unbudgeted: a producer polls thousands of completed sleeps by
            // hand between awaits, which tokio's task budget would refuse.
            producers.push(tokio::spawn(tokio::task::unconstrained(producer(
                timer.clone(),
                table.clone(),
                p * per..end,
                (peak / u64::from(PRODUCERS)) as usize,
                tx.clone(),
            ))));
        }
        drop(tx);
        let mut ended = Vec::new();
        let mut producers = futures::future::join_all(producers);
        loop {
            tokio::select! {
                done = &mut producers => {
                    for e in done {
                        ended.push(e.unwrap());
                    }
                    break;
                }
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    peak_pending = peak_pending.max(timer.pending());
                }
            }
        }
        canceller.await.unwrap();
        // Sleeps cancelled late may have fired; let every deadline pass.
        tokio::time::sleep(Duration::from_millis(50)).await;
        ended
    });
    let elapsed = started.elapsed();

    let stats = timer.stats();
    let mut fired_once = 0u64;
    let mut total_wakes = 0u64;
    for e in &ended {
        for &id in &e.fired {
            let wakes = table.wakes[id as usize].load(Ordering::SeqCst);
            assert_eq!(
                wakes, 1,
                "timer {id} kept to the end was woken {wakes} times"
            );
            fired_once += 1;
        }
        for &id in &e.dropped {
            let wakes = table.wakes[id as usize].load(Ordering::SeqCst);
            assert!(wakes <= 1, "dropped timer {id} was woken {wakes} times");
        }
    }
    for w in &table.wakes {
        total_wakes += u64::from(w.load(Ordering::SeqCst));
    }
    let accounted: usize = ended.iter().map(|e| e.fired.len() + e.dropped.len()).sum();
    println!(
        "stress: {total} timers in {elapsed:.1?}, peak pending {peak_pending}, \
         fired {} cancelled {}, wakes {total_wakes}",
        stats.fired, stats.cancelled
    );
    assert_eq!(
        accounted, total as usize,
        "every timer ended one way or the other"
    );
    assert_eq!(table.early.load(Ordering::SeqCst), 0, "timers woke early");
    assert_eq!(timer.pending(), 0);
    assert_eq!(
        stats.registered,
        u64::from(total) + 1600,
        "warm-up included"
    );
    assert_eq!(stats.registered, stats.fired + stats.cancelled);
    assert_eq!(total_wakes, stats.fired - 1600, "one wake per fired entry");
    assert!(fired_once > 0);
    assert!(
        peak_pending as u64 >= peak / 2,
        "the run never came near its peak: {peak_pending} of {peak}"
    );

    // Memory: the wheel shrank back, and so did the heap.
    assert_eq!(timer.stats().entry_bytes, baseline_entries, "wheel pages");
    drop(ended);
    let after = live_bytes();
    println!("memory: baseline {baseline} B, after {after} B, wheel pages {baseline_entries} B");
    // The runtime's own queues may keep some capacity they grew under load;
    // the wheel's share is checked exactly above.
    let slack = 256 * 1024;
    assert!(
        after - baseline <= slack,
        "heap grew by {} B over the run (more than {slack} B of slack)",
        after - baseline
    );
}

#[test]
#[ignore = "tens of seconds; run in release: see the file's docs"]
fn millions_of_timers_fire_once_and_memory_returns_to_baseline() {
    run(
        env_or("TICKWHEEL_STRESS_TOTAL", 10_000_000),
        env_or("TICKWHEEL_STRESS_PEAK", 1_000_000),
    );
}

#[test]
#[ignore = "tens of seconds; run in release: see the file's docs"]
fn waves_of_timers_do_not_grow_memory() {
    let wave = env_or("TICKWHEEL_STRESS_PEAK", 1_000_000);
    // Each wave fills the wheel and drains it; the heap after the last wave
    // must match the heap after the first.
    let mut after_first = None;
    for i in 0..3 {
        run(wave, wave);
        let now = live_bytes();
        println!("wave {i}: live heap {now} B");
        let first = *after_first.get_or_insert(now);
        assert!(
            now - first <= 64 * 1024,
            "wave {i} left {} B more than the first",
            now - first
        );
    }
}

/// A waker that remembers it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Polls `sleep` once with `waker`: it must register, not complete.
fn register(sleep: &mut Sleep, waker: &Waker) {
    let poll = Pin::new(sleep).poll(&mut Context::from_waker(waker));
    assert!(poll.is_pending(), "a sleep completed on its first poll");
}

/// Waits (in real time) until every flag is set.
fn wait_for(flags: &[Arc<Flag>], what: &str) {
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    while !flags.iter().all(|flag| flag.0.load(Ordering::SeqCst)) {
        assert!(std::time::Instant::now() < give_up, "{what} never woke");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A fired sleep's slot stays its own until the sleep lets go, and nothing
/// else ever reaches it. 1,024 sleeps keep the shard's first page full, and
/// three more fire from the second page. In the quiet moment afterwards the
/// fired slots keep their page. Newer sleeps take the free slots around
/// them; the fired sleeps must read as elapsed, dropping them must not
/// cancel anything, register/cancel must go on reusing one slot, and every
/// newer sleep must still fire.
///
/// Everything runs on this thread, so every sleep lands in its shard.
#[test]
#[ignore = "real time on a 1-worker runtime; run in release: see the file's docs"]
fn fired_sleeps_keep_their_slots_and_never_reach_a_newer_one() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let timer = Timer::builder()
        .runtime(runtime.handle().clone())
        .build()
        .unwrap();
    // Long enough to outlast the test: these must stay pending throughout.
    let long = Duration::from_secs(7 * 24 * 3600);
    let noop = Waker::noop();

    let mut long_sleeps: Vec<Sleep> = (0..1024)
        .map(|_| {
            let mut sleep = timer.sleep(long);
            register(&mut sleep, noop);
            sleep
        })
        .collect();
    let one_page = timer.stats().entry_bytes;

    // Three fire. Each sleep keeps its slot, as a sleep does until it is
    // polled again or dropped.
    let fired: Vec<(Sleep, Arc<Flag>)> = (0..3)
        .map(|_| {
            let flag = Arc::new(Flag::default());
            let mut sleep = timer.sleep(Duration::from_millis(20));
            register(&mut sleep, &Waker::from(flag.clone()));
            wait_for(std::slice::from_ref(&flag), "a busy-slot sleep");
            (sleep, flag)
        })
        .collect();
    assert_eq!(timer.pending(), 1024);

    // A quiet moment: nothing is pending, and the fired slots keep the
    // second page.
    long_sleeps.clear();
    assert_eq!(timer.pending(), 0);
    assert_eq!(
        timer.stats().entry_bytes,
        2 * one_page,
        "a fired slot was released"
    );

    // Newer sleeps take the first page and the second's free slots, around
    // the fired ones.
    let flags: Vec<Arc<Flag>> = (0..1025).map(|_| Arc::default()).collect();
    let mut newer: Vec<Sleep> = flags
        .iter()
        .map(|flag| {
            let mut sleep = timer.sleep(long);
            register(&mut sleep, &Waker::from(flag.clone()));
            sleep
        })
        .collect();
    let elapsed: Vec<bool> = fired.iter().map(|(sleep, _)| sleep.is_elapsed()).collect();
    drop(fired);
    assert_eq!(
        timer.pending(),
        newer.len(),
        "dropping an old, fired sleep cancelled a newer one"
    );
    for sleep in &newer {
        assert!(!sleep.is_elapsed(), "a newer sleep reads as elapsed");
    }
    assert_eq!(elapsed, [true; 3], "fired sleeps must read as elapsed");

    // Register/cancel with 1,025 pending reuses one slot.
    let bytes = timer.stats().entry_bytes;
    assert_eq!(bytes, 2 * one_page);
    for _ in 0..100_000 {
        let mut sleep = timer.sleep(long);
        register(&mut sleep, noop);
    }
    assert_eq!(
        timer.stats().entry_bytes,
        bytes,
        "register/cancel grew the slab"
    );

    // Every newer sleep still fires, through its own waker.
    let soon = Instant::now() + Duration::from_millis(50);
    for sleep in &mut newer {
        Pin::new(sleep).reset(soon);
    }
    wait_for(&flags, "a newer sleep");
    for sleep in &mut newer {
        let poll = Pin::new(sleep).poll(&mut Context::from_waker(noop));
        assert!(poll.is_ready(), "woken but not complete");
    }
    drop(newer);
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().entry_bytes, one_page, "released again");
}
