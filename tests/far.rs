//! Deadlines many revolutions away wait in the overflow level and
//! move into the wheel once, with no walk per revolution; millions of them.

mod common;

use std::time::Duration;

use common::{poll_with, CountingWaker};
use tickwheel::Timer;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn two_million_far_timers_each_move_once_and_all_fire() {
    let _watchdog = common::Watchdog::start();
    const N: u64 = 2_000_000;
    let timer = Timer::new(); // a revolution is 8.192 s
    let start = Instant::now();
    let (counter, waker) = CountingWaker::new();
    // Deadlines between 1 h and 11 h on whole seconds: ~440 to ~4,800
    // revolutions ahead. A per-revolution walk would touch entries 10^10
    // times.
    let mut sleeps: Vec<_> = (0..N)
        .map(|i| timer.sleep_until(start + Duration::from_secs(3600 + (i * 7919) % 36_000)))
        .collect();
    for sleep in &mut sleeps {
        assert!(poll_with(sleep, &waker).is_pending());
    }
    assert_eq!(timer.pending(), N as usize);
    tokio::time::sleep(Duration::from_secs(3599)).await;
    assert_eq!(counter.wakes(), 0, "nothing fires before its deadline");
    tokio::time::sleep(Duration::from_secs(36_001)).await;
    assert_eq!(counter.wakes(), N as usize);
    assert!(sleeps.iter().all(|s| s.is_elapsed()));
    let stats = timer.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.fired, N);
    assert_eq!(
        stats.migrated, N,
        "every far timer moved into the ring exactly once"
    );
    // One wake-up per busy bucket plus one per lap holding timers, roughly;
    // far fewer than the 40 million ticks that passed.
    assert!(stats.wakeups < 36_000 + 8_000, "{} wake-ups", stats.wakeups);
}

/// Found in review: the first busy tick is the last tick of the next
/// revolution while a later revolution waits in the overflow; processing it
/// reaches two new revolutions at once. Both timers must fire on time. On
/// the old default of 512 ticks of 10 ms (revolution 1 is 5.12..10.24 s:
/// 10.23 s, and 12.8 s in the overflow) and on the default 8192 ticks of 1
/// ms (revolution 1 is 8.192..16.384 s: 16.383 s, and 20.48 s).
#[tokio::test(start_paused = true)]
async fn a_timer_on_the_last_tick_of_the_next_revolution() {
    let _watchdog = common::Watchdog::start();
    for build in [common::old_default_timer, Timer::new] {
        let timer = build(); // built now: its revolutions count from here
        let revolution = timer.tick() * timer.slots() as u32;
        let start = Instant::now();
        let last_tick = tokio::spawn({
            let timer = timer.clone();
            let last = revolution * 2 - timer.tick();
            async move { timer.sleep(last).await }
        });
        let later = timer
            .timeout(revolution * 5 / 2, std::future::pending::<()>())
            .await;
        assert!(!later.unwrap_err().is_shutdown());
        assert_eq!(start.elapsed(), revolution * 5 / 2);
        last_tick.await.unwrap();
        let stats = timer.stats();
        assert_eq!(stats.fired, 2);
        assert_eq!(stats.migrated, 1, "the later one waited in the overflow");
        assert!(!timer.is_shutdown());
    }
}
