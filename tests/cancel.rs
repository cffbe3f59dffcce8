//! Behaviours 5 and 7: dropping unregisters at once and frees the slot for
//! reuse; `reset` moves a registration without leaking it; the waker from the
//! latest poll is the one woken.

mod common;

use std::pin::Pin;
use std::time::Duration;

use common::{poll_once, poll_with, CountingWaker};
use tickwheel::{Sleep, Timer};
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn dropping_a_sleep_unregisters_it_at_once() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut sleeps: Vec<Sleep> = (0..10_000u64)
        .map(|i| timer.sleep(Duration::from_secs(60 + i)))
        .collect();
    for s in &mut sleeps {
        assert!(poll_once(s).is_pending());
    }
    assert_eq!(timer.pending(), 10_000);
    let bytes = timer.stats().entry_bytes;
    assert!(bytes >= 10_000 * 32, "10,000 entries take {bytes} bytes");
    drop(sleeps);
    // No time has passed: nothing waited for its bucket to come round.
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().cancelled, 10_000);
    // The freed slots are reused right away: the wheel does not grow.
    let mut again: Vec<Sleep> = (0..10_000u64)
        .map(|i| timer.sleep(Duration::from_secs(90 + i)))
        .collect();
    for s in &mut again {
        assert!(poll_once(s).is_pending());
    }
    assert_eq!(timer.stats().entry_bytes, bytes);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_sleep_never_wakes_its_task() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let (counter, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(Duration::from_millis(50));
    assert!(poll_with(&mut sleep, &waker).is_pending());
    drop(sleep);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(counter.wakes(), 0);
    assert_eq!(timer.stats().fired, 0);
}

#[tokio::test(start_paused = true)]
async fn reset_moves_the_registration_without_leaking_it() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let start = Instant::now();
    let (counter, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(Duration::from_millis(100));
    assert!(poll_with(&mut sleep, &waker).is_pending());
    for i in 0..1000u64 {
        Pin::new(&mut sleep).reset(start + Duration::from_millis(200 + i));
        assert_eq!(timer.pending(), 1, "reset #{i} leaked a registration");
    }
    let deadline = sleep.deadline();
    assert_eq!(deadline, start + Duration::from_millis(1199));
    // Past the first deadline: nothing fires, the registration moved.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(counter.wakes(), 0);
    // The task is woken at the new deadline without polling again first.
    tokio::time::sleep_until(deadline + timer.tick()).await;
    assert_eq!(counter.wakes(), 1);
    assert!(poll_once(&mut sleep).is_ready());
    assert!(Instant::now() >= deadline);
    let stats = timer.stats();
    assert_eq!((stats.pending, stats.registered, stats.fired), (0, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn reset_earlier_wakes_earlier_and_reset_to_the_past_completes() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let start = Instant::now();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep).is_pending());
    Pin::new(&mut sleep).reset(start + Duration::from_millis(20));
    (&mut sleep).await;
    assert_eq!(start.elapsed(), Duration::from_millis(20));

    // A completed sleep can be reset to run again.
    Pin::new(&mut sleep).reset(Instant::now() + Duration::from_millis(30));
    assert!(!sleep.is_elapsed());
    (&mut sleep).await;
    assert_eq!(start.elapsed(), Duration::from_millis(50));

    // Reset to a passed deadline: ready on the next poll, registration gone.
    let (counter, waker) = CountingWaker::new();
    let mut other = timer.sleep(Duration::from_secs(60));
    assert!(poll_with(&mut other, &waker).is_pending());
    Pin::new(&mut other).reset(start);
    assert_eq!(counter.wakes(), 1, "the waiting task is told");
    assert_eq!(timer.pending(), 0);
    assert!(poll_once(&mut other).is_ready());
}

#[tokio::test(start_paused = true)]
async fn the_waker_of_the_latest_poll_is_the_one_woken() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let (first, first_waker) = CountingWaker::new();
    let (second, second_waker) = CountingWaker::new();
    let mut sleep = timer.sleep(Duration::from_millis(40));
    assert!(poll_with(&mut sleep, &first_waker).is_pending());
    assert!(poll_with(&mut sleep, &second_waker).is_pending());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(first.wakes(), 0, "a replaced waker must not be woken");
    assert_eq!(second.wakes(), 1);
    assert!(poll_with(&mut sleep, &second_waker).is_ready());
}

#[tokio::test(start_paused = true)]
async fn a_sleep_moved_between_tasks_wakes_the_new_task() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut sleep = timer.sleep(Duration::from_millis(40));
    assert!(poll_once(&mut sleep).is_pending()); // registered by "task one"
    let start = Instant::now();
    tokio::spawn(sleep).await.unwrap(); // awaited by another task
    assert!(start.elapsed() >= Duration::from_millis(30));
}

/// On a clock that runs, a reset reads no clock, as tokio's does: a deadline
/// in a tick the driver has already processed completes the sleep at once;
/// one that passed since then completes on the next poll, and without a poll
/// the driver wakes the task on its next pass.
#[tokio::test]
async fn on_a_running_clock_a_reset_to_a_passed_deadline_completes() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    let start = Instant::now();
    // Let the driver process a few ticks.
    timer.sleep(Duration::from_millis(5)).await;

    // A deadline in a processed tick: complete now.
    let (counter, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll_with(&mut sleep, &waker).is_pending());
    Pin::new(&mut sleep).reset(start);
    assert_eq!(counter.wakes(), 1, "woken by the reset itself");
    assert!(sleep.is_elapsed());
    assert!(poll_once(&mut sleep).is_ready());

    // A deadline that passed after the driver's last pass: the driver fires
    // it. The 10 s bound only stops a lost wake-up from hanging the test.
    let (counter, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll_with(&mut sleep, &waker).is_pending());
    std::thread::sleep(Duration::from_millis(3)); // the driver cannot run
    let deadline = Instant::now() - Duration::from_millis(1);
    Pin::new(&mut sleep).reset(deadline);
    let give_up = Instant::now() + Duration::from_secs(10);
    while counter.wakes() == 0 {
        assert!(Instant::now() < give_up, "the passed deadline never fired");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(counter.wakes(), 1);
    assert!(poll_once(&mut sleep).is_ready());
    assert!(Instant::now() >= deadline);
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().fired, 2, "the 5 ms sleep and the reset one");

    // Polled right after such a reset: the poll reads the clock, `Ready`.
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep).is_pending());
    std::thread::sleep(Duration::from_millis(3)); // the driver cannot run
    Pin::new(&mut sleep).reset(Instant::now() - Duration::from_millis(1));
    assert!(
        poll_once(&mut sleep).is_ready(),
        "a passed deadline is ready"
    );
    assert!(sleep.is_elapsed());
    assert_eq!(timer.pending(), 0);
    // And a later deadline set the same way is still pending.
    let mut sleep = timer.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep).is_pending());
    Pin::new(&mut sleep).reset(Instant::now() + Duration::from_secs(30));
    assert!(poll_once(&mut sleep).is_pending());
    assert_eq!(timer.pending(), 1);
}

/// A cancel keeps the waker it takes back for the thread's next registration
/// of the same task, which takes it rather than cloning its own; that waker
/// still wakes the task. One waker at most is kept per thread (see the
/// crate's docs on memory).
#[tokio::test(start_paused = true)]
async fn a_task_s_next_sleep_after_a_cancel_takes_the_kept_waker_and_still_wakes_it() {
    use std::future::{poll_fn, Future};
    use std::task::Poll;
    use tokio_test::{assert_pending, assert_ready, task};

    let _watchdog = common::Watchdog::start();
    let mut task = task::spawn(async {
        let mut first = Box::pin(tickwheel::time::sleep(Duration::from_secs(5)));
        let mut polled = false;
        poll_fn(|cx| {
            if !polled {
                polled = true;
                assert!(first.as_mut().poll(cx).is_pending());
            }
            Poll::Ready(())
        })
        .await;
        drop(first);
        let mut yielded = false;
        // Pending once without keeping the waker: the test polls again.
        poll_fn(|_| {
            if std::mem::replace(&mut yielded, true) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        tickwheel::time::sleep(Duration::from_secs(1)).await;
    });
    assert_pending!(task.poll());
    // `waker_ref_count` counts the mock task's own reference too.
    assert_eq!(task.waker_ref_count(), 2, "the first sleep's waker, kept");
    assert_pending!(task.poll());
    assert_eq!(
        task.waker_ref_count(),
        2,
        "taken by the second sleep, not cloned"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(task.is_woken());
    assert_ready!(task.poll());
    assert_eq!(task.waker_ref_count(), 1, "woken: the wheel let go of it");
}
