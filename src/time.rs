//! `tokio::time`'s free functions, on the current runtime's default wheel
//! timer: `use tickwheel::time;` in place of `use tokio::time;`.
//!
//! [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`]
//! and [`interval_at`] take the same arguments as tokio's and return
//! tickwheel's [`Sleep`], [`Timeout`] and [`Interval`], which have tokio's
//! methods. They wait on [`Timer::current`]: one timer per tokio runtime,
//! started with its driver on that runtime the first time it is used,
//! shut down and released when the runtime ends. To configure a runtime's
//! timer (tick, slots, `max_pending`, shards), install it before its first
//! use with [`Builder::install`](crate::Builder::install).
//!
//! Finding the current runtime's timer takes no lock: each thread remembers
//! the last one it used, and asks tokio which runtime is current (one clone
//! of its handle, as `tokio::time::sleep` does), so a sleep through these
//! functions costs about what `tokio::time::sleep` costs, and a little more
//! than `timer.sleep(d)` on a held [`Timer`] (the lookup; BENCHMARKS.md has
//! the figures): in a hot loop, hold one (`let timer = Timer::current();`).
//!
//! What stays different from `tokio::time` is the wheel's: deadlines round
//! up to the next tick (1 ms by default, counted from the timer's start),
//! never early; a zero `period` given to `interval` becomes one tick
//! instead of a panic.
//!
//! # Testing: `pause`, `advance`, `resume`
//!
//! With the `test-util` feature (which turns on tokio's), [`pause`],
//! [`advance`] and [`resume`] are here too. They *are* tokio's (re-exported,
//! not wrapped): the wheel's driver sleeps on tokio's clock, so pausing or
//! advancing that clock drives the wheel exactly as it drives
//! `tokio::time`'s own sleeps. A test module that did `use tokio::time;` and
//! calls `time::advance(..)` keeps compiling after the switch to
//! `use tickwheel::time;`:
//!
//! ```toml
//! [dependencies]
//! tickwheel = "0.1"
//!
//! [dev-dependencies]
//! tickwheel = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! (The dev-dependency needs the same source as the dependency: with a path
//! or git dependency, repeat its `path` or `git` there.)
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use tickwheel::time::{self, Duration, Instant};
//!
//! let start = Instant::now();
//! time::sleep(Duration::from_millis(100)).await;
//! assert!(start.elapsed() >= Duration::from_millis(100));
//!
//! let slow = std::future::pending::<()>();
//! let err = time::timeout(Duration::from_millis(50), slow).await.unwrap_err();
//! assert!(!err.is_shutdown());
//!
//! let mut ticks = time::interval(Duration::from_millis(10));
//! ticks.tick().await; // at once
//! ticks.tick().await; // 10 ms later
//! # }
//! ```
//!
//! # Panics
//!
//! Every function panics outside a tokio runtime, as tokio's do, and in a
//! runtime without its time driver; otherwise as the [`Timer`] method of the
//! same name (after the default timer was shut down by hand, or at its
//! `max_pending` limit). For errors instead, use the `try_*` methods of
//! [`Timer::try_current`].

use std::future::IntoFuture;

use crate::ambient;
use crate::error::or_capacity_panic;
use crate::sleep::{Refuse, Until};
use crate::timer::Timer;

pub use std::time::Duration;
pub use tokio::time::Instant;

/// tokio's test clock, re-exported so that `use tickwheel::time;` covers
/// what `use tokio::time;` did in tests. (Feature `test-util`.)
///
/// These are [`tokio::time::pause`], [`tokio::time::advance`] and
/// [`tokio::time::resume`] themselves: the wheel's driver sleeps on tokio's
/// clock, so they drive every wheel timer of the runtime too.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use tickwheel::time::{self, Duration, Instant};
/// use tokio_test::{assert_pending, assert_ready, task};
///
/// time::pause();
/// let start = Instant::now();
/// let mut sleep = task::spawn(time::sleep(Duration::from_secs(5)));
/// assert_pending!(sleep.poll());
///
/// time::advance(Duration::from_secs(5)).await;
/// assert!(sleep.is_woken());
/// assert_ready!(sleep.poll());
/// assert_eq!(start.elapsed(), Duration::from_secs(5));
/// time::resume();
/// # }
/// ```
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub use tokio::time::{advance, pause, resume};

pub use crate::interval::{Interval, MissedTickBehavior};
pub use crate::sleep::Sleep;
pub use crate::timeout::Timeout;

/// The errors of the futures in [`time`](crate::time), as
/// `tokio::time::error`: [`Elapsed`](error::Elapsed) from a [`Timeout`],
/// and [`Error`](error::Error) from a `try_*` method of [`Timer`]
/// (with tokio's `is_shutdown()` and `is_at_capacity()`).
pub mod error {
    pub use crate::error::{Elapsed, Error};
}

/// Waits until `duration` has elapsed, like [`tokio::time::sleep`], on the
/// current runtime's default timer.
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration};
///
/// time::sleep(Duration::from_secs(1)).await;
/// # }
/// ```
#[track_caller]
#[inline]
pub fn sleep(duration: Duration) -> Sleep {
    or_capacity_panic(ambient::sleep(Until::After(duration), Refuse::Panic))
}

/// Waits until `deadline` is reached, like [`tokio::time::sleep_until`], on
/// the current runtime's default timer. A deadline already passed completes
/// on the first poll.
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(250);
/// time::sleep_until(deadline).await;
/// assert!(Instant::now() >= deadline);
/// # }
/// ```
#[track_caller]
#[inline]
pub fn sleep_until(deadline: Instant) -> Sleep {
    or_capacity_panic(ambient::sleep(Until::At(deadline), Refuse::Panic))
}

/// Runs `future` with a time limit of `duration`, like
/// [`tokio::time::timeout`], on the current runtime's default timer.
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration};
///
/// assert_eq!(time::timeout(Duration::from_millis(300), async { 7 }).await, Ok(7));
/// let never = std::future::pending::<()>();
/// assert!(time::timeout(Duration::from_millis(300), never).await.is_err());
/// # }
/// ```
#[track_caller]
#[inline]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    Timeout::new(future.into_future(), sleep(duration))
}

/// Runs `future` until `deadline`, like [`tokio::time::timeout_at`], on the
/// current runtime's default timer.
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(100);
/// let never = std::future::pending::<()>();
/// assert!(time::timeout_at(deadline, never).await.is_err());
/// assert!(Instant::now() >= deadline);
/// # }
/// ```
#[track_caller]
#[inline]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout::new(future.into_future(), sleep_until(deadline))
}

/// An [`Interval`] whose first tick completes at once and whose later ticks
/// are `period` apart, like [`tokio::time::interval`], on the current
/// runtime's default timer.
///
/// A zero `period` becomes the timer's tick instead of a panic (see
/// [`Timer::interval`]).
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration, Instant};
///
/// let start = Instant::now();
/// let mut interval = time::interval(Duration::from_millis(100));
/// assert_eq!(interval.tick().await, start);
/// assert_eq!(interval.tick().await, start + Duration::from_millis(100));
/// # }
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    Timer::current().interval(period)
}

/// An [`Interval`] whose first tick completes at `start` and whose later
/// ticks are `period` apart, like [`tokio::time::interval_at`], on the
/// current runtime's default timer.
///
/// # Panics
///
/// Outside a tokio runtime; see the [module docs](self#panics).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use tickwheel::time::{self, Duration, Instant};
///
/// let start = Instant::now() + Duration::from_secs(1);
/// let mut interval = time::interval_at(start, Duration::from_millis(500));
/// assert_eq!(interval.tick().await, start);
/// # }
/// ```
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    Timer::current().interval_at(start, period)
}
