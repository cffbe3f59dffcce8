//! A hashed-wheel timer for tokio: cheap, sharded, bounded timers that wake
//! tasks, with the shapes of `tokio::time`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), tickwheel::Elapsed> {
//! use std::time::Duration;
//!
//! let timer = tickwheel::Timer::new();
//! timer.sleep(Duration::from_secs(1)).await;
//! let reply = timer.timeout(Duration::from_millis(300), async { "pong" }).await?;
//! assert_eq!(reply, "pong");
//! # Ok(())
//! # }
//! ```
//!
//! # When to choose it over `tokio::time`
//!
//! `tokio::time` is exact to the millisecond and needs no setup: use it unless
//! timers are a cost you can measure. tickwheel is for services that keep very
//! many coarse timers alive at once (request timeouts, retries, heartbeats,
//! leases) where:
//!
//! - tokio's one timer mutex per runtime, taken by every registration and every
//!   cancellation, shows up in profiles: tickwheel shards its wheel so threads
//!   do not share a lock;
//! - memory per timer matters: a [`Sleep`] is 24 bytes and a registered timer
//!   adds a 32-byte entry (tokio's `Sleep` alone is over 100 bytes);
//! - you want a bound on how many timers can exist ([`Builder::max_pending`]),
//!   a report of what the timer holds ([`Timer::stats`]), and a way to stop
//!   everything at once ([`Timer::shutdown`]).
//!
//! Deadlines round up to the next tick (1 ms by default, tokio's own
//! resolution; a coarser [`Builder::tick`] fires less precisely and costs
//! fewer driver wake-ups when timers are dense). Moving over is a `use`
//! change: [`tickwheel::time`](time) has `tokio::time`'s free functions
//! (`sleep`, `sleep_until`, `timeout`, `timeout_at`, `interval`,
//! `interval_at`) and type names, with the same arguments, output types and
//! methods; or hold a [`Timer`] and call `timer.sleep(d)`,
//! `timer.timeout(d, f)`.
//!
//! # The runtime's default timer and `tickwheel::time`
//!
//! [`Timer::current`] is the current tokio runtime's default timer, started
//! with its driver on that runtime the first time anything uses it, and
//! released when the runtime shuts down; every runtime has its own (each
//! `#[tokio::test]` too). The free functions of [`time`] wait on it, so code
//! written for `tokio::time` moves to the wheel by changing its `use`:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use tickwheel::time::{self, Duration, Instant}; // was: use tokio::time::{...}
//!
//! let start = Instant::now();
//! time::sleep(Duration::from_millis(100)).await;
//! let reply = time::timeout(Duration::from_millis(300), async { "pong" }).await;
//! assert_eq!(reply, Ok("pong"));
//! assert!(start.elapsed() >= Duration::from_millis(100));
//! assert_eq!(tickwheel::Timer::current().stats().fired, 1);
//! # }
//! ```
//!
//! Finding the default timer takes no lock (each thread caches the last
//! runtime's), so a sleep through [`time::sleep`] costs about what one
//! through a held handle costs. To configure a runtime's default timer
//! (tick, slots, `max_pending`, shards), install it before its first use
//! with [`Builder::install`].
//!
//! # Beyond sleep and timeout
//!
//! The jobs wheel timers exist for are one call each, all waiting on the
//! wheel:
//!
//! - **Retries:** [`Timer::retry`] calls an operation until it succeeds,
//!   waiting between attempts for the delays of any `IntoIterator<Item =
//!   Duration>`, such as a [`retry::Backoff`] (`Copy` settings: constant or
//!   exponential, jitter, caps; each retry iterates a fresh run), with `when`, `notify` and `retry_after` hooks.
//! - **Intervals:** [`Timer::interval`] is `tokio::time::interval` on the
//!   wheel, with the same [`MissedTickBehavior`]s; [`Interval`] is a `Stream`.
//! - **Delayed tasks:** [`Timer::schedule`] is Netty's `newTimeout`: a future
//!   spawned after a delay unless its [`ScheduledTask`] is cancelled first.
//! - **Periodic tasks:** [`Timer::schedule_every`] runs heartbeats and
//!   watchdogs without overlap, reporting failed or panicking runs.
//! - **Streams:** [`stream::StreamTimerExt`] gives any `Stream`
//!   tokio-stream's `timeout`, `timeout_repeating` and `throttle`, on the
//!   wheel.
//! - **Metrics:** [`Timer::stats`] reports live and pending timers, the
//!   headroom under `max_pending`, counters that two snapshots subtract into
//!   rates ([`Stats::delta`]), and the lateness histogram's buckets
//!   ([`LatenessHistogram`]) for Prometheus; `{stats}` is one line for logs.
//!   With the `metrics` feature, `timer.publish_metrics(period)` publishes
//!   them through the `metrics` facade, to any exporter.
//! - **Keyed timeouts:** [`DelayQueue`] is tokio-util's `DelayQueue` on the
//!   wheel: session expiry, cache entries and request tables, one queue and
//!   one timer entry for all their items (see [`delay_queue`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//! use tickwheel::retry::Backoff;
//!
//! let timer = tickwheel::Timer::new();
//! let mut calls = 0;
//! let reply = timer
//!     .retry(Backoff::exponential(Duration::from_millis(100)), || {
//!         calls += 1;
//!         let fails = calls < 3;
//!         let call = timer.timeout(Duration::from_millis(300), async move {
//!             if fails { Err("unavailable") } else { Ok("pong") }
//!         });
//!         async move { call.await.unwrap_or(Err("timed out")) }
//!     })
//!     .await;
//! assert_eq!(reply, Ok("pong"));
//! # }
//! ```
//!
//! # Design
//!
//! A timer is a ring of `slots` buckets, one per tick (Netty's
//! `HashedWheelTimer`, after Varghese and Lauck's hashed timing wheel):
//! a deadline's tick is `ceil(deadline / tick)`, and the tick's low bits pick
//! its bucket.
//!
//! - **Shards.** The wheel is split into shards (by default two per worker
//!   thread of the driver's runtime, rounded up to a power of two, at most 64;
//!   see [`Builder::shards`]), each behind its own lock. A thread always uses
//!   the same shard, and threads are spread over the shards round-robin, so
//!   two workers registering and cancelling at once do not wait on each
//!   other. The lock is the crate's own (in its one `unsafe` module, with
//!   the prefetch hints and the clock read, under loom and valgrind in CI): taken
//!   with a compare-and-swap and released with a plain store, one atomic
//!   read-modify-write where `std::sync::Mutex` pays two, so a timeout armed
//!   and cancelled pays two fewer. A thread that finds it taken (by the
//!   driver's pass) spins, yields, then sleeps in steps of 10 µs to 1 ms,
//!   looking again after each, until it is free.
//! - **Entries.** A registered timer is a 32-byte entry in its shard's slab
//!   (fixed pages, reused through a free list), linked into its bucket by
//!   index. A `Sleep` holds its entry's index, and the slot is the sleep's
//!   until the sleep lets go: dropping it unlinks the entry in O(1) and frees
//!   the slot at once, and a fired entry's slot waits for the poll that
//!   completes the sleep (so no key outlives its slot, and no generation is
//!   kept to tell a stale one). Once a shard holds 32K
//!   entries, each of its buckets is four lists, and firing a bucket walks
//!   them side by side, loading each list's next entry ahead: with a
//!   million entries spread over a 32 MB slab, one list made each entry's
//!   cache miss wait for the one before it.
//! - **Lazy registration.** A `Sleep` enters the wheel on its first poll, so a
//!   timeout whose future is ready at once never touches it.
//! - **Wakers kept for the same task.** A registration holds a clone of its
//!   task's waker. A cancel keeps the waker it takes back on its thread, and
//!   that thread's next registration for the same task takes it instead of
//!   cloning (two atomic operations fewer, about 7% of a register and
//!   cancel): a task that arms a timeout, cancels it and arms the next clones
//!   its waker once. Each thread keeps at most one such waker, until a later
//!   cancel there replaces it or the thread exits, and with it the task's
//!   allocation (not its future: a finished task has dropped that).
//! - **Far deadlines.** The ring has buckets for the current and the next
//!   revolution, so any deadline less than one revolution away goes straight
//!   into its bucket. Later deadlines wait in an overflow level, one list per
//!   revolution (an array for the next 64, found with one bit scan, and a map
//!   past them), which moves into the ring a revolution ahead of time: each
//!   timer is moved once, instead of being visited every revolution as in
//!   Netty, and registering costs the same at any distance up to 64
//!   revolutions (about 9 minutes at the default 1 ms x 8192).
//! - **The driver** is one task on the tokio runtime and one `tokio::time`
//!   sleep, armed for the next non-empty bucket (found through an occupancy
//!   bitmap). When tokio fires that sleep, the driver processes every due
//!   bucket of every shard that has one, wakes the tasks outside the locks,
//!   and arms the sleep for the next busy tick, all inside tokio's own timer
//!   processing: the wheel moves whenever tokio's clock does, however many
//!   tasks are queued ahead of the driver's. With nothing registered it holds
//!   no tokio timer and never wakes. A registration earlier than the
//!   driver's target re-arms that sleep on the registering thread, and does
//!   nothing more (it never wakes another task); later ones touch nothing
//!   shared. Should tokio stop calling the driver back, the driver task's
//!   backstop, a sleep of its own two ticks (at least 2 ms) behind the
//!   earliest due tick, runs the pass instead; while tokio does call back,
//!   it backs off to one look every 32 ticks (at least 32 ms). No user code
//!   runs on the driver, only `Waker::wake`.
//! - **Shutdown.** [`Timer::shutdown`], or the runtime dropping the driver
//!   task, wakes every registered task: those sleeps complete, and timeouts
//!   return [`Elapsed`] with [`Elapsed::is_shutdown`]. No task is left
//!   waiting on a dead timer. A new wait started afterwards panics (the
//!   `try_*` forms return [`Error::is_shutdown`]), so no loop can spin on a
//!   dead timer.
//!
//! # Precision
//!
//! - A timer never fires before its deadline, as measured by its timer's
//!   clock: the clock of the runtime hosting the driver, wherever the sleep is
//!   made or polled. (The only exception is shutdown, which ends every wait;
//!   [`Elapsed::is_shutdown`] tells those apart.)
//! - Deadlines round up to the next tick boundary, and a sleep completes no
//!   later than `tokio::time::sleep_until` of that boundary would. Ticks
//!   count from the moment the timer was built, moved back to the last
//!   millisecond of tokio's own timer grid when the tick is a whole number
//!   of milliseconds and the clock runs (so every boundary is a millisecond
//!   at which tokio fires its own timers, and a wheel sleep is due in the
//!   same pass as a `tokio::time` sleep with the same deadline); on a clock
//!   tests can pause, from the build instant itself. So: at most one tick
//!   late (the 1 ms default: level with `tokio::time`), plus under 1 ms of
//!   tokio's own rounding for ticks that are not whole milliseconds, plus
//!   the time the runtime takes to run the task.
//! - The driver processes due ticks inside tokio's own timer processing, so
//!   after `tokio::time::advance(d).await` every wheel sleep due by then has
//!   been woken, as every `tokio::time::Sleep` has; and on a busy runtime,
//!   where tokio processes its timers every few dozen task polls whatever
//!   the run queue holds, wheel sleeps are woken in those same passes.
//! - If tokio never calls the driver back, a due sleep still completes by
//!   its tick boundary plus two ticks (at least 2 ms), by the driver task's
//!   backstop ([`Stats::backstop_passes`] counts those). If tokio stops
//!   calling back after it did, the first sleeps due after that complete
//!   by their boundary plus 32 ticks (at least 32 ms) at most: the backstop
//!   looks that rarely while the driver is called back; every later one
//!   by its boundary plus two ticks again.
//! - Zero and past deadlines complete on the first poll, without registering:
//!   `sleep(Duration::ZERO)`, and instants that have passed given to
//!   `sleep_until`, `timeout_at` or `reset`. On a paused test clock, so does
//!   a `sleep(d)` whose `d` an `advance` passed before its first poll; on a
//!   running clock the driver wakes such a sleep on its next pass instead
//!   (the first poll skips a second clock read).
//! - Deadlines too far away to represent (beyond about 292 years, such as
//!   `Duration::MAX`) saturate: they never fire, never overflow, cost the
//!   driver no wake-up, and are still woken by shutdown.
//! - Sleeps that complete without waiting take part in tokio's cooperative
//!   budget, which refuses each of them once at most (the poll after the
//!   yield completes it); one that fired after waiting completes whatever the
//!   budget, and a [`Timeout`] checks its deadline outside the budget when
//!   its inner future spent it, so a busy future never keeps its timer from
//!   firing.
//!
//! Because the driver sleeps on tokio's clock, tests with
//! `#[tokio::test(start_paused = true)]` and `tokio::time::advance` drive the
//! wheel exactly and deterministically.
//!
//! # Executors
//!
//! The driver needs a tokio runtime with its time driver enabled
//! ([`Builder::build`] returns [`BuildError::NoTimeDriver`] otherwise). The futures
//! do not: a [`Sleep`] or [`Timeout`] can be awaited on any executor, as long
//! as the driver's runtime is running.
//!
//! # Cargo features
//!
//! None is on by default.
//!
//! - **`test-util`**: [`time::pause`], [`time::advance`] and
//!   [`time::resume`], tokio's test clock re-exported (it turns on tokio's
//!   `test-util`), so a test module's `use tokio::time;` can become
//!   `use tickwheel::time;`.
//! - **`http`**: the module `tickwheel::http` has tower-http's request
//!   timeout (`TimeoutLayer`, `Timeout`), answering `408 Request Timeout`
//!   itself, with its deadlines on the wheel, on the `http` crate's types
//!   (it turns on `tower` too).
//! - **`backon`**: [`Timer`] implements `backon::Sleeper`, so
//!   `retryable.retry(backoff).sleep(timer.clone())` waits out backon's
//!   backoff on the wheel.
//! - **`hyper`**: [`Timer`] implements `hyper::rt::Timer`, so
//!   `builder.timer(timer.clone())` runs hyper 1.x's timers (the HTTP/1
//!   header-read timeout, HTTP/2 keep-alive pings) on the wheel. Where
//!   hyper-util's `.timer(TokioTimer::new())` was, `.timer(HyperTimer::new())`
//!   (`tickwheel::HyperTimer`) can be made anywhere, before any runtime, and
//!   puts each sleep on the default timer of the runtime current when hyper
//!   makes it, as [`time::sleep`] does.
//! - **`metrics`**: the module `tickwheel::metrics`
//!   publishes [`Timer::stats`] through the `metrics` facade, for any
//!   exporter (Prometheus, StatsD, OpenTelemetry):
//!   `timer.publish_metrics(period)` spawns a task that records gauges
//!   (`tickwheel_live`, `tickwheel_pending`, `tickwheel_headroom`),
//!   counters (`tickwheel_fired_total`, `tickwheel_cancelled_total`,
//!   `tickwheel_driver_wakeups_total`, ...) and the lateness histogram
//!   (`tickwheel_lateness_seconds`); `metrics::Publisher` adds labels, a
//!   prefix, or records one snapshot in a loop of your own.
//! - **`tower`**: the module `tickwheel::tower` has tower's timeout middleware
//!   (`TimeoutLayer`, `Timeout`) with its deadlines on the wheel, and
//!   tower's retry backoff traits (`MakeBackoff`, `Backoff`) for
//!   [`retry::Backoff`], so `tower::retry` waits on the wheel too.
//! - **`tracing`**: the driver emits `tracing` events under the `tickwheel`
//!   target: each wake-up at `TRACE` (fields `tick`, `ticks` processed since
//!   the last wake-up, timers `fired`, and `next_tick` it will wake for, or
//!   `u64::MAX` when it parks with nothing registered), and at `DEBUG` the
//!   driver starting and stopping (with the reason) and the timer shutting
//!   down (`woken`: how many waiting tasks it woke). Without the feature the
//!   calls compile to nothing.
//!
//! The `backon` and `hyper` examples are on their trait impls, in
//! [`Timer`]'s documentation (and `HyperTimer`'s own); the `tower` and
//! `http` ones in their modules'.
#![cfg_attr(
    feature = "tracing",
    doc = r#"
With `tracing`, any subscriber sees the driver's events; with
`tracing-subscriber`, `tracing_subscriber::fmt().with_env_filter("tickwheel=trace").init()`
prints them. Here a small subscriber (hidden) counts them:

```
# use std::sync::atomic::{AtomicUsize, Ordering};
# use std::sync::Arc;
# use tracing::{span, Event, Metadata};
# #[derive(Clone, Default)]
# struct Count(Arc<AtomicUsize>);
# impl tracing::Subscriber for Count {
#     fn enabled(&self, meta: &Metadata<'_>) -> bool { meta.target() == "tickwheel" }
#     fn new_span(&self, _: &span::Attributes<'_>) -> span::Id { span::Id::from_u64(1) }
#     fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
#     fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
#     fn event(&self, _: &Event<'_>) { self.0.fetch_add(1, Ordering::SeqCst); }
#     fn enter(&self, _: &span::Id) {}
#     fn exit(&self, _: &span::Id) {}
# }
# #[tokio::main(flavor = "current_thread", start_paused = true)]
# async fn main() {
use std::time::Duration;

let events = Count::default();
let _guard = tracing::subscriber::set_default(events.clone());
let timer = tickwheel::Timer::new();
// DEBUG driver started; TRACE driver wake-up tick=2 ticks=2 fired=1 ...
timer.sleep(Duration::from_millis(20)).await;
// DEBUG timer shut down woken=0
timer.shutdown();
assert!(events.0.load(Ordering::SeqCst) >= 3);
# }
```
"#
)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
// One module may opt out, with a `// SAFETY:` comment on each block:
// `engine::raw`, the shard's lock released with a store (W1, W2, W7), a
// cache hint on a fired timer's task (W9) and a new sleep's clock read
// (W1, W2), each shown to pay in BENCHMARKS.md.
#![deny(unsafe_code)]
// docs.rs builds with `--cfg docsrs`: feature-gated items say which feature
// they need.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod ambient;
mod builder;
pub mod delay_queue;
mod engine;
mod error;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod integrations;
mod interval;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod retry;
mod schedule;
mod sleep;
mod stats;
pub mod stream;
pub mod time;
mod timeout;
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

// The rule for the public surface: every type a `Timer` method returns, and
// every error, is at the crate root (as `tokio::time` has `Sleep`, `Timeout`
// and `Interval`); the settings that configure one of them live in its
// module (`retry::Backoff`, `retry::Jitter`). The stream adapters are
// returned by an extension trait on streams, not by a `Timer` method: they
// live with it in `stream`, as tokio-stream keeps its adapters apart.
pub use crate::builder::Builder;
pub use crate::delay_queue::DelayQueue;
pub use crate::error::{BuildError, Elapsed, Error, TryCurrentError};
pub use crate::interval::{Interval, MissedTickBehavior};
pub use crate::retry::Retry;
pub use crate::schedule::{PeriodicTask, RunError, RunOutcome, ScheduleEvery, ScheduledTask};
pub use crate::sleep::Sleep;
pub use crate::stats::{Lateness, Stats};
pub use crate::stats::{LatenessBucket, LatenessHistogram};
pub use crate::timeout::Timeout;
pub use crate::timer::Timer;

#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub use crate::integrations::HyperTimer;
