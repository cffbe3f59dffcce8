//! The driver: the one task that advances every shard's wheel.
//!
//! It runs on the tokio runtime and sleeps on tokio's clock, so a paused test
//! clock drives it exactly. Each wake-up it reads the clock once, advances each
//! shard up to the current tick (waking tasks in batches, outside the shard's
//! lock), and then sleeps until the earliest tick any shard still needs, or
//! parks on a `Notify` when nothing is registered: an idle timer costs no
//! wake-ups at all. A registration earlier than the driver's target notifies
//! it (see `shared.rs` for that handshake).
//!
//! The driver never runs user code except `Waker::wake`; a waker that panics
//! is counted and skipped. When the task ends for any reason, including the
//! runtime dropping it at shutdown, a guard shuts the timer down so that every
//! waiting task is woken instead of waiting forever.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use crate::clock::Clock;
use crate::timer::Inner;
use crate::trace::{debug, trace};
use crate::unwind;
use crate::wheel::Advance;

/// Wakers collected under a shard lock before it is released to wake them.
const WAKE_BATCH: usize = 64;

/// How often an orphaned driver (no `Timer` handle left, nothing registered,
/// but some unpolled sleep still alive) checks whether it may retire.
const ORPHAN_RECHECK: Duration = Duration::from_secs(1);

/// Shuts the timer down when the driver ends, however it ends.
struct ShutDownOnExit(Arc<Inner>);

impl Drop for ShutDownOnExit {
    fn drop(&mut self) {
        self.0.shut_down();
        debug!("driver stopped");
    }
}

/// Wakers taken out of the wheel and not yet woken. Wakes them if dropped
/// early (a panic in the driver), since their entries have already left the
/// wheel and shutdown could no longer find them.
struct Batch<'a> {
    wakers: Vec<Waker>,
    panics: &'a AtomicU64,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        wake_all(&mut self.wakers, self.panics);
    }
}

/// The driver task for `inner`.
///
/// The shutdown guard is made here, before the task exists, so that a task
/// dropped before its first poll (its runtime shut down first, or was already
/// gone when the timer was built) still shuts the timer down.
pub(crate) fn run(inner: Arc<Inner>) -> impl Future<Output = ()> + Send + 'static {
    let guard = ShutDownOnExit(inner);
    async move {
        drive(&guard.0).await;
        drop(guard);
    }
}

async fn drive(inner: &Inner) {
    let shared = &inner.shared;
    let clock = shared.clock;
    let mut batch = Batch {
        wakers: Vec::with_capacity(WAKE_BATCH),
        panics: &inner.wake_panics,
    };
    let sleep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sleep);
    debug!("driver started", shards = inner.shards.len() as u64);
    loop {
        if shared.is_shutdown() {
            debug!("driver stopping: the timer was shut down");
            return;
        }
        inner.wakeups.fetch_add(1, Ordering::Relaxed);
        let next = advance_all(inner, &clock, &mut batch);
        shared.end_scan(next.unwrap_or(u64::MAX));
        let wake_at = match next {
            Some(tick) => Some(clock.tick_instant(tick)),
            None if inner.is_orphaned() => {
                if inner.no_sleeps_alive() {
                    debug!("driver stopping: no timer handle or sleep is left");
                    return;
                }
                Some(Instant::now() + ORPHAN_RECHECK)
            }
            None => None,
        };
        match wake_at {
            Some(at) => {
                sleep.as_mut().reset(at);
                tokio::select! {
                    biased;
                    () = shared.notified() => {}
                    () = &mut sleep => {}
                }
            }
            None => shared.notified().await,
        }
    }
}

/// Processes every due tick of every shard; returns the earliest tick the
/// driver must wake for, or `None` if nothing is registered.
fn advance_all(inner: &Inner, clock: &Clock, batch: &mut Batch<'_>) -> Option<u64> {
    inner.shared.begin_scan();
    let (now_ns, now_tick) = clock.now_tick(Instant::now());
    let mut next: Option<u64> = None;
    let mut fired = 0u64;
    for shard in inner.shards.iter() {
        loop {
            let step = shard
                .lock()
                .advance(now_tick, now_ns, &mut batch.wakers, WAKE_BATCH);
            fired += batch.wakers.len() as u64;
            wake_all(&mut batch.wakers, batch.panics);
            match step {
                Advance::Full => continue,
                Advance::Idle => break,
                Advance::Until(tick) => {
                    next = Some(next.map_or(tick, |n| n.min(tick)));
                    break;
                }
            }
        }
    }
    let before = inner.clock_tick.fetch_max(now_tick, Ordering::Relaxed);
    trace!(
        "driver wake-up",
        tick = now_tick,
        ticks = now_tick.saturating_sub(before),
        fired = fired,
        next_tick = next.unwrap_or(u64::MAX),
    );
    next
}

/// Wakes and empties `wakers`. A waker that panics is counted in `panics`
/// and does not stop the others, even if its panic payload panics again when
/// dropped. Wakers are taken out one at a time, so whatever happens, every
/// waker still in the vector stays there for the caller's guard to wake.
pub(crate) fn wake_all(wakers: &mut Vec<Waker>, panics: &AtomicU64) {
    while let Some(waker) = wakers.pop() {
        if !unwind::run_contained(|| waker.wake()) {
            panics.fetch_add(1, Ordering::Relaxed);
        }
    }
}
