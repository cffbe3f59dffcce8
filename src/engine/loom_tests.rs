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
//! loom explores, that no wake-up is lost or doubled.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Wake, Waker};

use loom::sync::atomic::AtomicUsize;

use crate::engine::clock::Clock;
use crate::engine::shard::{Polled, Shard};
use crate::engine::shared::Shared;
use crate::engine::wheel::{Insert, Key, Reset, Wheel};

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

/// A shard whose driver's kick records the earliest tick it was asked to
/// arm for (`u64::MAX`: none), as the driver's `arm_wanted` does.
fn shard_kicked(max_pending: Option<usize>) -> (Arc<Shard>, Arc<loom::sync::atomic::AtomicU64>) {
    let shared = Arc::new(Shared::new(
        Clock::new(tokio::time::Instant::now(), TICK_NS),
        crate::engine::clock::TimeSource::System,
        max_pending,
    ));
    let kicked = Arc::new(loom::sync::atomic::AtomicU64::new(u64::MAX));
    let record = std::panic::AssertUnwindSafe(kicked.clone());
    shared.install_kick(crate::engine::shared::Kick(Box::new(move |tick| {
        record.fetch_min(tick, Ordering::SeqCst);
    })));
    (Arc::new(Shard::new(Wheel::new(8, TICK_NS), shared)), kicked)
}

/// One driver pass over `shard` at `now_tick`, as the driver's scan does
/// it: announce the scan, fire what is due, wake outside the lock, publish
/// the next tick. Returns that tick.
fn driver_pass(shard: &Shard, now_tick: u64) -> Option<u64> {
    shard.shared.begin_scan();
    // A shard with nothing due by `now_tick` is skipped unlocked, as the
    // driver's scan does.
    let due = shard.due();
    let next = if due > now_tick {
        (due != u64::MAX).then_some(due)
    } else {
        let mut out = Vec::new();
        let panics = std::sync::atomic::AtomicU64::new(0);
        shard
            .advance(now_tick, now_tick * TICK_NS, &mut out, &panics)
            .next
    };
    shard.shared.end_scan(next.unwrap_or(u64::MAX));
    next
}

fn register(shard: &Shard, tick: u64, waker: &Waker) -> Key {
    match shard.register(tick * TICK_NS, waker) {
        Insert::Registered { key, .. } => key,
        other => panic!("registration refused: {other:?}"),
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A registration racing the driver's scan is never lost: either the scan
/// saw it, or the driver's target is at or before its tick, or it kicked
/// the driver to arm for it.
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
        let target = shard.shared.target();
        let kicked = kicked.load(Ordering::SeqCst);
        assert!(
            seen == Some(5) || target <= 5 || kicked <= 5,
            "lost registration: scan saw {seen:?}, target {target}, kicked {kicked}"
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
    });
}

/// A reset racing the firing either moves a still-pending entry (no wake)
/// or finds it fired (one wake): never both, never neither. The later
/// deadline is recorded in place, so when the reset comes first the pass at
/// tick 1 moves the entry instead of firing it.
#[test]
fn loom_reset_racing_firing_moves_or_finds_it_fired() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 1, &waker);
        drop(waker);
        let s2 = shard.clone();
        let resetter = loom::thread::spawn(move || s2.reset(key, 10 * TICK_NS, false));
        driver_pass(&shard, 1);
        match resetter.join().unwrap() {
            Reset::Moved { tick } => {
                assert_eq!(tick, 1, "in place: its list still comes due at tick 1");
                assert_eq!(wakes(&count), 0);
                assert!(shard.is_live(key));
            }
            Reset::Stale => {
                assert_eq!(wakes(&count), 1);
                assert!(!shard.is_live(key));
            }
            Reset::Elapsed(_) => panic!("tick 10 is not due at tick 1"),
        }
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
                Reset::Moved { .. } => s2.poll_registered(key, &waker, || true) != Polled::Pending,
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
        let notice = Arc::new(Notice::new());
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
    use std::ops::ControlFlow;

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
                        ControlFlow::Continue(())
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
    use std::ops::ControlFlow;

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
            ControlFlow::Continue(())
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
    use std::ops::ControlFlow;

    use crate::engine::pass_lock::PassLock;

    type Passes = PassLock<(usize, Option<usize>)>;

    /// Counts itself; the first pass asks for another from inside.
    fn pass(lock: &Passes, state: &mut (usize, Option<usize>)) -> ControlFlow<()> {
        let (passes, asked_at) = state;
        *passes += 1;
        if asked_at.is_none() {
            *asked_at = Some(*passes);
            lock.request(|_| unreachable!("the lock is held: the request is left"));
        }
        ControlFlow::Continue(())
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

/// A sleep that learns it fired from the shard's published mark, without
/// the lock, while the driver fires it: whenever the mark says its tick was
/// processed, its entry is gone (fired, its slot free), so skipping the
/// cancel on drop and the lock on re-poll loses nothing.
#[test]
fn loom_the_processed_mark_is_published_after_the_firing() {
    model(|| {
        let shard = shard(None);
        let (count, waker) = counter();
        let key = register(&shard, 1, &waker);
        let s2 = shard.clone();
        let driver = loom::thread::spawn(move || {
            driver_pass(&s2, 1);
        });
        if shard.has_fired(1) {
            assert!(!shard.is_live(key), "marked processed while still live");
        }
        driver.join().unwrap();
        assert!(shard.has_fired(1));
        assert_eq!(wakes(&count), 1);
    });
}
