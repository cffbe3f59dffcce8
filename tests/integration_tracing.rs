//! The `tracing` feature: the driver reports its wake-ups, start, stop and
//! shutdown as `tracing` events.

mod common;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

use common::poll_once;

/// One recorded event: its level, target, message and other fields.
#[derive(Debug, Clone)]
struct Seen {
    level: Level,
    target: String,
    message: String,
    fields: Vec<(String, String)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let value = format!("{value:?}");
        if field.name() == "message" {
            self.message = value;
        } else {
            self.fields.push((field.name().to_string(), value));
        }
    }
}

/// A subscriber that keeps every event, at every level; or, made by
/// [`Recorder::panicking_once_on`], one that panics on the first event with
/// a given message.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<Seen>>>,
    panic_on: Option<&'static str>,
    panicked: Arc<std::sync::atomic::AtomicBool>,
}

impl Recorder {
    fn panicking_once_on(message: &'static str) -> Self {
        Recorder {
            panic_on: Some(message),
            ..Recorder::default()
        }
    }

    fn panicked(&self) -> bool {
        self.panicked.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn with_message(&self, message: &str) -> Vec<Seen> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|e| e.message == message)
            .cloned()
            .collect()
    }

    fn messages(&self) -> Vec<String> {
        let events = self.events.lock().unwrap();
        events.iter().map(|e| e.message.clone()).collect()
    }
}

impl Subscriber for Recorder {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // Ask every time: other tests' threads may have no subscriber.
        Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut seen = Seen {
            level: *event.metadata().level(),
            target: event.metadata().target().to_string(),
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut seen);
        if self.panic_on == Some(seen.message.as_str())
            && !self
                .panicked
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            panic!("a subscriber panics on {:?}", seen.message);
        }
        self.events.lock().unwrap().push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The driver's events reach a subscriber on the thread it runs on (a
/// current-thread runtime here). The guard must outlive the timer.
fn record() -> (Recorder, tracing::subscriber::DefaultGuard) {
    let recorder = Recorder::default();
    let guard = tracing::subscriber::set_default(recorder.clone());
    (recorder, guard)
}

#[tokio::test(start_paused = true)]
async fn driver_start_is_a_debug_event() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    let timer = tickwheel::Timer::new();
    tokio::task::yield_now().await; // the driver task starts
    let started = recorder.with_message("driver started");
    assert_eq!(started.len(), 1, "{:?}", recorder.messages());
    assert_eq!(started[0].level, Level::DEBUG);
    assert_eq!(started[0].target, "tickwheel");
    let shards: u64 = started[0].field("shards").unwrap().parse().unwrap();
    assert_eq!(shards as usize, timer.shards());
}

/// Each wake-up is a trace event saying how many ticks the driver moved
/// over and how many timers it fired.
#[tokio::test(start_paused = true)]
async fn each_wake_up_reports_ticks_and_timers_fired() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    wake_ups_report_100_ms_of_ticks(tickwheel::Timer::new(), &recorder).await;
}

/// The same on a tick that is not a whole millisecond: 100 ms is 40 ticks
/// of 2.5 ms.
#[tokio::test(start_paused = true)]
async fn wake_ups_report_ticks_of_the_timers_own_length() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    let timer = tickwheel::Timer::builder()
        .tick(Duration::from_micros(2_500))
        .build()
        .unwrap();
    wake_ups_report_100_ms_of_ticks(timer, &recorder).await;
}

/// Three 100 ms sleeps on `timer` (built at this instant), fired by one
/// wake-up that reports 100 ms of the timer's ticks.
async fn wake_ups_report_100_ms_of_ticks(timer: tickwheel::Timer, recorder: &Recorder) {
    let ticks = (Duration::from_millis(100).as_nanos() / timer.tick().as_nanos()).to_string();
    let ticks = Some(ticks.as_str());
    tokio::task::yield_now().await; // the driver task starts, and parks
    let mut sleeps: Vec<_> = (0..3)
        .map(|_| timer.sleep(Duration::from_millis(100)))
        .collect();
    for sleep in &mut sleeps {
        assert!(poll_once(sleep).is_pending());
    }
    tokio::time::advance(Duration::from_millis(100)).await;
    for sleep in &mut sleeps {
        assert!(poll_once(sleep).is_ready());
    }

    let wakeups = recorder.with_message("driver wake-up");
    assert!(wakeups.iter().all(|e| e.level == Level::TRACE));
    assert!(wakeups.iter().all(|e| e.target == "tickwheel"));
    let firing: Vec<_> = wakeups
        .iter()
        .filter(|e| e.field("fired") != Some("0"))
        .collect();
    assert_eq!(firing.len(), 1, "{wakeups:?}");
    let firing = firing[0];
    assert_eq!(firing.field("fired"), Some("3"));
    assert_eq!(
        firing.field("tick"),
        ticks,
        "100 ms of {:?} ticks",
        timer.tick()
    );
    assert_eq!(firing.field("ticks"), ticks);
    assert_eq!(
        firing.field("next_tick"),
        Some(u64::MAX.to_string().as_str())
    );
    // Before it, the first registration re-armed the driver for that tick,
    // without waking it (the others were not earlier than the target).
    let rearmed = recorder.with_message("driver re-armed");
    assert_eq!(rearmed.len(), 1, "{:?}", recorder.messages());
    assert_eq!(rearmed[0].level, Level::TRACE);
    assert_eq!(rearmed[0].field("next_tick"), ticks);
    assert_eq!(
        wakeups.len() as u64,
        timer.stats().wakeups,
        "one event per wake-up"
    );
}

/// Shutdown says how many waiting tasks it woke, and the driver says it is
/// stopping and has stopped; a second shutdown reports nothing new.
#[tokio::test(start_paused = true)]
async fn shutdown_reports_the_waiters_woken_and_the_driver_stopping() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    let timer = tickwheel::Timer::new();
    let mut sleeps: Vec<_> = (0..2)
        .map(|_| timer.sleep(Duration::from_secs(60)))
        .collect();
    for sleep in &mut sleeps {
        assert!(poll_once(sleep).is_pending());
    }
    tokio::task::yield_now().await; // the driver task starts
    assert_eq!(timer.shutdown(), 2);
    tokio::task::yield_now().await; // and sees the shutdown
    assert_eq!(timer.shutdown(), 0);

    let shut = recorder.with_message("timer shut down");
    assert_eq!(shut.len(), 1, "{:?}", recorder.messages());
    assert_eq!(shut[0].level, Level::DEBUG);
    assert_eq!(shut[0].field("woken"), Some("2"));
    let messages = recorder.messages();
    let tail: Vec<&str> = messages
        .iter()
        .map(String::as_str)
        .filter(|m| *m != "driver wake-up" && *m != "driver re-armed")
        .collect();
    assert_eq!(
        tail,
        [
            "driver started",
            "timer shut down",
            "driver stopping: the timer was shut down",
            "driver stopped",
        ]
    );
}

/// With every handle and sleep gone, the driver retires and says why.
#[tokio::test(start_paused = true)]
async fn an_unused_driver_retires_with_a_debug_event() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    let timer = tickwheel::Timer::new();
    tokio::task::yield_now().await; // the driver task starts
    drop(timer);
    tokio::task::yield_now().await; // and sees the last handle go
    let retired = recorder.with_message("driver stopping: no timer handle or sleep is left");
    assert_eq!(retired.len(), 1, "{:?}", recorder.messages());
    assert_eq!(retired[0].level, Level::DEBUG);
    assert_eq!(recorder.with_message("driver stopped").len(), 1);
}

/// A driver whose last handle is gone says, in a debug event, what keeps it
/// from retiring: a sleep still alive (never polled, so registered nowhere),
/// or a registered sleep that never fires; and retires once it is dropped.
#[tokio::test(start_paused = true)]
async fn an_orphaned_driver_says_what_keeps_it() {
    let _watchdog = common::Watchdog::start();
    let (recorder, _guard) = record();
    let timer = tickwheel::Timer::new();
    let unpolled = timer.sleep(Duration::from_secs(60));
    let mut forever = tokio_test::task::spawn(timer.sleep(Duration::MAX));
    tokio_test::assert_pending!(forever.poll());
    drop(timer);
    tokio::task::yield_now().await;
    let registered = recorder.with_message(
        "driver cannot retire: no timer handle is left, but timers that never fire are registered",
    );
    assert!(!registered.is_empty(), "{:?}", recorder.messages());
    assert!(registered.iter().all(|e| e.field("pending") == Some("1")));
    drop(forever); // the cancel rings the driver
    tokio::task::yield_now().await;
    let alive = recorder
        .with_message("driver cannot retire yet: no timer handle is left, but sleeps are alive");
    assert!(!alive.is_empty(), "{:?}", recorder.messages());
    assert!(alive.iter().all(|e| e.field("live") == Some("1")));
    drop(unpolled);
    tokio::time::sleep(Duration::from_secs(2)).await; // the once-a-second look
    let retired = recorder.with_message("driver stopping: no timer handle or sleep is left");
    assert_eq!(retired.len(), 1, "{:?}", recorder.messages());
}

/// Sleeps of `ms` milliseconds on `timer`, each awaited in a task of its
/// own that returns its duration and how long it took.
fn spawn_sleeps(
    timer: &tickwheel::Timer,
    ms: impl IntoIterator<Item = u64>,
) -> tokio::task::JoinSet<(Duration, Duration)> {
    let mut sleepers = tokio::task::JoinSet::new();
    for ms in ms {
        let d = Duration::from_millis(ms);
        let start = tokio::time::Instant::now();
        let sleep = timer.sleep(d);
        sleepers.spawn(async move {
            sleep.await;
            (d, start.elapsed())
        });
    }
    sleepers
}

/// A subscriber is user code the driver calls from inside its passes (in
/// tokio's timer processing): one that panics on a driver wake-up loses
/// that event and nothing else. With 50 sleeps in flight when it panics,
/// those and 200 sleeps made afterwards each complete exactly at their
/// deadline (paused clock). Before, the panic left the driver's pass lock
/// held for good and no sleep completed again.
#[tokio::test(start_paused = true)]
async fn a_subscriber_that_panics_leaves_every_timer_firing_on_time() {
    let _watchdog = common::Watchdog::start();
    let subscriber = Recorder::panicking_once_on("driver wake-up");
    let _guard = tracing::subscriber::set_default(subscriber.clone());
    let timer = tickwheel::Timer::new();
    let mut in_flight = spawn_sleeps(&timer, 1..=50);
    while let Some(done) = in_flight.join_next().await {
        let (d, took) = done.unwrap();
        assert_eq!(took, d);
    }
    assert!(subscriber.panicked(), "the subscriber was never called");
    let mut after = spawn_sleeps(&timer, (1..=200).map(|i| i % 37 + 1));
    while let Some(done) = after.join_next().await {
        let (d, took) = done.unwrap();
        assert_eq!(took, d);
    }
    assert_eq!(timer.stats().fired, 250);
}

/// The same on a real clock and two workers, the subscriber on the
/// workers (where the driver's hook runs): every sleep made after the panic
/// completes, none early, each within 250 ms of scheduling noise.
#[test]
fn on_two_workers_a_subscriber_that_panics_leaves_every_timer_firing() {
    common::watchdog::within_30_s(|| {
        let subscriber = Recorder::panicking_once_on("driver wake-up");
        let rt = {
            let subscriber = subscriber.clone();
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .on_thread_start(move || {
                    // For the worker's whole life.
                    std::mem::forget(tracing::subscriber::set_default(subscriber.clone()));
                })
                .build()
                .unwrap()
        };
        rt.block_on(async {
            let timer = tickwheel::Timer::new();
            let mut in_flight = spawn_sleeps(&timer, 1..=50);
            while !subscriber.panicked() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let mut after = spawn_sleeps(&timer, (1..=200).map(|i| i % 20 + 1));
            let all = async {
                for set in [&mut in_flight, &mut after] {
                    while let Some(done) = set.join_next().await {
                        let (d, took) = done.unwrap();
                        assert!(took >= d, "a {d:?} sleep completed after {took:?}");
                        assert!(
                            took <= d + Duration::from_millis(250),
                            "a {d:?} sleep completed after {took:?}"
                        );
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(10), all)
                .await
                .expect("every sleep completes");
        });
    });
}
