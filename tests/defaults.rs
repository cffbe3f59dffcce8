//! The default settings, which `Timer::new`, `Timer::current` and
//! `tickwheel::time` use: a 1 ms tick (tokio's resolution) and 8192 slots,
//! a revolution of 8.192 s. So the common timeouts, up to 8 s, go straight
//! into the ring; a longer one waits in the overflow level and moves into
//! the ring once.

mod common;

use std::time::Duration;

use tickwheel::{Builder, Timer};
use tokio::time::advance;
use tokio_test::{assert_pending, assert_ready, task};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[tokio::test(start_paused = true)]
async fn the_default_is_a_1_ms_tick_and_8192_slots() {
    let _watchdog = common::Watchdog::start();
    assert_eq!(Builder::DEFAULT_TICK, Duration::from_millis(1));
    assert_eq!(Builder::DEFAULT_SLOTS, 8192);
    for timer in [
        Timer::new(),
        Timer::current(),
        Builder::new().build().unwrap(),
        Builder::default().build().unwrap(),
    ] {
        assert_eq!(timer.tick(), Duration::from_millis(1), "{timer:?}");
        assert_eq!(timer.slots(), 8192, "{timer:?}");
    }
}

/// 5 s and 8 s sleeps are within one revolution: registered straight into
/// the ring, they fire without ever moving. A 20 s one (revolution 2) waits
/// in the overflow level, moves into the ring once, when revolution 1
/// begins at 8.192 s, and fires on time.
#[tokio::test(start_paused = true)]
async fn sleeps_up_to_8_s_go_straight_into_the_ring_and_20_s_moves_in_once() {
    let _watchdog = common::Watchdog::start();
    let timer = Timer::new();
    let mut five = task::spawn(timer.sleep(secs(5)));
    let mut eight = task::spawn(timer.sleep(secs(8)));
    let mut twenty = task::spawn(timer.sleep(secs(20)));
    assert_pending!(five.poll());
    assert_pending!(eight.poll());
    assert_pending!(twenty.poll());
    assert_eq!(timer.pending(), 3);

    advance(secs(5)).await;
    assert!(five.is_woken());
    assert_ready!(five.poll());
    advance(secs(3)).await;
    assert!(eight.is_woken());
    assert_ready!(eight.poll());
    let stats = timer.stats();
    assert_eq!(stats.fired, 2);
    assert_eq!(stats.migrated, 0, "5 s and 8 s went straight into the ring");

    advance(secs(2)).await; // 10 s: past the start of revolution 1
    assert!(!twenty.is_woken());
    assert_pending!(twenty.poll());
    assert_eq!(timer.stats().migrated, 1, "20 s moved into the ring");

    advance(secs(10)).await;
    assert!(twenty.is_woken());
    assert_ready!(twenty.poll());
    let stats = timer.stats();
    assert_eq!(stats.fired, 3);
    assert_eq!(stats.migrated, 1, "and only once");
    assert_eq!(stats.lateness.max, Duration::ZERO, "each on its deadline");
}
