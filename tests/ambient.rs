//! The ambient timer (`Timer::current`) and `tickwheel::time`'s free
//! functions: one timer per runtime, configured before first use or started
//! on it, and the functions behaving as `tokio::time`'s under `advance`.
//!
//! Parity tests put a `tickwheel::time` future and the same `tokio::time`
//! future side by side on a paused clock, as a `tokio::time` user writes a
//! timer test (tokio-test's mock task, `assert_pending!`, `assert_ready!`,
//! `is_woken()`, no extra yields after `advance`). The runtime's default
//! timer is started by the first call, at the test's start, so its 1 ms
//! ticks (the default) are tokio's millisecond grid, and whole-millisecond
//! deadlines match tokio's to the instant.

mod common;

use std::future::pending;
use std::time::Duration;

use common::watchdog::within_30_s;

use tickwheel::time::{self, Instant};
use tickwheel::{BuildError, Builder, Timer};
use tokio_test::{assert_pending, assert_ready, assert_ready_eq, assert_ready_err, task};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// ---------------------------------------------------------------------------
// One timer per runtime

/// Two runtimes side by side (alternately on one thread, which exercises the
/// thread's cache) each get their own timer: sleeps count on their own
/// runtime's timer only, and one runtime ending leaves the other's alive.
#[test]
fn two_runtimes_side_by_side_get_different_timers() {
    let _watchdog = common::Watchdog::start();
    let (a, b) = (common::paused_runtime(), common::paused_runtime());
    let timer_a = a.block_on(async { Timer::current() });
    let timer_b = b.block_on(async { Timer::current() });
    for (rt, sleeps) in [(&a, 3), (&b, 1), (&a, 2)] {
        rt.block_on(async {
            for _ in 0..sleeps {
                time::sleep(ms(100)).await;
            }
        });
    }
    assert_eq!(timer_a.stats().fired, 5);
    assert_eq!(timer_b.stats().fired, 1);

    drop(a);
    assert!(timer_a.is_shutdown(), "a's runtime ended, and its timer");
    assert!(!timer_b.is_shutdown());
    b.block_on(async {
        time::sleep(ms(10)).await;
        assert_eq!(Timer::current().stats().fired, 2);
    });
}

/// Runtimes on two threads at once, each making sleeps through the free
/// functions, never see each other's timer.
#[test]
fn runtimes_on_two_threads_use_their_own_timers() {
    let _watchdog = common::Watchdog::start();
    let threads: Vec<_> = [3u64, 7]
        .into_iter()
        .map(|n| {
            std::thread::spawn(move || {
                let rt = common::paused_runtime();
                rt.block_on(async move {
                    let mut tasks = Vec::new();
                    for _ in 0..n {
                        tasks.push(tokio::spawn(time::sleep(ms(50))));
                    }
                    for task in tasks {
                        task.await.unwrap();
                    }
                    Timer::current().stats().registered
                })
            })
        })
        .collect();
    let registered: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(registered, [3, 7]);
}

/// Runtime after runtime on one thread (as consecutive `#[tokio::test]`s
/// run): each gets a live timer of its own, and the last one is shut down
/// once its runtime has ended.
#[test]
fn consecutive_runtimes_each_get_a_live_timer() {
    let _watchdog = common::Watchdog::start();
    let mut previous: Option<Timer> = None;
    for _ in 0..5 {
        let rt = common::paused_runtime();
        let timer = rt.block_on(async {
            let start = Instant::now();
            time::sleep(ms(30)).await;
            assert_eq!(start.elapsed(), ms(30));
            let timer = Timer::current();
            assert!(!timer.is_shutdown());
            assert_eq!(timer.stats().fired, 1, "a fresh timer per runtime");
            timer
        });
        if let Some(previous) = &previous {
            assert!(previous.is_shutdown());
        }
        drop(rt);
        assert!(timer.is_shutdown());
        previous = Some(timer);
    }
}

/// A multi-thread runtime's tasks, on either worker, share its one timer.
#[test]
fn a_multi_thread_runtime_has_one_timer_for_every_worker() {
    let _watchdog = common::Watchdog::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|_| tokio::spawn(async { time::sleep(ms(20)).await }))
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(Timer::current().stats().fired, 16);
    });
}

// ---------------------------------------------------------------------------
// Runtimes nested or driven in turn: the default timer is the one of the
// runtime whose context is current when the sleep is made, as for
// `tokio::time::sleep`.

/// Makes a 60 s sleep through `tickwheel::time` and through `tokio::time` on
/// the current (paused) runtime and advances its clock 60 s: both wake, as
/// they do only if the wheel's sleep is on this runtime's timer. Returns
/// that timer.
async fn sleep_60_s_beside_tokios() -> Timer {
    let mut wheel = task::spawn(time::sleep(ms(60_000)));
    let mut tokio = task::spawn(tokio::time::sleep(ms(60_000)));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(60_000)).await;
    assert!(tokio.is_woken());
    assert!(
        wheel.is_woken(),
        "the sleep is on another runtime's timer: tokio's fired, the wheel's did not"
    );
    assert_ready!(wheel.poll());
    assert_ready!(tokio.poll());
    Timer::current()
}

/// A task of a multi-thread runtime A that drives a paused runtime B inside
/// `block_in_place`: within B's `block_on` the default timer is B's (B's
/// tick, B's clock), and back in the task it is A's again.
#[test]
fn a_runtime_driven_inside_block_in_place_uses_its_own_timer() {
    within_30_s(|| {
        let a = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        a.block_on(async {
            tokio::spawn(async {
                // A's default, now remembered for this task and thread.
                time::sleep(ms(1)).await;
                let timer_a = Timer::current();
                let timer_b = tokio::task::block_in_place(|| {
                    common::paused_runtime().block_on(sleep_60_s_beside_tokios())
                });
                assert_eq!(timer_b.stats().fired, 1);
                assert!(timer_b.is_shutdown(), "B ended, and its timer with it");
                assert!(!timer_a.is_shutdown());
                assert_eq!(timer_a.stats().registered, 1, "B's sleep went to A");
                time::sleep(ms(1)).await;
                assert_eq!(timer_a.stats().fired, 2, "back in A, A's timer");
            })
            .await
            .unwrap();
        });
    });
}

/// A `LocalSet` driven first by paused runtime A, then by paused runtime B
/// while A sits idle: a task that used A's default timer, polled by B, gets
/// B's, so its 60 s sleep fires on B's clock as `tokio::time::sleep` does.
#[test]
fn a_local_set_driven_by_one_runtime_then_another_uses_the_current_ones_timer() {
    within_30_s(|| {
        let (a, b) = (common::paused_runtime(), common::paused_runtime());
        let local = tokio::task::LocalSet::new();
        let (started, on_a) = tokio::sync::oneshot::channel();
        let (go, to_b) = tokio::sync::oneshot::channel::<()>();
        let job = local.spawn_local(async move {
            // Driven by A: A's default, remembered for this task.
            time::sleep(ms(10)).await;
            started.send(Timer::current()).unwrap();
            to_b.await.unwrap();
            // Driven by B from here on; nothing drives A.
            sleep_60_s_beside_tokios().await
        });
        let timer_a = a.block_on(local.run_until(on_a)).unwrap();
        go.send(()).unwrap();
        let timer_b = b.block_on(local.run_until(job)).unwrap();
        assert_eq!(timer_a.stats().registered, 1, "B's sleep went to A");
        assert_eq!(timer_b.stats().fired, 1);
        drop(a);
        assert!(timer_a.is_shutdown());
        assert!(!timer_b.is_shutdown(), "A's end is not B's");
    });
}

// ---------------------------------------------------------------------------
// Configuration before first use

#[test]
fn an_installed_timer_is_the_runtimes_default() {
    let _watchdog = common::Watchdog::start();
    let rt = common::paused_runtime();
    let installed = Timer::builder()
        .tick(ms(2))
        .slots(64)
        .max_pending(2)
        .shards(1)
        .runtime(rt.handle().clone())
        .install()
        .unwrap();
    rt.block_on(async {
        let current = Timer::current();
        assert_eq!(current.tick(), ms(2));
        assert_eq!(current.slots(), 64);
        assert_eq!(current.max_pending(), Some(2));
        assert_eq!(current.shards(), 1);
        // A 2 ms tick: a 3 ms sleep rounds up to 4 ms (the default 1 ms
        // tick would end it at 3 ms).
        let start = Instant::now();
        time::sleep(ms(3)).await;
        assert_eq!(start.elapsed(), ms(4));
        // max_pending applies to the free functions too.
        let _held = (time::sleep(ms(5)), time::sleep(ms(5)));
        assert!(current.try_sleep(ms(5)).unwrap_err().is_at_capacity());
    });
    assert_eq!(installed.stats().fired, 1);
}

#[test]
fn installing_from_inside_the_runtime_uses_it() {
    let _watchdog = common::Watchdog::start();
    let rt = common::paused_runtime();
    rt.block_on(async {
        Timer::builder().tick(ms(2)).install().unwrap();
        assert_eq!(Timer::current().tick(), ms(2));
    });
}

/// Once the runtime has a default timer, started by a first use or
/// installed, a later install is refused with a typed error, and the
/// default stays as it was.
#[test]
fn a_late_install_is_refused() {
    let _watchdog = common::Watchdog::start();
    let used = common::paused_runtime();
    used.block_on(async { time::sleep(ms(10)).await });
    let late_tick = ms(10);
    assert_ne!(late_tick, Builder::DEFAULT_TICK, "the refusal must show");
    let late = Timer::builder()
        .tick(late_tick)
        .runtime(used.handle().clone())
        .install();
    assert_eq!(late.unwrap_err(), BuildError::AlreadyInstalled);
    used.block_on(async { assert_eq!(Timer::current().tick(), Builder::DEFAULT_TICK) });

    let installed = common::paused_runtime();
    let install = || {
        Timer::builder()
            .tick(ms(5))
            .runtime(installed.handle().clone())
            .install()
    };
    install().unwrap();
    assert_eq!(install().unwrap_err(), BuildError::AlreadyInstalled);
    // Bad settings are reported before anything else.
    let bad = Timer::builder()
        .slots(0)
        .runtime(installed.handle().clone())
        .install();
    assert_eq!(bad.unwrap_err(), BuildError::ZeroSlots);
}

#[test]
fn installing_outside_a_runtime_needs_one() {
    let _watchdog = common::Watchdog::start();
    assert_eq!(
        Timer::builder().install().unwrap_err(),
        BuildError::NoRuntime
    );
}

// ---------------------------------------------------------------------------
// Outside a runtime

#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn sleep_outside_a_runtime_panics() {
    let _watchdog = common::Watchdog::start();
    drop(time::sleep(ms(10)));
}

#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn timeout_outside_a_runtime_panics() {
    let _watchdog = common::Watchdog::start();
    drop(time::timeout(ms(10), async {}));
}

#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn interval_outside_a_runtime_panics() {
    let _watchdog = common::Watchdog::start();
    let _ = time::interval(ms(10));
}

#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn current_outside_a_runtime_panics() {
    let _watchdog = common::Watchdog::start();
    let _ = Timer::current();
}

/// Where the panic of `f` says it happened, if `f` panics. The hook is
/// installed once and records only for the thread that asks; every other
/// panic goes to the hook that was there before.
fn panic_location(f: impl FnOnce()) -> Option<(String, u32)> {
    use std::cell::RefCell;
    use std::sync::Once;
    thread_local! {
        static CAUGHT: RefCell<Option<Option<(String, u32)>>> = const { RefCell::new(None) };
    }
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `try_with`: a panic on a thread whose locals are being torn
            // down must not panic again in here.
            let recorded = CAUGHT.try_with(|caught| {
                let mut caught = caught.borrow_mut();
                caught.as_mut().map(|slot| {
                    *slot = info.location().map(|l| (l.file().to_owned(), l.line()));
                })
            });
            if !matches!(recorded, Ok(Some(()))) {
                previous(info);
            }
        }));
    });
    CAUGHT.with(|caught| *caught.borrow_mut() = Some(None));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let location = CAUGHT.with(|caught| caught.borrow_mut().take()).flatten();
    assert!(result.is_err(), "expected a panic");
    location
}

/// The panic names the caller's line, as tokio's does: every call between
/// the user's and the runtime lookup is `#[track_caller]`.
#[test]
fn a_panic_outside_a_runtime_names_the_callers_line() {
    let _watchdog = common::Watchdog::start();
    let here = |line| Some((file!().to_owned(), line));
    let line = line!() + 1;
    let sleep = panic_location(|| drop(time::sleep(ms(10))));
    assert_eq!(sleep, here(line));
    let line = line!() + 1;
    let until = panic_location(|| drop(time::sleep_until(Instant::now())));
    assert_eq!(until, here(line));
    let line = line!() + 1;
    let timeout = panic_location(|| drop(time::timeout(ms(10), async {})));
    assert_eq!(timeout, here(line));
}

/// So does the panic at `max_pending`, the panicking forms' other refusal.
#[test]
fn a_panic_at_max_pending_names_the_callers_line() {
    let _watchdog = common::Watchdog::start();
    let here = |line| Some((file!().to_owned(), line));
    let rt = common::paused_runtime();
    let _guard = rt.enter();
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _held = timer.sleep(ms(10));
    let line = line!() + 1;
    let sleep = panic_location(|| drop(timer.sleep(ms(10))));
    assert_eq!(sleep, here(line));
    let line = line!() + 1;
    let until = panic_location(|| drop(timer.sleep_until(Instant::now())));
    assert_eq!(until, here(line));
    let line = line!() + 1;
    let timeout = panic_location(|| drop(timer.timeout(ms(10), async {})));
    assert_eq!(timeout, here(line));
}

/// After its runtime has ended, the thread is outside any runtime again.
#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn sleep_after_the_runtime_ended_panics() {
    let _watchdog = common::Watchdog::start();
    let rt = common::paused_runtime();
    rt.block_on(async { time::sleep(ms(10)).await });
    drop(rt);
    drop(time::sleep(ms(10)));
}

#[test]
fn try_current_reports_a_missing_runtime() {
    let _watchdog = common::Watchdog::start();
    let err = Timer::try_current().unwrap_err();
    assert!(err.is_missing_context());
    assert!(!err.is_time_disabled());
    assert!(err.to_string().contains("within a Tokio 1.x runtime"));
}

/// A runtime without its time driver: `try_current` says so, the free
/// functions panic with tokio's own message, as `tokio::time::sleep` does.
#[test]
fn a_runtime_without_time_has_no_default_timer() {
    let _watchdog = common::Watchdog::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = rt.block_on(async { Timer::try_current() }).unwrap_err();
    assert!(err.is_time_disabled());
    let panic = rt
        .block_on(async { std::panic::catch_unwind(|| time::sleep(ms(10))).map(drop) })
        .unwrap_err();
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(message.contains("timers are disabled"), "{message}");
}

// ---------------------------------------------------------------------------
// The free functions as tokio's, under advance

#[tokio::test(start_paused = true)]
async fn sleep_wakes_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let mut wheel = task::spawn(time::sleep(ms(100)));
    let mut tokio = task::spawn(tokio::time::sleep(ms(100)));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());

    tokio::time::advance(ms(99)).await;
    assert!(!wheel.is_woken());
    assert!(!tokio.is_woken());
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());

    tokio::time::advance(ms(1)).await;
    assert!(wheel.is_woken());
    assert!(tokio.is_woken());
    assert_ready!(wheel.poll());
    assert_ready!(tokio.poll());
}

#[tokio::test(start_paused = true)]
async fn sleep_until_wakes_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let deadline = Instant::now() + ms(250);
    let mut wheel = task::spawn(time::sleep_until(deadline));
    let mut tokio = task::spawn(tokio::time::sleep_until(deadline));
    assert_eq!(wheel.deadline(), deadline);
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(249)).await;
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(1)).await;
    assert!(wheel.is_woken());
    assert!(tokio.is_woken());
    assert_ready!(wheel.poll());
    assert_ready!(tokio.poll());
    // A deadline that has passed: ready on the first poll, as tokio's.
    assert_ready!(task::spawn(time::sleep_until(deadline)).poll());
}

#[tokio::test(start_paused = true)]
async fn timeout_elapses_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let mut wheel = task::spawn(time::timeout(ms(50), pending::<()>()));
    let mut tokio = task::spawn(tokio::time::timeout(ms(50), pending::<()>()));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(49)).await;
    assert!(!wheel.is_woken());
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(1)).await;
    assert!(wheel.is_woken());
    assert!(tokio.is_woken());
    let elapsed = assert_ready_err!(wheel.poll());
    assert!(!elapsed.is_shutdown());
    assert_ready_err!(tokio.poll());

    // A future that completes first wins, as with tokio's.
    let mut fast = task::spawn(time::timeout(ms(50), async { 7 }));
    assert_ready_eq!(fast.poll(), Ok(7));
}

#[tokio::test(start_paused = true)]
async fn timeout_at_elapses_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let deadline = Instant::now() + ms(40);
    let mut wheel = task::spawn(time::timeout_at(deadline, pending::<()>()));
    let mut tokio = task::spawn(tokio::time::timeout_at(deadline, pending::<()>()));
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(39)).await;
    assert_pending!(wheel.poll());
    assert_pending!(tokio.poll());
    tokio::time::advance(ms(1)).await;
    assert!(wheel.is_woken());
    assert_ready_err!(wheel.poll());
    assert_ready_err!(tokio.poll());
}

/// Tick for tick with `tokio::time::interval`: the first at once, then one
/// per period, each woken by the `advance` that reaches it.
#[tokio::test(start_paused = true)]
async fn interval_ticks_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let start = Instant::now();
    let mut wheel = task::spawn(time::interval(ms(20)));
    let mut tokio = task::spawn(tokio::time::interval(ms(20)));
    assert_ready_eq!(wheel.enter(|cx, mut i| i.poll_tick(cx)), start);
    assert_ready_eq!(tokio.enter(|cx, mut i| i.poll_tick(cx)), start);
    for n in 1..=3 {
        assert_pending!(wheel.enter(|cx, mut i| i.poll_tick(cx)));
        assert_pending!(tokio.enter(|cx, mut i| i.poll_tick(cx)));
        tokio::time::advance(ms(19)).await;
        assert!(!wheel.is_woken());
        assert!(!tokio.is_woken());
        tokio::time::advance(ms(1)).await;
        assert!(wheel.is_woken(), "tick {n}");
        assert!(tokio.is_woken(), "tick {n}");
        let at = start + ms(20 * n);
        assert_ready_eq!(wheel.enter(|cx, mut i| i.poll_tick(cx)), at);
        assert_ready_eq!(tokio.enter(|cx, mut i| i.poll_tick(cx)), at);
    }
}

#[tokio::test(start_paused = true)]
async fn interval_at_starts_when_tokios_does() {
    let _watchdog = common::Watchdog::start();
    let start = Instant::now() + ms(100);
    let mut wheel = task::spawn(time::interval_at(start, ms(30)));
    let mut tokio = task::spawn(tokio::time::interval_at(start, ms(30)));
    assert_pending!(wheel.enter(|cx, mut i| i.poll_tick(cx)));
    assert_pending!(tokio.enter(|cx, mut i| i.poll_tick(cx)));
    tokio::time::advance(ms(100)).await;
    assert!(wheel.is_woken());
    assert_ready_eq!(wheel.enter(|cx, mut i| i.poll_tick(cx)), start);
    assert_ready_eq!(tokio.enter(|cx, mut i| i.poll_tick(cx)), start);
}

/// The re-exports are the types `tokio::time` users name.
#[tokio::test(start_paused = true)]
async fn the_module_names_tokios_types() {
    let _watchdog = common::Watchdog::start();
    let sleep: time::Sleep = time::sleep(ms(50));
    let timeout: time::Timeout<time::Sleep> = time::timeout(ms(10), sleep);
    let err: time::error::Elapsed = timeout.await.unwrap_err();
    assert!(!err.is_shutdown());
    let mut interval: time::Interval = time::interval(ms(10));
    interval.set_missed_tick_behavior(time::MissedTickBehavior::Delay);
    let _: time::Instant = interval.tick().await;
    let _: Option<time::error::Error> = Timer::current().try_sleep(ms(1)).err();
}

/// A default timer shut down by hand stays shut down: new waits through the
/// free functions fail loudly instead of completing at once.
#[test]
#[should_panic(expected = "the timer has shut down")]
fn a_shut_down_default_timer_refuses_new_waits() {
    let _watchdog = common::Watchdog::start();
    let rt = common::paused_runtime();
    rt.block_on(async {
        Timer::current().shutdown();
        drop(time::sleep(ms(10)));
    });
}
