//! The state behind a [`Timer`](crate::Timer) handle, shared with the driver
//! task: the handle (`timer.rs`) and the driver (`driver.rs`) both reach down
//! to it, and it reaches up to neither.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::engine::clock::{Clock, TimeSource};
use crate::engine::shard::{self, Shard};
use crate::engine::shared::Shared;
use crate::engine::tokio_compat::on_tokio_grid;
use crate::engine::trace::debug;
use crate::engine::wheel::TimerWheel;

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
pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) shards: Box<[Arc<Shard>]>,
    /// Driver wake-ups, for `Stats::wakeups`.
    pub(crate) wakeups: AtomicU64,
    /// The last tick the driver processed, for `Timer::now`.
    pub(crate) clock_tick: AtomicU64,
    /// Wakers that panicked when woken (the driver survives them).
    pub(crate) wake_panics: AtomicU64,
    /// Passes the driver task's backstop ran because the wheel had fallen
    /// behind (tokio did not call the driver's hook back in time).
    pub(crate) backstop_passes: AtomicU64,
    /// Times the backstop found the wheel behind while another party held
    /// the pass lock: its pass was left to that party.
    pub(crate) backstop_lock_held: AtomicU64,
    /// Driver passes that panicked (contained: see `requests.rs`).
    pub(crate) pass_panics: AtomicU64,
    /// The timer looked for tokio's millisecond grid and did not find it
    /// (see `tokio_compat.rs`, assumption 2).
    pub(crate) grid_missed: bool,
    /// The runtime hosting the driver; scheduled tasks are spawned on it.
    pub(crate) runtime: Handle,
    /// Set once a shutdown has drained every shard, just before
    /// `drained_told` is told: the shutdown flag itself is set before the
    /// drain.
    drained: AtomicBool,
    /// Told when `drained` is set, for whatever waits on something other
    /// than the wheel for the timer's end (see [`Inner::drained`]).
    drained_told: Arc<Notify>,
    pub(crate) config: Config,
}

impl Inner {
    /// The state of a new timer whose clock is `handle`'s runtime's; the
    /// caller spawns the driver on it. That runtime has its time driver
    /// (the builder and the default timer check it first).
    pub(crate) fn new(config: Config, handle: &Handle) -> Arc<Inner> {
        // Read the origin on the runtime's clock: a paused test runtime's
        // clock is not the system clock.
        let source = TimeSource::for_runtime(handle);
        let _runtime = handle.enter();
        let now = Instant::now();
        // On a clock that runs (every runtime's, unless tokio's test clock
        // is compiled in and the runtime is current-thread, whose driver
        // meets tokio's grid its own way: see `tokio_compat.rs`), whole
        // milliseconds of tick count from a point of tokio's grid.
        let grid =
            (!source.may_pause() && config.tick_ns % 1_000_000 == 0).then(|| on_tokio_grid(now));
        let grid_missed = grid == Some(None);
        if grid_missed {
            debug!(
                "tokio's millisecond grid not found: sleeps may fire up to 1 ms later than tokio's",
                tick_ns = config.tick_ns
            );
        }
        let clock = Clock::new(grid.flatten().unwrap_or(now), config.tick_ns);
        let shared = Arc::new(Shared::new(clock, source, config.max_pending));
        shared.look_for_pause();
        let count = config.shards.unwrap_or_else(|| default_shards(handle));
        let wheel = || TimerWheel::new(config.slots, config.tick_ns);
        let shards = (0..count)
            .map(|_| Arc::new(Shard::new(wheel(), shared.clone())))
            .collect();
        Arc::new(Inner {
            shared,
            shards,
            wakeups: AtomicU64::new(0),
            clock_tick: AtomicU64::new(0),
            wake_panics: AtomicU64::new(0),
            backstop_passes: AtomicU64::new(0),
            backstop_lock_held: AtomicU64::new(0),
            pass_panics: AtomicU64::new(0),
            grid_missed,
            runtime: handle.clone(),
            drained: AtomicBool::new(false),
            drained_told: Arc::new(Notify::new()),
            config,
        })
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
        // counters are final. Only then is the drain announced, so a last
        // look at the statistics sees every cancellation.
        self.drained.store(true, Ordering::Release);
        self.shared.nudge();
        if first || total > 0 {
            debug!("timer shut down", woken = total as u64);
        }
        // Last: this may be the driver's exit guard, and the tasks above
        // are woken already whatever a waiter's waker does.
        self.drained_told.notify_waiters();
        total
    }

    /// Resolves once the timer has shut down and drained every shard (at
    /// once if it already has), so the statistics read after it count every
    /// timer the shutdown cancelled. It borrows nothing, so it can be kept
    /// after whatever made it is gone, and polled by any waker (it is woken
    /// on the thread that shuts the timer down, at the end of the shutdown).
    /// Cancel safe: dropping it loses nothing, the flag is rechecked.
    // Its one user is the `metrics` feature's publisher.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn drained(self: &Arc<Self>) -> impl Future<Output = ()> + Send + use<> {
        let inner = Arc::clone(self);
        let told = Arc::clone(&self.drained_told).notified_owned();
        async move {
            // `told` takes every `notify_waiters` from its making on, polled
            // or not (tokio's `Notify::notified` guarantees it), so it was
            // waiting before the flag is read: a shutdown after the read
            // wakes it (the flag is set before `notify_waiters`). The flag
            // is the drain's, not the shutdown flag, which is set before the
            // shards are drained.
            if !inner.drained.load(Ordering::Acquire) {
                told.await;
            }
        }
    }

    /// The `Sleep`s and `Timeout`s of this timer that exist now: each holds
    /// a reference to its shard, and the shards are otherwise only held
    /// here.
    pub(crate) fn sleeps(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| Arc::strong_count(shard) - 1)
            .sum()
    }

    /// Sleeps and timeouts that exist now (created, not dropped): the
    /// capacity counter of a bounded timer (exactly what `max_pending`
    /// refuses at), or else [`Inner::sleeps`], so an unbounded timer pays
    /// nothing on the hot path for this figure.
    pub(crate) fn live(&self) -> usize {
        self.shared.live().unwrap_or_else(|| self.sleeps())
    }

    /// Timers registered in the wheel now, over every shard (each locked in
    /// turn).
    pub(crate) fn pending(&self) -> usize {
        self.shards.iter().map(|shard| shard.pending()).sum()
    }

    /// The earliest tick any shard needs processed (`u64::MAX`: none), read
    /// without the locks (see `Shard::due`).
    pub(crate) fn earliest_due(&self) -> u64 {
        self.shards
            .iter()
            .fold(u64::MAX, |earliest, shard| earliest.min(shard.due()))
    }

    #[inline]
    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.shards[shard::index_for_current_thread(self.shards.len())]
    }
}

/// Two shards per worker thread of the driver's runtime, rounded up to a
/// power of two (at most 64, capping the driver's scan), so each worker
/// tends to have a wheel of its own: 2 on a current-thread runtime (its
/// thread, and one for whatever else uses the timer), 4 on 2 workers. A
/// driver pass reads every shard's `due` and locks each shard with
/// something due, so a current-thread runtime on a 64-core machine should
/// not pay for 64 of them.
pub(crate) fn default_shards(handle: &Handle) -> usize {
    let workers = handle.metrics().num_workers().max(1);
    (workers * 2).next_power_of_two().min(64)
}
