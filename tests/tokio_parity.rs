//! tokio's own timer tests, as behaviours tickwheel must share.
//!
//! Each test checks on the wheel a behaviour that one of tokio's timer tests
//! checks on `tokio::time` (`tokio/tests/time_sleep.rs`, `time_timeout.rs`,
//! `time_interval.rs`, `time_pause.rs`, `time_rt.rs`, and the timer tests of
//! `rt_common.rs`); its doc comment names the tokio test. They are written the
//! way a `tokio::time` user writes a timer test: a paused clock,
//! `tokio::time::advance`, and tokio-test's mock task (`task::spawn`,
//! `assert_pending!`, `assert_ready!`, `is_woken()`), with no extra yields
//! after `advance`. A test written for `tokio::time` should pass unchanged
//! once `time::sleep(d)` becomes `timer.sleep(d)`.
//!
//! Precision: tickwheel rounds a deadline up to the next boundary of its tick,
//! counted from when the timer was built. Most tests build a timer with a
//! 1 ms tick at the start of a paused test and use whole-millisecond
//! deadlines, so every deadline is a tick boundary and the wheel must match
//! tokio to the instant. tokio's interval tests first advance 1 ms for its
//! own timer's granularity and then expect instants off by that millisecond;
//! the wheel needs neither, so the expected instants here are the exact ones.
//! Where tickwheel differs on purpose (zero periods, `Duration::MAX`, deadlines
//! that have passed), the test checks tickwheel's documented behaviour and says
//! so.
//!
//! The tests ignored with "fails until advance wakes wheel sleeps" check that
//! a sleep whose deadline `advance` reached is woken by the time `advance`
//! returns (`is_woken()`, then `assert_ready!`). Today the timer's driver task
//! only runs after the test task has resumed.

mod common;

use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tickwheel::{Interval, MissedTickBehavior, Sleep, Timer};
use tokio::sync::oneshot;
use tokio::time::{self, Instant};
use tokio_test::{
    assert_pending, assert_ready, assert_ready_eq, assert_ready_err, assert_ready_ok, task,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// A timer with 1 ms ticks. Built at the start of a paused test, its origin
/// is the test's start, so every whole-millisecond instant is a tick boundary.
fn timer_1ms() -> Timer {
    Timer::builder().tick(ms(1)).build().unwrap()
}

/// The first tick boundary of a timer built at `origin` at or after
/// `deadline`: where the precision contract says a sleep completes.
fn boundary_after(origin: Instant, deadline: Instant, tick: Duration) -> Instant {
    let since = deadline.saturating_duration_since(origin).as_nanos();
    let ticks = since.div_ceil(tick.as_nanos());
    origin + Duration::from_nanos((ticks * tick.as_nanos()) as u64)
}

/// Polls a mock-task interval until it is pending; returns the instants of
/// the ticks that were ready, in ms since `start`.
fn ready_ticks(interval: &mut task::Spawn<Interval>, start: Instant) -> Vec<u64> {
    let mut ticks = Vec::new();
    while let Poll::Ready(at) = interval.enter(|cx, mut i| i.poll_tick(cx)) {
        ticks.push((at - start).as_millis() as u64);
        assert!(ticks.len() < 100, "the interval never went pending");
    }
    ticks
}

/// Steps of an interval test: advance the clock this many ms, then expect
/// these ticks (ms since the start) ready.
type Script = &'static [(u64, &'static [u64])];

/// Advances the paused clock by each step in turn, and after each step
/// checks which ticks the interval has ready.
async fn run_script(
    label: &str,
    interval: &mut task::Spawn<Interval>,
    start: Instant,
    script: Script,
) {
    for &(step, expected) in script {
        if step > 0 {
            time::advance(ms(step)).await;
        }
        let now = (Instant::now() - start).as_millis();
        assert_eq!(
            ready_ticks(interval, start),
            expected,
            "{label}: ticks ready at {now} ms"
        );
    }
}

// ---------------------------------------------------------------------------
// Sleep (tokio/tests/time_sleep.rs, time_pause.rs)
// ---------------------------------------------------------------------------

/// time_sleep.rs `immediate_sleep`: a sleep until now is not elapsed before
/// its first poll and completes on it, without time passing.
#[tokio::test(start_paused = true)]
async fn sleep_until_now_completes_without_time_passing() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let now = Instant::now();
    let mut sleep = timer.sleep_until(now);
    assert!(!sleep.is_elapsed());
    (&mut sleep).await;
    assert_eq!(now.elapsed(), Duration::ZERO);
    assert!(sleep.is_elapsed());
}

/// time_sleep.rs `is_elapsed`: `is_elapsed` is false before the first poll
/// and while pending, true once completed.
#[tokio::test(start_paused = true)]
async fn is_elapsed_turns_true_only_on_completion() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = task::spawn(timer.sleep(ms(10)));
    assert!(!sleep.is_elapsed());
    assert_pending!(sleep.poll());
    assert!(!sleep.is_elapsed());
    (&mut sleep).await;
    assert!(sleep.is_elapsed());
    assert_eq!(start.elapsed(), ms(10));
}

/// time_sleep.rs `delayed_sleep_level_0`: sleeps end exactly at their
/// deadline. The longer ones reach the next revolution (512 ms with 512
/// slots of 1 ms, 8192 ms with the default 8192) and the overflow level.
#[tokio::test(start_paused = true)]
async fn sleeps_end_exactly_at_whole_millisecond_deadlines() {
    let _watchdog = common::Watchdog::start();
    for slots in [512, 8192] {
        let timer = Timer::builder().tick(ms(1)).slots(slots).build().unwrap();
        for d in [1, 10, 60, 511, 512, 513, 1_000, 8_191, 8_192, 8_193, 65_000] {
            let now = Instant::now();
            timer.sleep_until(now + ms(d)).await;
            assert_eq!(now.elapsed(), ms(d), "{d} ms on {slots} slots");
        }
    }
}

/// time_sleep.rs `sub_ms_delayed_sleep`: a deadline just past a tick boundary
/// rounds up to the next one: exactly one tick later for a 1 ms tick (tokio
/// allows anything up to 1 ms late), the 10 ms boundary for a 10 ms tick.
#[tokio::test(start_paused = true)]
async fn sub_tick_deadlines_round_up_to_the_next_boundary() {
    let _watchdog = common::Watchdog::start();
    let fine = timer_1ms();
    let coarse = Timer::builder().tick(ms(10)).build().unwrap();
    let origin = Instant::now();
    for _ in 0..5 {
        let now = Instant::now();
        fine.sleep_until(now + ms(1) + Duration::from_nanos(1))
            .await;
        assert_eq!(now.elapsed(), ms(2));
    }
    let now = Instant::now(); // 10 ms after the origin
    assert_eq!(now - origin, ms(10));
    coarse.sleep_until(now + ms(1)).await;
    assert_eq!(now.elapsed(), ms(10));
    let deadline = Instant::now() + Duration::from_micros(10_001);
    coarse.sleep_until(deadline).await;
    assert_eq!(Instant::now(), boundary_after(origin, deadline, ms(10)));
    assert_eq!(Instant::now() - origin, ms(40));
}

/// time_sleep.rs `delayed_sleep_wrapping_level_0`: after time has moved into
/// a revolution, a deadline in the next revolution (around the ring) still
/// fires exactly.
#[tokio::test(start_paused = true)]
async fn deadlines_around_the_ring_fire_exactly() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder().tick(ms(1)).slots(64).build().unwrap();
    timer.sleep(ms(5)).await;
    for d in [60, 63, 64, 65, 130] {
        let now = Instant::now();
        timer.sleep_until(now + ms(d)).await;
        assert_eq!(now.elapsed(), ms(d));
    }
}

/// time_sleep.rs `reset_future_sleep_before_fire`: a polled sleep reset to
/// a later deadline completes at the new deadline, not the old one.
#[tokio::test(start_paused = true)]
async fn reset_to_a_later_deadline_before_it_fires() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = task::spawn(Box::pin(timer.sleep_until(start + ms(100))));
    assert_pending!(sleep.poll());
    let mut sleep = sleep.into_inner();
    sleep.as_mut().reset(Instant::now() + ms(200));
    sleep.await;
    assert_eq!(start.elapsed(), ms(200));
}

/// time_sleep.rs `reset_past_sleep_before_turn`: reset to an earlier
/// deadline that has not passed.
#[tokio::test(start_paused = true)]
async fn reset_to_an_earlier_deadline_before_it_fires() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = task::spawn(Box::pin(timer.sleep_until(start + ms(100))));
    assert_pending!(sleep.poll());
    let mut sleep = sleep.into_inner();
    sleep.as_mut().reset(start + ms(80));
    sleep.await;
    assert_eq!(start.elapsed(), ms(80));
}

/// time_sleep.rs `reset_past_sleep_before_fire`: as above, after some time
/// has passed.
#[tokio::test(start_paused = true)]
async fn reset_to_an_earlier_deadline_after_time_has_passed() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = task::spawn(timer.sleep_until(start + ms(100)));
    assert_pending!(sleep.poll());
    let mut sleep = sleep.into_inner();
    timer.sleep(ms(10)).await;
    Pin::new(&mut sleep).reset(start + ms(80));
    sleep.await;
    assert_eq!(start.elapsed(), ms(80));
}

/// time_sleep.rs `reset_future_sleep_after_fire`: a completed sleep reset to
/// a later deadline sleeps again until it.
#[tokio::test(start_paused = true)]
async fn reset_after_completion_sleeps_again() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = Box::pin(timer.sleep_until(start + ms(100)));
    sleep.as_mut().await;
    assert_eq!(start.elapsed(), ms(100));
    sleep.as_mut().reset(start + ms(110));
    assert!(!sleep.is_elapsed());
    sleep.await;
    assert_eq!(start.elapsed(), ms(110));
}

/// time_sleep.rs `reset_sleep_to_past`: a pending sleep reset to a deadline
/// that has passed is ready on the next poll. tickwheel also wakes the task
/// at the reset (tokio leaves that open, "is this required?").
#[tokio::test(start_paused = true)]
async fn reset_to_a_passed_deadline_wakes_and_completes() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut sleep = task::spawn(timer.sleep_until(start + ms(100)));
    assert_pending!(sleep.poll());
    time::sleep(ms(50)).await;
    assert!(!sleep.is_woken());
    Pin::new(&mut *sleep).reset(start + ms(40));
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
    assert!(sleep.is_elapsed());
    assert_eq!(timer.pending(), 0);
}

/// time_sleep.rs `reset_after_firing`: after completing (and staying ready
/// when polled again), a sleep reset far ahead has a new deadline and is
/// pending again.
#[tokio::test(start_paused = true)]
async fn reset_after_completion_is_pending_again() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut sleep = timer.sleep(ms(1));
    let first = sleep.deadline();
    (&mut sleep).await;
    let mut cx = Context::from_waker(Waker::noop());
    assert_ready!(Pin::new(&mut sleep).poll(&mut cx));
    Pin::new(&mut sleep).reset(Instant::now() + Duration::from_secs(600));
    assert_ne!(sleep.deadline(), first);
    assert_pending!(Pin::new(&mut sleep).poll(&mut cx));
    assert_pending!(Pin::new(&mut sleep).poll(&mut cx));
    assert!(!sleep.is_elapsed());
}

/// No tokio test: resetting a sleep that was never polled (later, earlier,
/// to the past) behaves as if it had been created with the new deadline.
#[tokio::test(start_paused = true)]
async fn reset_of_a_never_polled_sleep() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();

    let mut earlier = timer.sleep(ms(100));
    Pin::new(&mut earlier).reset(start + ms(30));
    assert_eq!(earlier.deadline(), start + ms(30));
    earlier.await;
    assert_eq!(start.elapsed(), ms(30));

    let mut later = timer.sleep(ms(100));
    Pin::new(&mut later).reset(start + ms(250));
    later.await;
    assert_eq!(start.elapsed(), ms(250));

    // tokio registers a sleep when it is reset, so one reset to the past is
    // elapsed at once, before any poll; so is tickwheel's.
    let mut past = task::spawn(timer.sleep(ms(100)));
    Pin::new(&mut *past).reset(start + ms(10));
    assert!(past.is_elapsed());
    assert_ready!(past.poll());
    assert!(!past.is_woken());
    assert_eq!(timer.stats().registered, 2, "the past one never registered");
}

/// No single tokio test (time_sleep.rs uses `deadline()` in
/// `reset_after_firing`): `deadline()` is the instant asked for, not rounded
/// to the tick, and follows resets. Deadlines between ticks, on the default
/// 1 ms tick and on a 10 ms one.
#[tokio::test(start_paused = true)]
async fn deadline_is_the_requested_instant() {
    let _watchdog = common::Watchdog::start();
    for tick in [tickwheel::Builder::DEFAULT_TICK, ms(10)] {
        let timer = Timer::builder().tick(tick).build().unwrap();
        let now = Instant::now();
        assert_eq!(timer.sleep(tick * 3 / 2).deadline(), now + tick * 3 / 2);
        let at = now + tick * 1_234 / 10_000;
        let mut sleep = timer.sleep_until(at);
        assert_eq!(sleep.deadline(), at);
        Pin::new(&mut sleep).reset(now + tick * 3 / 10);
        assert_eq!(sleep.deadline(), now + tick * 3 / 10);
        (&mut sleep).await;
        assert_eq!(sleep.deadline(), now + tick * 3 / 10, "completion keeps it");
        assert_eq!(now.elapsed(), tick, "completed on the next tick boundary");
    }
}

/// time_sleep.rs `short_sleeps`: zero-length sleeps complete at once, many
/// times over, without time passing or touching the wheel.
#[tokio::test(start_paused = true)]
async fn zero_duration_sleeps_complete_at_once() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    for _ in 0..1000 {
        timer.sleep(Duration::ZERO).await;
    }
    // Different on purpose: tokio's unpolled zero sleep reports
    // `is_elapsed() == false`; tickwheel's is created complete (documented
    // on `Sleep::is_elapsed`).
    let mut zero = task::spawn(timer.sleep(Duration::ZERO));
    assert!(zero.is_elapsed());
    assert_ready!(zero.poll());
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(timer.stats().registered, 0);
}

/// rt_common.rs `coop`, for sleeps: sleeps that complete at once take part in
/// tokio's task budget, so a loop of them yields to other tasks.
#[tokio::test(start_paused = true)]
async fn zero_sleeps_in_a_loop_let_other_tasks_run() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let ran = Arc::new(AtomicBool::new(false));
    tokio::spawn({
        let ran = ran.clone();
        async move { ran.store(true, Ordering::SeqCst) }
    });
    let mut loops = 0;
    while !ran.load(Ordering::SeqCst) {
        assert!(loops < 10_000, "zero sleeps never yielded to the scheduler");
        timer.sleep(Duration::ZERO).await;
        loops += 1;
    }
}

/// time_sleep.rs `greater_than_max`, `multi_long_sleeps`, `long_sleeps`:
/// sleeps of years complete, exactly at their deadline.
#[tokio::test(start_paused = true)]
async fn sleeps_of_years_complete_on_time() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    timer.sleep_until(start + 5 * YEAR).await;
    assert_eq!(start.elapsed(), 5 * YEAR);
    for _ in 0..5 {
        let now = Instant::now();
        timer.sleep(YEAR).await;
        assert_eq!(now.elapsed(), YEAR);
    }
    let deadline = Instant::now() + 10 * YEAR;
    timer.sleep_until(deadline).await;
    assert_eq!(Instant::now(), deadline);
    assert_eq!(timer.pending(), 0);
}

/// time_sleep.rs `exactly_max`, `issue_5183`, `no_out_of_bounds_close_to_max`:
/// extreme durations neither panic nor overflow. Different on purpose:
/// tokio completes them at its horizon (about 30 years), tickwheel's
/// saturate and never fire (README, "Extreme deadlines saturate").
#[tokio::test(start_paused = true)]
async fn extreme_durations_never_panic_and_never_fire() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut huge = timer.sleep(Duration::from_secs(u64::MAX / 10));
    let mut max = timer.sleep(Duration::MAX);
    let mut near_max = timer.sleep(Duration::MAX - ms(1));
    let won = tokio::select! {
        biased;
        _ = &mut huge => "u64::MAX / 10 s",
        _ = &mut max => "Duration::MAX",
        _ = &mut near_max => "Duration::MAX - 1 ms",
        _ = timer.sleep(Duration::from_nanos(1)) => "1 ns",
    };
    assert_eq!(won, "1 ns");
    assert_eq!(start.elapsed(), ms(1), "1 ns rounds up to one tick");
    timer.sleep(100 * YEAR).await;
    for sleep in [&mut huge, &mut max, &mut near_max] {
        assert_pending!(futures::poll!(&mut *sleep));
        assert!(!sleep.is_elapsed());
        assert!(sleep.deadline() > start + 200 * YEAR);
    }
    assert_eq!(timer.pending(), 3);
}

/// time_sleep.rs `drop_after_reschedule_at_new_scheduled_time`: dropping a
/// sleep after moving it to another deadline is safe, and the others still
/// fire on time.
#[tokio::test(start_paused = true)]
async fn dropping_a_sleep_after_moving_it_is_safe() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut a = timer.sleep(ms(5));
    let mut b = timer.sleep(ms(5));
    let mut c = timer.sleep(ms(10));
    assert_pending!(futures::poll!(&mut a));
    assert_pending!(futures::poll!(&mut b));
    assert_pending!(futures::poll!(&mut c));
    Pin::new(&mut b).reset(start + ms(10));
    a.await;
    assert_eq!(start.elapsed(), ms(5));
    drop(b);
    c.await;
    assert_eq!(start.elapsed(), ms(10));
    let stats = timer.stats();
    assert_eq!(
        (
            stats.registered,
            stats.fired,
            stats.cancelled,
            stats.pending
        ),
        (3, 2, 1, 0)
    );
}

/// Drops every sleep in its list when woken.
struct DropAllOnWake {
    sleeps: Mutex<Vec<Sleep>>,
    wakes: AtomicUsize,
    panicked: AtomicBool,
}

impl Wake for DropAllOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Dropped while the list's lock is held, as a waker might.
            *self.sleeps.lock().unwrap() = Vec::new();
        }));
        if dropped.is_err() {
            self.panicked.store(true, Ordering::SeqCst);
        }
    }
}

/// time_sleep.rs `drop_from_wake`: a waker that drops sleeps of the same
/// bucket (fired and not yet fired) while the driver wakes it neither panics
/// nor deadlocks; every fired entry's waker is called, the rest are cancelled.
#[tokio::test(start_paused = true)]
async fn a_waker_may_drop_sleeps_while_being_woken() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let waker_state = Arc::new(DropAllOnWake {
        sleeps: Mutex::new(Vec::new()),
        wakes: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
    });
    let waker = Waker::from(waker_state.clone());
    {
        let mut list = waker_state.sleeps.lock().unwrap();
        for _ in 0..100 {
            let mut sleep = timer.sleep(ms(10));
            assert_pending!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)));
            list.push(sleep);
        }
    }
    time::sleep(ms(11)).await;
    assert!(!waker_state.panicked.load(Ordering::SeqCst));
    assert!(waker_state.sleeps.lock().unwrap().is_empty());
    let stats = timer.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.wake_panics, 0);
    assert_eq!(stats.fired + stats.cancelled, 100);
    assert!(stats.fired >= 1);
    assert_eq!(waker_state.wakes.load(Ordering::SeqCst) as u64, stats.fired);
}

/// time_pause.rs `advance_once_with_timer`: a polled sleep is woken when one
/// `advance` jumps past its deadline, and not by one that stops short.
#[tokio::test(start_paused = true)]
async fn advance_past_the_deadline_wakes_the_sleep() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut sleep = task::spawn(timer.sleep(ms(1)));
    assert_pending!(sleep.poll());
    time::advance(Duration::from_micros(250)).await;
    assert!(!sleep.is_woken());
    assert_pending!(sleep.poll());
    time::advance(Duration::from_micros(1500)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

/// time_pause.rs `advance_multi_with_timer`: a polled sleep is woken by the
/// `advance` step that lands exactly on its deadline, not one step before.
#[tokio::test(start_paused = true)]
async fn advance_in_steps_onto_the_deadline_wakes_the_sleep_not_before() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut sleep = task::spawn(timer.sleep(ms(1)));
    assert_pending!(sleep.poll());
    for _ in 0..3 {
        time::advance(Duration::from_micros(250)).await;
        assert!(!sleep.is_woken());
        assert_pending!(sleep.poll());
    }
    time::advance(Duration::from_micros(250)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
    assert!(sleep.is_elapsed());
}

/// As above, with a deadline between boundaries: it is woken when `advance`
/// reaches the boundary after it, not at the deadline. 29.5 ticks: 295 ms
/// on a 10 ms tick, 29.5 ms on the default 1 ms one.
#[tokio::test(start_paused = true)]
async fn advance_to_the_rounded_deadline_wakes_the_sleep() {
    let _watchdog = common::Watchdog::start();
    for tick in [ms(10), tickwheel::Builder::DEFAULT_TICK] {
        let timer = Timer::builder().tick(tick).build().unwrap();
        let start = Instant::now();
        let mut sleep = task::spawn(timer.sleep_until(start + tick * 59 / 2));
        assert_pending!(sleep.poll());
        time::advance(tick * 59 / 2).await;
        assert!(!sleep.is_woken(), "woken before its tick boundary");
        assert_pending!(sleep.poll());
        time::advance(tick * 4 / 10).await;
        assert!(!sleep.is_woken(), "woken before its tick boundary");
        assert_pending!(sleep.poll());
        time::advance(tick / 10).await;
        assert!(sleep.is_woken(), "{tick:?}");
        assert_ready!(sleep.poll());
    }
}

/// time_pause.rs `advance_after_poll`, `sleep_no_poll`,
/// `regression_3710_with_submillis_advance`, `test_time_advance_sub_ms`,
/// `test_time_advance_3ms_and_change`, `exact_1ms_advance`: with wheel
/// timers pending, `advance` moves the clock by exactly its argument (also
/// sub-millisecond), and sleeps polled or not stay pending before their
/// deadline. Awaited afterwards, they land exactly on it. (The steps add up
/// to whole milliseconds before each await: from an instant between
/// milliseconds, tokio's auto-advance overshoots by that fraction, for its
/// own sleeps as for the wheel's driver.)
#[tokio::test(start_paused = true)]
async fn advance_moves_the_clock_exactly_and_sleeps_stay_pending() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut polled = task::spawn(timer.sleep_until(start + ms(300)));
    let mut unpolled = task::spawn(timer.sleep_until(start + ms(300)));
    let mut far = task::spawn(timer.sleep_until(start + Duration::from_secs(60)));
    assert_pending!(polled.poll());
    assert_pending!(far.poll());
    let short = [
        ms(100),
        Duration::from_micros(51_592),
        Duration::from_micros(1),
        ms(1),
        Duration::from_micros(3_141),
        Duration::from_micros(3_266), // back on a whole millisecond: 159 ms
    ];
    for step in short {
        let before = Instant::now();
        time::advance(step).await;
        assert_eq!(before.elapsed(), step);
        assert!(!polled.is_woken());
        assert_pending!(polled.poll());
        assert!(!far.is_woken());
    }
    assert_pending!(unpolled.poll());
    (&mut polled).await;
    assert_eq!(start.elapsed(), ms(300));
    assert_ready!(unpolled.poll(), "a never-polled sleep past its deadline");
    for step in [
        Duration::from_micros(3_141_592),
        Duration::from_micros(3_858_408), // 7.3 s
    ] {
        let before = Instant::now();
        time::advance(step).await;
        assert_eq!(before.elapsed(), step);
        assert!(!far.is_woken());
        assert_pending!(far.poll());
    }
    (&mut far).await;
    assert_eq!(start.elapsed(), Duration::from_secs(60));
}

/// time_pause.rs `sleep_same_task`, `sleep_same_task_no_poll`: the task that
/// advances the clock polls the sleep itself; before the deadline it is
/// pending, polled before the advance or not.
#[tokio::test(start_paused = true)]
async fn a_sleep_polled_by_the_advancing_task_stays_pending_before_its_deadline() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    for poll_first in [true, false] {
        let mut sleep = timer.sleep_until(Instant::now() + ms(300));
        if poll_first {
            assert_pending!(futures::poll!(&mut sleep));
        }
        let before = Instant::now();
        time::advance(ms(100)).await;
        assert_eq!(before.elapsed(), ms(100));
        assert_pending!(futures::poll!(&mut sleep));
        sleep.await;
        assert_eq!(before.elapsed(), ms(300));
    }
}

/// time_pause.rs `paused_time_is_deterministic`: the same program of random
/// sleeps on the paused clock gives the same instants every run, and each
/// sleep ends on the first tick boundary at or after its deadline.
#[test]
fn paused_runs_are_deterministic() {
    let _watchdog = common::Watchdog::start();
    fn run(seed: u64) -> Vec<Duration> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async move {
            let timer = timer_1ms();
            let origin = Instant::now();
            let mut x = seed;
            let mut times = Vec::new();
            for _ in 0..2_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let d = if x % 16 == 0 {
                    Duration::ZERO
                } else {
                    Duration::from_nanos(x % 50_000_000)
                };
                let deadline = Instant::now() + d;
                timer.sleep(d).await;
                assert_eq!(Instant::now(), boundary_after(origin, deadline, ms(1)));
                times.push(origin.elapsed());
            }
            times
        })
    }
    let first = run(0x2545_f491_4f6c_dd1d);
    assert_eq!(first, run(0x2545_f491_4f6c_dd1d));
    assert!(first.last().unwrap() > &Duration::from_secs(10));
}

/// time_sleep.rs, time_pause.rs: every paused test relies on tokio's
/// auto-advance. With wheel sleeps in spawned tasks and nothing else to do,
/// the runtime jumps from deadline to deadline, each exactly.
#[tokio::test(start_paused = true)]
async fn an_idle_runtime_auto_advances_to_each_wheel_deadline() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let tasks: Vec<_> = (1..=50u64)
        .map(|i| {
            let timer = timer.clone();
            let d = Duration::from_secs(i * 37) + ms(i);
            tokio::spawn(async move {
                timer.sleep(d).await;
                (d, start.elapsed())
            })
        })
        .collect();
    let wall = std::time::Instant::now();
    for task in tasks {
        let (d, elapsed) = task.await.unwrap();
        assert_eq!(elapsed, d);
    }
    assert!(
        wall.elapsed() < Duration::from_secs(30),
        "waited in real time"
    );
}

// ---------------------------------------------------------------------------
// Timeout (tokio/tests/time_timeout.rs)
// ---------------------------------------------------------------------------

/// time_timeout.rs `simultaneous_deadline_future_completion`,
/// `completed_future_past_deadline`: a future that is ready wins over a
/// deadline that is now or past, on the first poll, without a timer.
#[tokio::test(start_paused = true)]
async fn a_ready_future_wins_over_a_deadline_now_or_past() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut now = task::spawn(timer.timeout_at(Instant::now(), async { 1 }));
    assert_eq!(assert_ready_ok!(now.poll()), 1);
    let mut past = task::spawn(timer.timeout_at(Instant::now() - ms(1000), async { 2 }));
    assert_eq!(assert_ready_ok!(past.poll()), 2);
    assert_eq!(timer.stats().registered, 0);
}

/// time_timeout.rs `future_and_deadline_in_future`,
/// `future_and_timeout_in_future`: a future that completes before the
/// deadline wakes the timeout's task and wins.
#[tokio::test(start_paused = true)]
async fn a_future_that_completes_in_time_wins() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    for by_instant in [true, false] {
        let (tx, rx) = oneshot::channel();
        let mut fut = if by_instant {
            task::spawn(timer.timeout_at(Instant::now() + ms(100), rx))
        } else {
            task::spawn(timer.timeout(ms(100), rx))
        };
        assert_pending!(fut.poll());
        time::advance(ms(90)).await;
        assert_pending!(fut.poll());
        tx.send(()).unwrap();
        assert!(fut.is_woken());
        assert_ready_ok!(fut.poll()).unwrap();
        drop(fut);
        assert_eq!(timer.pending(), 0, "the timeout's entry left with it");
    }
}

/// No tokio test: the future is polled first, so one that became ready after
/// the deadline passed still wins, even though the wheel already woke the
/// task for the deadline.
#[tokio::test(start_paused = true)]
async fn a_ready_future_wins_even_after_the_deadline_passed() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let (tx, rx) = oneshot::channel();
    let mut fut = task::spawn(timer.timeout(ms(10), rx));
    assert_pending!(fut.poll());
    timer.sleep(ms(50)).await;
    assert!(fut.is_woken(), "the deadline woke the timeout's task");
    tx.send(3).unwrap();
    assert_eq!(assert_ready_ok!(fut.poll()), Ok(3));
}

/// time_timeout.rs `very_large_timeout`: a `Duration::MAX` timeout is still
/// pending after ten years and lets the future complete.
#[tokio::test(start_paused = true)]
async fn a_duration_max_timeout_stays_pending_for_years() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let (tx, rx) = oneshot::channel();
    let mut fut = task::spawn(timer.timeout(Duration::MAX, rx));
    assert_pending!(fut.poll());
    time::advance(10 * YEAR).await;
    assert_pending!(fut.poll());
    tx.send(()).unwrap();
    assert_ready_ok!(fut.poll()).unwrap();
}

/// time_timeout.rs `deadline_now_elapses`: a timeout at now (or earlier) of
/// a pending future elapses. tokio needs a 1 ms advance first ("TODO: don't
/// require this"); tickwheel elapses on the first poll, as its precision
/// contract says for passed deadlines.
#[tokio::test(start_paused = true)]
async fn a_timeout_at_now_or_earlier_elapses_on_the_first_poll() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut now = task::spawn(timer.timeout_at(Instant::now(), pending::<()>()));
    assert!(!assert_ready_err!(now.poll()).is_shutdown());
    let mut past = task::spawn(timer.timeout_at(Instant::now() - ms(5), pending::<()>()));
    assert_ready_err!(past.poll());
    let mut zero = task::spawn(timer.timeout(Duration::ZERO, pending::<()>()));
    assert_ready_err!(zero.poll());
    assert_eq!(timer.stats().registered, 0);
}

/// time_timeout.rs `deadline_future_elapses`: a timeout of a never-ready
/// future is woken when `advance` reaches its deadline (not 1 ms before)
/// and elapses.
#[tokio::test(start_paused = true)]
async fn advance_to_the_deadline_elapses_the_timeout() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut fut = task::spawn(timer.timeout_at(Instant::now() + ms(300), pending::<()>()));
    assert_pending!(fut.poll());
    time::advance(ms(299)).await;
    assert!(!fut.is_woken());
    assert_pending!(fut.poll());
    time::advance(ms(1)).await;
    assert!(fut.is_woken());
    assert!(!assert_ready_err!(fut.poll()).is_shutdown());
}

/// time_timeout.rs `deadline_future_elapses`, `timeout_value` (time_rt.rs),
/// awaited: the timeout of a never-ready future elapses exactly at its
/// deadline.
#[tokio::test(start_paused = true)]
async fn an_awaited_timeout_of_a_never_ready_future_elapses_at_its_deadline() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let err = timer.timeout(ms(300), pending::<()>()).await.unwrap_err();
    assert!(!err.is_shutdown());
    assert_eq!(start.elapsed(), ms(300));
    let (_tx, rx) = oneshot::channel::<()>();
    let err = timer.timeout_at(start + ms(450), rx).await.unwrap_err();
    assert!(!err.is_shutdown());
    assert_eq!(start.elapsed(), ms(450));
}

/// No tokio test: `into_inner` gives back the future unharmed (it still
/// completes after the old deadline has passed) and takes the timeout's
/// wheel entry away with the timeout; `get_ref`/`get_mut` reach the future.
#[tokio::test(start_paused = true)]
async fn into_inner_gives_back_the_future_unharmed() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let (tx, rx) = oneshot::channel();
    let mut fut = task::spawn(timer.timeout(ms(10), rx));
    assert_pending!(fut.poll());
    assert_eq!(timer.pending(), 1);
    assert!(fut.get_ref().is_empty());
    assert!(fut.get_mut().try_recv().is_err());
    let rx = fut.into_inner().into_inner();
    assert_eq!(timer.pending(), 0, "the timeout's entry left with it");
    timer.sleep(ms(20)).await;
    tx.send(7).unwrap();
    assert_eq!(rx.await, Ok(7));
}

/// time_timeout.rs `timeout_is_not_exhausted_by_future`: a future that uses
/// up the task's whole budget on every poll must not keep its timeout from
/// elapsing. Real clock: a task that never idles never lets the paused clock
/// auto-advance. The outer `tokio::time::timeout` only bounds the test.
#[tokio::test]
async fn a_budget_hungry_future_cannot_starve_its_timeout() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let hungry = async {
        loop {
            tokio::task::consume_budget().await;
        }
    };
    let start = std::time::Instant::now();
    let bounded = time::timeout(Duration::from_secs(5), timer.timeout(ms(1), hungry)).await;
    assert!(
        matches!(bounded, Ok(Err(_))),
        "the wheel timeout had not elapsed after {:?}",
        start.elapsed()
    );
}

// ---------------------------------------------------------------------------
// Interval (tokio/tests/time_interval.rs, time_pause.rs `interval`)
// ---------------------------------------------------------------------------

/// time_interval.rs (every test starts so): the first tick of `interval` is
/// ready at once with the current instant; `interval_at` a later start is not.
#[tokio::test(start_paused = true)]
async fn the_first_tick_is_immediate() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = task::spawn(timer.interval(ms(300)));
    assert_ready_eq!(i.enter(|cx, mut i| i.poll_tick(cx)), start);
    assert_pending!(i.enter(|cx, mut i| i.poll_tick(cx)));
    let mut later = task::spawn(timer.interval_at(start + ms(50), ms(300)));
    assert_pending!(later.enter(|cx, mut i| i.poll_tick(cx)));
    assert_eq!(later.tick().await, start + ms(50));
    assert_eq!(start.elapsed(), ms(50));
}

/// time_interval.rs `burst`, time_pause.rs `interval`: after a stall, the
/// missed ticks are all ready at once, then the schedule goes on.
#[tokio::test(start_paused = true)]
async fn burst_catches_up_after_a_stall() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = task::spawn(timer.interval_at(start, ms(300)));
    let script: Script = &[
        (0, &[0]),
        (100, &[]),
        (200, &[300]),
        (650, &[600, 900]),
        (200, &[]),
        (100, &[1200]),
        (250, &[1500]),
        (300, &[1800]),
    ];
    run_script("burst", &mut i, start, script).await;
}

/// time_interval.rs `delay`: after a stall, the next tick is a period after
/// the late one completed.
#[tokio::test(start_paused = true)]
async fn delay_restarts_the_schedule_after_a_stall() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = task::spawn(timer.interval_at(start, ms(300)));
    i.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let script: Script = &[
        (0, &[0]),
        (100, &[]),
        (200, &[300]),
        (650, &[600]),
        (100, &[]),
        (200, &[1250]),
        (300, &[1550]),
        (300, &[1850]),
    ];
    run_script("delay", &mut i, start, script).await;
}

/// time_interval.rs `skip`: after a stall, the missed ticks are dropped and
/// the next one is back on the original grid.
#[tokio::test(start_paused = true)]
async fn skip_drops_missed_ticks_after_a_stall() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = task::spawn(timer.interval_at(start, ms(300)));
    i.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let script: Script = &[
        (0, &[0]),
        (100, &[]),
        (200, &[300]),
        (650, &[600]),
        (250, &[1200]),
        (300, &[1500]),
        (300, &[1800]),
    ];
    run_script("skip", &mut i, start, script).await;
}

/// time_interval.rs `burst`, `delay`, `skip`, with the ticks awaited instead
/// of polled after `advance`: the same instants, each tick completing at
/// the time tokio's would.
#[tokio::test(start_paused = true)]
async fn missed_tick_behaviours_after_an_awaited_stall() {
    let _watchdog = common::Watchdog::start();
    use MissedTickBehavior::{Burst, Delay, Skip};
    let cases = [
        (Burst, [(600, 950), (900, 950), (1200, 1200), (1500, 1500)]),
        (
            Delay,
            [(600, 950), (1250, 1250), (1550, 1550), (1850, 1850)],
        ),
        (Skip, [(600, 950), (1200, 1200), (1500, 1500), (1800, 1800)]),
    ];
    for (behavior, expected) in cases {
        let timer = timer_1ms();
        let start = Instant::now();
        let mut i = timer.interval_at(start, ms(300));
        i.set_missed_tick_behavior(behavior);
        assert_eq!(i.tick().await, start);
        assert_eq!(i.tick().await, start + ms(300));
        assert_eq!(start.elapsed(), ms(300));
        timer.sleep(ms(650)).await; // busy elsewhere until 950 ms
        let mut seen = Vec::new();
        for _ in 0..4 {
            let at = i.tick().await;
            seen.push((
                (at - start).as_millis() as u64,
                start.elapsed().as_millis() as u64,
            ));
        }
        assert_eq!(seen, expected, "{behavior:?}");
    }
}

/// time_interval.rs `reset`, `reset_immediately`, `reset_after`, `reset_at`,
/// `reset_at_bigger_than_interval`, polled after `advance`.
#[tokio::test(start_paused = true)]
async fn interval_resets_under_advance() {
    let _watchdog = common::Watchdog::start();
    type Reset = fn(&mut Interval);
    let cases: [(&str, Reset, Script); 5] = [
        (
            "reset",
            |i| i.reset(),
            &[(250, &[]), (50, &[700]), (300, &[1000])],
        ),
        (
            "reset_immediately",
            |i| i.reset_immediately(),
            &[(0, &[400]), (100, &[]), (200, &[700])],
        ),
        (
            "reset_after",
            |i| i.reset_after(ms(20)),
            &[(20, &[420]), (100, &[]), (200, &[720])],
        ),
        (
            "reset_at",
            |i| i.reset_at(Instant::now() + ms(40)),
            &[(40, &[440]), (100, &[]), (200, &[740])],
        ),
        (
            "reset_at beyond a period",
            |i| i.reset_at(Instant::now() + ms(1000)),
            &[
                (300, &[]),
                (300, &[]),
                (300, &[]),
                (100, &[1400]),
                (300, &[1700]),
            ],
        ),
    ];
    for (name, reset, after) in cases {
        let timer = timer_1ms();
        let start = Instant::now();
        let mut i = task::spawn(timer.interval_at(start, ms(300)));
        let before: Script = &[(0, &[0]), (100, &[]), (200, &[300]), (100, &[])];
        run_script(name, &mut i, start, before).await;
        reset(&mut i);
        run_script(name, &mut i, start, after).await;
    }
}

/// time_interval.rs `reset`, `reset_immediately`, `reset_after`, `reset_at`,
/// `reset_at_bigger_than_interval`, with the ticks awaited: each reset moves
/// the next tick to the same instant as tokio's, and the one after follows a
/// period later.
#[tokio::test(start_paused = true)]
async fn interval_resets_when_awaited() {
    let _watchdog = common::Watchdog::start();
    type Reset = fn(&mut Interval);
    let cases: [(&str, Reset, [u64; 2]); 5] = [
        ("reset", |i| i.reset(), [700, 1000]),
        ("reset_immediately", |i| i.reset_immediately(), [400, 700]),
        ("reset_after", |i| i.reset_after(ms(20)), [420, 720]),
        (
            "reset_at",
            |i| i.reset_at(Instant::now() + ms(40)),
            [440, 740],
        ),
        (
            "reset_at beyond a period",
            |i| i.reset_at(Instant::now() + ms(1000)),
            [1400, 1700],
        ),
    ];
    for (name, reset, expected) in cases {
        let timer = timer_1ms();
        let start = Instant::now();
        let mut i = timer.interval_at(start, ms(300));
        assert_eq!(i.tick().await, start);
        assert_eq!(i.tick().await, start + ms(300));
        timer.sleep(ms(100)).await;
        reset(&mut i);
        for at in expected {
            assert_eq!(i.tick().await, start + ms(at), "{name}");
            assert_eq!(start.elapsed(), ms(at), "{name}");
        }
    }
}

/// Counts interval ticks and yields every third count, up to nine; after a
/// tick that yields nothing it returns `Pending`, waking itself only if
/// `wake_self`.
struct EveryThirdTick {
    interval: Interval,
    count: u32,
    wake_self: bool,
}

impl Stream for EveryThirdTick {
    type Item = u32;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
        if self.count >= 9 {
            return Poll::Ready(None);
        }
        std::task::ready!(self.interval.poll_tick(cx));
        self.count += 1;
        if self.count % 3 == 0 {
            return Poll::Ready(Some(self.count));
        }
        if self.wake_self {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

/// time_interval.rs `stream_with_interval_poll_tick_self_waking`,
/// `stream_with_interval_poll_tick_no_waking`: `poll_tick` registers the
/// waker only when it returns `Pending`. A stream that returns `Pending`
/// after a ready tick without waking itself stalls (here until a wheel
/// timeout ends it); one that wakes itself yields every item.
#[tokio::test(start_paused = true)]
async fn poll_tick_registers_the_waker_only_when_pending() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    for (wake_self, expected) in [(true, vec![3, 6, 9]), (false, vec![])] {
        let stream = EveryThirdTick {
            interval: timer.interval(ms(10)),
            count: 0,
            wake_self,
        };
        let start = Instant::now();
        let items = tokio::spawn(timer.timeout(ms(150), stream.collect::<Vec<_>>()))
            .await
            .unwrap();
        match items {
            Ok(items) => {
                assert_eq!(items, expected);
                assert_eq!(start.elapsed(), ms(80), "9 ticks, 10 ms apart");
            }
            Err(_) => {
                assert!(expected.is_empty(), "wake_self = {wake_self}: stalled");
                assert_eq!(start.elapsed(), ms(150));
            }
        }
    }
}

/// time_interval.rs (`Interval` is a `Stream` in tokio-stream): the stream
/// yields the scheduled instants, on time.
#[tokio::test(start_paused = true)]
async fn the_interval_is_a_stream_of_scheduled_instants() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let ticks: Vec<_> = timer.interval(ms(25)).take(4).collect().await;
    let offsets: Vec<_> = ticks.iter().map(|t| (*t - start).as_millis()).collect();
    assert_eq!(offsets, [0, 25, 50, 75]);
    assert_eq!(start.elapsed(), ms(75));
    let mut stream = task::spawn(timer.interval(ms(25)));
    assert_eq!(assert_ready!(stream.poll_next()), Some(Instant::now()));
    assert_pending!(stream.poll_next());
}

/// time_interval.rs `interval_doesnt_panic_max_duration_when_polling`: an
/// interval of `Duration::MAX` ticks once at once and does not panic. Its
/// next instant would overflow `Instant`, so, as tokio's (which falls back
/// to its "far future"), it saturates to 30 years on.
#[tokio::test(start_paused = true)]
async fn an_interval_of_duration_max_does_not_panic() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = task::spawn(timer.interval(Duration::MAX));
    assert_ready_eq!(i.enter(|cx, mut i| i.poll_tick(cx)), start);
    assert_pending!(i.enter(|cx, mut i| i.poll_tick(cx)));
    timer.sleep(29 * YEAR).await;
    assert_pending!(i.enter(|cx, mut i| i.poll_tick(cx)));
    assert_eq!(i.tick().await, start + 30 * YEAR);
    assert_eq!(start.elapsed(), 30 * YEAR);
}

/// time_interval.rs `interval_zero_duration`: tokio panics on a zero period.
/// Different on purpose: tickwheel raises it to one tick (documented on
/// `Timer::interval`), so the interval ticks every tick.
#[tokio::test(start_paused = true)]
async fn a_zero_period_is_one_tick() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let start = Instant::now();
    let mut i = timer.interval_at(start, Duration::ZERO);
    assert_eq!(i.period(), timer.tick());
    for n in 0..4 {
        assert_eq!(i.tick().await, start + ms(n));
        assert_eq!(start.elapsed(), ms(n));
    }
}

// ---------------------------------------------------------------------------
// Runtimes, real clock (tokio/tests/time_rt.rs, rt_common.rs)
// ---------------------------------------------------------------------------

/// Lateness allowed on the real clock: generous, the machine is shared.
const REAL_LATE: Duration = Duration::from_secs(2);

fn runtimes() -> Vec<(&'static str, tokio::runtime::Runtime)> {
    let multi = |workers| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .unwrap()
    };
    vec![
        (
            "current_thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
        ("multi_thread(1)", multi(1)),
        ("multi_thread(4)", multi(4)),
    ]
}

fn timer_on(rt: &tokio::runtime::Runtime) -> Timer {
    Timer::builder()
        .tick(ms(1))
        .runtime(rt.handle().clone())
        .build()
        .unwrap()
}

/// time_rt.rs `timer_with_threaded_runtime`,
/// `timer_with_current_thread_scheduler`; rt_common.rs `sleep_at_root`,
/// `sleep_in_spawn`: on every runtime flavour, a sleep awaited in `block_on`
/// or in a spawned task completes, never before its deadline.
#[test]
fn sleeps_complete_on_every_runtime_flavour() {
    let _watchdog = common::Watchdog::start();
    for (name, rt) in runtimes() {
        let timer = timer_on(&rt);
        rt.block_on(async {
            let when = Instant::now() + ms(10);
            timer.sleep_until(when).await;
            let late = Instant::now().checked_duration_since(when);
            assert!(late.is_some_and(|l| l < REAL_LATE), "{name}: {late:?}");

            let (tx, rx) = oneshot::channel();
            let t = timer.clone();
            tokio::spawn(async move {
                let when = Instant::now() + ms(10);
                t.sleep(ms(10)).await;
                tx.send(Instant::now().checked_duration_since(when))
                    .unwrap();
            });
            let late = rx.await.unwrap();
            assert!(late.is_some_and(|l| l < REAL_LATE), "{name}: {late:?}");
        });
        if name != "current_thread" {
            // Nothing blocks on the runtime: only its workers run the driver.
            let (tx, rx) = std::sync::mpsc::channel();
            let t = timer.clone();
            rt.spawn(async move {
                let when = Instant::now() + ms(10);
                t.sleep_until(when).await;
                tx.send(Instant::now() >= when).unwrap();
            });
            assert!(rx.recv_timeout(REAL_LATE).unwrap(), "{name}");
        }
    }
}

/// Polls a future; while it is pending, wakes itself at once (a busy task).
struct SelfWaking<F> {
    inner: F,
    polls: u64,
}

impl<F: Future<Output = ()> + Unpin> Future for SelfWaking<F> {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if Pin::new(&mut self.inner).poll(cx).is_ready() {
            return Poll::Ready(self.polls);
        }
        self.polls += 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// time_rt.rs `starving`: a task that keeps waking itself while it waits on
/// a sleep does not keep the driver from firing it.
#[test]
fn a_busy_task_still_sees_its_sleep_complete() {
    let _watchdog = common::Watchdog::start();
    for (name, rt) in runtimes() {
        let timer = timer_on(&rt);
        rt.block_on(async {
            let when = Instant::now() + ms(10);
            let polls = SelfWaking {
                inner: timer.sleep_until(when),
                polls: 0,
            }
            .await;
            assert!(Instant::now() >= when, "{name}");
            assert!(polls > 0, "{name}");
        });
    }
}

/// time_rt.rs `timeout_value`: on every flavour, a timeout of a future that
/// never completes elapses, not before its deadline.
#[test]
fn timeouts_elapse_on_every_runtime_flavour() {
    let _watchdog = common::Watchdog::start();
    for (name, rt) in runtimes() {
        let timer = timer_on(&rt);
        rt.block_on(async {
            let (_tx, rx) = oneshot::channel::<()>();
            let start = Instant::now();
            let err = timer.timeout(ms(10), rx).await.unwrap_err();
            assert!(!err.is_shutdown(), "{name}");
            assert!(start.elapsed() >= ms(10), "{name}");
            assert!(start.elapsed() < ms(10) + REAL_LATE, "{name}");
        });
    }
}

/// rt_common.rs `sleep_from_blocking`; time_sleep.rs
/// `creating_sleep_outside_of_context`. Different on purpose: a tokio sleep
/// made outside a runtime panics; a tickwheel sleep needs no runtime context
/// (only the timer's driver does), so it can be made and awaited with
/// `futures::executor::block_on` on a plain thread or in `spawn_blocking`.
#[test]
fn sleeps_need_no_runtime_context() {
    let _watchdog = common::Watchdog::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let timer = timer_on(&rt);
    let t = timer.clone();
    let waited = std::thread::spawn(move || {
        assert!(tokio::runtime::Handle::try_current().is_err());
        let start = std::time::Instant::now();
        futures::executor::block_on(t.sleep(ms(20)));
        start.elapsed()
    })
    .join()
    .unwrap();
    assert!(
        waited >= ms(20) && waited < ms(20) + REAL_LATE,
        "{waited:?}"
    );
    let t = timer.clone();
    let waited = rt
        .block_on(async {
            tokio::task::spawn_blocking(move || {
                let start = std::time::Instant::now();
                futures::executor::block_on(t.sleep(ms(5)));
                start.elapsed()
            })
            .await
        })
        .unwrap();
    assert!(waited >= ms(5) && waited < ms(5) + REAL_LATE, "{waited:?}");
}

/// rt_common.rs `always_active_parker`: two threads in `block_on` on the
/// same runtime at once, each awaiting wheel sleeps, both finish (on a
/// current-thread runtime, whichever holds the core runs the driver).
#[test]
fn two_threads_blocking_on_one_runtime_both_finish() {
    let _watchdog = common::Watchdog::start();
    for (name, rt) in runtimes() {
        let rt = Arc::new(rt);
        let timer = timer_on(&rt);
        let (first_tx, first_rx) = oneshot::channel();
        let (second_tx, second_rx) = oneshot::channel();
        let a = {
            let (rt, timer) = (rt.clone(), timer.clone());
            std::thread::spawn(move || {
                rt.block_on(async {
                    second_rx.await.unwrap();
                    timer.sleep(ms(5)).await;
                    first_tx.send(()).unwrap();
                })
            })
        };
        let b = {
            let (rt, timer) = (rt.clone(), timer.clone());
            std::thread::spawn(move || {
                rt.block_on(async {
                    second_tx.send(()).unwrap();
                    timer.sleep(ms(5)).await;
                    first_rx.await.unwrap();
                    timer.sleep(ms(5)).await;
                })
            })
        };
        a.join().unwrap_or_else(|_| panic!("{name}: thread a"));
        b.join().unwrap_or_else(|_| panic!("{name}: thread b"));
    }
}

/// rt_common.rs `shutdown_wakeup_time`: after sleeping on the wheel, a
/// runtime shuts down at once, even with a wheel timer still pending (the
/// driver is an ordinary task, dropped with the others); the timer then
/// reports itself shut down.
#[test]
fn a_runtime_with_wheel_timers_shuts_down_promptly() {
    let _watchdog = common::Watchdog::start();
    for (name, rt) in runtimes() {
        let timer = timer_on(&rt);
        rt.block_on(async {
            timer.sleep(ms(100)).await;
            let t = timer.clone();
            tokio::spawn(async move { t.sleep(Duration::from_secs(3600)).await });
            tokio::task::yield_now().await; // let the spawned task register
        });
        let start = std::time::Instant::now();
        rt.shutdown_timeout(Duration::from_secs(10_000));
        assert!(start.elapsed() < REAL_LATE, "{name}: {:?}", start.elapsed());
        assert!(timer.is_shutdown(), "{name}");
    }
}

/// time_rt.rs `tickspace`: a sleep whose timer runs on one paused runtime,
/// reset from inside another whose paused clock reads later, keeps the
/// timer's clock: it completes 2 ms after the first runtime's start, not at
/// once. tickwheel reads the calling runtime's clock in `reset` (and in
/// `sleep(d)`), so the reset takes the deadline for passed.
#[test]
fn a_sleep_reset_from_another_paused_runtime_keeps_the_timers_clock() {
    let _watchdog = common::Watchdog::start();
    let paused_rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    };
    let first = paused_rt();
    std::thread::sleep(ms(5)); // the second runtime's paused clock reads 5 ms later
    let second = paused_rt();
    let timer = timer_on(&first);
    let mut sleep = {
        let _in_first = first.enter();
        timer.sleep(ms(1))
    };
    let deadline = sleep.deadline();
    second.block_on(async { Pin::new(&mut sleep).reset(deadline + ms(1)) });
    let waited = first.block_on(async {
        let start = Instant::now();
        (&mut sleep).await;
        start.elapsed()
    });
    assert_eq!(waited, ms(2));
}

/// time_rt.rs / rt_common.rs on a multi-thread runtime, at scale: sleeps
/// registered, polled and fired across worker threads (including sleeps
/// polled first on one task and then awaited on another) never complete
/// early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleeps_across_worker_threads_never_complete_early() {
    let _watchdog = common::Watchdog::start();
    let timer = timer_1ms();
    let mut tasks = Vec::new();
    for i in 0..200u64 {
        let timer = timer.clone();
        tasks.push(tokio::spawn(async move {
            let deadline = Instant::now() + ms(5 + i % 50);
            let mut sleep = timer.sleep_until(deadline);
            let elapsed = if i % 2 == 0 {
                let _ = futures::poll!(&mut sleep); // registered from this task
                tokio::spawn(async move {
                    (&mut sleep).await;
                    sleep.is_elapsed()
                })
                .await
                .unwrap()
            } else {
                (&mut sleep).await;
                sleep.is_elapsed()
            };
            assert!(elapsed);
            Instant::now().checked_duration_since(deadline)
        }));
    }
    for task in tasks {
        let late = task.await.unwrap();
        assert!(late.is_some_and(|l| l < REAL_LATE), "{late:?}");
    }
    assert_eq!(timer.pending(), 0);
}
