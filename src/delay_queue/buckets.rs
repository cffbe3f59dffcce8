//! The queue's own wheel: which list each item sits in, and which items are
//! due by a given tick. Like the timer's wheel (`wheel/mod.rs`), whose ring
//! arithmetic and occupancy bitmap it reuses, it has:
//!
//! - a ring of `2 * slots` buckets for the ticks of the current and the next
//!   lap (a lap is one revolution of `slots` ticks), each an unsorted list of
//!   the items whose deadline rounds up to that tick;
//! - an overflow level, one list per later lap, moved into the ring once when
//!   the lap before it becomes current (a far item is never walked per lap);
//! - a `never` list for deadlines the clock can never reach;
//! - a `due` list, sorted by tick, for items known to be due that the ring
//!   cannot take: their tick is already processed (`<= elapsed`), or their
//!   deadline had passed when they were inserted (which a bucket, waiting for
//!   the tick's boundary, would hold back by up to a tick).
//!
//! The ring holds no locks, wakers or clocks: the queue reads the timer's
//! clock and passes its reading in as `seen`, the last tick whose boundary
//! the clock has reached. Invariants:
//! - every ring bucket of a tick `<= elapsed` is empty, and `elapsed <= seen`;
//! - an item in bucket `b` has a tick `t > elapsed` with `t & mask == b`, in
//!   the current or the next lap of `elapsed + 1`;
//! - an overflow lap is at least two laps after the current one.
//!
//! So the items due by `seen` are the `due` list and the ring buckets of
//! ticks `<= seen`; they come out in tick order, merged.
//!
//! Lists are doubly linked by slab index. The head's `prev` names its list
//! (`HEAD` plus a code), so any item unlinks in O(1) without a lookup of where
//! it is, and when the head leaves, its successor inherits the name.

use std::collections::BTreeMap;

use super::slab::{Slab, HEAD, NIL};
use crate::clock::{tick_ceil, Clock};
use crate::wheel::bitmap::Bitmap;
use crate::wheel::ring::Ring;
use crate::wheel::SATURATED;

/// List codes for `prev` at a head, beside the bucket numbers (at most
/// `2 * MAX_SLOTS`, far below these).
const NEVER: u32 = HEAD | (HEAD - 1);
const DUE: u32 = HEAD | (HEAD - 2);
const OVERFLOW: u32 = HEAD | (HEAD - 3);

/// A list, as named by its head's `prev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Bucket(usize),
    Overflow,
    Due,
    Never,
}

impl List {
    /// The list a head's `prev` names, or `None` for an item that is not a
    /// head.
    fn named_by(prev: u32) -> Option<List> {
        match prev {
            p if p < HEAD => None,
            NEVER => Some(List::Never),
            DUE => Some(List::Due),
            OVERFLOW => Some(List::Overflow),
            p => Some(List::Bucket((p & !HEAD) as usize)),
        }
    }

    fn name(self) -> u32 {
        match self {
            List::Bucket(bucket) => HEAD | bucket as u32,
            List::Overflow => OVERFLOW,
            List::Due => DUE,
            List::Never => NEVER,
        }
    }
}

/// Where [`Buckets::link`] put an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placed {
    /// In the `due` list: the next poll hands it out.
    Due,
    /// In the ring or the overflow, due once tick `.0` has begun.
    At(u64),
    /// Its deadline is beyond the clock's reach: it never comes due.
    Never,
}

/// What the queue must wait for once nothing is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// Tick `.0`'s boundary: items come due then, or a far lap moves in.
    At(u64),
    /// Nothing: the queue is empty, or holds only items that never come due.
    Never,
}

#[derive(Debug)]
pub(super) struct Buckets {
    /// Head of each bucket of the current and the next lap.
    ring: Box<[u32]>,
    occupied: Bitmap,
    geometry: Ring,
    /// Heads of the lists of later laps.
    overflow: BTreeMap<u64, u32>,
    never: u32,
    due: u32,
    due_tail: u32,
    /// Every ring bucket up to and including this tick is empty.
    elapsed: u64,
    tick_ns: u64,
    /// The last tick the timer's clock can reach.
    last_tick: u64,
}

impl Buckets {
    /// A ring of `slots` ticks per lap (a power of two) of `tick_ns` each,
    /// with every tick up to `elapsed` processed.
    pub(super) fn new(slots: usize, tick_ns: u64, elapsed: u64) -> Self {
        let geometry = Ring::new(slots);
        let buckets = geometry.buckets();
        Buckets {
            ring: vec![NIL; buckets].into_boxed_slice(),
            occupied: Bitmap::new(buckets),
            geometry,
            overflow: BTreeMap::new(),
            never: NIL,
            due: NIL,
            due_tail: NIL,
            elapsed,
            tick_ns,
            last_tick: SATURATED / tick_ns,
        }
    }

    /// The tick a deadline (signed nanoseconds from the origin) rounds up to.
    pub(super) fn tick_of(&self, offset: i64) -> u64 {
        tick_ceil(Clock::wheel_ns(offset), self.tick_ns)
    }

    /// The last tick whose boundary a clock reading `now` (an offset) has
    /// reached.
    pub(super) fn tick_floor(&self, now: i64) -> u64 {
        Clock::wheel_ns(now) / self.tick_ns
    }

    /// The offset of tick `tick`'s boundary (`tick <= last_tick`).
    pub(super) fn boundary(&self, tick: u64) -> i64 {
        debug_assert!(tick <= self.last_tick, "tick {tick} is past the clock");
        (tick * self.tick_ns) as i64
    }

    /// Every ring bucket up to this tick is empty.
    pub(super) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Links the unlinked item at `index` by its deadline. `due` says its
    /// deadline is known to have passed.
    pub(super) fn link<T>(&mut self, slab: &mut Slab<T>, index: u32, due: bool) -> Placed {
        let offset = slab.at(index).deadline.offset();
        let tick = self.tick_of(offset);
        if due || tick <= self.elapsed {
            self.push_due(slab, index, tick);
            return Placed::Due;
        }
        if offset as u64 >= SATURATED || tick > self.last_tick {
            self.never = push_front(slab, self.never, index, List::Never);
            return Placed::Never;
        }
        if self.geometry.in_ring(self.elapsed, tick) {
            let bucket = self.geometry.bucket(tick);
            self.ring[bucket] = push_front(slab, self.ring[bucket], index, List::Bucket(bucket));
            self.occupied.set(bucket);
        } else {
            let lap = self.geometry.lap(tick);
            let head = self.overflow.entry(lap).or_insert(NIL);
            *head = push_front(slab, *head, index, List::Overflow);
        }
        Placed::At(tick)
    }

    /// Takes the item at `index` out of its list, in O(1).
    pub(super) fn unlink<T>(&mut self, slab: &mut Slab<T>, index: u32) {
        let item = slab.at(index);
        let (prev, next, offset) = (item.prev, item.next, item.deadline.offset());
        if self.due_tail == index {
            self.due_tail = if prev < HEAD { prev } else { NIL };
        }
        if next != NIL {
            // At the head, the successor inherits the list's name.
            slab.at_mut(next).prev = prev;
        }
        match List::named_by(prev) {
            None => slab.at_mut(prev).next = next,
            Some(List::Bucket(bucket)) => {
                self.ring[bucket] = next;
                if next == NIL {
                    self.occupied.clear(bucket);
                }
            }
            Some(List::Overflow) => {
                let lap = self.geometry.lap(self.tick_of(offset));
                if next == NIL {
                    self.overflow.remove(&lap);
                } else if let Some(head) = self.overflow.get_mut(&lap) {
                    *head = next;
                }
            }
            Some(List::Due) => self.due = next,
            Some(List::Never) => self.never = next,
        }
    }

    /// Unlinks and returns the item due first by tick `seen`, if any: the
    /// lowest tick among the `due` list and the ring buckets up to `seen`.
    pub(super) fn pop_due<T>(&mut self, slab: &mut Slab<T>, seen: u64) -> Option<u32> {
        debug_assert!(self.elapsed <= seen, "{} > {seen}", self.elapsed);
        loop {
            let ring = self.next_busy();
            if self.due != NIL {
                let due_tick = self.tick_of(slab.at(self.due).deadline.offset());
                if ring.is_none_or(|(_, tick)| due_tick <= tick || tick > seen) {
                    let index = self.due;
                    self.unlink(slab, index);
                    return Some(index);
                }
            }
            match ring {
                Some((bucket, tick)) if tick <= seen => {
                    let index = self.ring[bucket];
                    self.unlink(slab, index);
                    if self.ring[bucket] == NIL {
                        self.set_elapsed(slab, tick);
                    }
                    return Some(index);
                }
                Some(_) => return None,
                None => {
                    // The ring is empty: the next far lap moves in once the
                    // lap before it becomes current.
                    let &lap = self.overflow.keys().next()?;
                    let move_in = self.geometry.move_in_tick(lap);
                    if move_in > seen {
                        return None;
                    }
                    self.set_elapsed(slab, move_in);
                }
            }
        }
    }

    /// Marks every tick up to `seen` processed, after [`pop_due`] found
    /// nothing due by it.
    ///
    /// [`pop_due`]: Buckets::pop_due
    pub(super) fn settle<T>(&mut self, slab: &mut Slab<T>, seen: u64) {
        if seen > self.elapsed {
            debug_assert!(
                self.next_busy().is_none_or(|(_, tick)| tick > seen),
                "settling past a busy bucket"
            );
            self.set_elapsed(slab, seen);
        }
    }

    /// What to wait for, after [`settle`](Buckets::settle).
    pub(super) fn next_wake(&self) -> Wake {
        debug_assert_eq!(self.due, NIL, "waiting with items due");
        if let Some((_, tick)) = self.next_busy() {
            return Wake::At(tick);
        }
        match self.overflow.keys().next() {
            Some(&lap) => Wake::At(self.geometry.move_in_tick(lap)),
            None => Wake::Never,
        }
    }

    /// The item that comes out next (one of the earliest tick's), whether or
    /// not it is due yet; an item that never comes due only if nothing else
    /// is left.
    pub(super) fn peek<T>(&self, slab: &Slab<T>) -> Option<u32> {
        let ring = self.next_busy();
        if self.due != NIL {
            let due_tick = self.tick_of(slab.at(self.due).deadline.offset());
            if ring.is_none_or(|(_, tick)| due_tick <= tick) {
                return Some(self.due);
            }
        }
        if let Some((bucket, _)) = ring {
            return Some(self.ring[bucket]);
        }
        if let Some(&head) = self.overflow.values().next() {
            // A lap's list is unsorted: find its earliest tick.
            let mut best = head;
            let mut best_tick = self.tick_of(slab.at(head).deadline.offset());
            let mut at = slab.at(head).next;
            while at != NIL {
                let tick = self.tick_of(slab.at(at).deadline.offset());
                if tick < best_tick {
                    (best, best_tick) = (at, tick);
                }
                at = slab.at(at).next;
            }
            return Some(best);
        }
        (self.never != NIL).then_some(self.never)
    }

    /// Empties every list (the slab is cleared by the caller).
    pub(super) fn clear(&mut self) {
        self.ring.fill(NIL);
        self.occupied = Bitmap::new(self.ring.len());
        self.overflow.clear();
        self.never = NIL;
        self.due = NIL;
        self.due_tail = NIL;
    }

    /// The first non-empty bucket after `elapsed`, and its tick.
    fn next_busy(&self) -> Option<(usize, u64)> {
        let from = self.geometry.bucket(self.elapsed + 1);
        let bucket = self
            .occupied
            .next_set(from)
            .or_else(|| self.occupied.next_set(0).filter(|&b| b < from))?;
        Some((bucket, self.geometry.tick_of_bucket(self.elapsed, bucket)))
    }

    /// Moves `elapsed` forward (every ring bucket up to `elapsed` must be
    /// empty) and moves in the far laps that now belong in the ring.
    fn set_elapsed<T>(&mut self, slab: &mut Slab<T>, elapsed: u64) {
        debug_assert!(elapsed >= self.elapsed, "{elapsed} < {}", self.elapsed);
        self.elapsed = elapsed;
        // Processing the last tick of the next lap makes its successor
        // current in one step, so up to two laps may move in here.
        let next_lap = self.geometry.current_lap(elapsed) + 1;
        while let Some(entry) = self.overflow.first_entry() {
            if *entry.key() > next_lap {
                break;
            }
            let mut at = entry.remove();
            while at != NIL {
                let item = slab.at(at);
                let next = item.next;
                let tick = self.tick_of(item.deadline.offset());
                debug_assert!(
                    tick > elapsed && self.geometry.in_ring(elapsed, tick),
                    "moving tick {tick} into the ring at elapsed {elapsed}"
                );
                let bucket = self.geometry.bucket(tick);
                self.ring[bucket] = push_front(slab, self.ring[bucket], at, List::Bucket(bucket));
                self.occupied.set(bucket);
                at = next;
            }
        }
    }

    /// Inserts the unlinked item at `index` (of tick `tick`) into the `due`
    /// list, after every item of a lower or equal tick. Items usually arrive
    /// in tick order, so the walk back from the tail stops at once.
    fn push_due<T>(&mut self, slab: &mut Slab<T>, index: u32, tick: u64) {
        let mut after = self.due_tail;
        while after != NIL && self.tick_of(slab.at(after).deadline.offset()) > tick {
            let prev = slab.at(after).prev;
            after = if prev < HEAD { prev } else { NIL };
        }
        if after == NIL {
            self.due = push_front(slab, self.due, index, List::Due);
            if self.due_tail == NIL {
                self.due_tail = index;
            }
            return;
        }
        let next = slab.at(after).next;
        let item = slab.at_mut(index);
        item.prev = after;
        item.next = next;
        slab.at_mut(after).next = index;
        if next == NIL {
            self.due_tail = index;
        } else {
            slab.at_mut(next).prev = index;
        }
    }
}

/// Puts the unlinked item at `index` at the front of the list `list` whose
/// head is `head`; returns the new head.
fn push_front<T>(slab: &mut Slab<T>, head: u32, index: u32, list: List) -> u32 {
    let item = slab.at_mut(index);
    item.prev = list.name();
    item.next = head;
    if head != NIL {
        slab.at_mut(head).prev = index;
    }
    index
}
