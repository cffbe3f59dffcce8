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
//! Invariants (checked by the unit tests in `tests.rs` and by
//! `debug_assert!`s):
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
mod tests;
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
