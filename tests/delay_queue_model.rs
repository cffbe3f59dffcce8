//! `DelayQueue` against a model: a `BTreeMap` of deadlines, driven by random
//! inserts, removes, resets, clears and advances on tokio's paused clock,
//! with a task waiting on the queue. Ticks include odd lengths (1.000003 ms,
//! 3.700001 ms, 7.919993 ms) whose boundaries miss tokio's millisecond grid,
//! and timers built after the clock moved some microseconds (an origin off
//! that grid). Delays reach past the queue's ring into its overflow array
//! and map; some steps leave the queue unpolled, so the clock passes items
//! before a passed insert or reset lands; and the earliest item of each
//! level is removed or moved later. Each case runs under a watchdog, so a
//! task that is never woken fails the case instead of hanging it.

use std::collections::BTreeMap;
use std::task::Poll;
use std::time::Duration;

use proptest::prelude::*;
use tickwheel::delay_queue::{DelayQueue, Key};
use tickwheel::Timer;
use tokio::time::{advance, Instant};
use tokio_test::task;

mod common;
use common::watchdog::{paused, WATCHDOG};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    /// A deadline relative to now, in ms; negative: already passed.
    InsertAt(i64),
    /// `Duration::MAX`: an item that never comes due.
    InsertNever,
    Remove(usize),
    Reset(usize, u64),
    ResetAt(usize, i64),
    ResetNever(usize),
    /// Removes the earliest item at least [`level_span`] of the level out.
    RemoveEarliest(usize),
    /// Moves the earliest item at least [`level_span`] of the level out
    /// later, by `.1` ms.
    DelayEarliest(usize, u64),
    Clear,
    /// Microseconds, so the clock stops between ticks and off the
    /// millisecond grid.
    Advance(u64),
}

/// One step: an operation, then (if `poll`) the waiting task drains the
/// queue. Unpolled steps let the clock pass items before the next insert
/// or reset, as a task busy elsewhere does.
#[derive(Debug, Clone)]
struct Step {
    op: Op,
    poll: bool,
}

/// Delays in ms: near (in the ring at every tick), far (past a 512-slot
/// ring at 1 ms: the overflow array), and very far (past the array at 1 ms
/// and 10 ms: the map).
fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..400,
        2 => 0u64..40_000,
        1 => 0u64..400_000,
    ]
}

/// A deadline relative to now in ms: near, passed by a little, or passed
/// by as much as the far advances move the clock.
fn relative() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -30i64..400,
        1 => -400_000i64..0,
        1 => 0i64..400_000,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => delay().prop_map(Op::Insert),
        2 => relative().prop_map(Op::InsertAt),
        1 => Just(Op::InsertNever),
        3 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), delay()).prop_map(|(i, d)| Op::Reset(i, d)),
        1 => (any::<usize>(), relative()).prop_map(|(i, d)| Op::ResetAt(i, d)),
        1 => any::<usize>().prop_map(Op::ResetNever),
        1 => (0usize..3).prop_map(Op::RemoveEarliest),
        1 => ((0usize..3), delay()).prop_map(|(l, d)| Op::DelayEarliest(l, d)),
        1 => Just(Op::Clear),
        4 => (0u64..120_000).prop_map(Op::Advance),
        1 => (0u64..40_000_000).prop_map(Op::Advance),
        1 => (0u64..400_000_000).prop_map(Op::Advance),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    (op(), prop::bool::weighted(0.7)).prop_map(|(op, poll)| Step { op, poll })
}

/// How far out the earliest item of each level at least is: level 0 the
/// whole queue, level 1 past the ring's two laps (the overflow), level 2
/// past the overflow array's 64 laps after those (the map), for a ring of
/// `slots` ticks of `tick`.
fn level_span(level: usize, slots: usize, tick: Duration) -> Duration {
    let laps = [0, 2, 66][level];
    tick * (laps * slots) as u32
}

/// What the model knows of an item.
#[derive(Debug, Clone, Copy)]
struct Modelled {
    /// `None`: it never comes due.
    deadline: Option<Instant>,
    /// Its deadline had passed when it was inserted or reset: it is due on
    /// the next poll, whatever its tick.
    due_at_once: bool,
}

/// How the waiting task's last poll ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Last {
    Pending,
    Empty,
}

/// `check_wakes`: also check that the waiting task is woken whenever
/// something comes due (see the ignored test below for why odd ticks skip
/// it for now).
fn run_model(slots: usize, tick: Duration, origin_us: u64, steps: Vec<Step>, check_wakes: bool) {
    paused("delay_queue_model", WATCHDOG, move || async move {
        // A timer built off the millisecond grid its runtime started on.
        advance(Duration::from_micros(origin_us)).await;
        let origin = Instant::now();
        let timer = Timer::builder().slots(slots).tick(tick).build().unwrap();
        // The queue's ring: the timer's slots, at most 512.
        let ring = timer.slots().min(512);
        let mut queue = DelayQueue::with_timer(&timer);
        let mut model: BTreeMap<u64, (Key, Modelled)> = BTreeMap::new();
        let mut keys: Vec<Key> = Vec::new();
        let mut next_value = 0u64;
        let mut waiting = task::spawn(());
        let polled = waiting.enter(|cx, _| queue.poll_expired(cx));
        assert!(matches!(polled, Poll::Ready(None)));
        let mut last = Last::Empty;
        // Since the last drain, something woke the task for a reason: an
        // item came due, the queue emptied, an insert after `Ready(None)`.
        let mut excused = false;
        // The tick boundary a deadline rounds up to.
        let boundary = |deadline: Instant| {
            let ns = deadline.saturating_duration_since(origin).as_nanos();
            let tick = tick.as_nanos();
            origin + Duration::from_nanos((ns.div_ceil(tick) * tick) as u64)
        };
        let at = |rel: i64| {
            let now = Instant::now();
            if rel >= 0 {
                now + ms(rel as u64)
            } else {
                now.checked_sub(ms(rel.unsigned_abs())).unwrap_or(origin)
            }
        };
        // The live item with the earliest deadline at least `span` out.
        let earliest = |model: &BTreeMap<u64, (Key, Modelled)>, span: Duration| {
            let from = Instant::now() + span;
            model
                .iter()
                .filter_map(|(v, (k, item))| Some((item.deadline?, *v, *k)))
                .filter(|(d, _, _)| span.is_zero() || *d >= from)
                .min_by_key(|(d, v, _)| (*d, *v))
        };
        for Step { op, poll } in steps {
            let now = Instant::now();
            let mut inserted = false;
            match op {
                Op::Insert(_) | Op::InsertAt(_) | Op::InsertNever => {
                    let value = next_value;
                    next_value += 1;
                    let (key, item) = match op {
                        Op::Insert(d) => {
                            let key = queue.insert(value, ms(d));
                            let deadline = now + ms(d);
                            assert_eq!(queue.deadline(&key), deadline);
                            (
                                key,
                                Modelled {
                                    deadline: Some(deadline),
                                    due_at_once: d == 0,
                                },
                            )
                        }
                        Op::InsertAt(rel) => {
                            let deadline = at(rel);
                            let key = queue.insert_at(value, deadline);
                            let due = deadline <= now;
                            (
                                key,
                                Modelled {
                                    deadline: Some(deadline),
                                    due_at_once: due,
                                },
                            )
                        }
                        _ => {
                            let key = queue.insert(value, Duration::MAX);
                            (
                                key,
                                Modelled {
                                    deadline: None,
                                    due_at_once: false,
                                },
                            )
                        }
                    };
                    model.insert(value, (key, item));
                    keys.push(key);
                    inserted = true;
                }
                Op::Remove(i) if !keys.is_empty() => {
                    let key = keys[i % keys.len()];
                    let live = model.iter().find(|(_, (k, _))| *k == key).map(|(v, _)| *v);
                    match (queue.try_remove(&key), live) {
                        (Some(expired), Some(value)) => {
                            assert_eq!(*expired.get_ref(), value);
                            model.remove(&value);
                        }
                        (None, None) => {}
                        (got, want) => panic!("try_remove gave {got:?}, model has {want:?}"),
                    }
                }
                Op::RemoveEarliest(level) => {
                    if let Some((_, value, key)) = earliest(&model, level_span(level, ring, tick)) {
                        assert_eq!(*queue.remove(&key).get_ref(), value);
                        model.remove(&value);
                    }
                }
                Op::DelayEarliest(level, extra) => {
                    if let Some((deadline, value, key)) =
                        earliest(&model, level_span(level, ring, tick))
                    {
                        let later = deadline + ms(extra);
                        queue.reset_at(&key, later);
                        assert_eq!(queue.deadline(&key), later);
                        model.get_mut(&value).unwrap().1 = Modelled {
                            deadline: Some(later),
                            due_at_once: later <= now,
                        };
                    }
                }
                Op::Reset(i, _) | Op::ResetAt(i, _) | Op::ResetNever(i) if !keys.is_empty() => {
                    let key = keys[i % keys.len()];
                    let Some((_, (_, item))) = model.iter_mut().find(|(_, (k, _))| *k == key)
                    else {
                        continue;
                    };
                    *item = match op {
                        Op::Reset(_, d) => {
                            queue.reset(&key, ms(d));
                            assert_eq!(queue.deadline(&key), now + ms(d));
                            Modelled {
                                deadline: Some(now + ms(d)),
                                due_at_once: d == 0,
                            }
                        }
                        Op::ResetAt(_, rel) => {
                            let deadline = at(rel);
                            queue.reset_at(&key, deadline);
                            assert_eq!(queue.deadline(&key), deadline);
                            Modelled {
                                deadline: Some(deadline),
                                due_at_once: deadline <= now,
                            }
                        }
                        _ => {
                            queue.reset(&key, Duration::MAX);
                            Modelled {
                                deadline: None,
                                due_at_once: false,
                            }
                        }
                    };
                }
                Op::Clear => {
                    queue.clear();
                    model.clear();
                }
                Op::Advance(us) => advance(Duration::from_micros(us)).await,
                _ => {}
            }
            let now = Instant::now();
            let due = |item: &Modelled| {
                item.due_at_once || item.deadline.is_some_and(|d| boundary(d) <= now)
            };
            // The waiting task is woken whenever there is something new for
            // it: an item came due, the queue emptied, or (after it saw the
            // queue empty) an insert. It never waits through such a change.
            let due_now = model.values().any(|(_, item)| due(item));
            match last {
                Last::Pending if (check_wakes && due_now) || model.is_empty() => assert!(
                    waiting.is_woken(),
                    "{op:?}: not woken at {:?} (due: {due_now}, empty: {})",
                    now - origin,
                    model.is_empty()
                ),
                Last::Empty if inserted => {
                    assert!(
                        waiting.is_woken(),
                        "{op:?}: an insert did not wake the task"
                    )
                }
                _ => {}
            }
            excused |= due_now || model.is_empty() || last == Last::Empty;
            // Nor is it woken for nothing: with nothing due it is woken at
            // most two ring laps before the earliest item's tick (when a
            // far item moves into the ring), never for an item removed or
            // moved later. A wake is judged at the step that shows it: an
            // advance (the model as it is) or an operation (the model as it
            // leaves it); later steps may move the items it was for.
            if last == Last::Pending && !excused && waiting.is_woken() {
                excused = true;
                let first = earliest(&model, Duration::ZERO).map(|(d, _, _)| boundary(d));
                assert!(
                    first.is_some_and(|first| first <= now + tick * (2 * ring) as u32),
                    "{op:?}: woken at {:?} with nothing due; the earliest item's tick is at {:?}",
                    now - origin,
                    first.map(|first| first - origin)
                );
            }
            if !poll {
                continue;
            }
            // The task drains the queue: exactly the items due by now come
            // out, in tick order, none early, each the one `peek` named.
            let (out, ended) = tokio::task::unconstrained(async {
                let mut out = Vec::new();
                loop {
                    let peeked = queue.peek();
                    match waiting.enter(|cx, _| queue.poll_expired(cx)) {
                        Poll::Ready(Some(expired)) => {
                            assert_eq!(
                                peeked,
                                Some(expired.key()),
                                "peek named another item than came out ({:?})",
                                expired.get_ref()
                            );
                            out.push(expired)
                        }
                        Poll::Ready(None) => return (out, true),
                        Poll::Pending => return (out, false),
                    }
                }
            })
            .await;
            last = if ended { Last::Empty } else { Last::Pending };
            excused = false;
            let mut last_tick = None;
            for expired in &out {
                let value = *expired.get_ref();
                let (key, item) = model
                    .remove(&value)
                    .unwrap_or_else(|| panic!("{value} came out twice or was removed"));
                assert_eq!(expired.key(), key);
                let deadline = item
                    .deadline
                    .unwrap_or_else(|| panic!("{value} never comes due but came out"));
                assert_eq!(expired.deadline(), deadline);
                assert!(deadline <= now, "{value} came out early");
                let tick = boundary(deadline);
                assert!(
                    last_tick.is_none_or(|last| last <= tick),
                    "out of tick order: {out:?}"
                );
                last_tick = Some(tick);
            }
            for (value, (_, item)) in &model {
                assert!(
                    !due(item),
                    "{value} ({item:?}) is due at {now:?} but did not come out"
                );
            }
            assert_eq!(queue.len(), model.len());
            assert_eq!(ended, model.is_empty(), "Ready(None) exactly when empty");
            // What waits: `peek` names an item of the earliest tick (one
            // that never comes due only if nothing else is left).
            let first = earliest(&model, Duration::ZERO).map(|(d, _, _)| boundary(d));
            let peeked = queue.peek().map(|key| {
                let (_, (_, item)) = model.iter().find(|(_, (k, _))| *k == key).unwrap();
                item.deadline.map(boundary)
            });
            match first {
                Some(first) => assert_eq!(peeked, Some(Some(first)), "peek"),
                None => assert_eq!(peeked.is_some(), !model.is_empty(), "peek"),
            }
        }
    });
}

/// The tick lengths the model runs with: tokio's grid, and odd lengths
/// whose boundaries fall between its milliseconds.
fn tick() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::from_millis(1)),
        Just(Duration::from_millis(10)),
        Just(Duration::from_nanos(1_000_003)),
        Just(Duration::from_nanos(3_700_001)),
        Just(Duration::from_nanos(7_919_993)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_queue_behaves_like_a_map_of_deadlines(
        slots in prop_oneof![Just(1usize), Just(4usize), Just(512usize)],
        tick in tick(),
        origin_us in prop_oneof![Just(0u64), 0u64..20_000],
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        // The driver can miss a wake on ticks off tokio's millisecond grid
        // (`an_odd_tick_sleep_reset_back_and_forth_wakes_at_the_boundary`):
        // there only the wakes for an emptied queue and inserts are checked.
        let on_grid = tick.subsec_nanos() % 1_000_000 == 0;
        run_model(slots, tick, origin_us, steps, on_grid);
    }

    /// With the wake check on odd ticks too: un-ignore once the driver
    /// meets every boundary.
    #[test]
    fn on_odd_ticks_the_waiting_task_is_woken_when_an_item_comes_due(
        slots in prop_oneof![Just(1usize), Just(4usize), Just(512usize)],
        tick in tick(),
        origin_us in prop_oneof![Just(0u64), 0u64..20_000],
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        run_model(slots, tick, origin_us, steps, true);
    }
}

/// A case the model found where a waiting task is not woken at its tick's
/// boundary on a 7.919993 ms tick: the queue's sleep is set right, and the
/// plain-`Sleep` test below misses the same wake, so the miss is the
/// driver's.
#[test]
fn an_odd_tick_queue_wakes_its_task_at_the_boundary() {
    let _watchdog = common::Watchdog::start();
    use Op::*;
    run_model(
        512,
        Duration::from_nanos(7_919_993),
        0,
        vec![
            Insert(0),
            Advance(79635),
            Advance(103476),
            Advance(107310),
            Insert(162),
            Advance(27090),
            Insert(0),
            Insert(0),
            Advance(13729),
            Insert(0),
            ResetAt(3995560020830568106, 239),
            Insert(0),
            Advance(41249),
            Insert(79),
            Advance(82272),
            Reset(57586813968671010, 0),
            Advance(79736),
            Advance(26812),
            Advance(16851),
        ]
        .into_iter()
        .map(|op| Step { op, poll: true })
        .collect(),
        true,
    );
}

/// The queue's sleep history from the case above, on a plain `Sleep`:
/// registered for tick 58, reset to 73 and back to 58 while registered,
/// fired, reset to 73 again; at 578.16 ms (tick 73's boundary is
/// 578.159489 ms) it is not woken.
#[test]
fn an_odd_tick_sleep_reset_back_and_forth_wakes_at_the_boundary() {
    paused(
        "an_odd_tick_sleep_reset_back_and_forth_wakes_at_the_boundary",
        WATCHDOG,
        || async {
            let origin = Instant::now();
            let timer = Timer::builder()
                .slots(512)
                .tick(Duration::from_nanos(7_919_993))
                .build()
                .unwrap();
            let b58 = origin + Duration::from_nanos(58 * 7_919_993);
            let b73 = origin + Duration::from_nanos(73 * 7_919_993);
            advance(Duration::from_micros(331_240)).await;
            let mut s = task::spawn(timer.sleep_until(b58));
            assert!(s.poll().is_pending());
            s.enter(|_, sl| sl.reset(b73));
            assert!(s.poll().is_pending());
            advance(Duration::from_micros(372_489 - 331_240)).await;
            assert!(s.poll().is_pending());
            s.enter(|_, sl| sl.reset(b58));
            assert!(s.poll().is_pending());
            advance(Duration::from_micros(534_497 - 372_489)).await;
            assert!(s.is_woken());
            assert!(s.poll().is_ready());
            s.enter(|_, sl| sl.reset(b73));
            assert!(s.poll().is_pending());
            advance(Duration::from_micros(561_309 - 534_497)).await;
            assert!(s.poll().is_pending());
            advance(Duration::from_micros(16_851)).await;
            assert!(s.is_woken(), "plain sleep not woken at 578.16 ms");
        },
    );
}

/// One step of [`run_one_at_a_time`].
#[derive(Debug, Clone)]
enum OneOp {
    Insert(u64),
    Reset(usize, u64),
    /// Moves the item later by `.1` ms: in place, where it sits.
    Delay(usize, u64),
    /// Moves the item with the earliest deadline later by `.0` ms.
    DelayEarliest(u64),
    Advance(u64),
    /// One `poll_expired`, as a task that handles each item before it polls
    /// again (so the queue's sleep is not armed while it handles it).
    Poll,
}

fn one_op() -> impl Strategy<Value = OneOp> {
    prop_oneof![
        3 => delay().prop_map(OneOp::Insert),
        2 => (0u64..20).prop_map(OneOp::Insert),
        2 => (any::<usize>(), delay()).prop_map(|(i, d)| OneOp::Reset(i, d)),
        2 => (any::<usize>(), 0u64..3).prop_map(|(i, d)| OneOp::Delay(i, d)),
        2 => (0u64..3).prop_map(OneOp::DelayEarliest),
        3 => (0u64..120_000).prop_map(OneOp::Advance),
        1 => (0u64..40_000_000).prop_map(OneOp::Advance),
        4 => Just(OneOp::Poll),
    ]
}

/// The queue polled one item at a time, with inserts and resets between
/// the polls and no poll for a while after an insert: items moved later
/// where they sit (near and far) are still there when the clock passes
/// them, which the drains of `run_model` (each ending with the queue's
/// sleep armed, whose upkeep links them where their deadline says) rarely
/// leave. Each item that comes out is the one `peek` named just before, of
/// the earliest tick of the queue, due; `Pending` only with nothing due.
fn run_one_at_a_time(slots: usize, tick: Duration, ops: Vec<OneOp>) {
    paused("delay_queue_model", WATCHDOG, move || async move {
        let origin = Instant::now();
        let timer = Timer::builder().slots(slots).tick(tick).build().unwrap();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        // Each live item's deadline, and whether it was due when set.
        let mut model: BTreeMap<u64, (Key, Instant, bool)> = BTreeMap::new();
        let mut keys: Vec<Key> = Vec::new();
        let boundary = |deadline: Instant| {
            let ns = deadline.saturating_duration_since(origin).as_nanos();
            let tick = tick.as_nanos();
            origin + Duration::from_nanos((ns.div_ceil(tick) * tick) as u64)
        };
        for (value, op) in (0u64..).zip(ops) {
            let now = Instant::now();
            match op {
                OneOp::Insert(d) => {
                    let key = queue.insert(value, ms(d));
                    model.insert(value, (key, now + ms(d), d == 0));
                    keys.push(key);
                }
                OneOp::Reset(i, d) if !keys.is_empty() => {
                    let key = keys[i % keys.len()];
                    if let Some((_, item)) = model.iter_mut().find(|(_, (k, ..))| *k == key) {
                        queue.reset(&key, ms(d));
                        *item = (key, now + ms(d), d == 0);
                    }
                }
                OneOp::Delay(i, extra) if !keys.is_empty() => {
                    let key = keys[i % keys.len()];
                    if let Some((_, item)) = model.iter_mut().find(|(_, (k, ..))| *k == key) {
                        let later = item.1 + ms(extra);
                        queue.reset_at(&key, later);
                        *item = (key, later, later <= now);
                    }
                }
                OneOp::DelayEarliest(extra) => {
                    if let Some(item) = model.values_mut().min_by_key(|(_, d, _)| *d) {
                        let later = item.1 + ms(extra);
                        queue.reset_at(&item.0, later);
                        *item = (item.0, later, later <= now);
                    }
                }
                OneOp::Advance(us) => advance(Duration::from_micros(us)).await,
                OneOp::Poll => {
                    let peeked = queue.peek();
                    let polled = tokio::task::unconstrained(async { queue.poll_next() }).await;
                    let due = |(_, deadline, at_once): &(Key, Instant, bool)| {
                        *at_once || boundary(*deadline) <= now
                    };
                    match polled {
                        Poll::Ready(Some(expired)) => {
                            let out = *expired.get_ref();
                            assert_eq!(
                                peeked,
                                Some(expired.key()),
                                "peek named another item than came out ({out})"
                            );
                            let item = model.remove(&out).expect("came out once");
                            assert_eq!(expired.deadline(), item.1);
                            assert!(due(&item), "{out} came out early");
                            let first = model.values().map(|(_, d, _)| boundary(*d)).min();
                            assert!(
                                first.is_none_or(|first| boundary(item.1) <= first),
                                "{out} came out before an item of an earlier tick"
                            );
                        }
                        Poll::Ready(None) => assert!(model.is_empty(), "Ready(None) with items"),
                        Poll::Pending => assert!(
                            !model.values().any(due),
                            "Pending with an item due at {:?}",
                            now - origin
                        ),
                    }
                }
                _ => {}
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn polled_one_at_a_time_peek_names_each_item_that_comes_out(
        slots in prop_oneof![Just(1usize), Just(4usize), Just(512usize)],
        tick in prop_oneof![Just(Duration::from_millis(1)), Just(Duration::from_millis(10))],
        ops in proptest::collection::vec(one_op(), 1..120),
    ) {
        run_one_at_a_time(slots, tick, ops);
    }
}
