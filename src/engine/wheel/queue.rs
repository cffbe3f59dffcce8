//! Taking nodes out of a [`Wheel`] one at a time, in order, as a
//! `DelayQueue` does: which node comes out next, and which tick to wait for
//! when none is due.
//!
//! The queue reads its timer's clock and passes its reading in as `seen`,
//! the last tick whose boundary the clock has reached (`elapsed <= seen`).
//! The nodes due by `seen` are the `due` list, the ring buckets of ticks
//! `<= seen` and (when the clock passed them with no poll) the far laps that
//! begin by `seen`; they come out in tick order, merged.
//!
//! Which node of the earliest tick comes out first is decided in one place,
//! [`Wheel::next_out`], which both [`Wheel::peek`] and [`Wheel::pop_due`]
//! ask. `pop_due` hands out what `next_out` names and only then tidies up
//! (files nodes moved later in place where their deadline says, moves far
//! laps in), because that tidying pushes nodes onto the front of other
//! lists and so reorders ties: were it to run first, `peek` would have to
//! predict it.

use super::slab::NIL;
use super::{List, Placed, Wheel};

/// Where the node [`Wheel::next_out`] names sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Due,
    /// In ring bucket `bucket`, of tick `tick` (the node's own tick is
    /// later if its deadline was moved later in place).
    Bucket {
        bucket: usize,
        tick: u64,
    },
    /// In a far lap's list.
    Lap,
}

impl<P> Wheel<P> {
    /// Whether ring bucket `bucket` is headed by a node due at `tick` (not
    /// one of a later lap, nor one moved later in place): the check behind
    /// both [`next_wake`](Wheel::next_wake) and
    /// [`still_waits_for`](Wheel::still_waits_for).
    fn head_due_at(&self, bucket: usize, tick: u64) -> bool {
        // The ring may not be allocated yet (`still_waits_for` asks before
        // anything was linked into it).
        let head = self.ring.get(bucket).copied().unwrap_or(NIL);
        head != NIL && self.due_by(self.slab.at(head).deadline.ns(), tick)
    }

    /// Unlinks and returns the node due first by tick `seen`, if any: the
    /// one [`next_out`](Wheel::next_out) names, if it is due by then.
    /// When none is, it changes nothing, so a poll that finds nothing due,
    /// reads the clock and asks again still gets what `peek` named.
    pub(crate) fn pop_due(&mut self, seen: u64) -> Option<u32> {
        debug_assert!(self.elapsed <= seen, "{} > {seen}", self.elapsed);
        // Every walk in this file reads `ring[bucket]` as the bucket's only
        // list: only a timer's wheel widens (`sleeps.rs`).
        debug_assert_eq!(self.chains, 1, "a queue's wheel was widened");
        let (index, source) = self.next_out(seen)?;
        self.unlink(index);
        if let Source::Bucket { bucket, tick } = source {
            // If it emptied the earliest busy bucket, that bucket's tick is
            // processed (it is at or before the node's tick, so by `seen`).
            if self.ring[bucket] == NIL && self.next_busy().is_none_or(|(_, next)| next > tick) {
                self.set_elapsed(tick);
            }
        }
        // After choosing, never before: tidying moves nodes between lists.
        self.sweep(seen);
        Some(index)
    }

    /// The tidying that comes with the passing of ticks up to `seen`: the
    /// nodes of the earliest buckets of ticks `<= seen` that were moved
    /// later in place are filed where their deadline says now, each
    /// emptied bucket's tick is marked processed, and with the ring empty
    /// the next far lap moves in once its move-in tick is `<= seen`. Stops
    /// at the first bucket whose head is due at its tick. Each step is paid
    /// for by the extension or insert that made it needed, and it files
    /// every node [`next_out`](Wheel::next_out) walked past up to `seen`,
    /// so the next walk does not meet them again.
    fn sweep(&mut self, seen: u64) {
        while let Some((bucket, tick)) = self.next_stop().filter(|&(_, tick)| tick <= seen) {
            // Without a bucket the ring is empty: the first far lap moves in.
            if let Some(bucket) = bucket {
                if self.head_due_at(bucket, tick) {
                    return;
                }
                self.refile(self.ring[bucket], tick);
                if self.ring[bucket] != NIL {
                    continue;
                }
            }
            self.set_elapsed(tick);
        }
    }

    /// Files `head`, the head of a list of ticks up to `last` that was
    /// moved later in place, where its deadline says now: a later tick.
    fn refile(&mut self, head: u32, last: u64) {
        self.unlink(head);
        let placed = self.link(head, false);
        debug_assert!(
            matches!(placed, Placed::At(t) if t > last),
            "a node moved later in place from tick {last} went to {placed:?}"
        );
    }

    /// Marks every tick up to `seen` processed, after [`pop_due`] found
    /// nothing due by it.
    ///
    /// [`pop_due`]: Wheel::pop_due
    pub(crate) fn settle(&mut self, seen: u64) {
        self.sweep(seen);
        if seen > self.elapsed {
            debug_assert!(
                self.next_busy().is_none_or(|(_, tick)| tick > seen),
                "settling past a busy bucket"
            );
            self.set_elapsed(seen);
        }
    }

    /// What to wait for, after [`settle`](Wheel::settle) (or while nothing
    /// is due): the tick whose boundary brings nodes due or moves a far lap
    /// in, or `None` if the wheel is empty or holds only nodes that never
    /// come due.
    ///
    /// The earliest busy bucket's tick, unless its nodes were all moved
    /// later in place ([`Wheel::extend`]): waiting for it would wake the
    /// queue's task with nothing due. So the nodes at the head of that
    /// bucket that were moved later are filed where their deadline says
    /// now, up to the first node that is really due at its tick. Each such
    /// node moves once per extension, so the walk costs nothing over time.
    pub(crate) fn next_wake(&mut self) -> Option<u64> {
        debug_assert_eq!(self.due, NIL, "waiting with nodes due");
        debug_assert_eq!(self.chains, 1, "a queue's wheel was widened");
        while let Some((bucket, tick)) = self.next_busy() {
            if self.head_due_at(bucket, tick) {
                return Some(tick);
            }
            self.refile(self.ring[bucket], tick);
        }
        // The same for the first far lap: its nodes moved later in place
        // past the lap go where their deadline says, so the wait is for a
        // lap that still holds a node of its own.
        while let Some(lap) = self.overflow.first() {
            let head = self.overflow.head(lap);
            if self.in_own_lap(head, lap) {
                return Some(self.geometry.move_in_tick(lap));
            }
            self.refile(head, self.geometry.first_tick(lap + 1) - 1);
        }
        None
    }

    /// Whether the node at `index`, linked in far lap `lap`'s list, comes
    /// due in that lap (it was not moved later in place past it).
    fn in_own_lap(&self, index: u32, lap: u64) -> bool {
        let last = self.geometry.first_tick(lap + 1) - 1;
        self.due_by(self.slab.at(index).deadline.ns(), last)
    }

    /// Whether the linked node at `index` may be what the queue's sleep,
    /// set for `armed`, waits for: the head of a ring bucket whose deadline
    /// rounds up to `armed` or earlier, or the head of a far lap (the sleep
    /// waits for the first lap's move-in tick, before its nodes' ticks).
    /// Only a head can change what the queue waits for when it leaves or
    /// moves later: below a head that stays, its list is still due when it
    /// was.
    #[inline]
    pub(crate) fn may_hold_the_wake(&self, index: u32, armed: u64) -> bool {
        let node = self.slab.at(index);
        match List::named_by(node.prev) {
            None => false,
            Some(List::Overflow(_)) => true,
            Some(_) => self.due_by(node.deadline.ns(), armed),
        }
    }

    /// The node that comes out next (one of the earliest tick's), whether or
    /// not it is due yet; a node that never comes due only if nothing else
    /// is left.
    pub(crate) fn peek(&self) -> Option<u32> {
        self.next_out(u64::MAX)
            .map(|(index, _)| index)
            .or((self.never != NIL).then_some(self.never))
    }

    /// The node that comes out next, and where it sits, if it is due by
    /// tick `by` (`u64::MAX`: whenever it comes due): the rule that both
    /// [`peek`](Wheel::peek) and [`pop_due`](Wheel::pop_due) follow.
    ///
    /// It is a node of the earliest tick (each node counts at its own
    /// deadline's tick, also one moved later in place, wherever it sits).
    /// Among that tick's nodes: the `due` list's first; else the first met
    /// walking the ring buckets in tick order, each from its head (of ties
    /// linked into a bucket, the latest); else the far laps in lap order,
    /// and in a lap the last of its list (of ties linked into the lap, the
    /// earliest: moving the lap into the ring reverses its list, which makes
    /// that one its bucket's head, so the choice holds across the move).
    ///
    /// `by` only bounds the walk: lists of ticks after `by` hold no node
    /// due by it, so the answer is the same as without the bound whenever
    /// that one is due by `by`. A `due` node is due whatever `by`: its tick
    /// is at most one after the clock's last reading (`seen`), so a node of
    /// a later tick than `by` never comes before it.
    fn next_out(&self, by: u64) -> Option<(u32, Source)> {
        let tick_at = |index: u32| self.tick_of(self.slab.at(index).deadline.ns());
        let mut best = (self.due != NIL).then(|| (tick_at(self.due), self.due, Source::Due));
        // Nothing in a list whose nodes are all at or after `floor` can
        // come before the best so far.
        let settled = |best: &Option<(u64, u32, Source)>, floor: u64| {
            best.is_some_and(|(b, _, _)| b <= floor)
        };
        let mut after = self.elapsed;
        while let Some((bucket, tick)) = self.next_busy_after(after) {
            // Past the ring's two laps from `elapsed` the search has wrapped.
            if tick > by || settled(&best, tick) || !self.geometry.in_ring(self.elapsed, tick) {
                break;
            }
            // A bucket holds nodes of its tick or (moved later in place)
            // after it: the walk stops at the first of its tick.
            let mut at = self.ring[bucket];
            while at != NIL && !settled(&best, tick) {
                let node_tick = tick_at(at);
                if best.is_none_or(|(b, _, _)| node_tick < b) {
                    best = Some((node_tick, at, Source::Bucket { bucket, tick }));
                }
                at = self.slab.at(at).next();
            }
            if settled(&best, tick + 1) {
                // No later bucket can hold an earlier node.
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
                // Of this lap's nodes earlier than the best before it, the
                // last of the earliest tick.
                let before = best.map(|(b, _, _)| b);
                let mut at = head;
                while at != NIL {
                    let node_tick = tick_at(at);
                    if before.is_none_or(|b| node_tick < b)
                        && best.is_none_or(|(b, _, _)| node_tick <= b)
                    {
                        best = Some((node_tick, at, Source::Lap));
                    }
                    at = self.slab.at(at).next();
                }
            }
        }
        best.filter(|&(tick, _, source)| source == Source::Due || tick <= by)
            .map(|(_, at, source)| (at, source))
    }

    /// Whether [`next_wake`](Wheel::next_wake) would still answer `tick`,
    /// the tick it answered last, now that nodes have only left or moved
    /// later since (neither makes an earlier tick busy). Answered without
    /// searching the occupancy bitmap in the common cases, so a queue can
    /// ask after every remove and reset: a node is due at `tick` (the head
    /// of its ring bucket is linked for it, not for a later lap nor moved
    /// later in place), or the ring is empty and `tick` is when the first
    /// far lap moves in, whose head comes due in it. `false` means
    /// "search".
    pub(crate) fn still_waits_for(&self, tick: u64) -> bool {
        (self.geometry.in_ring(self.elapsed, tick)
            && self.head_due_at(self.geometry.bucket(tick), tick))
            || self.overflow.first().is_some_and(|lap| {
                self.geometry.move_in_tick(lap) == tick
                    && self.occupied.next_set(0).is_none()
                    && self.in_own_lap(self.overflow.head(lap), lap)
            })
    }
}
