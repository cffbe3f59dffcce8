//! [`Builder`]: validated configuration for a [`Timer`].

use std::time::Duration;

use tokio::runtime::Handle;

use crate::engine::state::Config;
use crate::engine::tokio_compat;
use crate::error::BuildError;
use crate::timer::Timer;

/// Configures and builds a [`Timer`], from [`Timer::builder`].
///
/// | setting | default | limits |
/// |---|---|---|
/// | [`tick`](Builder::tick) | 1 ms | at least 1 ms |
/// | [`slots`](Builder::slots) | 8192 (a revolution of 8.192 s at 1 ms) | 1 ..= 65,536, rounded up to a power of two |
/// | [`max_pending`](Builder::max_pending) | unbounded | at least 1 |
/// | [`shards`](Builder::shards) | 2 per worker of the runtime, rounded up to a power of two, at most 64 | 1 ..= 1,024, rounded up to a power of two |
/// | [`runtime`](Builder::runtime) | the current runtime | its time driver must be enabled |
///
/// Bad settings make [`build`](Builder::build) return a [`BuildError`]; no
/// setter panics. [`build`](Builder::build) starts a timer for you to hold;
/// [`install`](Builder::install) makes it the runtime's default timer
/// instead (the one [`Timer::current`] and [`tickwheel::time`](crate::time)
/// use).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::builder()
///     .tick(Duration::from_millis(5))
///     .slots(1000) // becomes 1024
///     .max_pending(100_000)
///     .build()
///     .expect("valid settings");
/// assert_eq!(timer.slots(), 1024);
/// assert_eq!(timer.tick(), Duration::from_millis(5));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    tick: Duration,
    slots: usize,
    max_pending: Option<usize>,
    shards: Option<usize>,
    runtime: Option<Handle>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The shortest tick allowed.
    pub const MIN_TICK: Duration = Duration::from_millis(1);
    /// The default tick.
    pub const DEFAULT_TICK: Duration = Duration::from_millis(1);
    /// The default number of slots.
    pub const DEFAULT_SLOTS: usize = 8192;
    /// The largest number of slots allowed. A bigger wheel buys nothing here:
    /// timers beyond one revolution wait in an overflow level that costs no
    /// work per revolution.
    pub const MAX_SLOTS: usize = crate::error::MAX_SLOTS;
    /// The largest number of shards allowed.
    pub const MAX_SHARDS: usize = crate::error::MAX_SHARDS;

    /// A builder with every setting at its default.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use tickwheel::Builder;
    ///
    /// let timer = Builder::new().build().unwrap();
    /// assert_eq!(timer.tick(), Builder::DEFAULT_TICK);
    /// assert_eq!(timer.slots(), Builder::DEFAULT_SLOTS);
    /// # }
    /// ```
    pub fn new() -> Self {
        Builder {
            tick: Self::DEFAULT_TICK,
            slots: Self::DEFAULT_SLOTS,
            max_pending: None,
            shards: None,
            runtime: None,
        }
    }

    /// The length of one tick, the wheel's resolution (default 1 ms, as
    /// tokio's timer).
    ///
    /// Deadlines round up to the next tick boundary, so a timer fires up to
    /// one tick after its deadline (never before). Shorter ticks are more
    /// precise and cost more driver wake-ups when timers are dense; the driver
    /// skips empty ticks either way. Below [`MIN_TICK`](Self::MIN_TICK),
    /// `build` fails.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .build()
    ///     .unwrap();
    /// let start = Instant::now();
    /// timer.sleep(Duration::from_millis(25)).await; // rounds up to 30 ms
    /// let slept = start.elapsed();
    /// assert!(slept >= Duration::from_millis(25) && slept <= Duration::from_millis(35));
    /// # }
    /// ```
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The number of buckets in one revolution (default 8192), rounded up to
    /// a power of two. A deadline less than one revolution (`tick * slots`:
    /// 8.192 s by default) away goes straight into its bucket; a later one
    /// waits in an overflow level and moves into the ring once. Zero or more
    /// than [`MAX_SLOTS`](Self::MAX_SLOTS) makes `build` fail.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use tickwheel::{BuildError, Timer};
    ///
    /// assert_eq!(Timer::builder().slots(100).build().unwrap().slots(), 128);
    /// let err = Timer::builder().slots(0).build().unwrap_err();
    /// assert_eq!(err, BuildError::ZeroSlots);
    /// # }
    /// ```
    pub fn slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// Bounds the number of live sleeps and timeouts (created and not yet
    /// dropped) the timer allows, so a flood of work cannot grow its memory
    /// without limit (default: unbounded).
    ///
    /// At the limit, `try_*` methods return [`Error::is_at_capacity`] and the
    /// plain ones panic, as `Vec::push` does where `try_reserve` would fail.
    /// Each live sleep holds one unit of the budget from creation to drop.
    ///
    /// [`Error::is_at_capacity`]: crate::Error::is_at_capacity
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder().max_pending(2).build().unwrap();
    /// let a = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// let _b = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// assert!(timer.try_sleep(Duration::from_secs(1)).unwrap_err().is_at_capacity());
    /// drop(a);
    /// assert!(timer.try_sleep(Duration::from_secs(1)).is_ok());
    /// # }
    /// ```
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = Some(max);
        self
    }

    /// The number of shards: wheels, each behind its own lock, that threads
    /// spread over so that two threads registering at once do not wait on
    /// each other (rounded up to a power of two). The default is two per
    /// worker thread of the driver's runtime, at most 64; set more if many
    /// threads outside the runtime (other runtimes, blocking threads) use
    /// the timer too, fewer if the driver's pass over every shard matters
    /// more than contention. Zero or more than
    /// [`MAX_SHARDS`](Self::MAX_SHARDS) makes `build` fail.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = tickwheel::Timer::builder().shards(3).build().unwrap();
    /// assert_eq!(timer.shards(), 4);
    /// assert_eq!(tickwheel::Timer::new().shards(), 2); // one worker here
    /// # }
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The runtime that hosts the driver task (default: the runtime `build`
    /// is called in). Its time driver must be enabled (`enable_time` or
    /// `enable_all`); if it is not, [`build`](Builder::build) and
    /// [`install`](Builder::install) return [`BuildError::NoTimeDriver`].
    ///
    /// # Examples
    ///
    /// ```
    /// // No runtime is current here: the timer's driver runs on `rt`.
    /// let rt = tokio::runtime::Builder::new_current_thread()
    ///     .enable_time()
    ///     .start_paused(true)
    ///     .build()
    ///     .unwrap();
    /// let timer = tickwheel::Timer::builder()
    ///     .runtime(rt.handle().clone())
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(timer.sleep(std::time::Duration::from_secs(1)));
    /// assert_eq!(timer.stats().fired, 1);
    /// ```
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Validates the settings and starts the timer's driver.
    ///
    /// With a tick of whole milliseconds on a runtime whose clock runs, the
    /// build first finds tokio's millisecond grid (so that wheel sleeps are
    /// due in the same pass of tokio's timer processing as `tokio::time`
    /// sleeps): some tens of microseconds of probing tokio's timer, and,
    /// where a worker is moving tokio's timers on meanwhile, pauses of 100
    /// us for it, at most 100 ms in all. `Stats::grid_missed` says whether
    /// it was found.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the first bad setting,
    /// [`BuildError::NoRuntime`] if no runtime was given and this is not
    /// called inside one, or [`BuildError::NoTimeDriver`] if the runtime
    /// was built without its time driver (`enable_time`). tokio has no way
    /// to ask for it but to try making a tokio sleep, which panics there:
    /// the panic is caught, but the panic hook prints tokio's message
    /// ("timers are disabled") first, once per refused build.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::{BuildError, Timer};
    ///
    /// // Outside a runtime, with none given:
    /// assert_eq!(Timer::builder().build().unwrap_err(), BuildError::NoRuntime);
    ///
    /// // A runtime without its time driver (tokio's message is printed):
    /// let no_time = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let refused = Timer::builder().runtime(no_time.handle().clone()).build();
    /// assert_eq!(refused.unwrap_err(), BuildError::NoTimeDriver);
    ///
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// let _guard = rt.enter();
    /// let timer = Timer::builder().tick(Duration::from_millis(2)).build().unwrap();
    /// assert_eq!(timer.tick(), Duration::from_millis(2));
    /// ```
    pub fn build(self) -> Result<Timer, BuildError> {
        let (config, handle) = self.settle()?;
        Ok(Timer::start(config, &handle))
    }

    /// The validated settings and the runtime to start the driver on: the
    /// one given to [`runtime`](Builder::runtime), or else the current one.
    pub(crate) fn settle(self) -> Result<(Config, Handle), BuildError> {
        let config = self.validate()?;
        let handle = match self.runtime {
            Some(handle) => handle,
            None => Handle::try_current().map_err(|_| BuildError::NoRuntime)?,
        };
        if !tokio_compat::has_time_driver(&handle) {
            return Err(BuildError::NoTimeDriver);
        }
        Ok((config, handle))
    }

    /// The default settings, validated (they always are: a unit test
    /// checks it).
    pub(crate) fn default_config() -> Config {
        match Builder::new().validate() {
            Ok(config) => config,
            Err(err) => unreachable!("the default settings are invalid: {err}"),
        }
    }

    /// The validated settings.
    pub(crate) fn validate(&self) -> Result<Config, BuildError> {
        if self.tick < Self::MIN_TICK {
            return Err(BuildError::TickTooShort { tick: self.tick });
        }
        if self.slots == 0 {
            return Err(BuildError::ZeroSlots);
        }
        if self.slots > Self::MAX_SLOTS {
            return Err(BuildError::TooManySlots { slots: self.slots });
        }
        let slots = self.slots.next_power_of_two();
        let span_overflow = BuildError::SpanOverflow {
            tick: self.tick,
            slots,
        };
        let tick_ns = u64::try_from(self.tick.as_nanos()).map_err(|_| span_overflow.clone())?;
        match tick_ns.checked_mul(slots as u64) {
            Some(span) if span <= i64::MAX as u64 => {}
            _ => return Err(span_overflow),
        }
        if self.max_pending == Some(0) {
            return Err(BuildError::ZeroMaxPending);
        }
        let shards = match self.shards {
            Some(0) => return Err(BuildError::ZeroShards),
            Some(n) if n > Self::MAX_SHARDS => return Err(BuildError::TooManyShards { shards: n }),
            other => other.map(usize::next_power_of_two),
        };
        Ok(Config {
            tick_ns,
            slots,
            max_pending: self.max_pending,
            shards,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_is_an_error_not_a_panic() {
        let b = Builder::new;
        assert_eq!(
            b().tick(Duration::from_micros(999)).validate().unwrap_err(),
            BuildError::TickTooShort {
                tick: Duration::from_micros(999)
            }
        );
        assert!(b().tick(Duration::ZERO).validate().is_err());
        assert_eq!(b().slots(0).validate().unwrap_err(), BuildError::ZeroSlots);
        assert_eq!(
            b().slots(Builder::MAX_SLOTS + 1).validate().unwrap_err(),
            BuildError::TooManySlots {
                slots: Builder::MAX_SLOTS + 1
            }
        );
        assert!(matches!(
            b().tick(Duration::MAX).validate().unwrap_err(),
            BuildError::SpanOverflow { .. }
        ));
        // 2^63 ns / 65536 slots is about 39 hours per tick: one more overflows.
        let max_tick = Duration::from_nanos(i64::MAX as u64 / Builder::MAX_SLOTS as u64);
        assert!(b()
            .tick(max_tick)
            .slots(Builder::MAX_SLOTS)
            .validate()
            .is_ok());
        assert!(matches!(
            b().tick(max_tick + Duration::from_secs(1))
                .slots(Builder::MAX_SLOTS)
                .validate()
                .unwrap_err(),
            BuildError::SpanOverflow { .. }
        ));
        assert_eq!(
            b().max_pending(0).validate().unwrap_err(),
            BuildError::ZeroMaxPending
        );
        assert_eq!(
            b().shards(0).validate().unwrap_err(),
            BuildError::ZeroShards
        );
        assert_eq!(
            b().shards(Builder::MAX_SHARDS + 1).validate().unwrap_err(),
            BuildError::TooManyShards {
                shards: Builder::MAX_SHARDS + 1
            }
        );
        assert_eq!(
            b().shards(Builder::MAX_SHARDS).validate().unwrap().shards,
            Some(1024)
        );
        assert_eq!(b().shards(5).validate().unwrap().shards, Some(8));
        assert_eq!(b().shards(1).validate().unwrap().shards, Some(1));
        assert_eq!(b().validate().unwrap().shards, None);
    }

    /// `default_config` cannot fail: the defaults pass validation.
    #[test]
    fn the_default_settings_are_valid() {
        let c = Builder::default_config();
        assert_eq!((c.tick_ns, c.slots), (1_000_000, 8192));
        assert_eq!((c.max_pending, c.shards), (None, None));
    }

    #[test]
    fn limits_themselves_are_accepted_and_slots_round_up() {
        let c = Builder::new()
            .tick(Builder::MIN_TICK)
            .slots(1)
            .max_pending(1)
            .validate()
            .unwrap();
        assert_eq!((c.tick_ns, c.slots, c.max_pending), (1_000_000, 1, Some(1)));
        assert_eq!(Builder::new().slots(513).validate().unwrap().slots, 1024);
        assert_eq!(
            Builder::new()
                .slots(Builder::MAX_SLOTS)
                .validate()
                .unwrap()
                .slots,
            Builder::MAX_SLOTS
        );
    }

    /// By default, two shards per worker of the driver's runtime, so a
    /// current-thread runtime does not lock a shard per core of the machine
    /// on every driver pass.
    #[test]
    fn shards_default_to_two_per_worker() {
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(3)
            .enable_all()
            .build()
            .unwrap();
        let build = |rt: &tokio::runtime::Runtime, b: Builder| {
            b.runtime(rt.handle().clone()).build().unwrap().shards()
        };
        assert_eq!(build(&current, Builder::new()), 2);
        assert_eq!(build(&multi, Builder::new()), 8);
        assert_eq!(build(&current, Builder::new().shards(1)), 1);
        assert_eq!(build(&multi, Builder::new().shards(20)), 32);
    }

    #[test]
    fn building_outside_a_runtime_is_an_error() {
        assert_eq!(Builder::new().build().unwrap_err(), BuildError::NoRuntime);
    }
}
