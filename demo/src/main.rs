//! The same simulated service run twice in one process, first on
//! `tokio::time`, then on tickwheel, with a side-by-side summary of what each
//! timer cost and how precise it was.
//!
//! # The load
//!
//! 20,000 client tasks issue 200,000 requests between them. Each attempt
//! calls a simulated backend whose latency is random: mostly fast (5-80 ms),
//! with a 10% tail of 200-600 ms, so roughly one attempt in eleven blows its
//! 250 ms deadline (a `timeout`). A request whose attempt timed out is
//! retried: exponential backoff from 50 ms with full jitter, at most 3
//! attempts, under an overall request deadline of 2 s, which (like most
//! request deadlines) is set and cancelled, never reached. The backend's
//! latency, the clients' pause between requests and the backoff waits are
//! themselves `sleep`s, so tens of thousands of timers wait at once.
//!
//! Every random figure (latencies, pauses, backoff delays) is seeded from the
//! request id, so both runs do the same work: the same requests, the same
//! latencies, the same deadlines and the same retries. Only an attempt whose
//! reply and deadline come due together can end differently: one whose
//! backend takes exactly 250 ms, or one caught by a stall of the machine
//! (other programs taking the CPU) with both overdue, where the reply wins.
//! So the counts agree closely, not always exactly.
//!
//! # One `use` line
//!
//! The load is written once, generic over [`Clock`]: the timer calls it
//! makes. The two implementations, [`on_tokio`] and [`on_tickwheel`], have
//! the same `sleep` and `timeout` bodies; they differ in their `use
//! tokio::time;` / `use tickwheel::time;` line, which is the whole migration.
//! Retries differ in form only: tickwheel has `timer.retry(backoff, op)`; on
//! tokio the same loop is written by hand, waiting the same delays from the
//! same [`Backoff`] (a plain iterator of durations, seeded per request).
//!
//! # Fairness
//!
//! Each run gets a fresh multi-thread runtime (one worker per core), whose
//! timer is started before anything is measured. The runs are sequential,
//! tokio first, so the timers never compete for the CPU and each run's CPU
//! time is its own; running tickwheel first instead moved no figure beyond
//! the run-to-run noise when that was checked (three runs each way). That
//! noise, other programs on a shared machine, moves the CPU figures by about
//! 10% and the 99th percentile of lateness by much more from one run to the
//! next: the verdict speaks of this run, in ratios.
//!
//! # What each figure means, and how it is measured
//!
//! - **CPU time per timer (µs)**: CPU time the whole process used during the
//!   load (user + system, all threads, from `/proc/self/stat`, 10 ms
//!   resolution), divided by the timers the load started. It includes the
//!   simulated service's own work (tasks, counters, locks), which is the same
//!   in both runs, so it understates the difference between the timers
//!   themselves (`BENCHMARKS.md` isolates that). Shown as `n/a` where
//!   `/proc/self/stat` does not exist.
//! - **timers started**: sleeps and timeouts the load created (one per pause,
//!   per request's deadline, per attempt's deadline, per backend call and per
//!   backoff wait), counted by the load itself, the same way for both timers.
//! - **timers waiting at peak**: the most of those that were waiting at once
//!   (created, and not yet fired or dropped), counted the same way.
//! - **memory per waiting timer (bytes)**: after the load, the demo creates
//!   100,000 sleeps (each in a `Box`, as a task holds its sleep in its own
//!   heap allocation), polls each once so it is registered with its timer,
//!   and divides the heap growth by 100,000: the sleep itself plus whatever
//!   its timer allocates for it. The heap is counted by a wrapper around the
//!   system allocator (bytes requested; the allocator's own overhead, the
//!   same for both, is not counted).
//! - **extra heap at peak, whole demo (MiB)**: the most heap the process held
//!   during the load, above what it held when the load started: client tasks
//!   (whose futures hold their sleeps), samples, and the timers' own storage.
//! - **how late timeouts fired (ms)**: for each attempt that timed out, the
//!   time from its start to the error, minus its 250 ms deadline: median
//!   and 99th percentile. Both timers round a deadline up to the next
//!   millisecond, so about half a millisecond of it is rounding.
//! - **fired before their deadline**: timeouts whose error came back less
//!   than 250 ms after the attempt started. Must be 0 for tickwheel.
//! - **retries started before their backoff ended**: attempts that began
//!   before the backoff delay chosen for them had passed. Must be 0 for
//!   tickwheel.
//!
//! While each run goes it prints a progress line every 500 ms; at the end,
//! the table, a one-line verdict computed from it, and the checks. It exits
//! with status 1 if, on tickwheel, a timeout fired early, a retry started
//! before its backoff delay, or the wheel is not empty once every client
//! finished (tokio's early fires are reported, not judged).
//!
//! ```text
//! cargo run --release -p tickwheel-demo
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::process;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tickwheel::retry::{Backoff, Jitter};
use tokio::task::JoinSet;
// The same type as `tickwheel::time::Instant` (tickwheel re-exports it).
use tokio::time::Instant;

/// Requests issued in total.
const REQUESTS: u64 = 200_000;
/// Concurrent clients; each has at most one request in flight.
const CLIENTS: u64 = 20_000;
/// Per-attempt deadline.
const BUDGET: Duration = Duration::from_millis(250);
/// Attempts per request, the first included.
const ATTEMPTS: usize = 3;
/// A request's overall deadline, over all its attempts and backoff waits.
/// The longest request takes 3 x 250 ms plus at most 150 ms of backoff, so
/// it never fires; like most request deadlines, it is set and cancelled.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// The first backoff delay; it doubles, with full jitter.
const RETRY_BASE: Duration = Duration::from_millis(50);
/// Longest pause a client takes between two requests. All clients fire their
/// first request at once (the peak); the pauses then spread the load out.
const MAX_THINK_MS: u64 = 600;
/// How often the progress line is printed.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// Sleeps held at once to measure the memory of a waiting timer.
const PROBE_TIMERS: usize = 100_000;

// ---------------------------------------------------------------------------
// The timers: one trait, two implementations that differ in their `use` line.
// ---------------------------------------------------------------------------

/// How a timeout ended without its future's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    /// The deadline passed.
    Deadline,
    /// The timer shut down first (tickwheel only; nobody shuts it down here).
    Shutdown,
}

/// The timer calls the load makes.
trait Clock: 'static {
    /// How the summary names this timer.
    const NAME: &'static str;
    /// The sleep future (`tokio::time::Sleep` or `tickwheel::time::Sleep`).
    type Sleep: Future<Output = ()> + Send + 'static;

    /// `time::sleep(duration)`.
    fn sleep(duration: Duration) -> Self::Sleep;

    /// `time::timeout(duration, future)`, its error mapped to [`Expired`].
    /// The deadline is set when this is called, not when it is first polled.
    fn timeout<F>(
        duration: Duration,
        future: F,
    ) -> impl Future<Output = Result<F::Output, Expired>> + Send
    where
        F: Future + Send;

    /// Calls `operation` until it succeeds, waiting the delays of `backoff`
    /// between attempts; `before_wait` hears each delay just before its wait.
    fn retry<T, E, Op, Fut, Hook>(
        backoff: Backoff,
        operation: Op,
        before_wait: Hook,
    ) -> impl Future<Output = Result<T, E>> + Send
    where
        Op: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T, E>> + Send,
        Hook: FnMut(Duration) + Send,
        T: Send,
        E: Send;

    /// Timers registered now, if the timer can tell (tokio cannot).
    fn pending() -> Option<usize>;
}

/// The load on `tokio::time`.
mod on_tokio {
    use std::future::Future;
    use std::time::Duration;

    use tickwheel::retry::Backoff;
    use tokio::time;

    use super::{Clock, Expired};

    pub struct Tokio;

    impl Clock for Tokio {
        const NAME: &'static str = "tokio::time";
        type Sleep = time::Sleep;

        fn sleep(duration: Duration) -> time::Sleep {
            time::sleep(duration)
        }

        fn timeout<F>(
            duration: Duration,
            future: F,
        ) -> impl Future<Output = Result<F::Output, Expired>> + Send
        where
            F: Future + Send,
        {
            let timeout = time::timeout(duration, future);
            async move { timeout.await.map_err(|_| Expired::Deadline) }
        }

        /// tokio has no retry: the loop `timer.retry` runs, by hand.
        async fn retry<T, E, Op, Fut, Hook>(
            backoff: Backoff,
            mut operation: Op,
            mut before_wait: Hook,
        ) -> Result<T, E>
        where
            Op: FnMut() -> Fut + Send,
            Fut: Future<Output = Result<T, E>> + Send,
            Hook: FnMut(Duration) + Send,
            T: Send,
            E: Send,
        {
            let mut delays = backoff.into_iter();
            loop {
                let error = match operation().await {
                    Ok(value) => return Ok(value),
                    Err(error) => error,
                };
                let Some(delay) = delays.next() else {
                    return Err(error);
                };
                before_wait(delay);
                time::sleep(delay).await;
            }
        }

        fn pending() -> Option<usize> {
            None
        }
    }
}

/// The load on tickwheel: the same `sleep` and `timeout` as [`on_tokio`],
/// after `use tickwheel::time;`.
mod on_tickwheel {
    use std::future::Future;
    use std::time::Duration;

    use tickwheel::retry::Backoff;
    use tickwheel::time;
    use tickwheel::Timer;

    use super::{Clock, Expired};

    pub struct Tickwheel;

    impl Clock for Tickwheel {
        const NAME: &'static str = "tickwheel";
        type Sleep = time::Sleep;

        fn sleep(duration: Duration) -> time::Sleep {
            time::sleep(duration)
        }

        fn timeout<F>(
            duration: Duration,
            future: F,
        ) -> impl Future<Output = Result<F::Output, Expired>> + Send
        where
            F: Future + Send,
        {
            let timeout = time::timeout(duration, future);
            async move {
                timeout.await.map_err(|err| match err.is_shutdown() {
                    true => Expired::Shutdown,
                    false => Expired::Deadline,
                })
            }
        }

        /// `timer.retry` on the runtime's default timer, the one
        /// `tickwheel::time` uses.
        fn retry<T, E, Op, Fut, Hook>(
            backoff: Backoff,
            operation: Op,
            mut before_wait: Hook,
        ) -> impl Future<Output = Result<T, E>> + Send
        where
            Op: FnMut() -> Fut + Send,
            Fut: Future<Output = Result<T, E>> + Send,
            Hook: FnMut(Duration) + Send,
            T: Send,
            E: Send,
        {
            Timer::current()
                .retry(backoff, operation)
                .notify(move |_: &E, delay| before_wait(delay))
        }

        fn pending() -> Option<usize> {
            Some(Timer::current().pending())
        }
    }
}

use on_tickwheel::Tickwheel;
use on_tokio::Tokio;

// ---------------------------------------------------------------------------
// Measuring: heap bytes and CPU time.
// ---------------------------------------------------------------------------

/// The system allocator, counting the heap bytes the program holds (as
/// requested: the allocator's own overhead is not counted) and the most it
/// held at once since [`reset_heap_peak`].
struct CountingAlloc;

static HEAP_NOW: AtomicUsize = AtomicUsize::new(0);
static HEAP_PEAK: AtomicUsize = AtomicUsize::new(0);

fn heap_grew(bytes: usize) {
    let now = HEAP_NOW.fetch_add(bytes, Ordering::Relaxed) + bytes;
    HEAP_PEAK.fetch_max(now, Ordering::Relaxed);
}

fn heap_shrank(bytes: usize) {
    HEAP_NOW.fetch_sub(bytes, Ordering::Relaxed);
}

fn heap_now() -> usize {
    HEAP_NOW.load(Ordering::Relaxed)
}

fn reset_heap_peak() {
    HEAP_PEAK.store(heap_now(), Ordering::Relaxed);
}

// SAFETY: every method passes its arguments unchanged to `System` and
// returns what `System` returns, so `System`'s guarantees hold as they are,
// and each caller's obligations (a non-zero size, a pointer and layout from
// this allocator) are exactly the ones `System` requires. The counting
// around the calls only updates two atomics: it neither allocates nor
// touches the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller meets `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            heap_grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller meets `GlobalAlloc::alloc_zeroed`'s contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            heap_grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from `System`, with
        // `layout`.
        unsafe { System.dealloc(ptr, layout) };
        heap_shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller meets `GlobalAlloc::realloc`'s contract; `ptr`
        // came from `System` with `layout`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size >= layout.size() {
                heap_grew(new_size - layout.size());
            } else {
                heap_shrank(layout.size() - new_size);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// CPU time the whole process has used so far (user + system, every thread,
/// those that ended too), from `/proc/self/stat`; `None` where that file
/// does not exist (not Linux) or cannot be read.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold
    // spaces: utime and stime are fields 14 and 15 of the line.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // In clock ticks of USER_HZ, which Linux fixes at 100 a second for
    // user space on every architecture it runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

// ---------------------------------------------------------------------------
// The load, written once for both timers.
// ---------------------------------------------------------------------------

/// SplitMix64: a tiny, good-enough PRNG. Seeding one per request from the
/// request id makes every request's latency reproducible, whatever task runs
/// it, in whatever order, on whichever timer.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` milliseconds (the modulo bias is negligible here).
    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next_u64() % (hi - lo))
    }
}

/// The simulated backend's latency: 90% fast, 10% slow tail.
fn backend_latency(rng: &mut SplitMix64) -> Duration {
    if rng.next_u64() % 100 < 90 {
        rng.millis(5, 80)
    } else {
        rng.millis(200, 600)
    }
}

/// The backoff of request `id`: its delays depend on `id` alone.
fn backoff(id: u64) -> Backoff {
    Backoff::exponential(RETRY_BASE)
        .jitter(Jitter::Full)
        .seed(id)
        .max_attempts(ATTEMPTS)
}

/// Live counters, shared by the clients and read by the progress line.
#[derive(Default)]
struct Counters {
    next_id: AtomicU64,
    /// Requests finished, succeeded or given up.
    done: AtomicU64,
    ok: AtomicU64,
    /// Requests whose every attempt timed out.
    gave_up: AtomicU64,
    /// Attempts that hit their deadline.
    timed_out: AtomicU64,
    /// Attempts after a request's first.
    retries: AtomicU64,
    /// Sleeps and timeouts created.
    timers_started: AtomicU64,
    /// Of those, the ones not yet fired or dropped.
    timers_waiting: AtomicU64,
    peak_waiting: AtomicU64,
}

impl Counters {
    fn wait_begins(&self) {
        self.timers_started.fetch_add(1, Ordering::Relaxed);
        let waiting = self.timers_waiting.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_waiting.fetch_max(waiting, Ordering::Relaxed);
    }

    fn wait_ends(&self) {
        self.timers_waiting.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts a timer as waiting until the guard is dropped.
    fn timer_starts(&self) -> Waiting<'_> {
        self.wait_begins();
        Waiting(self)
    }

    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// A timer counted as waiting while this lives.
struct Waiting<'a>(&'a Counters);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.wait_ends();
    }
}

/// What one client observed, merged at the end. Durations are microseconds.
#[derive(Default)]
struct Samples {
    /// How long after its deadline each timed-out attempt got its error.
    late_us: Vec<u64>,
    /// Timeouts that returned before `BUDGET` had passed.
    early: u64,
    /// Timeouts ended by a timer shutdown rather than the deadline (nobody
    /// shuts the timer down while clients run).
    shutdown: u64,
    /// Attempts that started before their backoff delay had passed.
    short_waits: u64,
}

impl Samples {
    fn merge(&mut self, other: Samples) {
        self.late_us.extend(other.late_us);
        self.early += other.early;
        self.shutdown += other.shutdown;
        self.short_waits += other.short_waits;
    }
}

/// Spawns the clients, waits for them all and sends their merged samples.
async fn load<C: Clock>(counters: Arc<Counters>, done: mpsc::Sender<Samples>) {
    let mut clients = JoinSet::new();
    for _ in 0..CLIENTS {
        clients.spawn(client::<C>(counters.clone()));
    }
    let mut samples = Samples::default();
    while let Some(result) = clients.join_next().await {
        samples.merge(result.expect("client task panicked"));
    }
    // The receiver waits for this; if it is gone, so is the reason to send.
    let _ = done.send(samples);
}

/// A client: takes request ids off the shared counter until all are issued,
/// and sends each with a deadline per attempt, retrying attempts that time
/// out. It pauses before every request but its first, so all clients start
/// at once and none idles after the last one.
async fn client<C: Clock>(counters: Arc<Counters>) -> Samples {
    let samples = Arc::new(Mutex::new(Samples::default()));
    let mut first = true;
    loop {
        let id = counters.next_id.fetch_add(1, Ordering::Relaxed);
        if id >= REQUESTS {
            break;
        }
        if !first {
            let pause = SplitMix64::new(id ^ 0x5eed).millis(0, MAX_THINK_MS);
            let _waiting = counters.timer_starts();
            C::sleep(pause).await;
        }
        first = false;

        // When the backoff wait before the next attempt may end at the
        // earliest: set just before the wait starts, checked by the attempt.
        let backoff_ends: Arc<Mutex<Option<Instant>>> = Arc::default();
        let mut attempt = 0;
        let _deadline = counters.timer_starts();
        let retries = C::retry(
            backoff(id),
            || {
                attempt += 1;
                let earliest = backoff_ends.lock().unwrap().take();
                if earliest.is_some() {
                    counters.wait_ends(); // the backoff wait is over
                }
                // Every attempt of every request has its own latency.
                let latency = backend_latency(&mut SplitMix64::new(id * 8 + attempt));
                one_attempt::<C>(&counters, &samples, id, latency, earliest)
            },
            |delay| {
                counters.retries.fetch_add(1, Ordering::Relaxed);
                counters.wait_begins();
                *backoff_ends.lock().unwrap() = Some(Instant::now() + delay);
            },
        );
        // The request's own deadline, across its attempts and waits.
        let result = C::timeout(REQUEST_DEADLINE, retries).await;
        drop(_deadline);
        match result {
            Ok(Ok(_response)) => counters.ok.fetch_add(1, Ordering::Relaxed),
            Ok(Err(_)) | Err(_) => counters.gave_up.fetch_add(1, Ordering::Relaxed),
        };
        counters.done.fetch_add(1, Ordering::Relaxed);
    }
    let samples = Arc::try_unwrap(samples).unwrap_or_else(|_| unreachable!("attempts finished"));
    samples.into_inner().unwrap()
}

/// One call to the simulated backend: a sleep of `latency`.
async fn backend_call<C: Clock>(counters: &Counters, request_id: u64, latency: Duration) -> u64 {
    let _waiting = counters.timer_starts();
    C::sleep(latency).await;
    request_id.wrapping_mul(31) // stands in for a response
}

/// One attempt of request `id` under the `BUDGET` deadline, recording what
/// the client saw. `earliest` is when a retry's backoff wait was due to end.
fn one_attempt<C: Clock>(
    counters: &Arc<Counters>,
    samples: &Arc<Mutex<Samples>>,
    id: u64,
    latency: Duration,
    earliest: Option<Instant>,
) -> impl Future<Output = Result<u64, Expired>> + Send + use<C> {
    let (counters, samples) = (counters.clone(), samples.clone());
    async move {
        if earliest.is_some_and(|at| Instant::now() < at) {
            samples.lock().unwrap().short_waits += 1;
        }
        // Start the clock before the timeout is created, so its deadline is
        // no earlier than `start + BUDGET`.
        let start = Instant::now();
        let result = {
            let _waiting = counters.timer_starts();
            C::timeout(BUDGET, backend_call::<C>(&counters, id, latency)).await
        };
        let elapsed = start.elapsed();
        if let Err(expired) = result {
            counters.timed_out.fetch_add(1, Ordering::Relaxed);
            let mut samples = samples.lock().unwrap();
            if expired == Expired::Shutdown {
                samples.shutdown += 1;
            } else if elapsed < BUDGET {
                samples.early += 1;
            } else {
                samples.late_us.push(micros(elapsed - BUDGET));
            }
        }
        result
    }
}

// ---------------------------------------------------------------------------
// One run: the load on a fresh runtime, then the memory probe.
// ---------------------------------------------------------------------------

/// What one run measured.
struct Run {
    name: &'static str,
    wall: Duration,
    cpu: Option<Duration>,
    requests: u64,
    ok: u64,
    gave_up: u64,
    timed_out: u64,
    retries: u64,
    timers_started: u64,
    peak_waiting: u64,
    /// Heap held at the peak of the load, above what it held at its start.
    extra_heap_peak: usize,
    bytes_per_waiting_timer: f64,
    /// Sorted.
    late_us: Vec<u64>,
    early: u64,
    shutdown: u64,
    short_waits: u64,
    /// The timer's own count once every client finished, if it has one.
    pending_at_end: Option<usize>,
}

impl Run {
    fn cpu_per_timer_us(&self) -> Option<f64> {
        self.cpu
            .map(|cpu| cpu.as_secs_f64() * 1e6 / self.timers_started.max(1) as f64)
    }

    fn late_ms(&self, q: f64) -> f64 {
        percentile(&self.late_us, q) as f64 / 1000.0
    }
}

/// Runs the load on timer `C` on a fresh multi-thread runtime, printing
/// progress, then measures the memory of a waiting timer on it.
fn run<C: Clock>() -> Run {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot build a tokio runtime");
    // Start the timer before measuring (tickwheel's default timer starts on
    // first use), so neither run pays its timer's startup in the figures.
    rt.block_on(async { C::sleep(Duration::from_millis(1)).await });

    let counters = Arc::new(Counters::default());
    let (done_tx, done_rx) = mpsc::channel();
    let heap_at_start = heap_now();
    reset_heap_peak();
    let cpu_at_start = process_cpu();
    let started = Instant::now();
    rt.spawn(load::<C>(counters.clone(), done_tx));

    // The progress line is printed from this thread, off the runtime, so it
    // uses neither timer.
    let mut next = started + PROGRESS_EVERY;
    let mut samples = loop {
        match done_rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok(samples) => break samples,
            Err(RecvTimeoutError::Timeout) => {
                print_progress(C::NAME, started, &counters);
                next += PROGRESS_EVERY;
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the load ended without its samples"),
        }
    };
    let wall = started.elapsed();
    let cpu = process_cpu()
        .zip(cpu_at_start)
        .map(|(end, start)| end.saturating_sub(start));
    let extra_heap_peak = HEAP_PEAK
        .load(Ordering::Relaxed)
        .saturating_sub(heap_at_start);
    let pending_at_end = rt.block_on(async { C::pending() });
    let bytes_per_waiting_timer = rt.block_on(memory_probe::<C>());
    drop(rt);

    samples.late_us.sort_unstable();
    let get = |counter: &AtomicU64| Counters::get(counter);
    Run {
        name: C::NAME,
        wall,
        cpu,
        requests: get(&counters.done),
        ok: get(&counters.ok),
        gave_up: get(&counters.gave_up),
        timed_out: get(&counters.timed_out),
        retries: get(&counters.retries),
        timers_started: get(&counters.timers_started),
        peak_waiting: get(&counters.peak_waiting),
        extra_heap_peak,
        bytes_per_waiting_timer,
        late_us: samples.late_us,
        early: samples.early,
        shutdown: samples.shutdown,
        short_waits: samples.short_waits,
        pending_at_end,
    }
}

/// Heap bytes per registered sleep: `PROBE_TIMERS` sleeps, each boxed (a
/// task holds its sleep in its own heap allocation too) and polled once, so
/// its timer holds it; the heap growth divided by their number.
async fn memory_probe<C: Clock>() -> f64 {
    let mut sleeps: Vec<Pin<Box<C::Sleep>>> = Vec::with_capacity(PROBE_TIMERS);
    let before = heap_now();
    for i in 0..PROBE_TIMERS {
        // 2-3 s: long enough not to fire while measured, within the span a
        // 1 ms x 8192-slot wheel holds without its overflow level.
        let delay = Duration::from_millis(2_000 + (i % 1_000) as u64);
        sleeps.push(Box::pin(C::sleep(delay)));
    }
    poll_fn(|cx| {
        for sleep in &mut sleeps {
            assert!(sleep.as_mut().poll(cx).is_pending(), "a probe sleep fired");
        }
        Poll::Ready(())
    })
    .await;
    let grown = heap_now().saturating_sub(before);
    if let Some(pending) = C::pending() {
        assert!(pending >= PROBE_TIMERS, "the probe's sleeps are registered");
    }
    drop(sleeps);
    grown as f64 / PROBE_TIMERS as f64
}

fn print_progress(name: &str, started: Instant, counters: &Counters) {
    println!(
        "[{name:<11}] {:>4.1}s  requests done {:>7} / {}  attempts timed out {:>6}  timers waiting {:>6}",
        started.elapsed().as_secs_f64(),
        thousands(Counters::get(&counters.done)),
        thousands(REQUESTS),
        thousands(Counters::get(&counters.timed_out)),
        thousands(Counters::get(&counters.timers_waiting)),
    );
}

// ---------------------------------------------------------------------------
// The summary.
// ---------------------------------------------------------------------------

fn main() {
    println!(
        "tickwheel demo: {} requests from {} clients, a {} ms deadline per attempt, up to \
         {ATTEMPTS} attempts; the same load on tokio::time, then on tickwheel.",
        thousands(REQUESTS),
        thousands(CLIENTS),
        BUDGET.as_millis(),
    );
    println!();
    let tokio = run::<Tokio>();
    println!();
    let wheel = run::<Tickwheel>();

    print_table(&tokio, &wheel);
    println!();
    println!("{}", verdict(&tokio, &wheel));
    if !checks_pass(&tokio, &wheel) {
        process::exit(1);
    }
}

const LABEL: usize = 56;
const COLUMN: usize = 15;
const RATIO: usize = 18;

fn row(label: &str, tokio: String, wheel: String, ratio: Option<f64>) {
    let ratio = ratio.map_or(String::new(), |r| format!("{r:.2}x"));
    let line = format!("{label:<LABEL$}{tokio:>COLUMN$}{wheel:>COLUMN$}{ratio:>RATIO$}");
    println!("{}", line.trim_end());
}

/// `wheel / tokio`, when both are there and tokio's is not zero.
fn ratio(tokio: Option<f64>, wheel: Option<f64>) -> Option<f64> {
    match (tokio, wheel) {
        (Some(t), Some(w)) if t > 0.0 => Some(w / t),
        _ => None,
    }
}

fn print_table(tokio: &Run, wheel: &Run) {
    let count = |f: fn(&Run) -> u64| (thousands(f(tokio)), thousands(f(wheel)));
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"));

    println!();
    println!("== summary: the same load on both timers (cost and precision: lower is better) ==");
    println!(
        "{:<LABEL$}{:>COLUMN$}{:>COLUMN$}{:>RATIO$}",
        "", tokio.name, wheel.name, "tickwheel/tokio"
    );

    println!("the load (the same for both)");
    let (t, w) = count(|r| r.requests);
    row("  requests", t, w, None);
    let (t, w) = count(|r| r.ok);
    row("  requests that succeeded", t, w, None);
    let label = format!("  requests given up ({ATTEMPTS} attempts timed out)");
    let (t, w) = count(|r| r.gave_up);
    row(&label, t, w, None);
    let (t, w) = count(|r| r.timed_out);
    row("  attempts that timed out", t, w, None);
    let (t, w) = count(|r| r.retries);
    row("  retries (attempts after the first)", t, w, None);
    let (t, w) = count(|r| r.timers_started);
    row("  timers started (sleeps and timeouts)", t, w, None);
    let (t, w) = count(|r| r.peak_waiting);
    row("  timers waiting at peak", t, w, None);

    println!("cost");
    row(
        "  wall time (s)",
        format!("{:.2}", tokio.wall.as_secs_f64()),
        format!("{:.2}", wheel.wall.as_secs_f64()),
        None,
    );
    let cpu = |r: &Run| r.cpu.map(|d| d.as_secs_f64());
    row(
        "  CPU time, whole process (s)",
        opt(cpu(tokio), 2),
        opt(cpu(wheel), 2),
        ratio(cpu(tokio), cpu(wheel)),
    );
    row(
        "  CPU time per timer (µs)",
        opt(tokio.cpu_per_timer_us(), 2),
        opt(wheel.cpu_per_timer_us(), 2),
        ratio(tokio.cpu_per_timer_us(), wheel.cpu_per_timer_us()),
    );
    row(
        "  memory per waiting timer (bytes)",
        format!("{:.0}", tokio.bytes_per_waiting_timer),
        format!("{:.0}", wheel.bytes_per_waiting_timer),
        ratio(
            Some(tokio.bytes_per_waiting_timer),
            Some(wheel.bytes_per_waiting_timer),
        ),
    );
    let mib = |r: &Run| r.extra_heap_peak as f64 / (1024.0 * 1024.0);
    row(
        "  extra heap at peak, whole demo (MiB)",
        format!("{:.1}", mib(tokio)),
        format!("{:.1}", mib(wheel)),
        ratio(Some(mib(tokio)), Some(mib(wheel))),
    );

    println!("precision");
    let late = |r: &Run| format!("{:.2} / {:.2}", r.late_ms(0.50), r.late_ms(0.99));
    row(
        "  how late timeouts fired: median / 99th pct (ms)",
        late(tokio),
        late(wheel),
        None,
    );
    let (t, w) = count(|r| r.early);
    row("  timeouts that fired before their deadline", t, w, None);
    let (t, w) = count(|r| r.short_waits);
    row("  retries started before their backoff ended", t, w, None);
}

/// One line, from the figures: ratios to tokio's, and plain words where
/// tickwheel did worse in this run.
fn verdict(tokio: &Run, wheel: &Run) -> String {
    // Judged as printed, to two decimals.
    let judge = |r: f64, worse: &str| match (r * 100.0).round() as i64 {
        ..=99 => String::new(),
        100 => " (the same)".to_string(),
        _ => format!(" ({worse}: worse in this run)"),
    };
    let cpu = match ratio(tokio.cpu_per_timer_us(), wheel.cpu_per_timer_us()) {
        Some(r) => format!("{r:.2}x tokio::time's CPU per timer{}", judge(r, "more")),
        None => "CPU not measured (no /proc/self/stat)".to_string(),
    };
    let r = wheel.bytes_per_waiting_timer / tokio.bytes_per_waiting_timer.max(1.0);
    let memory = format!("{r:.2}x its memory per waiting timer{}", judge(r, "more"));
    let late = |r: &Run| (r.late_ms(0.50), r.late_ms(0.99));
    let ((p50_wheel, p99_wheel), (p50_tokio, p99_tokio)) = (late(wheel), late(tokio));
    // Lateness is shown to 0.01 ms; later by less than that is not worse.
    let worse = match (p50_wheel > p50_tokio + 0.005, p99_wheel > p99_tokio + 0.005) {
        (true, true) => " (later at both: worse in this run)",
        (true, false) => " (later at the median: worse in this run)",
        (false, true) => " (later at the 99th percentile: worse in this run)",
        (false, false) => "",
    };
    format!(
        "Verdict: tickwheel used {cpu} and {memory}; its timeouts fired {p50_wheel:.2} / \
         {p99_wheel:.2} ms late (median / 99th percentile) against tokio::time's {p50_tokio:.2} \
         / {p99_tokio:.2} ms{worse}; {} fired before their deadline (tokio::time: {}).",
        wheel.early + wheel.shutdown,
        tokio.early,
    )
}

/// tickwheel's promises, one line each; tokio's figures alongside.
fn checks_pass(tokio: &Run, wheel: &Run) -> bool {
    println!();
    let on_time = wheel.early == 0 && wheel.shutdown == 0;
    if on_time {
        println!(
            "PASS  tickwheel: all {} timeouts fired at or after their {} ms deadline \
             (tokio::time: {} of {} fired early)",
            thousands(wheel.late_us.len() as u64),
            BUDGET.as_millis(),
            tokio.early,
            thousands(tokio.timed_out),
        );
    } else {
        println!(
            "FAIL  tickwheel: {} timeouts fired before their {} ms deadline, {} were ended by a shutdown",
            wheel.early,
            BUDGET.as_millis(),
            wheel.shutdown,
        );
    }
    if wheel.short_waits == 0 {
        println!(
            "PASS  tickwheel: no retry started before its backoff delay had passed \
             (tokio::time: {})",
            tokio.short_waits
        );
    } else {
        println!(
            "FAIL  tickwheel: {} retries started before their backoff delay had passed",
            wheel.short_waits
        );
    }
    let empty = wheel.pending_at_end == Some(0);
    match wheel.pending_at_end {
        Some(0) => println!("PASS  tickwheel: the wheel is empty once every client finished"),
        Some(n) => {
            println!("FAIL  tickwheel: {n} timers still in the wheel once every client finished")
        }
        None => println!("FAIL  tickwheel: the timer did not report what it holds"),
    }
    on_time && wheel.short_waits == 0 && empty
}

/// Nearest-rank percentile of sorted samples; 0 when there are none.
fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
