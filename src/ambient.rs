//! The ambient timer: one default [`Timer`] per tokio runtime, found from
//! inside that runtime without holding a handle, for [`Timer::current`] and
//! the free functions of [`crate::time`].
//!
//! # Where the default timers live
//!
//! A process-wide registry maps a runtime's id to its default timer. The
//! first use inside a runtime starts the timer with its driver on that
//! runtime (or [`Builder::install`](crate::Builder::install) puts a
//! configured one there first). The driver task carries a guard that
//! removes the runtime's entry when the runtime drops the task, which it
//! does when it shuts down: a runtime that ends takes its default timer with
//! it, and a process that runs many runtimes one after another (one per
//! `#[tokio::test]`) keeps none of their timers.
//!
//! The registry is locked only to find or change an entry, never while a
//! task is spawned or a timer is dropped: spawning on a runtime that is
//! shutting down drops the task at once, and its guard takes the lock.
//!
//! # Which runtime: the one whose context is current
//!
//! A lookup is for the runtime whose context is current at the call, as
//! `tokio::time::sleep` uses that runtime's time driver: inside
//! `block_in_place(|| b.block_on(..))` on a worker of runtime `a`, it is
//! `b`; in a `LocalSet` driven by `a` and later by `b`, it is whichever
//! drives the set when the sleep is made. A sleep, interval or timeout, once
//! made, stays on the timer it was made on, as a `tokio::time::Sleep` stays
//! on its runtime's time driver: one made while `a` drove the set fires on
//! `a`'s clock, when `a` runs.
//!
//! # The hot path takes no lock
//!
//! `tickwheel::time::sleep` must cost about what `timer.sleep` on a held
//! handle costs. Each thread caches the last runtime it looked up: its id,
//! and weak references to that runtime's default timer and to the timer's
//! shard for this thread. A lookup asks tokio which runtime is current
//! ([`context::current_runtime`]: one clone and drop of the runtime's
//! handle, as `tokio::time::sleep` does for every sleep), compares it with
//! the cached id, and upgrades the weak shard reference, which is the one
//! reference count a sleep takes anyway. Only a miss (a thread's first
//! lookup, or a different runtime than last time) locks the registry.
//!
//! The cache holds nothing alive: once a runtime has ended and dropped its
//! timer, a stale entry keeps only the allocation of one shard's header
//! until the thread looks up another runtime. tokio hands runtime ids out
//! from a process-wide counter, so a stale entry cannot be taken for a later
//! runtime; the lookup also refuses a cached timer that has shut down, so it
//! would stay correct even if ids were ever reused.

use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::runtime::{self, Handle};

use crate::builder::Builder;
use crate::engine::context;
use crate::engine::driver;
use crate::engine::shard::Shard;
use crate::engine::state::{Config, Inner};
use crate::engine::tokio_compat;
use crate::error::{BuildError, Error, TryCurrentError};
use crate::sleep::{sleep_on, Refuse, Sleep, Until};
use crate::timer::Timer;

/// The default timer of each runtime that has one.
///
/// A `Vec`: it holds one entry per live runtime that uses the ambient timer,
/// a handful at most, and it is searched only on a per-thread cache miss.
static REGISTRY: Mutex<Vec<(runtime::Id, Timer)>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<(runtime::Id, Timer)>> {
    // Nothing panics while holding it; if something did, the list is
    // still a valid list.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This thread's last lookup.
struct Cached {
    runtime: runtime::Id,
    inner: Weak<Inner>,
    /// This thread's shard of that timer.
    shard: Weak<Shard>,
}

thread_local! {
    static CACHE: RefCell<Option<Cached>> = const { RefCell::new(None) };
}

impl Timer {
    /// The current runtime's default timer, started with its driver on that
    /// runtime the first time anything asks for it.
    ///
    /// Each tokio runtime has its own default timer: two runtimes side by
    /// side, or one `#[tokio::test]` runtime after another, never share one,
    /// and each timer reads the clock of its own runtime (paused or not).
    /// When the runtime shuts down, its default timer shuts down with it and
    /// is released. The free functions of [`tickwheel::time`](crate::time)
    /// (`sleep`, `timeout`, `interval`, ...) wait on it.
    ///
    /// It has the default settings (1 ms ticks, 8192 slots, unbounded, two
    /// shards per worker) unless [`Builder::install`](crate::Builder::install)
    /// configured it before its first use.
    ///
    /// # Nested runtimes, and runtimes in turn
    ///
    /// It is the default timer of the runtime whose context is current at
    /// the call, as `tokio::time::sleep` uses that runtime's clock: inside
    /// `block_in_place(|| rt_b.block_on(..))` in a task of runtime A, it is
    /// B's (back in the task, A's again); in a `LocalSet` driven by A and
    /// later by B, it is the timer of whichever runtime drives the set at
    /// the call. A sleep keeps the timer it was made on, as a
    /// `tokio::time::Sleep` keeps its runtime: one made while A drove the
    /// set fires on A's clock, when A runs.
    ///
    /// Finding it costs no lock: each thread remembers the last runtime's
    /// timer, and asks tokio which runtime is current (one handle clone, as
    /// `tokio::time::sleep` does). [`Timer::shutdown`] on it ends it for
    /// good, as for any timer: the runtime keeps the shut-down timer as its
    /// default, and new waits on it panic (the `try_*` methods return
    /// [`Error::is_shutdown`]).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like `tokio::time::sleep`, and in a runtime
    /// built without its time driver (`enable_time` or `enable_all`). Use
    /// [`Timer::try_current`] to get an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    ///
    /// let timer = Timer::current();
    /// timer.sleep(Duration::from_millis(100)).await;
    /// // The same timer the free functions use.
    /// tickwheel::time::sleep(Duration::from_millis(100)).await;
    /// assert_eq!(timer.stats().fired, 2);
    /// # }
    /// ```
    #[track_caller]
    pub fn current() -> Timer {
        if let Some(timer) = cached_timer() {
            return timer;
        }
        match lookup_or_start(Probe::Propagate) {
            Ok(timer) => timer,
            Err(err) => panic!("tickwheel: {err}"),
        }
    }

    /// [`Timer::current`], with an error instead of a panic outside a
    /// runtime or in a runtime without its time driver.
    ///
    /// # Errors
    ///
    /// [`TryCurrentError::is_missing_context`] outside a tokio runtime,
    /// [`TryCurrentError::is_time_disabled`] if the runtime's time driver is
    /// off. (tokio reports the latter only by panicking; this function
    /// catches that panic, so the panic hook still prints tokio's message.)
    ///
    /// # Examples
    ///
    /// ```
    /// use tickwheel::Timer;
    ///
    /// assert!(Timer::try_current().unwrap_err().is_missing_context());
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    /// let timer = rt.block_on(async { Timer::try_current() }).unwrap();
    /// assert!(!timer.is_shutdown());
    /// ```
    pub fn try_current() -> Result<Timer, TryCurrentError> {
        if let Some(timer) = cached_timer() {
            return Ok(timer);
        }
        lookup_or_start(Probe::Catch)
    }
}

/// A sleep on the current runtime's default timer: the free functions'
/// path, without a `Timer` handle (no reference count taken but the sleep's
/// own).
///
/// Inlined, as the sleep's constructors are: a `Sleep` returned through
/// memory by a call and then moved (into a `Timeout`, a task's state) is
/// written as 8-byte fields and read back as 16 bytes, which the CPU cannot
/// forward from its store buffer (about 4 ns a sleep here; BENCHMARKS.md,
/// the thirteenth stop).
///
/// # Panics
///
/// As [`Timer::current`], and as [`Timer::sleep`] with `Refuse::Panic`.
#[track_caller]
#[inline]
pub(crate) fn sleep(until: Until, refuse: Refuse) -> Result<Sleep, Error> {
    // A `match`, not `unwrap_or_else`: a panic in the lookup (no runtime)
    // names the caller's line only through direct `#[track_caller]` calls.
    let shard = match cached_shard() {
        Some(shard) => shard,
        None => current_shard(),
    };
    sleep_on(shard, until, refuse)
}

/// This thread's shard of the runtime's timer, looked up (the cache missed).
#[track_caller]
#[cold]
fn current_shard() -> Arc<Shard> {
    Timer::current().shard()
}

/// A sleep on `timer`, or on the current runtime's default timer when there
/// is none: the middleware's choice (a layer built with or without a timer
/// of its own). Refusals are errors, for the caller to shed or fall back.
///
/// # Panics
///
/// Without a timer, as [`Timer::current`].
#[cfg(feature = "tower")]
#[track_caller]
pub(crate) fn try_sleep_on(timer: Option<&Timer>, until: Until) -> Result<Sleep, Error> {
    match timer {
        Some(timer) => timer.make_sleep(until, Refuse::Error),
        None => sleep(until, Refuse::Error),
    }
}

/// This thread's shard of the current runtime's default timer, if the
/// cache has it and the timer is alive.
fn cached_shard() -> Option<Arc<Shard>> {
    let runtime = context::current_runtime()?;
    CACHE
        .try_with(|cache| {
            let cache = cache.borrow();
            let cached = cache.as_ref().filter(|c| c.runtime == runtime)?;
            let shard = cached.shard.upgrade()?;
            (!shard.shared.is_shutdown()).then_some(shard)
        })
        .ok()
        .flatten()
}

/// The current runtime's default timer, if the cache has it and it is
/// alive.
fn cached_timer() -> Option<Timer> {
    let runtime = context::current_runtime()?;
    CACHE
        .try_with(|cache| {
            let cache = cache.borrow();
            let cached = cache.as_ref().filter(|c| c.runtime == runtime)?;
            let inner = cached.inner.upgrade()?;
            (!inner.shared.is_shutdown()).then(|| Timer::from_inner(inner))
        })
        .ok()
        .flatten()
}

/// Whether the slow path lets tokio's "timers are disabled" panic through
/// (as `tokio::time::sleep` would panic) or turns it into an error.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Probe {
    Propagate,
    Catch,
}

/// The slow path: the registry's timer for the current runtime, started
/// if it has none, and remembered in this thread's cache.
#[track_caller]
fn lookup_or_start(probe: Probe) -> Result<Timer, TryCurrentError> {
    let handle = Handle::try_current().map_err(|_| TryCurrentError::missing_context())?;
    let runtime = handle.id();
    let timer = match find(runtime) {
        Some(timer) => timer,
        None => {
            if !time_enabled(&handle, probe) {
                return Err(TryCurrentError::time_disabled());
            }
            // Another thread may have started one meanwhile: use it.
            install(Builder::default_config(), &handle).unwrap_or_else(|existing| existing)
        }
    };
    remember(runtime, &timer);
    Ok(timer)
}

// `Builder::install` lives here, with the registry it writes to, so the
// builder knows nothing of runtime defaults.
impl Builder {
    /// Validates the settings, starts the timer's driver and makes the timer
    /// its runtime's default: the one [`Timer::current`] returns there and
    /// the free functions of [`tickwheel::time`](crate::time) wait on.
    ///
    /// Call it before anything in that runtime uses the default timer (at
    /// startup, right after building the runtime): a runtime's default is
    /// set once, by this or by its first use with the default settings.
    /// The runtime is the one given to [`runtime`](Builder::runtime), or
    /// else the current one. When it shuts down, the timer shuts down too
    /// and the runtime's default is released.
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build), and [`BuildError::AlreadyInstalled`] if
    /// the runtime already has a default timer (installed, or started by a
    /// first use); nothing is started then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::{BuildError, Timer};
    ///
    /// let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    /// Timer::builder()
    ///     .tick(Duration::from_millis(10))
    ///     .max_pending(100_000)
    ///     .runtime(rt.handle().clone())
    ///     .install()
    ///     .expect("first install");
    /// rt.block_on(async {
    ///     assert_eq!(Timer::current().tick(), Duration::from_millis(10));
    ///     tickwheel::time::sleep(Duration::from_millis(5)).await; // on that timer
    /// });
    /// // Set once: a second install is refused.
    /// let again = Timer::builder().runtime(rt.handle().clone()).install();
    /// assert_eq!(again.unwrap_err(), BuildError::AlreadyInstalled);
    /// ```
    pub fn install(self) -> Result<Timer, BuildError> {
        let (config, handle) = self.settle()?;
        install(config, &handle).map_err(|_existing| BuildError::AlreadyInstalled)
    }
}

/// Whether the current runtime has its time driver (see
/// `engine::tokio_compat`); with `Probe::Propagate`, tokio's own panic if
/// not.
#[track_caller]
fn time_enabled(handle: &Handle, probe: Probe) -> bool {
    match probe {
        Probe::Propagate => {
            tokio_compat::assert_time_driver();
            true
        }
        Probe::Catch => tokio_compat::has_time_driver(handle),
    }
}

fn find(runtime: runtime::Id) -> Option<Timer> {
    registry()
        .iter()
        .find(|(id, _)| *id == runtime)
        .map(|(_, timer)| timer.clone())
}

fn remember(runtime: runtime::Id, timer: &Timer) {
    let cached = Cached {
        runtime,
        inner: Arc::downgrade(timer.inner()),
        shard: Arc::downgrade(timer.inner().shard()),
    };
    // The old entry is dropped after the cell is released (dropping a weak
    // reference runs no user code, but keep the borrow short anyway).
    let old = CACHE.try_with(|cache| cache.borrow_mut().replace(cached));
    drop(old);
}

/// Starts a timer with `config` on `handle`'s runtime and makes it that
/// runtime's default, unless it has one already: then that one is the
/// error, and nothing is started.
pub(crate) fn install(config: Config, handle: &Handle) -> Result<Timer, Timer> {
    let runtime = handle.id();
    if let Some(existing) = find(runtime) {
        return Err(existing);
    }
    // Not under the registry's lock: see the module docs.
    let timer = Timer::start_with(config, handle, |inner| default_driver(runtime, inner));
    let mut entries = registry();
    if let Some((_, existing)) = entries.iter().find(|(id, _)| *id == runtime) {
        let existing = existing.clone();
        drop(entries);
        // Lost a race with another thread: this one never served anyone.
        timer.shutdown();
        return Err(existing);
    }
    entries.push((runtime, timer.clone()));
    drop(entries);
    // If the runtime dropped the driver task before the entry was there
    // (it was shutting down), its guard found nothing to remove; the guard
    // shut the timer down first, so this sees it and removes the entry.
    if timer.is_shutdown() {
        let removed = remove(runtime, timer.inner());
        drop(removed);
    }
    Ok(timer)
}

/// Removes `runtime`'s entry if it is the timer behind `inner`; returns it,
/// for the caller to drop after the lock is released.
fn remove(runtime: runtime::Id, inner: &Arc<Inner>) -> Option<Timer> {
    let mut entries = registry();
    let at = entries
        .iter()
        .position(|(id, timer)| *id == runtime && Arc::ptr_eq(timer.inner(), inner))?;
    Some(entries.swap_remove(at).1)
}

fn is_registered(runtime: runtime::Id, inner: &Arc<Inner>) -> bool {
    registry()
        .iter()
        .any(|(id, timer)| *id == runtime && Arc::ptr_eq(timer.inner(), inner))
}

/// Removes a default timer's registry entry when its driver task is dropped
/// (the runtime shutting down), shutting the timer down first.
struct Deregister {
    runtime: runtime::Id,
    inner: Arc<Inner>,
}

impl Drop for Deregister {
    fn drop(&mut self) {
        // First shut down, then remove: `install` relies on this order.
        self.inner.shut_down();
        let removed = remove(self.runtime, &self.inner);
        drop(removed);
    }
}

/// A default timer's driver task: the driver, then, if the timer was shut
/// down while the runtime lives on, a task that stays parked (costing
/// nothing) so that the runtime's end still drops it and removes the entry.
fn default_driver(runtime: runtime::Id, inner: Arc<Inner>) -> impl Future<Output = ()> + Send {
    let entry = Deregister {
        runtime,
        inner: inner.clone(),
    };
    let drive = driver::run(inner);
    async move {
        drive.await;
        if is_registered(entry.runtime, &entry.inner) {
            std::future::pending::<()>().await;
        }
        drop(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Runs `body` on a thread of its own and fails if it has not returned
    /// within 30 s: a timer that never fires, or a driver that never yields,
    /// then fails the test instead of hanging it.
    fn within_30_s(body: impl FnOnce() + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            body();
            done.send(()).unwrap();
        });
        match finished.recv_timeout(Duration::from_secs(30)) {
            Ok(()) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("an assertion failed on the test's thread (see its message above)")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("still running after 30 s: a timer never fired or a driver never yielded")
            }
        }
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    }

    fn registered(runtime: runtime::Id) -> bool {
        registry().iter().any(|(id, _)| *id == runtime)
    }

    /// A default timer's driver task waits out its runtime only while the
    /// timer is that runtime's registered default (so the entry goes with
    /// the runtime); one that is not registered, such as the loser of two
    /// threads racing to start the default, ends when it is shut down, even
    /// beside the runtime's registered default.
    #[test]
    fn an_unregistered_default_drivers_task_ends_at_shutdown() {
        within_30_s(|| {
            let rt = current_thread();
            let runtime = rt.handle().id();
            rt.block_on(async {
                let default = Timer::current();
                let alive = || {
                    tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks()
                };
                tokio::task::yield_now().await;
                assert_eq!(alive(), 1, "the registered default's driver");
                let config = Builder::new().validate().unwrap();
                let handle = tokio::runtime::Handle::current();
                let loser =
                    Timer::start_with(config, &handle, |inner| default_driver(runtime, inner));
                tokio::task::yield_now().await;
                assert_eq!(alive(), 2);
                loser.shutdown();
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
                assert_eq!(alive(), 1, "the unregistered driver's task is still alive");
                assert!(!default.is_shutdown());
            });
        });
    }

    /// A runtime's entry goes when the runtime does, and with it the timer
    /// (nothing but the weak references of a thread's cache remain).
    #[test]
    fn a_runtime_that_ends_releases_its_timer() {
        // On a thread of its own, so that a timer that never fires (its
        // driver then keeps the paused runtime busy, and tokio's clock never
        // auto-advances) fails this test instead of hanging it.
        within_30_s(|| {
            let mut timers = Vec::new();
            for _ in 0..200 {
                let rt = current_thread();
                let id = rt.handle().id();
                let timer = rt.block_on(async {
                    crate::time::sleep(Duration::from_millis(1)).await;
                    Timer::current()
                });
                assert!(registered(id));
                timers.push(Arc::downgrade(timer.inner()));
                drop(timer);
                drop(rt);
                assert!(!registered(id), "the runtime ended but its entry stayed");
            }
            assert!(
                timers.iter().all(|t| t.strong_count() == 0),
                "a dead runtime's timer is still alive"
            );
        });
    }

    /// A timer shut down by hand stays its runtime's default until the
    /// runtime ends, and its driver task stays parked until then.
    #[test]
    fn a_shut_down_default_stays_until_the_runtime_ends() {
        // On a thread of its own: a driver whose pass never ends would hang
        // the yield below.
        within_30_s(|| {
            let rt = current_thread();
            let id = rt.handle().id();
            let first = rt.block_on(async {
                let timer = Timer::current();
                timer.shutdown();
                tokio::task::yield_now().await; // the driver sees it
                timer
            });
            assert!(registered(id));
            rt.block_on(async {
                let again = Timer::current();
                assert!(Arc::ptr_eq(again.inner(), first.inner()));
                assert!(again.try_sleep(Duration::from_secs(1)).is_err());
            });
            drop(rt);
            assert!(!registered(id));
        });
    }

    /// Two threads that start the same runtime's default at once end with
    /// one timer; the loser's driver retires.
    #[test]
    fn racing_starts_agree_on_one_timer() {
        // On a thread of its own, so that a driver that never yields (its
        // runtime's drop then waits for it forever) fails this test instead
        // of hanging it.
        within_30_s(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let config = Builder::new().validate().unwrap();
            let handle = rt.handle().clone();
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let handle = handle.clone();
                    std::thread::spawn(move || {
                        install(config, &handle).unwrap_or_else(|existing| existing)
                    })
                })
                .collect();
            let timers: Vec<Timer> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            for timer in &timers[1..] {
                assert!(Arc::ptr_eq(timer.inner(), timers[0].inner()));
            }
            assert!(!timers[0].is_shutdown());
            drop(timers);
            drop(rt);
        });
    }
}
