//! loom models of every handoff between a `Sleep` (the future side) and the
//! driver, run with:
//!
//! ```text
//! RUSTFLAGS="--cfg tickwheel_loom" cargo test --release --lib loom
//! ```
//!
//! Each model drives the synchronous core the way the two sides do (a
//! future registers, re-polls, resets or cancels through its `Shard`; the
//! driver runs the `begin_scan` / advance / `end_scan` pass, or the shutdown
//! drain, and wakes outside the lock) and checks, over every interleaving
//! loom explores, that no wake-up is lost or doubled. The driver task's
//! backstop re-arming is written out the same way, and the rules for what
//! each party may run (`requests.rs`) are checked with a stand-in for the
//! driver's work (the `requests` module below).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Wake, Waker};

use loom::sync::atomic::AtomicUsize;

use crate::engine::clock::Clock;
use crate::engine::shard::{Polled, Shard};
use crate::engine::shared::Shared;
use crate::engine::wheel::{Insert, Key, Reset, TimerWheel};

const TICK_NS: u64 = 1_000_000;

/// A waker that counts its wakes in a loom atomic.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter::default());
    (c.clone(), Waker::from(c))
}

fn wakes(c: &Counter) -> usize {
    c.0.load(Ordering::SeqCst)
}

fn shard(max_pending: Option<usize>) -> Arc<Shard> {
    shard_kicked(max_pending).0
}

/// A shard whose driver's kicks are recorded (see [`kick_armed`]).
fn shard_kicked(max_pending: Option<usize>) -> (Arc<Shard>, Arc<loom::sync::atomic::AtomicBool>) {
    let (mut shards, kicked) = shards_kicked(1, max_pending);
    (shards.pop().expect("one shard"), kicked)
}

/// `n` shards of one timer (one shared state, one driver), whose kicks
/// are recorded (see [`kick_armed`]).
fn shards_kicked(
    n: usize,
    max_pending: Option<usize>,
) -> (Vec<Arc<Shard>>, Arc<loom::sync::atomic::AtomicBool>) {
    let shared = Arc::new(Shared::new(
        Clock::new(tokio::time::Instant::now(), TICK_NS),
        crate::engine::clock::TimeSource::System,
        max_pending,
    ));
    let kicked = Arc::new(loom::sync::atomic::AtomicBool::new(false));
    let record = std::panic::AssertUnwindSafe(kicked.clone());
    shared.install_kick(crate::engine::shared::Kick(Box::new(move || {
        record.store(true, Ordering::SeqCst);
    })));
    let shards = (0..n)
        .map(|_| Arc::new(Shard::new(TimerWheel::new(8, TICK_NS), shared.clone())))
        .collect();
    (shards, kicked)
}

/// The tick a kick has the driver arm for, once every party is done
/// (`u64::MAX`: no kick): the target, read as late as the runner of a kick
/// left to the pass lock's holder can read it, after that holder's pass.
fn kick_armed(shard: &Shard, kicked: &loom::sync::atomic::AtomicBool) -> u64 {
    if kicked.load(Ordering::SeqCst) {
        shard.shared.target()
    } else {
        u64::MAX
    }
}

/// One driver pass over `shard` at `now_tick`, as the driver's scan does
/// it: announce the scan, fire what is due, wake outside the lock, publish
/// the next tick. Returns the tick the driver then arms for.
fn driver_pass(shard: &Shard, now_tick: u64) -> Option<u64> {
    driver_scan(&[shard], now_tick)
}

/// One driver scan over `shards` (of one timer) at `now_tick`, as
/// `Driver::scan` does it: `begin_scan`, then for each shard in turn skip
/// it unlocked if its `due` (read now) is later than `now_tick`, else
/// advance it (firing what is due, waking outside the lock); then
/// `end_scan` with the earliest next tick. Returns the target `end_scan`
/// leaves (that tick, or a racing registration's), which the pass arms
/// for.
fn driver_scan(shards: &[&Shard], now_tick: u64) -> Option<u64> {
    let shared = &shards[0].shared;
    shared.begin_scan();
    let mut next: Option<u64> = None;
    for shard in shards {
        // A shard with nothing due by `now_tick` is skipped unlocked, as
        // the driver's scan does.
        let due = shard.due();
        let next_here = if due > now_tick {
            (due != u64::MAX).then_some(due)
        } else {
            let mut out = Vec::new();
            let panics = std::sync::atomic::AtomicU64::new(0);
            let next = shard
                .advance(now_tick, now_tick * TICK_NS, &mut out, &panics)
                .1;
            (next != u64::MAX).then_some(next)
        };
        if let Some(tick) = next_here {
            next = Some(next.map_or(tick, |n| n.min(tick)));
        }
    }
    Some(shared.end_scan(next.unwrap_or(u64::MAX))).filter(|&tick| tick != u64::MAX)
}

fn register(shard: &Shard, tick: u64, waker: &Waker) -> Key {
    match shard.register(tick * TICK_NS, waker) {
        Insert::Registered { key, .. } => key,
        other => panic!("registration refused: {other:?}"),
    }
}

/// An entry registered for `tick` before a model's threads start, so a
/// pass at that tick locks and advances the shard; its counter says how
/// often it was woken.
fn due_at(shard: &Shard, tick: u64) -> Arc<Counter> {
    let (count, waker) = counter();
    register(shard, tick, &waker);
    count
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A registration racing the driver's scan is never lost: the driver arms
/// for its tick or earlier, after the scan (the target it leaves) or by a
/// kick (the target the kick reads).
#[test]
fn loom_register_racing_the_scan_is_never_missed() {
    register_racing_the_scan(100);
}

/// The same, with the driver's previous target earlier than the new tick:
/// only `begin_scan` resetting the target makes a registration during the
/// scan notify.
#[test]
fn loom_register_racing_the_scan_behind_an_earlier_target() {
    register_racing_the_scan(3);
}

fn register_racing_the_scan(previous_target: u64) {
    model(move || {
        let (shard, kicked) = shard_kicked(None);
        // The driver published a target on its last pass.
        shard.shared.end_scan(previous_target);
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let (_, waker) = counter();
            register(&s2, 5, &waker);
        });
        let seen = driver_pass(&shard, 0);
        registrant.join().unwrap();
        let kicked = kick_armed(&shard, &kicked);
        assert!(
            seen.is_some_and(|armed| armed <= 5) || kicked <= 5,
            "lost registration: the scan armed for {seen:?}, a kick for {kicked}"
        );
    });
}

/// Dropping a sleep while the driver fires it: the task is woken at most
/// once, exactly when the cancel came too late, and the slot is freed.
#[test]
fn loom_cancel_racing_firing_wakes_at_most_once() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 1, &waker);
        drop(waker);
        let s2 = shard.clone();
        let canceller = loom::thread::spawn(move || s2.cancel(key).is_some());
        driver_pass(&shard, 1);
        let cancelled = canceller.join().unwrap();
        assert_eq!(wakes(&count), usize::from(!cancelled));
        assert_eq!(shard.pending(), 0);
        // A cancel after the fire frees the slot the fire left to it.
        assert_eq!(shard.slots_in_use(), 0, "the slot leaked");
    });
}

/// A reset racing the firing either moves a still-pending entry (no wake)
/// or finds it fired (one wake): never both, never neither. The later
/// deadline is recorded in place, so when the reset comes first the pass at
/// tick 1 moves the entry instead of firing it. (An advance at tick 0 files
/// the entry first: an unfiled one is filed at its new tick instead, the
/// fresh models' case.)
#[test]
fn loom_reset_racing_firing_moves_or_finds_it_fired() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 1, &waker);
        drop(waker);
        let panics = std::sync::atomic::AtomicU64::new(0);
        shard.advance(0, 0, &mut Vec::new(), &panics);
        let s2 = shard.clone();
        let resetter = loom::thread::spawn(move || s2.reset(key, 10 * TICK_NS, false));
        driver_pass(&shard, 1);
        match resetter.join().unwrap() {
            Reset::InPlace => {
                // In place: its list still comes due at tick 1.
                assert_eq!(wakes(&count), 0);
                assert!(shard.is_live(key));
                assert_eq!(shard.slots_in_use(), 1);
            }
            Reset::Stale => {
                assert_eq!(wakes(&count), 1);
                assert!(!shard.is_live(key));
                // The sleep registers again: the fired slot was freed.
                assert_eq!(shard.slots_in_use(), 0, "the slot leaked");
            }
            Reset::Moved { tick } => panic!("a later deadline moved to tick {tick}, not in place"),
            Reset::Elapsed(_) => panic!("tick 10 is not due at tick 1"),
        }
    });
}

/// The lean registration path (an entry waits unfiled in the shard's
/// fresh list until a pass files it): a registration racing the pass that
/// files it fires exactly once, at its tick, whichever came first. An
/// entry due at tick 1 makes the pass at tick 1 lock the shard and file its
/// fresh list (without it the scan skips the shard, and only one order is
/// ever explored); the registrant's reads of the wheel's processed tick
/// (`Shard::has_fired`, under the lock) tell which order each execution took, and the model checks both were explored.
/// With the pass reading the fresh list under one hold of the lock and
/// filing it under another, the older version (no entry at tick 1) still
/// passed; this one fails ("the pass at tick 2 did not fire it").
#[test]
fn loom_fresh_registration_racing_the_pass_that_files_it_fires_once() {
    static ORDERS: Orders = Orders::new();
    model(|| {
        let shard = shard(None);
        let first = due_at(&shard, 1);
        let (count, waker) = counter();
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let after_the_pass = s2.has_fired(1);
            let key = register(&s2, 2, &waker);
            // Tick 1 not yet processed once it is in: the pass's lock
            // came later, and filed it.
            ORDERS.saw(after_the_pass, !s2.has_fired(1));
            key
        });
        // Tick 1 is due: the pass advances the shard, filing the new entry
        // if it came first; a pass at tick 2 fires it either way.
        driver_pass(&shard, 1);
        let key = registrant.join().unwrap();
        assert_eq!(wakes(&first), 1, "tick 1 fired");
        assert_eq!(wakes(&count), 0, "nothing fires before its tick");
        driver_pass(&shard, 2);
        assert_eq!(wakes(&count), 1, "the pass at tick 2 did not fire it");
        assert!(!shard.is_live(key));
        assert_eq!(shard.pending(), 0);
    });
    ORDERS.check_both();
}

/// Which of a race's two orders a model's executions took (each execution
/// is told only when its reads prove the order), kept across executions:
/// a model named for a race checks it explored both.
#[derive(Debug)]
struct Orders {
    pass_first: std::sync::atomic::AtomicBool,
    step_first: std::sync::atomic::AtomicBool,
}

impl Orders {
    const fn new() -> Self {
        Orders {
            pass_first: std::sync::atomic::AtomicBool::new(false),
            step_first: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `pass_first`: the pass had processed the shard before the other
    /// thread's step; `step_first`: the step was done before the pass
    /// processed the shard.
    fn saw(&self, pass_first: bool, step_first: bool) {
        if pass_first {
            self.pass_first.store(true, Ordering::SeqCst);
        }
        if step_first {
            self.step_first.store(true, Ordering::SeqCst);
        }
    }

    fn check_both(&self) {
        assert!(
            self.pass_first.load(Ordering::SeqCst) && self.step_first.load(Ordering::SeqCst),
            "the race was not explored both ways: {self:?}"
        );
    }
}

/// A registration racing a pass that advances its shard (its `due`, tick
/// 1, is due, so the scan locks the shard, fires the entry at tick 1 and
/// files the new one if it came first), then the pass at the new entry's
/// tick: the driver is told of tick 2 (the scan's next tick or a kick),
/// and that pass fires it, once. Both threads load the shard's `due`
/// before they store it (the scan's unlocked read and the advance's store;
/// the registration's `lower_due`), and the older models check only the
/// target the scan leaves, never the pass after it: with the advance's
/// store of `due` moved out of the shard's lock, where it can overwrite a
/// racing registration's lowered `due` (or its check can miss it), every
/// one of them still passes, while this one fails ("the pass at tick 2
/// skipped the shard").
#[test]
fn loom_register_racing_an_advance_fires_at_its_tick() {
    model(|| {
        let (shard, kicked) = shard_kicked(None);
        let first = due_at(&shard, 1);
        kicked.store(false, Ordering::SeqCst); // the first registration's kick
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let (count, waker) = counter();
            let key = register(&s2, 2, &waker);
            (count, key)
        });
        let seen = driver_pass(&shard, 1);
        let (count, key) = registrant.join().unwrap();
        assert_eq!(wakes(&first), 1, "tick 1 fired");
        assert_eq!(wakes(&count), 0, "nothing fires before its tick");
        let told = seen.unwrap_or(u64::MAX).min(kick_armed(&shard, &kicked));
        assert!(told <= 2, "the driver was told {told}, not tick 2");
        driver_pass(&shard, 2);
        assert_eq!(wakes(&count), 1, "the pass at tick 2 skipped the shard");
        assert!(!shard.is_live(key));
        assert_eq!(shard.pending(), 0);
        assert_eq!(shard.due(), u64::MAX, "nothing is left to wait for");
    });
}

/// Two registrations on one shard (tick 7 and tick 6, its `due` at tick 9)
/// at once: each loads `due` before it lowers it, so the shard's lock must
/// cover both steps, or the later store can raise `due` above the earlier
/// entry (to 7 over 6) and a pass at tick 6 skips the shard. The other
/// models race registrations on different shards only, so none fails with
/// `lower_due` moved out of the lock; this one does ("the shard's due is
/// not its earliest entry"), with the registrations in either order.
#[test]
fn loom_two_registrations_on_one_shard_keep_the_earliest_due() {
    model(|| {
        let shard = shard(None);
        let (_, later) = counter();
        register(&shard, 9, &later);
        let registrants: Vec<_> = [7, 6]
            .into_iter()
            .map(|tick| {
                let shard = shard.clone();
                loom::thread::spawn(move || {
                    let (count, waker) = counter();
                    register(&shard, tick, &waker);
                    count
                })
            })
            .collect();
        let counts: Vec<_> = registrants
            .into_iter()
            .map(|registrant| registrant.join().unwrap())
            .collect();
        assert_eq!(shard.due(), 6, "the shard's due is not its earliest entry");
        assert_eq!(driver_pass(&shard, 6), Some(7));
        assert_eq!(wakes(&counts[1]), 1, "the pass at tick 6 skipped the shard");
        assert_eq!(wakes(&counts[0]), 0);
    });
}

/// A cancel racing the pass that files its entry: whichever comes first,
/// the cancel finds it pending (nothing fired yet), its slot is freed, and
/// no later pass wakes anyone or waits for it. An entry due at tick 1 makes
/// the pass at tick 1 lock the shard and file the tick-5 entry into its
/// bucket (without it the scan skips the shard: one execution, always a
/// cancel from the fresh list); the canceller's reads of the wheel's
/// processed tick tell which order each execution took, and the model checks both were
/// explored. With a cancel that frees a filed entry without unlinking it
/// from its bucket, the older version still passed; this one fails (the
/// pass at tick 5 walks into the freed slot: "slot 1 is linked while
/// vacant").
#[test]
fn loom_fresh_cancel_racing_the_pass_that_files_it_frees_it() {
    static ORDERS: Orders = Orders::new();
    model(|| {
        let shard = shard(None);
        let first = due_at(&shard, 1);
        let (count, waker) = counter();
        let key = register(&shard, 5, &waker);
        drop(waker);
        let s2 = shard.clone();
        let canceller = loom::thread::spawn(move || {
            let filed = s2.has_fired(1);
            let cancelled = s2.cancel(key).is_some();
            // Tick 1 processed before the cancel: the pass had filed it;
            // not yet processed after it: it was cancelled unfiled.
            ORDERS.saw(filed, !s2.has_fired(1));
            cancelled
        });
        // Tick 1 is due: the pass advances the shard and files the tick-5
        // entry, unless the cancel came first.
        driver_pass(&shard, 1);
        assert!(canceller.join().unwrap(), "it was pending");
        assert_eq!(wakes(&first), 1, "tick 1 fired");
        assert_eq!(shard.pending(), 0);
        assert_eq!(driver_pass(&shard, 5), None, "nothing left to wait for");
        assert_eq!(wakes(&count), 0);
    });
    ORDERS.check_both();
}

/// A reset to an earlier tick of an unfiled entry racing the pass that
/// fires that tick: the sleep completes exactly once, by the pass (the
/// reset came first and moved it), by the reset (it came after the pass
/// processed the tick and hands back the waker), or, when the scan skipped
/// the shard before the reset lowered its `due`, by the next pass, which
/// the reset told the driver to make.
#[test]
fn loom_fresh_reset_earlier_racing_the_fire_completes_once() {
    model(|| {
        let (shard, kicked) = shard_kicked(None);
        let (count, waker) = counter();
        let key = register(&shard, 3, &waker);
        drop(waker);
        kicked.store(false, Ordering::SeqCst); // the registration's own kick
        let s2 = shard.clone();
        let resetter = loom::thread::spawn(move || match s2.reset(key, TICK_NS, false) {
            Reset::Moved { tick } => {
                assert_eq!(tick, 1);
                false
            }
            Reset::Elapsed(waker) => {
                waker.wake();
                true
            }
            other => panic!("an earlier deadline: {other:?}"),
        });
        let armed = driver_pass(&shard, 1).unwrap_or(u64::MAX);
        let completed_by_reset = resetter.join().unwrap();
        if wakes(&count) == 0 {
            let told = armed.min(kick_armed(&shard, &kicked));
            assert!(
                told <= 1,
                "moved to tick 1 behind the scan, driver told {told}"
            );
            driver_pass(&shard, 1);
        }
        assert_eq!(wakes(&count), 1, "completed exactly once");
        assert!(!shard.is_live(key));
        if !completed_by_reset {
            assert!(shard.has_fired(1), "the pass fired it at tick 1");
        }
        assert_eq!(shard.pending(), 0);
    });
}

/// A `Sleep`'s drop (a cancel, which finds a fired key gone) racing the
/// pass that files and fires it: the task is woken exactly when the drop
/// did not cancel it, and the slot is freed.
#[test]
fn loom_fresh_drop_racing_the_fire_wakes_or_cancels() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 1, &waker);
        drop(waker);
        let s2 = shard.clone();
        let dropper = loom::thread::spawn(move || s2.cancel(key).is_some());
        driver_pass(&shard, 1);
        let cancelled = dropper.join().unwrap();
        assert_eq!(wakes(&count), usize::from(!cancelled));
        assert_eq!(shard.pending(), 0);
        assert_eq!(shard.slots_in_use(), 0, "the slot leaked");
    });
}

/// A re-poll with a new waker racing the firing: exactly one of the two
/// wakers is woken, and it is the new one whenever the update came first.
#[test]
fn loom_waker_change_racing_firing_wakes_the_latest() {
    model(|| {
        let shard = shard(None);
        let (old, old_waker) = counter();
        let key = register(&shard, 1, &old_waker);
        drop(old_waker);
        let (new, new_waker) = counter();
        let s2 = shard.clone();
        let poller = loom::thread::spawn(move || {
            let no_reset = || unreachable!("no reset: the poll reads no clock");
            s2.poll_registered(key, &new_waker, no_reset) == Polled::Pending
        });
        driver_pass(&shard, 1);
        let updated = poller.join().unwrap();
        assert_eq!(
            wakes(&old) + wakes(&new),
            1,
            "a due timer wakes exactly once"
        );
        if updated {
            assert_eq!(wakes(&new), 1, "the update came first: the new waker fires");
        } else {
            assert_eq!(wakes(&old), 1, "already fired: the old waker fired");
        }
        // A poll that found it fired freed its slot; after an update, the
        // slot waits for the sleep's next call.
        assert_eq!(shard.slots_in_use(), usize::from(updated));
        if updated {
            let no_reset = || unreachable!("no reset: the poll reads no clock");
            let (_, waker) = counter();
            assert_eq!(shard.poll_registered(key, &waker, no_reset), Polled::Fired);
            assert_eq!(shard.slots_in_use(), 0, "the slot leaked");
        }
    });
}

/// A reset that reads no clock, to a deadline that has passed, racing the
/// firing: the poll after it is never `Pending` (the reset completes it, the
/// driver fires it, or the poll finds the deadline passed), and the entry is
/// gone either way.
#[test]
fn loom_unchecked_reset_to_a_passed_deadline_then_poll_completes() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 5, &waker);
        let s2 = shard.clone();
        let sleeper = loom::thread::spawn(move || {
            match s2.reset(key, 2 * TICK_NS, true) {
                Reset::Elapsed(waker) => {
                    waker.wake();
                    true
                }
                Reset::Stale => true,
                // The poll that follows reads the clock: tick 3 has begun.
                Reset::Moved { .. } | Reset::InPlace => {
                    s2.poll_registered(key, &waker, || true) != Polled::Pending
                }
            }
        });
        driver_pass(&shard, 3);
        assert!(
            sleeper.join().unwrap(),
            "a passed deadline left the sleep pending"
        );
        assert_eq!(shard.pending(), 0);
        assert!(wakes(&count) <= 1);
    });
}

/// Shutdown racing a registration: the registration is refused, or it is
/// drained and woken; it is never left registered.
#[test]
fn loom_shutdown_racing_registration_leaves_nothing_behind() {
    model(|| {
        let shard = shard(None);
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let (count, waker) = counter();
            let outcome = s2.register(5 * TICK_NS, &waker);
            (count, matches!(outcome, Insert::Registered { .. }))
        });
        // What `Inner::shut_down` does for each shard.
        shard.shared.set_shutdown();
        let mut out = Vec::new();
        let panics = std::sync::atomic::AtomicU64::new(0);
        shard.close_and_drain(&mut out, &panics);
        let (count, registered) = registrant.join().unwrap();
        assert_eq!(wakes(&count), usize::from(registered));
        assert_eq!(shard.pending(), 0, "an entry survived shutdown");
    });
}

/// Concurrent reservations never exceed `max_pending`, and releases give
/// every unit back.
#[test]
fn loom_capacity_is_never_exceeded_or_leaked() {
    model(|| {
        let shard = shard(Some(1));
        let s2 = shard.clone();
        let other = loom::thread::spawn(move || {
            let got = s2.shared.try_reserve().is_ok();
            if got {
                s2.shared.release();
            }
            got
        });
        let mine = shard.shared.try_reserve().is_ok();
        let live_while_held = shard.shared.live().unwrap();
        assert!(live_while_held <= 1, "over the limit: {live_while_held}");
        if mine {
            shard.shared.release();
        }
        let theirs = other.join().unwrap();
        assert!(mine || theirs, "a limit of 1 refused both");
        assert_eq!(shard.shared.live(), Some(0), "a unit leaked");
    });
}

/// Two parties ring the driver task's notice (a shutdown, a registration
/// earlier than the backstop) while the task looks at it: the task either
/// sees each reason or is woken to look again, and then sees it; once seen,
/// it is not seen again.
#[test]
fn loom_a_notice_is_never_lost() {
    use crate::engine::notice::{Notice, Reasons};

    model(|| {
        let notice = Arc::new(Notice::default());
        let (count, waker) = counter();
        let ringers: Vec<_> = [Reasons::PASS, Reasons::BACKSTOP]
            .into_iter()
            .map(|why| {
                let notice = notice.clone();
                loom::thread::spawn(move || notice.ring(why))
            })
            .collect();
        let mut cx = std::task::Context::from_waker(&waker);
        let mut seen = Vec::new();
        if let std::task::Poll::Ready(why) = notice.poll_rung(&mut cx) {
            seen.push(why);
        }
        for ringer in ringers {
            ringer.join().unwrap();
        }
        let woken = wakes(&count) > 0;
        if let std::task::Poll::Ready(why) = notice.poll_rung(&mut cx) {
            assert!(
                woken || !seen.is_empty(),
                "rung after the task waited, not woken"
            );
            seen.push(why);
        }
        for why in [Reasons::PASS, Reasons::BACKSTOP] {
            assert!(
                seen.iter().any(|s| s.contains(why)),
                "{why:?} lost: {seen:?}"
            );
        }
        assert!(
            notice.poll_rung(&mut cx).is_pending(),
            "each ring seen once"
        );
    });
}

/// Two threads each make something happen, then ask for a pass (as the
/// hook and a registration do); the passes may run on either thread, and
/// one thread's request may come while the other runs its pass. Whatever
/// the interleaving, a pass starts after both events: none is left for a
/// pass that never comes.
#[test]
fn loom_a_requested_pass_is_never_lost() {
    use crate::engine::pass_lock::PassLock;

    loom::model(|| {
        // What the latest pass saw.
        let lock = Arc::new(PassLock::new(0usize));
        let events = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (lock, events) = (lock.clone(), events.clone());
                loom::thread::spawn(move || {
                    events.fetch_add(1, Ordering::SeqCst);
                    lock.request(|seen| {
                        *seen = events.load(Ordering::SeqCst);
                    });
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(*lock.lock(), 2, "a pass was asked for and never ran");
    });
}

/// Three parties: one thread runs passes while two others raise requests,
/// each request carrying data of its own (a flag the pass reads with a
/// plain acquire load, as a pass reads what a request asks for). A request
/// raised just after the runner's final compare-and-swap failed must still
/// reach a later pass with its data visible: the runner's next step reads
/// the request word with a read-modify-write, so it synchronises with every
/// request raised before it (a plain store there lost one).
#[test]
fn loom_three_parties_never_lose_a_request_or_its_data() {
    use loom::sync::atomic::AtomicBool;

    use crate::engine::pass_lock::PassLock;

    model(|| {
        // What each party asked for, and what the passes saw of it.
        let wanted: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
        let lock = Arc::new(PassLock::new([false; 3]));
        let pass = |wanted: &[AtomicBool; 3], seen: &mut [bool; 3]| {
            for (seen, wanted) in seen.iter_mut().zip(wanted) {
                *seen |= wanted.load(Ordering::Acquire);
            }
        };
        let requesters: Vec<_> = (1..3)
            .map(|party| {
                let (lock, wanted) = (lock.clone(), wanted.clone());
                loom::thread::spawn(move || {
                    wanted[party].store(true, Ordering::Release);
                    lock.request(|seen| pass(&wanted, seen));
                })
            })
            .collect();
        wanted[0].store(true, Ordering::Release);
        lock.request(|seen| pass(&wanted, seen));
        for requester in requesters {
            requester.join().unwrap();
        }
        let seen = *lock.lock();
        assert_eq!(seen, [true; 3], "a request was raised and no pass saw it");
    });
}

/// A pass that asks for another pass from inside itself (a waker woken by
/// the pass registers an earlier sleep) neither deadlocks nor loses the
/// request: the same thread runs it before letting the lock go, while
/// another thread's request races both.
#[test]
fn loom_a_pass_requested_from_inside_a_pass_runs_after_it() {
    use crate::engine::pass_lock::PassLock;

    type Passes = PassLock<(usize, Option<usize>)>;

    /// Counts itself; the first pass asks for another from inside.
    fn pass(lock: &Passes, state: &mut (usize, Option<usize>)) {
        let (passes, asked_at) = state;
        *passes += 1;
        if asked_at.is_none() {
            *asked_at = Some(*passes);
            lock.request(|_| unreachable!("the lock is held: the request is left"));
        }
    }

    loom::model(|| {
        // (passes run, the pass that asked from inside)
        let lock = Arc::new(PassLock::new((0usize, None)));
        let other = {
            let lock = lock.clone();
            loom::thread::spawn(move || lock.request(|state| pass(&lock, state)))
        };
        lock.request(|state| pass(&lock, state));
        other.join().unwrap();
        let (passes, asked_at) = *lock.lock();
        assert!(
            passes > asked_at.expect("a pass ran"),
            "the request from inside the pass was lost"
        );
    });
}

/// A registration due now racing a scan at a tick above 0 that skips its
/// shard unlocked (its `due`, tick 9, is later than the scan's tick 5),
/// with the driver's target already at tick 5 (lowered by a registration
/// on another shard, which is why the driver scans at 5): the registration
/// reads a target that is not later than its tick, so it does not kick,
/// and only the two fences (`lower_due`, `begin_scan`) make the scan see
/// its lowered `due`. It is fired by that scan, or in its next tick, or it
/// kicked. The older models race a scan at tick 0 only, where nothing the
/// registration adds is due.
#[test]
fn loom_register_due_now_racing_an_idle_skip_above_tick_0() {
    register_racing_an_idle_skip(5);
}

/// The same with the registration one tick after the scan's (tick 6): not
/// due, so the scan that sees it does not fire it but must publish it as
/// its next tick.
#[test]
fn loom_register_racing_an_idle_skip_above_tick_0() {
    register_racing_an_idle_skip(6);
}

fn register_racing_an_idle_skip(tick: u64) {
    model(move || {
        let (shard, kicked) = shard_kicked(None);
        // The wheel has processed tick 4 (firing tick 3); tick 9 is next.
        let (_, early) = counter();
        let (_, later) = counter();
        register(&shard, 3, &early);
        register(&shard, 9, &later);
        assert_eq!(driver_pass(&shard, 4), Some(9));
        assert_eq!(shard.due(), 9);
        // A registration for tick 5 on another shard lowered the target
        // and kicked: the driver scans at tick 5.
        shard.shared.registered(5);
        kicked.store(false, Ordering::SeqCst);
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let (count, waker) = counter();
            register(&s2, tick, &waker);
            count
        });
        let seen = driver_pass(&shard, 5);
        let count = registrant.join().unwrap();
        let fired = wakes(&count) == 1;
        let kicked = kick_armed(&shard, &kicked);
        assert!(
            fired || seen.is_some_and(|armed| armed <= tick) || kicked <= tick,
            "lost registration for tick {tick}: fired {fired}, the scan armed for {seen:?}, \
             a kick for {kicked}"
        );
        if tick <= 5 && !fired {
            assert!(
                kicked <= tick,
                "a due registration neither fired nor kicked"
            );
        }
    });
}

/// A scan over two shards (as `Driver::scan`: one `begin_scan`, each shard
/// skipped unlocked or advanced, one `end_scan` with the earliest next
/// tick) racing a registration on each shard from its own thread: one due
/// now on the shard the scan would skip (its `due` is 9), one on the shard
/// it advances (firing its entry at tick 5). The target the scan publishes
/// is the minimum over both shards, so one shard's registration can be
/// covered by the other's next tick; none is lost: each is fired, or at or
/// after the tick the scan leaves to arm for, or a kick's.
#[test]
fn loom_two_shards_racing_registrations_are_never_missed() {
    model(|| {
        let (shards, kicked) = shards_kicked(2, None);
        let (idle, busy) = (shards[0].clone(), shards[1].clone());
        let (_, later) = counter();
        let (_, now) = counter();
        register(&idle, 9, &later);
        register(&busy, 5, &now);
        assert_eq!(idle.shared.target(), 5);
        kicked.store(false, Ordering::SeqCst);
        let registrants: Vec<_> = [(idle.clone(), 5), (busy.clone(), 6)]
            .into_iter()
            .map(|(shard, tick)| {
                loom::thread::spawn(move || {
                    let (count, waker) = counter();
                    register(&shard, tick, &waker);
                    (tick, count)
                })
            })
            .collect();
        let seen = driver_scan(&[&idle, &busy], 5);
        let registered: Vec<_> = registrants
            .into_iter()
            .map(|registrant| registrant.join().unwrap())
            .collect();
        let kicked = kick_armed(&idle, &kicked);
        for (tick, count) in registered {
            let fired = wakes(&count) == 1;
            assert!(
                fired || seen.is_some_and(|armed| armed <= tick) || kicked <= tick,
                "lost registration for tick {tick}: fired {fired}, the scan armed for {seen:?}, \
                 a kick for {kicked}"
            );
        }
    });
}

/// The backstop handshake (`shared.rs`): the driver task re-arming its
/// backstop, as `drive()` does (read the earliest `due`, `set_backstop`,
/// read again, again if it dropped), racing a registration that lowers its
/// shard's `due` (with a fence) and then reads `backstop`. The backstop
/// still covers tick 3, an entry since fired; the wheel's next is tick 9,
/// and the registration is for tick 5. If the registration reads the old
/// backstop (3, not later than 5) it rings nothing, so the task must see
/// its `due`; if it reads the new one (9), it must ring. Either way the
/// backstop ends at or before tick 5, or the task is told to move it:
/// without that, a sleep whose hook never came would wait for the backstop
/// of tick 9.
#[test]
fn loom_the_backstop_covers_a_racing_registration_or_is_told() {
    use crate::engine::notice::Reasons;

    model(|| {
        let (shard, _) = shard_kicked(None);
        let (_, later) = counter();
        register(&shard, 9, &later);
        shard.shared.set_backstop(3);
        let _ = shard.shared.notice().take();
        let s2 = shard.clone();
        let registrant = loom::thread::spawn(move || {
            let (_, waker) = counter();
            register(&s2, 5, &waker);
        });
        // The task: the earliest `due` over the shards, as
        // `Inner::earliest_due` (one shard here).
        let covered = loop {
            let due = shard.due();
            shard.shared.set_backstop(due);
            if shard.due() >= due {
                break due;
            }
        };
        registrant.join().unwrap();
        let backstop = shard.shared.backstop();
        assert_eq!(backstop, covered);
        let told = shard
            .shared
            .notice()
            .take()
            .is_some_and(|why| why.contains(Reasons::BACKSTOP));
        assert!(
            backstop <= 5 || told,
            "the backstop covers tick {backstop}, past the registration's 5, and the task \
             was not told"
        );
    });
}

// The request rules (`requests.rs`), with a stand-in for the driver's work.

mod requests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use loom::sync::atomic::AtomicBool;

    use crate::engine::requests::{Answer, Outcome, Party, Requests, Stop, Work};

    use super::model;

    /// What the stand-in work ran, behind the pass lock.
    #[derive(Debug, Default)]
    struct Ran {
        /// Each pass: who ran it, and whose requests it saw raised as it
        /// began (`Wanted`, by `index`).
        passes: Vec<(Party, [bool; 3])>,
        /// Each arm (not due): who ran it, for which tick.
        arms: Vec<(Party, u64)>,
        /// Each time a party that may not scan kept the hook armed for a
        /// due scan: who, and whose requests it saw raised then.
        hooks_kept: Vec<(Party, [bool; 3])>,
        /// Alarm retirements run.
        retired: usize,
        /// A pass returned `Outcome::Stop`.
        stopped: bool,
    }

    /// Each party's request data: set before it asks (a release store),
    /// read by a pass as it begins (acquire loads), as a pass reads what
    /// the party wrote before it asked. With no `SeqCst` in sight, a pass
    /// sees a request's data only if the request happens before it: loom
    /// checks that the request rules give that, not just an order.
    type Wanted = [AtomicBool; 3];

    fn index(party: Party) -> usize {
        match party {
            Party::Hook => 0,
            Party::Registration => 1,
            Party::Task => 2,
        }
    }

    /// The stand-in work, as run on `party`'s thread.
    struct StandIn<'a> {
        party: Party,
        wanted: &'a Wanted,
        /// Ticks at or before this are due: arming for one is a pass (or,
        /// for a registration, `keep_hook`), as `Driver::arm` does
        /// when the alarm answers `Due`.
        now_tick: u64,
        /// What each pass returns.
        pass_outcome: Outcome,
        /// Whether tokio takes the alarm armed for the next millisecond
        /// (it does, unless its processed mark runs ahead of the clock).
        hook_takes: bool,
    }

    impl Work<Ran> for StandIn<'_> {
        fn pass(&self, ran: &mut Ran, _wake_up: bool) -> Outcome {
            assert_ne!(self.party, Party::Registration, "a registration ran a pass");
            assert_eq!(ran.retired, 0, "a pass ran after the alarm retired");
            assert!(!ran.stopped, "a pass ran after a pass stopped the task");
            let seen = [0, 1, 2].map(|i| self.wanted[i].load(Ordering::Acquire));
            ran.passes.push((self.party, seen));
            ran.stopped = matches!(self.pass_outcome, Outcome::Stop(_));
            self.pass_outcome
        }

        fn arm(&self, ran: &mut Ran, party: Party) -> Outcome {
            assert_eq!(party, self.party, "an arm run for another party");
            // The target a registration lowered before it asked.
            let tick = 5;
            assert_eq!(ran.retired, 0, "an arm ran after the alarm retired");
            assert!(!ran.stopped, "an arm ran after a pass stopped the task");
            if tick > self.now_tick {
                ran.arms.push((party, tick));
                Outcome::Armed
            } else if party.may_scan() {
                self.pass(ran, true)
            } else {
                self.keep_hook(ran)
            }
        }

        fn keep_hook(&self, ran: &mut Ran) -> Outcome {
            assert!(!self.party.may_scan(), "a scanning party kept the hook");
            assert_eq!(ran.retired, 0, "the hook was armed after the alarm retired");
            if !self.hook_takes {
                return Outcome::LeftToTask;
            }
            let seen = [0, 1, 2].map(|i| self.wanted[i].load(Ordering::Acquire));
            ran.hooks_kept.push((self.party, seen));
            Outcome::LeftToHook
        }

        fn retire(&self, ran: &mut Ran) {
            ran.retired += 1;
        }
    }

    type Shared = (Arc<Requests<Ran>>, Arc<Wanted>);

    fn requests() -> Shared {
        (
            Arc::new(Requests::new(Ran::default())),
            Arc::new(Default::default()),
        )
    }

    /// On a thread of its own, `party` raises its data and makes its
    /// request (`ask`), with work that is due at `now_tick`, whose passes
    /// return `pass_outcome` and whose hook arms tokio takes; returns
    /// whether the answer said to tell the task, and the `Stop` it read
    /// right after.
    fn spawn_party(
        (requests, wanted): &Shared,
        party: Party,
        now_tick: u64,
        pass_outcome: Outcome,
        ask: impl FnOnce(&Requests<Ran>, &StandIn<'_>) -> Answer + Send + 'static,
    ) -> loom::thread::JoinHandle<(bool, Stop)> {
        spawn_party_with(requests, wanted, party, now_tick, pass_outcome, true, ask)
    }

    fn spawn_party_with(
        requests: &Arc<Requests<Ran>>,
        wanted: &Arc<Wanted>,
        party: Party,
        now_tick: u64,
        pass_outcome: Outcome,
        hook_takes: bool,
        ask: impl FnOnce(&Requests<Ran>, &StandIn<'_>) -> Answer + Send + 'static,
    ) -> loom::thread::JoinHandle<(bool, Stop)> {
        let (requests, wanted) = (requests.clone(), wanted.clone());
        loom::thread::spawn(move || {
            let work = StandIn {
                party,
                wanted: &wanted,
                now_tick,
                pass_outcome,
                hook_takes,
            };
            wanted[index(party)].store(true, Ordering::Release);
            let told = ask(&requests, &work).tell(party);
            (told, requests.stopped())
        })
    }

    fn work(wanted: &Wanted, party: Party, now_tick: u64, pass_outcome: Outcome) -> StandIn<'_> {
        StandIn {
            party,
            wanted,
            now_tick,
            pass_outcome,
            hook_takes: true,
        }
    }

    /// Whether a pass began after `party` raised its request (it saw the
    /// request's data).
    fn scanned_for(ran: &Ran, party: Party) -> bool {
        ran.passes.iter().any(|(_, seen)| seen[index(party)])
    }

    /// Whether the hook was kept armed, with the scan raised, after `party`
    /// raised its request: the hook's pass at tokio's next timer processing
    /// serves it.
    fn hook_kept_for(ran: &Ran, party: Party) -> bool {
        ran.hooks_kept.iter().any(|(_, seen)| seen[index(party)])
    }

    /// The three parties at once: the hook asks for a pass, a registration
    /// for an arm at tick 5 (not due), the task for a pass. Over every
    /// interleaving: a registration runs no pass (the stand-in asserts it:
    /// a user's poll never scans); each scan request is served by a pass
    /// that began after it was raised, or is left raised with the hook kept
    /// armed after it (a registration found it raised) or the task told
    /// (the answer says so: the caller rings the task); the arm is served
    /// by an arm for tick 5 or earlier, or by a pass that began after it;
    /// and the task is never told by its own request.
    #[test]
    fn loom_requests_a_registration_never_scans_and_no_request_is_lost() {
        model(|| {
            let shared = requests();
            let hook = spawn_party(&shared, Party::Hook, 0, Outcome::Armed, |r, w| {
                r.pass(Party::Hook, w, true)
            });
            let registration =
                spawn_party(&shared, Party::Registration, 0, Outcome::Armed, |r, w| {
                    r.arm(w)
                });
            let (requests, wanted) = &shared;
            wanted[index(Party::Task)].store(true, Ordering::Release);
            let task = work(wanted, Party::Task, 0, Outcome::Armed);
            let answer = requests.pass(Party::Task, &task, false);
            assert!(
                !answer.tell(Party::Task) && !answer.left_here,
                "the task told itself"
            );
            let told = [hook, registration]
                .into_iter()
                .map(|party| party.join().unwrap().0)
                .fold(false, |told, this| told | this);
            let state = requests.state();
            let ran: &Ran = &state;
            for party in [Party::Hook, Party::Task] {
                assert!(
                    scanned_for(ran, party)
                        || (requests.scan_pending() && (told || hook_kept_for(ran, party))),
                    "{party:?}'s scan lost (pending {}, told {told}): {ran:?}",
                    requests.scan_pending()
                );
            }
            assert!(
                ran.arms.iter().any(|&(_, tick)| tick <= 5)
                    || scanned_for(ran, Party::Registration),
                "the registration's arm lost: {ran:?}"
            );
            assert_eq!(requests.stopped(), Stop::Running);
        });
    }

    /// A registration whose tick is due already (the stand-in's `arm`
    /// answers with `keep_hook` to a registration, a pass to the others),
    /// racing the hook's and the task's passes: the registration is served
    /// by a pass that began after it (the hook's or the task's, or the arm
    /// run by one of them), or it leaves the scan raised with the hook kept
    /// armed after it: it is never just armed for, never left to the task
    /// (the hook takes every arm here), and never run on its own thread.
    #[test]
    fn loom_requests_a_due_arm_keeps_the_hook_armed() {
        model(|| {
            let shared = requests();
            let hook = spawn_party(&shared, Party::Hook, 5, Outcome::Armed, |r, w| {
                r.pass(Party::Hook, w, true)
            });
            let registration =
                spawn_party(&shared, Party::Registration, 5, Outcome::Armed, |r, w| {
                    r.arm(w)
                });
            let (requests, wanted) = &shared;
            wanted[index(Party::Task)].store(true, Ordering::Release);
            let task = work(wanted, Party::Task, 5, Outcome::Armed);
            let _ = requests.pass(Party::Task, &task, false);
            hook.join().unwrap();
            let (told, _) = registration.join().unwrap();
            let state = requests.state();
            let ran: &Ran = &state;
            assert!(
                ran.arms.is_empty(),
                "a due tick is never just armed: {ran:?}"
            );
            assert!(!told, "the task was told, with the hook taking every arm");
            assert!(
                scanned_for(ran, Party::Registration)
                    || (requests.scan_pending() && hook_kept_for(ran, Party::Registration)),
                "the due registration lost (pending {}): {ran:?}",
                requests.scan_pending()
            );
        });
    }

    /// With the registration alone (nobody else runs): its due arm keeps
    /// the hook armed and leaves the scan raised for the hook's pass, and
    /// the task is not told, every time; if tokio will not take the hook's
    /// arm, the scan is left raised and the task told instead.
    #[test]
    fn loom_requests_a_due_arm_alone_keeps_the_hook_or_tells_the_task() {
        for hook_takes in [true, false] {
            model(move || {
                let (requests, wanted) = requests();
                let registration = spawn_party_with(
                    &requests,
                    &wanted,
                    Party::Registration,
                    5,
                    Outcome::Armed,
                    hook_takes,
                    |r, w| r.arm(w),
                );
                let (told, _) = registration.join().unwrap();
                assert_eq!(told, !hook_takes, "told the task");
                assert!(requests.scan_pending(), "the scan left is gone");
                let state = requests.state();
                let ran: &Ran = &state;
                assert!(ran.passes.is_empty() && ran.arms.is_empty(), "{ran:?}");
                assert_eq!(hook_kept_for(ran, Party::Registration), hook_takes);
            });
        }
    }

    /// The task retiring the alarm while the hook runs a pass and a
    /// registration an arm: once the retirement has run, no pass or arm
    /// runs (the stand-in asserts it); after every party is done it has
    /// run (here no pass asks the task to stop, so nobody breaks without
    /// running it first); `stopped()` ends `Off` and every value a party
    /// read after its request, if not `Running`, is that one.
    #[test]
    fn loom_requests_nothing_runs_after_the_alarm_retires() {
        retire_racing(Outcome::Armed);
    }

    /// The same with the hook's pass finding that the task must end
    /// (`Stop::Retire`, as a pass does for an orphaned timer with nothing
    /// left) as the task retires: `stopped()` is set once and never
    /// changes (`Retire` or `Off`, whichever came first), and nothing runs
    /// after the retirement, which has run once every party let go (a first
    /// version of the pass lock let a runner that had seen the stop go with
    /// the retirement raised, leaving it to nobody; see `RELIABILITY.md`).
    #[test]
    fn loom_requests_a_stop_is_set_once_and_the_retirement_runs_first() {
        retire_racing(Outcome::Stop(Stop::Retire));
    }

    fn retire_racing(hook_pass: Outcome) {
        model(move || {
            let shared = requests();
            let hook = spawn_party(&shared, Party::Hook, 0, hook_pass, |r, w| {
                r.pass(Party::Hook, w, true)
            });
            let registration =
                spawn_party(&shared, Party::Registration, 0, Outcome::Armed, |r, w| {
                    r.arm(w)
                });
            let (requests, wanted) = &shared;
            let task = work(wanted, Party::Task, 0, Outcome::Armed);
            let _ = requests.retire(&task);
            let after_retire = requests.stopped();
            let mut read = vec![after_retire];
            for party in [hook, registration] {
                read.push(party.join().unwrap().1);
            }
            let stopped = requests.stopped();
            assert_ne!(stopped, Stop::Running, "retired, and still running");
            for why in read {
                assert!(
                    why == Stop::Running || why == stopped,
                    "stopped() read {why:?}, then {stopped:?}"
                );
            }
            let retired = requests.state().retired;
            assert!(
                retired >= 1,
                "every party let go and nobody retired the alarm"
            );
            if hook_pass == Outcome::Armed {
                assert_eq!(stopped, Stop::Off);
            }
        });
    }
}

/// The shard's lock (`raw/lock.rs`) alone: two threads that each add to a
/// plain counter under it never overlap (loom's cell reports two holders at
/// once) and lose no update, and the value written under the lock is seen
/// by the next holder (the release store and the acquiring swap order it).
#[test]
fn loom_wheel_lock_excludes_and_publishes() {
    use crate::engine::raw::lock::WheelLock;
    model(|| {
        let lock = Arc::new(WheelLock::new(0u32));
        let other = {
            let lock = Arc::clone(&lock);
            loom::thread::spawn(move || {
                let mut guard = lock.lock();
                *guard += 1;
            })
        };
        {
            let mut guard = lock.lock();
            *guard += 1;
        }
        other.join().unwrap();
        assert_eq!(*lock.lock(), 2);
    });
}
