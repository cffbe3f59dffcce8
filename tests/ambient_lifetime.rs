//! A runtime's default timer, once its runtime has ended, makes no new
//! sleep: not through a thread's cache (which still names it), not through
//! the registry (which lets go of it only once it has shut down).
//!
//! The driver's retirement counts on this: no sleep is ever made on a
//! default timer after its last handle is gone, and the registry's handle
//! is the last one of a default timer nobody else holds. The driver task's
//! guard therefore shuts the timer down *before* it removes the registry's
//! entry, and a thread's cached shard is refused once its timer has shut
//! down (the refusal panics, as `tokio::time` does on a runtime that is
//! gone; `try_*` methods return `Error::is_shutdown`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

use common::watchdog::within_30_s;
use common::{panic_message, poll_once, poll_with};

use tickwheel::time::{self, Instant};
use tickwheel::{Builder, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Asserts that `wait` (a new wait through `tickwheel::time`) is refused
/// with tickwheel's shut-down panic, and that `dead` (the ended runtime's
/// default) has no live sleep. A wait that was made is kept while the
/// failure says where its sleep went.
#[track_caller]
fn assert_refused<T>(what: &str, dead: &Timer, wait: impl FnOnce() -> T) {
    let mut made = None;
    match panic_message(|| made = Some(wait())) {
        Some(message) => assert!(
            message.contains("the timer has shut down"),
            "{what}: refused, but not as a shut-down timer: {message}"
        ),
        None => panic!(
            "{what} made a wait after its runtime ended (the ended runtime's \
             default timer now has {} live sleep(s))",
            dead.stats().live
        ),
    }
    drop(made);
    assert_eq!(
        dead.stats().live,
        0,
        "{what}: a sleep lives on the ended runtime's default timer"
    );
}

/// A thread whose cache names a runtime's default timer (it made a sleep
/// there), after that runtime has ended, enters the runtime's context again
/// through a handle it kept: the cache's runtime id matches, and its
/// shard is still there (the test holds the timer), yet every new wait
/// through `tickwheel::time` is refused, and `Timer::try_current` there
/// gives a shut-down timer whose `try_sleep` errs.
#[test]
fn a_stale_cache_refuses_new_waits_after_its_runtime_ended() {
    within_30_s(|| {
        let rt = common::paused_runtime();
        let handle = rt.handle().clone();
        let dead = rt.block_on(async {
            // Remembered in this thread's cache, and then taken from it.
            time::sleep(ms(10)).await;
            time::sleep(ms(10)).await;
            Timer::current()
        });
        assert_eq!(dead.stats().fired, 2);
        drop(rt);
        assert!(dead.is_shutdown(), "the runtime ended, its default did not");
        assert_eq!(dead.stats().live, 0);

        let _context = handle.enter();
        assert_refused("time::sleep", &dead, || time::sleep(ms(10)));
        // A zero sleep is made complete, but made all the same.
        assert_refused("time::sleep(0)", &dead, || time::sleep(ms(0)));
        assert_refused("time::sleep_until", &dead, || {
            time::sleep_until(Instant::now() + ms(10))
        });
        assert_refused("time::timeout", &dead, || {
            time::timeout(ms(10), std::future::pending::<()>())
        });
        assert_refused("time::interval", &dead, || time::interval(ms(10)));
        // Again, now that the lookups above may have replaced the cache.
        assert_refused("time::sleep, again", &dead, || time::sleep(ms(10)));

        let current = Timer::try_current().expect("the ended runtime's context is current");
        assert!(
            current.is_shutdown(),
            "the ended runtime has a live default timer"
        );
        let err = current.try_sleep(ms(10)).unwrap_err();
        assert!(err.is_shutdown(), "{err}");
        assert_eq!(dead.stats().live, 0);
    });
}

/// What the waker of a sleep pending on a default timer sees when the
/// runtime's end shuts that timer down (it is woken inside the shutdown,
/// on the thread dropping the runtime, in that runtime's context).
#[derive(Debug, Default)]
struct Seen {
    /// The runtime whose context was current.
    runtime: Option<tokio::runtime::Id>,
    held_is_shut_down: bool,
    /// `Timer::try_current()`'s tick and shutdown state, or its error.
    current: Option<Result<(Duration, bool), String>>,
    /// `time::sleep`'s panic message (`None`: it made a sleep).
    free_sleep: Option<Option<String>>,
}

struct AtShutdown {
    held: Timer,
    seen: Mutex<Seen>,
    wakes: AtomicUsize,
}

impl Wake for AtShutdown {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Nothing here may panic out: the shutdown counts a waker's panic
        // and goes on, so the test thread asserts on what is recorded.
        if self.wakes.fetch_add(1, Ordering::SeqCst) > 0 {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
        let held_is_shut_down = self.held.is_shutdown();
        let current = Some(
            Timer::try_current()
                .map(|timer| (timer.tick(), timer.is_shutdown()))
                .map_err(|err| err.to_string()),
        );
        let free_sleep = Some(panic_message(|| drop(time::sleep(ms(10)))));
        *self.seen.lock().unwrap() = Seen {
            runtime,
            held_is_shut_down,
            current,
            free_sleep,
        };
    }
}

/// The order in the driver task's guard, seen from inside it: when the
/// runtime's end shuts its default timer down, the registry still holds
/// that timer, already shut down. A sleep pending on it is woken inside the
/// shutdown; its waker, in the ending runtime's context, finds through
/// `Timer::try_current` the installed timer (its 5 ms tick), shut down, not
/// a fresh default (1 ms) started because the entry was gone, and its
/// `time::sleep` is refused. Were the entry removed first, a lookup in
/// that gap would find no default (and start one), and a thread's cached
/// shard could make a sleep on a timer whose last handle is gone.
///
/// Two guards in the driver task shut the timer down: the driver's own
/// exit guard (`driver.rs`) and the registry's (`ambient.rs`, which then
/// removes the entry). Which is dropped first depends on how the task's
/// future drops its parts, and differs between a task dropped while
/// waiting (`driver_started`) and one dropped before its first poll; the
/// entry must go last either way.
fn the_registry_lets_go_only_once_shut_down(driver_started: bool) {
    within_30_s(move || {
        let rt = common::paused_runtime();
        let installed = Builder::new()
            .tick(ms(5))
            .runtime(rt.handle().clone())
            .install()
            .expect("the runtime's first default");
        let probe = Arc::new(AtShutdown {
            held: installed.clone(),
            seen: Mutex::new(Seen::default()),
            wakes: AtomicUsize::new(0),
        });
        let waker = Waker::from(probe.clone());
        if driver_started {
            // The driver task's first poll, and then it waits.
            rt.block_on(tokio::task::yield_now());
        }
        let mut pending = {
            let _context = rt.enter();
            let current = Timer::current(); // now in this thread's cache
            assert_eq!(current.tick(), ms(5), "not the installed default");
            drop(current);
            let mut sleep = time::sleep(ms(60_000));
            assert!(poll_with(&mut sleep, &waker).is_pending());
            sleep
        };
        assert_eq!(installed.pending(), 1);
        let runtime = rt.handle().id();
        drop(rt);

        assert!(installed.is_shutdown());
        assert_eq!(probe.wakes.load(Ordering::SeqCst), 1, "not woken once");
        let seen = std::mem::take(&mut *probe.seen.lock().unwrap());
        assert_eq!(
            seen.runtime,
            Some(runtime),
            "woken outside the ending runtime's context: {seen:?}"
        );
        assert!(
            seen.held_is_shut_down,
            "woken before the shutdown: {seen:?}"
        );
        assert_eq!(
            seen.current,
            Some(Ok((ms(5), true))),
            "inside the guard's shutdown, the registry no longer held the \
             runtime's shut-down default (it was removed before the shutdown, \
             so a fresh timer was started): {seen:?}"
        );
        let refused = seen.free_sleep.expect("recorded");
        let message = refused.expect("time::sleep made a sleep on a shut-down default");
        assert!(message.contains("the timer has shut down"), "{message}");

        assert_eq!(poll_once(&mut pending), Poll::Ready(()));
        drop(pending);
        assert_eq!(installed.stats().live, 0);
    });
}

#[test]
fn the_registry_lets_go_only_once_shut_down_of_a_running_driver() {
    the_registry_lets_go_only_once_shut_down(true);
}

#[test]
fn the_registry_lets_go_only_once_shut_down_of_a_driver_never_polled() {
    the_registry_lets_go_only_once_shut_down(false);
}

/// Threads making sleeps through `tickwheel::time` (after their first,
/// from their cached shard) in a multi-thread runtime's context while the
/// runtime ends: each call either makes a sleep, which then completes like
/// any sleep at a shutdown, or is refused; none made after a thread saw the
/// timer shut down succeeds; and every sleep dropped, the timer has none
/// live.
#[test]
fn sleeps_racing_the_runtimes_end_are_refused_or_end_with_it() {
    const THREADS: usize = 4;
    const BEFORE_THE_END: usize = 200;
    within_30_s(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let timer = rt.block_on(async { Timer::current() });
        let started = Arc::new(Barrier::new(THREADS + 1));
        let spinners: Vec<_> = (0..THREADS)
            .map(|_| {
                let (handle, timer, started) = (handle.clone(), timer.clone(), started.clone());
                std::thread::spawn(move || {
                    let _context = handle.enter();
                    let mut made = Vec::new();
                    loop {
                        if made.len() == BEFORE_THE_END {
                            started.wait();
                        }
                        let was_shut_down = timer.is_shutdown();
                        let duration = ms(1 + made.len() as u64 % 50);
                        match panic_message(|| made.push(time::sleep(duration))) {
                            None if was_shut_down => {
                                panic!("a sleep was made after its timer was seen shut down")
                            }
                            None => {
                                let sleep = made.last_mut().unwrap();
                                let _ = poll_once(sleep); // registers, or is done
                            }
                            Some(message) => {
                                assert!(message.contains("the timer has shut down"), "{message}");
                                assert!(
                                    timer.is_shutdown(),
                                    "refused, but the timer is not shut down"
                                );
                                return made;
                            }
                        }
                    }
                })
            })
            .collect();
        started.wait();
        drop(rt);
        assert!(timer.is_shutdown());
        let mut total = 0;
        for spinner in spinners {
            let made = spinner.join().expect("a spinner failed (see above)");
            assert!(made.len() >= BEFORE_THE_END);
            total += made.len();
            for mut sleep in made {
                assert_eq!(
                    poll_once(&mut sleep),
                    Poll::Ready(()),
                    "a sleep made before the end still waits after it"
                );
            }
        }
        let stats = timer.stats();
        assert_eq!((stats.live, stats.pending), (0, 0), "{stats:?}");
        assert!(stats.registered as usize <= total);
    });
}
