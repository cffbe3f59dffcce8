//! [`DelayQueue`]: keyed items that come out once their deadline has passed,
//! on the wheel, with tokio-util's `DelayQueue` shapes.
//!
//! Switching from tokio-util is a `use` change:
//!
//! | tokio-util | tickwheel |
//! |---|---|
//! | `tokio_util::time::DelayQueue` | [`tickwheel::DelayQueue`](crate::DelayQueue) |
//! | `tokio_util::time::delay_queue::{Expired, Key}` | `tickwheel::delay_queue::{Expired, Key}` |
//! | `DelayQueue::new()`, `with_capacity(n)` | [`DelayQueue::new()`](DelayQueue::new), [`with_capacity(n)`](DelayQueue::with_capacity): the default timer of the runtime of the first insert; needs no runtime until then |
//! | | [`DelayQueue::with_timer`]`(&timer)`, [`DelayQueue::with_capacity_and_timer`]`(n, &timer)`: a timer you hold |
//!
//! Every other method takes the same arguments and returns the same shapes.
//! One behaves differently: [`compact`](DelayQueue::compact) never moves an
//! item, so `capacity()` can stay above `len()` after it, where
//! tokio-util's moves items to make them equal (see its docs).
//!
//! # Design
//!
//! The queue keeps its items in its own structure, which no lock guards (it
//! is `&mut self` throughout, as tokio-util's): the timer's own kind of
//! hashed wheel, of the timer's tick, holding the queue's values where a
//! timer shard's holds wakers: a slab of 24-byte slots plus a 4-byte
//! generation each (for a `u64` value), and a ring of at most 512 slots
//! whatever the timer's (about 4 KiB per queue, allocated by the first
//! insert; items up to 64 laps past the ring wait in an array, later ones in
//! a map). It
//! puts exactly one [`Sleep`] on the timer, set for the earliest tick that
//! holds an item and moved with a reset when that changes, so a queue of a
//! million items costs the timer one entry, and its task one waker.
//! Inserting, removing or resetting an item touches the timer only when a
//! task is waiting on the queue and the item comes due before everything
//! else in it.

// Internally the queue is split by concern: `key.rs` and `expired.rs` are
// the public handles, the timer's own wheel (`engine/wheel/`, a `Wheel<T>`
// of the queue's own) stores and orders the items, and this file reads the
// clock and drives the one sleep. (Not in the
// module docs: docs.rs readers cannot open these files.)

mod expired;
mod key;

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

pub use self::expired::Expired;
pub use self::key::Key;
use crate::engine::clock::Clock;
use crate::engine::shared::Shared;
use crate::engine::tick_div::TickDiv;
use crate::engine::wheel::{Deadline, Placed, Slab, Wheel, UNLINKED};
use crate::sleep::Sleep;
use crate::timer::Timer;

/// The most slots a queue's ring has. The ring is memory every queue pays
/// (4 bytes a bucket, two laps), and a service may keep a queue per
/// connection: 512 slots is 4 KiB, where the timer's default 8192 would be
/// 64 KiB. Items up to 64 laps beyond the ring (about 33 s at 1 ms) cost no
/// more to insert; later ones wait in a map (see the wheel's `overflow.rs`).
const QUEUE_SLOTS: usize = 512;

/// Slots of a queue's first page of storage: it doubles from there up to a
/// full page (1024), so a small queue stays small.
const FIRST_PAGE: usize = 8;

/// A queue of items that each come out once their deadline has passed:
/// tokio-util's `DelayQueue`, on the wheel.
///
/// Insert an item with a delay ([`insert`](DelayQueue::insert)) or a deadline
/// ([`insert_at`](DelayQueue::insert_at)) and keep the [`Key`] it returns to
/// [`remove`](DelayQueue::remove) it or [`reset`](DelayQueue::reset) its
/// deadline. [`poll_expired`](DelayQueue::poll_expired), or the queue as a
/// [`Stream`](futures_core::Stream), yields each item as an [`Expired`] once
/// its deadline has passed. Session expiry, cache entries with a time to
/// live, and tables of requests that time out are the usual jobs: one queue
/// and one task instead of a task and a sleep per entry.
///
/// # Precision
///
/// The queue measures time on its timer's clock and rounds each deadline up
/// to the timer's tick, as a [`Sleep`] does:
///
/// - **Never early.** An item never comes out before its deadline.
/// - **At most a tick late.** An item comes out once the timer's clock
///   has reached the first tick boundary at or after its deadline (plus the
///   time the runtime takes to run the task polling the queue). An item
///   inserted (or reset) with a zero delay, or a deadline already passed,
///   comes out on the next poll.
/// - **In deadline order, to a tick.** Items come out in the order of the
///   ticks their deadlines round up to; items of the same tick come out in
///   no particular order.
///
/// # Waking
///
/// `poll_expired` returns `Ready(None)` when the queue is empty, and the
/// task that saw it is woken by the next insert (as tokio-util's). Otherwise
/// it returns `Pending` with one sleep set on the timer for the earliest
/// item's tick (or, if every item waits for a deadline that never comes,
/// such as `Duration::MAX`, for no tick; and for an item beyond the queue's
/// ring, for the tick up to two ring laps before its own when it moves into
/// the ring, as tokio-util's wakes where its far levels cascade); an insert
/// or reset that comes due earlier moves that sleep, and so does removing
/// the earliest item or moving it later, near or far; removing the last
/// item, `clear`, or the timer shutting down wakes the task so it sees
/// `Ready(None)`: a task
/// waiting on the queue never hangs. Each
/// item it yields takes a unit of tokio's cooperative budget, so draining a
/// long run of due items yields to the scheduler, as tokio's channels do.
/// Unlike tokio-util's, the budget refuses the queue once at most (the poll
/// after the yield goes ahead whatever the budget), so a future racing the
/// queue in a `select!` that spends the budget on every poll never keeps
/// due items in.
///
/// # Shutdown
///
/// After the timer shuts down (`timer.shutdown()`, or the end of the runtime
/// hosting its driver), the queue can wait for nothing. `poll_expired` then
/// still yields every item whose deadline has passed on the timer's clock,
/// and after them returns `Ready(None)` instead of `Pending`: the stream
/// ends, never hangs and never spins on a dead timer, and no item comes out
/// early. The items that are not due stay in the queue, where `len`,
/// `remove`, `try_remove`, `peek` and `clear` still reach them;
/// [`Timer::is_shutdown`] tells this end from an empty queue.
///
/// # Memory
///
/// Each item costs its value plus 16 bytes (its deadline and two links),
/// rounded up to a multiple of 8 (or of the value's alignment, if larger),
/// plus 4 bytes of generation (more for values aligned to 16 bytes: 40 with
/// a `u128`): 28 bytes with a `u64` or a `u32` value, 20 with `()`, against
/// 56 in tokio-util's with a `u64`, and nothing on the timer. Storage grows
/// by pages of 1024 slots (the first page starts at 8 and doubles), never
/// copying a full page; a removed item's slot is reused at once. Items
/// never move, so [`compact`](DelayQueue::compact) and
/// [`shrink_to_fit`](DelayQueue::shrink_to_fit) keep every key valid
/// without a remapping table: they release whole pages that hold no item,
/// and trim the first page to its last item.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use futures::StreamExt;
/// use tickwheel::DelayQueue;
///
/// let timer = tickwheel::Timer::new();
/// let mut queue = DelayQueue::with_timer(&timer);
/// queue.insert("later", Duration::from_secs(2));
/// let soon = queue.insert("soon", Duration::from_secs(1));
/// let gone = queue.insert("cancelled", Duration::from_millis(500));
/// queue.remove(&gone);
/// queue.reset(&soon, Duration::from_secs(3)); // now the last
///
/// let mut order = Vec::new();
/// while let Some(expired) = queue.next().await {
///     order.push(expired.into_inner());
/// }
/// assert_eq!(order, ["later", "soon"]);
/// # }
/// ```
pub struct DelayQueue<T> {
    /// The items, on a wheel of the timer's tick.
    wheel: Wheel<T>,
    /// The last tick whose boundary the timer's clock was seen to reach.
    seen: u64,
    /// The tick the sleep is set for; [`ARMED_NEVER`] when it is set for a
    /// deadline that never comes, [`UNARMED`] when the queue does not know
    /// (it fired, or a wake completed it).
    armed: u64,
    /// The last poll returned `Pending` with the sleep registered: the task
    /// waits on the sleep's entry in the timer.
    parked: bool,
    /// The last poll returned `Pending` because tokio's budget was spent:
    /// the next poll goes ahead without taking a unit of it.
    refused: bool,
    /// The queue's timer: `None` until the first insert for a queue made
    /// by [`DelayQueue::new`] or [`DelayQueue::with_capacity`], which bind
    /// to the current runtime's default timer then, as tokio-util's binds to
    /// the current runtime on first use. A queue without one holds no item
    /// (an insert binds it first), so nothing that needs the clock runs
    /// before it is bound.
    bound: Option<Bound>,
    /// The task to wake on the next insert, after a poll found the queue
    /// empty.
    waker: Option<Waker>,
}

/// A queue's timer, and its one entry in it.
struct Bound {
    /// The queue's one timer entry.
    sleep: Sleep,
    /// Keeps the timer's driver running while the queue exists.
    timer: Timer,
}

/// [`DelayQueue::new`]: a queue on the default timer of the runtime its
/// first insert is made in; it needs no runtime until then.
impl<T> Default for DelayQueue<T> {
    fn default() -> Self {
        DelayQueue::new()
    }
}

impl<T> DelayQueue<T> {
    /// An empty queue on the current runtime's default timer
    /// ([`Timer::current`]): tokio-util's `DelayQueue::new`.
    ///
    /// Like tokio-util's, it needs no runtime to be made: it binds to the
    /// default timer of the runtime current at its first
    /// [`insert`](DelayQueue::insert) (or `insert_at`), so it can be built
    /// in a constructor, a `Default` impl or a `static` initialiser that
    /// runs outside one. Until then it holds a few words of placeholder
    /// buckets, and `len`,
    /// `capacity`, `reserve`, `try_remove`, `clear` and polling (an empty
    /// queue: `Ready(None)`) work anywhere.
    ///
    /// # Panics
    ///
    /// Never here. Its first insert panics outside a tokio runtime (as
    /// tokio-util's does), or as [`Timer::sleep`] when that runtime's
    /// default timer has shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::DelayQueue;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert("session", Duration::from_secs(30));
    /// let expired = queue.next().await.unwrap();
    /// assert_eq!(expired.into_inner(), "session");
    /// # }
    /// ```
    pub fn new() -> Self {
        DelayQueue::with_capacity(0)
    }

    /// An empty queue on the current runtime's default timer with room for
    /// at least `capacity` items: tokio-util's `DelayQueue::with_capacity`.
    /// Like [`new`](DelayQueue::new), it binds to the timer at its first
    /// insert and needs no runtime until then.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds the most items a queue can hold (about two
    /// billion), and on its first insert as [`new`](DelayQueue::new)'s.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue: tickwheel::DelayQueue<u64> = tickwheel::DelayQueue::with_capacity(1_000);
    /// assert!(queue.capacity() >= 1_000);
    /// # }
    /// ```
    #[track_caller]
    pub fn with_capacity(capacity: usize) -> Self {
        // Stands in until the first insert gives the queue its timer's
        // tick and slots: the smallest ring, never linked into (an unbound
        // queue holds no item).
        let mut queue = DelayQueue {
            wheel: Wheel::new(Slab::new(FIRST_PAGE), 1, 1, 0),
            seen: 0,
            armed: ARMED_NEVER,
            parked: false,
            refused: false,
            bound: None,
            waker: None,
        };
        queue.reserve(capacity);
        queue
    }

    /// An empty queue on `timer`.
    ///
    /// The queue holds one sleep of `timer` for its whole life, whatever it
    /// holds: it counts as one against a
    /// [`max_pending`](crate::Builder::max_pending) limit.
    ///
    /// # Panics
    ///
    /// As [`Timer::sleep`]: if the timer has shut down, or is at its
    /// `max_pending` limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue: DelayQueue<u64> = DelayQueue::with_timer(&timer);
    /// assert!(queue.is_empty());
    /// queue.insert(7, Duration::from_secs(1));
    /// assert_eq!(queue.len(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn with_timer(timer: &Timer) -> Self {
        DelayQueue::with_capacity_and_timer(0, timer)
    }

    /// An empty queue on `timer` with room for at least `capacity` items
    /// before it allocates.
    ///
    /// # Panics
    ///
    /// As [`with_timer`](DelayQueue::with_timer), and if `capacity` exceeds
    /// the most items a queue can hold (about a billion: 2^30 - 1,024).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let queue: DelayQueue<u64> = DelayQueue::with_capacity_and_timer(10_000, &timer);
    /// assert!(queue.capacity() >= 10_000);
    /// # }
    /// ```
    #[track_caller]
    pub fn with_capacity_and_timer(capacity: usize, timer: &Timer) -> Self {
        let mut queue = DelayQueue::with_capacity(capacity);
        queue.bind(timer);
        queue
    }

    /// Puts the queue on `timer`: its one sleep, and buckets of the timer's
    /// tick starting at the timer's clock now. Only while the queue holds
    /// no item.
    #[track_caller]
    fn bind(&mut self, timer: &Timer) {
        debug_assert!(self.bound.is_none() && self.wheel.slab.len() == 0);
        // A sleep that never fires until the queue sets it.
        let sleep = timer.sleep(Duration::MAX);
        let tick_ns = u64::try_from(timer.tick().as_nanos()).unwrap_or(u64::MAX);
        let now = sleep.shared().now_offset();
        let slots = timer.slots().min(QUEUE_SLOTS);
        self.seen = TickDiv::new(tick_ns).floor(Clock::wheel_ns(now));
        self.wheel.rebuild(slots, tick_ns, self.seen);
        // `Duration::MAX`: a deadline that never comes.
        self.armed = ARMED_NEVER;
        self.parked = false;
        self.bound = Some(Bound {
            sleep,
            timer: timer.clone(),
        });
    }

    /// Binds a queue made by `new` or `with_capacity` to the current
    /// runtime's default timer, the first time it needs a clock. The check
    /// is on every insert; the binding, once in a queue's life, is kept out
    /// of line.
    #[inline]
    #[track_caller]
    fn bind_to_current(&mut self) {
        if self.bound.is_none() {
            self.bind_to_current_slow();
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn bind_to_current_slow(&mut self) {
        self.bind(&Timer::current());
    }

    /// The queue's sleep. Every caller runs only on a bound queue: with an
    /// item in it, or parked on its sleep.
    fn sleep_mut(&mut self) -> &mut Sleep {
        &mut self
            .bound
            .as_mut()
            .expect("tickwheel: an unbound DelayQueue has no sleep")
            .sleep
    }

    fn shared(&self) -> &Shared {
        self.bound
            .as_ref()
            .expect("tickwheel: an unbound DelayQueue has no clock")
            .sleep
            .shared()
    }

    /// Inserts `value`, to come out `timeout` from now, and returns its key.
    ///
    /// A zero `timeout` makes the item due at once: the next poll yields it.
    /// A `timeout` too long for the clock (such as `Duration::MAX`)
    /// saturates: the item never comes out, and stays until removed.
    ///
    /// # Panics
    ///
    /// If the queue already holds about a billion items (2^30 - 1,024), the
    /// most it can address.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let start = Instant::now();
    /// queue.insert("ping", Duration::from_millis(250));
    /// let expired = std::future::poll_fn(|cx| queue.poll_expired(cx)).await.unwrap();
    /// assert_eq!(expired.into_inner(), "ping");
    /// assert!(start.elapsed() >= Duration::from_millis(250));
    /// # }
    /// ```
    #[track_caller]
    pub fn insert(&mut self, value: T, timeout: Duration) -> Key {
        self.bind_to_current();
        let offset = self.offset_after(timeout);
        self.insert_offset(value, offset, timeout.is_zero())
    }

    /// Inserts `value`, to come out at `when`, and returns its key.
    ///
    /// A deadline already passed makes the item due at once: the next poll
    /// yields it.
    ///
    /// # Panics
    ///
    /// As [`insert`](DelayQueue::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let when = Instant::now() + Duration::from_secs(5);
    /// let key = queue.insert_at("report", when);
    /// assert_eq!(queue.deadline(&key), when);
    /// # }
    /// ```
    #[track_caller]
    pub fn insert_at(&mut self, value: T, when: Instant) -> Key {
        self.bind_to_current();
        let (offset, due) = self.offset_at(when);
        self.insert_offset(value, offset, due)
    }

    #[track_caller]
    fn insert_offset(&mut self, value: T, offset: i64, due: bool) -> Key {
        let Ok(key) = self.wheel.slab.put(value, Deadline::new(offset), UNLINKED) else {
            panic!(
                "tickwheel: a DelayQueue holds {} items, the most it can address",
                self.len()
            );
        };
        let placed = self.wheel.link(key.index, due);
        self.wake_for(placed);
        Key::from(key)
    }

    /// The offset of `timeout` from now on the timer's clock, saturating.
    fn offset_after(&self, timeout: Duration) -> i64 {
        let shared = self.shared();
        shared.clock.offset_after(shared.now(), timeout)
    }

    /// The offset of `when`, and whether it has passed: without reading the
    /// clock if its tick is known to have passed, else against a reading.
    fn offset_at(&self, when: Instant) -> (i64, bool) {
        let shared = self.shared();
        let offset = shared.clock.offset(when);
        let due = self.wheel.tick_of(Clock::wheel_ns(offset)) <= self.seen
            || shared.clock.passed(offset, shared.now_offset());
        (offset, due)
    }

    /// Removes the item of `key` and returns it, whether or not its deadline
    /// has passed.
    ///
    /// # Panics
    ///
    /// If `key` is stale (its item was removed, has expired, or the queue was
    /// cleared), as tokio-util's does. Use
    /// [`try_remove`](DelayQueue::try_remove) when the item may be gone.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let key = queue.insert("request 42", Duration::from_secs(30));
    /// // The reply came: the request no longer times out.
    /// assert_eq!(queue.remove(&key).into_inner(), "request 42");
    /// assert!(queue.is_empty());
    /// # }
    /// ```
    #[track_caller]
    pub fn remove(&mut self, key: &Key) -> Expired<T> {
        self.try_remove(key)
            .unwrap_or_else(|| stale_key("remove", key))
    }

    /// Removes the item of `key` and returns it, or returns `None` if `key`
    /// is stale (its item was removed, has expired, or the queue was
    /// cleared). A stale key never reaches a later item.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let key = queue.insert(1, Duration::from_secs(1));
    /// assert!(queue.try_remove(&key).is_some());
    /// assert!(queue.try_remove(&key).is_none());
    /// # }
    /// ```
    pub fn try_remove(&mut self, key: &Key) -> Option<Expired<T>> {
        self.wheel.slab.get(key.slab_key())?;
        // It may be what the sleep waits for: the head of the bucket of its
        // tick, or of a far lap. An item due later, or below a head that
        // stays, cannot be.
        let waited_for = self.wheel.may_hold_the_wake(key.index, self.armed);
        self.wheel.unlink(key.index);
        let (item, key) = self.wheel.slab.remove(key.index);
        if self.wheel.slab.len() == 0 {
            // A task waiting on the queue sees it empty (`Ready(None)`).
            self.wake_parked();
        } else if waited_for {
            self.rearm();
        }
        Some(self.expired(item.payload, item.deadline, key.into()))
    }

    /// Moves the deadline of `key`'s item to `timeout` from now, keeping its
    /// key. A zero `timeout` makes it due at once.
    ///
    /// # Panics
    ///
    /// If `key` is stale, as tokio-util's does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let session = queue.insert("alice", Duration::from_secs(60));
    /// // Alice is active again: her session lasts another minute from now.
    /// queue.reset(&session, Duration::from_secs(60));
    /// assert_eq!(queue.deadline(&session), Instant::now() + Duration::from_secs(60));
    /// # }
    /// ```
    #[track_caller]
    pub fn reset(&mut self, key: &Key, timeout: Duration) {
        // A stale key (on an unbound queue, every key) panics before the
        // clock is read.
        self.check_key("reset", key);
        let offset = self.offset_after(timeout);
        self.reset_offset(key, offset, timeout.is_zero());
    }

    /// Moves the deadline of `key`'s item to `when`, keeping its key. A
    /// deadline already passed makes it due at once.
    ///
    /// # Panics
    ///
    /// If `key` is stale, as tokio-util's does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let key = queue.insert("lease", Duration::from_secs(30));
    /// let sooner = Instant::now() + Duration::from_secs(10);
    /// queue.reset_at(&key, sooner);
    /// assert_eq!(queue.deadline(&key), sooner);
    /// # }
    /// ```
    #[track_caller]
    pub fn reset_at(&mut self, key: &Key, when: Instant) {
        self.check_key("reset_at", key);
        let (offset, due) = self.offset_at(when);
        self.reset_offset(key, offset, due);
    }

    #[track_caller]
    fn check_key(&self, method: &str, key: &Key) {
        if self.wheel.slab.get(key.slab_key()).is_none() {
            stale_key(method, key);
        }
    }

    /// Moves the item of `key`, which the caller checked is live.
    fn reset_offset(&mut self, key: &Key, offset: i64, due: bool) {
        let deadline = Deadline::new(offset);
        // Later, in a ring bucket or a far lap: the deadline moves in place,
        // and the item is linked again when its list comes round. Nothing to
        // wake: it comes due later than before; but if it was what the
        // waiting task waits for, the sleep moves later.
        let waited_for = self.wheel.may_hold_the_wake(key.index, self.armed);
        if !due && self.wheel.extend(key.index, deadline).is_some() {
            if waited_for {
                self.rearm();
            }
            return;
        }
        self.wheel.unlink(key.index);
        self.wheel.slab.at_mut(key.index).deadline = deadline;
        let placed = self.wheel.link(key.index, due);
        self.wake_for(placed);
        if waited_for && placed == Placed::Never {
            // Moved later, out of reach: the sleep waits for what is left.
            self.rearm();
        }
    }

    /// The deadline of `key`'s item: the instant it was inserted or last
    /// reset with (deadlines too far for the clock saturate, about 292 years
    /// out).
    ///
    /// # Panics
    ///
    /// If `key` is stale, as tokio-util's does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let key = queue.insert((), Duration::from_secs(3));
    /// assert_eq!(queue.deadline(&key), Instant::now() + Duration::from_secs(3));
    /// # }
    /// ```
    #[track_caller]
    pub fn deadline(&self, key: &Key) -> Instant {
        match self.wheel.slab.get(key.slab_key()) {
            Some(item) => self.instant_at(item.deadline),
            None => stale_key("deadline", key),
        }
    }

    /// The key of the item that comes out next (one of those whose deadline
    /// rounds up to the earliest tick), whether or not it is due yet; `None`
    /// if the queue is empty. The answer holds until the queue changes: by
    /// an insert, reset or remove, or, among items of one tick, by a poll
    /// that finds nothing due (it files items whose deadline moved later
    /// under their new tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// assert_eq!(queue.peek(), None);
    /// queue.insert("b", Duration::from_secs(20));
    /// let first = queue.insert("a", Duration::from_secs(10));
    /// assert_eq!(queue.peek(), Some(first));
    /// # }
    /// ```
    pub fn peek(&self) -> Option<Key> {
        self.wheel
            .peek()
            .map(|index| Key::from(self.wheel.slab.key_at(index)))
    }

    /// The next item whose deadline has passed, as tokio-util's
    /// `poll_expired`.
    ///
    /// - `Ready(Some(expired))`: an item whose deadline has passed (see the
    ///   precision rules on [`DelayQueue`]); it has left the queue.
    /// - `Ready(None)`: the queue is empty (or its timer has shut down and
    ///   nothing left in it is due). The task is woken by the next insert.
    /// - `Pending`: items are waiting; the task is woken when the earliest
    ///   comes due, or when an insert, reset or remove changes that.
    ///
    /// Each `Ready` takes a unit of tokio's cooperative budget; a poll the
    /// budget refused (it returned `Pending` and woke the task to yield)
    /// makes the next one go ahead whatever the budget.
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe. An item leaves the queue only in the
    /// `Ready(Some)` that returns it, so a future built on it (the queue's
    /// `next()` from `StreamExt`, say) that is dropped before it completes,
    /// as the losing branch of `tokio::select!` is, loses no item: the item
    /// stays in the queue and the next poll yields it. The queue's own
    /// timer entry stays with the queue.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// queue.insert("x", Duration::from_millis(30));
    /// let x = poll_fn(|cx| queue.poll_expired(cx)).await;
    /// assert_eq!(x.unwrap().into_inner(), "x");
    /// assert!(poll_fn(|cx| queue.poll_expired(cx)).await.is_none());
    /// # }
    /// ```
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        // The budget refuses the queue once at most, as it does a sleep: a
        // future racing the queue that spends the budget on every poll must
        // not keep due items from ever coming out.
        let coop = if std::mem::take(&mut self.refused) {
            None
        } else {
            match tokio::task::coop::poll_proceed(cx) {
                Poll::Ready(coop) => Some(coop),
                Poll::Pending => {
                    self.refused = true;
                    return Poll::Pending;
                }
            }
        };
        let made_progress = || {
            if let Some(coop) = &coop {
                coop.made_progress();
            }
        };
        self.parked = false;
        // The clock is read at most once per sleep that completes: due
        // items found by an earlier reading come out without one.
        let mut read = false;
        loop {
            if let Some(index) = self.wheel.pop_due(self.seen) {
                made_progress();
                let (item, key) = self.wheel.slab.remove(index);
                return Poll::Ready(Some(self.expired(item.payload, item.deadline, key.into())));
            }
            if self.wheel.slab.len() == 0 {
                self.keep_waker(cx);
                made_progress();
                return Poll::Ready(None);
            }
            if !read {
                read = true;
                let now = self.tick_floor(self.shared().now_offset());
                if now > self.seen {
                    self.seen = now;
                    continue;
                }
            }
            self.wheel.settle(self.seen);
            if self.shared().is_shutdown() {
                // Nothing can wait any more; what is due has come out.
                made_progress();
                return Poll::Ready(None);
            }
            let (tick, deadline) = self.next_wake();
            // The tick is after the reading just made; if its boundary has
            // passed since, the wheel completes the sleep at once.
            if tick != self.armed && !self.arm(tick, deadline) {
                continue; // shut down: the check above ends the poll
            }
            match self.sleep_mut().poll_unbudgeted(cx) {
                Poll::Pending => {
                    self.parked = true;
                    return Poll::Pending;
                }
                Poll::Ready(()) => {
                    // The tick's boundary has passed (or the timer shut
                    // down): read the clock again.
                    self.armed = UNARMED;
                    read = false;
                }
            }
        }
    }

    /// The number of items in the queue, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// queue.insert('a', Duration::from_secs(1));
    /// queue.insert('b', Duration::ZERO);
    /// assert_eq!(queue.len(), 2);
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.wheel.slab.len()
    }

    /// `true` if the queue holds no item.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = tickwheel::Timer::new();
    /// let queue: tickwheel::DelayQueue<()> = tickwheel::DelayQueue::with_timer(&timer);
    /// assert!(queue.is_empty());
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.wheel.slab.len() == 0
    }

    /// The number of items the queue can hold without allocating: its
    /// allocated slots, occupied or not.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// assert_eq!(queue.capacity(), 0);
    /// queue.insert(1u64, Duration::from_secs(1));
    /// assert!(queue.capacity() >= 1);
    /// # }
    /// ```
    pub fn capacity(&self) -> usize {
        self.wheel.slab.capacity()
    }

    /// Makes room for at least `additional` more items without allocating.
    ///
    /// # Panics
    ///
    /// If that would take the queue past the most items it can address
    /// (about a billion: 2^30 - 1,024).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue: DelayQueue<u64> = DelayQueue::with_timer(&timer);
    /// queue.reserve(5_000);
    /// assert!(queue.capacity() >= 5_000);
    /// # }
    /// ```
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        assert!(
            self.wheel.slab.reserve(additional),
            "tickwheel: DelayQueue capacity overflow (at most about a billion items)"
        );
    }

    /// Removes every item. Every key handed out so far becomes stale; the
    /// capacity stays. A task waiting on the queue is woken and sees
    /// `Ready(None)`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let key = queue.insert("a", Duration::from_secs(1));
    /// queue.clear();
    /// assert!(queue.is_empty());
    /// assert!(queue.try_remove(&key).is_none());
    /// # }
    /// ```
    pub fn clear(&mut self) {
        let had_items = self.wheel.slab.len() > 0;
        self.wheel.clear(drop);
        if had_items {
            self.wake_parked();
        }
    }

    /// Releases the memory of every page of slots (1024 each) that holds no
    /// item, wherever it is, and trims the first page (which grows from 8
    /// slots up to 1024) to its last item. Items never move, so every key
    /// stays valid without a remapping table.
    ///
    /// # Differences from tokio-util
    ///
    /// tokio-util's `compact` moves items (remapping their keys) so that
    /// `capacity()` equals `len()` afterwards. Here `capacity()` afterwards
    /// counts the first page's slots up to its last item (in pairs), plus
    /// 1024 for every later page that still holds an item, so it can stay
    /// above `len()`: one item left at the front of the first page leaves a
    /// capacity of 2 (tokio-util: 1), one left on a later page 1024.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let keys: Vec<_> = (0..10_000).map(|i| queue.insert(i, Duration::from_secs(60))).collect();
    /// for key in &keys[..9_000] {
    ///     queue.remove(key);
    /// }
    /// let before = queue.capacity();
    /// queue.compact();
    /// assert!(queue.capacity() < before);
    /// assert_eq!(*queue.remove(&keys[9_500]).get_ref(), 9_500);
    ///
    /// // The first page is trimmed to its last item, in pairs of slots.
    /// let mut small = DelayQueue::with_timer(&timer);
    /// let keys: Vec<_> = (0..3).map(|i| small.insert(i, Duration::from_secs(60))).collect();
    /// small.remove(&keys[1]);
    /// small.compact();
    /// assert_eq!((small.len(), small.capacity()), (2, 4)); // tokio-util: (2, 2)
    /// # }
    /// ```
    pub fn compact(&mut self) {
        self.wheel.slab.release_empty_pages(true);
    }

    /// Releases the memory of the pages of slots at the end of the queue's
    /// storage that hold no item (trimming the first page to its last item
    /// if the others are all released). Cheaper than
    /// [`compact`](DelayQueue::compact), which also releases empty pages
    /// between occupied ones.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut queue = DelayQueue::with_timer(&timer);
    /// let keys: Vec<_> = (0..10_000).map(|i| queue.insert(i, Duration::from_secs(60))).collect();
    /// for key in &keys[1_000..] {
    ///     queue.remove(key);
    /// }
    /// queue.shrink_to_fit();
    /// assert!(queue.capacity() < 2_000);
    /// # }
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.wheel.slab.release_empty_pages(false);
    }

    fn expired(&self, data: T, deadline: Deadline, key: Key) -> Expired<T> {
        Expired {
            data,
            deadline: self.instant_at(deadline),
            key,
        }
    }

    fn instant_at(&self, deadline: Deadline) -> Instant {
        self.shared().clock.instant_at(deadline.offset())
    }

    /// After linking an item: wakes the waiting task if the item changes
    /// what it waits for.
    fn wake_for(&mut self, placed: Placed) {
        if placed == Placed::Due {
            self.catch_up();
        }
        if self.parked {
            match placed {
                Placed::Due => self.wake_parked(),
                Placed::At(tick) if tick < self.armed => {
                    // The sleep keeps its waker: the task is woken at the
                    // earlier tick without polling again first.
                    self.arm(tick, self.boundary(tick));
                }
                Placed::At(_) | Placed::Never => {}
            }
        }
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// What the sleep must be set for now that nothing is due: the tick to
    /// store in `armed` and the sleep's deadline.
    fn next_wake(&mut self) -> (u64, i64) {
        match self.wheel.next_wake() {
            Some(tick) => (tick, self.boundary(tick)),
            // Only items that never come due: the task still waits on the
            // sleep (set for a deadline that never comes), not on a waker of
            // the queue's own, so that removing the last item or clearing
            // wakes it as at any tick, and so does the timer's shutdown,
            // which only reaches the timer's entries.
            None => (ARMED_NEVER, i64::MAX),
        }
    }

    /// After the earliest item may have left its tick (removed, or moved
    /// later in place): moves the waiting task's sleep to what it waits for
    /// now, so it is not woken for a tick with nothing due (tokio-util moves
    /// its sleep too). A task that is not waiting sets the sleep on its next
    /// poll.
    fn rearm(&mut self) {
        // The common case, and the cheap check: the sleep is still set for
        // the earliest tick.
        if !self.parked || self.wheel.still_waits_for(self.armed) {
            return;
        }
        let (tick, deadline) = self.next_wake();
        // The sleep keeps its waker.
        if tick != self.armed {
            self.arm(tick, deadline);
        }
    }

    /// Sets the queue's sleep for `tick`, whose sleep deadline is
    /// `deadline`, and records it in `armed`. Returns `false` (and records
    /// nothing) if the timer has shut down: its task was woken already.
    fn arm(&mut self, tick: u64, deadline: i64) -> bool {
        let armed = Pin::new(self.sleep_mut())
            .try_reset_offset(deadline, Some(i64::MIN))
            .is_ok();
        if armed {
            self.armed = tick;
        }
        armed
    }

    /// Moves `seen` up to the clock, after linking an item as due. The due
    /// list hands out its items ahead of every ring tick after `seen`, but
    /// the clock may have passed such ticks since the queue last looked (an
    /// advance with no poll); their items are due too, and earlier than the
    /// new one, so they must count as due before it comes out.
    fn catch_up(&mut self) {
        let now = self.tick_floor(self.shared().now_offset());
        self.seen = self.seen.max(now);
    }

    /// The last tick whose boundary a clock reading `now` (an offset) has
    /// reached.
    fn tick_floor(&self, now: i64) -> u64 {
        self.wheel.tick_floor(Clock::wheel_ns(now))
    }

    /// The offset of tick `tick`'s boundary.
    fn boundary(&self, tick: u64) -> i64 {
        self.wheel.boundary(tick) as i64
    }

    /// Wakes the task waiting on the sleep now, by completing the sleep.
    fn wake_parked(&mut self) {
        if std::mem::take(&mut self.parked) {
            // A deadline at the clock's reading completes the sleep and wakes
            // its task; a shut-down timer has woken it already.
            let _ = Pin::new(self.sleep_mut()).try_reset_offset(i64::MIN, Some(i64::MIN));
            self.armed = UNARMED;
        }
    }

    /// Keeps the polling task's waker for the next insert to wake.
    fn keep_waker(&mut self, cx: &Context<'_>) {
        match &self.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => self.waker = Some(cx.waker().clone()),
        }
    }
}

/// [`DelayQueue::armed`] when the queue does not know what its sleep is set
/// for. Above every tick (ticks stop at `i64::MAX` nanoseconds), so any tick
/// compares earlier.
const UNARMED: u64 = u64::MAX;

/// [`DelayQueue::armed`] when the sleep is set for a deadline that never
/// comes; also above every tick.
const ARMED_NEVER: u64 = u64::MAX - 1;

#[track_caller]
fn stale_key(method: &str, key: &Key) -> ! {
    panic!(
        "tickwheel: DelayQueue::{method} with a stale key {key:?}: its item was removed, \
         has expired, or the queue was cleared (try_remove returns None instead)"
    )
}

// No `T` is ever pinned: the queue moves its values freely.
impl<T> Unpin for DelayQueue<T> {}

impl<T> futures_core::Stream for DelayQueue<T> {
    type Item = Expired<T>;

    /// [`poll_expired`](DelayQueue::poll_expired): the stream ends
    /// (`None`) whenever the queue is empty, and yields again after an
    /// insert, as tokio-util's. Cancel safe, as `poll_expired` is: a
    /// dropped `next()` loses no item.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("bytes", &self.wheel.slab.allocated_bytes())
            .field("elapsed_tick", &self.wheel.elapsed())
            .field("ring_slots", &self.wheel.slots())
            .field("waiting", &self.parked)
            .field("timer", &self.bound.as_ref().map(|bound| &bound.timer))
            .finish()
    }
}
