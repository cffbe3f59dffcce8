//! The state behind a [`Timer`](crate::Timer) handle, shared with the driver
//! task: the handle (`timer.rs`) and the driver (`driver.rs`) both reach down
//! to it, and it reaches up to neither.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::engine::clock::{Clock, TimeSource};
use crate::engine::shard::{self, Shard};
use crate::engine::shared::Shared;
use crate::engine::trace::debug;
use crate::engine::wheel::Wheel;

/// Validated settings, from [`Builder`](crate::Builder).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) tick_ns: u64,
    pub(crate) slots: usize,
    pub(crate) max_pending: Option<usize>,
    /// A power of two, or `None` for the default (see [`default_shards`]).
    pub(crate) shards: Option<usize>,
}

/// Everything behind a [`Timer`](crate::Timer) handle, shared with the driver task.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) shards: Box<[Arc<Shard>]>,
    /// Driver wake-ups, for `Stats::wakeups`.
    pub(crate) wakeups: AtomicU64,
    /// The last tick the driver processed, for `Timer::now`.
    pub(crate) clock_tick: AtomicU64,
    /// Wakers that panicked when woken (the driver survives them).
    pub(crate) wake_panics: AtomicU64,
    /// The runtime hosting the driver; scheduled tasks are spawned on it.
    pub(crate) runtime: Handle,
    /// Told when the timer shuts down, for tasks that wait on something
    /// other than the wheel (the metrics publisher waits on `tokio::time`,
    /// so that it is not a timer of its own in the stats it reports).
    stopped: Notify,
    /// Set once a shutdown has drained every shard, just before `stopped`
    /// is told: the shutdown flag itself is set before the drain.
    drained: AtomicBool,
    config: Config,
}

impl Inner {
    /// The state of a new timer whose clock is `handle`'s runtime's; the
    /// caller spawns the driver on it.
    pub(crate) fn new(config: Config, handle: &Handle) -> Arc<Inner> {
        // Read the origin on the runtime's clock: a paused test runtime's
        // clock is not the system clock.
        let origin = {
            let _guard = handle.enter();
            Instant::now()
        };
        let shared = Arc::new(Shared::new(
            Clock::new(origin, config.tick_ns),
            TimeSource::for_runtime(handle),
            config.max_pending,
        ));
        {
            let _guard = handle.enter();
            shared.look_for_pause();
        }
        let count = config.shards.unwrap_or_else(|| default_shards(handle));
        let shards = (0..count)
            .map(|_| {
                Arc::new(Shard::new(
                    Wheel::new(config.slots, config.tick_ns),
                    shared.clone(),
                ))
            })
            .collect();
        Arc::new(Inner {
            shared,
            shards,
            wakeups: AtomicU64::new(0),
            clock_tick: AtomicU64::new(0),
            wake_panics: AtomicU64::new(0),
            runtime: handle.clone(),
            stopped: Notify::new(),
            drained: AtomicBool::new(false),
            config,
        })
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Cancels every registered timer, wakes its task and refuses new ones.
    /// Returns how many were pending. Idempotent.
    pub(crate) fn shut_down(&self) -> usize {
        let first = self.shared.set_shutdown();
        let mut wakers = Vec::new();
        let mut total = 0;
        for shard in self.shards.iter() {
            total += shard.close_and_drain(&mut wakers, &self.wake_panics);
        }
        // Every shard has been drained by now, by this call or by a
        // concurrent one holding its lock before this call took it: the
        // counters are final. Only then is the shutdown announced, so a
        // last look at the statistics sees every cancellation.
        self.drained.store(true, Ordering::Release);
        self.shared.nudge();
        self.stopped.notify_waiters();
        if first || total > 0 {
            debug!("timer shut down", woken = total as u64);
        }
        total
    }

    /// Resolves once the timer has shut down and drained every shard (at
    /// once if it already has), so the statistics read after it count every
    /// timer the shutdown cancelled. Cancel safe: dropping it loses nothing,
    /// the flag is rechecked.
    #[cfg(feature = "metrics")]
    pub(crate) async fn shut_down_notice(&self) {
        let notified = self.stopped.notified();
        tokio::pin!(notified);
        // Registered before the flag is read: a shutdown after the read
        // finds this waiter (the flag is set before `notify_waiters`). The
        // flag is the drain's, not the shutdown flag, which is set before
        // the shards are drained.
        notified.as_mut().enable();
        if self.drained.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }

    /// No `Sleep` or `Timeout` of this timer exists any more (each holds a
    /// reference to its shard; the shards are otherwise only held here).
    pub(crate) fn no_sleeps_alive(&self) -> bool {
        self.shards
            .iter()
            .all(|shard| Arc::strong_count(shard) == 1)
    }

    /// Sleeps and timeouts that exist now (created, not dropped): the
    /// capacity counter of a bounded timer (exactly what `max_pending`
    /// refuses at), or else the references to the shards beyond this
    /// struct's own, one per sleep (as in `no_sleeps_alive`), so an
    /// unbounded timer pays nothing on the hot path for this figure.
    pub(crate) fn live(&self) -> usize {
        self.shared.live().unwrap_or_else(|| {
            self.shards
                .iter()
                .map(|shard| Arc::strong_count(shard) - 1)
                .sum()
        })
    }

    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.shards[shard::index_for_current_thread(self.shards.len())]
    }
}

/// Two shards per worker thread of the driver's runtime, rounded up to a
/// power of two (at most 64, capping the driver's scan), so each worker
/// tends to have a wheel of its own: 2 on a current-thread runtime (its
/// thread, and one for whatever else uses the timer), 4 on 2 workers. Every
/// driver pass locks every shard, so a current-thread runtime on a 64-core
/// machine should not pay for 64 of them.
pub(crate) fn default_shards(handle: &Handle) -> usize {
    let workers = handle.metrics().num_workers().max(1);
    (workers * 2).next_power_of_two().min(64)
}
