//! Stream adapters on the wheel (`tickwheel::stream::StreamTimerExt`):
//! `timeout_on`, `timeout_repeating_on` and `throttle_on` behave as
//! tokio-stream's `timeout`, `timeout_repeating` and `throttle` do, never
//! early, never spinning, and without hanging when the timer shuts down.
//! Written as a tokio user writes such tests: tokio-test's mock tasks on the
//! paused clock, checking `is_woken()` right after `advance`.

mod common;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use tickwheel::stream::StreamTimerExt;
use tickwheel::Timer;
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, assert_ready_eq, task};

const MS: Duration = Duration::from_millis(1);

/// A default timer (1 ms ticks) whose driver has started and parked, as in
/// a program that has been running for a while.
async fn timer() -> Timer {
    started(Timer::new()).await
}

/// `timer` once its driver has started and parked.
async fn started(timer: Timer) -> Timer {
    tokio::task::yield_now().await;
    timer
}

fn coarse_timer() -> Timer {
    Timer::builder().tick(10 * MS).build().unwrap()
}

/// Builds a default timer and one with 10 ms ticks, to run a rounding test
/// on both; each is built when its run starts, so its ticks count from
/// there.
const DEFAULT_AND_COARSE: [fn() -> Timer; 2] = [Timer::new, coarse_timer];

/// A stream that counts how often it is polled, fed through a channel.
struct Counted<S> {
    inner: S,
    polls: Arc<AtomicUsize>,
}

impl<S: Stream + Unpin> Stream for Counted<S> {
    type Item = S::Item;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        Pin::new(&mut self.inner).poll_next(cx)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

fn counted<S>(inner: S) -> (Counted<S>, Arc<AtomicUsize>) {
    let polls = Arc::new(AtomicUsize::new(0));
    let stream = Counted {
        inner,
        polls: polls.clone(),
    };
    (stream, polls)
}

fn assert_unpin<T: Unpin>(_: &T) {}
fn assert_send_sync<T: Send + Sync>(_: &T) {}

// ---- timeout_on ----

/// Items within the limit come through; a silence of `d` yields one error,
/// not before `d`, and only one however long the silence lasts.
#[tokio::test(start_paused = true)]
async fn timeout_yields_one_error_per_silence_and_never_early() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, 100 * MS));

    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_pending!(s.poll_next());

    advance(99 * MS).await;
    assert!(!s.is_woken(), "woken before the limit");
    assert_pending!(s.poll_next());
    advance(MS).await;
    assert!(s.is_woken(), "not woken when the limit passed");
    let err = assert_ready!(s.poll_next()).unwrap().unwrap_err();
    assert!(!err.is_shutdown());

    // One error per silence: nothing more until an item comes.
    assert_pending!(s.poll_next());
    advance(1000 * MS).await;
    assert!(!s.is_woken());
    assert_pending!(s.poll_next());

    tx.unbounded_send(2).unwrap();
    assert!(s.is_woken());
    assert_ready_eq!(s.poll_next(), Some(Ok(2)));
    drop(tx);
    assert_ready_eq!(s.poll_next(), None);
}

/// The limit restarts at every item (tokio-stream's semantics): an item at
/// 60 ms moves the next error from 100 ms to 160 ms.
#[tokio::test(start_paused = true)]
async fn timeout_restarts_after_each_item() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let start = Instant::now();
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, 100 * MS));
    assert_pending!(s.poll_next());

    advance(60 * MS).await;
    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_pending!(s.poll_next());

    advance(40 * MS).await; // 100 ms: the first limit would have passed
    assert!(!s.is_woken(), "the item did not restart the limit");
    assert_pending!(s.poll_next());
    advance(60 * MS).await; // 160 ms
    assert!(s.is_woken());
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_eq!(Instant::now() - start, 160 * MS);
}

/// The first limit runs from the adapter's creation, as tokio-stream's does,
/// not from its first poll.
#[tokio::test(start_paused = true)]
async fn the_first_limit_runs_from_creation() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s = task::spawn(futures::stream::pending::<()>().timeout_on(&timer, 50 * MS));
    advance(50 * MS).await;
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_pending!(s.poll_next());
}

/// A limit that is not a whole number of ticks rounds up to the next tick
/// boundary: the error comes at 20 ms for a 15 ms limit on 10 ms ticks,
/// never at 15; at 2 ms for a 1.5 ms limit on the default 1 ms ticks.
#[tokio::test(start_paused = true)]
async fn a_limit_between_ticks_rounds_up_never_down() {
    let _watchdog = common::Watchdog::start();
    for build in DEFAULT_AND_COARSE {
        let timer = started(build()).await;
        let tick = timer.tick();
        let limit = tick * 3 / 2;
        let mut s = task::spawn(futures::stream::pending::<()>().timeout_on(&timer, limit));
        assert_pending!(s.poll_next());
        advance(tick * 2 - tick / 10).await;
        assert!(!s.is_woken(), "{tick:?}");
        assert_pending!(s.poll_next());
        advance(tick / 10).await;
        assert!(s.is_woken(), "{tick:?}");
        assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    }
}

/// Once the inner stream ends, the adapter ends and is not polled again,
/// and no error comes after the end.
#[tokio::test(start_paused = true)]
async fn timeout_ends_with_its_stream_and_stays_ended() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (inner, polls) = counted(futures::stream::iter([1, 2]));
    let mut s = task::spawn(inner.timeout_on(&timer, 10 * MS));
    assert_eq!(Stream::size_hint(&*s), (2, Some(5)));
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_ready_eq!(s.poll_next(), Some(Ok(2)));
    assert_ready_eq!(s.poll_next(), None);
    assert_eq!(Stream::size_hint(&*s), (0, Some(0)));
    let polled = polls.load(Ordering::SeqCst);
    advance(100 * MS).await;
    assert!(!s.is_woken());
    assert_ready_eq!(s.poll_next(), None);
    assert_eq!(polls.load(Ordering::SeqCst), polled, "polled after its end");
}

/// A zero limit yields one error after each item (when the stream is
/// pending), and no more: polled again, it is pending and not woken.
#[tokio::test(start_paused = true)]
async fn a_zero_limit_errs_once_per_item_without_spinning() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, Duration::ZERO));
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_pending!(s.poll_next());
    tx.unbounded_send(7).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(7)));
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_pending!(s.poll_next());
    assert!(!s.is_woken());
    assert_eq!(timer.stats().registered, 0, "a zero limit never waits");
}

/// The adapter holds one sleep for its whole life and moves it after each
/// item: one live sleep, one wheel entry while it waits.
#[tokio::test(start_paused = true)]
async fn timeout_holds_one_sleep_whatever_the_items() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, 100 * MS));
    for i in 0..1000 {
        tx.unbounded_send(i).unwrap();
        assert_ready_eq!(s.poll_next(), Some(Ok(i)));
        assert_pending!(s.poll_next());
    }
    assert_eq!(timer.pending(), 1);
    assert_eq!(timer.stats().live, 1);
    drop(s);
    assert_eq!((timer.pending(), timer.stats().live), (0, 0));
}

/// Shutdown while the limit runs: one error that says so, then items pass
/// through with no limit, and no further error (no spin on a dead timer).
#[tokio::test(start_paused = true)]
async fn shutdown_while_waiting_reports_once_then_passes_items() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, 100 * MS));
    assert_pending!(s.poll_next());
    timer.shutdown();
    assert!(s.is_woken(), "shutdown must wake the waiting stream");
    let err = assert_ready!(s.poll_next()).unwrap().unwrap_err();
    assert!(err.is_shutdown());
    assert_pending!(s.poll_next());
    assert!(!s.is_woken());

    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_pending!(s.poll_next());
    advance(1000 * MS).await;
    assert!(!s.is_woken());
    assert_pending!(s.poll_next());
    drop(tx);
    assert_ready_eq!(s.poll_next(), None);
}

/// Shutdown after the error was reported: the next item still comes
/// through, then the shutdown is reported once, at the next wait.
#[tokio::test(start_paused = true)]
async fn shutdown_between_limits_is_reported_at_the_next_wait() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.timeout_on(&timer, 10 * MS));
    advance(10 * MS).await;
    assert!(!assert_ready!(s.poll_next())
        .unwrap()
        .unwrap_err()
        .is_shutdown());
    assert_pending!(s.poll_next());
    timer.shutdown();
    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert!(assert_ready!(s.poll_next())
        .unwrap()
        .unwrap_err()
        .is_shutdown());
    assert_pending!(s.poll_next());
    tx.unbounded_send(2).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(2)));
    assert_pending!(s.poll_next());
}

#[tokio::test(start_paused = true)]
async fn adapters_are_unpin_send_and_sync_over_such_streams() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let timeout = futures::stream::iter([1]).timeout_on(&timer, MS);
    let repeating = futures::stream::iter([1]).timeout_repeating_on(timer.interval(MS));
    let throttle = futures::stream::iter([1]).throttle_on(&timer, MS);
    assert_unpin(&timeout);
    assert_unpin(&repeating);
    assert_unpin(&throttle);
    assert_send_sync(&timeout);
    assert_send_sync(&repeating);
    assert_send_sync(&throttle);
    // A `!Unpin` inner stream still works once pinned.
    let not_unpin = futures::stream::iter([1, 2]).then(|x| async move { x });
    let s = not_unpin.timeout_on(&timer, MS);
    tokio::pin!(s);
    assert_eq!(s.next().await, Some(Ok(1)));
}

/// Creating an adapter on a shut-down timer panics, as `timer.sleep` does,
/// rather than building a stream that could never time anything.
#[tokio::test(start_paused = true)]
#[should_panic(expected = "the timer has shut down")]
async fn creating_an_adapter_on_a_shut_down_timer_panics() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    timer.shutdown();
    let _ = futures::stream::iter([1]).timeout_on(&timer, MS);
}

// ---- timeout_repeating_on ----

/// While the stream is silent, each period yields one error; an item
/// restarts the period.
#[tokio::test(start_paused = true)]
async fn repeating_timeout_errs_every_period_of_silence() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let start = Instant::now();
    let (tx, rx) = mpsc::unbounded::<u32>();
    let interval = timer.interval_at(start + 100 * MS, 100 * MS);
    let mut s = task::spawn(rx.timeout_repeating_on(interval));
    assert_pending!(s.poll_next());
    for n in 1..=3u32 {
        advance(99 * MS).await;
        assert!(!s.is_woken(), "error {n} early");
        assert_pending!(s.poll_next());
        advance(MS).await;
        assert!(s.is_woken(), "error {n} not woken");
        assert!(!assert_ready!(s.poll_next())
            .unwrap()
            .unwrap_err()
            .is_shutdown());
        assert_pending!(s.poll_next());
    }
    // An item at 330 ms: the next error is at 430, not 400.
    advance(30 * MS).await;
    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_pending!(s.poll_next());
    advance(70 * MS).await;
    assert!(!s.is_woken());
    assert_pending!(s.poll_next());
    advance(30 * MS).await;
    assert!(s.is_woken());
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_eq!(Instant::now() - start, 430 * MS);
}

/// As with tokio-stream, `timer.interval(d)` ticks at once, so a stream
/// pending on its first poll errs at once; then once a period.
#[tokio::test(start_paused = true)]
async fn repeating_timeout_follows_the_intervals_first_tick() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s =
        task::spawn(futures::stream::pending::<()>().timeout_repeating_on(timer.interval(50 * MS)));
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_pending!(s.poll_next());
    advance(50 * MS).await;
    assert!(s.is_woken());
    assert!(assert_ready!(s.poll_next()).unwrap().is_err());
    assert_eq!(Stream::size_hint(&*s), (0, None));
}

/// Shutdown: one error that says so, then no more (the interval cannot
/// tick), items still pass, the end still ends.
#[tokio::test(start_paused = true)]
async fn repeating_timeout_on_shutdown_reports_once() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let start = Instant::now();
    let mut s = task::spawn(rx.timeout_repeating_on(timer.interval_at(start + 50 * MS, 50 * MS)));
    assert_pending!(s.poll_next());
    timer.shutdown();
    assert!(s.is_woken());
    assert!(assert_ready!(s.poll_next())
        .unwrap()
        .unwrap_err()
        .is_shutdown());
    assert_pending!(s.poll_next());
    advance(500 * MS).await;
    assert!(!s.is_woken());
    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert_pending!(s.poll_next());
    drop(tx);
    assert_ready_eq!(s.poll_next(), None);
    assert_ready_eq!(s.poll_next(), None);
}

/// Shutdown noticed when an item restarts the interval: reported once at
/// the next wait.
#[tokio::test(start_paused = true)]
async fn repeating_timeout_reports_a_shutdown_seen_at_an_item() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let start = Instant::now();
    let mut s = task::spawn(rx.timeout_repeating_on(timer.interval_at(start + 50 * MS, 50 * MS)));
    timer.shutdown();
    tx.unbounded_send(1).unwrap();
    assert_ready_eq!(s.poll_next(), Some(Ok(1)));
    assert!(assert_ready!(s.poll_next())
        .unwrap()
        .unwrap_err()
        .is_shutdown());
    assert_pending!(s.poll_next());
    assert!(!s.is_woken());
}

// ---- throttle_on ----

/// The first item comes at once; each next one `d` after the previous, not
/// before, and the inner stream is not polled while the throttle waits.
#[tokio::test(start_paused = true)]
async fn throttle_spaces_items_and_holds_the_producer_back() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (inner, polls) = counted(futures::stream::iter(1..=3));
    let mut s = task::spawn(inner.throttle_on(&timer, 100 * MS));
    assert_ready_eq!(s.poll_next(), Some(1));
    assert_eq!(polls.load(Ordering::SeqCst), 1);
    for item in 2..=3 {
        assert_pending!(s.poll_next());
        advance(99 * MS).await;
        assert!(!s.is_woken(), "item {item} early");
        assert_pending!(s.poll_next());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            item - 1,
            "the inner stream was polled during the wait"
        );
        advance(MS).await;
        assert!(s.is_woken());
        assert_ready_eq!(s.poll_next(), Some(item));
    }
    // As tokio-stream's: the end, too, is looked for after the spacing.
    assert_pending!(s.poll_next());
    advance(100 * MS).await;
    assert_ready_eq!(s.poll_next(), None);
}

/// A spacing between ticks rounds up: 15 ms on 10 ms ticks spaces items 20
/// ms apart, never 15; 1.5 ms on the default 1 ms ticks, 2 ms apart.
#[tokio::test(start_paused = true)]
async fn throttle_between_ticks_rounds_up_never_down() {
    let _watchdog = common::Watchdog::start();
    for build in DEFAULT_AND_COARSE {
        let timer = started(build()).await;
        let tick = timer.tick();
        let spacing = tick * 3 / 2;
        let mut s = task::spawn(futures::stream::repeat(()).throttle_on(&timer, spacing));
        assert_ready!(s.poll_next());
        assert_pending!(s.poll_next());
        advance(tick * 2 - tick / 10).await;
        assert!(!s.is_woken(), "{tick:?}");
        assert_pending!(s.poll_next());
        advance(tick / 10).await;
        assert!(s.is_woken(), "{tick:?}");
        assert_ready!(s.poll_next());
    }
}

/// A consumer slower than the spacing gets each item as soon as it asks:
/// the spacing counts from the previous item, not from the poll.
#[tokio::test(start_paused = true)]
async fn a_slow_consumer_is_not_held_back() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s = task::spawn(futures::stream::repeat(()).throttle_on(&timer, 100 * MS));
    assert_ready!(s.poll_next());
    advance(250 * MS).await; // busy elsewhere
    assert_ready!(s.poll_next());
    assert_pending!(s.poll_next());
    advance(100 * MS).await;
    assert!(s.is_woken());
    assert_ready!(s.poll_next());
}

/// A zero spacing passes items through and never uses the timer, even
/// after it shut down.
#[tokio::test(start_paused = true)]
async fn a_zero_throttle_passes_items_through() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s = task::spawn(futures::stream::iter(1..=3).throttle_on(&timer, Duration::ZERO));
    assert_ready_eq!(s.poll_next(), Some(1));
    timer.shutdown();
    assert_ready_eq!(s.poll_next(), Some(2));
    assert_ready_eq!(s.poll_next(), Some(3));
    assert_ready_eq!(s.poll_next(), None);
}

/// Shutdown during the spacing: the waiting stream is woken and ends; it
/// stays ended, and the inner stream keeps the items it was not asked for.
#[tokio::test(start_paused = true)]
async fn throttle_ends_on_shutdown_and_keeps_the_rest() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s = task::spawn(futures::stream::iter(1..=5).throttle_on(&timer, 100 * MS));
    assert_ready_eq!(s.poll_next(), Some(1));
    assert_pending!(s.poll_next());
    timer.shutdown();
    assert!(s.is_woken(), "shutdown must wake the waiting stream");
    assert_ready_eq!(s.poll_next(), None);
    assert_ready_eq!(s.poll_next(), None);
    assert_eq!(Stream::size_hint(&*s), (0, Some(0)));
    let rest: Vec<_> = s.into_inner().into_inner().collect().await;
    assert_eq!(rest, [2, 3, 4, 5]);
}

/// Shutdown while the throttle waits for the inner stream: the item that
/// comes next was spaced on a live timer, so it is yielded; the stream ends
/// after it.
#[tokio::test(start_paused = true)]
async fn throttle_yields_an_item_already_spaced_then_ends() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut s = task::spawn(rx.throttle_on(&timer, 10 * MS));
    assert_pending!(s.poll_next());
    timer.shutdown();
    tx.unbounded_send(1).unwrap();
    tx.unbounded_send(2).unwrap();
    assert_ready_eq!(s.poll_next(), Some(1));
    assert_ready_eq!(s.poll_next(), None);
}

/// A throttled stream that is always ready, on a dead timer, ends instead
/// of turning into a busy loop: a consumer's `while let` stops by itself.
#[tokio::test(start_paused = true)]
async fn a_throttled_endless_stream_stops_after_shutdown() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let mut s = futures::stream::repeat(()).throttle_on(&timer, 10 * MS);
    let mut items = 0;
    let stopper = timer.clone();
    while s.next().await.is_some() {
        items += 1;
        if items == 3 {
            stopper.shutdown();
        }
        assert!(items < 10, "kept yielding on a dead timer");
    }
    assert_eq!(items, 3);
}

// ---- the cooperative budget ----

/// A stream that is always ready again at once: each poll alternates an
/// item and a `Pending` that wakes itself.
fn flapping() -> impl Stream<Item = ()> + Unpin {
    let mut ready = true;
    futures::stream::poll_fn(move |cx| {
        ready = !ready;
        if ready {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(Some(()))
        }
    })
}

/// A zero limit whose deadline is always behind it takes part in tokio's
/// budget, as a sleep that completes without waiting does: a consumer
/// looping on it yields to the scheduler, so another task gets to run.
#[tokio::test(start_paused = true)]
async fn a_loop_over_passed_limits_yields_to_other_tasks() {
    let _watchdog = common::Watchdog::start();
    let timer = timer().await;
    let other_ran = Arc::new(AtomicBool::new(false));
    tokio::spawn({
        let other_ran = other_ran.clone();
        async move { other_ran.store(true, Ordering::SeqCst) }
    });
    let mut s = flapping().timeout_on(&timer, Duration::ZERO);
    let mut errors = 0u32;
    while !other_ran.load(Ordering::SeqCst) {
        if let Some(Err(_)) = s.next().await {
            errors += 1;
        }
        assert!(errors < 100_000, "never yielded to the other task");
    }
    assert!(errors > 0);
}

/// The tokio-stream names, on the runtime's default timer: `timeout`,
/// `timeout_repeating` and `throttle` behave as their `_on` forms on
/// `Timer::current()`, and wait on that timer.
#[tokio::test(start_paused = true)]
async fn the_tokio_stream_names_use_the_default_timer() {
    let _watchdog = common::Watchdog::start();
    let (tx, rx) = mpsc::unbounded::<u32>();
    let mut limited = task::spawn(StreamTimerExt::timeout(rx, 100 * MS));
    assert_pending!(limited.poll_next());
    assert_eq!(
        Timer::current().pending(),
        1,
        "the limit waits on the default timer"
    );
    advance(99 * MS).await;
    assert!(!limited.is_woken());
    advance(MS).await;
    assert!(limited.is_woken());
    assert!(matches!(limited.poll_next(), Poll::Ready(Some(Err(_)))));
    tx.unbounded_send(7).unwrap();
    assert_ready_eq!(limited.poll_next(), Some(Ok(7)));

    let period = 50 * MS;
    let interval = tickwheel::time::interval_at(Instant::now() + period, period);
    let mut repeating = task::spawn(futures::stream::pending::<()>().timeout_repeating(interval));
    assert_pending!(repeating.poll_next());
    advance(period).await;
    assert!(repeating.is_woken());
    assert!(matches!(repeating.poll_next(), Poll::Ready(Some(Err(_)))));

    let start = Instant::now();
    let mut spaced = task::spawn(futures::stream::iter(0..3).throttle(20 * MS));
    assert_ready_eq!(spaced.poll_next(), Some(0));
    assert_pending!(spaced.poll_next());
    advance(20 * MS).await;
    assert!(spaced.is_woken());
    assert_ready_eq!(spaced.poll_next(), Some(1));
    assert_eq!(start.elapsed(), 20 * MS);
}

#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn the_default_timer_forms_panic_outside_a_runtime() {
    let _watchdog = common::Watchdog::start();
    let _ = StreamTimerExt::timeout(futures::stream::pending::<()>(), MS);
}
