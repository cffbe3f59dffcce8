//! The wheel's unit tests: a timer shard's [`TimerWheel`] driven by hand
//! (registrations, resets, cancels and advances against exact ticks), and a
//! queue's [`Wheel`] taken out one node at a time.

use super::sleeps::{CHAINS, FRESH_MAX, WIDEN_AT};
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use super::watchdog::Watchdog;

impl<P, const G: usize> Wheel<P, G> {
    /// How many nodes the lists hold: every chain of every busy bucket, every
    /// far lap's list, and the `never`, `fresh` and `due` lists. Equal to the
    /// slab's length unless a node was lost (stored, but in no list: it would
    /// never fire, and only a shutdown would find it).
    fn linked_len(&self) -> usize {
        let walk = |mut at: u32| {
            let mut n = 0;
            while at != NIL {
                n += 1;
                at = self.slab.at(at).next();
            }
            n
        };
        let lists = [self.never, self.fresh, self.due];
        let mut n: usize = lists.into_iter().map(walk).sum();
        let mut bucket = self.occupied.next_set(0);
        while let Some(b) = bucket {
            let chains = 0..self.chains as usize;
            n += chains
                .map(|c| walk(self.ring[self.chain(b, c)]))
                .sum::<usize>();
            bucket = self.occupied.next_set(b + 1);
        }
        n + self
            .overflow
            .iter()
            .map(|(_, head)| walk(head))
            .sum::<usize>()
    }
}

const TICK: u64 = 10;

/// A waker that records which timer it belongs to when woken.
struct Probe {
    id: usize,
    log: Arc<std::sync::Mutex<Vec<usize>>>,
    wakes: AtomicUsize,
}
impl Wake for Probe {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push(self.id);
    }
}

/// How many `TimerWheel::advance` calls one test may make: the busiest (1,000
/// far timers woken 3 at a time) makes about 1,000.
const ADVANCE_LIMIT: usize = 100_000;

struct Harness {
    wheel: TimerWheel,
    log: Arc<std::sync::Mutex<Vec<usize>>>,
    /// `TimerWheel::advance` calls so far, capped at [`ADVANCE_LIMIT`] so that
    /// an `advance` that never reports progress (always `Full`, or the
    /// same `Until`) fails instead of spinning a test loop forever.
    advances: usize,
    _watchdog: Watchdog,
}

impl Harness {
    fn new(slots: usize) -> Self {
        Harness {
            wheel: TimerWheel::new(slots, TICK),
            log: Default::default(),
            advances: 0,
            _watchdog: Watchdog::start(),
        }
    }
    fn waker(&self, id: usize) -> Waker {
        Waker::from(Arc::new(Probe {
            id,
            log: self.log.clone(),
            wakes: AtomicUsize::new(0),
        }))
    }
    /// Registers and files at once (as a driver pass after it would), so
    /// the tests of the ring, the overflow and moves see where it lands;
    /// [`Harness::insert_fresh`] leaves it unfiled, as a registration does.
    fn insert(&mut self, id: usize, deadline: u64) -> Key {
        let key = self.insert_fresh(id, deadline);
        self.wheel.file_fresh();
        key
    }
    fn insert_fresh(&mut self, id: usize, deadline: u64) -> Key {
        let w = self.waker(id);
        match self.wheel.insert(deadline, &mut Some(w)) {
            Insert::Registered { key, .. } => key,
            other => panic!("insert({deadline}) = {other:?}"),
        }
    }
    /// Advances to `now` (ns) with a small waker buffer, waking as it goes.
    fn advance_to(&mut self, now: u64) -> Advance {
        let mut out = Vec::new();
        loop {
            self.advances += 1;
            assert!(
                self.advances <= ADVANCE_LIMIT,
                "{ADVANCE_LIMIT} advance calls: the wheel stopped making progress"
            );
            let r = self.wheel.advance(now / TICK, now, &mut out, 3);
            out.drain(..).for_each(Waker::wake);
            if r != Advance::BatchFull {
                return r;
            }
        }
    }
    fn fired(&self) -> Vec<usize> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
    /// The keys of the entries heading a ring list (a bucket's chain).
    fn ring_heads(&self) -> Vec<Key> {
        let wheel = &self.wheel.wheel;
        wheel
            .ring
            .iter()
            .filter(|&&head| head != NIL)
            .map(|&head| wheel.slab.key_at(head))
            .collect()
    }
}

#[test]
fn fires_each_bucket_once_its_boundary_passes_and_never_before() {
    let mut h = Harness::new(8);
    h.insert(1, 10); // exactly on tick 1's boundary
    h.insert(2, 11); // rounds up to tick 2
    h.insert(3, 20);
    assert_eq!(h.advance_to(9), Advance::Until(1));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(10), Advance::Until(2));
    assert_eq!(h.fired(), vec![1]);
    assert_eq!(h.advance_to(19), Advance::Until(2));
    assert!(h.fired().is_empty(), "11 ns must wait for tick 2");
    assert_eq!(h.advance_to(20), Advance::Idle);
    let mut fired = h.fired();
    fired.sort();
    assert_eq!(fired, vec![2, 3]);
    assert_eq!(h.wheel.pending(), 0);
}

#[test]
fn skips_empty_ticks_and_reports_the_next_busy_one() {
    let mut h = Harness::new(64);
    h.insert(1, 500);
    assert_eq!(h.advance_to(0), Advance::Until(50));
    assert_eq!(h.advance_to(499), Advance::Until(50));
    assert_eq!(h.advance_to(500), Advance::Idle);
    assert_eq!(h.fired(), vec![1]);
}

/// The overflow's window follows the current lap: after the wheel has
/// moved on by far more than 64 laps, a timer 10 laps ahead takes an
/// array slot, not a map entry, and one registered 100 laps ahead at the
/// start moves from the map into the array as the window reaches it.
#[test]
fn the_overflow_window_slides_with_the_current_lap() {
    let mut h = Harness::new(4); // a lap is 4 ticks = 40 ns
    let lap = 4 * TICK;
    h.insert(1, 100 * lap);
    assert_eq!(
        h.wheel.wheel.overflow.in_map(),
        1,
        "100 laps ahead: past the window"
    );
    assert_eq!(h.advance_to(50 * lap), Advance::Until(99 * lap / TICK - 1));
    assert_eq!(
        h.wheel.wheel.overflow.in_map(),
        0,
        "the window reached lap 100"
    );
    assert_eq!(h.wheel.wheel.overflow.len(), 1);
    h.insert(2, 60 * lap);
    assert_eq!(
        h.wheel.wheel.overflow.in_map(),
        0,
        "10 laps ahead: in the array"
    );
    assert_eq!(h.advance_to(100 * lap), Advance::Idle);
    assert_eq!(h.fired(), vec![2, 1]);
    assert_eq!(h.advance_to(1_000 * lap), Advance::Idle);
    h.insert(3, 1_010 * lap);
    assert_eq!(
        h.wheel.wheel.overflow.in_map(),
        0,
        "an idle wheel's window moved too"
    );
    assert_eq!(h.wheel.wheel.overflow.len(), 1);
}

#[test]
fn far_timers_wait_in_the_overflow_and_move_in_once() {
    let mut h = Harness::new(4); // a lap is 4 ticks = 40 ns
    let n = 1000;
    for i in 0..n {
        // Spread over laps 2..250.
        h.insert(i, 100 + (i as u64) * 10);
    }
    // Deadlines 100..=10_090 ns are ticks 10..=1009: laps 2..=252, all
    // beyond the first lap, so all start in the overflow.
    assert_eq!(h.wheel.wheel.overflow.len(), 251);
    assert!(h.wheel.wheel.occupied.next_set(0).is_none());
    let mut now = 0;
    let mut fired = Vec::new();
    loop {
        let step = h.advance_to(now);
        fired.extend(h.fired());
        match step {
            Advance::Until(t) => now = t * TICK,
            Advance::Idle => break,
            Advance::BatchFull => unreachable!(),
        }
    }
    assert!(
        fired == (0..n).collect::<Vec<_>>(),
        "not in deadline order, or not each once: {} fired",
        fired.len()
    );
    let c = h.wheel.counters();
    assert_eq!(c.fired, n as u64);
    assert_eq!(c.migrated, n as u64, "each far timer moves exactly once");
}

#[test]
fn deadlines_within_one_revolution_go_straight_into_the_ring() {
    let mut h = Harness::new(8); // laps of 8 ticks
    h.insert(0, 60);
    assert_eq!(h.advance_to(55), Advance::Until(6)); // elapsed = 5, mid-lap 0
                                                     // From tick 5, every tick up to 5 + 8 = 13 is under one revolution
                                                     // away: all of them land in the ring, none in the overflow.
    for tick in 6..=13u64 {
        h.insert(tick as usize, tick * TICK);
    }
    assert!(h.wheel.wheel.overflow.is_empty());
    h.insert(99, 16 * TICK); // lap 2: two laps ahead, overflow
    assert_eq!(h.wheel.wheel.overflow.len(), 1);
    let mut now = 60;
    let mut fired = Vec::new();
    while let Advance::Until(t) = h.advance_to(now) {
        fired.extend(h.fired());
        now = t * TICK;
    }
    fired.extend(h.fired());
    fired.sort_unstable();
    assert_eq!(fired, vec![0, 6, 7, 8, 9, 10, 11, 12, 13, 99]);
    assert_eq!(h.wheel.counters().migrated, 1);
}

/// Found in review: when the first busy tick is the last tick of the next
/// lap, processing it makes two new laps reachable at once.
#[test]
fn firing_the_last_tick_of_the_next_lap_moves_two_laps_in() {
    let mut h = Harness::new(8); // laps of 8 ticks: lap 1 is 8..16
    h.insert(1, 15 * TICK); // last tick of lap 1, in the ring
    h.insert(2, 20 * TICK); // lap 2, in the overflow
    h.insert(3, 30 * TICK); // lap 3, in the overflow
    assert_eq!(h.advance_to(0), Advance::Until(15));
    assert_eq!(h.advance_to(150), Advance::Until(20));
    assert_eq!(h.fired(), vec![1]);
    assert!(
        h.wheel.wheel.overflow.is_empty(),
        "laps 2 and 3 both moved in"
    );
    assert_eq!(h.advance_to(200), Advance::Until(30));
    assert_eq!(h.advance_to(300), Advance::Idle);
    assert_eq!(h.fired(), vec![2, 3]);
}

#[test]
fn removing_unlinks_from_anywhere_in_a_list() {
    let mut h = Harness::new(8);
    let a = h.insert(1, 30);
    let b = h.insert(2, 30);
    let c = h.insert(3, 30);
    let far = h.insert(4, 10_000);
    let far2 = h.insert(5, 10_000);
    assert_eq!(h.wheel.pending(), 5);
    assert!(h.wheel.remove(b).is_some(), "middle");
    assert!(h.wheel.remove(c).is_some(), "head");
    assert!(h.wheel.remove(far2).is_some(), "overflow head");
    assert!(h.wheel.remove(b).is_none(), "twice is a no-op");
    assert_eq!(h.wheel.pending(), 2);
    // Tick 1000 is in lap 125 of 8-tick laps: it moves into the ring when
    // lap 124 begins, so wake at tick 991.
    assert_eq!(h.advance_to(30), Advance::Until(991));
    assert_eq!(h.fired(), vec![1]);
    assert!(h.wheel.remove(a).is_none(), "fired keys are dead");
    assert!(h.wheel.remove(far).is_some(), "last overflow entry");
    assert!(h.wheel.wheel.overflow.is_empty());
    assert_eq!(h.advance_to(20_000), Advance::Idle);
    assert!(h.fired().is_empty(), "removed entries never fire");
    assert_eq!(h.wheel.counters().cancelled, 4);
}

#[test]
fn reset_moves_between_ring_and_overflow() {
    let mut h = Harness::new(8);
    let k = h.insert(1, 30);
    // Later: recorded in place; the entry moves when tick 3 comes due.
    assert!(matches!(h.wheel.reset(k, 5_000, false), Reset::InPlace));
    assert_eq!(h.wheel.pending(), 1);
    assert_eq!(h.advance_to(100), Advance::Until(487));
    assert!(h.fired().is_empty());
    assert_eq!(h.wheel.counters().migrated, 1, "moved once, at tick 3");
    assert!(matches!(
        h.wheel.reset(k, 120, false),
        Reset::Moved { tick: 12 }
    ));
    assert_eq!(h.advance_to(120), Advance::Idle);
    assert_eq!(h.fired(), vec![1]);
    assert!(matches!(h.wheel.reset(k, 500, false), Reset::Stale));
    let k2 = h.insert(2, 500);
    assert!(matches!(h.wheel.reset(k2, 50, false), Reset::Elapsed(_)));
    assert_eq!(h.wheel.pending(), 0);
    // The books balance: a reset into the past counts as a cancel.
    let c = h.wheel.counters();
    assert_eq!((c.registered, c.fired, c.cancelled), (2, 1, 1));
}

/// With ticks long enough that "never" (the saturated tick) is only a few
/// laps away, a reset to a saturated deadline still goes to the never list
/// at once, not in place into a list that would come due.
#[test]
fn with_long_ticks_a_reset_to_never_goes_to_the_never_list() {
    let _watchdog = Watchdog::start();
    let tick_ns = 1u64 << 33; // about 8.6 s
    let mut wheel = TimerWheel::new(8, tick_ns);
    let Insert::Registered { key, .. } = wheel.insert(tick_ns, &mut Some(Waker::noop().clone()))
    else {
        panic!("registration failed");
    };
    assert!(matches!(
        wheel.reset(key, SATURATED, false),
        Reset::Moved { tick: u64::MAX }
    ));
}

/// A later deadline is recorded in place however far it is from the list
/// the entry is in: there is no limit on how far an entry is moved later,
/// near or in the overflow, and it still fires at its own deadline.
#[test]
fn a_later_reset_stays_in_place_however_far() {
    let mut h = Harness::new(8);
    let k = h.insert(1, 100);
    let beyond = (10 + (1 << 31)) * TICK;
    assert!(matches!(h.wheel.reset(k, beyond, false), Reset::InPlace));
    let far = (1 << 32) * TICK;
    let k2 = h.insert(2, far);
    assert!(matches!(
        h.wheel.reset(k2, far + TICK, false),
        Reset::InPlace
    ));
    // At tick 10 the first moves to its own lap, once.
    let lap = |tick: u64| tick >> 3;
    let move_in = |tick: u64| ((lap(tick) - 1) << 3) - 1;
    assert_eq!(h.advance_to(100), Advance::Until(move_in(10 + (1 << 31))));
    assert!(h.fired().is_empty());
    assert_eq!(h.wheel.counters().migrated, 1);
    assert_eq!(h.advance_to(beyond), Advance::Until(move_in(1 << 32)));
    assert_eq!(h.fired(), vec![1]);
    assert_eq!(h.advance_to(far + TICK), Advance::Idle);
    assert_eq!(h.fired(), vec![2]);
}

#[test]
fn a_later_reset_stays_in_place_until_its_list_comes_due() {
    let mut h = Harness::new(8);
    // Pushed back twice: still linked at tick 3, fires at tick 6, never
    // before 60.
    let k = h.insert(1, 30);
    assert!(matches!(h.wheel.reset(k, 45, false), Reset::InPlace));
    assert!(matches!(h.wheel.reset(k, 55, false), Reset::InPlace));
    assert_eq!(h.advance_to(30), Advance::Until(6));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(59), Advance::Until(6));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(60), Advance::Idle);
    assert_eq!(h.fired(), vec![1]);

    // The driver is behind: the entry's own tick has come too,
    // so it fires when its list does, once.
    let k = h.insert(2, 80);
    assert!(matches!(h.wheel.reset(k, 95, false), Reset::InPlace));
    let migrated = h.wheel.counters().migrated;
    assert_eq!(h.advance_to(200), Advance::Idle);
    assert_eq!(h.fired(), vec![2]);
    assert_eq!(
        h.wheel.counters().migrated,
        migrated,
        "fired where it was linked, not moved first"
    );

    // Earlier than where it is linked: moved for real; later again but
    // before the list it is in: in place.
    let k = h.insert(3, 300);
    assert!(matches!(h.wheel.reset(k, 500, false), Reset::InPlace));
    assert!(matches!(
        h.wheel.reset(k, 250, false),
        Reset::Moved { tick: 25 }
    ));
    assert!(matches!(h.wheel.reset(k, 270, false), Reset::InPlace));
    assert_eq!(h.advance_to(269), Advance::Until(27));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(270), Advance::Idle);
    assert_eq!(h.fired(), vec![3]);

    // An entry moved later in place that heads its list is removed from
    // that list.
    let k = h.insert(4, 300);
    let other = h.insert(5, 300);
    assert!(matches!(h.wheel.reset(k, 700, false), Reset::InPlace));
    assert!(h.wheel.remove(other).is_some());
    assert!(h.wheel.remove(k).is_some());
    assert_eq!(h.wheel.pending(), 0);
    assert_eq!(h.advance_to(1_000), Advance::Idle);
    assert!(h.fired().is_empty());

    // In the overflow: moved when its lap moves in, to its own lap.
    let k = h.insert(6, 2_000);
    assert!(matches!(h.wheel.reset(k, 3_000, false), Reset::InPlace));
    assert_eq!(h.advance_to(2_000), Advance::Until(287));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(2_999), Advance::Until(300));
    assert_eq!(h.advance_to(3_000), Advance::Idle);
    assert_eq!(h.fired(), vec![6]);

    // A deadline that can never come due is moved to the never list at
    // once (no driver wake-up is ever scheduled for it), and a reset
    // from there is a real move too.
    let k = h.insert(7, 4_000);
    assert!(matches!(
        h.wheel.reset(k, SATURATED, false),
        Reset::Moved { tick: u64::MAX }
    ));
    assert_eq!(h.advance_to(5_000), Advance::Idle);
    assert!(matches!(
        h.wheel.reset(k, 5_050, false),
        Reset::Moved { tick: 505 }
    ));
    assert_eq!(h.advance_to(5_050), Advance::Idle);
    assert_eq!(h.fired(), vec![7]);
    let c = h.wheel.counters();
    assert_eq!((c.registered, c.fired, c.cancelled), (7, 5, 2));

    // Later twice, within the ring: both recorded in the list it was
    // first linked in. Its real tick is the one the driver reaches: it
    // fires in place, in the same pass, with no move.
    let k = h.insert(8, 5_080);
    for later in [5_100, 5_120] {
        assert!(matches!(h.wheel.reset(k, later, false), Reset::InPlace));
    }
    let migrated = h.wheel.counters().migrated;
    assert_eq!(h.advance_to(5_120), Advance::Idle);
    assert_eq!(h.fired(), vec![8]);
    assert_eq!(h.wheel.counters().migrated, migrated);
}

#[test]
fn past_deadlines_are_refused_and_shutdown_drains_everything() {
    let mut h = Harness::new(8);
    h.insert(1, 50);
    h.insert(2, 1_000_000);
    h.advance_to(40);
    let w = h.waker(9);
    assert!(matches!(
        h.wheel.insert(40, &mut Some(w.clone())),
        Insert::Done
    ));
    assert!(matches!(
        h.wheel.insert(0, &mut Some(w.clone())),
        Insert::Done
    ));
    let mut out = Vec::new();
    assert_eq!(h.wheel.close_and_drain(&mut out), 2);
    assert_eq!(out.len(), 2);
    assert_eq!(h.wheel.pending(), 0);
    assert!(matches!(
        h.wheel.insert(10_000, &mut Some(w.clone())),
        Insert::Done
    ));
}

#[test]
fn oversleeping_fires_buckets_in_order_without_firing_later_ones() {
    let mut h = Harness::new(8);
    for (id, deadline) in [(1, 15), (2, 35), (3, 75), (4, 95), (5, 300)] {
        h.insert(id, deadline);
    }
    // The driver wakes late, at 80 ns: ticks 2, 4 and 8 are due, 10 is not.
    assert_eq!(h.advance_to(80), Advance::Until(10));
    assert_eq!(h.fired(), vec![1, 2, 3]);
    // Tick 30 is in lap 3 (ticks 24..32): it moves in when lap 2 begins.
    assert_eq!(h.advance_to(100), Advance::Until(15));
    assert_eq!(h.fired(), vec![4]);
    assert_eq!(h.advance_to(150), Advance::Until(30));
    assert_eq!(h.advance_to(300), Advance::Idle);
    assert_eq!(h.fired(), vec![5]);
}

/// Saturated and unreachable deadlines never make the driver wake up:
/// `advance` reports `Idle` for them at every point of the clock's range,
/// up to the very last tick, yet they stay registered for shutdown.
#[test]
fn unreachable_deadlines_never_ask_for_a_wake_up() {
    let mut h = Harness::new(8);
    let saturated = h.insert(1, SATURATED);
    let beyond_last_tick = h.insert(2, SATURATED - 1); // tick last + 1
    let last = h.insert(3, h.wheel.wheel.last_tick * TICK); // reachable, just
    assert_eq!(h.wheel.pending(), 3);
    assert!(matches!(h.advance_to(0), Advance::Until(t) if t < h.wheel.wheel.last_tick));
    assert!(h.wheel.remove(last).is_some());
    assert_eq!(h.advance_to(0), Advance::Idle);
    // Out of the never list into the ring, and back.
    assert!(matches!(
        h.wheel.reset(beyond_last_tick, 50, false),
        Reset::Moved { tick: 5 }
    ));
    assert_eq!(h.advance_to(0), Advance::Until(5));
    assert!(matches!(
        h.wheel.reset(beyond_last_tick, SATURATED + 5, false),
        Reset::Moved { tick: u64::MAX }
    ));
    assert_eq!(h.advance_to(SATURATED / 2), Advance::Idle);
    assert_eq!(h.advance_to(SATURATED), Advance::Idle);
    assert!(h.fired().is_empty(), "nothing unreachable fires");
    assert_eq!(h.wheel.pending(), 2);
    assert!(h.wheel.remove(saturated).is_some());
    let mut out = Vec::new();
    assert_eq!(
        h.wheel.close_and_drain(&mut out),
        1,
        "shutdown still reaches it"
    );
    assert!(h.wheel.remove(beyond_last_tick).is_none());
}

/// A saturated deadline never fires even when the tick length divides
/// `SATURATED` (2^63 - 1 = 7 x 1,317,624,576,693,539,401), so that the
/// last boundary the clock reaches is the horizon itself: a 1 ms tick
/// never does, but a tick of 7 x 73 x 127 x 337 ns (about 21.9 ms), or
/// the largest tick there is (`i64::MAX` ns), would. Its tick is the one
/// after the last, so once the clock has reached the horizon it is still
/// registered (and a sleep's lock-free check finds it not fired), and a
/// new one, or a reset to one, still waits instead of completing.
#[test]
fn a_saturated_deadline_never_fires_on_a_tick_that_divides_it() {
    for tick_ns in [7, 7 * 73 * 127 * 337, SATURATED] {
        assert_eq!(SATURATED % tick_ns, 0);
        let mut wheel = TimerWheel::new(8, tick_ns);
        let last = wheel.wheel.last_tick;
        assert_eq!(wheel.wheel.tick_of(SATURATED), last + 1);
        assert_eq!(wheel.wheel.tick_of(SATURATED - 1), last);
        let mut waker = Some(Waker::noop().clone());
        let Insert::Registered { key, tick } = wheel.insert(SATURATED, &mut waker) else {
            panic!("a saturated deadline is registered");
        };
        assert_eq!(
            tick,
            u64::MAX,
            "tick {tick_ns} ns: the driver must not wake for it"
        );
        let mut waker = Some(Waker::noop().clone());
        let Insert::Registered { key: other, .. } = wheel.insert(1, &mut waker) else {
            panic!("a reachable deadline is registered");
        };
        let mut out = Vec::new();
        assert_eq!(wheel.advance(last, SATURATED, &mut out, 8), Advance::Idle);
        assert_eq!(
            out.len(),
            1,
            "tick {tick_ns} ns: only the reachable one fired"
        );
        assert_eq!(wheel.elapsed(), last, "the clock reached the horizon");
        assert!(wheel.is_live(key));
        assert!(!wheel.is_live(other));
        // At the horizon, a new saturated deadline and a reset to one
        // are registered, not elapsed.
        let mut waker = Some(Waker::noop().clone());
        let Insert::Registered { key: late, tick } = wheel.insert(SATURATED, &mut waker) else {
            panic!("tick {tick_ns} ns: a saturated deadline counted as elapsed");
        };
        assert_eq!(tick, u64::MAX);
        assert!(matches!(
            wheel.reset(key, SATURATED, false),
            Reset::Moved { tick: u64::MAX }
        ));
        assert_eq!(wheel.advance(last, SATURATED, &mut out, 8), Advance::Idle);
        assert_eq!(
            out.len(),
            1,
            "tick {tick_ns} ns: a saturated deadline fired"
        );
        assert!(wheel.is_live(key) && wheel.is_live(late));
    }
}

#[test]
fn one_slot_wheels_work() {
    let mut h = Harness::new(1);
    for i in 0..5 {
        h.insert(i, 10 * (5 - i as u64));
    }
    let mut now = 0;
    while let Advance::Until(t) = h.advance_to(now) {
        now = t * TICK;
    }
    assert_eq!(h.fired(), vec![4, 3, 2, 1, 0]);
}

#[test]
fn waker_updates_replace_only_different_tasks() {
    let mut h = Harness::new(8);
    let k = h.insert(1, 30);
    let same = h.wheel.wheel.slab.get(k).unwrap().payload.clone();
    assert_eq!(h.wheel.check_waker(k, &same).0, WakerCheck::Same);
    let other = h.waker(2);
    assert_eq!(h.wheel.check_waker(k, &other).0, WakerCheck::Different);
    assert!(h.wheel.swap_waker(k, other.clone()).is_ok());
    assert_eq!(h.wheel.check_waker(k, &other).0, WakerCheck::Same);
    h.advance_to(30);
    assert_eq!(h.fired(), vec![2], "the newest waker is the one woken");
    assert_eq!(h.wheel.check_waker(k, &other).0, WakerCheck::Gone);
    assert!(
        h.wheel.swap_waker(k, other).is_err(),
        "a fired entry hands the new waker back"
    );
}

/// A fired entry's slot stays its sleep's until the sleep's next call frees
/// it, whichever call that is; only then is it reused or its page released.
/// Until then it counts as memory, not as pending. (No generation tells a
/// stale key from a live one: a timer's key is never used after its slot
/// is freed.)
#[test]
fn a_fired_entry_keeps_its_slot_until_its_sleep_frees_it() {
    let mut h = Harness::new(8);
    let far = 1_000_000 * TICK;
    // 32 bytes per entry: the node, with no generation beside it.
    let one_page = slab::PAGE_LEN * 32;
    let keys: Vec<Key> = (0..=slab::PAGE_LEN)
        .map(|i| h.insert(i, 5 * TICK))
        .collect();
    let bytes = h.wheel.entry_bytes();
    assert_eq!(bytes, 2 * one_page);
    assert_eq!(h.advance_to(5 * TICK), Advance::Idle);
    assert_eq!(h.fired().len(), keys.len());
    assert_eq!(h.wheel.pending(), 0);
    assert_eq!(
        h.wheel.entry_bytes(),
        bytes,
        "fired slots wait for their sleeps"
    );
    for &key in &keys {
        assert!(!h.wheel.is_live(key), "{key:?} looks pending");
    }
    let newer = h.insert(99_999, 9 * TICK);
    assert!(!keys.contains(&newer), "a fired slot was reused");

    // Each call a sleep makes on its fired entry frees the slot, once: a
    // poll (the same task, or another's waker), a reset, a drop.
    let other = h.waker(7);
    for (i, &key) in keys.iter().enumerate() {
        match i % 4 {
            0 => assert_eq!(h.wheel.check_waker(key, &other), (WakerCheck::Gone, false)),
            1 => assert!(h.wheel.swap_waker(key, other.clone()).is_err()),
            2 => assert!(matches!(h.wheel.reset(key, far, false), Reset::Stale)),
            _ => assert!(h.wheel.remove(key).is_none()),
        }
        assert_eq!(
            h.wheel.pending(),
            1,
            "freeing {key:?} touched the pending one"
        );
    }
    assert_eq!(h.wheel.wheel.slab.len(), 1);
    assert!(h.wheel.remove(newer).is_some());
    assert_eq!(
        h.wheel.entry_bytes(),
        one_page,
        "freed, the pages are released"
    );
    let counters = h.wheel.counters();
    assert_eq!((counters.fired, counters.cancelled), (keys.len() as u64, 1));
    assert!(h.fired().is_empty(), "freeing a fired slot woke someone");
}

// A queue's wheel, taken out one node at a time.

/// The overflow's window follows the queue's processed tick: after the
/// queue has moved on by far more than 64 laps, a node 10 laps ahead
/// takes an array slot, and one inserted 100 laps ahead at the start
/// moves from the map into the array as the window reaches it.
#[test]
fn the_overflow_window_slides_with_the_processed_tick() {
    let (tick_ns, slots) = (10, 4); // a lap is 4 ticks = 40 ns
    let lap = slots as u64 * tick_ns;
    let mut wheel: Wheel<u32> = Wheel::new(Slab::new(8), slots, tick_ns, 0);
    let add = |wheel: &mut Wheel<u32>, value, at: u64| {
        let deadline = Deadline::from_ns(at);
        let key = wheel.slab.insert(value, deadline).expect("room");
        wheel.link(key.index, false);
    };
    add(&mut wheel, 1, 100 * lap);
    assert_eq!(
        wheel.overflow.in_map(),
        1,
        "100 laps ahead: past the window"
    );
    let seen = wheel.tick_floor(50 * lap);
    assert_eq!(wheel.pop_due(seen), None);
    wheel.settle(seen);
    assert_eq!(wheel.overflow.in_map(), 0, "the window reached lap 100");
    add(&mut wheel, 2, 60 * lap);
    assert_eq!(wheel.overflow.in_map(), 0, "10 laps ahead: in the array");
    let seen = wheel.tick_floor(100 * lap);
    let first = wheel.pop_due(seen).expect("item 2 is due");
    assert_eq!(wheel.slab.remove(first).0.payload, 2);
    let second = wheel.pop_due(seen).expect("item 1 is due");
    assert_eq!(wheel.slab.remove(second).0.payload, 1);
    wheel.settle(wheel.tick_floor(1_000 * lap));
    add(&mut wheel, 3, 1_010 * lap);
    assert_eq!(
        wheel.overflow.in_map(),
        0,
        "an idle queue's window moved too"
    );
}

/// `due_by` on the clock's last ticks: a saturated deadline (`SATURATED`
/// itself, what `Duration::MAX` becomes) is due only past the last tick the
/// clock reaches, even where that tick's boundary is the horizon itself (a
/// tick dividing `2^63 - 1`); a deadline a nanosecond earlier is due by the
/// last tick whose boundary reaches it.
#[test]
fn a_saturated_deadline_is_due_by_no_tick_the_clock_reaches() {
    for tick_ns in [SATURATED, SATURATED / 7, 1_000_000, SATURATED / 2 + 1] {
        let wheel: Wheel<u32> = Wheel::new(Slab::new(8), 2, tick_ns, 0);
        let last = SATURATED / tick_ns;
        assert!(
            !wheel.due_by(SATURATED, last),
            "tick {tick_ns}: at the last tick"
        );
        assert!(!wheel.due_by(SATURATED, last - 1), "tick {tick_ns}");
        assert!(
            wheel.due_by(SATURATED, last + 1),
            "tick {tick_ns}: past the last"
        );
        let at_last = last * tick_ns; // the last boundary the clock reaches
        assert!(
            wheel.due_by(at_last.min(SATURATED - 1), last),
            "tick {tick_ns}"
        );
        assert!(
            !wheel.due_by(at_last + 1, last) || at_last + 1 == SATURATED,
            "tick {tick_ns}"
        );
    }
}

/// A node moved later in place by more than four times 2^30 laps still
/// leaves its far lap's list when unlinked: its list is found by the walk
/// over the overflow, past the guesses from its deadline's lap. (One-slot
/// wheel of 1 ns ticks: a lap is a tick.)
#[test]
fn a_node_moved_later_by_billions_of_laps_still_leaves_its_list() {
    let mut wheel: Wheel<u32> = Wheel::new(Slab::new(8), 1, 1, 0);
    let add = |wheel: &mut Wheel<u32>, value, at: u64| {
        let key = wheel
            .slab
            .insert(value, Deadline::from_ns(at))
            .expect("room");
        wheel.link(key.index, false);
        key.index
    };
    let moved = add(&mut wheel, 1, 10); // lap 10: the overflow
    let other = add(&mut wheel, 2, 20); // another far lap's head
    assert!(wheel
        .extend(moved, Deadline::from_ns(10 + 5 * (1 << 30)))
        .is_some());
    wheel.unlink(moved);
    wheel.slab.remove(moved);
    assert_eq!(wheel.overflow.head(10), NIL, "lap 10's list is empty");
    assert_eq!(wheel.overflow.head(20), other, "lap 20's list is intact");
    wheel.unlink(other);
    wheel.slab.remove(other);
    assert_eq!(wheel.overflow.head(20), NIL);
}

/// A registration leaves its entry unfiled: until the next advance it is in
/// no bucket, no lap and no bitmap bit, so cancelling it then (most
/// timeouts) touches nothing the driver reads. The ring is not even
/// allocated.
#[test]
fn an_entry_cancelled_before_the_next_advance_never_touches_a_bucket() {
    let mut h = Harness::new(8);
    let near = h.insert_fresh(1, 30);
    let far = h.insert_fresh(2, 10_000);
    let never = h.insert_fresh(3, SATURATED);
    assert_eq!(h.wheel.pending(), 3);
    assert!(h.wheel.wheel.ring.is_empty(), "no bucket was touched");
    assert!(h.wheel.wheel.occupied.next_set(0).is_none());
    assert!(h.wheel.wheel.overflow.is_empty());
    assert_eq!(h.wheel.wheel.never, NIL);
    for key in [far, near, never] {
        assert!(h.wheel.remove(key).is_some());
    }
    assert_eq!(h.wheel.pending(), 0);
    assert_eq!(h.wheel.wheel.fresh, NIL);
    assert_eq!(h.advance_to(20_000), Advance::Idle);
    assert!(h.fired().is_empty(), "cancelled entries never fire");
    assert_eq!(h.wheel.counters().cancelled, 3);
}

/// Unfiled entries are filed by the next advance, before it processes any
/// tick: each fires at its own tick, including one reset later in place
/// and one reset earlier before the advance.
#[test]
fn unfiled_entries_fire_on_time_after_the_next_advance_files_them() {
    let mut h = Harness::new(8);
    let a = h.insert_fresh(1, 30);
    h.insert_fresh(2, 10_000); // the overflow, once filed
    let c = h.insert_fresh(3, 500);
    // An unfiled entry is never moved later in place: it is filed now.
    assert!(matches!(
        h.wheel.reset(a, 70, false),
        Reset::Moved { tick: 7 }
    ));
    assert!(matches!(
        h.wheel.reset(c, 40, false),
        Reset::Moved { tick: 4 }
    ));
    assert_eq!(h.advance_to(39), Advance::Until(4));
    assert!(h.fired().is_empty(), "nothing is due before tick 4");
    assert_eq!(h.advance_to(40), Advance::Until(7));
    assert_eq!(h.fired(), vec![3]);
    assert_eq!(h.advance_to(69), Advance::Until(7));
    assert!(
        h.fired().is_empty(),
        "a reset later in place never fires early"
    );
    h.advance_to(70);
    assert_eq!(h.fired(), vec![1]);
    let mut now = 70;
    while let Advance::Until(t) = h.advance_to(now) {
        now = t * TICK;
    }
    assert_eq!(h.fired(), vec![2]);
    assert_eq!(now, 10_000);
    assert_eq!(h.wheel.counters().migrated, 1, "only the far one moved in");
}

/// A drain at shutdown takes unfiled entries too: every waker comes back.
#[test]
fn a_drain_takes_unfiled_entries_too() {
    let mut h = Harness::new(8);
    h.insert(1, 30);
    h.insert_fresh(2, 40);
    h.insert_fresh(3, SATURATED);
    let mut out = Vec::new();
    assert_eq!(h.wheel.close_and_drain(&mut out), 3);
    assert_eq!(out.len(), 3);
    assert_eq!(h.wheel.pending(), 0);
}

/// A shard keeps at most `FRESH_MAX` entries unfiled: a burst's later
/// registrations are filed at once, so the driver's next pass files no
/// more than that, and a cancel or reset of an unfiled entry frees its
/// place. Every entry still fires at its tick.
#[test]
fn a_burst_past_the_fresh_list_s_bound_is_filed_at_registration() {
    let mut h = Harness::new(8);
    let keys: Vec<Key> = (0..100)
        .map(|i| h.insert_fresh(i, 30 + (i as u64 % 3) * TICK))
        .collect();
    assert_eq!(h.wheel.fresh, FRESH_MAX);
    assert!(
        h.wheel.wheel.occupied.next_set(0).is_some(),
        "the rest filed"
    );
    // The first 64 are unfiled: a cancel and a reset of one free places.
    assert!(h.wheel.remove(keys[0]).is_some());
    assert!(matches!(
        h.wheel.reset(keys[1], 60, false),
        Reset::Moved { tick: 6 }
    ));
    assert_eq!(h.wheel.fresh, FRESH_MAX - 2);
    h.insert_fresh(100, 40);
    assert_eq!(h.wheel.fresh, FRESH_MAX - 1);
    let mut now = 0;
    while let Advance::Until(t) = h.advance_to(now) {
        assert_eq!(h.wheel.fresh, 0);
        now = t * TICK;
    }
    let mut fired = h.fired();
    fired.sort_unstable();
    assert_eq!(fired, (1..=100).collect::<Vec<_>>());
}

/// A widened wheel files each entry into the chain its slab index picks and
/// fires a bucket one entry from each chain in turn. A batch that fills up
/// mid-bucket leaves each chain's new head named as its list's head, so a
/// cancel that unlinks a head afterwards (by that name) leaves the lists
/// whole: here every chain's head is cancelled after each full batch, then
/// half of the rest. Every entry fires or is cancelled, once.
#[test]
fn a_bucket_of_several_chains_fires_in_batches_and_its_heads_unlink_between() {
    let mut h = Harness::new(8);
    h.wheel.wheel.set_chains(CHAINS);
    let keys: Vec<Key> = (0..24).map(|i| h.insert(i, 30)).collect();
    let chains: std::collections::HashSet<u32> = keys.iter().map(|k| k.index % CHAINS).collect();
    assert_eq!(
        chains.len(),
        CHAINS as usize,
        "the entries spread over every chain"
    );
    let id_of = |key: Key| keys.iter().position(|k| *k == key).unwrap();
    let mut fired = Vec::new();
    let mut cancelled = Vec::new();
    let mut out = Vec::new();
    for batch in [6, 3] {
        assert_eq!(h.wheel.advance(3, 30, &mut out, batch), Advance::BatchFull);
        out.drain(..).for_each(Waker::wake);
        let this = h.fired();
        assert_eq!(this.len(), batch);
        fired.extend(this);
        let heads = h.ring_heads();
        assert_eq!(heads.len(), CHAINS as usize, "every chain still has a head");
        for head in heads {
            assert!(h.wheel.remove(head).is_some(), "a head still pending");
            cancelled.push(id_of(head));
        }
    }
    for (id, key) in keys.iter().enumerate() {
        if h.wheel.is_live(*key) && id % 2 == 1 {
            assert!(h.wheel.remove(*key).is_some());
            cancelled.push(id);
        }
    }
    assert_eq!(h.advance_to(30), Advance::Idle);
    fired.extend(h.fired());
    fired.extend(&cancelled);
    fired.sort_unstable();
    assert_eq!(fired, (0..24).collect::<Vec<_>>());
    assert_eq!(h.wheel.pending(), 0);
    assert!(h.wheel.wheel.occupied.next_set(0).is_none());
}

/// A burst that widens the wheel between two batches of a bucket's fire
/// (the lock is let go between them): the rest of the bucket, in its one
/// old chain, fires with the entries filed into its new chains since.
#[test]
fn a_wheel_widened_between_two_batches_of_a_bucket_fires_all_of_it() {
    let mut h = Harness::new(8);
    let first: Vec<Key> = (0..20).map(|i| h.insert(i, 30)).collect();
    let mut out = Vec::new();
    assert_eq!(h.wheel.advance(3, 30, &mut out, 6), Advance::BatchFull);
    out.drain(..).for_each(Waker::wake);
    let mut fired = h.fired();
    assert_eq!(fired.len(), 6);
    // Past the fresh list's bound, the burst is filed as it registers, and
    // the wheel widens once it holds `WIDEN_AT` entries.
    for i in 0..WIDEN_AT {
        h.insert_fresh(1_000 + i, 30 + TICK * (1 + i as u64 % 4));
    }
    assert_eq!(h.wheel.wheel.chains, CHAINS);
    let late: Vec<Key> = (20..28).map(|i| h.insert_fresh(i, 30)).collect();
    assert!(
        late.iter().any(|k| k.index % CHAINS != 0),
        "a new chain used"
    );
    assert_eq!(h.advance_to(30), Advance::Until(4));
    fired.extend(h.fired());
    fired.sort_unstable();
    assert_eq!(fired, (0..28).collect::<Vec<_>>());
    assert!(first.iter().chain(&late).all(|k| !h.wheel.is_live(*k)));
}

/// Widening moves nothing: entries filed before it stay in the first chain
/// and fire with those filed after it, which spread over the new chains.
#[test]
fn widening_keeps_the_entries_already_filed() {
    let mut h = Harness::new(8);
    let before: Vec<Key> = (0..10).map(|i| h.insert(i, 40)).collect();
    h.wheel.wheel.set_chains(CHAINS);
    let after: Vec<Key> = (10..20).map(|i| h.insert(i, 40)).collect();
    assert!(
        h.wheel.remove(before[9]).is_some(),
        "the first chain's head"
    );
    assert!(h.wheel.remove(after[0]).is_some());
    assert_eq!(h.advance_to(39), Advance::Until(4));
    assert!(h.fired().is_empty());
    assert_eq!(h.advance_to(40), Advance::Idle);
    let mut fired = h.fired();
    fired.sort_unstable();
    let expected: Vec<usize> = (0..20).filter(|&i| i != 9 && i != 10).collect();
    assert_eq!(fired, expected);
    assert!(h.wheel.wheel.occupied.next_set(0).is_none());
}

/// A wheel widens once it holds `WIDEN_AT` entries, whether a burst files
/// them at registration (the fresh list full) or a pass files them (the
/// fresh list never full); a smaller one stays at one chain. A drain at
/// shutdown takes every chain's entries.
#[test]
fn a_wheel_widens_at_its_size_and_a_drain_takes_every_chain() {
    // A burst: the registration that makes `WIDEN_AT` widens, no pass yet.
    let mut h = Harness::new(8);
    for i in 0..WIDEN_AT - 1 {
        h.insert_fresh(i, 30 + (i as u64 % 5) * TICK);
    }
    assert_eq!(h.wheel.fresh, FRESH_MAX);
    assert_eq!(h.wheel.wheel.chains, 1, "below the size");
    h.insert_fresh(WIDEN_AT, 30);
    assert_eq!(h.wheel.wheel.chains, CHAINS, "widened by the registration");
    // Registrations that never fill the fresh list: the pass widens.
    let mut h = Harness::new(8);
    for i in 0..WIDEN_AT {
        if h.wheel.fresh == FRESH_MAX - 1 {
            h.wheel.file_fresh();
        }
        h.insert_fresh(i, 30 + (i as u64 % 5) * TICK);
    }
    assert_eq!(h.wheel.wheel.chains, 1, "unfiled yet");
    h.wheel.file_fresh();
    assert_eq!(h.wheel.wheel.chains, CHAINS, "widened by the pass");
    let mut out = Vec::new();
    assert_eq!(h.wheel.close_and_drain(&mut out), WIDEN_AT);
    assert_eq!(out.len(), WIDEN_AT);
    assert_eq!(h.wheel.pending(), 0);
    assert_eq!(h.wheel.wheel.chains, 1, "emptied: narrowed");
}

/// A widened wheel narrows back to one chain, and its ring to one head a
/// bucket, as soon as it holds no entry, whether its entries fired (and
/// their sleeps freed them) or were cancelled; it widens again at its size.
#[test]
fn a_widened_wheel_narrows_once_it_is_empty() {
    let mut h = Harness::new(8);
    let buckets = 16;
    for round in 0..2 {
        let keys: Vec<Key> = (0..WIDEN_AT)
            .map(|i| h.insert_fresh(i, 10 * TICK * (round + 1) + (i as u64 % 7) * TICK))
            .collect();
        h.wheel.file_fresh();
        assert_eq!(h.wheel.wheel.chains, CHAINS);
        assert_eq!(h.wheel.wheel.ring.len(), buckets * CHAINS as usize);
        if round == 0 {
            let mut now = 0;
            while let Advance::Until(t) = h.advance_to(now) {
                assert_eq!(h.wheel.wheel.chains, CHAINS, "not empty yet");
                now = t * TICK;
            }
            assert_eq!(h.fired().len(), WIDEN_AT);
            assert_eq!(h.wheel.wheel.chains, CHAINS, "fired slots not freed yet");
            for key in keys {
                assert!(h.wheel.remove(key).is_none(), "a fired entry cancelled");
            }
        } else {
            for key in keys {
                assert!(h.wheel.remove(key).is_some());
            }
        }
        assert_eq!(h.wheel.pending(), 0);
        assert_eq!(h.wheel.wheel.chains, 1, "round {round}: narrowed");
        assert_eq!(
            h.wheel.wheel.ring.len(),
            buckets,
            "round {round}: one head a bucket"
        );
    }
}

/// Random registrations, cancels, resets (earlier, later, into the past)
/// and advances in batches of 1-8 wakers, on a wheel of one chain and on a
/// widened one, against a model of what must fire: after each advance,
/// exactly the live entries whose tick has come, each once, none early.
/// Deadlines reach past the ring (8 slots: 16 ticks) into the overflow,
/// so far laps move into a widened ring too; a batch that fills mid-bucket
/// is followed by a cancel of a chain's head, or of whatever entry the
/// model names first. A shutdown drain ends each case.
mod widened_model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        /// A new entry this many nanoseconds after now.
        Insert(u64),
        /// Cancel the n-th entry ever made (if still live).
        Remove(usize),
        /// Move the n-th entry to this many nanoseconds after now (0: now).
        Reset(usize, u64),
        /// Move the clock this many nanoseconds, waking in batches of
        /// `limit`.
        Advance(u64, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let ahead = prop_oneof![1u64..5 * TICK, 1u64..40 * TICK, 1u64..400 * TICK];
        prop_oneof![
            4 => ahead.clone().prop_map(Op::Insert),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), prop_oneof![Just(0u64), ahead]).prop_map(|(n, d)| Op::Reset(n, d)),
            2 => (0u64..6 * TICK, 1usize..9).prop_map(|(d, l)| Op::Advance(d, l)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn a_wheel_fires_what_a_model_says_with_one_chain_or_several(
            widened in any::<bool>(),
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let mut h = Harness::new(8);
            if widened {
                h.wheel.wheel.set_chains(CHAINS);
            }
            let mut now = 0u64;
            // id -> (key, deadline) of the live entries.
            let mut live: BTreeMap<usize, (Key, u64)> = BTreeMap::new();
            let mut made = 0usize;
            for op in ops {
                match op {
                    Op::Insert(d) => {
                        let key = h.insert_fresh(made, now + d);
                        live.insert(made, (key, now + d));
                        made += 1;
                    }
                    Op::Remove(n) => {
                        if let Some((key, _)) = live.remove(&(n % made.max(1))) {
                            prop_assert!(h.wheel.remove(key).is_some());
                        }
                    }
                    Op::Reset(n, d) => {
                        let id = n % made.max(1);
                        if let Some(&(key, _)) = live.get(&id) {
                            match h.wheel.reset(key, now + d, false) {
                                Reset::Elapsed(_) => {
                                    prop_assert!((now + d).div_ceil(TICK) <= now / TICK);
                                    live.remove(&id);
                                }
                                Reset::Stale => prop_assert!(false, "a live entry is stale"),
                                _ => {
                                    live.insert(id, (key, now + d));
                                }
                            }
                        }
                    }
                    Op::Advance(d, limit) => {
                        now += d;
                        let mut out = Vec::new();
                        loop {
                            let r = h.wheel.advance(now / TICK, now, &mut out, limit);
                            out.drain(..).for_each(Waker::wake);
                            if r != Advance::BatchFull {
                                break;
                            }
                            // Mid-bucket: cancel a live entry, the earliest
                            // that heads a ring list (a chain of the bucket
                            // being fired, most often) when the limit is
                            // even, else whichever the model names first.
                            let heads = h.ring_heads();
                            let pick = if limit % 2 == 0 {
                                live.iter()
                                    .filter(|(_, (key, _))| heads.contains(key))
                                    .min_by_key(|(_, (_, at))| *at)
                            } else {
                                live.iter().next()
                            };
                            if let Some((&id, &(key, _))) = pick {
                                if !h.log.lock().unwrap().contains(&id) {
                                    prop_assert!(h.wheel.remove(key).is_some());
                                    live.remove(&id);
                                }
                            }
                        }
                        let mut fired = h.fired();
                        fired.sort_unstable();
                        let due: Vec<usize> = live
                            .iter()
                            .filter(|(_, (_, at))| at.div_ceil(TICK) <= now / TICK)
                            .map(|(&id, _)| id)
                            .collect();
                        prop_assert_eq!(&fired, &due, "at {} ns", now);
                        for id in fired {
                            let (key, _) = live.remove(&id).expect("fired live");
                            // Half the sleeps free their fired slots now,
                            // the rest are left to the drain below.
                            if id % 2 == 0 {
                                prop_assert!(h.wheel.remove(key).is_none(), "a fired entry cancelled");
                            }
                        }
                    }
                }
            }
            prop_assert_eq!(h.wheel.pending(), live.len());
            // Every entry is in some list (the drain below no longer walks
            // the lists, so it would hand back a lost one all the same).
            prop_assert_eq!(h.wheel.wheel.linked_len(), live.len());
            // A shutdown drain hands back every live entry, every chain's.
            let mut out = Vec::new();
            prop_assert_eq!(h.wheel.close_and_drain(&mut out), live.len());
            prop_assert_eq!(out.len(), live.len());
        }
    }
}
