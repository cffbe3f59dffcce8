//! The hashed wheel: a ring of buckets covering the current and the next
//! revolution, an overflow level for later ones, and the slab its nodes
//! live in. One wheel serves two owners, with what it holds per node as its
//! type parameter: each timer shard keeps its sleeps' wakers in a
//! [`TimerWheel`] (`sleeps.rs`), and each `DelayQueue` keeps its items in a
//! `Wheel<T>` of its own, taking them out one at a time (`queue.rs`).
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
//!  a timer wheel's bucket: 1 list, 4 ("chains") once it held 32K nodes
//!  never: deadlines the clock never reaches      due: (queues) known due
//!  fresh: (timers) registered since the last advance, not yet filed
//! ```
//!
//! Invariants (checked by the unit tests in `tests.rs` and by
//! `debug_assert!`s):
//! - every tick `<= elapsed` has been processed: its bucket is empty;
//! - with `C = lap(elapsed + 1)`, a node in bucket `b` sits there for a tick
//!   `t > elapsed` in lap `C` or `C + 1` with `t & mask == b`. Two
//!   consecutive laps use the two halves of the ring, so a bucket only ever
//!   holds nodes of one tick, and every deadline less than one revolution
//!   away (the common case: a 5 s timeout on the default 8.192 s wheel) goes
//!   straight into the ring;
//! - the overflow holds the lists of laps `C + 2` and later, one per lap
//!   (`overflow.rs`: an array slot for the next 64 laps, a map entry past
//!   them). When lap `C + 1` becomes current, lap `C + 2`'s list moves into
//!   the ring in one walk, so a far-future node is touched once on its way
//!   in, never once per revolution as in Netty's `remainingRounds` (Kafka and
//!   Linux avoid that walk the same way);
//! - the `never` list holds exactly the nodes whose deadline the clock can
//!   never reach (a saturated deadline such as `Duration::MAX`, or a tick
//!   past the last one the clock can express): nothing ever schedules a
//!   wake-up for them;
//! - the `fresh` list (only a timer links there) holds nodes registered
//!   since the last advance, unfiled (at most 64 per shard: past that, and
//!   for a node reset since, `sleeps.rs` files at once): a registration
//!   pushes there and a cancel unlinks from there, so a timer cancelled
//!   before the driver's next pass (most timeouts) never touches a bucket,
//!   the bitmap or the overflow. Every one is of a tick after `elapsed`,
//!   and an advance files them all before it processes any tick;
//! - the `due` list (only a queue links there) holds nodes known to be due
//!   that the ring cannot take, in tick order.
//!
//! Lists are doubly linked by slab index. A head's `prev` names its list
//! ([`List`]), so any node unlinks in O(1) without a lookup of where it is,
//! and when the head leaves, its successor inherits the name.
//!
//! **Chains.** A bucket is one list until a timer wheel grows big
//! ([`Wheel::set_chains`], `sleeps.rs`): then each bucket has four, and a node
//! is filed into the one its slab index picks, until the wheel next empties
//! (`set_chains` again). A list walk waits for each
//! node's cache miss before it learns the next node's index; with 1M
//! pending timers spread over a 32 MB slab, that wait was half of the CPU
//! a fire took (W3). Firing takes one node from each chain in turn, hinting
//! each chain's next node as it goes, so four misses are in flight at a
//! time. A queue keeps one list per bucket (it takes one node at a time).
//!
//! **Moved later in place.** A node whose deadline moves later stays in the
//! list it is in when it can ([`Wheel::extend`]): only its deadline changes,
//! and when its list comes round, the node is filed again where its deadline
//! says instead of coming out (as tokio's wheel extends a timer). An idle
//! timeout pushed back on every message so costs one write per message and
//! one move per timeout period. A node's tick is therefore at or after its
//! bucket's (or lap's), never before; nodes in the `never` and `due` lists
//! always sit where their deadline says.
//!
//! **Ties.** Every list but the queue's `due` list (kept in tick order, ties
//! first in, first out) takes new nodes at its front, and comes out from its
//! front: of nodes of one tick in one bucket's list, the latest linked comes
//! out first (a widened bucket's chains take turns). A far lap's list is
//! reversed as it moves into the ring, so of the nodes linked into one far
//! lap, the earliest comes out first; the fresh list is filed front first, so
//! of the timer nodes it files into one bucket's list (one chain of a
//! widened bucket), the earliest registered comes out first. The timer fires a bucket in that order (nothing promises an
//! order among ties); a queue's `peek` and `poll_expired` follow it one node
//! at a time.
//!
//! The wheel knows nothing of locks, tasks or clocks: a shard wraps its
//! `TimerWheel` in a mutex, a queue owns its wheel, and both tell it what
//! time it is. The ring's arithmetic (laps, buckets, when a far lap moves
//! in) is in `ring.rs`; this file does the list surgery.

mod bitmap;
mod overflow;
mod queue;
mod ring;
mod slab;
mod sleeps;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod watchdog;

use self::bitmap::Bitmap;
use self::overflow::Overflow;
use self::ring::Ring;
pub(crate) use self::slab::{Deadline, Key, Slab, MAX_KEY, OWNED, UNLINKED};
use self::slab::{Node, HEAD, NIL};
pub(crate) use self::sleeps::{Advance, Insert, Reset, Tally, TimerWheel, WakerCheck};
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

/// Where [`Wheel::link`] (or [`Wheel::file`]) put a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placed {
    /// In the `due` list: a queue's next poll hands it out.
    Due,
    /// In the ring or the overflow, due once tick `.0` has begun.
    At(u64),
    /// Its deadline is beyond the clock's reach: it never comes due.
    Never,
}

/// With [`OVERFLOW_BIT`] set, the low bits of a head's list name are the lap
/// of an overflow list, modulo `2^30` ([`Wheel::lap_of`] recovers it);
/// otherwise a ring index, a bucket's chain (below `2 * MAX_SLOTS * 4`,
/// far below the codes here), or one of these.
const OVERFLOW_BIT: u32 = 1 << 30;
const NEVER: u32 = HEAD | (OVERFLOW_BIT - 1);
const DUE: u32 = HEAD | (OVERFLOW_BIT - 2);
const FRESH: u32 = HEAD | (OVERFLOW_BIT - 3);
/// The `prev` of a timer's node that fired and keeps its slot until its
/// sleep frees it (`sleeps.rs`): it is on no list and is never unlinked.
const FIRED: u32 = HEAD | (OVERFLOW_BIT - 4);
const LAP_MASK: u64 = OVERFLOW_BIT as u64 - 1;

/// A list, as named by its head's `prev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Bucket(usize),
    /// The list of a far lap, by its low 30 bits.
    Overflow(u32),
    Due,
    Never,
    Fresh,
}

impl List {
    /// The list a head's `prev` names, or `None` for a node that is not a
    /// head.
    #[inline]
    fn named_by(prev: u32) -> Option<List> {
        match prev {
            p if p < HEAD => None,
            p if p < FRESH => Some(List::Bucket((p & !HEAD) as usize)),
            p if p & OVERFLOW_BIT != 0 => Some(List::Overflow(p & LAP_MASK as u32)),
            NEVER => Some(List::Never),
            DUE => Some(List::Due),
            _ => Some(List::Fresh),
        }
    }

    #[inline]
    fn name(self) -> u32 {
        match self {
            List::Bucket(bucket) => HEAD | bucket as u32,
            List::Overflow(low) => HEAD | OVERFLOW_BIT | low,
            List::Due => DUE,
            List::Never => NEVER,
            List::Fresh => FRESH,
        }
    }
}

pub(crate) struct Wheel<P, const G: usize = 2> {
    /// The nodes; a queue inserts and removes them here itself, around
    /// linking and unlinking them.
    pub(crate) slab: Slab<P, G>,
    /// Head of each bucket of the current and the next lap; allocated by
    /// the first link into it (see [`Wheel::file`]): until then the bitmap
    /// says every bucket is empty, so nothing reads it.
    ring: Box<[u32]>,
    occupied: Bitmap,
    /// The lists of later laps.
    overflow: Overflow,
    /// Head of the list of nodes that can never come due.
    never: u32,
    /// Head of the list of timer nodes registered since the last advance,
    /// not yet filed by tick (see [`Wheel::insert_fresh`]); queues never use it.
    fresh: u32,
    /// Head and tail of the list of nodes known to be due (queues only).
    due: u32,
    due_tail: u32,
    /// Every tick up to and including this one has been processed.
    elapsed: u64,
    /// The ring's arithmetic (laps, buckets, move-in ticks).
    geometry: Ring,
    /// Lists ("chains") per bucket, a power of two: a node is filed into
    /// the one its slab index picks, so that firing a big bucket walks
    /// several lists side by side ([`Wheel::set_chains`]). Chain `c` of bucket
    /// `b` is `ring[b + c * buckets]`.
    chains: u32,
    tick: TickDiv,
    /// The last tick the clock can ever reach: it saturates at `i64::MAX`
    /// nanoseconds since the origin.
    last_tick: u64,
    /// The latest deadline that can come due, in nanoseconds: below
    /// `SATURATED`, in `last_tick` or before.
    last_ns: u64,
}

impl<P, const G: usize> Wheel<P, G> {
    /// A wheel of `slots` ticks per revolution (a power of two), each
    /// `tick_ns` long, with every tick up to `elapsed` processed, over
    /// `slab`.
    pub(crate) fn new(slab: Slab<P, G>, slots: usize, tick_ns: u64, elapsed: u64) -> Self {
        // `TickDiv::new` checks that `tick_ns` is not zero (dividing by it
        // below panics first), `Ring::new` that `slots` is a power of two.
        let geometry = Ring::new(slots);
        let last_tick = SATURATED / tick_ns;
        Wheel {
            slab,
            ring: Box::default(),
            occupied: Bitmap::new(geometry.buckets()),
            overflow: Overflow::new(geometry.first_overflow_lap(elapsed)),
            never: NIL,
            fresh: NIL,
            due: NIL,
            due_tail: NIL,
            elapsed,
            geometry,
            chains: 1,
            tick: TickDiv::new(tick_ns),
            last_tick,
            last_ns: (last_tick * tick_ns).min(SATURATED - 1),
        }
    }

    /// Gives every bucket `chains` lists (a power of two): more than it has
    /// to widen it, or 1 to narrow it back, only once the wheel holds no
    /// node. Nothing moves: chain 0 of each bucket keeps its place at the
    /// front of the ring, new chains start empty and only nodes filed from
    /// now on spread over them; the memory of dropped chains is released.
    #[cold]
    pub(crate) fn set_chains(&mut self, chains: u32) {
        debug_assert!(chains.is_power_of_two());
        debug_assert!(
            chains > self.chains || self.slab.len() == 0,
            "narrowing a wheel with nodes"
        );
        if !self.ring.is_empty() {
            let mut ring = std::mem::take(&mut self.ring).into_vec();
            ring.resize(self.geometry.buckets() * chains as usize, NIL);
            self.ring = ring.into_boxed_slice();
        }
        self.chains = chains;
    }

    /// The ring index of chain `c` of `bucket`.
    #[inline]
    pub(crate) fn chain(&self, bucket: usize, c: usize) -> usize {
        bucket + c * self.geometry.buckets()
    }

    /// Rebuilds the wheel for `slots` ticks of `tick_ns` from `elapsed`,
    /// keeping the slab (which must hold no node).
    pub(crate) fn rebuild(&mut self, slots: usize, tick_ns: u64, elapsed: u64) {
        debug_assert_eq!(self.slab.len(), 0, "rebuilding a wheel with nodes");
        let slab = std::mem::replace(&mut self.slab, Slab::new(2));
        *self = Wheel::new(slab, slots, tick_ns, elapsed);
    }

    /// Empties every list and the slab (keeping its pages, not the ring),
    /// handing every node to `take`.
    pub(crate) fn clear(&mut self, take: impl FnMut(Node<P>)) {
        self.slab.clear(take);
        self.rebuild(self.slots(), self.tick.ns(), self.elapsed);
    }

    /// Every tick up to and including this one has been processed: no node
    /// in the ring or the overflow is filed under it.
    #[inline]
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Ticks per lap: half the ring's buckets.
    pub(crate) fn slots(&self) -> usize {
        self.geometry.buckets() / 2
    }

    /// The tick a deadline of `ns` is filed under ([`deadline_tick`]).
    #[inline]
    pub(crate) fn tick_of(&self, ns: u64) -> u64 {
        deadline_tick(self.tick, ns)
    }

    /// The last tick whose boundary a clock reading of `ns` has reached.
    #[inline]
    pub(crate) fn tick_floor(&self, ns: u64) -> u64 {
        self.tick.floor(ns)
    }

    /// Nanoseconds since the origin of tick `tick`'s boundary (`tick <=
    /// last_tick`).
    pub(crate) fn boundary(&self, tick: u64) -> u64 {
        debug_assert!(tick <= self.last_tick, "tick {tick} is past the clock");
        tick * self.tick.ns()
    }

    /// Whether a deadline of `ns` can ever come due.
    #[inline]
    pub(crate) fn reachable(&self, ns: u64) -> bool {
        ns <= self.last_ns
    }

    /// Whether a deadline of `ns` rounds up to `tick` or earlier:
    /// `tick_of(ns) <= tick` without its division.
    #[inline]
    pub(crate) fn due_by(&self, ns: u64, tick: u64) -> bool {
        // A saturated deadline's tick is the one after the last, even where
        // the last boundary is the horizon itself (see `deadline_tick`).
        ns <= tick.saturating_mul(self.tick.ns()) && (ns < SATURATED || tick > self.last_tick)
    }

    /// Whether every chain of `bucket` is empty.
    #[inline]
    pub(crate) fn bucket_is_empty(&self, bucket: usize) -> bool {
        (0..self.chains as usize).all(|c| self.ring[self.chain(bucket, c)] == NIL)
    }

    /// The first non-empty bucket at or after tick `elapsed + 1`, and its
    /// tick.
    #[inline]
    fn next_busy(&self) -> Option<(usize, u64)> {
        self.next_busy_after(self.elapsed)
    }

    /// The next tick with something to do, `> elapsed`: the first busy
    /// bucket's (with the bucket), or with the ring empty the one whose
    /// processing makes the lap before the first far lap current, moving
    /// that lap in (with no bucket).
    #[inline]
    fn next_stop(&self) -> Option<(Option<usize>, u64)> {
        match self.next_busy() {
            Some((bucket, tick)) => Some((Some(bucket), tick)),
            None => Some((None, self.geometry.move_in_tick(self.overflow.first()?))),
        }
    }

    /// The first non-empty bucket searching around the ring from the one of
    /// tick `after + 1` (`after >= elapsed`), and the tick it holds if it
    /// is within two laps of `after + 1`: for `after == elapsed`, always.
    #[inline]
    fn next_busy_after(&self, after: u64) -> Option<(usize, u64)> {
        let from = self.geometry.bucket(after + 1);
        let bucket = self
            .occupied
            .next_set(from)
            .or_else(|| self.occupied.next_set(0).filter(|&bucket| bucket < from))?;
        Some((bucket, self.geometry.tick_of_bucket(after, bucket)))
    }

    /// Links the unlinked node at `index`, whose deadline is `ns`, filed
    /// under `tick` (`> elapsed`): into the ring, the overflow, or (for a
    /// deadline the clock never reaches) the `never` list.
    #[inline(always)]
    pub(crate) fn file(&mut self, index: u32, ns: u64, tick: u64) -> Placed {
        debug_assert!(tick > self.elapsed, "filing processed tick {tick}");
        let (head, list, placed) = if !self.reachable(ns) {
            (&mut self.never, List::Never, Placed::Never)
        } else if self.geometry.in_ring(self.elapsed, tick) {
            let bucket = self.geometry.bucket(tick);
            self.occupied.set(bucket);
            if self.ring.is_empty() {
                // Allocated on the first node it holds: a shard no thread
                // registers on, or a queue never inserted into, costs no
                // ring.
                let lists = self.geometry.buckets() * self.chains as usize;
                self.ring = vec![NIL; lists].into_boxed_slice();
            }
            let chain = self.chain(bucket, (index & (self.chains - 1)) as usize);
            (&mut self.ring[chain], List::Bucket(chain), Placed::At(tick))
        } else {
            let lap = self.geometry.lap(tick);
            let list = List::Overflow((lap & LAP_MASK) as u32);
            (self.overflow.head_mut(lap), list, Placed::At(tick))
        };
        push_front(&mut self.slab, head, index, list);
        placed
    }

    /// Links the unlinked node at `index` by its deadline. `due` says its
    /// deadline is known to have passed: it goes to the `due` list, as does
    /// one of a processed tick.
    #[inline]
    pub(crate) fn link(&mut self, index: u32, due: bool) -> Placed {
        let ns = self.slab.at(index).deadline.ns();
        let tick = self.tick_of(ns);
        if due || tick <= self.elapsed {
            self.push_due(index, tick);
            return Placed::Due;
        }
        self.file(index, ns, tick)
    }

    /// Takes the node at `index` out of its list, in O(1).
    #[inline(always)]
    pub(crate) fn unlink(&mut self, index: u32) {
        let n = self.slab.at(index);
        self.unlink_links(index, n.prev, n.next(), n.is_due(), n.deadline);
    }

    /// [`unlink`](Wheel::unlink) given the node's links and deadline: the
    /// node is not read, so a caller that freed it already looks its slot
    /// up once. The deadline is converted only for an overflow head.
    #[inline(always)]
    fn unlink_links(&mut self, index: u32, prev: u32, next: u32, due: bool, at: Deadline) {
        debug_assert_ne!(prev, FIRED, "unlinking fired node {index}");
        if due && self.due_tail == index {
            self.due_tail = if prev < HEAD { prev } else { NIL };
        }
        if next != NIL {
            // At the head, the successor inherits the list's name.
            self.slab.at_mut(next).prev = prev;
        }
        match List::named_by(prev) {
            None => self.slab.at_mut(prev).set_next(next),
            Some(List::Bucket(chain)) => {
                debug_assert_eq!(self.ring[chain], index);
                self.ring[chain] = next;
                if next == NIL {
                    let bucket = chain % self.geometry.buckets();
                    if self.bucket_is_empty(bucket) {
                        self.occupied.clear(bucket);
                    }
                }
            }
            // The lap from the list's low bits, not from the node's deadline,
            // which may have moved later.
            Some(List::Overflow(low)) => self.overflow.set_head(self.lap_of(low, index, at), next),
            Some(List::Due) => self.due = next,
            Some(List::Never) => self.never = next,
            Some(List::Fresh) => self.fresh = next,
        }
    }

    /// Stores a node at the front of the `fresh` list, written with its
    /// links in one go (or hands `payload` back, as [`Slab::put`]). Its
    /// nodes wait unfiled until the next advance files them
    /// ([`TimerWheel::file_fresh`]). Pushing and unlinking there is a few writes
    /// to one head: a timer cancelled before the driver's next pass (most
    /// timeouts) never touches a bucket or the bitmap. A node there carries
    /// the flag a queue's `due` nodes do ([`Node::is_due`]: no wheel uses
    /// both lists), so it is never moved later in place
    /// ([`Wheel::extend`]) and its owner can tell it is unfiled.
    #[inline(always)]
    pub(crate) fn insert_fresh(&mut self, payload: P, deadline: Deadline) -> Result<Key, P> {
        let links = Node::<P>::links(List::Fresh.name(), self.fresh, true);
        let key = self.slab.put(payload, deadline, links)?;
        become_head(&mut self.slab, &mut self.fresh, key.index);
        Ok(key)
    }

    /// Files every node of the unlinked list starting at `at` where its
    /// deadline says; returns how many.
    fn file_all(&mut self, mut at: u32) -> u64 {
        let mut filed = 0;
        while at != NIL {
            let node = self.slab.at(at);
            let (next, ns) = (node.next(), node.deadline.ns());
            self.file(at, ns, self.tick_of(ns));
            filed += 1;
            at = next;
        }
        filed
    }

    /// Moves the deadline of the linked node at `index` to `deadline` in
    /// place if that is allowed: the node is in a ring bucket or a far lap
    /// (not `due` or `fresh`, which carry its flag, and not `never`, whose
    /// deadlines are all later than any that can come due), and the new deadline is not earlier and can come
    /// due. Returns the node if it moved, `None` (having changed nothing)
    /// if it must be unlinked and linked again instead.
    #[inline]
    pub(crate) fn extend(&mut self, index: u32, deadline: Deadline) -> Option<&mut Node<P>> {
        let reachable = self.reachable(deadline.ns());
        let node = self.slab.at_mut(index);
        (reachable && !node.is_due() && deadline >= node.deadline).then(move || {
            node.deadline = deadline;
            node
        })
    }

    /// Moves `elapsed` forward (every ring bucket up to `elapsed` must be
    /// empty) and moves in the far laps that now belong in the ring.
    /// Returns how many nodes moved in.
    pub(crate) fn set_elapsed(&mut self, elapsed: u64) -> u64 {
        debug_assert!(elapsed >= self.elapsed, "{elapsed} < {}", self.elapsed);
        self.elapsed = elapsed;
        let mut moved = 0;
        // Processing the last tick of the next lap makes its successor
        // current in one step, so up to two laps may move in here.
        let current = self.geometry.current_lap(elapsed);
        while let Some(lap) = self.overflow.first().filter(|&lap| lap <= current + 1) {
            debug_assert!(
                lap >= current,
                "lap {lap} was left in the overflow (current lap {current})"
            );
            // Into the ring, unless a node's deadline moved later in place
            // (then wherever that deadline says).
            let head = self.overflow.take(lap);
            moved += self.file_all(head);
        }
        self.overflow
            .slide(self.geometry.first_overflow_lap(elapsed));
        moved
    }

    /// The full lap of the overflow list whose head is `index`, from its
    /// low 30 bits. Unless its deadline moved later in place, the node heads
    /// the list of its deadline's lap; otherwise a list of an earlier lap with
    /// the same low bits, almost always the nearest (laps 2^30 apart are
    /// years apart on any usual wheel). A node moved later by more than a
    /// few such periods is found by a walk over the lists. `at` is the
    /// node's deadline (read before a caller freed it).
    fn lap_of(&self, low: u32, index: u32, at: Deadline) -> u64 {
        let own = self.geometry.lap(self.tick_of(at.ns()));
        let nearest = own - (own.wrapping_sub(u64::from(low)) & LAP_MASK);
        std::iter::successors(Some(nearest), |lap| lap.checked_sub(LAP_MASK + 1))
            .take(4)
            .find(|&lap| self.overflow.head(lap) == index)
            .or_else(|| {
                self.overflow
                    .iter()
                    .find(|&(_, head)| head == index)
                    .map(|(lap, _)| lap)
            })
            .unwrap_or_else(|| unreachable!("node {index} heads no overflow lap (low bits {low})"))
    }

    /// Inserts the unlinked node at `index` (of tick `tick`) into the `due`
    /// list, after every node of a lower or equal tick. Nodes usually arrive
    /// in tick order, so the walk back from the tail stops at once.
    fn push_due(&mut self, index: u32, tick: u64) {
        let mut after = self.due_tail;
        while after != NIL && self.tick_of(self.slab.at(after).deadline.ns()) > tick {
            let prev = self.slab.at(after).prev;
            after = if prev < HEAD { prev } else { NIL };
        }
        if after == NIL {
            push_front(&mut self.slab, &mut self.due, index, List::Due);
        } else {
            let next = self.slab.at(after).next();
            self.slab.at_mut(index).set_links(after, next, true);
            self.slab.at_mut(after).set_next(index);
            if next != NIL {
                self.slab.at_mut(next).prev = index;
            }
        }
        if self.slab.at(index).next() == NIL {
            self.due_tail = index;
        }
    }
}

/// Puts the unlinked node at `index` at the front of the list `list`
/// whose head is `*head`, and makes it the head.
#[inline(always)]
fn push_front<P, const G: usize>(slab: &mut Slab<P, G>, head: &mut u32, index: u32, list: List) {
    let flagged = matches!(list, List::Due | List::Fresh);
    let old = become_head(slab, head, index);
    slab.at_mut(index).set_links(list.name(), old, flagged);
}

/// Makes `index` the list's head in `*head`, before the old head (which it
/// returns), whose `prev` now points back at it; `index`'s own links are
/// the caller's to write.
#[inline(always)]
fn become_head<P, const G: usize>(slab: &mut Slab<P, G>, head: &mut u32, index: u32) -> u32 {
    let old = std::mem::replace(head, index);
    if old != NIL {
        slab.at_mut(old).prev = index;
    }
    old
}
