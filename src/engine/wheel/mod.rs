//! One shard's hashed wheel: a ring of buckets covering the current and the
//! next revolution, and an overflow level for later ones.
//!
//! ```text
//!  lap = tick >> shift (a lap is one revolution of `slots` ticks)
//!  slot = tick & mask  (the ring has 2 * slots buckets: two laps)
//!
//!  ring: laps C and C + 1           overflow: one list per later lap
//!  +----+----+-- .. --+----+-- .. --+     laps C+2 .. C+65: an array + bits
//!  | lap C half       | lap C+1 half|     later laps: BTreeMap<lap, head>
//!  +----+----+-- .. --+----+-- .. --+     { C+2: a -> b,  C+9: c, C+900: d }
//!  bitmap: one bit per non-empty bucket
//! ```
//!
//! Invariants (checked by the unit tests below and by `debug_assert!`s):
//! - every tick `<= elapsed` has been processed: its bucket is empty;
//! - with `C = lap(elapsed + 1)`, the ring holds exactly the entries whose
//!   tick lies in lap `C` or `C + 1`, each in bucket `tick & mask`. Two
//!   consecutive laps use the two halves of the ring, so a bucket only ever
//!   holds entries of one tick, and every deadline less than one revolution
//!   away (the common case: a 5 s timeout on the default 8.192 s wheel) goes
//!   straight into the ring;
//! - the overflow holds the entries of laps `C + 2` and later, one list per
//!   lap (`overflow.rs`: an array slot for the next 64 laps, a map entry past
//!   them).
//!   When lap `C + 1` becomes current, lap `C + 2`'s list moves into the ring
//!   in one walk, so a far-future timer is touched once on its way in, never
//!   once per revolution as in Netty's `remainingRounds` (Kafka and Linux
//!   avoid that walk the same way).
//!
//! Lists are doubly linked by slab key, so removing an entry is O(1) and its
//! slot is free for reuse at once; it never waits for its bucket's turn.
//!
//! A reset to a later deadline leaves the entry where it is and records how
//! many ticks its list is ahead of it (`Entry::lag`): when that list comes
//! due, the entry moves to where its deadline belongs instead of firing. So
//! the lists are exact for every entry with no lag, and early (never late)
//! for the others.
//!
//! Entries the clock can never reach (a saturated deadline such as
//! `Duration::MAX`, or a tick past the last one the driver's clock can
//! express) sit in a separate `never` list: they are woken by shutdown, but
//! nothing ever schedules a driver wake-up for them.
//!
//! The wheel knows nothing of locks, tasks or clocks: the shard wraps it in a
//! mutex, and the driver tells it what time it is. The ring's arithmetic
//! (laps, buckets, when a far lap moves in) is in `ring.rs`; this file does
//! the list surgery.

pub(crate) mod bitmap;
pub(crate) mod overflow;
pub(crate) mod ring;
mod slab;
#[cfg(test)]
pub(crate) mod watchdog;

use std::task::Waker;

use self::bitmap::Bitmap;
use self::overflow::Overflow;
use self::ring::Ring;
pub(crate) use self::slab::Key;
pub(crate) use self::slab::MAX_KEY;
use self::slab::{Slab, MAX_LAG, NIL};
use crate::engine::lateness::LatenessHistogram;
use crate::engine::prefetch;
use crate::engine::tick_div::TickDiv;

/// Deadlines at or past this many nanoseconds since the origin have
/// saturated (`Duration::MAX`, or instants about 292 years away): they never
/// fire. The driver's clock saturates here too.
pub(crate) const SATURATED: u64 = i64::MAX as u64;

/// The tick a deadline `ns` nanoseconds after the origin is filed under, on
/// ticks of `tick`: the first boundary at or after it, except that a
/// saturated deadline belongs to no tick the clock ever processes: it gets
/// the one after the last (`SATURATED / tick + 1`). The clock saturates at
/// `SATURATED` too, so when the tick divides it (2^63 - 1 = 7^2 x 73 x 127
/// x 337 x 92,737 x 649,657: a tick of `i64::MAX` ns, or of a seventh of
/// it) the last boundary the clock reaches is the horizon itself, and the
/// plain ceiling would file "never" under a tick the driver processes once
/// the clock gets there. The wheel, a sleep's lock-free check that it fired
/// and the `DelayQueue` all take a deadline's tick from here.
#[inline]
pub(crate) fn deadline_tick(tick: TickDiv, ns: u64) -> u64 {
    if ns >= SATURATED {
        tick.floor(SATURATED) + 1
    } else {
        tick.ceil(ns)
    }
}

/// What happened to a registration attempt.
#[derive(Debug)]
pub(crate) enum Insert {
    /// Linked into the wheel; it will fire at `tick` (`u64::MAX`: never).
    Registered { key: Key, tick: u64 },
    /// The deadline's tick was already processed: the deadline has passed.
    Elapsed,
    /// The timer has shut down; nothing will ever fire again.
    Shutdown,
    /// Every key of this shard is in use (billions of timers).
    NoKeys,
}

/// What happened to a reset of a registered entry.
#[derive(Debug)]
pub(crate) enum Reset {
    /// Relinked under the new deadline, which fires at `tick` (`u64::MAX`:
    /// never).
    Moved { tick: u64 },
    /// The new deadline's tick was already processed: the entry is removed and
    /// its waker returned so the caller can wake it.
    Elapsed(Waker),
    /// The entry had already fired or been cancelled.
    Stale,
}

/// The outcome of [`Wheel::check_waker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakerCheck {
    /// The entry already fired or was cancelled.
    Gone,
    /// The stored waker already wakes the same task.
    Same,
    /// The stored waker wakes another task: swap in a clone of the new one.
    Different,
}

/// Where the driver stands with this wheel after an [`Wheel::advance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advance {
    /// Nothing registered can ever come due (the wheel is empty, or holds
    /// only entries that never fire).
    Idle,
    /// The driver must come back once tick `.0` has begun.
    Until(u64),
    /// The waker batch is full: wake those tasks, then call again.
    BatchFull,
}

/// Event counts, kept under the shard lock and summed on demand.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) registered: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) migrated: u64,
}

#[derive(Debug)]
pub(crate) struct Wheel {
    slab: Slab,
    /// Head of each bucket of the current and the next lap.
    ring: Box<[u32]>,
    occupied: Bitmap,
    /// The lists of later laps.
    overflow: Overflow,
    /// Head of the list of entries that can never come due.
    never: u32,
    /// The last tick the driver can ever process: its clock saturates at
    /// `i64::MAX` nanoseconds since the origin.
    last_tick: u64,
    /// Every tick up to and including this one has been processed.
    elapsed: u64,
    /// The ring's arithmetic (laps, buckets, move-in ticks).
    geometry: Ring,
    tick: TickDiv,
    shutdown: bool,
    counters: Counters,
    lateness: LatenessHistogram,
}

impl Wheel {
    /// A wheel of `slots` ticks per revolution (a power of two), each
    /// `tick_ns` long.
    pub(crate) fn new(slots: usize, tick_ns: u64) -> Self {
        debug_assert!(slots.is_power_of_two(), "slots = {slots}");
        debug_assert!(tick_ns > 0);
        let geometry = Ring::new(slots);
        let buckets = geometry.buckets();
        Wheel {
            slab: Slab::default(),
            // Allocated by the first link into it (see `link`); until then
            // the bitmap says every bucket is empty, so nothing reads it.
            ring: Box::default(),
            occupied: Bitmap::new(buckets),
            overflow: Overflow::new(geometry.first_overflow_lap(0), NIL),
            never: NIL,
            last_tick: SATURATED / tick_ns,
            elapsed: 0,
            geometry,
            tick: TickDiv::new(tick_ns),
            shutdown: false,
            counters: Counters::default(),
            lateness: LatenessHistogram::default(),
        }
    }

    pub(crate) fn pending(&self) -> usize {
        self.slab.len()
    }

    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    pub(crate) fn lateness(&self) -> &LatenessHistogram {
        &self.lateness
    }

    pub(crate) fn entry_bytes(&self) -> usize {
        self.slab.allocated_bytes()
    }

    fn tick_of(&self, deadline_ns: u64) -> u64 {
        deadline_tick(self.tick, deadline_ns)
    }

    /// Every tick up to and including this one has been processed: no live
    /// entry's deadline lies in it (an insert or reset into such a tick
    /// completes at once instead).
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Whether an entry due at `deadline_ns` (in `tick`) can ever fire.
    fn reachable(&self, deadline_ns: u64, tick: u64) -> bool {
        deadline_ns < SATURATED && tick <= self.last_tick
    }

    /// The tick the driver must wake for an entry in `tick`: `u64::MAX`
    /// (never) for one that can never come due, so registering it never
    /// notifies the driver.
    fn wake_tick(&self, deadline_ns: u64, tick: u64) -> u64 {
        if self.reachable(deadline_ns, tick) {
            tick
        } else {
            u64::MAX
        }
    }

    fn current_lap(&self) -> u64 {
        self.geometry.current_lap(self.elapsed)
    }

    /// Whether an entry for `tick` (> elapsed) belongs in the ring.
    fn in_ring(&self, tick: u64) -> bool {
        self.geometry.in_ring(self.elapsed, tick)
    }

    /// The next non-empty bucket at or after tick `elapsed + 1`, as a tick.
    fn next_busy_tick(&self) -> Option<(usize, u64)> {
        let from = self.geometry.bucket(self.elapsed + 1);
        let slot = self
            .occupied
            .next_set(from)
            .or_else(|| self.occupied.next_set(0).filter(|&slot| slot < from))?;
        Some((slot, self.geometry.tick_of_bucket(self.elapsed, slot)))
    }

    /// Registers a task to wake at `deadline_ns` (since the timer's origin).
    ///
    /// The waker is cloned by the caller before the lock is taken (cloning
    /// runs executor code, which must never run under a wheel lock): the
    /// wheel takes it out of `waker` only if it registers it, and otherwise
    /// leaves it there for the caller to drop outside the lock.
    pub(crate) fn insert(&mut self, deadline_ns: u64, waker: &mut Option<Waker>) -> Insert {
        if self.shutdown {
            return Insert::Shutdown;
        }
        let tick = self.tick_of(deadline_ns);
        if tick <= self.elapsed {
            return Insert::Elapsed;
        }
        let Some(taken) = waker.take() else {
            unreachable!("insert is given a waker");
        };
        let Some(key) = self.slab.insert(deadline_ns, taken) else {
            return Insert::NoKeys;
        };
        self.link(key.index, tick);
        self.counters.registered += 1;
        Insert::Registered {
            key,
            tick: self.wake_tick(deadline_ns, tick),
        }
    }

    /// Whether `key` is still registered (not yet fired or cancelled).
    pub(crate) fn is_live(&self, key: Key) -> bool {
        self.slab.get(key).is_some()
    }

    /// Whether `key`'s deadline was last set by a reset that did not read
    /// the clock, so the poll that follows must read it to complete a
    /// deadline that has passed. Clears the mark.
    pub(crate) fn take_unchecked(&mut self, key: Key) -> bool {
        self.slab
            .get_mut(key)
            .is_some_and(|entry| entry.take_unchecked())
    }

    /// Whether a registered entry's waker already wakes the task of `waker`
    /// (checked before cloning `waker`, which must happen outside the lock).
    pub(crate) fn check_waker(&self, key: Key, waker: &Waker) -> WakerCheck {
        match self.slab.get(key).and_then(|entry| entry.waker.as_ref()) {
            None => WakerCheck::Gone,
            Some(current) if current.will_wake(waker) => WakerCheck::Same,
            Some(_) => WakerCheck::Different,
        }
    }

    /// Replaces the waker of a registered entry, so the task that polled last
    /// is the one woken. Returns the old waker, or gives `waker` back if the
    /// entry fired or was cancelled since it was checked; either is to be
    /// dropped outside the lock (dropping a waker can run executor code).
    pub(crate) fn swap_waker(&mut self, key: Key, waker: Waker) -> Result<Waker, Waker> {
        match self
            .slab
            .get_mut(key)
            .and_then(|entry| entry.waker.as_mut())
        {
            Some(current) => Ok(std::mem::replace(current, waker)),
            None => Err(waker),
        }
    }

    /// Unregisters `key`, returning its waker (to drop outside the lock), or
    /// `None` if it already fired or was cancelled.
    pub(crate) fn remove(&mut self, key: Key) -> Option<Waker> {
        self.slab.get(key)?;
        self.unlink(key.index);
        self.counters.cancelled += 1;
        Some(self.slab.remove(key.index))
    }

    /// Moves a registered entry to a new deadline, keeping its slot and waker.
    ///
    /// A later deadline is recorded in place when it can be: the entry stays
    /// in the list it is in, which comes due first, and moves then (as
    /// tokio's wheel extends a timer). An idle timeout pushed back on every
    /// message so costs one move per timeout period instead of one per
    /// message.
    ///
    /// `unchecked` says the caller did not compare the deadline with the
    /// clock (see [`Wheel::take_unchecked`]); a deadline in a processed tick
    /// completes here either way.
    pub(crate) fn reset(&mut self, key: Key, deadline_ns: u64, unchecked: bool) -> Reset {
        let Some(entry) = self.slab.get(key) else {
            return Reset::Stale;
        };
        let tick = self.tick_of(deadline_ns);
        if tick > self.elapsed && self.reachable(deadline_ns, tick) {
            let old_tick = self.tick_of(entry.deadline);
            // An entry with a lag has a reachable deadline too: lags are
            // only recorded for reachable ticks.
            let in_a_list_that_fires = self.reachable(entry.deadline, old_tick);
            let linked = old_tick - entry.lag();
            if in_a_list_that_fires && tick >= linked && tick - linked <= u64::from(MAX_LAG) {
                let entry = self.slab.at_mut(key.index);
                entry.deadline = deadline_ns;
                entry.set_lag((tick - linked) as u32);
                entry.set_unchecked(unchecked);
                return Reset::Moved { tick: linked };
            }
        }
        self.unlink(key.index);
        if tick <= self.elapsed {
            self.counters.cancelled += 1;
            return Reset::Elapsed(self.slab.remove(key.index));
        }
        let entry = self.slab.at_mut(key.index);
        entry.deadline = deadline_ns;
        entry.set_lag(0);
        entry.set_unchecked(unchecked);
        self.link(key.index, tick);
        Reset::Moved {
            tick: self.wake_tick(deadline_ns, tick),
        }
    }

    /// Processes every bucket whose tick is `<= now_tick`, pushing the wakers
    /// of their entries onto `out` until it holds `limit` of them.
    ///
    /// `now_ns` is the driver's reading of the clock (nanoseconds since the
    /// origin, with `now_tick == now_ns / tick_ns`); it is used to measure
    /// lateness and to check that nothing fires early.
    pub(crate) fn advance(
        &mut self,
        now_tick: u64,
        now_ns: u64,
        out: &mut Vec<Waker>,
        limit: usize,
    ) -> Advance {
        loop {
            if let Some((slot, tick)) = self.next_busy_tick() {
                if tick > now_tick {
                    self.set_elapsed(self.elapsed.max(now_tick));
                    return Advance::Until(tick);
                }
                if !self.fire_bucket(slot, now_ns, out, limit) {
                    return Advance::BatchFull;
                }
                self.set_elapsed(tick);
                continue;
            }
            // The ring is empty: look at the overflow.
            let Some(next_lap) = self.overflow.first() else {
                self.set_elapsed(self.elapsed.max(now_tick));
                return Advance::Idle;
            };
            debug_assert!(
                next_lap >= self.geometry.first_overflow_lap(self.elapsed),
                "overflow lap {next_lap} should be in the ring (current lap {})",
                self.current_lap()
            );
            // That lap moves in when the lap before it becomes current.
            let move_in_at = self.geometry.move_in_tick(next_lap);
            if move_in_at > now_tick {
                self.set_elapsed(self.elapsed.max(now_tick));
                return Advance::Until(move_in_at);
            }
            self.set_elapsed(move_in_at);
        }
    }

    /// Moves the processed mark forward and, when that makes a new lap
    /// current, moves the lap after it from the overflow into the ring.
    fn set_elapsed(&mut self, elapsed: u64) {
        debug_assert!(elapsed >= self.elapsed, "{elapsed} < {}", self.elapsed);
        self.elapsed = elapsed;
        // Firing the last tick of the next lap makes that lap's successor
        // current in one step, so up to two laps may move in here.
        let next = self.current_lap() + 1;
        while let Some(lap) = self.overflow.first() {
            if lap > next {
                break;
            }
            debug_assert!(
                lap >= self.current_lap(),
                "lap {lap} was left in the overflow (current lap {})",
                self.current_lap()
            );
            self.migrate(lap);
        }
        self.overflow
            .slide(self.geometry.first_overflow_lap(self.elapsed));
    }

    /// Fires the entries of `slot`; returns `false` if `out` filled up first
    /// (the rest stay linked and fire on the next call).
    fn fire_bucket(
        &mut self,
        slot: usize,
        now_ns: u64,
        out: &mut Vec<Waker>,
        limit: usize,
    ) -> bool {
        loop {
            let head = self.ring[slot];
            if head == NIL {
                self.occupied.clear(slot);
                return true;
            }
            if out.len() >= limit {
                return false;
            }
            let entry = self.slab.at(head);
            let (next, deadline, lag) = (entry.next, entry.deadline, entry.lag());
            if lag > 0 {
                // Reset to a later deadline since it was linked here.
                self.ring[slot] = next;
                if next != NIL {
                    self.slab.at_mut(next).prev = NIL;
                }
                self.slab.at_mut(head).set_lag(0);
                let tick = self.tick_of(deadline);
                if tick > self.tick.floor(now_ns) {
                    self.link(head, tick);
                    self.counters.migrated += 1;
                    continue;
                }
                // Its real tick has come too (the driver is behind): fire.
            }
            debug_assert!(
                deadline <= now_ns,
                "firing early: deadline {deadline} ns > now {now_ns} ns (slot {slot}, elapsed {})",
                self.elapsed
            );
            self.ring[slot] = next;
            if next != NIL {
                self.slab.at_mut(next).prev = NIL;
            }
            self.lateness.record_ns(now_ns.saturating_sub(deadline));
            self.counters.fired += 1;
            let waker = self.slab.remove(head);
            // Its task is woken once the batch is full or the bucket done,
            // after the lock is released: start loading it now.
            prefetch::waker_target(&waker);
            out.push(waker);
        }
    }

    /// Moves lap `lap`'s overflow list into the ring; `lap` must be the next.
    fn migrate(&mut self, lap: u64) {
        debug_assert!(
            self.in_ring(self.geometry.first_tick(lap)),
            "lap {lap} is too far"
        );
        let mut index = self.overflow.take(lap);
        while index != NIL {
            let entry = self.slab.at_mut(index);
            // An entry reset to a later deadline goes where that one belongs.
            entry.set_lag(0);
            let (next, deadline) = (entry.next, entry.deadline);
            self.link(index, self.tick_of(deadline));
            self.counters.migrated += 1;
            index = next;
        }
    }

    /// Shuts the wheel down: unregisters every entry and pushes its waker onto
    /// `out`. Later inserts answer [`Insert::Shutdown`]. Returns how many
    /// entries were pending.
    pub(crate) fn close_and_drain(&mut self, out: &mut Vec<Waker>) -> usize {
        self.shutdown = true;
        let before = self.slab.len();
        while let Some(slot) = self.occupied.next_set(0) {
            let head = std::mem::replace(&mut self.ring[slot], NIL);
            self.occupied.clear(slot);
            self.free_list(head, out);
        }
        while let Some(head) = self.overflow.pop_first() {
            self.free_list(head, out);
        }
        let never = std::mem::replace(&mut self.never, NIL);
        self.free_list(never, out);
        debug_assert_eq!(self.slab.len(), 0, "drain left entries behind");
        self.counters.cancelled += before as u64;
        before
    }

    fn free_list(&mut self, mut index: u32, out: &mut Vec<Waker>) {
        while index != NIL {
            let next = self.slab.at(index).next;
            out.push(self.slab.remove(index));
            index = next;
        }
    }

    /// Pushes `index` onto the front of the list that owns `tick`.
    fn link(&mut self, index: u32, tick: u64) {
        debug_assert!(tick > self.elapsed, "linking processed tick {tick}");
        let deadline = self.slab.at(index).deadline;
        let head = if !self.reachable(deadline, tick) {
            &mut self.never
        } else if self.in_ring(tick) {
            let slot = self.geometry.bucket(tick);
            self.occupied.set(slot);
            if self.ring.is_empty() {
                // Allocated on the first entry it holds: a shard no thread
                // registers on costs no ring.
                self.ring = vec![NIL; self.geometry.buckets()].into_boxed_slice();
            }
            &mut self.ring[slot]
        } else {
            self.overflow.head_mut(self.geometry.lap(tick))
        };
        let old = std::mem::replace(head, index);
        let entry = self.slab.at_mut(index);
        entry.prev = NIL;
        entry.next = old;
        if old != NIL {
            self.slab.at_mut(old).prev = index;
        }
    }

    /// Takes `index` out of its list in O(1).
    fn unlink(&mut self, index: u32) {
        let entry = self.slab.at(index);
        let (prev, next, deadline, lag) = (entry.prev, entry.next, entry.deadline, entry.lag());
        if next != NIL {
            self.slab.at_mut(next).prev = prev;
        }
        if prev != NIL {
            self.slab.at_mut(prev).next = next;
            return;
        }
        // `index` heads its list: find which one from the tick it was linked
        // for (a lagging entry is always in a list that fires).
        let tick = self.tick_of(deadline) - lag;
        let lap = self.geometry.lap(tick);
        if lag == 0 && !self.reachable(deadline, tick) {
            debug_assert_eq!(self.never, index);
            self.never = next;
        } else if self.in_ring(tick) {
            let slot = self.geometry.bucket(tick);
            debug_assert_eq!(self.ring[slot], index);
            self.ring[slot] = next;
            if next == NIL {
                self.occupied.clear(slot);
            }
        } else {
            debug_assert_eq!(self.overflow.head(lap), index);
            self.overflow.set_head(lap, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    use super::watchdog::Watchdog;

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

    /// How many `Wheel::advance` calls one test may make: the busiest (1,000
    /// far timers woken 3 at a time) makes about 1,000.
    const ADVANCE_LIMIT: usize = 100_000;

    struct Harness {
        wheel: Wheel,
        log: Arc<std::sync::Mutex<Vec<usize>>>,
        /// `Wheel::advance` calls so far, capped at [`ADVANCE_LIMIT`] so that
        /// an `advance` that never reports progress (always `Full`, or the
        /// same `Until`) fails instead of spinning a test loop forever.
        advances: usize,
        _watchdog: Watchdog,
    }

    impl Harness {
        fn new(slots: usize) -> Self {
            Harness {
                wheel: Wheel::new(slots, TICK),
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
        fn insert(&mut self, id: usize, deadline: u64) -> Key {
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
            h.wheel.overflow.in_map(),
            1,
            "100 laps ahead: past the window"
        );
        assert_eq!(h.advance_to(50 * lap), Advance::Until(99 * lap / TICK - 1));
        assert_eq!(h.wheel.overflow.in_map(), 0, "the window reached lap 100");
        assert_eq!(h.wheel.overflow.len(), 1);
        h.insert(2, 60 * lap);
        assert_eq!(h.wheel.overflow.in_map(), 0, "10 laps ahead: in the array");
        assert_eq!(h.advance_to(100 * lap), Advance::Idle);
        assert_eq!(h.fired(), vec![2, 1]);
        assert_eq!(h.advance_to(1_000 * lap), Advance::Idle);
        h.insert(3, 1_010 * lap);
        assert_eq!(
            h.wheel.overflow.in_map(),
            0,
            "an idle wheel's window moved too"
        );
        assert_eq!(h.wheel.overflow.len(), 1);
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
        assert_eq!(h.wheel.overflow.len(), 251);
        assert!(h.wheel.occupied.next_set(0).is_none());
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
        assert!(h.wheel.overflow.is_empty());
        h.insert(99, 16 * TICK); // lap 2: two laps ahead, overflow
        assert_eq!(h.wheel.overflow.len(), 1);
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
        assert!(h.wheel.overflow.is_empty(), "laps 2 and 3 both moved in");
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
        assert!(h.wheel.overflow.is_empty());
        assert_eq!(h.advance_to(20_000), Advance::Idle);
        assert!(h.fired().is_empty(), "removed entries never fire");
        assert_eq!(h.wheel.counters().cancelled, 4);
    }

    #[test]
    fn reset_moves_between_ring_and_overflow() {
        let mut h = Harness::new(8);
        let k = h.insert(1, 30);
        // Later: recorded in place; the entry moves when tick 3 comes due.
        assert!(matches!(
            h.wheel.reset(k, 5_000, false),
            Reset::Moved { tick: 3 }
        ));
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

    /// With ticks long enough that "never" (the saturated tick) is fewer
    /// than [`MAX_LAG`] ticks away, a reset to a saturated deadline still
    /// goes to the never list, not into a lag that a list would act on.
    #[test]
    fn with_long_ticks_a_reset_to_never_goes_to_the_never_list() {
        let _watchdog = Watchdog::start();
        let tick_ns = 1u64 << 33; // about 8.6 s
        let mut wheel = Wheel::new(8, tick_ns);
        let Insert::Registered { key, .. } =
            wheel.insert(tick_ns, &mut Some(Waker::noop().clone()))
        else {
            panic!("registration failed");
        };
        assert!(matches!(
            wheel.reset(key, SATURATED, false),
            Reset::Moved { tick: u64::MAX }
        ));
    }

    /// A lag is recorded only while it fits ([`MAX_LAG`] ticks): a later
    /// deadline further than that from the list the entry is in is a real
    /// move, and one within it stays in place however far out the list is.
    #[test]
    fn a_later_reset_beyond_the_largest_lag_is_a_real_move() {
        let mut h = Harness::new(8);
        let max = u64::from(MAX_LAG);
        let k = h.insert(1, 100);
        let beyond = (10 + max + 1) * TICK;
        assert!(matches!(
            h.wheel.reset(k, beyond, false),
            Reset::Moved { tick } if tick == 10 + max + 1
        ));
        let far = (1 << 32) * TICK;
        let k = h.insert(2, far);
        assert!(matches!(
            h.wheel.reset(k, far + TICK, false),
            Reset::Moved { tick } if tick == 1 << 32
        ));
    }

    #[test]
    fn a_later_reset_stays_in_place_until_its_list_comes_due() {
        let mut h = Harness::new(8);
        // Pushed back twice: still linked at tick 3, fires at tick 6, never
        // before 60.
        let k = h.insert(1, 30);
        assert!(matches!(
            h.wheel.reset(k, 45, false),
            Reset::Moved { tick: 3 }
        ));
        assert!(matches!(
            h.wheel.reset(k, 55, false),
            Reset::Moved { tick: 3 }
        ));
        assert_eq!(h.advance_to(30), Advance::Until(6));
        assert!(h.fired().is_empty());
        assert_eq!(h.advance_to(59), Advance::Until(6));
        assert!(h.fired().is_empty());
        assert_eq!(h.advance_to(60), Advance::Idle);
        assert_eq!(h.fired(), vec![1]);

        // The driver is behind: the lagging entry's own tick has come too,
        // so it fires when its list does, once.
        let k = h.insert(2, 80);
        assert!(matches!(
            h.wheel.reset(k, 95, false),
            Reset::Moved { tick: 8 }
        ));
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
        assert!(matches!(
            h.wheel.reset(k, 500, false),
            Reset::Moved { tick: 30 }
        ));
        assert!(matches!(
            h.wheel.reset(k, 250, false),
            Reset::Moved { tick: 25 }
        ));
        assert!(matches!(
            h.wheel.reset(k, 270, false),
            Reset::Moved { tick: 25 }
        ));
        assert_eq!(h.advance_to(269), Advance::Until(27));
        assert!(h.fired().is_empty());
        assert_eq!(h.advance_to(270), Advance::Idle);
        assert_eq!(h.fired(), vec![3]);

        // A lagging entry that heads its list is removed from that list.
        let k = h.insert(4, 300);
        let other = h.insert(5, 300);
        assert!(matches!(
            h.wheel.reset(k, 700, false),
            Reset::Moved { tick: 30 }
        ));
        assert!(h.wheel.remove(other).is_some());
        assert!(h.wheel.remove(k).is_some());
        assert_eq!(h.wheel.pending(), 0);
        assert_eq!(h.advance_to(1_000), Advance::Idle);
        assert!(h.fired().is_empty());

        // In the overflow: moved when its lap moves in, to its own lap.
        let k = h.insert(6, 2_000);
        assert!(matches!(
            h.wheel.reset(k, 3_000, false),
            Reset::Moved { tick: 200 }
        ));
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
            assert!(matches!(
                h.wheel.reset(k, later, false),
                Reset::Moved { tick: 508 }
            ));
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
            Insert::Elapsed
        ));
        assert!(matches!(
            h.wheel.insert(0, &mut Some(w.clone())),
            Insert::Elapsed
        ));
        let mut out = Vec::new();
        assert_eq!(h.wheel.close_and_drain(&mut out), 2);
        assert_eq!(out.len(), 2);
        assert_eq!(h.wheel.pending(), 0);
        assert!(matches!(
            h.wheel.insert(10_000, &mut Some(w.clone())),
            Insert::Shutdown
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
        let last = h.insert(3, h.wheel.last_tick * TICK); // reachable, just
        assert_eq!(h.wheel.pending(), 3);
        assert!(matches!(h.advance_to(0), Advance::Until(t) if t < h.wheel.last_tick));
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
            let mut wheel = Wheel::new(8, tick_ns);
            let last = wheel.last_tick;
            assert_eq!(wheel.tick_of(SATURATED), last + 1);
            assert_eq!(wheel.tick_of(SATURATED - 1), last);
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
        let same = h.wheel.slab.get(k).unwrap().waker.clone().unwrap();
        assert_eq!(h.wheel.check_waker(k, &same), WakerCheck::Same);
        let other = h.waker(2);
        assert_eq!(h.wheel.check_waker(k, &other), WakerCheck::Different);
        assert!(h.wheel.swap_waker(k, other.clone()).is_ok());
        assert_eq!(h.wheel.check_waker(k, &other), WakerCheck::Same);
        h.advance_to(30);
        assert_eq!(h.fired(), vec![2], "the newest waker is the one woken");
        assert_eq!(h.wheel.check_waker(k, &other), WakerCheck::Gone);
        assert!(
            h.wheel.swap_waker(k, other).is_err(),
            "a fired entry hands the new waker back"
        );
    }

    /// The wheel's view of a slot that ran out of generations in a page that
    /// was later released: the sleep that fired at the slot's last
    /// generation still holds its key when a new timer takes a slot there.
    #[test]
    fn a_stale_key_from_a_released_page_never_reaches_a_later_timer() {
        let mut h = Harness::new(8);
        let far = 1_000_000 * TICK;
        // The slab's pages hold 40-byte entries.
        let one_page = slab::PAGE_LEN * 40;
        // Fill the first page with long timers, so the busy slot is in a
        // page that is released when the wheel empties.
        let long: Vec<Key> = (0..slab::PAGE_LEN).map(|i| h.insert(i, far)).collect();
        let first = h.insert(9_999, 5 * TICK);
        assert!(h.wheel.remove(first).is_some());
        // Stands in for 2^32 - 2 registrations and cancels.
        h.wheel.slab.set_generation(first.index, u32::MAX - 1);
        let cancelled = h.insert(9_999, 5 * TICK);
        assert!(h.wheel.remove(cancelled).is_some());
        let fired = h.insert(10_000, 5 * TICK);
        assert_eq!(fired.index, first.index);
        assert_eq!(fired.generation, u32::MAX);
        assert!(matches!(h.advance_to(5 * TICK), Advance::Until(_)));
        assert_eq!(h.fired(), vec![10_000]);
        // A quiet moment: the wheel empties and releases its pages.
        for key in long {
            assert!(h.wheel.remove(key).is_some());
        }
        assert_eq!(h.wheel.entry_bytes(), one_page);

        // Other tasks register: one page and one timer.
        let newer: Vec<Key> = (0..=slab::PAGE_LEN)
            .map(|i| h.insert(20_000 + i, 10 * TICK))
            .collect();
        for stale in [first, cancelled, fired] {
            assert!(
                h.wheel.remove(stale).is_none(),
                "{stale:?} cancelled a newer timer"
            );
            assert!(!h.wheel.is_live(stale), "{stale:?} looks pending");
            assert!(matches!(h.wheel.reset(stale, far, false), Reset::Stale));
        }
        assert_eq!(h.wheel.pending(), newer.len());
        // Register/cancel with one page and one timer pending reuses a slot.
        let bytes = h.wheel.entry_bytes();
        for _ in 0..10 * slab::PAGE_LEN {
            let key = h.insert(0, far);
            assert!(h.wheel.remove(key).is_some());
        }
        assert_eq!(
            h.wheel.entry_bytes(),
            bytes,
            "register/cancel grew the slab"
        );
        assert_eq!(h.advance_to(10 * TICK), Advance::Idle);
        let mut woken = h.fired();
        woken.sort_unstable();
        assert_eq!(
            woken,
            (20_000..=20_000 + slab::PAGE_LEN).collect::<Vec<_>>()
        );
        assert_eq!(h.wheel.entry_bytes(), one_page, "released again");
    }
}
