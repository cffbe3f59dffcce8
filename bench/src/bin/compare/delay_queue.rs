//! The delay-queue workloads, `tickwheel::DelayQueue` against tokio-util's
//! `DelayQueue` (on `tokio::time`), each in its own child process. In these
//! workloads the `tokio` system is tokio-util's queue.
//!
//! - DQ1 one million items (`u64`) inserted with delays of 1-2 s (so every
//!   insert is done before the first deadline), then all drained as they
//!   expire: process CPU over the whole, wall time per insert, bytes per
//!   item (live-heap growth over the inserts / items; the queue was built
//!   before), and lateness (the clock read once per batch of items yielded
//!   by one poll, minus each item's `Expired::deadline()`; tokio-util's
//!   deadline is its own, rounded up to its millisecond, so its lateness is
//!   understated by under 1 ms).
//! - DQ2 insert+remove churn, a request table: 10,000 items pending and a
//!   task waiting on the queue (polled once); each operation inserts an
//!   item and removes the one inserted 10,000 operations before. The first
//!   row has one timeout (10 s), so the removed item is the one due first
//!   (replies in order); a variant row has random delays (10-20 s). CPU ns
//!   per operation; both rows have a goal.
//! - DQ3 insert+reset churn, idle timeouts: the same start, each item with
//!   its own timeout (10-20 s); each operation inserts an item and refreshes
//!   one picked pseudo-randomly among all inserted so far to its own
//!   timeout from now (so its deadline moves later). A variant row resets
//!   to random delays instead, as often earlier as later; both rows have a
//!   goal.
//!
//! Both queues run on a current-thread runtime inside
//! `tokio::task::unconstrained`, as W3 does: tickwheel's queue takes a unit of
//! tokio's coop budget per item it yields, tokio-util's takes none.

use std::future::{poll_fn, Future};
use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tickwheel_bench::{current_thread, new_timer};

use crate::measure::{cpu_ns, lateness_ns, live_bytes, Lateness};
use crate::rng::Rng;
use crate::systems::{emit, Figures, Sizes, Sys, Work};

/// Items pending while DQ2 and DQ3 churn.
const STANDING: usize = 10_000;

/// What the workloads need of a delay queue: the shared shape of tokio-util's
/// and tickwheel's.
trait Queue {
    type Key: Copy + Send;
    fn insert(&mut self, value: u64, delay: Duration) -> Self::Key;
    fn remove(&mut self, key: &Self::Key) -> u64;
    fn reset(&mut self, key: &Self::Key, delay: Duration);
    /// An expired item's value and deadline.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<(u64, Instant)>>;
}

impl Queue for tickwheel::DelayQueue<u64> {
    type Key = tickwheel::delay_queue::Key;
    fn insert(&mut self, value: u64, delay: Duration) -> Self::Key {
        tickwheel::DelayQueue::insert(self, value, delay)
    }
    fn remove(&mut self, key: &Self::Key) -> u64 {
        tickwheel::DelayQueue::remove(self, key).into_inner()
    }
    fn reset(&mut self, key: &Self::Key, delay: Duration) {
        tickwheel::DelayQueue::reset(self, key, delay);
    }
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<(u64, Instant)>> {
        tickwheel::DelayQueue::poll_expired(self, cx)
            .map(|e| e.map(|e| (*e.get_ref(), e.deadline().into_std())))
    }
}

impl Queue for tokio_util::time::DelayQueue<u64> {
    type Key = tokio_util::time::delay_queue::Key;
    fn insert(&mut self, value: u64, delay: Duration) -> Self::Key {
        tokio_util::time::DelayQueue::insert(self, value, delay)
    }
    fn remove(&mut self, key: &Self::Key) -> u64 {
        tokio_util::time::DelayQueue::remove(self, key).into_inner()
    }
    fn reset(&mut self, key: &Self::Key, delay: Duration) {
        tokio_util::time::DelayQueue::reset(self, key, delay);
    }
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<(u64, Instant)>> {
        tokio_util::time::DelayQueue::poll_expired(self, cx)
            .map(|e| e.map(|e| (*e.get_ref(), e.deadline().into_std())))
    }
}

/// Deterministic pseudo-random delays in `[lo, hi)`, the same for both
/// queues.
fn delays(count: usize, lo: Duration, hi: Duration, seed: u64) -> Vec<Duration> {
    Rng::new(seed).durations(count, lo, hi)
}

/// Runs `f` with a fresh queue of `sys` in a task spawned on a
/// current-thread runtime (as a server's expiry loop would run; polling it
/// from `block_on` instead would make every clock read of tickwheel's look
/// up the runtime, which a task does once).
fn with_queue<J: AsyncQueueJob + Send + 'static>(sys: Sys, job: J) -> J::Out {
    let rt = current_thread();
    match sys {
        Sys::Tickwheel => {
            let timer = new_timer(&rt);
            rt.block_on(async move {
                tokio::spawn(tokio::task::unconstrained(async move {
                    let queue = tickwheel::DelayQueue::<u64>::with_timer(&timer);
                    job.run(queue, timer.tick()).await
                }))
                .await
                .expect("the delay-queue task panicked")
            })
        }
        Sys::Tokio => rt.block_on(async move {
            tokio::spawn(tokio::task::unconstrained(async move {
                let queue = tokio_util::time::DelayQueue::<u64>::new();
                job.run(queue, Duration::from_millis(1)).await
            }))
            .await
            .expect("the delay-queue task panicked")
        }),
        _ => unreachable!("the delay-queue workloads compare tickwheel and tokio-util"),
    }
}

/// A workload generic over the queue (monomorphised for each, so neither
/// pays for dynamic dispatch). `resolution` is the queue's tick.
trait AsyncQueueJob {
    type Out: Send + 'static;
    fn run<Q: Queue + Send + 'static>(
        self,
        queue: Q,
        resolution: Duration,
    ) -> impl Future<Output = Self::Out> + Send;
}

struct Dq1 {
    n: usize,
}

impl AsyncQueueJob for Dq1 {
    type Out = Figures;
    async fn run<Q: Queue + Send + 'static>(self, mut queue: Q, resolution: Duration) -> Figures {
        let delays = delays(
            self.n,
            Duration::from_secs(1),
            Duration::from_secs(2),
            0x9E37_79B9_7F4A_7C15,
        );
        // Let the runtime (and tickwheel's driver) start before measuring.
        tokio::task::yield_now().await;
        let heap_before = live_bytes();
        let cpu_before = cpu_ns();
        let start = Instant::now();
        for (i, &delay) in delays.iter().enumerate() {
            black_box(queue.insert(i as u64, delay));
        }
        let inserted = start.elapsed();
        let heap_after = live_bytes();
        let mut late_ns: Vec<i64> = Vec::with_capacity(self.n);
        let mut seen = vec![false; self.n];
        let drained = tokio::time::timeout(
            Duration::from_secs(60),
            poll_fn(|cx| {
                // The clock is read again only when an item's deadline is
                // past the last reading: the queue may have read it later.
                let mut now = Instant::now();
                loop {
                    match queue.poll_expired(cx) {
                        Poll::Ready(Some((value, deadline))) => {
                            if deadline > now {
                                now = Instant::now();
                            }
                            let late = lateness_ns(now, deadline);
                            late_ns.push(late);
                            seen[value as usize] = true;
                        }
                        Poll::Ready(None) => return Poll::Ready(()),
                        Poll::Pending => return Poll::Pending,
                    }
                }
            }),
        )
        .await;
        let cpu = cpu_ns() - cpu_before;
        drained.expect("every DQ1 item expires within 60 s");
        assert!(seen.iter().all(|&s| s), "an item never came out");
        let late = Lateness::new(late_ns);
        let mut figures = Figures::new();
        let out = &mut figures;
        emit(out, "cpu_s", cpu as f64 / 1e9);
        emit(out, "insert_ns", inserted.as_nanos() as f64 / self.n as f64);
        emit(
            out,
            "bytes_per_item",
            (heap_after - heap_before) as f64 / self.n as f64,
        );
        emit(out, "p50_ms", late.ms_at(0.50));
        emit(out, "p99_ms", late.ms_at(0.99));
        emit(out, "max_ms", late.max_ms());
        emit(out, "early", late.early() as f64);
        emit(out, "resolution_ms", resolution.as_secs_f64() * 1e3);
        figures
    }
}

/// What a churn operation does besides inserting an item.
#[derive(Clone, Copy)]
enum Churn {
    /// DQ2: a request table with one timeout (10 s) whose replies come in
    /// order: remove the item inserted 10,000 operations before, the one
    /// due first.
    RemoveOldest,
    /// DQ2, random delays (10-20 s): remove the item inserted 10,000
    /// operations before, whose deadline is anywhere in the queue.
    RemoveRandom,
    /// DQ3: idle timeouts (each item has its own, 10-20 s), refreshed on use:
    /// reset a pseudo-random earlier item to its own timeout from now, which
    /// moves its deadline later.
    Refresh,
    /// DQ3, random delays: reset a pseudo-random earlier item to a random
    /// delay (10-20 s), as often earlier as later.
    ResetRandom,
}

struct ChurnJob {
    ops: usize,
    churn: Churn,
}

impl AsyncQueueJob for ChurnJob {
    type Out = Figures;
    async fn run<Q: Queue + Send + 'static>(self, mut queue: Q, _resolution: Duration) -> Figures {
        let table = delays(
            4096,
            Duration::from_secs(10),
            Duration::from_secs(20),
            0x2545_F491_4F6C_DD1D,
        );
        let delay = |i: usize| match self.churn {
            Churn::RemoveOldest => Duration::from_secs(10),
            _ => table[i % table.len()],
        };
        let mut keys: Vec<Q::Key> = (0..STANDING)
            .map(|i| queue.insert(i as u64, delay(i)))
            .collect();
        // A task waits on the queue, as a server's expiry loop would.
        assert!(futures::poll!(poll_fn(|cx| queue.poll_expired(cx))).is_pending());
        tokio::task::yield_now().await;
        let mut pick = 0x9E37_79B9_7F4A_7C15u64;
        let cpu_before = cpu_ns();
        let start = Instant::now();
        for i in STANDING..STANDING + self.ops {
            let key = queue.insert(i as u64, delay(i));
            match self.churn {
                Churn::RemoveOldest | Churn::RemoveRandom => {
                    let slot = i % STANDING;
                    black_box(queue.remove(&keys[slot]));
                    keys[slot] = key;
                }
                Churn::Refresh | Churn::ResetRandom => {
                    keys.push(key);
                    // A pseudo-random earlier item (LCG).
                    pick = pick
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let at = ((pick >> 33) as usize) % keys.len();
                    let again = match self.churn {
                        Churn::Refresh => delay(at),
                        _ => delay(i + 13),
                    };
                    queue.reset(&keys[at], again);
                }
            }
        }
        let elapsed = start.elapsed();
        let cpu = cpu_ns() - cpu_before;
        let mut figures = Figures::new();
        emit(
            &mut figures,
            "ns_per_op",
            elapsed.as_nanos() as f64 / self.ops as f64,
        );
        emit(&mut figures, "cpu_ns_per_op", cpu as f64 / self.ops as f64);
        figures
    }
}

pub fn run_dq(work: Work, sys: Sys, sizes: Sizes, out: &mut Figures) {
    let ops = sizes.ops as usize;
    let churn = |churn: Churn| with_queue(sys, ChurnJob { ops, churn });
    match work {
        Work::Dq1 => out.extend(with_queue(sys, Dq1 { n: sizes.mass })),
        Work::Dq2 => {
            out.extend(churn(Churn::RemoveOldest));
            let random = churn(Churn::RemoveRandom);
            emit(out, "cpu_ns_per_op_random", random["cpu_ns_per_op"]);
        }
        Work::Dq3 => {
            out.extend(churn(Churn::Refresh));
            let random = churn(Churn::ResetRandom);
            emit(out, "cpu_ns_per_op_random", random["cpu_ns_per_op"]);
        }
        _ => unreachable!("not a delay-queue workload"),
    }
}
