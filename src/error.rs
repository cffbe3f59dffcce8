//! Error types: [`Elapsed`] (a timeout's deadline passed), [`Error`] (a
//! `try_*` call was refused) and [`BuildError`] (a bad `Builder` setting).

use std::fmt;
use std::io;
use std::time::Duration;

use crate::engine::shared::AtCapacity;

/// The most slots a wheel may have: `Builder::MAX_SLOTS`, defined here so
/// that `BuildError`'s message can name it without reaching up to the builder.
pub(crate) const MAX_SLOTS: usize = 1 << 16;

/// The most shards a timer may have: `Builder::MAX_SHARDS`, defined here for
/// the same reason.
pub(crate) const MAX_SHARDS: usize = 1 << 10;

/// The error a [`Timeout`](crate::Timeout) returns when its deadline passes
/// before the inner future completes.
///
/// It also comes back, with [`is_shutdown`](Elapsed::is_shutdown) `true`, when
/// the timer shut down while the timeout was waiting: a dead timer ends every
/// wait instead of leaving it hanging.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let err = timer
///     .timeout(Duration::from_millis(10), std::future::pending::<()>())
///     .await
///     .unwrap_err();
/// assert!(!err.is_shutdown());
/// let io: std::io::Error = err.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    shutdown: bool,
}

impl Elapsed {
    pub(crate) fn new(shutdown: bool) -> Self {
        Elapsed { shutdown }
    }

    /// `true` if the timeout ended because its timer shut down (by
    /// [`Timer::shutdown`](crate::Timer::shutdown) or because the runtime that
    /// hosted the driver stopped), not because its deadline passed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let call = timer.timeout(Duration::from_secs(60), std::future::pending::<()>());
    /// let waiting = tokio::spawn(call);
    /// tokio::task::yield_now().await; // let it register
    /// timer.shutdown();
    /// let err = waiting.await.unwrap().unwrap_err();
    /// assert!(err.is_shutdown()); // woken by the shutdown, not the deadline
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.shutdown
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shutdown {
            f.write_str("timer shut down before the deadline elapsed")
        } else {
            f.write_str("deadline has elapsed")
        }
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for io::Error {
    fn from(err: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, err)
    }
}

/// Why a `try_*` method of [`Timer`](crate::Timer) refused to create a timer.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::builder().max_pending(1).build().unwrap();
/// let first = timer.try_sleep(Duration::from_secs(1)).unwrap();
/// let err = timer.try_sleep(Duration::from_secs(1)).unwrap_err();
/// assert!(err.is_at_capacity());
/// drop(first); // frees the budget
/// assert!(timer.try_sleep(Duration::from_secs(1)).is_ok());
///
/// timer.shutdown();
/// assert!(timer.try_sleep(Duration::from_secs(1)).unwrap_err().is_shutdown());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    AtCapacity { max: usize },
    Shutdown,
}

impl From<AtCapacity> for Error {
    fn from(refused: AtCapacity) -> Self {
        Error::at_capacity(refused.max)
    }
}

impl Error {
    pub(crate) fn at_capacity(max: usize) -> Self {
        Error {
            kind: ErrorKind::AtCapacity { max },
        }
    }

    pub(crate) fn shutdown() -> Self {
        Error {
            kind: ErrorKind::Shutdown,
        }
    }

    /// `true` if the timer already had `max_pending` live timers.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let _held = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// let err = timer.try_sleep(Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_at_capacity());
    /// assert!(!err.is_shutdown());
    /// # }
    /// ```
    pub fn is_at_capacity(&self) -> bool {
        matches!(self.kind, ErrorKind::AtCapacity { .. })
    }

    /// `true` if the timer has shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.shutdown();
    /// let err = timer.try_sleep(Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_shutdown());
    /// assert!(!err.is_at_capacity());
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        matches!(self.kind, ErrorKind::Shutdown)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::AtCapacity { max } => {
                write!(
                    f,
                    "timer is at capacity ({max} live timers, the max_pending limit)"
                )
            }
            ErrorKind::Shutdown => f.write_str("timer has shut down"),
        }
    }
}

impl std::error::Error for Error {}

/// A [`Builder`](crate::Builder) setting that cannot make a working timer.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::{BuildError, Timer};
///
/// let err = Timer::builder().tick(Duration::from_micros(10)).build().unwrap_err();
/// assert!(matches!(err, BuildError::TickTooShort { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The tick is shorter than [`Builder::MIN_TICK`](crate::Builder::MIN_TICK) (1 ms).
    TickTooShort {
        /// The tick that was asked for.
        tick: Duration,
    },
    /// `slots(0)`: a wheel needs at least one bucket.
    ZeroSlots,
    /// More than [`Builder::MAX_SLOTS`](crate::Builder::MAX_SLOTS) slots.
    TooManySlots {
        /// The slot count that was asked for.
        slots: usize,
    },
    /// `tick * slots` (one revolution) does not fit in 2^63 nanoseconds.
    SpanOverflow {
        /// The tick that was asked for.
        tick: Duration,
        /// The slot count, after rounding up to a power of two.
        slots: usize,
    },
    /// `max_pending(0)`: a timer that can hold nothing cannot time anything.
    ZeroMaxPending,
    /// `shards(0)`: a timer needs at least one wheel.
    ZeroShards,
    /// More than [`Builder::MAX_SHARDS`](crate::Builder::MAX_SHARDS) shards.
    TooManyShards {
        /// The shard count that was asked for.
        shards: usize,
    },
    /// No runtime was given and the builder was not used inside one.
    NoRuntime,
    /// [`Builder::install`](crate::Builder::install): the runtime already
    /// has a default timer (installed, or started by a first use of
    /// [`Timer::current`](crate::Timer::current) or
    /// [`tickwheel::time`](crate::time)). A runtime's default timer is set
    /// once; install it before anything uses it.
    AlreadyInstalled,
    /// The runtime that would host the driver was built without its time
    /// driver (`enable_time` or `enable_all` on tokio's runtime builder):
    /// the timer's driver sleeps on tokio's clock, so no timer can run on
    /// it. Finding this out prints tokio's panic message through the panic
    /// hook (see [`Builder::build`](crate::Builder::build)).
    NoTimeDriver,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TickTooShort { tick } => {
                write!(f, "tick of {tick:?} is below the 1 ms minimum")
            }
            BuildError::ZeroSlots => f.write_str("a wheel needs at least one slot"),
            BuildError::TooManySlots { slots } => {
                write!(f, "{slots} slots is more than the maximum of {}", MAX_SLOTS)
            }
            BuildError::SpanOverflow { tick, slots } => write!(
                f,
                "one revolution ({tick:?} x {slots} slots) overflows the wheel's clock"
            ),
            BuildError::ZeroMaxPending => f.write_str("max_pending must be at least 1"),
            BuildError::ZeroShards => f.write_str("a timer needs at least one shard"),
            BuildError::TooManyShards { shards } => {
                write!(
                    f,
                    "{shards} shards is more than the maximum of {MAX_SHARDS}"
                )
            }
            BuildError::NoRuntime => f.write_str(
                "no tokio runtime: build inside a runtime or pass one with Builder::runtime",
            ),
            BuildError::AlreadyInstalled => f.write_str(
                "the runtime already has a default timer (install it before its first use)",
            ),
            BuildError::NoTimeDriver => f.write_str(
                "the runtime has timers disabled: call enable_time (or enable_all) on the \
                 runtime builder",
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Why [`Timer::try_current`](crate::Timer::try_current) found no default
/// timer.
///
/// # Examples
///
/// ```
/// // Outside any tokio runtime:
/// let err = tickwheel::Timer::try_current().unwrap_err();
/// assert!(err.is_missing_context());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryCurrentError {
    kind: TryCurrentErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TryCurrentErrorKind {
    MissingContext,
    TimeDisabled,
}

impl TryCurrentError {
    pub(crate) fn missing_context() -> Self {
        TryCurrentError {
            kind: TryCurrentErrorKind::MissingContext,
        }
    }

    pub(crate) fn time_disabled() -> Self {
        TryCurrentError {
            kind: TryCurrentErrorKind::TimeDisabled,
        }
    }

    /// `true` if it was called outside any tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// // Outside any tokio runtime:
    /// let err = tickwheel::Timer::try_current().unwrap_err();
    /// assert!(err.is_missing_context());
    /// assert!(!err.is_time_disabled());
    /// ```
    pub fn is_missing_context(&self) -> bool {
        matches!(self.kind, TryCurrentErrorKind::MissingContext)
    }

    /// `true` if the current runtime has its time driver disabled (built
    /// without `enable_time` or `enable_all`), so no timer can run on it.
    ///
    /// # Examples
    ///
    /// ```
    /// // A runtime built without `enable_time`:
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let _guard = rt.enter();
    /// let err = tickwheel::Timer::try_current().unwrap_err();
    /// assert!(err.is_time_disabled());
    /// assert!(!err.is_missing_context());
    /// ```
    pub fn is_time_disabled(&self) -> bool {
        matches!(self.kind, TryCurrentErrorKind::TimeDisabled)
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TryCurrentErrorKind::MissingContext => f.write_str(
                "no default timer outside a Tokio runtime: Timer::current() and the \
                 tickwheel::time functions must be called from within a Tokio 1.x runtime \
                 (or use a Timer built with Timer::builder().runtime(handle))",
            ),
            TryCurrentErrorKind::TimeDisabled => f.write_str(
                "the current Tokio runtime has timers disabled: call enable_time (or \
                 enable_all) on its builder",
            ),
        }
    }
}

impl std::error::Error for TryCurrentError {}

/// A new wait on a shut-down timer would complete at once, and a loop of such
/// waits would spin: like `tokio::time` on a runtime that is gone, fail loudly.
#[track_caller]
pub(crate) fn shutdown_panic() -> ! {
    panic!(
        "tickwheel: the timer has shut down (Timer::shutdown was called, or the runtime \
         hosting its driver has ended), so it cannot start a new wait; \
         use the try_* methods to handle this without panicking"
    )
}

/// The panicking forms' answer to a wait refused at `max_pending` (a
/// shut-down timer has already panicked in [`shutdown_panic`]).
#[track_caller]
pub(crate) fn capacity_panic(err: Error) -> ! {
    panic!("tickwheel: {err}; use the try_* methods to handle this without panicking")
}

/// `sleep`, or the panicking forms' answer to its refusal at `max_pending`.
/// A `match` in a `#[track_caller]` function, not `unwrap_or_else` with a
/// closure: only direct calls carry the caller's line into the panic.
#[track_caller]
#[inline]
pub(crate) fn or_capacity_panic<T>(sleep: Result<T, Error>) -> T {
    match sleep {
        Ok(sleep) => sleep,
        Err(err) => capacity_panic(err),
    }
}
