//! The engine: what turns deadlines into wake-ups. Nothing in here is public
//! API (the lateness histogram each wheel records into is `stats`'s); the
//! modules above it (`Timer`,
//! `Sleep`, `Timeout`, `Interval`, the features built on them) reach down into
//! it, and it reaches up to none of them.
//!
//! ```text
//!  Sleep / Timeout / Interval / DelayQueue ...   (crate root and features)
//!     |  register, reset, cancel, poll                        ^ wake
//!     v                                                       |
//!  shard: one wheel behind its own lock ----------> driver: passes (scan every
//!     |  (kick: "arm for the target")       |       busy shard, wake outside the
//!  wheel: ring + overflow + slab            |       locks, arm the alarm), run by
//!                                           |       whoever asks first:
//!  shared: clock, target, backstop tick,    |        - hook (alarm's waker, in
//!          capacity, shutdown, notice ------+          tokio's timer processing)
//!                                                    - registration (re-arm only)
//!  alarm: the driver's one tokio sleep               - task (start, notices,
//!  tokio_compat: what is assumed of tokio              backstop)
//! ```
//!
//! - [`state`]: the state behind a `Timer` handle, shared with the driver.
//! - [`shard`]: one wheel behind its own lock, and the registration protocol.
//! - [`shared`]: what every shard, the driver and every sleep can reach.
//! - [`spare`]: the waker a thread's last cancel kept, for that thread's
//!   next registration of the same task.
//! - [`wheel`]: the hashed wheel (ring, overflow, slab), generic over what
//!   it holds: a shard's wakers, or a `DelayQueue`'s items.
//! - [`driver`]: the task that advances the wheels on tokio's clock.
//! - [`alarm`]: the driver's tokio sleep, armed for the next busy tick.
//! - [`backstop`]: the driver task's own tokio sleep, for when tokio does
//!   not call the driver back.
//! - [`pass_lock`]: one driver pass at a time, run by whoever asks first.
//! - [`notice`]: the one way to the driver task.
//! - [`clock`], [`context`]: the timer's clock, and which runtime is current.
//! - [`tokio_compat`]: what the engine assumes of tokio beyond its
//!   documented API, each assumption with the test that guards it.
//! - [`raw`]: the crate's `unsafe` code, all of it: the shard's lock,
//!   released with a store, the cache hint for a fired timer's task, and
//!   the monotonic clock read for a new sleep's deadline (with what it
//!   assumes of std's `Instant`, and the test that guards it).
//! - [`sync`], [`unwind`], [`trace`]: the primitives the loom models swap,
//!   panic containment for wakers, and diagnostics.

pub(crate) mod alarm;
pub(crate) mod backstop;
pub(crate) mod clock;
pub(crate) mod context;
pub(crate) mod driver;
pub(crate) mod notice;
pub(crate) mod pass_lock;
pub(crate) mod raw;
pub(crate) mod requests;
pub(crate) mod shard;
pub(crate) mod shared;
pub(crate) mod spare;
pub(crate) mod state;
pub(crate) mod sync;
pub(crate) mod tick_div;
pub(crate) mod tokio_compat;
pub(crate) mod trace;
pub(crate) mod unwind;
pub(crate) mod wheel;

#[cfg(all(test, tickwheel_loom))]
mod loom_tests;
