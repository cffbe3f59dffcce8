//! A simulated async service that puts a deadline on every backend call and
//! retries the calls that blow it.
//!
//! 20,000 client tasks share one [`tickwheel::Timer`] (default settings: 1 ms
//! ticks) and issue 200,000 requests between them. Each attempt calls a
//! simulated backend whose latency is random: mostly fast (5-80 ms), with a
//! 10% tail of 200-600 ms, so roughly one attempt in eleven blows its 250 ms
//! budget (`timer.timeout`). A request whose attempt timed out is retried
//! with `timer.retry`: exponential backoff from 50 ms with full jitter, at
//! most 3 attempts. The backend's latency, the clients' think time and the
//! backoff waits are themselves `timer.sleep`s, so the wheel holds tens of
//! thousands of timers at once.
//!
//! While it runs it prints progress every 500 ms; at the end it prints what the
//! clients saw, what the timer saw, and checks the timer's promises: no
//! timeout ever returns before its deadline, no retry waits less than its
//! backoff delay, and nothing is left in the wheel. It exits with status 1 if
//! a check fails.
//!
//! ```text
//! cargo run --release -p tickwheel-demo
//! ```

use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::sync::Mutex;

use tickwheel::retry::{Backoff, Jitter};
use tickwheel::{Elapsed, Timer};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Requests issued in total.
const REQUESTS: u64 = 200_000;
/// Concurrent clients; each has at most one request in flight, so this bounds
/// the number of requests in flight.
const CLIENTS: u64 = 20_000;
/// Per-attempt deadline.
const BUDGET: Duration = Duration::from_millis(250);
/// Attempts per request, the first included.
const ATTEMPTS: usize = 3;
/// The first backoff delay; it doubles, with full jitter.
const RETRY_BASE: Duration = Duration::from_millis(50);
/// Longest pause a client takes between two requests. All clients fire their
/// first request at once (the peak); the pauses then spread the load out.
const MAX_THINK_MS: u64 = 600;
/// How often the progress line is printed.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// SplitMix64: a tiny, good-enough PRNG. Seeding one per request from the
/// request id makes every request's latency reproducible, whatever task runs
/// it and in whatever order.
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

/// One call to the simulated backend. It waits on the same timer as the
/// deadline, so every request puts two timers in the wheel.
async fn backend_call(timer: &Timer, request_id: u64, latency: Duration) -> u64 {
    timer.sleep(latency).await;
    request_id.wrapping_mul(31) // stands in for a response
}

/// Live counters, shared by the clients and read by the progress reporter.
#[derive(Default)]
struct Counters {
    next_id: AtomicU64,
    completed: AtomicU64,
    ok: AtomicU64,
    /// Attempts that hit their deadline.
    timed_out: AtomicU64,
    /// Retries made (attempts after a request's first).
    retries: AtomicU64,
    /// Requests whose every attempt timed out.
    gave_up: AtomicU64,
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
}

/// What one client observed, merged at the end. Durations are microseconds.
#[derive(Default)]
struct Samples {
    ok_latency_us: Vec<u64>,
    timeout_late_us: Vec<u64>,
    /// Timeouts that returned before `BUDGET` had passed (must stay 0).
    early: u64,
    /// Timeouts ended by a timer shutdown rather than the deadline (must
    /// stay 0: nobody shuts the timer down while clients run).
    shutdown: u64,
    /// Backoff waits shorter than the delay the backoff chose (must stay 0).
    short_waits: u64,
}

impl Samples {
    fn merge(&mut self, other: Samples) {
        self.ok_latency_us.extend(other.ok_latency_us);
        self.timeout_late_us.extend(other.timeout_late_us);
        self.early += other.early;
        self.shutdown += other.shutdown;
        self.short_waits += other.short_waits;
    }
}

/// A client: takes request ids off the shared counter until all are issued,
/// and sends each with a deadline per attempt, retrying attempts that time
/// out. It pauses before every request but its first, so all clients start
/// at once and none idles after the last one.
async fn client(timer: Timer, counters: Arc<Counters>) -> Samples {
    let samples = Arc::new(Mutex::new(Samples::default()));
    let mut first = true;
    loop {
        let id = counters.next_id.fetch_add(1, Ordering::Relaxed);
        if id >= REQUESTS {
            break;
        }
        if !first {
            let mut rng = SplitMix64::new(id ^ 0x5eed);
            timer.sleep(rng.millis(0, MAX_THINK_MS)).await;
        }
        first = false;

        // The notify hook runs just before each backoff wait; the next
        // attempt checks that at least that delay has passed.
        let retry_at: Arc<Mutex<Option<Instant>>> = Arc::default();
        let mut attempt = 0;
        let result = timer
            .retry(
                Backoff::exponential(RETRY_BASE)
                    .jitter(Jitter::Full)
                    .seed(id)
                    .max_attempts(ATTEMPTS),
                || {
                    attempt += 1;
                    let earliest = retry_at.lock().unwrap().take();
                    // Every attempt of every request has its own latency.
                    let latency = backend_latency(&mut SplitMix64::new(id * 8 + attempt));
                    one_attempt(&timer, &counters, &samples, id, latency, earliest)
                },
            )
            .notify({
                let counters = counters.clone();
                let retry_at = retry_at.clone();
                move |_: &Elapsed, delay| {
                    counters.retries.fetch_add(1, Ordering::Relaxed);
                    *retry_at.lock().unwrap() = Some(Instant::now() + delay);
                }
            })
            .await;
        match result {
            Ok(_response) => counters.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => counters.gave_up.fetch_add(1, Ordering::Relaxed),
        };
        counters.completed.fetch_add(1, Ordering::Relaxed);
    }
    let samples = Arc::try_unwrap(samples).unwrap_or_else(|_| unreachable!("attempts finished"));
    samples.into_inner().unwrap()
}

/// One attempt of request `id` under the `BUDGET` deadline, recording what
/// the client saw. `earliest` is when a retry's backoff wait was due to end.
fn one_attempt(
    timer: &Timer,
    counters: &Arc<Counters>,
    samples: &Arc<Mutex<Samples>>,
    id: u64,
    latency: Duration,
    earliest: Option<Instant>,
) -> impl std::future::Future<Output = Result<u64, Elapsed>> + use<> {
    let (timer, counters, samples) = (timer.clone(), counters.clone(), samples.clone());
    async move {
        if earliest.is_some_and(|at| Instant::now() < at) {
            samples.lock().unwrap().short_waits += 1;
        }
        let in_flight = counters.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        counters
            .peak_in_flight
            .fetch_max(in_flight, Ordering::Relaxed);
        // Start the clock before the timeout is created, so the timer's own
        // deadline is no earlier than `start + BUDGET`.
        let start = Instant::now();
        let result = timer
            .timeout(BUDGET, backend_call(&timer, id, latency))
            .await;
        let elapsed = start.elapsed();
        counters.in_flight.fetch_sub(1, Ordering::Relaxed);
        let mut samples = samples.lock().unwrap();
        match &result {
            Ok(_response) => samples.ok_latency_us.push(micros(elapsed)),
            Err(err) => {
                counters.timed_out.fetch_add(1, Ordering::Relaxed);
                if err.is_shutdown() {
                    samples.shutdown += 1;
                } else if elapsed < BUDGET {
                    samples.early += 1;
                } else {
                    samples.timeout_late_us.push(micros(elapsed - BUDGET));
                }
            }
        }
        result
    }
}

/// Prints one progress line every `PROGRESS_EVERY` until aborted.
async fn report_progress(timer: Timer, counters: Arc<Counters>, started: Instant) {
    let mut ticks = tokio::time::interval(PROGRESS_EVERY);
    ticks.tick().await; // the first tick is immediate
    loop {
        ticks.tick().await;
        println!(
            "[{:>5.1}s] completed {:>7}  ok {:>7}  timed out {:>6}  retries {:>6}  in flight {:>6}  wheel pending {:>6}",
            started.elapsed().as_secs_f64(),
            counters.completed.load(Ordering::Relaxed),
            counters.ok.load(Ordering::Relaxed),
            counters.timed_out.load(Ordering::Relaxed),
            counters.retries.load(Ordering::Relaxed),
            counters.in_flight.load(Ordering::Relaxed),
            timer.pending(),
        );
    }
}

#[tokio::main]
async fn main() {
    let timer = Timer::new();
    let counters = Arc::new(Counters::default());
    let started = Instant::now();

    println!(
        "tickwheel demo: {REQUESTS} requests from {CLIENTS} clients, {BUDGET:?} budget per \
         attempt, up to {ATTEMPTS} attempts, {:?} tick",
        timer.tick()
    );
    let progress = tokio::spawn(report_progress(timer.clone(), counters.clone(), started));

    let mut clients = JoinSet::new();
    for _ in 0..CLIENTS {
        clients.spawn(client(timer.clone(), counters.clone()));
    }
    let mut samples = Samples::default();
    while let Some(result) = clients.join_next().await {
        samples.merge(result.expect("client task panicked"));
    }
    progress.abort();
    let wall = started.elapsed();

    print_summary(&timer, &counters, &mut samples, wall);
    if !checks_pass(&timer, &samples) {
        process::exit(1);
    }
}

fn print_summary(timer: &Timer, counters: &Counters, samples: &mut Samples, wall: Duration) {
    let total = counters.completed.load(Ordering::Relaxed);
    let ok = counters.ok.load(Ordering::Relaxed);
    let timed_out = counters.timed_out.load(Ordering::Relaxed);
    let retries = counters.retries.load(Ordering::Relaxed);
    let gave_up = counters.gave_up.load(Ordering::Relaxed);
    let attempts = total + retries;
    samples.ok_latency_us.sort_unstable();
    samples.timeout_late_us.sort_unstable();
    let ok_lat = &samples.ok_latency_us;
    let late = &samples.timeout_late_us;

    println!();
    println!("== clients ({wall:.2?} wall) ==");
    println!("requests        {total}");
    println!(
        "ok              {ok} ({:.2}%)",
        100.0 * ok as f64 / total.max(1) as f64
    );
    println!("gave up         {gave_up} (all {ATTEMPTS} attempts timed out)");
    println!("attempts        {attempts} ({retries} retries)");
    println!(
        "timed out       {timed_out} attempts ({:.1}%)",
        100.0 * timed_out as f64 / attempts.max(1) as f64
    );
    println!(
        "peak in flight  {}",
        counters.peak_in_flight.load(Ordering::Relaxed)
    );
    // An OK reply can land a little past the budget: the backend's own sleep
    // fires up to a tick late too, and when it fires in the same tick as the
    // deadline the reply wins (the inner future is polled first).
    println!(
        "ok latency      p50 {}  p99 {}  max {}",
        ms(percentile(ok_lat, 0.50)),
        ms(percentile(ok_lat, 0.99)),
        ms(percentile(ok_lat, 1.0)),
    );
    // How long after its 250 ms budget a timed-out attempt got its error back.
    println!(
        "timeout late by p50 {}  p99 {}  max {}",
        ms(percentile(late, 0.50)),
        ms(percentile(late, 0.99)),
        ms(percentile(late, 1.0)),
    );

    // Each attempt registers its deadline and its backend sleep, each retry
    // its backoff wait, and each client its think pauses; a timer that fires
    // counts as fired, one dropped first (a deadline beaten by the backend, a
    // backend call cut off by its deadline) as cancelled.
    let stats = timer.stats();
    println!();
    println!("== timer ==");
    println!("registered      {}", stats.registered);
    println!("fired           {}", stats.fired);
    println!("cancelled       {}", stats.cancelled);
    println!("ticks           {}", stats.ticks);
    println!("driver wakeups  {}", stats.wakeups);
    println!("fire lateness   {}", stats.lateness);
    println!("entry memory    {} KiB", stats.entry_bytes / 1024);
}

/// Checks the timer's promises; prints one line per check.
fn checks_pass(timer: &Timer, samples: &Samples) -> bool {
    println!();
    let on_time = samples.early == 0 && samples.shutdown == 0;
    if on_time {
        println!(
            "PASS  all {} timeouts returned at or after their {BUDGET:?} deadline",
            samples.timeout_late_us.len()
        );
    } else {
        println!(
            "FAIL  {} timeouts returned before their {BUDGET:?} deadline, {} ended by shutdown",
            samples.early, samples.shutdown
        );
    }
    if samples.short_waits == 0 {
        println!("PASS  no retry started before its backoff delay had passed");
    } else {
        println!(
            "FAIL  {} retries started before their backoff delay had passed",
            samples.short_waits
        );
    }
    let pending = timer.pending();
    if pending == 0 {
        println!("PASS  timer.pending() == 0 once every client finished");
    } else {
        println!("FAIL  timer.pending() == {pending} once every client finished");
    }
    on_time && samples.short_waits == 0 && pending == 0
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

/// Microseconds shown as milliseconds.
fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}
