//! [`Timer`]: the handle users hold. The state behind it is in `state.rs`.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::builder::Builder;
use crate::engine::driver;
use crate::engine::state::{Config, Inner};
use crate::engine::tokio_compat;
use crate::error::{or_capacity_panic, Error};
use crate::sleep::{sleep_on, Refuse, Sleep, Until};
use crate::stats::Stats;
use crate::timeout::Timeout;

/// A hashed-wheel timer: a cheap, cloneable handle to one wheel and its driver
/// task.
///
/// `Timer` is `Clone + Send + Sync`; clones share the same wheel, so build one
/// per service and hand clones around. Its methods mirror [`tokio::time`]'s
/// free functions (`timer.sleep(d)` for `tokio::time::sleep(d)`, and so on),
/// so moving code over is a one-line change per call site.
///
/// The timer keeps running while any handle, sleep or timeout of it is alive,
/// until [`shutdown`](Timer::shutdown) is called, or until the runtime that
/// hosts its driver shuts down. Once stopped, every waiting task is woken.
/// With every handle dropped, its driver task ends and its memory is freed
/// as soon as no sleep or timeout is left: at once if none is when the last
/// handle goes, and otherwise within about a second of the last one's drop
/// (while only sleeps keep it, the driver looks again a millisecond after a
/// registered sleep's drop tells it, backing off to once a second, since a
/// sleep that never registered tells it nothing; an idle timer with a
/// handle never wakes).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// timer.sleep(Duration::from_millis(100)).await;
///
/// let reply = timer.timeout(Duration::from_millis(300), async { "pong" }).await;
/// assert_eq!(reply, Ok("pong"));
/// # }
/// ```
pub struct Timer {
    inner: Arc<Inner>,
}

impl Timer {
    /// A timer with the default settings (1 ms ticks, 8192 slots, unbounded)
    /// whose driver runs on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// - Outside a tokio runtime, like `tokio::spawn`. Use
    ///   [`Timer::builder`]`().runtime(handle).build()` to pick a runtime
    ///   explicitly.
    /// - In a runtime built without its time driver, with tokio's own
    ///   message ("timers are disabled. Call `enable_time` on the runtime
    ///   builder"), as `tokio::time::sleep` panics there. Both panics are
    ///   reported at the caller's line. [`Builder::build`] returns
    ///   [`BuildError::NoTimeDriver`](crate::BuildError::NoTimeDriver)
    ///   instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// assert_eq!(timer.tick(), Duration::from_millis(1));
    /// assert_eq!(timer.slots(), 8192);
    /// assert_eq!(timer.max_pending(), None);
    /// # }
    /// ```
    // No `Default`: it would panic outside a runtime, which `Default` users
    // do not expect.
    #[allow(clippy::new_without_default)]
    #[track_caller]
    pub fn new() -> Timer {
        let Ok(handle) = Handle::try_current() else {
            panic!(
                "tickwheel::Timer::new() must be called from within a Tokio runtime; \
                 use Timer::builder().runtime(handle).build() to pass one explicitly"
            )
        };
        // tokio's own panic, at the caller's line, where timers are disabled.
        tokio_compat::assert_time_driver();
        Timer::start(Builder::default_config(), &handle)
    }

    /// A [`Builder`] to configure the tick, slots, capacity and runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .max_pending(10_000)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(timer.tick(), Duration::from_millis(10));
    /// assert_eq!(timer.max_pending(), Some(10_000));
    /// # }
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn start(config: Config, handle: &Handle) -> Timer {
        Timer::start_with(config, handle, driver::run)
    }

    /// Starts a timer on `handle`'s runtime whose driver task is
    /// `driver(inner)`: [`driver::run`], or a future wrapping it.
    pub(crate) fn start_with<F>(
        config: Config,
        handle: &Handle,
        driver: impl FnOnce(Arc<Inner>) -> F,
    ) -> Timer
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let inner = Inner::new(config, handle);
        handle.spawn(driver(inner.clone()));
        // `Inner::new` counts this first handle already.
        Timer { inner }
    }

    /// A new handle to the timer behind `inner`, counted as a clone is.
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Timer {
        inner.shared.add_handle();
        Timer { inner }
    }

    /// The state behind this handle.
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// A future that completes `duration` from now, like
    /// [`tokio::time::sleep`].
    ///
    /// The deadline is taken when the sleep is created (one clock read).
    /// `Duration::ZERO` completes on the first poll; durations too large to
    /// represent saturate to about 292 years (they never fire early and never
    /// overflow).
    ///
    /// # Panics
    ///
    /// - If the timer has shut down ([`shutdown`](Timer::shutdown) was called,
    ///   or the runtime hosting its driver has ended), like `tokio::time`
    ///   without a runtime: a new wait on a dead timer would complete at once,
    ///   and a loop of them would spin instead of waiting.
    /// - If the timer has a [`max_pending`](Builder::max_pending) limit and
    ///   that many sleeps and timeouts are already alive.
    ///
    /// Use [`try_sleep`](Timer::try_sleep) to get an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.sleep(Duration::from_secs(1)).await;
    /// # }
    /// ```
    #[track_caller]
    #[inline]
    pub fn sleep(&self, duration: Duration) -> Sleep {
        or_capacity_panic(self.make_sleep(Until::After(duration), Refuse::Panic))
    }

    /// A future that completes at `deadline`, like
    /// [`tokio::time::sleep_until`]. A deadline already passed completes on
    /// the first poll.
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep): after shutdown, and at the `max_pending`
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let deadline = Instant::now() + Duration::from_millis(250);
    /// timer.sleep_until(deadline).await;
    /// assert!(Instant::now() >= deadline);
    /// # }
    /// ```
    #[track_caller]
    #[inline]
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        or_capacity_panic(self.make_sleep(Until::At(deadline), Refuse::Panic))
    }

    /// Runs `future` with a time limit of `duration`, like
    /// [`tokio::time::timeout`].
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep): after shutdown, and at the `max_pending`
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let never = std::future::pending::<()>();
    /// assert!(timer.timeout(Duration::from_millis(300), never).await.is_err());
    /// # }
    /// ```
    #[track_caller]
    #[inline]
    pub fn timeout<F: IntoFuture>(&self, duration: Duration, future: F) -> Timeout<F::IntoFuture> {
        Timeout::new(future.into_future(), self.sleep(duration))
    }

    /// Runs `future` until `deadline`, like [`tokio::time::timeout_at`].
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep): after shutdown, and at the `max_pending`
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let deadline = Instant::now() + Duration::from_millis(100);
    /// assert_eq!(timer.timeout_at(deadline, async { 7 }).await, Ok(7));
    /// let never = std::future::pending::<()>();
    /// assert!(timer.timeout_at(deadline, never).await.is_err());
    /// assert!(Instant::now() >= deadline);
    /// # }
    /// ```
    #[track_caller]
    #[inline]
    pub fn timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Timeout<F::IntoFuture> {
        Timeout::new(future.into_future(), self.sleep_until(deadline))
    }

    /// [`sleep`](Timer::sleep) that fails fast instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Error::is_at_capacity`] at the `max_pending` limit,
    /// [`Error::is_shutdown`] after the timer has shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let start = Instant::now();
    /// timer.try_sleep(Duration::from_millis(50)).unwrap().await;
    /// assert!(start.elapsed() >= Duration::from_millis(50));
    ///
    /// timer.shutdown();
    /// let err = timer.try_sleep(Duration::from_millis(50)).unwrap_err();
    /// assert!(err.is_shutdown());
    /// # }
    /// ```
    pub fn try_sleep(&self, duration: Duration) -> Result<Sleep, Error> {
        self.make_sleep(Until::After(duration), Refuse::Error)
    }

    /// [`sleep_until`](Timer::sleep_until) that fails fast instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let deadline = Instant::now() + Duration::from_millis(50);
    /// let sleep = timer.try_sleep_until(deadline).unwrap();
    /// assert!(timer.try_sleep_until(deadline).unwrap_err().is_at_capacity());
    /// sleep.await;
    /// assert!(Instant::now() >= deadline);
    /// # }
    /// ```
    pub fn try_sleep_until(&self, deadline: Instant) -> Result<Sleep, Error> {
        self.make_sleep(Until::At(deadline), Refuse::Error)
    }

    /// [`timeout`](Timer::timeout) that fails fast instead of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// match timer.try_timeout(Duration::from_secs(1), async { 1 }) {
    ///     Ok(call) => assert_eq!(call.await, Ok(1)),
    ///     Err(err) => eprintln!("shedding load: {err}"),
    /// }
    /// # }
    /// ```
    pub fn try_timeout<F: IntoFuture>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, Error> {
        let delay = self.try_sleep(duration)?;
        Ok(Timeout::new(future.into_future(), delay))
    }

    /// [`timeout_at`](Timer::timeout_at) that fails fast instead of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let deadline = Instant::now() + Duration::from_millis(100);
    /// let call = timer.try_timeout_at(deadline, async { "pong" }).unwrap();
    /// assert_eq!(call.await, Ok("pong"));
    ///
    /// timer.shutdown();
    /// let refused = timer.try_timeout_at(deadline, std::future::ready(()));
    /// assert!(refused.unwrap_err().is_shutdown());
    /// # }
    /// ```
    pub fn try_timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, Error> {
        let delay = self.try_sleep_until(deadline)?;
        Ok(Timeout::new(future.into_future(), delay))
    }

    /// The number of timers registered in the wheel now.
    ///
    /// A sleep registers on its first poll and leaves when it fires or is
    /// dropped, so this counts sleeps that a task is actually waiting on.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut sleep = timer.sleep(Duration::from_secs(1));
    /// assert_eq!(timer.pending(), 0); // not polled yet
    /// let _ = futures::poll!(&mut sleep);
    /// assert_eq!(timer.pending(), 1);
    /// drop(sleep);
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    pub fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// A snapshot of the timer's counters and lateness; see [`Stats`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.sleep(Duration::from_millis(5)).await;
    /// let stats = timer.stats();
    /// assert_eq!(stats.registered, 1);
    /// assert_eq!(stats.fired, 1);
    /// assert_eq!(stats.pending, 0);
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        Stats::of(&self.inner)
    }

    /// The current time on the timer's clock: `tokio::time::Instant::now()`
    /// of the runtime that hosts its driver, read exactly, wherever it is
    /// called from (another runtime, whose test clock may be paused or
    /// advanced differently, or no runtime at all).
    ///
    /// It is the clock every deadline of this timer is measured on, so
    /// `timer.sleep_until(timer.now() + d)` is `timer.sleep(d)`. For a
    /// cheaper, coarser reading, see [`last_tick`](Timer::last_tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// tokio::time::sleep(Duration::from_millis(500)).await;
    /// assert_eq!(timer.now(), Instant::now());
    /// let start = Instant::now();
    /// timer.sleep_until(timer.now() + Duration::from_millis(100)).await;
    /// assert_eq!(start.elapsed(), Duration::from_millis(100));
    /// # }
    /// ```
    pub fn now(&self) -> Instant {
        self.inner.shared.now()
    }

    /// The instant of the last tick the driver processed: a clock that costs
    /// one atomic load instead of a clock read, at tick resolution, and that
    /// lags [`now`](Timer::now).
    ///
    /// How far it lags: by less than a tick while timers are firing (the
    /// driver processes every tick that has timers due, at or just after its
    /// boundary); without bound while the driver is parked with nothing to
    /// fire, since an idle driver processes no ticks at all: after 500 ms
    /// with no timer due, it is still the tick of the last one fired. So a
    /// deadline computed from it, `last_tick() + d`, can be up to that lag
    /// early, and may already have passed. Use it for cheap coarse
    /// timestamps (staleness checks, metrics), and [`now`](Timer::now) for
    /// deadlines.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .build()
    ///     .unwrap();
    /// timer.sleep(Duration::from_millis(25)).await;
    /// // The driver just processed the tick at 30 ms, which fired it.
    /// assert_eq!(timer.now() - timer.last_tick(), Duration::ZERO);
    /// // Idle for a second: nothing to fire, no tick processed.
    /// tokio::time::sleep(Duration::from_secs(1)).await;
    /// assert_eq!(timer.now() - timer.last_tick(), Duration::from_secs(1));
    /// # }
    /// ```
    pub fn last_tick(&self) -> Instant {
        let tick = self.inner.clock_tick.load(Ordering::Relaxed);
        let clock = &self.inner.shared.clock;
        // The driver never processes a tick it cannot express.
        clock
            .tick_instant(tick)
            .unwrap_or_else(|| clock.instant_at(i64::MAX))
    }

    /// Stops the timer: cancels every registered timer and wakes its task,
    /// and returns how many were registered.
    ///
    /// Every sleep that exists when it happens completes (at once, or on its
    /// first poll), and timeouts resolve to `Err(Elapsed)` with
    /// [`Elapsed::is_shutdown`]: nothing is left waiting on a dead timer.
    /// Starting a new wait afterwards ([`sleep`](Timer::sleep),
    /// [`timeout`](Timer::timeout), [`Sleep::reset`], an [`Interval`]'s next
    /// tick) panics, and the `try_*` forms return [`Error::is_shutdown`], so
    /// a loop of waits fails loudly instead of spinning. A timer cannot be
    /// restarted; calling this again returns 0.
    ///
    /// [`Interval`]: crate::Interval
    ///
    /// [`Elapsed::is_shutdown`]: crate::Elapsed::is_shutdown
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let waiting = tokio::spawn({
    ///     let timer = timer.clone();
    ///     async move { timer.timeout(Duration::from_secs(60), std::future::pending::<()>()).await }
    /// });
    /// tokio::task::yield_now().await; // let it register
    /// assert_eq!(timer.shutdown(), 1);
    /// assert!(waiting.await.unwrap().unwrap_err().is_shutdown());
    /// # }
    /// ```
    pub fn shutdown(&self) -> usize {
        self.inner.shut_down()
    }

    /// `true` once the timer has shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let timer = tickwheel::Timer::new();
    /// assert!(!timer.is_shutdown());
    /// timer.clone().shutdown(); // any clone stops the shared timer
    /// assert!(timer.is_shutdown());
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.inner.shared.is_shutdown()
    }

    /// The tick length.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::builder()
    ///     .tick(Duration::from_millis(5))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(timer.tick(), Duration::from_millis(5));
    /// # }
    /// ```
    pub fn tick(&self) -> Duration {
        Duration::from_nanos(self.inner.config.tick_ns)
    }

    /// The number of slots in one revolution (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let timer = tickwheel::Timer::builder().slots(1000).build().unwrap();
    /// assert_eq!(timer.slots(), 1024); // rounded up to a power of two
    /// # }
    /// ```
    pub fn slots(&self) -> usize {
        self.inner.config.slots
    }

    /// The number of shards (see [`Builder::shards`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let timer = tickwheel::Timer::builder().shards(8).build().unwrap();
    /// assert_eq!(timer.shards(), 8);
    /// # }
    /// ```
    pub fn shards(&self) -> usize {
        self.inner.shards.len()
    }

    /// The `max_pending` limit, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let bounded = tickwheel::Timer::builder().max_pending(100).build().unwrap();
    /// assert_eq!(bounded.max_pending(), Some(100));
    /// assert_eq!(tickwheel::Timer::new().max_pending(), None);
    /// # }
    /// ```
    pub fn max_pending(&self) -> Option<usize> {
        self.inner.shared.max_pending()
    }

    /// The runtime that hosts the driver (where scheduled tasks run).
    pub(crate) fn runtime(&self) -> &Handle {
        &self.inner.runtime
    }

    #[track_caller]
    #[inline(always)]
    pub(crate) fn make_sleep(&self, until: Until, refuse: Refuse) -> Result<Sleep, Error> {
        sleep_on(self.shard(), until, refuse)
    }

    /// The calling thread's shard of this timer.
    #[inline]
    pub(crate) fn shard(&self) -> Arc<crate::engine::shard::Shard> {
        self.inner.shard().clone()
    }
}

impl Clone for Timer {
    fn clone(&self) -> Self {
        self.inner.shared.add_handle();
        Timer {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // The driver retires once nothing can use it any more.
        self.inner.shared.drop_handle();
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("tick", &self.tick())
            .field("slots", &self.slots())
            .field("shards", &self.inner.shards.len())
            .field("max_pending", &self.max_pending())
            .field("live", &self.inner.live())
            .field("shutdown", &self.is_shutdown())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::shard;
    use crate::engine::wheel::Tally;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::mpsc;
    use std::task::{Context, Waker};

    /// Shards do not share a lock, seen through a real `Timer`: it has several
    /// shards, and while one shard's lock is held, a thread using another
    /// shard registers and cancels sleeps through the public API without
    /// waiting. A timer with
    /// one shared lock (or a single shard) fails this test.
    #[test]
    fn threads_register_without_waiting_on_another_shards_lock() {
        // Armed until the runtime is dropped: the drop fires the driver. Its
        // 20 s are longer than the wait for the worker below (10 s), so a
        // shared lock fails with this test's own message.
        let _watchdog = crate::engine::wheel::watchdog::Watchdog::start();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let timer = Timer::builder()
            .runtime(rt.handle().clone())
            .build()
            .unwrap();
        let shards = timer.inner.shards.len();
        assert!(shards >= 2, "a single shard serialises every thread");

        let (to_main, from_worker) = mpsc::channel();
        let (to_worker, from_main) = mpsc::channel::<()>();
        let worker = {
            let timer = timer.clone();
            std::thread::spawn(move || {
                to_main
                    .send(shard::index_for_current_thread(shards))
                    .unwrap();
                from_main.recv().unwrap(); // wait until the other lock is held
                let mut cx = Context::from_waker(Waker::noop());
                for _ in 0..1000 {
                    let mut sleep = timer.sleep(Duration::from_secs(5));
                    assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
                }
                to_main.send(usize::MAX).unwrap();
            })
        };
        let mine = from_worker.recv().unwrap();
        let other = (mine + 1) % shards;
        let held = timer.inner.shards[other].hold_lock();
        to_worker.send(()).unwrap();
        let done = from_worker.recv_timeout(Duration::from_secs(10));
        drop(held);
        assert_eq!(
            done,
            Ok(usize::MAX),
            "registering on shard {mine} waited for shard {other}'s lock"
        );
        worker.join().unwrap();
        let mut tally = Tally::default();
        timer.inner.shards[mine].tally_into(&mut tally);
        assert_eq!(tally.registered, 1000);
        assert_eq!(tally.cancelled, 1000);
    }
}
