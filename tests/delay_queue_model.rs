//! `DelayQueue` against a model: a `BTreeMap` of deadlines, driven by random
//! inserts, removes, resets and advances on tokio's paused clock. Each case
//! runs under a watchdog, so a task that is never woken fails the case
//! instead of hanging it.

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use proptest::prelude::*;
use tickwheel::delay_queue::{DelayQueue, Expired, Key};
use tickwheel::Timer;
use tokio::time::{advance, Instant};

mod common;
use common::watchdog::{paused, WATCHDOG};

const TICK: Duration = Duration::from_millis(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Everything the queue yields now, without waiting: the items and how the
/// poll after them ended (`true`: `Ready(None)`, `false`: `Pending`).
async fn drain<T>(queue: &mut DelayQueue<T>) -> (Vec<Expired<T>>, bool) {
    tokio::task::unconstrained(async {
        let mut out = Vec::new();
        loop {
            match futures::poll!(poll_fn(|cx| queue.poll_expired(cx))) {
                Poll::Ready(Some(expired)) => out.push(expired),
                Poll::Ready(None) => return (out, true),
                Poll::Pending => return (out, false),
            }
        }
    })
    .await
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    /// A deadline relative to now, in ms; negative: already passed.
    InsertAt(i64),
    Remove(usize),
    Reset(usize, u64),
    ResetAt(usize, i64),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..400).prop_map(Op::Insert),
        2 => (-30i64..400).prop_map(Op::InsertAt),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), 0u64..400).prop_map(|(i, d)| Op::Reset(i, d)),
        1 => (any::<usize>(), -30i64..400).prop_map(|(i, d)| Op::ResetAt(i, d)),
        4 => (0u64..120).prop_map(Op::Advance),
    ]
}

/// What the model knows of an item.
#[derive(Debug, Clone, Copy)]
struct Modelled {
    deadline: Instant,
    /// Its deadline had passed when it was inserted or reset: it is due on
    /// the next poll, whatever its tick.
    due_at_once: bool,
}

fn run_model(slots: usize, ops: Vec<Op>) {
    paused("delay_queue_model", WATCHDOG, move || async move {
        let origin = Instant::now();
        let timer = Timer::builder().slots(slots).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        let mut model: BTreeMap<u64, (Key, Modelled)> = BTreeMap::new();
        let mut keys: Vec<Key> = Vec::new();
        let mut next_value = 0u64;
        // The tick boundary a deadline rounds up to.
        let boundary = |deadline: Instant| {
            let ns = deadline.saturating_duration_since(origin).as_nanos();
            let tick = TICK.as_nanos();
            origin + Duration::from_nanos((ns.div_ceil(tick) * tick) as u64)
        };
        let at = |rel: i64| {
            let now = Instant::now();
            if rel >= 0 {
                now + ms(rel as u64)
            } else {
                now - ms(rel.unsigned_abs())
            }
        };
        for op in ops {
            let now = Instant::now();
            match op {
                Op::Insert(d) => {
                    let value = next_value;
                    next_value += 1;
                    let key = queue.insert(value, ms(d));
                    let deadline = now + ms(d);
                    assert_eq!(queue.deadline(&key), deadline);
                    model.insert(
                        value,
                        (
                            key,
                            Modelled {
                                deadline,
                                due_at_once: d == 0,
                            },
                        ),
                    );
                    keys.push(key);
                }
                Op::InsertAt(rel) => {
                    let value = next_value;
                    next_value += 1;
                    let deadline = at(rel);
                    let key = queue.insert_at(value, deadline);
                    model.insert(
                        value,
                        (
                            key,
                            Modelled {
                                deadline,
                                due_at_once: deadline <= now,
                            },
                        ),
                    );
                    keys.push(key);
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
                Op::Reset(i, _) | Op::ResetAt(i, _) if !keys.is_empty() => {
                    let key = keys[i % keys.len()];
                    let Some((_, (_, item))) = model.iter_mut().find(|(_, (k, _))| *k == key)
                    else {
                        continue;
                    };
                    let (deadline, due) = match op {
                        Op::Reset(_, d) => {
                            queue.reset(&key, ms(d));
                            (now + ms(d), d == 0)
                        }
                        Op::ResetAt(_, rel) => {
                            let deadline = at(rel);
                            queue.reset_at(&key, deadline);
                            (deadline, deadline <= now)
                        }
                        _ => unreachable!(),
                    };
                    *item = Modelled {
                        deadline,
                        due_at_once: due,
                    };
                    assert_eq!(queue.deadline(&key), deadline);
                }
                Op::Advance(d) => advance(ms(d)).await,
                _ => {}
            }
            // After every step: exactly the items due by now come out, in
            // tick order, none early.
            let now = Instant::now();
            let (out, ended) = drain(&mut queue).await;
            let mut last_tick = None;
            for expired in &out {
                let value = *expired.get_ref();
                let (key, item) = model
                    .remove(&value)
                    .unwrap_or_else(|| panic!("{value} came out twice or was removed"));
                assert_eq!(expired.key(), key);
                assert_eq!(expired.deadline(), item.deadline);
                assert!(item.deadline <= now, "{value} came out early");
                let tick = boundary(item.deadline);
                assert!(
                    last_tick.is_none_or(|last| last <= tick),
                    "out of tick order: {out:?}"
                );
                last_tick = Some(tick);
            }
            for (value, (_, item)) in &model {
                assert!(
                    !item.due_at_once && boundary(item.deadline) > now,
                    "{value} ({item:?}) is due at {now:?} but did not come out"
                );
            }
            assert_eq!(queue.len(), model.len());
            assert_eq!(ended, model.is_empty(), "Ready(None) exactly when empty");
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
    fn the_queue_behaves_like_a_map_of_deadlines(
        slots in prop_oneof![Just(1usize), Just(4usize), Just(512usize)],
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        run_model(slots, ops);
    }
}
