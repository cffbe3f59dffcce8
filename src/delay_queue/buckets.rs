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
//! So the items due by `seen` are the `due` list, the ring buckets of ticks
//! `<= seen` and (when the clock passed them with no poll) the far laps
//! that begin by `seen`; they come out in tick order, merged.
//!
//! Which item of the earliest tick comes out first is decided in one place,
//! [`Buckets::next_out`], which both [`Buckets::peek`] and
//! [`Buckets::pop_due`] ask. `pop_due` hands out what `next_out` names and
//! only then tidies up (links items moved later in place where their
//! deadline says, moves far laps in), because that tidying pushes items
//! onto the front of other lists and so reorders ties: were it to run
//! first, `peek` would have to predict it, which is how it once named the
//! wrong item.
//!
//! Lists are doubly linked by slab index. The head's `prev` names its list
//! (`HEAD` plus a code), so any item unlinks in O(1) without a lookup of where
//! it is, and when the head leaves, its successor inherits the name. Each
//! item also carries a tag saying which kind of list it is in.
//!
//! Moving a ring item's deadline later does not move it ([`Buckets::extend`]):
//! its deadline changes in place, and when its bucket comes round it is
//! linked again under its real deadline instead of coming out. So an idle
//! timeout refreshed on every use costs one write, not two unlinks and a
//! link (tokio's timer does the same for its sleeps). A ring item's deadline
//! is therefore at or after its bucket's tick, never before; items in the
//! other lists always sit where their deadline says.

use super::slab::{Deadline, Slab, HEAD, NIL};
use crate::engine::clock::Clock;
use crate::engine::tick_div::TickDiv;
use crate::engine::wheel::bitmap::Bitmap;
use crate::engine::wheel::overflow::Overflow;
use crate::engine::wheel::ring::Ring;
use crate::engine::wheel::{deadline_tick, SATURATED};

/// Tags: the kind of list an item is in.
const TAG_RING: u32 = 0;
const TAG_OVERFLOW: u32 = 1;
const TAG_DUE: u32 = 2;
const TAG_NEVER: u32 = 3;

/// List names for `prev` at a head. With [`OVERFLOW_BIT`] set, the low
/// bits are the lap of an overflow list, modulo `2^30` ([`Buckets::lap_of`]
/// recovers it); otherwise a bucket number (at most `2 * MAX_SLOTS`, far
/// below the two codes here) or one of these.
const NEVER: u32 = HEAD | (OVERFLOW_BIT - 1);
const DUE: u32 = HEAD | (OVERFLOW_BIT - 2);
const OVERFLOW_BIT: u32 = 1 << 30;
const LAP_MASK: u64 = OVERFLOW_BIT as u64 - 1;

/// A list, as named by its head's `prev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Bucket(usize),
    /// The list of a far lap, by its low 30 bits.
    Overflow(u32),
    Due,
    Never,
}

impl List {
    /// The list a head's `prev` names, or `None` for an item that is not a
    /// head.
    fn named_by(prev: u32) -> Option<List> {
        match prev {
            p if p < HEAD => None,
            p if p & OVERFLOW_BIT != 0 => Some(List::Overflow(p & LAP_MASK as u32)),
            NEVER => Some(List::Never),
            DUE => Some(List::Due),
            p => Some(List::Bucket((p & !HEAD) as usize)),
        }
    }

    fn tag(self) -> u32 {
        match self {
            List::Bucket(_) => TAG_RING,
            List::Overflow(_) => TAG_OVERFLOW,
            List::Due => TAG_DUE,
            List::Never => TAG_NEVER,
        }
    }

    fn name(self) -> u32 {
        match self {
            List::Bucket(bucket) => HEAD | bucket as u32,
            List::Overflow(low) => HEAD | OVERFLOW_BIT | low,
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

/// Where the item [`Buckets::next_out`] names sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Due,
    /// In ring bucket `bucket`, of tick `tick` (the item's own tick is
    /// later if its deadline was moved later in place).
    Bucket {
        bucket: usize,
        tick: u64,
    },
    /// In a far lap's list.
    Lap,
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
    /// How many ring buckets are non-empty (the bits set in `occupied`).
    busy_buckets: usize,
    geometry: Ring,
    /// The lists of later laps.
    overflow: Overflow,
    never: u32,
    due: u32,
    due_tail: u32,
    /// Every ring bucket up to and including this tick is empty.
    elapsed: u64,
    tick: TickDiv,
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
            busy_buckets: 0,
            geometry,
            overflow: Overflow::new(geometry.first_overflow_lap(elapsed), NIL),
            never: NIL,
            due: NIL,
            due_tail: NIL,
            elapsed,
            tick: TickDiv::new(tick_ns),
            last_tick: SATURATED / tick_ns,
        }
    }

    /// The tick a deadline (signed nanoseconds from the origin) rounds up to.
    pub(super) fn tick_of(&self, offset: i64) -> u64 {
        deadline_tick(self.tick, Clock::wheel_ns(offset))
    }

    /// Whether ring bucket `bucket` is headed by an item due at `tick` (not
    /// one of a later lap, nor one moved later in place): the check behind
    /// both [`next_wake`](Buckets::next_wake) and
    /// [`still_waits_for`](Buckets::still_waits_for).
    fn head_due_at<T>(&self, slab: &Slab<T>, bucket: usize, tick: u64) -> bool {
        let head = self.ring[bucket];
        head != NIL && self.due_by(slab.at(head).deadline, tick)
    }

    /// Whether `deadline` rounds up to `tick` or earlier: `tick_of(deadline)
    /// <= tick` without its division, for the paths every remove and reset
    /// takes.
    pub(super) fn due_by(&self, deadline: Deadline, tick: u64) -> bool {
        let ns = Clock::wheel_ns(deadline.offset());
        // A saturated deadline's tick is the one after the last, even where
        // the last boundary is the horizon itself (see `deadline_tick`).
        ns <= tick.saturating_mul(self.tick.ns()) && (ns < SATURATED || tick > self.last_tick)
    }

    /// The last tick whose boundary a clock reading `now` (an offset) has
    /// reached.
    pub(super) fn tick_floor(&self, now: i64) -> u64 {
        self.tick.floor(Clock::wheel_ns(now))
    }

    /// The offset of tick `tick`'s boundary (`tick <= last_tick`).
    pub(super) fn boundary(&self, tick: u64) -> i64 {
        debug_assert!(tick <= self.last_tick, "tick {tick} is past the clock");
        (tick * self.tick.ns()) as i64
    }

    /// Every ring bucket up to this tick is empty.
    pub(super) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Ticks per lap: half the ring's buckets.
    pub(super) fn slots(&self) -> usize {
        self.ring.len() / 2
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
            let head = self.ring[bucket];
            self.busy_buckets += usize::from(head == NIL);
            self.ring[bucket] = push_front(slab, head, index, List::Bucket(bucket));
            self.occupied.set(bucket);
        } else {
            let lap = self.geometry.lap(tick);
            let head = self.overflow.head_mut(lap);
            *head = push_front(slab, *head, index, List::Overflow((lap & LAP_MASK) as u32));
        }
        Placed::At(tick)
    }

    /// Takes the item at `index` out of its list, in O(1).
    pub(super) fn unlink<T>(&mut self, slab: &mut Slab<T>, index: u32) {
        let item = slab.at(index);
        let (prev, next) = (item.prev, item.next());
        if self.due_tail == index {
            self.due_tail = if prev < HEAD { prev } else { NIL };
        }
        if next != NIL {
            // At the head, the successor inherits the list's name.
            slab.at_mut(next).prev = prev;
        }
        match List::named_by(prev) {
            None => slab.at_mut(prev).set_next(next),
            Some(List::Bucket(bucket)) => {
                self.ring[bucket] = next;
                if next == NIL {
                    self.occupied.clear(bucket);
                    self.busy_buckets -= 1;
                }
            }
            Some(List::Overflow(low)) => {
                // Not from the item's deadline, which may have moved later.
                let lap = self.lap_of(low, index);
                self.overflow.set_head(lap, next);
            }
            Some(List::Due) => self.due = next,
            Some(List::Never) => self.never = next,
        }
    }

    /// Unlinks and returns the item due first by tick `seen`, if any: the
    /// one [`next_out`](Buckets::next_out) names, if it is due by then.
    /// When none is, it changes nothing, so a poll that finds nothing due,
    /// reads the clock and asks again still gets what `peek` named.
    pub(super) fn pop_due<T>(&mut self, slab: &mut Slab<T>, seen: u64) -> Option<u32> {
        debug_assert!(self.elapsed <= seen, "{} > {seen}", self.elapsed);
        let (index, source) = self.next_out(slab, seen)?;
        self.unlink(slab, index);
        if let Source::Bucket { bucket, tick } = source {
            // If it emptied the earliest busy bucket, that bucket's tick is
            // processed (it is at or before the item's tick, so by `seen`).
            if self.ring[bucket] == NIL && self.next_busy().is_none_or(|(_, next)| next > tick) {
                self.set_elapsed(slab, tick);
            }
        }
        // After choosing, never before: tidying moves items between lists.
        self.sweep(slab, seen);
        Some(index)
    }

    /// The tidying that comes with the passing of ticks up to `seen`: the
    /// items of the earliest buckets of ticks `<= seen` that were moved
    /// later in place are linked where their deadline says now, each
    /// emptied bucket's tick is marked processed, and with the ring empty
    /// the next far lap moves in once its move-in tick is `<= seen`. Stops
    /// at the first bucket whose head is due at its tick. Each step is paid
    /// for by the extension or insert that made it needed, and it files
    /// every item [`next_out`](Buckets::next_out) walked past up to `seen`,
    /// so the next walk does not meet them again.
    fn sweep<T>(&mut self, slab: &mut Slab<T>, seen: u64) {
        loop {
            match self.next_busy() {
                Some((bucket, tick)) if tick <= seen => {
                    if self.head_due_at(slab, bucket, tick) {
                        return;
                    }
                    self.refile_head(slab, bucket, tick);
                    if self.ring[bucket] == NIL {
                        self.set_elapsed(slab, tick);
                    }
                }
                Some(_) => return,
                None => {
                    // The ring is empty: the next far lap moves in once the
                    // lap before it becomes current.
                    let Some(lap) = self.overflow.first() else {
                        return;
                    };
                    let move_in = self.geometry.move_in_tick(lap);
                    if move_in > seen {
                        return;
                    }
                    self.set_elapsed(slab, move_in);
                }
            }
        }
    }

    /// Links the head of ring bucket `bucket` (of tick `tick`), an item
    /// moved later in place, where its deadline says now: a later tick, or
    /// the never list.
    fn refile_head<T>(&mut self, slab: &mut Slab<T>, bucket: usize, tick: u64) {
        let head = self.ring[bucket];
        self.unlink(slab, head);
        let placed = self.link(slab, head, false);
        debug_assert!(
            matches!(placed, Placed::At(t) if t > tick) || placed == Placed::Never,
            "an item moved later in place from tick {tick} went to {placed:?}"
        );
    }

    /// Marks every tick up to `seen` processed, after [`pop_due`] found
    /// nothing due by it.
    ///
    /// [`pop_due`]: Buckets::pop_due
    pub(super) fn settle<T>(&mut self, slab: &mut Slab<T>, seen: u64) {
        self.sweep(slab, seen);
        if seen > self.elapsed {
            debug_assert!(
                self.next_busy().is_none_or(|(_, tick)| tick > seen),
                "settling past a busy bucket"
            );
            self.set_elapsed(slab, seen);
        }
    }

    /// What to wait for, after [`settle`](Buckets::settle) (or while
    /// nothing is due).
    ///
    /// The earliest busy bucket's tick, unless its items were all moved
    /// later in place ([`Buckets::extend`]): waiting for it would wake the
    /// queue's task with nothing due. So the items at the head of that
    /// bucket that were moved later are linked where their deadline says
    /// now, up to the first item that is really due at its tick. Each such
    /// item moves once per extension, so the walk costs nothing over time.
    pub(super) fn next_wake<T>(&mut self, slab: &mut Slab<T>) -> Wake {
        debug_assert_eq!(self.due, NIL, "waiting with items due");
        while let Some((bucket, tick)) = self.next_busy() {
            if self.head_due_at(slab, bucket, tick) {
                return Wake::At(tick);
            }
            self.refile_head(slab, bucket, tick);
        }
        // The same for the first far lap: its items moved later in place
        // past the lap go where their deadline says, so the wait is for a
        // lap that still holds an item of its own.
        while let Some(lap) = self.overflow.first() {
            let head = self.overflow.head(lap);
            if self.in_own_lap(slab, head, lap) {
                return Wake::At(self.geometry.move_in_tick(lap));
            }
            self.unlink(slab, head);
            let placed = self.link(slab, head, false);
            debug_assert!(
                matches!(placed, Placed::At(t) if self.geometry.lap(t) > lap)
                    || placed == Placed::Never,
                "an item moved later in place from lap {lap} went to {placed:?}"
            );
        }
        Wake::Never
    }

    /// Whether the item at `index`, linked in far lap `lap`'s list, comes
    /// due in that lap (it was not moved later in place past it).
    fn in_own_lap<T>(&self, slab: &Slab<T>, index: u32, lap: u64) -> bool {
        let last = self.geometry.first_tick(lap + 1) - 1;
        self.due_by(slab.at(index).deadline, last)
    }

    /// Whether the linked item at `index` may be what the queue's sleep,
    /// set for `armed`, waits for: the head of a ring bucket whose deadline
    /// rounds up to `armed` or earlier, or the head of a far lap (the sleep
    /// waits for the first lap's move-in tick, before its items' ticks).
    /// Only a head can change what the queue waits for when it leaves or
    /// moves later: below a head that stays, its list is still due when it
    /// was.
    pub(super) fn may_hold_the_wake<T>(&self, slab: &Slab<T>, index: u32, armed: u64) -> bool {
        let item = slab.at(index);
        item.prev >= HEAD && (item.tag() == TAG_OVERFLOW || self.due_by(item.deadline, armed))
    }

    /// The item that comes out next (one of the earliest tick's), whether or
    /// not it is due yet; an item that never comes due only if nothing else
    /// is left.
    pub(super) fn peek<T>(&self, slab: &Slab<T>) -> Option<u32> {
        self.next_out(slab, u64::MAX)
            .map(|(index, _)| index)
            .or((self.never != NIL).then_some(self.never))
    }

    /// The item that comes out next, and where it sits, if it is due by
    /// tick `by` (`u64::MAX`: whenever it comes due): the rule that both
    /// [`peek`](Buckets::peek) and [`pop_due`](Buckets::pop_due) follow.
    ///
    /// It is an item of the earliest tick (each item counts at its own
    /// deadline's tick, also one moved later in place, wherever it sits).
    /// Among that tick's items: the `due` list's first; else the first met
    /// walking the ring buckets in tick order, each from its head (of ties
    /// inserted into a bucket, the latest); else the far laps in lap order,
    /// and in a lap the last of its list (of ties inserted into the lap, the
    /// earliest: moving the lap into the ring reverses its list, which makes
    /// that one its bucket's head, so the choice holds across the move).
    ///
    /// `by` only bounds the walk: lists of ticks after `by` hold no item
    /// due by it, so the answer is the same as without the bound whenever
    /// that one is due by `by`. A `due` item is due whatever `by`: its tick
    /// is at most one after the clock's last reading (`seen`), so an item of
    /// a later tick than `by` never comes before it.
    fn next_out<T>(&self, slab: &Slab<T>, by: u64) -> Option<(u32, Source)> {
        let tick_at = |index: u32| self.tick_of(slab.at(index).deadline.offset());
        let mut best = (self.due != NIL).then(|| (tick_at(self.due), self.due, Source::Due));
        // Nothing in a list whose items are all at or after `floor` can
        // come before the best so far.
        let settled = |best: &Option<(u64, u32, Source)>, floor: u64| {
            best.is_some_and(|(b, _, _)| b <= floor)
        };
        let mut after = self.elapsed;
        while let Some((bucket, tick)) = self.next_busy_after(after) {
            if tick > by || settled(&best, tick) {
                break;
            }
            // A bucket holds items of its tick or (moved later in place)
            // after it: the walk stops at the first of its tick.
            let mut at = self.ring[bucket];
            while at != NIL && !settled(&best, tick) {
                let item_tick = tick_at(at);
                if best.is_none_or(|(b, _, _)| item_tick < b) {
                    best = Some((item_tick, at, Source::Bucket { bucket, tick }));
                }
                at = slab.at(at).next();
            }
            if settled(&best, tick + 1) {
                // No later bucket can hold an earlier item.
                break;
            }
            after = tick;
        }
        let laps_matter = self.overflow.first().is_some_and(|lap| {
            let first = self.geometry.first_tick(lap);
            first <= by && !settled(&best, first)
        });
        if laps_matter {
            for (lap, head) in self.overflow.iter() {
                let first = self.geometry.first_tick(lap);
                if first > by || settled(&best, first) {
                    break;
                }
                let mut lap_best: Option<(u64, u32)> = None;
                let mut at = head;
                while at != NIL {
                    let item_tick = tick_at(at);
                    if lap_best.is_none_or(|(b, _)| item_tick <= b) {
                        lap_best = Some((item_tick, at));
                    }
                    at = slab.at(at).next();
                }
                if let Some((item_tick, at)) = lap_best {
                    if best.is_none_or(|(b, _, _)| item_tick < b) {
                        best = Some((item_tick, at, Source::Lap));
                    }
                }
            }
        }
        best.filter(|&(tick, _, source)| source == Source::Due || tick <= by)
            .map(|(_, at, source)| (at, source))
    }

    /// Moves the deadline of the linked item at `index` to `deadline` in
    /// place if that is allowed: the item is in a ring bucket or a far lap,
    /// and the new deadline is not earlier. Returns `false` (and changes nothing) if the
    /// item must be unlinked and linked again instead.
    pub(super) fn extend<T>(&self, slab: &mut Slab<T>, index: u32, deadline: Deadline) -> bool {
        let item = slab.at_mut(index);
        if (item.tag() == TAG_RING || item.tag() == TAG_OVERFLOW) && deadline >= item.deadline {
            item.deadline = deadline;
            return true;
        }
        false
    }

    /// Empties every list (the slab is cleared by the caller).
    pub(super) fn clear(&mut self) {
        self.ring.fill(NIL);
        self.occupied = Bitmap::new(self.ring.len());
        self.busy_buckets = 0;
        self.overflow = Overflow::new(self.geometry.first_overflow_lap(self.elapsed), NIL);
        self.never = NIL;
        self.due = NIL;
        self.due_tail = NIL;
    }

    /// The full lap of the overflow list whose head is `index`, from its
    /// low 30 bits: the first lap with those bits at or after the earliest
    /// lap the overflow can hold (laps 2^30 apart only for deadlines decades
    /// apart, so the loop almost never turns).
    fn lap_of(&self, low: u32, index: u32) -> u64 {
        let period = LAP_MASK + 1;
        let min = self.geometry.first_overflow_lap(self.elapsed);
        let mut lap = min + ((u64::from(low)).wrapping_sub(min) & LAP_MASK);
        while self.overflow.get(lap) != Some(index) {
            debug_assert!(
                self.overflow.iter().any(|(l, _)| l >= lap),
                "item {index} heads no overflow lap with low bits {low}"
            );
            lap += period;
        }
        lap
    }

    /// Whether [`next_wake`](Buckets::next_wake) would still answer `tick`,
    /// the tick it answered last, now that items have only left or moved
    /// later since (neither makes an earlier tick busy). Answered without
    /// searching the occupancy bitmap in the common cases, so a queue can
    /// ask after every remove and reset: an item is due at `tick` (the head
    /// of its ring bucket is linked for it, not for a later lap nor moved
    /// later in place), or the ring is empty and `tick` is when the first
    /// far lap moves in, whose head comes due in it. `false` means
    /// "search".
    pub(super) fn still_waits_for<T>(&self, slab: &Slab<T>, tick: u64) -> bool {
        if self.geometry.in_ring(self.elapsed, tick)
            && self.head_due_at(slab, self.geometry.bucket(tick), tick)
        {
            return true;
        }
        self.busy_buckets == 0
            && self.overflow.first().is_some_and(|lap| {
                self.geometry.move_in_tick(lap) == tick
                    && self.in_own_lap(slab, self.overflow.head(lap), lap)
            })
    }

    /// The first non-empty bucket after `elapsed`, and its tick.
    fn next_busy(&self) -> Option<(usize, u64)> {
        self.next_busy_after(self.elapsed)
    }

    /// The first non-empty bucket of a tick after `after` (at least
    /// `elapsed`), and its tick.
    fn next_busy_after(&self, after: u64) -> Option<(usize, u64)> {
        debug_assert_eq!(
            self.busy_buckets == 0,
            self.occupied.next_set(0).is_none(),
            "{} busy buckets counted",
            self.busy_buckets
        );
        let from = self.geometry.bucket(after + 1);
        let bucket = self
            .occupied
            .next_set(from)
            .or_else(|| self.occupied.next_set(0).filter(|&b| b < from))?;
        let tick = self.geometry.tick_of_bucket(after, bucket);
        // Past the ring's two laps from `elapsed` the search has wrapped.
        self.geometry
            .in_ring(self.elapsed, tick)
            .then_some((bucket, tick))
    }

    /// Moves `elapsed` forward (every ring bucket up to `elapsed` must be
    /// empty) and moves in the far laps that now belong in the ring.
    fn set_elapsed<T>(&mut self, slab: &mut Slab<T>, elapsed: u64) {
        debug_assert!(elapsed >= self.elapsed, "{elapsed} < {}", self.elapsed);
        self.elapsed = elapsed;
        // Processing the last tick of the next lap makes its successor
        // current in one step, so up to two laps may move in here.
        let next_lap = self.geometry.current_lap(elapsed) + 1;
        while let Some(lap) = self.overflow.first() {
            if lap > next_lap {
                break;
            }
            let mut at = self.overflow.take(lap);
            while at != NIL {
                let next = slab.at(at).next();
                // In the ring now, unless its deadline moved later in place
                // (then wherever that deadline says).
                let placed = self.link(slab, at, false);
                debug_assert!(
                    match placed {
                        Placed::At(tick) => tick > elapsed,
                        Placed::Never => true,
                        Placed::Due => false,
                    },
                    "moving an item of lap {} in at elapsed {elapsed}: {placed:?}",
                    self.geometry.current_lap(elapsed)
                );
                at = next;
            }
        }
        self.overflow
            .slide(self.geometry.first_overflow_lap(elapsed));
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
        let next = slab.at(after).next();
        let item = slab.at_mut(index);
        item.prev = after;
        item.set_next(next);
        item.set_tag(TAG_DUE);
        slab.at_mut(after).set_next(index);
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
    item.set_next(head);
    item.set_tag(list.tag());
    if head != NIL {
        slab.at_mut(head).prev = index;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The overflow's window follows the queue's processed tick: after the
    /// queue has moved on by far more than 64 laps, an item 10 laps ahead
    /// takes an array slot, and one inserted 100 laps ahead at the start
    /// moves from the map into the array as the window reaches it.
    #[test]
    fn the_overflow_window_slides_with_the_processed_tick() {
        let (tick_ns, slots) = (10, 4); // a lap is 4 ticks = 40 ns
        let lap = (slots as i64) * tick_ns as i64;
        let mut slab: Slab<u32> = Slab::new();
        let mut buckets = Buckets::new(slots, tick_ns, 0);
        let add = |slab: &mut Slab<u32>, buckets: &mut Buckets, value, at: i64| {
            let key = slab.insert(value, Deadline::new(at)).expect("room");
            buckets.link(slab, key.index, false);
        };
        add(&mut slab, &mut buckets, 1, 100 * lap);
        assert_eq!(
            buckets.overflow.in_map(),
            1,
            "100 laps ahead: past the window"
        );
        let seen = buckets.tick_floor(50 * lap);
        assert_eq!(buckets.pop_due(&mut slab, seen), None);
        buckets.settle(&mut slab, seen);
        assert_eq!(buckets.overflow.in_map(), 0, "the window reached lap 100");
        add(&mut slab, &mut buckets, 2, 60 * lap);
        assert_eq!(buckets.overflow.in_map(), 0, "10 laps ahead: in the array");
        let seen = buckets.tick_floor(100 * lap);
        let first = buckets.pop_due(&mut slab, seen).expect("item 2 is due");
        assert_eq!(slab.remove(first).0.value, 2);
        let second = buckets.pop_due(&mut slab, seen).expect("item 1 is due");
        assert_eq!(slab.remove(second).0.value, 1);
        buckets.settle(&mut slab, buckets.tick_floor(1_000 * lap));
        add(&mut slab, &mut buckets, 3, 1_010 * lap);
        assert_eq!(
            buckets.overflow.in_map(),
            0,
            "an idle queue's window moved too"
        );
    }
}
