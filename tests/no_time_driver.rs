//! A runtime built without its time driver (no `enable_time`): no timer
//! can run on it, so none is made. `Builder::build` and `Builder::install`
//! refuse with `BuildError::NoTimeDriver`, whose message names
//! `enable_time`; the runtime's default timer is refused too (the free
//! functions and `Timer::current` panic with tokio's own message, as
//! `tokio::time::sleep` does; `Timer::try_current` errs). On both runtime
//! flavours. Before, `build` returned a timer whose sleeps completed at
//! once, as if their deadlines had passed.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use tickwheel::{time, BuildError, Timer};
use tokio::runtime::{Builder, Runtime};

/// Both flavours, each without `enable_time` (I/O on, to show it is the
/// time driver that matters).
fn runtimes_without_time() -> Vec<(&'static str, Runtime)> {
    vec![
        (
            "current-thread",
            Builder::new_current_thread().enable_io().build().unwrap(),
        ),
        (
            "1 worker",
            Builder::new_multi_thread()
                .worker_threads(1)
                .enable_io()
                .build()
                .unwrap(),
        ),
    ]
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn build_and_install_refuse_a_runtime_without_a_time_driver() {
    common::watchdog::within_30_s(|| {
        for (flavour, rt) in runtimes_without_time() {
            let given = Timer::builder().runtime(rt.handle().clone()).build();
            assert_eq!(given.unwrap_err(), BuildError::NoTimeDriver, "{flavour}");
            let current = rt.block_on(async { Timer::builder().build() });
            assert_eq!(current.unwrap_err(), BuildError::NoTimeDriver, "{flavour}");
            let installed = Timer::builder()
                .tick(Duration::from_millis(5))
                .runtime(rt.handle().clone())
                .install();
            assert_eq!(
                installed.unwrap_err(),
                BuildError::NoTimeDriver,
                "{flavour}"
            );
            // Nothing was installed: the default is still refused, not the
            // 5 ms timer.
            let err = rt.block_on(async { Timer::try_current() }).unwrap_err();
            assert!(err.is_time_disabled(), "{flavour}: {err}");
        }
    });
}

#[test]
fn the_refusal_names_enable_time() {
    let message = BuildError::NoTimeDriver.to_string();
    assert!(message.contains("enable_time"), "{message}");
}

#[test]
fn the_default_timer_panics_or_errs_as_tokio_does() {
    common::watchdog::within_30_s(|| {
        for (flavour, rt) in runtimes_without_time() {
            rt.block_on(async {
                let err = Timer::try_current().unwrap_err();
                assert!(err.is_time_disabled(), "{flavour}");
                assert!(err.to_string().contains("enable_time"), "{flavour}: {err}");
                for (what, attempt) in [
                    (
                        "Timer::current",
                        Box::new(|| drop(Timer::current())) as Box<dyn Fn()>,
                    ),
                    ("Timer::new", Box::new(|| drop(Timer::new()))),
                    (
                        "time::sleep",
                        Box::new(|| drop(time::sleep(Duration::from_millis(200)))),
                    ),
                    (
                        "time::timeout",
                        Box::new(|| drop(time::timeout(Duration::from_millis(200), async {}))),
                    ),
                    (
                        "time::interval",
                        Box::new(|| drop(time::interval(Duration::from_millis(200)))),
                    ),
                ] {
                    let payload = catch_unwind(AssertUnwindSafe(attempt))
                        .expect_err("a wait on a runtime without timers must panic");
                    let message = panic_message(payload);
                    assert!(
                        message.contains("enable_time"),
                        "{flavour}, {what}: {message}"
                    );
                }
            });
        }
    });
}

/// `Timer::new()` in a runtime without its time driver panics with tokio's
/// message, reported at the caller's line (not inside tickwheel), as
/// `tokio::time::sleep` does there. It used to panic inside the crate with
/// "the default settings are valid: NoTimeDriver".
#[test]
fn timer_new_panics_with_tokios_message_at_the_callers_line() {
    use std::sync::{Arc, Mutex};
    common::watchdog::within_30_s(|| {
        let rt = Builder::new_current_thread().enable_io().build().unwrap();
        let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
        let me = std::thread::current().id();
        let previous = Arc::new(std::panic::take_hook());
        {
            let (seen, previous) = (seen.clone(), previous.clone());
            std::panic::set_hook(Box::new(move |info| {
                if std::thread::current().id() == me {
                    if let Some(at) = info.location() {
                        *seen.lock().unwrap() = Some((at.file().to_string(), at.line()));
                    }
                } else {
                    previous(info);
                }
            }));
        }
        // A closure, so that the call (not `FnOnce::call_once`) is the caller.
        #[allow(clippy::redundant_closure)]
        let new_timer = || Timer::new();
        let line = line!() - 1;
        let payload = rt.block_on(async { catch_unwind(new_timer).map(drop) });
        let _ = std::panic::take_hook();
        let message = panic_message(payload.expect_err("Timer::new must panic"));
        assert!(message.contains("enable_time"), "{message}");
        assert!(!message.contains("default settings"), "{message}");
        let (file, at) = seen
            .lock()
            .unwrap()
            .clone()
            .expect("the hook saw the panic");
        assert!(
            file.ends_with("no_time_driver.rs"),
            "reported in {file}:{at}"
        );
        assert_eq!(at, line, "reported in {file}:{at}");
    });
}
