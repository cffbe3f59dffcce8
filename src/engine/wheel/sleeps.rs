//! A timer shard's wheel: a [`Wheel`] of wakers, with the shard's event
//! counts, its lateness histogram and its shutdown flag. Registers,
//! cancels, resets and fires sleeps; the shard (`shard.rs`) wraps it in a
//! mutex and wakes what it fires after releasing the lock.
//!
//! **A slot is its sleep's.** Each entry's key is held by one `Sleep`, and
//! only that sleep frees the slot: a fire takes the waker out and leaves the
//! node on no list, marked fired (`FIRED`), until the sleep's next poll,
//! reset or drop frees it (under the lock that call takes anyway; a sleep
//! that fired is polled once more to complete). So no key outlives its
//! node, and the slab keeps no generation per slot ([`OWNED`]): 32 bytes
//! per pending sleep instead of 36. What this costs is that free moving from
//! the driver's pass to the sleep's own call.

use std::task::Waker;

use super::slab::{Slab, NIL, PAGE_LEN, UNLINKED};
use super::{Deadline, Key, List, Wheel, FIRED, OWNED};
use crate::engine::raw::prefetch;
use crate::stats::LatenessHistogram;

/// What happened to a registration attempt.
#[derive(Debug)]
pub(crate) enum Insert {
    /// Registered (in the fresh list until the next advance files it,
    /// unless that list was full); it will fire at `tick` (`u64::MAX`:
    /// never).
    Registered { key: Key, tick: u64 },
    /// Nothing to wait for: the deadline's tick was already processed (the
    /// deadline has passed), or the timer has shut down (nothing will ever
    /// fire again).
    Done,
    /// Every key of this shard is in use (about a billion timers).
    NoKeys,
}

/// What happened to a reset of a registered entry.
#[derive(Debug)]
pub(crate) enum Reset {
    /// Relinked under the new deadline, which fires at `tick` (`u64::MAX`:
    /// never).
    Moved { tick: u64 },
    /// The new deadline is later: recorded in place, in the list the entry
    /// is in, which comes due first (the driver already wakes for it); the
    /// entry moves then.
    InPlace,
    /// The new deadline's tick was already processed: the entry is removed and
    /// its waker returned so the caller can wake it.
    Elapsed(Waker),
    /// The entry had already fired (its slot is now freed): the sleep
    /// registers again on its next poll.
    Stale,
}

/// The outcome of [`TimerWheel::check_waker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakerCheck {
    /// The entry already fired or was cancelled.
    Gone,
    /// The stored waker already wakes the same task.
    Same,
    /// The stored waker wakes another task: swap in a clone of the new one.
    Different,
}

/// Where the driver stands with this wheel after an
/// [`TimerWheel::advance`].
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

/// The sum of some shards' counters, for `Timer::stats`.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) registered: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) migrated: u64,
    pub(crate) entry_bytes: usize,
    pub(crate) lateness: LatenessHistogram,
}

/// The tick the driver must wake for a deadline of `ns`: the one it is filed
/// under, or `u64::MAX` (never) for one that can never come due, so
/// registering it never notifies the driver. A `u64::MAX` is never processed
/// (the clock stops at the last tick before it), and [`Wheel::file`] files a
/// deadline out of reach in the `never` list whatever its tick.
#[inline]
fn wake_tick(wheel: &Wheel<Waker, OWNED>, ns: u64) -> u64 {
    if wheel.reachable(ns) {
        wheel.tick_of(ns)
    } else {
        u64::MAX
    }
}

/// The most entries a shard keeps unfiled in its fresh list: a
/// registration past it files its entry at once, as a burst's (a million
/// sleeps made in a loop) would otherwise all be filed by the driver's next
/// pass, delaying the timers that pass fires. A shard's timeouts
/// registered since the last pass and still pending are fewer in a service.
pub(super) const FRESH_MAX: u32 = 64;

pub(crate) struct TimerWheel {
    pub(super) wheel: Wheel<Waker, OWNED>,
    /// Entries in the fresh list (at most [`FRESH_MAX`]).
    pub(super) fresh: u32,
    shutdown: bool,
    counters: Counters,
    lateness: LatenessHistogram,
}

/// With no entry left, a wheel releases its slab's pages but the first and
/// its chains but the first.
#[inline]
fn release_if_empty(wheel: &mut Wheel<Waker, OWNED>) {
    if wheel.slab.len() == 0 {
        wheel.slab.release_if_empty();
        if wheel.chains > 1 {
            wheel.set_chains(1);
        }
    }
}

/// Lists per ring bucket of a timer wheel that has held [`WIDEN_AT`]
/// entries (see [`Wheel::set_chains`]).
pub(super) const CHAINS: u32 = 4;

/// Entries at which a shard's wheel widens its buckets to [`CHAINS`] lists:
/// about a megabyte of entries, past what a core's own cache holds, where
/// firing a bucket starts to wait on memory for each entry. The widened ring
/// takes four times the memory of the single-chain one (192 KiB more at the
/// default 8,192 slots), until the wheel next holds no entry.
pub(super) const WIDEN_AT: usize = 32 * 1024;

impl TimerWheel {
    /// A wheel of `slots` ticks per revolution (a power of two), each
    /// `tick_ns` long.
    pub(crate) fn new(slots: usize, tick_ns: u64) -> Self {
        TimerWheel {
            // A full first page: a shard's pages are all alike, and it
            // returns to that one page whenever it empties.
            wheel: Wheel::new(Slab::new(PAGE_LEN), slots, tick_ns, 0),
            fresh: 0,
            shutdown: false,
            counters: Counters::default(),
            lateness: LatenessHistogram::default(),
        }
    }

    pub(crate) fn pending(&self) -> usize {
        // Every entry registered ends fired or cancelled (a shutdown's drain
        // counts as cancelled); a fired one may still hold its slot.
        (self.counters.registered - self.counters.fired - self.counters.cancelled) as usize
    }

    /// Slots in use: pending entries, and fired ones not yet freed.
    #[cfg(all(test, tickwheel_loom))]
    pub(crate) fn slots_in_use(&self) -> usize {
        self.wheel.slab.len()
    }

    /// Every key used up: the next insert answers [`Insert::NoKeys`].
    #[cfg(test)]
    pub(crate) fn retire_every_key(&mut self) {
        self.wheel.slab.retire_every_index();
    }

    #[cfg(test)]
    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    #[cfg(test)]
    pub(crate) fn entry_bytes(&self) -> usize {
        self.wheel.slab.allocated_bytes()
    }

    /// Adds this wheel's counters, entry storage and lateness to `tally`.
    pub(crate) fn tally_into(&self, tally: &mut Tally) {
        tally.registered += self.counters.registered;
        tally.fired += self.counters.fired;
        tally.cancelled += self.counters.cancelled;
        tally.migrated += self.counters.migrated;
        tally.entry_bytes += self.wheel.slab.allocated_bytes();
        tally.lateness.merge(&self.lateness);
    }

    /// Every tick up to and including this one has been processed: no live
    /// entry's deadline lies in it (an insert or reset into such a tick
    /// completes at once instead).
    #[cfg(test)]
    pub(crate) fn elapsed(&self) -> u64 {
        self.wheel.elapsed
    }

    /// Registers a task to wake at `deadline_ns` (since the timer's origin).
    ///
    /// The waker is cloned by the caller before the lock is taken (cloning
    /// runs executor code, which must never run under a wheel lock): the
    /// wheel takes it out of `waker` only if it registers it, and otherwise
    /// leaves it there for the caller to drop outside the lock.
    #[inline]
    pub(crate) fn insert(&mut self, deadline_ns: u64, waker: &mut Option<Waker>) -> Insert {
        let tick = wake_tick(&self.wheel, deadline_ns);
        if self.shutdown || tick <= self.wheel.elapsed {
            return Insert::Done;
        }
        let taken = waker.take().expect("insert is given a waker");
        let deadline = Deadline::from_ns(deadline_ns);
        // Unfiled until the driver's next pass: most timeouts are cancelled
        // before it, and never touch a bucket.
        let fresh = self.fresh < FRESH_MAX;
        let inserted = if fresh {
            self.wheel.insert_fresh(taken, deadline)
        } else {
            self.wheel.slab.put(taken, deadline, UNLINKED)
        };
        // A refused waker goes back to the caller, which drops it after the lock.
        let Ok(key) = inserted.map_err(|taken| *waker = Some(taken)) else {
            return Insert::NoKeys;
        };
        self.counters.registered += 1;
        if fresh {
            self.fresh += 1;
        } else {
            self.widen_if_big();
            self.wheel.file(key.index, deadline.ns(), tick);
        }
        Insert::Registered { key, tick }
    }

    /// Whether `key` is still registered (not yet fired or cancelled).
    pub(crate) fn is_live(&self, key: Key) -> bool {
        matches!(self.wheel.slab.get(key), Some(node) if node.prev != FIRED)
    }

    /// Whether a registered entry's waker already wakes the task of `waker`
    /// (checked before cloning `waker`, which must happen outside the lock),
    /// and whether its deadline was last set by a reset that did not read
    /// the clock, so the poll that follows must read it to complete a
    /// deadline that has passed (the mark is cleared; a gone entry has none).
    /// A fired entry's slot is freed: its sleep completes.
    #[inline]
    pub(crate) fn check_waker(&mut self, key: Key, waker: &Waker) -> (WakerCheck, bool) {
        match self.wheel.slab.get_mut(key) {
            Some(node) if node.prev == FIRED => self.free_fired(key, (WakerCheck::Gone, false)),
            None => (WakerCheck::Gone, false),
            Some(node) if node.payload.will_wake(waker) => (WakerCheck::Same, node.take_mark()),
            Some(node) => (WakerCheck::Different, node.take_mark()),
        }
    }

    /// Replaces the waker of a registered entry, so the task that polled last
    /// is the one woken. Returns the old waker, or gives `waker` back if the
    /// entry fired or was cancelled since it was checked (a fired entry's
    /// slot is then freed); either is to be dropped outside the lock
    /// (dropping a waker can run executor code).
    pub(crate) fn swap_waker(&mut self, key: Key, waker: Waker) -> Result<Waker, Waker> {
        match self.wheel.slab.get_mut(key) {
            Some(node) if node.prev == FIRED => self.free_fired(key, Err(waker)),
            Some(node) => Ok(std::mem::replace(&mut node.payload, waker)),
            None => Err(waker),
        }
    }

    /// Frees the slot of `key`, whose entry fired (the sleep's call that
    /// finds it fired is its last with this key), and answers `then`.
    #[cold]
    fn free_fired<T>(&mut self, key: Key, then: T) -> T {
        self.wheel.slab.remove(key.index);
        release_if_empty(&mut self.wheel);
        then
    }

    /// Unregisters `key` and frees its slot, returning its waker (to drop
    /// outside the lock), or `None` if it already fired (or the shard shut
    /// down). Counted as cancelled unless it fired; a shard left with no
    /// entry releases its pages but the first, and its chains but the first.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: Key) -> Option<Waker> {
        // Checked and freed with nothing written between, so the walk to the
        // slot is shared, then unlinked by the links it had (before, each
        // step walked to the slot again). A timer's node carries the `due`
        // flag while it is in the fresh list.
        if self.wheel.slab.get(key)?.prev == FIRED {
            return self.free_fired(key, None);
        }
        let (node, _) = self.wheel.slab.remove(key.index);
        let due = node.is_due();
        self.wheel
            .unlink_links(key.index, node.prev, node.next(), due, node.deadline);
        self.fresh -= u32::from(due);
        self.counters.cancelled += 1;
        release_if_empty(&mut self.wheel);
        Some(node.payload)
    }

    /// Moves a registered entry to a new deadline, keeping its slot and waker.
    ///
    /// A later deadline is recorded in place when it can be ([`Wheel::extend`]):
    /// the entry stays in the list it is in, which comes due first, and moves
    /// then. An idle timeout pushed back on every message so costs one move
    /// per timeout period instead of one per message.
    ///
    /// `unchecked` says the caller did not compare the deadline with the
    /// clock (see [`TimerWheel::check_waker`]); a deadline in a processed
    /// tick completes here either way.
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline_ns: u64, unchecked: bool) -> Reset {
        let fresh = match self.wheel.slab.get(key) {
            // Its slot is freed, and the sleep registers again.
            Some(node) if node.prev == FIRED => return self.free_fired(key, Reset::Stale),
            Some(node) => node.is_due(),
            None => return Reset::Stale,
        };
        let deadline = Deadline::from_ns(deadline_ns);
        if let Some(node) = self.wheel.extend(key.index, deadline) {
            node.set_mark(unchecked);
            return Reset::InPlace;
        }
        let tick = wake_tick(&self.wheel, deadline_ns);
        if tick <= self.wheel.elapsed {
            return self.remove(key).map_or(Reset::Stale, Reset::Elapsed);
        }
        self.wheel.unlink(key.index);
        self.fresh -= u32::from(fresh);
        let node = self.wheel.slab.at_mut(key.index);
        node.deadline = deadline;
        node.set_mark(unchecked);
        self.wheel.file(key.index, deadline.ns(), tick);
        Reset::Moved { tick }
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
        // Every entry registered since the last call is filed first: none
        // is of a processed tick, and none may be left behind one.
        self.file_fresh();
        loop {
            let stop = self.wheel.next_stop();
            let Some((bucket, tick)) = stop.filter(|&(_, tick)| tick <= now_tick) else {
                self.counters.migrated += self.wheel.set_elapsed(self.wheel.elapsed.max(now_tick));
                return stop.map_or(Advance::Idle, |(_, tick)| Advance::Until(tick));
            };
            if let Some(slot) = bucket {
                if !self.fire_bucket(slot, now_tick, now_ns, out, limit) {
                    return Advance::BatchFull;
                }
            }
            // Moving far laps in as it goes.
            self.counters.migrated += self.wheel.set_elapsed(tick);
        }
    }

    /// Fires the entries of `slot` (of a tick `<= now_tick`); returns
    /// `false` if `out` filled up first (the rest stay linked and fire on
    /// the next call). An entry moved later in place is filed under its
    /// deadline's tick instead, unless that tick has come too (the driver
    /// is behind): then it fires here.
    ///
    /// A widened bucket's chains are walked side by side (see "Chains" in
    /// `mod.rs`): each chain's next entry is hinted into the cache a round
    /// before it is read. An entry left at a chain's head keeps the walk's
    /// old `prev` until the walk stops; the names are written back when a
    /// batch fills, before the lock is released (a debug assertion that
    /// panics mid-walk leaves them stale, as it may leave the wheel in any
    /// state: `raw/lock.rs`). The walk itself writes into no entry it has
    /// not reached.
    fn fire_bucket(
        &mut self,
        slot: usize,
        now_tick: u64,
        now_ns: u64,
        out: &mut Vec<Waker>,
        limit: usize,
    ) -> bool {
        let wheel = &mut self.wheel;
        // Deadlines after this are in ticks after `now_tick`.
        let now_boundary = now_tick.saturating_mul(wheel.tick.ns());
        // One node from each chain in turn: the chains' next nodes load side
        // by side (each hinted a round before it is read), where one list
        // would make every node's cache miss wait for the one before it.
        loop {
            let mut left = false;
            for c in 0..wheel.chains as usize {
                let chain = wheel.chain(slot, c);
                let head = wheel.ring[chain];
                if head == NIL {
                    continue;
                }
                if out.len() >= limit {
                    // The chains' heads take their names back (the walk
                    // skipped that write): a cancel unlinks by them.
                    for c in 0..wheel.chains as usize {
                        let chain = wheel.chain(slot, c);
                        let head = wheel.ring[chain];
                        if head != NIL {
                            wheel.slab.at_mut(head).prev = List::Bucket(chain).name();
                        }
                    }
                    return false;
                }
                let node = wheel.slab.at(head);
                let (next, deadline) = (node.next(), node.deadline.ns());
                wheel.ring[chain] = next;
                if next != NIL {
                    left = true;
                    wheel.slab.prefetch(next);
                }
                if deadline > now_boundary {
                    // Reset to a later deadline since it was linked here.
                    wheel.file(head, deadline, wheel.tick_of(deadline));
                    self.counters.migrated += 1;
                    continue;
                }
                debug_assert!(
                    deadline <= now_ns,
                    "firing early: deadline {deadline} ns > now {now_ns} ns (slot {slot}, elapsed {})",
                    wheel.elapsed
                );
                self.lateness.record_ns(now_ns.saturating_sub(deadline));
                self.counters.fired += 1;
                // Its slot stays, marked, until its sleep frees it (see the
                // module's doc).
                let node = wheel.slab.at_mut(head);
                node.prev = FIRED;
                let waker = std::mem::replace(&mut node.payload, Waker::noop().clone());
                // Its task is woken once the batch is full or the bucket done,
                // after the lock is released: start loading what its data
                // pointer points at now (a tokio task's header, which the
                // wake writes).
                prefetch::address(waker.data());
                out.push(waker);
            }
            if !left {
                // Every chain was taken to its end this round (a node
                // moved later is filed in a later bucket, never this one).
                // Nothing to release: what fired holds its slot until its
                // sleep frees it, and the wheel releases its pages then.
                debug_assert!(wheel.bucket_is_empty(slot));
                wheel.occupied.clear(slot);
                return true;
            }
        }
    }

    /// Shuts the wheel down: unregisters every entry and pushes its waker onto
    /// `out`. Later inserts answer [`Insert::Done`]. Returns how many
    /// entries were pending.
    pub(crate) fn close_and_drain(&mut self, out: &mut Vec<Waker>) -> usize {
        self.shutdown = true;
        let before = self.pending();
        // A fired entry's slot is freed with the rest (its sleep's key then
        // finds nothing, and no key is handed out after a shutdown).
        self.wheel
            .clear(|node| out.extend((node.prev != FIRED).then_some(node.payload)));
        self.fresh = 0;
        release_if_empty(&mut self.wheel);
        self.counters.cancelled += before as u64;
        before
    }

    /// Files every entry of the fresh list where its deadline says (every
    /// one is of a tick after `elapsed`: an insert into a processed tick is
    /// refused, and only an advance moves `elapsed`, after calling this).
    pub(super) fn file_fresh(&mut self) {
        self.widen_if_big();
        let fresh = std::mem::replace(&mut self.wheel.fresh, NIL);
        self.wheel.file_all(fresh);
        self.fresh = 0;
    }

    /// Widens the buckets to [`CHAINS`] lists once the wheel holds
    /// [`WIDEN_AT`] entries: checked where entries are filed (a burst files
    /// as it registers, the rest are filed by the driver's pass).
    #[inline]
    fn widen_if_big(&mut self) {
        if self.wheel.chains < CHAINS && self.wheel.slab.len() >= WIDEN_AT {
            self.wheel.set_chains(CHAINS);
        }
    }
}
