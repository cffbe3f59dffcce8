//! `DelayQueue` on tokio's paused clock: order, never early, resets, stale
//! keys, waking, the `Stream`, storage and shutdown (the model-based test is
//! `tests/delay_queue_model.rs`). Each test runs under a watchdog, so a task
//! that is never woken fails the test instead of hanging it.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use tickwheel::delay_queue::{DelayQueue, Expired, Key};
use tickwheel::Timer;
use tokio::time::{advance, Instant};
use tokio_test::{assert_pending, assert_ready, task};

mod common;
use common::coop::{beside_a_busy_arm, spend_the_budget};
use common::watchdog::watched;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The coarse tick the rounding tests use beside the default (1 ms) one: a
/// whole number of tokio's milliseconds, so its boundaries are instants
/// tokio's paused clock fires at.
const COARSE: Duration = Duration::from_millis(10);

fn coarse_timer() -> Timer {
    Timer::builder().tick(COARSE).build().unwrap()
}

/// Builds a timer on the default settings and one with the coarse tick, to
/// run a tick-generic test on both. Each is built when its run starts, so
/// its ticks count from the run's start.
const DEFAULT_AND_COARSE: [fn() -> Timer; 2] = [Timer::new, coarse_timer];

/// `d` rounded up to a whole number of `tick`s.
fn round_up(d: Duration, tick: Duration) -> Duration {
    let tick_ns = tick.as_nanos();
    Duration::from_nanos((d.as_nanos().div_ceil(tick_ns) * tick_ns) as u64)
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

/// Polls `queue` once from the mock task `waiting`, as a task awaiting
/// `queue.next()` would.
fn poll_expired<T>(
    waiting: &mut task::Spawn<()>,
    queue: &mut DelayQueue<T>,
) -> Poll<Option<Expired<T>>> {
    waiting.enter(|cx, _| queue.poll_expired(cx))
}

fn values<T: Copy>(expired: &[Expired<T>]) -> Vec<T> {
    expired.iter().map(|e| *e.get_ref()).collect()
}

/// Items come out in deadline order, never early, each at the first tick
/// boundary at or after its deadline: on the default tick at their
/// deadlines, on a 10 ms tick 299 ms rounds up to 300 ms.
#[test]
fn items_come_out_in_deadline_order_and_never_early() {
    watched(|| async {
        for build in DEFAULT_AND_COARSE {
            let timer = build();
            let tick = timer.tick();
            let mut queue = DelayQueue::with_timer(&timer);
            let start = Instant::now();
            for (value, delay) in [(3, 300), (1, 100), (5, 7_000), (2, 250), (4, 299)] {
                queue.insert(value, ms(delay));
            }
            let mut out = Vec::new();
            while let Some(expired) = queue.next().await {
                let now = Instant::now();
                assert!(now >= expired.deadline(), "early: {now:?} < {expired:?}");
                assert!(now < expired.deadline() + tick, "a tick late: {tick:?}");
                out.push((*expired.get_ref(), now - start));
            }
            // On a tick that puts 299 ms and 300 ms in one tick: either order.
            assert!(out.windows(2).all(|w| w[0].1 <= w[1].1), "{out:?}");
            out.sort();
            let at = |d| round_up(ms(d), tick);
            assert_eq!(
                out,
                [
                    (1, at(100)),
                    (2, at(250)),
                    (3, at(300)),
                    (4, at(299)),
                    (5, at(7_000))
                ],
                "{tick:?}"
            );
        }
    });
}

/// A deadline half a tick past a boundary comes out at the next boundary,
/// on the default tick (1.5 ms waits for 2 ms) as on a coarse one (15 ms
/// for 20 ms).
#[test]
fn a_deadline_between_ticks_waits_for_the_next_boundary() {
    watched(|| async {
        for build in DEFAULT_AND_COARSE {
            let timer = build();
            let tick = timer.tick();
            let mut queue = DelayQueue::with_timer(&timer);
            queue.insert("x", tick * 3 / 2);
            let mut next = task::spawn(poll_fn(|cx| queue.poll_expired(cx)));
            assert_pending!(next.poll());
            advance(tick * 3 / 2).await;
            // Its deadline has passed, but not the tick boundary it rounds up to.
            assert!(!next.is_woken(), "{tick:?}");
            assert_pending!(next.poll());
            advance(tick / 2).await;
            assert!(next.is_woken(), "{tick:?}");
            assert_eq!(assert_ready!(next.poll()).unwrap().into_inner(), "x");
        }
    });
}

#[test]
fn zero_and_passed_deadlines_come_out_on_the_next_poll() {
    watched(|| async {
        for build in DEFAULT_AND_COARSE {
            let timer = build();
            let tick = timer.tick();
            let mut queue = DelayQueue::with_timer(&timer);
            advance(tick * 3 / 2).await; // between two ticks
            queue.insert("zero", Duration::ZERO);
            queue.insert_at("passed", Instant::now() - tick / 10);
            queue.insert("later", tick / 10);
            let (out, ended) = drain(&mut queue).await;
            // All three round up to the next boundary, "later" too: it stays.
            // The other two in either order.
            let mut out = values(&out);
            out.sort();
            assert_eq!(out, ["passed", "zero"], "{tick:?}");
            assert!(!ended);
        }
    });
}

#[test]
fn far_items_come_out_at_their_deadline() {
    watched(|| async {
        // 8 slots of the default 1 ms: a lap is 8 ms, so these wait in the
        // overflow.
        let timer = Timer::builder().slots(8).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        for delay in [5_000, 170, 90, 1_000, 90_000] {
            queue.insert(delay, ms(delay));
        }
        let mut out = Vec::new();
        while let Some(expired) = queue.next().await {
            assert_eq!(Instant::now() - start, ms(*expired.get_ref()));
            out.push(expired.into_inner());
        }
        assert_eq!(out, [90, 170, 1_000, 5_000, 90_000]);
    });
}

#[test]
fn reset_moves_an_item_earlier_or_later_and_keeps_its_key() {
    watched(|| async {
        let timer = Timer::builder().slots(8).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        let a = queue.insert('a', ms(100));
        let b = queue.insert('b', ms(200));
        let c = queue.insert('c', ms(300));
        let d = queue.insert('d', ms(2_000));
        queue.reset(&a, ms(400)); // later, in place
        queue.reset(&c, ms(50)); // earlier
        queue.reset(&d, ms(1_500)); // earlier, still far
        queue.reset_at(&b, start + ms(3_000)); // later, far
        assert_eq!(queue.deadline(&a), start + ms(400));
        let mut next = task::spawn(poll_fn(|cx| queue.poll_expired(cx)));
        assert_pending!(next.poll());
        let mut out = Vec::new();
        for step in [50, 350, 1_100, 1_500] {
            advance(ms(step)).await;
            let expired = assert_ready!(next.poll()).unwrap();
            assert_eq!(expired.deadline(), Instant::now());
            out.push((expired.key(), expired.into_inner()));
            if out.len() < 4 {
                assert_pending!(next.poll());
            }
        }
        assert!(assert_ready!(next.poll()).is_none(), "empty");
        drop(next);
        assert_eq!(out, [(c, 'c'), (a, 'a'), (d, 'd'), (b, 'b')]);
    });
}

#[test]
fn resetting_a_waited_on_queue_to_an_earlier_deadline_wakes_it_then() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert((), ms(500));
        {
            let mut next = task::spawn(poll_fn(|cx| queue.poll_expired(cx)));
            assert_pending!(next.poll());
        }
        queue.reset(&key, ms(100));
        let start = Instant::now();
        queue.next().await.unwrap();
        assert_eq!(Instant::now() - start, ms(100));
    });
}

#[test]
fn a_due_insert_wakes_the_waiting_task_at_once() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(1, ms(500));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.insert(2, Duration::ZERO);
        assert!(waiting.is_woken());
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), 2);
    });
}

#[test]
fn remove_and_try_remove_detect_stale_keys_after_slot_reuse() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let old = queue.insert("old", ms(100));
        assert_eq!(queue.remove(&old).into_inner(), "old");
        assert!(queue.try_remove(&old).is_none(), "removed: stale");
        // The freed slot is reused: the stale key must not reach the new item.
        let new = queue.insert("new", ms(100));
        assert_ne!(old, new);
        assert!(queue.try_remove(&old).is_none());
        assert_eq!(queue.len(), 1);
        // An expired item's key goes stale too.
        advance(ms(100)).await;
        let expired = queue.next().await.unwrap();
        assert_eq!(expired.key(), new);
        assert!(queue.try_remove(&new).is_none());
        let newer = queue.insert("newer", ms(100));
        assert!(queue.try_remove(&new).is_none());
        assert!(queue.try_remove(&old).is_none());
        assert_eq!(queue.remove(&newer).into_inner(), "newer");
    });
}

#[test]
#[should_panic(expected = "DelayQueue::remove with a stale key")]
fn remove_panics_on_a_stale_key() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert(1, ms(10));
        queue.remove(&key);
        queue.insert(2, ms(10)); // reuses the slot
        queue.remove(&key);
    });
}

/// Asking for more room than a queue can ever address panics at once, as
/// documented, before allocating page after page (about 29 GB) to find out.
#[test]
#[should_panic(expected = "DelayQueue capacity overflow")]
fn reserving_more_than_a_queue_can_address_panics_without_allocating() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue: DelayQueue<u64> = DelayQueue::with_timer(&timer);
        queue.insert(1, ms(10));
        queue.reserve(1 << 30);
    });
}

#[test]
#[should_panic(expected = "DelayQueue::reset with a stale key")]
fn reset_panics_on_a_stale_key() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert(1, ms(10));
        queue.remove(&key);
        queue.reset(&key, ms(10));
    });
}

#[test]
#[should_panic(expected = "DelayQueue::deadline with a stale key")]
fn deadline_panics_on_a_stale_key() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert(1, ms(10));
        queue.clear();
        queue.deadline(&key);
    });
}

#[test]
fn an_empty_queue_is_ready_none_and_woken_by_an_insert() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue: DelayQueue<u32> = DelayQueue::with_timer(&timer);
        let mut waiting = task::spawn(());
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(polled, Poll::Ready(None)));
        queue.insert(9, ms(30));
        assert!(
            waiting.is_woken(),
            "an insert wakes the task that saw it empty"
        );
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(30)).await;
        assert!(waiting.is_woken());
        let polled = poll_expired(&mut waiting, &mut queue);
        assert_eq!(assert_ready!(polled).unwrap().into_inner(), 9);
    });
}

#[test]
fn removing_the_last_item_wakes_the_waiting_task_with_ready_none() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert(1, ms(1_000));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.remove(&key);
        assert!(waiting.is_woken());
        assert!(matches!(
            poll_expired(&mut waiting, &mut queue),
            Poll::Ready(None)
        ));
    });
}

#[test]
fn the_stream_ends_when_empty_and_yields_again_after_an_insert() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert("a", ms(10));
        assert_eq!(queue.next().await.unwrap().into_inner(), "a");
        assert!(queue.next().await.is_none());
        queue.insert("b", ms(10));
        let all: Vec<_> = (&mut queue).map(Expired::into_inner).collect().await;
        assert_eq!(all, ["b"]);
    });
}

#[test]
fn the_queue_holds_one_timer_entry_whatever_it_holds() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        for i in 0..10_000u64 {
            queue.insert(i, ms(100 + i));
        }
        let mut next = task::spawn(poll_fn(|cx| queue.poll_expired(cx)));
        assert_pending!(next.poll());
        assert_eq!(timer.pending(), 1);
    });
}

#[test]
fn peek_names_the_item_that_comes_out_next() {
    watched(|| async {
        let timer = Timer::builder().slots(8).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        assert_eq!(queue.peek(), None);
        let never = queue.insert("never", Duration::MAX);
        assert_eq!(queue.peek(), Some(never));
        let far = queue.insert("far", ms(900));
        assert_eq!(queue.peek(), Some(far));
        let near = queue.insert("near", ms(50));
        assert_eq!(queue.peek(), Some(near));
        // Moved later in place: peek looks past it.
        queue.reset(&near, ms(2_000));
        assert_eq!(queue.peek(), Some(far));
        let due = queue.insert("due", Duration::ZERO);
        assert_eq!(queue.peek(), Some(due));
        assert_eq!(queue.next().await.unwrap().key(), due);
        assert_eq!(queue.next().await.unwrap().key(), far);
        assert_eq!(queue.next().await.unwrap().key(), near);
        assert_eq!(queue.peek(), Some(never));
    });
}

#[test]
fn clear_compact_and_shrink_to_fit_keep_keys_honest() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_capacity_and_timer(100, &timer);
        assert!(queue.capacity() >= 100);
        let keys: Vec<Key> = (0..5_000).map(|i| queue.insert(i, ms(60_000))).collect();
        let grown = queue.capacity();
        // Empty the first pages and the last ones; keep one page's worth.
        for key in keys[..2_048].iter().chain(&keys[3_072..]) {
            queue.remove(key);
        }
        queue.shrink_to_fit();
        let shrunk = queue.capacity();
        assert!(shrunk < grown, "{shrunk} < {grown}");
        queue.compact();
        assert!(queue.capacity() < shrunk);
        assert!(queue.capacity() >= queue.len());
        // Live keys still work, stale ones still do not.
        assert_eq!(*queue.remove(&keys[2_500]).get_ref(), 2_500);
        assert!(queue.try_remove(&keys[10]).is_none());
        for i in 0..3_000 {
            let key = queue.insert(i, ms(10));
            assert!(!keys.contains(&key), "a new key equals an old one");
        }
        queue.reserve(10_000);
        assert!(queue.capacity() >= queue.len() + 10_000);
        let capacity = queue.capacity();
        queue.clear();
        assert!(queue.is_empty());
        assert_eq!(queue.capacity(), capacity, "clear keeps the capacity");
        assert!(queue.try_remove(&keys[2_600]).is_none());
        let (out, ended) = drain(&mut queue).await;
        assert!(out.is_empty() && ended);
    });
}

#[test]
fn after_shutdown_due_items_come_out_then_the_stream_ends() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert("due", ms(10));
        let later = queue.insert("later", ms(60_000));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(10)).await;
        timer.shutdown();
        assert!(waiting.is_woken());
        // The due item comes out; the later one is not yielded early, and the
        // queue never returns Pending on a dead timer (no hang), nor spins.
        let polled = poll_expired(&mut waiting, &mut queue);
        assert_eq!(assert_ready!(polled).unwrap().into_inner(), "due");
        for _ in 0..3 {
            let polled = poll_expired(&mut waiting, &mut queue);
            assert!(matches!(polled, Poll::Ready(None)));
        }
        assert_eq!(queue.len(), 1);
        // Inserting and resetting still work as data-structure operations, and
        // items whose deadline passes on the clock still come out.
        queue.insert("soon", ms(5));
        queue.reset(&later, ms(1));
        advance(ms(10)).await;
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), ["later", "soon"]);
        assert!(ended);
    });
}

#[test]
#[should_panic(expected = "shut down")]
fn a_queue_on_a_shut_down_timer_cannot_be_built() {
    watched(|| async {
        let timer = Timer::new();
        timer.shutdown();
        let _queue: DelayQueue<()> = DelayQueue::with_timer(&timer);
    });
}

#[test]
fn a_queue_takes_one_unit_of_max_pending() {
    watched(|| async {
        let timer = Timer::builder().max_pending(2).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        for i in 0..100 {
            queue.insert(i, ms(10));
        }
        let _one_more = timer.try_sleep(ms(10)).expect("room for one more sleep");
        assert!(timer.try_sleep(ms(10)).unwrap_err().is_at_capacity());
    });
}

#[test]
fn coop_budget_makes_a_long_drain_yield() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        for i in 0..1_000 {
            queue.insert(i, Duration::ZERO);
        }
        let mut next = task::spawn(());
        let mut ready = 0;
        loop {
            match poll_expired(&mut next, &mut queue) {
                Poll::Ready(Some(_)) => ready += 1,
                Poll::Pending => break,
                Poll::Ready(None) => panic!("drained {ready} without yielding"),
            }
        }
        assert!(
            0 < ready && ready < 1_000,
            "the budget ran out first: {ready}"
        );
        // The next turn of the task has a fresh budget.
        tokio::task::yield_now().await;
        assert!(matches!(
            poll_expired(&mut next, &mut queue),
            Poll::Ready(Some(_))
        ));
    });
}

/// The budget refuses the queue once at most: the poll it refused wakes the
/// task once it yields, and the next poll yields a due item whatever the
/// budget, so a `select!` arm that spends the budget before every poll of
/// the queue (tokio-util's queue would stay pending there) never keeps due
/// items in.
#[test]
fn a_poll_the_budget_refused_lets_the_next_one_go_ahead() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert("a", Duration::ZERO);
        queue.insert("b", Duration::ZERO);
        let mut next = task::spawn(());
        spend_the_budget().await;
        assert_pending!(poll_expired(&mut next, &mut queue));
        tokio::task::yield_now().await;
        assert!(next.is_woken(), "a refused poll wakes its task to yield");
        spend_the_budget().await;
        assert!(matches!(
            poll_expired(&mut next, &mut queue),
            Poll::Ready(Some(_))
        ));
        // One poll goes ahead; the budget takes part again after it.
        assert_pending!(poll_expired(&mut next, &mut queue));
    });
}

/// Due items come out of a queue raced in a biased `select!` by an arm that
/// spends the budget on every poll.
#[test]
fn a_queue_racing_a_busy_arm_yields_its_due_items() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        for i in 0..3 {
            queue.insert(i, Duration::from_millis(5));
        }
        advance(Duration::from_millis(10)).await;
        let mut out = Vec::new();
        for _ in 0..3 {
            let expired = beside_a_busy_arm(queue.next()).await;
            out.push(expired.expect("a due item").into_inner());
        }
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2]);
    });
}

// ---------------------------------------------------------------------------
// Waking a task that waits on items that never come due (`Duration::MAX`):
// removing the last one, clearing the queue or shutting the timer down wakes
// it with `Ready(None)`, as with finite deadlines.

#[test]
fn a_task_waiting_on_never_due_items_is_woken_when_the_last_is_removed() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let first = queue.insert(1, Duration::MAX);
        let second = queue.insert(2, Duration::MAX);
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.remove(&first);
        assert!(!waiting.is_woken(), "an item is left: nothing changed");
        queue.remove(&second);
        assert!(
            waiting.is_woken(),
            "the queue is empty: the task must see it"
        );
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(polled, Poll::Ready(None)));
    });
}

/// The list of never-due items keeps its own name apart from every far
/// lap's: its head removed and others linked and removed around it, the
/// queue still holds exactly what it should, and items due in a far lap
/// still come out on time.
#[test]
fn never_due_items_and_far_items_keep_their_lists_apart() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(0, Duration::from_secs(3 * 24 * 3600)); // far
        let first = queue.insert(1, Duration::MAX);
        let second = queue.insert(2, Duration::MAX); // the never list's head
        queue.remove(&second);
        let third = queue.insert(3, Duration::MAX);
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.remove(&first).into_inner(), 1);
        assert_eq!(queue.remove(&third).into_inner(), 3);
        assert_eq!(queue.len(), 1);
        queue.insert(4, ms(10));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(10)).await;
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(&polled, Poll::Ready(Some(item)) if *item.get_ref() == 4));
        advance(Duration::from_secs(3 * 24 * 3600)).await;
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(&polled, Poll::Ready(Some(item)) if *item.get_ref() == 0));
        assert!(queue.is_empty());
    });
}

#[test]
fn a_task_waiting_on_never_due_items_is_woken_when_the_queue_is_cleared() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(1, Duration::MAX);
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.clear();
        assert!(
            waiting.is_woken(),
            "the queue is empty: the task must see it"
        );
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(polled, Poll::Ready(None)));
    });
}

#[test]
fn a_task_waiting_on_never_due_items_is_woken_when_the_timer_shuts_down() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(1, Duration::MAX);
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        timer.shutdown();
        assert!(waiting.is_woken(), "nothing can come due any more");
        let polled = poll_expired(&mut waiting, &mut queue);
        assert!(matches!(polled, Poll::Ready(None)));
        assert_eq!(queue.len(), 1, "the item stays in the queue");
    });
}

/// The same wait as a user writes it: a task awaits the next item while
/// another removes the last one. Without the wake the waiting task hangs
/// (the watchdog turns that into a failure).
#[test]
fn waiting_for_never_due_items_ends_when_the_last_is_removed() {
    watched(|| async {
        let timer = Timer::new();
        let queue = Arc::new(Mutex::new(DelayQueue::with_timer(&timer)));
        let key = queue.lock().unwrap().insert("never", Duration::MAX);
        let waited = Arc::new(AtomicBool::new(false));
        let waiter = tokio::spawn({
            let (queue, waited) = (queue.clone(), waited.clone());
            // Locks only to poll, so the other task can remove meanwhile.
            poll_fn(move |cx| {
                let polled = queue.lock().unwrap().poll_next_unpin(cx);
                waited.store(polled.is_pending(), Ordering::SeqCst);
                polled.map(|expired| expired.map(Expired::into_inner))
            })
        });
        tokio::task::yield_now().await;
        assert!(waited.load(Ordering::SeqCst), "the waiter polled and waits");
        queue.lock().unwrap().remove(&key);
        assert_eq!(waiter.await.unwrap(), None);
    });
}

// ---------------------------------------------------------------------------
// Deadline order after the clock moved with nobody polling.

/// An item due at 5 ms waits; the clock moves to 20 ms with no poll; an item
/// whose deadline (19 ms) has passed is inserted. The 5 ms item comes out
/// first: the queue may not hand out the passed insert ahead of earlier
/// items it has not looked at since the clock moved.
#[test]
fn a_passed_insert_after_an_unpolled_advance_comes_out_after_earlier_items() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        queue.insert_at("a", start + ms(5));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(20)).await;
        queue.insert_at("b", start + ms(19));
        // A zero delay and a reset to a passed deadline take the same path.
        queue.insert("c", Duration::ZERO);
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), ["a", "b", "c"]);
        assert!(ended);
    });
}

#[test]
fn a_reset_to_a_passed_deadline_after_an_unpolled_advance_keeps_deadline_order() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        queue.insert_at("a", start + ms(5));
        let b = queue.insert_at("b", start + ms(500));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(20)).await;
        queue.reset_at(&b, start + ms(19));
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), ["a", "b"]);
        assert!(ended);
    });
}

// ---------------------------------------------------------------------------
// The queue's one sleep follows its earliest item later too, so the waiting
// task is not woken with nothing due (tokio-util's `reset_entry` test).

#[test]
fn resetting_the_earliest_item_later_moves_the_queues_sleep() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert("x", ms(100));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.reset(&key, ms(200));
        advance(ms(150)).await;
        assert!(!waiting.is_woken(), "woken with nothing due");
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(50)).await;
        assert!(waiting.is_woken());
        let polled = poll_expired(&mut waiting, &mut queue);
        assert_eq!(assert_ready!(polled).unwrap().into_inner(), "x");
    });
}

/// tokio-util's `reset_entry`, step for step: the task polls again after
/// the reset.
#[test]
fn reset_entry_as_tokio_util_tests_it() {
    watched(|| async {
        let timer = Timer::builder()
            .tick(Duration::from_millis(1))
            .build()
            .unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        let now = Instant::now();
        let key = queue.insert_at("foo", now + ms(5));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(1)).await;
        queue.reset_at(&key, now + ms(10));
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(7)).await;
        assert!(!waiting.is_woken());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(2)).await;
        assert!(waiting.is_woken());
        let polled = poll_expired(&mut waiting, &mut queue);
        let expired = assert_ready!(polled).unwrap();
        assert_eq!(*expired.get_ref(), "foo");
        assert_eq!(expired.deadline(), now + ms(10));
    });
}

#[test]
fn resetting_the_earliest_item_to_never_does_not_wake_the_task_at_its_old_tick() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert("x", ms(100));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.reset(&key, Duration::MAX);
        advance(ms(150)).await;
        assert!(!waiting.is_woken(), "woken with nothing due");
        queue.remove(&key);
        assert!(waiting.is_woken(), "empty now");
    });
}

/// Removing the earliest item moves the sleep to the next one, past an item
/// whose deadline was moved later in place (it no longer counts at its old
/// tick).
#[test]
fn removing_the_earliest_item_moves_the_sleep_past_items_moved_later() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let x = queue.insert("x", ms(100));
        let y = queue.insert("y", ms(200));
        queue.insert("z", ms(400));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.reset(&y, ms(300)); // not the earliest: moved in place
        queue.remove(&x);
        advance(ms(250)).await;
        assert!(!waiting.is_woken(), "woken with nothing due");
        advance(ms(50)).await;
        assert!(waiting.is_woken());
        let polled = poll_expired(&mut waiting, &mut queue);
        assert_eq!(assert_ready!(polled).unwrap().into_inner(), "y");
    });
}

/// On an 8-slot ring (16 buckets, laps of 8 ticks) a queue whose ring is
/// empty waits for its first far lap's move-in tick (7 here, for items at
/// 18 and 20 ms). An item inserted later into the ring's next lap (12 ms)
/// leaves that wait alone; once the far lap's first item leaves, the sleep
/// waits for the ring's item, not for a move-in that can wait with it.
#[test]
fn removing_a_far_laps_head_moves_the_sleep_to_a_ring_item_inserted_since() {
    watched(|| async {
        let timer = Timer::builder().slots(8).build().unwrap();
        let mut queue = DelayQueue::with_timer(&timer);
        let far: Vec<Key> = [18, 20].map(|at| queue.insert(at, ms(at))).into();
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.insert(12, ms(12));
        // The later insert heads the far lap's list: removing it leaves the
        // lap a node of its own, so the sleep is moved, not dropped.
        queue.remove(&far[1]);
        advance(ms(10)).await;
        assert!(!waiting.is_woken(), "woken with nothing due");
        advance(ms(2)).await;
        assert!(waiting.is_woken());
        let polled = poll_expired(&mut waiting, &mut queue);
        assert_eq!(assert_ready!(polled).unwrap().into_inner(), 12);
        queue.remove(&far[0]);
        assert!(poll_expired(&mut waiting, &mut queue).is_ready(), "empty");
    });
}

// ---------------------------------------------------------------------------
// Storage.

/// `compact` trims the first page (which grows 8, 16, ... slots) to its last
/// item: one item left at the front of an 8-slot page leaves a capacity of
/// 2 (slots come in pairs; tokio-util's `compact`, which moves items, makes
/// it 1), and growth afterwards hands out no old key.
#[test]
fn compact_trims_the_first_page_to_its_last_item() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let keys: Vec<Key> = (0..3).map(|i| queue.insert(i, ms(60_000))).collect();
        queue.remove(&keys[1]);
        queue.remove(&keys[2]);
        assert_eq!(queue.capacity(), 8);
        queue.compact();
        assert_eq!(queue.capacity(), 2);
        assert_eq!(queue.len(), 1);
        // Growing again: no new key equals an old one, the kept key works.
        let more: Vec<Key> = (0..20).map(|i| queue.insert(i, ms(10))).collect();
        assert!(more.iter().all(|key| !keys.contains(key)));
        assert!(queue.capacity() >= 21);
        assert_eq!(queue.remove(&keys[0]).into_inner(), 0);
        assert!(queue.try_remove(&keys[1]).is_none());
        // tokio-util's doc example (the middle of three removed): the items
        // do not move, so the capacity stays at the last item (4, not 2).
        let mut queue = DelayQueue::with_capacity_and_timer(10, &timer);
        let _key1 = queue.insert(5, Duration::from_secs(5));
        let key2 = queue.insert(10, Duration::from_secs(10));
        let _key3 = queue.insert(15, Duration::from_secs(15));
        queue.remove(&key2);
        queue.compact();
        assert_eq!(queue.capacity(), 4);
    });
}

/// `new()`, `with_capacity()` and `Default` use the current runtime's default
/// timer, as tokio-util's queue uses the runtime's timer.
#[test]
fn new_uses_the_runtimes_default_timer() {
    watched(|| async {
        let mut queue = DelayQueue::new();
        let key = queue.insert("a", Duration::from_millis(100));
        let mut task = task::spawn(());
        assert!(poll_expired(&mut task, &mut queue).is_pending());
        assert_eq!(
            Timer::current().pending(),
            1,
            "its one sleep is on the default timer"
        );
        advance(Duration::from_millis(100)).await;
        assert!(task.is_woken());
        let expired = match poll_expired(&mut task, &mut queue) {
            Poll::Ready(Some(expired)) => expired,
            other => panic!("expected the item, got {other:?}"),
        };
        assert_eq!((expired.key(), expired.into_inner()), (key, "a"));

        let sized: DelayQueue<u8> = DelayQueue::with_capacity(100);
        assert!(sized.capacity() >= 100);
        let default: DelayQueue<u8> = DelayQueue::default();
        assert!(default.is_empty());
    });
}

/// A task waiting on the queue (it polled, and does not poll again until
/// woken) is woken at the tick of an item inserted earlier than what it
/// waited for, as tokio-util moves its sleep: the queue moves its one timer
/// entry, which keeps the task's waker.
#[test]
fn an_earlier_insert_wakes_the_waiting_task_at_its_tick() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(1, ms(500));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.insert(2, ms(100));
        advance(ms(90)).await;
        assert!(!waiting.is_woken(), "woken before the earlier item is due");
        advance(ms(10)).await;
        assert!(
            waiting.is_woken(),
            "not woken when the earlier item came due"
        );
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), 2);
    });
}

/// An item inserted later than what the waiting task waits for leaves its
/// wake-up where it was: the task is woken when the earlier item is due.
#[test]
fn a_later_insert_keeps_the_waiting_tasks_earlier_wake_up() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert(1, ms(100));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.insert(2, ms(500));
        advance(ms(100)).await;
        assert!(
            waiting.is_woken(),
            "not woken when the earlier item came due"
        );
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), 1);
    });
}

/// `is_empty` and `len` agree through inserts, removes and a drain.
#[test]
fn is_empty_follows_the_items() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        assert!(queue.is_empty());
        let key = queue.insert("a", ms(10));
        assert!(!queue.is_empty());
        queue.remove(&key);
        assert!(queue.is_empty());
        queue.insert("b", ms(10));
        assert!(!queue.is_empty());
        queue.next().await.unwrap();
        assert!(queue.is_empty());
        assert_eq!(queue.len(), 0);
    });
}

/// `Debug` shows the queue's state: its items, the last tick it processed,
/// and whether a task waits on it.
#[test]
fn debug_shows_len_the_processed_tick_and_a_waiting_task() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert("a", ms(30));
        queue.insert("b", ms(500));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        let shown = format!("{queue:?}");
        assert!(shown.contains("len: 2"), "{shown}");
        assert!(shown.contains("waiting: true"), "{shown}");
        advance(ms(30)).await;
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), "a");
        let shown = format!("{queue:?}");
        assert!(shown.contains("len: 1"), "{shown}");
        let elapsed_tick = ms(30).as_nanos() / timer.tick().as_nanos();
        assert!(
            shown.contains(&format!("elapsed_tick: {elapsed_tick},")),
            "{shown}"
        );
        assert!(shown.contains("waiting: false"), "{shown}");
    });
}

/// A queue's ring is its own memory, so it has at most 512 slots (4 KiB)
/// whatever the timer's, and the timer's when those are fewer.
#[test]
fn a_queues_ring_has_at_most_512_slots() {
    watched(|| async {
        let default = DelayQueue::<()>::with_timer(&Timer::new());
        assert!(
            format!("{default:?}").contains("ring_slots: 512,"),
            "{default:?}"
        );
        let small = Timer::builder().slots(64).build().unwrap();
        let small = DelayQueue::<()>::with_timer(&small);
        assert!(
            format!("{small:?}").contains("ring_slots: 64,"),
            "{small:?}"
        );
    });
}

/// The task woken by the next insert into an empty queue is the one that
/// polled it last, as with tokio-util's: a queue handed from one task to
/// another wakes the new one.
#[test]
fn an_insert_into_an_empty_queue_wakes_the_task_that_polled_it_last() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue: DelayQueue<u32> = DelayQueue::with_timer(&timer);
        let mut first = task::spawn(());
        let mut second = task::spawn(());
        assert!(poll_expired(&mut first, &mut queue).is_ready());
        assert!(poll_expired(&mut second, &mut queue).is_ready());
        queue.insert(1, ms(10));
        assert!(second.is_woken(), "the task that polled last was not woken");
        assert!(!first.is_woken());
    });
}

/// Ticks end where the timer's clock does (`i64::MAX` ns from its origin,
/// about 292 years): an item due on the last tick a clock can reach comes
/// out there, and one past it (but short of saturating) never does, and
/// never makes the waiting task spin or wake.
#[test]
fn the_last_reachable_tick_comes_due_and_the_one_after_never_does() {
    the_last_reachable_tick_on(Timer::builder());
    the_last_reachable_tick_on(Timer::builder().tick(COARSE));
}

/// The test above, on a timer of `settings` built at the start of a fresh
/// paused runtime (each run moves its clock 293 years on).
fn the_last_reachable_tick_on(settings: tickwheel::Builder) {
    watched(|| async move {
        let timer = settings.build().unwrap();
        let tick = timer.tick();
        let tick_ns = tick.as_nanos() as u64;
        let last_boundary = i64::MAX as u64 / tick_ns * tick_ns;
        let origin = Instant::now();
        let mut queue = DelayQueue::with_timer(&timer);
        let last = origin + Duration::from_nanos(last_boundary);
        queue.insert_at("last", last);
        queue.insert_at("past", last + Duration::from_nanos(1));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(last - Instant::now() - tick).await;
        // (Woken on the way, where the far item's lap moved into the ring.)
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(tick).await;
        assert!(waiting.is_woken(), "the last reachable tick never came due");
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), "last");
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(Duration::from_secs(365 * 24 * 3600)).await;
        assert!(
            !waiting.is_woken(),
            "an item past the last tick woke the task"
        );
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        assert_eq!(queue.len(), 1, "{tick:?}");
    });
}

/// The other way round: an item inserted with a passed deadline earlier
/// than items still in the ring that the clock has passed comes out before
/// them.
#[test]
fn a_passed_insert_earlier_than_passed_ring_items_comes_out_first() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        queue.insert_at("ring", start + ms(25));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(40)).await;
        queue.insert_at("passed", start + ms(12));
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), ["passed", "ring"]);
        assert!(ended);
    });
}

/// Removing the last of several passed items keeps the rest in deadline
/// order with a later passed insert: the queue's end of that list follows
/// the removal.
#[test]
fn removing_the_last_passed_item_keeps_later_passed_inserts_in_order() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        advance(ms(50)).await;
        queue.insert_at(10, start + ms(10));
        queue.insert_at(20, start + ms(20));
        let last = queue.insert_at(30, start + ms(30));
        queue.remove(&last);
        queue.insert_at(40, start + ms(40));
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), [10, 20, 40]);
        assert!(ended);
    });
}

/// A poll that finds nothing due marks every tick up to the clock processed
/// (what `Debug` shows as `elapsed_tick`), so later inserts and wake-ups
/// start from there.
#[test]
fn a_poll_with_nothing_due_marks_the_passed_ticks_processed() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        queue.insert("later", ms(500));
        advance(ms(100)).await;
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        let shown = format!("{queue:?}");
        let elapsed_tick = ms(100).as_nanos() / timer.tick().as_nanos();
        assert!(
            shown.contains(&format!("elapsed_tick: {elapsed_tick},")),
            "{shown}"
        );
    });
}

/// `peek` names exactly the item `poll_expired` hands out next, also among
/// items of one tick, and when an item inserted with a passed deadline waits
/// beside earlier ring items the clock has passed (as tokio-util's `peek`
/// names what comes out next).
#[test]
fn peek_is_what_comes_out_next_among_ties_and_passed_items() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        for i in 0..3 {
            queue.insert_at(i, start + ms(20));
        }
        queue.insert_at(9, start + ms(25));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(40)).await;
        queue.insert_at(5, start + ms(35)); // passed, after the ring's items
        while let Some(next) = queue.peek() {
            let expired = poll_expired(&mut waiting, &mut queue);
            let expired = assert_ready!(expired).unwrap();
            assert_eq!(
                expired.key(),
                next,
                "peek named another item than {}",
                expired.get_ref()
            );
        }
        assert!(queue.is_empty());
    });
}

/// An item waiting in the due list (its deadline passed, not yet taken
/// out) and reset to a later deadline waits for that deadline.
#[test]
fn a_passed_item_reset_later_waits_for_its_new_deadline() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let key = queue.insert("x", Duration::ZERO);
        queue.reset(&key, ms(100));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        advance(ms(100)).await;
        assert!(waiting.is_woken());
        let expired = poll_expired(&mut waiting, &mut queue);
        assert_eq!(*assert_ready!(expired).unwrap().get_ref(), "x");
    });
}

/// Far items (laps beyond the ring) removed by key: the queue finds the lap
/// of a list head from the low bits it keeps, including two laps 2^30 laps
/// apart that share those bits (about 17 years on the default 1 ms tick,
/// where a queue's ring has 512 slots; 174 years on 10 ms x 512: both short
/// of where the clock ends, 292 years).
#[test]
fn far_items_are_removed_from_their_own_lap() {
    watched(|| async {
        far_items_are_removed_from_their_own_lap_on(Timer::new()).await;
        let coarse = Timer::builder().tick(COARSE).slots(512).build().unwrap();
        far_items_are_removed_from_their_own_lap_on(coarse).await;
    });
}

async fn far_items_are_removed_from_their_own_lap_on(timer: Timer) {
    // The queue's own ring: at most 512 slots, whatever the timer's.
    let lap = timer.tick() * timer.slots().min(512) as u32;
    let mut queue = DelayQueue::with_timer(&timer);
    let start = Instant::now();
    let near = start + Duration::from_secs(30);
    let far = near + lap * (1 << 30);
    let a = queue.insert_at("a", near);
    let b = queue.insert_at("b", far);
    let c = queue.insert_at("c", start + Duration::from_secs(60));
    assert_eq!(*queue.remove(&b).get_ref(), "b");
    assert_eq!(*queue.remove(&c).get_ref(), "c");
    assert_eq!(queue.deadline(&a), near);
    assert_eq!(*queue.next().await.unwrap().get_ref(), "a");
    assert_eq!(Instant::now(), near);
    assert!(queue.is_empty());
}

/// Removing the last near item while a far one remains moves the waiting
/// task's wake-up to the far item's: it is not woken at the removed item's
/// tick with nothing due.
#[test]
fn removing_the_last_near_item_moves_the_wake_up_to_the_far_one() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let near = queue.insert("near", ms(100));
        queue.insert("far", Duration::from_secs(30));
        let mut waiting = task::spawn(());
        assert!(poll_expired(&mut waiting, &mut queue).is_pending());
        queue.remove(&near);
        advance(ms(100)).await;
        assert!(!waiting.is_woken(), "woken at the removed item's tick");
    });
}

/// Passed items inserted out of order come out in deadline order, also one
/// that belongs between two others.
#[test]
fn passed_inserts_out_of_order_come_out_in_deadline_order() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = DelayQueue::with_timer(&timer);
        let start = Instant::now();
        advance(ms(100)).await;
        for at in [10, 30, 40, 20, 50] {
            queue.insert_at(at, start + ms(at));
        }
        let (out, ended) = drain(&mut queue).await;
        assert_eq!(values(&out), [10, 20, 30, 40, 50]);
        assert!(ended);
    });
}

// ---------------------------------------------------------------------------
// Binding on first use: `new()` and `with_capacity()` need no runtime, as
// tokio-util's.

/// Made outside any runtime, a queue answers everything that needs no
/// clock, and polling it empty ends the stream at once, on any executor.
#[test]
fn a_queue_made_outside_a_runtime_works_until_it_needs_a_clock() {
    let _watchdog = common::Watchdog::start();
    let mut queue: DelayQueue<u32> = DelayQueue::new();
    assert!(queue.is_empty());
    assert_eq!(queue.len(), 0);
    queue.reserve(100);
    assert!(queue.capacity() >= 100);
    let sized: DelayQueue<u32> = DelayQueue::with_capacity(10);
    assert!(sized.capacity() >= 10);
    let defaulted: DelayQueue<u32> = DelayQueue::default();
    assert!(defaulted.is_empty());
    assert!(queue.peek().is_none());
    queue.clear();
    queue.compact();
    assert_eq!(
        futures::executor::block_on(queue.next()).map(|e| e.into_inner()),
        None
    );
    assert!(format!("{queue:?}").contains("timer: None"));
}

/// Its first insert, inside a runtime, puts it on that runtime's default
/// timer: the item comes out at its deadline, on that runtime's clock.
#[test]
fn a_queue_made_outside_binds_to_the_runtime_of_its_first_insert() {
    let mut queue: DelayQueue<&str> = DelayQueue::new();
    let queue = common::block_on_paused(async move {
        let start = Instant::now();
        let key = queue.insert("first", ms(250));
        assert_eq!(queue.deadline(&key), start + ms(250));
        // Its one sleep is on this runtime's default timer.
        assert_eq!(Timer::current().stats().live, 1);
        let expired = queue.next().await.unwrap();
        assert_eq!(expired.into_inner(), "first");
        assert_eq!(start.elapsed(), ms(250), "at its deadline, never early");
        queue
    });
    assert!(queue.is_empty());
}

/// Made in one runtime and first used in another, it binds to the second's
/// timer, as tokio-util's binds to the runtime of its first insert.
#[test]
fn a_queue_made_in_one_runtime_binds_to_the_one_it_is_first_used_in() {
    let mut queue: DelayQueue<u8> = common::block_on_paused(async { DelayQueue::new() });
    common::block_on_paused(async move {
        let start = Instant::now();
        queue.insert(7, Duration::from_secs(3));
        assert_eq!(queue.next().await.unwrap().into_inner(), 7);
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    });
}

/// An insert outside a runtime panics with tokio's kind of message (as
/// tokio-util's does), not somewhere inside the queue.
#[test]
#[should_panic(expected = "must be called from within a Tokio 1.x runtime")]
fn the_first_insert_outside_a_runtime_panics_clearly() {
    let mut queue: DelayQueue<u8> = DelayQueue::new();
    queue.insert(1, ms(10));
}

/// A stale key given to a queue that was never bound panics as a stale key,
/// without looking for a runtime.
#[test]
#[should_panic(expected = "DelayQueue::reset with a stale key")]
fn reset_on_a_never_bound_queue_panics_as_a_stale_key() {
    let key = common::block_on_paused(async {
        let mut other = DelayQueue::new();
        let key = other.insert(1u8, ms(10));
        other.remove(&key);
        key
    });
    let mut queue: DelayQueue<u8> = DelayQueue::new();
    assert!(queue.try_remove(&key).is_none());
    queue.reset(&key, ms(5));
}

// ---------------------------------------------------------------------------
// Far items: beyond the queue's ring (512 ticks), in its overflow array (up
// to 64 laps on) or its map (later), as most real items are (issue 26).

/// The ways an item becomes due at once: a zero delay or a passed instant,
/// inserted or reset to.
#[derive(Debug, Clone, Copy)]
enum MadeDue {
    InsertZero,
    InsertAtPassed,
    ResetZero,
    ResetAtPassed,
}

const PASSED: [MadeDue; 4] = [
    MadeDue::InsertZero,
    MadeDue::InsertAtPassed,
    MadeDue::ResetZero,
    MadeDue::ResetAtPassed,
];

/// Makes an item due at once in `queue`, the way `how` says: a new one,
/// `"passed"`, or the item of `spare` (not yet due), which the reset
/// variants move. Returns its key.
fn make_passed(
    queue: &mut DelayQueue<&'static str>,
    how: MadeDue,
    spare: &Key,
    past: Instant,
) -> Key {
    match how {
        MadeDue::InsertZero => queue.insert("passed", Duration::ZERO),
        MadeDue::InsertAtPassed => queue.insert_at("passed", past),
        MadeDue::ResetZero => {
            queue.reset(spare, Duration::ZERO);
            *spare
        }
        MadeDue::ResetAtPassed => {
            queue.reset_at(spare, past);
            *spare
        }
    }
}

/// An item that was far when inserted and whose deadline has passed comes
/// out before one inserted (or reset) due at once after that, when the
/// clock passed both with no poll of the queue in between, as tokio-util's
/// does; `peek` names it meanwhile. On the default tick (1.1 s: the
/// overflow array; 40 s: the map), on a tick that is not a whole number of
/// milliseconds, and on a timer built off tokio's millisecond grid.
#[test]
fn a_passed_insert_comes_out_behind_far_items_that_came_due_first() {
    watched(|| async {
        let odd_tick = || {
            Timer::builder()
                .tick(Duration::from_nanos(1_000_003))
                .build()
                .unwrap()
        };
        let timers: [(fn() -> Timer, u64); 3] = [(Timer::new, 0), (odd_tick, 0), (Timer::new, 337)];
        for (build, off_grid_us) in timers {
            for far in [ms(1_100), Duration::from_secs(40)] {
                for how in PASSED {
                    advance(Duration::from_micros(off_grid_us)).await;
                    let timer = build();
                    let mut queue = task::spawn(DelayQueue::with_timer(&timer));
                    let start = Instant::now();
                    let a = queue.insert("far", far);
                    let spare = queue.insert("spare", far * 3);
                    assert_pending!(queue.poll_next());
                    advance(far + ms(100)).await;
                    // Between the far item's deadline and now.
                    let past = start + far + ms(50);
                    let b = make_passed(&mut queue, how, &spare, past);
                    let case = format!("{how:?}, far {far:?}, tick {:?}", timer.tick());
                    let passed = match how {
                        MadeDue::InsertZero | MadeDue::InsertAtPassed => "passed",
                        MadeDue::ResetZero | MadeDue::ResetAtPassed => "spare",
                    };
                    assert_eq!(queue.peek(), Some(a), "{case}");
                    let first = assert_ready!(queue.poll_next()).unwrap();
                    assert_eq!(first.into_inner(), "far", "{case}");
                    assert_eq!(queue.peek(), Some(b), "{case}");
                    let second = assert_ready!(queue.poll_next()).unwrap();
                    assert_eq!(second.into_inner(), passed, "{case}");
                    if matches!(how, MadeDue::InsertZero | MadeDue::InsertAtPassed) {
                        assert_eq!(queue.peek(), Some(spare), "{case}");
                        assert_pending!(queue.poll_next());
                    } else {
                        assert!(assert_ready!(queue.poll_next()).is_none(), "{case}");
                    }
                }
            }
        }
    });
}

/// Removing the earliest far item, or moving it later, moves the waiting
/// task's wake-up to the next item: the task is not woken with nothing due
/// (as when the items are near, and as tokio-util's). Items at 20 s (the
/// overflow array) and 40 s, or at 40 s and 60 s (the map).
#[test]
fn removing_or_delaying_the_earliest_far_item_moves_the_wake_up() {
    watched(|| async {
        for (first, second) in [(20, 40), (40, 60)] {
            for delay in [false, true] {
                let timer = Timer::new();
                let mut queue = task::spawn(DelayQueue::with_timer(&timer));
                let start = Instant::now();
                let earliest = queue.insert("first", Duration::from_secs(first));
                queue.insert("second", Duration::from_secs(second));
                assert_pending!(queue.poll_next());
                if delay {
                    queue.reset(&earliest, Duration::from_secs(second + 40));
                } else {
                    queue.remove(&earliest);
                }
                let case = format!("{first} s and {second} s, delayed: {delay}");
                advance(Duration::from_secs(first + 5)).await;
                assert!(!queue.is_woken(), "woken with nothing due: {case}");
                assert_pending!(queue.poll_next());
                advance(Duration::from_secs(second - first - 5)).await;
                assert!(queue.is_woken(), "{case}");
                let out = assert_ready!(queue.poll_next()).unwrap();
                assert_eq!(out.into_inner(), "second", "{case}");
                assert_eq!(start.elapsed(), Duration::from_secs(second), "{case}");
            }
        }
    });
}

/// Items of the same far tick (beyond the ring when inserted, as items
/// inserted together with the same timeout are): `peek` names the one that
/// comes out next, each time.
#[test]
fn peek_names_what_comes_out_next_among_far_ties() {
    watched(|| async {
        for far in [Duration::from_secs(2), Duration::from_secs(60)] {
            let timer = Timer::new();
            let mut queue = task::spawn(DelayQueue::with_timer(&timer));
            for value in 0..3 {
                queue.insert(value, far);
            }
            assert_pending!(queue.poll_next());
            advance(far).await;
            assert!(queue.is_woken());
            for _ in 0..3 {
                let next = queue.peek();
                let out = assert_ready!(queue.poll_next()).unwrap();
                assert_eq!(next, Some(out.key()), "{far:?}, item {}", out.get_ref());
            }
            assert!(assert_ready!(queue.poll_next()).is_none());
        }
    });
}

/// A far item moved later in place just past the end of its lap, into the
/// first ticks of the next one: the waiting task's wake-up moves with it,
/// to when that next lap moves into the ring (at most a lap, 512 ms on the
/// default settings, before the deadline), not to when the old lap would
/// have. The item at 20 s is in the lap of ticks 19 968..20 479 ms; 20 480
/// and 20 481 ms are the first two ticks of the next.
#[test]
fn delaying_a_far_item_into_the_next_lap_moves_the_wake_up_with_it() {
    watched(|| async {
        for new_ms in [20_480, 20_481] {
            let timer = Timer::new();
            let mut queue = task::spawn(DelayQueue::with_timer(&timer));
            let start = Instant::now();
            let key = queue.insert("far", Duration::from_secs(20));
            assert_pending!(queue.poll_next());
            queue.reset(&key, ms(new_ms));
            advance(ms(new_ms - 580)).await;
            assert!(!queue.is_woken(), "woken over a lap early: {new_ms} ms");
            advance(ms(580)).await;
            assert!(queue.is_woken(), "{new_ms} ms");
            let out = assert_ready!(queue.poll_next()).unwrap();
            assert_eq!(out.into_inner(), "far");
            assert_eq!(start.elapsed(), ms(new_ms));
        }
    });
}

/// Removing the earliest near item while a later near item and a far one
/// remain moves the waiting task's wake-up to the later near item: it is
/// not woken at the removed item's tick with nothing due, also when that
/// tick is the one at which the far item's lap would move into the ring
/// (on the default settings, a lap is 512 ticks of 1 ms: 511 ms is the last
/// tick before the lap of 512..1023 ms becomes current, and so the move-in
/// tick of the lap of 1 100 ms).
#[test]
fn removing_the_earliest_near_item_beside_a_far_one_moves_the_wake_up() {
    watched(|| async {
        for removed in [100, 511] {
            let timer = Timer::new();
            let mut queue = task::spawn(DelayQueue::with_timer(&timer));
            let start = Instant::now();
            let earliest = queue.insert("first", ms(removed));
            queue.insert("second", ms(600));
            queue.insert("far", ms(1_100));
            assert_pending!(queue.poll_next());
            queue.remove(&earliest);
            advance(ms(550)).await;
            assert!(
                !queue.is_woken(),
                "woken at the removed item's tick: {removed} ms"
            );
            advance(ms(50)).await;
            assert!(queue.is_woken(), "{removed} ms");
            let out = assert_ready!(queue.poll_next()).unwrap();
            assert_eq!(out.into_inner(), "second");
            assert_eq!(start.elapsed(), ms(600));
            assert_pending!(queue.poll_next());
        }
    });
}

/// A far item moved later in place onto the tick of an item of the next far
/// lap, before any poll: `peek` names the one that comes out first. Found
/// by the issue-26 mutation run (RELIABILITY.md): `peek` named the moved
/// item while the other came out first.
#[test]
fn peek_names_what_comes_out_next_after_a_far_item_is_delayed_onto_a_later_laps_tie() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        let moved = queue.insert("moved", Duration::from_secs(20));
        queue.insert("there", ms(20_600));
        queue.reset(&moved, ms(20_600));
        let next = queue.peek();
        advance(ms(20_600)).await;
        let out = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(next, Some(out.key()), "came out: {}", out.get_ref());
        let next = queue.peek();
        let out = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(next, Some(out.key()), "came out: {}", out.get_ref());
    });
}

/// On a 10 ms tick, with the clock at 35 ms and no poll since: an item due
/// at 30 ms (its tick has begun) comes out before one inserted with the
/// passed deadline 33 ms (whose tick, 40 ms, has not).
#[test]
fn a_passed_insert_in_an_unbegun_tick_comes_out_after_a_ring_item_of_the_current_tick() {
    watched(|| async {
        let timer = coarse_timer();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        let start = Instant::now();
        queue.insert("ring", ms(30));
        assert_pending!(queue.poll_next());
        advance(ms(35)).await;
        queue.insert_at("passed", start + ms(33));
        let first = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(first.into_inner(), "ring");
        let second = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(second.into_inner(), "passed");
    });
}

/// Two near items (in the ring) moved later in place onto the tick of a
/// third, before any poll: `peek` names the one that comes out first, each
/// time.
#[test]
fn peek_names_what_comes_out_next_after_two_near_items_are_delayed_onto_a_tie() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        let a = queue.insert("a", ms(100));
        let b = queue.insert("b", ms(200));
        queue.insert("c", ms(300));
        queue.reset(&a, ms(300));
        queue.reset(&b, ms(300));
        advance(ms(300)).await;
        for _ in 0..3 {
            let next = queue.peek();
            let out = assert_ready!(queue.poll_next()).unwrap();
            assert_eq!(next, Some(out.key()), "came out: {}", out.get_ref());
        }
    });
}

/// An item delayed in place sits in the bucket of its old tick until its
/// bucket is tidied. When a later bucket's item comes out first, the
/// delayed item still comes out at its new deadline, not laps later.
#[test]
fn an_item_delayed_past_a_later_one_comes_out_at_its_new_deadline() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        let b = queue.insert("b", ms(100));
        queue.insert("a", ms(200));
        queue.reset(&b, ms(201)); // later: rewritten in place
        advance(ms(200)).await;
        let a = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(*a.get_ref(), "a");
        assert_pending!(queue.poll_next());
        advance(ms(1)).await;
        assert!(queue.is_woken());
        let b = assert_ready!(queue.poll_next()).unwrap();
        assert_eq!(*b.get_ref(), "b");
    });
}

/// Three items of one tick, the last inserted delayed in place: the other
/// two come out at the tick, one after the other, the delayed one at its
/// new deadline.
#[test]
fn items_beside_one_delayed_in_place_all_come_out_at_their_tick() {
    watched(|| async {
        let timer = Timer::new();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        queue.insert("a1", ms(100));
        queue.insert("a2", ms(100));
        let b = queue.insert("b", ms(100));
        queue.reset(&b, ms(300)); // later: rewritten in place
        advance(ms(100)).await;
        let mut out = Vec::new();
        out.push(*assert_ready!(queue.poll_next()).unwrap().get_ref());
        out.push(*assert_ready!(queue.poll_next()).unwrap().get_ref());
        out.sort();
        assert_eq!(out, ["a1", "a2"]);
        assert_pending!(queue.poll_next());
        advance(ms(200)).await;
        assert!(queue.is_woken());
        assert_eq!(*assert_ready!(queue.poll_next()).unwrap().get_ref(), "b");
    });
}

/// On a 10 ms tick at 25 ms, an insert whose deadline (21 ms) has passed
/// comes out at once, though its deadline rounds up to the 30 ms tick
/// that an item delayed in place (20 ms to 30 ms) now shares with it.
#[test]
fn a_passed_insert_comes_out_at_once_beside_a_ring_item_delayed_onto_its_tick() {
    watched(|| async {
        let timer = coarse_timer();
        let start = Instant::now();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        let r = queue.insert("r", ms(20));
        queue.reset(&r, ms(30)); // later: rewritten in place
        advance(ms(25)).await;
        queue.insert_at("p", start + ms(21));
        assert_eq!(*assert_ready!(queue.poll_next()).unwrap().get_ref(), "p");
        assert_pending!(queue.poll_next());
        advance(ms(5)).await;
        assert!(queue.is_woken());
        assert_eq!(*assert_ready!(queue.poll_next()).unwrap().get_ref(), "r");
    });
}

/// The same with a far item: on a 10 ms tick and 4 slots (a lap is 40 ms),
/// an item at 205 ms waits in the overflow; the clock passes its lap's
/// start with no poll, and a passed insert at 201 ms, which rounds up to
/// the same 210 ms tick, comes out at once.
#[test]
fn a_passed_insert_comes_out_at_once_beside_a_far_item_of_its_tick() {
    watched(|| async {
        let timer = Timer::builder().tick(COARSE).slots(4).build().unwrap();
        let start = Instant::now();
        let mut queue = task::spawn(DelayQueue::with_timer(&timer));
        queue.insert("far", ms(205));
        advance(ms(205)).await;
        queue.insert_at("p", start + ms(201));
        assert_eq!(*assert_ready!(queue.poll_next()).unwrap().get_ref(), "p");
        assert_pending!(queue.poll_next());
        advance(ms(5)).await;
        assert!(queue.is_woken());
        assert_eq!(*assert_ready!(queue.poll_next()).unwrap().get_ref(), "far");
    });
}
