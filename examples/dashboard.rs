//! The figures a service's dashboard plots for its timer, from
//! `timer.stats()`: live and pending sleeps, the headroom under
//! `max_pending`, driver wake-ups and fired timers per second (the
//! difference of two snapshots), and the lateness histogram as Prometheus
//! text.
//!
//! 1,000 simulated clients each keep an idle-connection sleep (created, not
//! polled: live but not pending) and loop: a backend call of 1 to 200 ms
//! under a 100 ms `timer.timeout`, then a think time of 1 to 50 ms on
//! `timer.sleep`. Every simulated second, a sampler subtracts the previous
//! snapshot from the new one and prints a dashboard row; at the end it
//! prints the Prometheus exposition of the last snapshot.
//!
//! It runs on tokio's paused clock, so 5 simulated seconds take well under
//! one real second and the figures are the same on every run. The sampler
//! waits on `tokio::time`, so the wheel's figures are the workload's alone.
//! It exits non-zero unless the figures agree with what the workload counted
//! itself: fired timers equal the timeouts that expired plus the think
//! times, `pending <= live <= max_pending`, the headroom is their
//! difference, no timer was a tick or more late, the Prometheus buckets rise
//! to the fired count, and the wheel ends empty.
//!
//! Run: `cargo run --example dashboard`

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickwheel::{LatenessHistogram, Stats, Timer};
use tokio::task::JoinSet;
use tokio::time::Instant;

const CLIENTS: u64 = 1_000;
const MAX_PENDING: usize = 5_000;
const RUN_FOR: Duration = Duration::from_secs(5);
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
const CALL_LIMIT: Duration = Duration::from_millis(100);

/// What the workload counts itself, to check the timer's figures against.
#[derive(Default)]
struct Counted {
    calls_ok: AtomicU64,
    calls_timed_out: AtomicU64,
    think_times: AtomicU64,
}

/// A small deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn millis(&mut self, low: u64, high: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        low + self.0 % (high - low + 1)
    }
}

async fn client(timer: Timer, id: u64, start: Instant, counted: Arc<Counted>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    // The idle-connection timeout, reset on traffic in a real server; here
    // only held, so it stays live without ever being pending.
    let _idle = timer.sleep(Duration::from_secs(60));
    while start.elapsed() < RUN_FOR {
        // The backend: never exactly the limit, so that no call ties with
        // its deadline and the counts below are exact.
        let mut latency = rng.millis(1, 200);
        if latency == CALL_LIMIT.as_millis() as u64 {
            latency += 1;
        }
        let call = tokio::time::sleep(Duration::from_millis(latency));
        match timer.timeout(CALL_LIMIT, call).await {
            Ok(()) => counted.calls_ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => counted.calls_timed_out.fetch_add(1, Ordering::Relaxed),
        };
        timer.sleep(Duration::from_millis(rng.millis(1, 50))).await;
        counted.think_times.fetch_add(1, Ordering::Relaxed);
    }
}

/// One dashboard row from two snapshots `elapsed` apart; checks the gauges.
fn row(t: Duration, now: &Stats, before: &Stats, elapsed: Duration) -> String {
    let interval = now - before;
    let per_second = |n: u64| n as f64 / elapsed.as_secs_f64();
    let headroom = interval.headroom().expect("the timer has a max_pending");
    assert!(interval.pending <= interval.live, "more pending than live");
    assert!(interval.live <= MAX_PENDING, "live beyond max_pending");
    assert!(
        interval.live as u64 >= CLIENTS,
        "every client holds a live idle sleep"
    );
    assert_eq!(headroom, MAX_PENDING - interval.live);
    assert!(interval.fired > 0, "nothing fired in a busy second");
    format!(
        "{:>4.1}s {:>6} {:>8} {:>9} {:>11.0} {:>9.0} {:>12.0} {:>12?}",
        t.as_secs_f64(),
        interval.live,
        interval.pending,
        headroom,
        per_second(interval.wakeups),
        per_second(interval.fired),
        per_second(interval.cancelled),
        interval.lateness.p99,
    )
}

/// The Prometheus text exposition of a snapshot: gauges, counters, and the
/// lateness histogram with a fixed set of bounds (the powers of two of
/// microseconds up to about a second, all bucket bounds of the wheel's own
/// histogram, so the cumulative counts are exact).
fn prometheus(stats: &Stats) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        writeln!(out, "# HELP {name} {help}").unwrap();
        writeln!(out, "# TYPE {name} {kind}").unwrap();
        writeln!(out, "{name} {value}").unwrap();
    };
    let gauges = [
        (
            "tickwheel_live",
            "Sleeps and timeouts alive (what max_pending bounds).",
            stats.live,
        ),
        (
            "tickwheel_pending",
            "Timers registered in the wheel.",
            stats.pending,
        ),
        (
            "tickwheel_max_pending",
            "The max_pending limit.",
            stats.max_pending.unwrap_or(0),
        ),
        (
            "tickwheel_entry_bytes",
            "Bytes of wheel entry storage.",
            stats.entry_bytes,
        ),
    ];
    for (name, help, value) in gauges {
        metric(name, "gauge", help, value.to_string());
    }
    let counters = [
        (
            "tickwheel_registered_total",
            "Timers registered in the wheel.",
            stats.registered,
        ),
        (
            "tickwheel_fired_total",
            "Timers fired by the driver.",
            stats.fired,
        ),
        (
            "tickwheel_cancelled_total",
            "Timers removed before firing.",
            stats.cancelled,
        ),
        (
            "tickwheel_wakeups_total",
            "Driver task wake-ups.",
            stats.wakeups,
        ),
    ];
    for (name, help, value) in counters {
        metric(name, "counter", help, value.to_string());
    }

    let histogram = &stats.lateness_histogram;
    let name = "tickwheel_lateness_seconds";
    writeln!(out, "# HELP {name} How late fired timers were.").unwrap();
    writeln!(out, "# TYPE {name} histogram").unwrap();
    let fixed = LatenessHistogram::bounds()
        .filter(|le| le.as_micros().is_power_of_two() && *le <= Duration::from_micros(1 << 20));
    for le in fixed {
        let count = histogram.count_below(le);
        writeln!(out, "{name}_bucket{{le=\"{}\"}} {count}", le.as_secs_f64()).unwrap();
    }
    writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", histogram.count()).unwrap();
    writeln!(out, "{name}_sum {}", histogram.sum().as_secs_f64()).unwrap();
    writeln!(out, "{name}_count {}", histogram.count()).unwrap();
    out
}

/// Reads the histogram's lines back: the cumulative counts must rise, and
/// `+Inf` and `_count` must be the number of fired timers.
fn check_exposition(text: &str, fired: u64) {
    let value = |line: &str| -> u64 { line.rsplit(' ').next().unwrap().parse().unwrap() };
    let buckets: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("tickwheel_lateness_seconds_bucket"))
        .map(value)
        .collect();
    assert!(buckets.len() > 2, "no buckets in the exposition");
    assert!(
        buckets.windows(2).all(|w| w[0] <= w[1]),
        "cumulative buckets fall: {buckets:?}"
    );
    assert_eq!(
        *buckets.last().unwrap(),
        fired,
        "+Inf is not the fired count"
    );
    let count = text
        .lines()
        .find(|l| l.starts_with("tickwheel_lateness_seconds_count"))
        .map(value);
    assert_eq!(count, Some(fired));
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let timer = Timer::builder().max_pending(MAX_PENDING).build().unwrap();
    let start = Instant::now();
    let counted = Arc::new(Counted::default());
    let mut clients = JoinSet::new();
    for id in 0..CLIENTS {
        clients.spawn(client(timer.clone(), id, start, counted.clone()));
    }

    println!(
        "{} clients, {CALL_LIMIT:?} call limit, max_pending {MAX_PENDING}, tick {:?}\n",
        CLIENTS,
        timer.tick()
    );
    println!(
        "{:>5} {:>6} {:>8} {:>9} {:>11} {:>9} {:>12} {:>12}",
        "t", "live", "pending", "headroom", "wakeups/s", "fired/s", "cancelled/s", "late p99"
    );
    let mut sampler = tokio::time::interval_at(start + SAMPLE_EVERY, SAMPLE_EVERY);
    let mut before = (timer.stats(), Instant::now());
    for _ in 0..RUN_FOR.as_secs() {
        sampler.tick().await;
        let now = (timer.stats(), Instant::now());
        println!(
            "{}",
            row(now.1 - start, &now.0, &before.0, now.1 - before.1)
        );
        before = now;
    }

    while let Some(done) = clients.join_next().await {
        done.expect("a client panicked");
    }
    let stats = timer.stats();
    let text = prometheus(&stats);
    println!("\n{text}");

    let ok = counted.calls_ok.load(Ordering::Relaxed);
    let timed_out = counted.calls_timed_out.load(Ordering::Relaxed);
    let thinks = counted.think_times.load(Ordering::Relaxed);
    println!(
        "calls: {ok} ok, {timed_out} timed out; think times: {thinks}; lateness {}",
        stats.lateness
    );

    assert!(ok > 0 && timed_out > 0, "the workload mixes both outcomes");
    assert_eq!(
        stats.fired,
        timed_out + thinks,
        "fired timers are the expired timeouts and the think times"
    );
    assert_eq!(
        stats.cancelled, ok,
        "a call that beat its limit cancelled it"
    );
    assert_eq!(stats.lateness_histogram.count(), stats.fired);
    assert!(
        stats.lateness.max < timer.tick(),
        "a timer fired a tick or more late on the paused clock"
    );
    assert_eq!((stats.live, stats.pending), (0, 0), "the wheel ends empty");
    assert_eq!(stats.registered, stats.fired + stats.cancelled);
    check_exposition(&text, stats.fired);
    println!("all checks passed");
}
