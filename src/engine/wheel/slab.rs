//! Storage for wheel entries: fixed-size pages of slots addressed by `u32`
//! keys, with a generation per slot.
//!
//! Keys stand in for pointers: bucket lists link entries by key, and a
//! `Sleep` remembers `(key, generation)`. When an entry is freed its slot's
//! generation is bumped, so a stale key held by a `Sleep` whose timer already
//! fired can never read or unlink the slot's next occupant.
//!
//! Pages never move once allocated (growth adds a page instead of doubling a
//! vector), so a freshly grown wheel wastes at most one page and never copies
//! its entries. Freed slots go on an intrusive free list threaded through
//! `next`, so registering after a cancel reuses memory instead of allocating.
//! When the last entry leaves, every page but the first is released, so a
//! shard's memory returns to one page after a burst.
//!
//! No key is ever handed out twice, whatever the order of reuse, growth and
//! release, so a stale key can never match a later entry:
//! - a slot's generation only counts up. A slot that has handed out
//!   `u32::MAX` is retired (never reused) instead of wrapping to 0;
//! - each page index keeps a floor that outlives its page: releasing the page
//!   sets the floor one above the highest generation its slots reached, and a
//!   page grown again at that index starts every slot at the floor;
//! - a page index whose floor would reach `u32::MAX` is retired for good. It
//!   keeps its place with an empty page that matches no key and holds no
//!   memory, and growth moves on to the next index.
//!
//! The floors cost 4 bytes per page index ever grown (per 40 KB page of the
//! shard's peak), kept for the shard's life.

use std::task::Waker;

/// The "no entry" key ending every list.
pub(crate) const NIL: u32 = u32::MAX;

/// Keys at or above this are never handed out: `Sleep` uses the values above
/// it to name its unregistered and completed states.
pub(crate) const MAX_KEY: u32 = u32::MAX - 8;

const PAGE_SHIFT: u32 = 10;
pub(super) const PAGE_LEN: usize = 1 << PAGE_SHIFT;
const PAGE_MASK: u32 = (PAGE_LEN as u32) - 1;

/// The floor of a page index that is never grown again. A page starting at
/// `u32::MAX` would give each slot a single use, so that floor retires the
/// index too.
const RETIRED: u32 = u32::MAX;

/// One registered timer, as the driver sees it (40 bytes on 64-bit targets).
#[derive(Debug)]
pub(crate) struct Entry {
    /// The task to wake; `None` only while the slot is free.
    pub(crate) waker: Option<Waker>,
    /// Deadline in nanoseconds since the timer's origin.
    pub(crate) deadline: u64,
    /// Previous entry in the same bucket list, or `NIL` at the head.
    pub(crate) prev: u32,
    /// Next entry in the same bucket list (or in the free list), or `NIL`.
    pub(crate) next: u32,
    generation: u32,
    /// Low 31 bits: how many ticks before its deadline's tick the list
    /// holding it comes due (0 unless a reset pushed the deadline later
    /// without moving the entry; the wheel moves it when that earlier list
    /// comes due). Top bit: the deadline was last set by a reset that did not
    /// read the clock, so the next poll must check whether it has passed. In
    /// the padding of the struct, so it costs no memory.
    lag: u32,
}

/// The flag bit of `Entry::lag`.
const UNCHECKED: u32 = 1 << 31;

/// The largest lag an entry can record, in ticks.
pub(crate) const MAX_LAG: u32 = UNCHECKED - 1;

impl Entry {
    /// Ticks between the list holding this entry and its deadline's tick.
    pub(crate) fn lag(&self) -> u64 {
        u64::from(self.lag & MAX_LAG)
    }

    /// Sets the lag (at most [`MAX_LAG`]), keeping the unchecked flag.
    pub(crate) fn set_lag(&mut self, lag: u32) {
        debug_assert!(lag <= MAX_LAG);
        self.lag = (self.lag & UNCHECKED) | lag;
    }

    /// Marks whether the deadline still has to be checked against the clock.
    pub(crate) fn set_unchecked(&mut self, unchecked: bool) {
        self.lag = (self.lag & MAX_LAG) | if unchecked { UNCHECKED } else { 0 };
    }

    /// Whether the deadline had to be checked; clears the mark.
    pub(crate) fn take_unchecked(&mut self) -> bool {
        let was = self.lag & UNCHECKED != 0;
        self.lag &= MAX_LAG;
        was
    }
}

impl Entry {
    fn vacant(next: u32) -> Self {
        Entry {
            waker: None,
            deadline: 0,
            prev: NIL,
            next,
            generation: 0,
            lag: 0,
        }
    }
}

/// A stable handle to a slot: valid until the entry is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

#[derive(Debug, Default)]
pub(crate) struct Slab {
    /// Page `i` holds the slots of keys `i * PAGE_LEN ..`. A retired index
    /// past the first page holds an empty page while later ones are in use.
    pages: Vec<Box<[Entry]>>,
    /// For every page index ever grown: the generation its slots start at if
    /// it is grown again, above every generation it handed out; or `RETIRED`.
    floors: Vec<u32>,
    free_head: Option<u32>,
    len: usize,
    /// Where a page index starts the first time it grows.
    #[cfg(test)]
    first_generation: u32,
}

impl Slab {
    /// Number of occupied slots.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by the slab's pages (for memory accounting).
    pub(crate) fn allocated_bytes(&self) -> usize {
        let slots: usize = self.pages.iter().map(|page| page.len()).sum();
        slots * std::mem::size_of::<Entry>()
    }

    /// Stores a new entry, unlinked (`prev == next == NIL`).
    ///
    /// Returns `None` only when every key below [`MAX_KEY`] is in use or
    /// retired (about 4 billion live timers in one shard).
    pub(crate) fn insert(&mut self, deadline: u64, waker: Waker) -> Option<Key> {
        let index = match self.free_head {
            Some(index) => index,
            None => self.grow()?,
        };
        let entry = self.slot_mut(index);
        let next_free = entry.next;
        entry.waker = Some(waker);
        entry.deadline = deadline;
        entry.prev = NIL;
        entry.next = NIL;
        entry.lag = 0;
        let generation = entry.generation;
        self.free_head = (next_free != NIL).then_some(next_free);
        self.len += 1;
        Some(Key { index, generation })
    }

    /// The live entry behind `key`, or `None` if it was removed since.
    pub(crate) fn get(&self, key: Key) -> Option<&Entry> {
        let entry = self.slot(key.index)?;
        (entry.waker.is_some() && entry.generation == key.generation).then_some(entry)
    }

    /// Mutable access to the live entry behind `key`.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut Entry> {
        let page = self.pages.get_mut(page_of(key.index))?;
        let entry = page.get_mut(offset_of(key.index))?;
        (entry.waker.is_some() && entry.generation == key.generation).then_some(entry)
    }

    /// The entry at `index`, which must be linked into a list (bucket walks
    /// reach entries by index, not by `Key`).
    pub(crate) fn at(&self, index: u32) -> &Entry {
        &self.pages[page_of(index)][offset_of(index)]
    }

    pub(crate) fn at_mut(&mut self, index: u32) -> &mut Entry {
        self.slot_mut(index)
    }

    /// Frees the occupied slot at `index` and returns its waker. The caller
    /// must have unlinked it from its bucket list first.
    pub(crate) fn remove(&mut self, index: u32) -> Waker {
        let free_next = self.free_head.unwrap_or(NIL);
        let entry = self.slot_mut(index);
        let waker = entry
            .waker
            .take()
            .unwrap_or_else(|| unreachable!("slab slot {index} removed while vacant"));
        entry.prev = NIL;
        if entry.generation == u32::MAX {
            // Reusing the slot would bring generation 0 back, and a stale key
            // from 2^32 uses ago could then reach the new entry: retire the
            // slot instead (40 bytes per 4 billion reuses).
            entry.next = NIL;
        } else {
            entry.generation += 1;
            entry.next = free_next;
            self.free_head = Some(index);
        }
        self.len -= 1;
        // A retiring slot can be the last entry too: skipping the release
        // then would keep a burst's pages for good.
        if self.len == 0 && self.pages.len() > 1 {
            self.release_pages();
        }
        waker
    }

    /// With no entry left, drops every page but the first, raising each
    /// dropped index's floor above the generations it handed out, and
    /// rebuilds the free list over the first page's reusable slots.
    fn release_pages(&mut self) {
        debug_assert_eq!(self.len, 0, "releasing pages with live entries");
        for (floor, page) in self.floors.iter_mut().zip(&self.pages).skip(1) {
            // An empty page is a retired index: its floor stays `RETIRED`.
            if let Some(highest) = page.iter().map(|entry| entry.generation).max() {
                // Saturates at `RETIRED` once a slot got near the top.
                *floor = highest.saturating_add(1);
            }
        }
        self.pages.truncate(1);
        self.pages.shrink_to_fit();
        let mut head = NIL;
        for (offset, entry) in self.pages[0].iter_mut().enumerate().rev() {
            if entry.generation != u32::MAX {
                entry.next = head;
                head = offset as u32;
            }
        }
        self.free_head = (head != NIL).then_some(head);
    }

    fn slot(&self, index: u32) -> Option<&Entry> {
        self.pages.get(page_of(index))?.get(offset_of(index))
    }

    fn slot_mut(&mut self, index: u32) -> &mut Entry {
        &mut self.pages[page_of(index)][offset_of(index)]
    }

    /// Adds a page at the next index that has generations left, threads its
    /// slots onto the free list and returns the first one.
    fn grow(&mut self) -> Option<u32> {
        loop {
            let index = self.pages.len();
            let base = u32::try_from(index * PAGE_LEN).ok()?;
            if base >= MAX_KEY - PAGE_MASK {
                return None;
            }
            let start = match self.floors.get(index) {
                Some(&RETIRED) => {
                    // Keeps the later pages at their keys; allocates nothing.
                    self.pages.push(Box::default());
                    continue;
                }
                Some(&floor) => floor,
                None => {
                    let start = self.first_generation();
                    self.floors.push(start);
                    start
                }
            };
            let page: Box<[Entry]> = (0..PAGE_LEN as u32)
                .map(|i| {
                    let next = if i + 1 < PAGE_LEN as u32 {
                        base + i + 1
                    } else {
                        NIL
                    };
                    Entry {
                        generation: start,
                        ..Entry::vacant(next)
                    }
                })
                .collect();
            self.pages.push(page);
            return Some(base);
        }
    }

    #[cfg(not(test))]
    fn first_generation(&self) -> u32 {
        0
    }
}

#[cfg(test)]
impl Slab {
    /// A slab whose page indexes start at `generation` the first time they
    /// grow, so a test reaches the last generations without 2^32 reuses.
    pub(crate) fn with_first_generation(generation: u32) -> Self {
        Slab {
            first_generation: generation,
            ..Slab::default()
        }
    }

    fn first_generation(&self) -> u32 {
        self.first_generation
    }

    /// Moves the free slot at `index` on to `generation`, as if it had been
    /// reused that many times.
    pub(crate) fn set_generation(&mut self, index: u32, generation: u32) {
        let entry = self.slot_mut(index);
        assert!(entry.waker.is_none(), "slot {index} is occupied");
        assert!(
            generation >= entry.generation,
            "moving a generation back would revive old keys"
        );
        entry.generation = generation;
    }
}

fn page_of(index: u32) -> usize {
    (index >> PAGE_SHIFT) as usize
}

fn offset_of(index: u32) -> usize {
    (index & PAGE_MASK) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::task::Waker;

    fn waker() -> Waker {
        Waker::noop().clone()
    }

    #[test]
    fn entry_is_forty_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn stale_keys_never_reach_a_reused_slot() {
        let mut slab = Slab::default();
        let a = slab.insert(5, waker()).unwrap();
        slab.remove(a.index);
        assert!(slab.get(a).is_none(), "removed key must be dead");
        let b = slab.insert(6, waker()).unwrap();
        assert_eq!(b.index, a.index, "the freed slot is reused first");
        assert_ne!(b.generation, a.generation);
        assert!(slab.get(a).is_none(), "old key must not see the new entry");
        assert!(slab.get_mut(a).is_none(), "nor change it");
        assert_eq!(slab.get(b).unwrap().deadline, 6);
        assert_eq!(slab.get_mut(b).unwrap().deadline, 6);
    }

    #[test]
    fn a_slot_is_retired_before_its_generation_wraps() {
        let mut slab = Slab::default();
        let a = slab.insert(1, waker()).unwrap();
        slab.pages[0][a.index as usize].generation = u32::MAX;
        let old = Key {
            index: a.index,
            generation: u32::MAX,
        };
        slab.remove(a.index);
        assert!(slab.get(old).is_none());
        let b = slab.insert(2, waker()).unwrap();
        assert_ne!(b.index, a.index, "the exhausted slot must not come back");
        let stale = Key {
            index: a.index,
            generation: 0,
        };
        assert!(slab.get(stale).is_none());
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn grows_by_pages_and_reuses_them_while_entries_remain() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..3000)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        assert_eq!(slab.len(), 3000);
        let three_pages = 3 * PAGE_LEN * std::mem::size_of::<Entry>();
        assert_eq!(slab.allocated_bytes(), three_pages);
        for k in &keys[1..] {
            slab.remove(k.index);
        }
        assert_eq!(slab.len(), 1);
        assert_eq!(
            slab.allocated_bytes(),
            three_pages,
            "one live entry keeps the pages"
        );
        // Refilling reuses the pages instead of growing.
        for i in 0..2999 {
            slab.insert(i, waker()).unwrap();
        }
        assert_eq!(slab.allocated_bytes(), three_pages);
    }

    #[test]
    fn emptying_releases_every_page_but_the_first() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..3000)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        for k in &keys {
            slab.remove(k.index);
        }
        assert_eq!(slab.len(), 0);
        assert_eq!(
            slab.allocated_bytes(),
            PAGE_LEN * std::mem::size_of::<Entry>()
        );
        // The first page's slots are all reusable again.
        let again: Vec<Key> = (0..PAGE_LEN as u64)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        assert!(again.iter().all(|k| (k.index as usize) < PAGE_LEN));
        assert_eq!(slab.pages.len(), 1);
    }

    #[test]
    fn stale_keys_into_a_released_page_never_match_its_successor() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..2 * PAGE_LEN as u64)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        // Churn one slot of the second page so its generation is ahead.
        let mut stale = keys[PAGE_LEN + 5];
        for _ in 0..3 {
            slab.remove(stale.index);
            stale = slab.insert(7, waker()).unwrap();
        }
        assert_eq!(stale.index, keys[PAGE_LEN + 5].index);
        for k in &keys {
            if k.index != stale.index {
                slab.remove(k.index);
            }
        }
        slab.remove(stale.index);
        assert_eq!(slab.pages.len(), 1, "the second page was released");
        assert!(
            slab.get(stale).is_none(),
            "a key into a released page is dead"
        );
        // Grow the second page again: its slot must not answer to the key.
        let fresh: Vec<Key> = (0..2 * PAGE_LEN as u64)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        let successor = fresh.iter().find(|k| k.index == stale.index).unwrap();
        assert!(successor.generation > stale.generation);
        assert!(slab.get(stale).is_none());
        let inserted_as = fresh.iter().position(|k| k == successor).unwrap() as u64;
        assert_eq!(slab.get(*successor).unwrap().deadline, inserted_as);
    }

    #[test]
    fn retired_slots_stay_retired_after_a_release() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..PAGE_LEN as u64 + 1)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        slab.pages[0][3].generation = u32::MAX;
        for k in &keys {
            slab.remove(k.index);
        }
        assert_eq!(slab.pages.len(), 1);
        let again: Vec<Key> = (0..PAGE_LEN as u64 - 1)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        assert!(again.iter().all(|k| k.index != 3), "slot 3 was retired");
        assert_eq!(
            slab.pages.len(),
            1,
            "1023 reusable slots fit in the first page"
        );
    }

    /// Every key a slab handed out, to check that none ever comes back.
    #[derive(Default)]
    struct Ledger {
        /// Every key handed out, as `(index, generation)`: none may repeat.
        seen: HashSet<(u32, u32)>,
        /// Removed keys: none may reach an entry again.
        dead: Vec<Key>,
        /// Live keys, each with the deadline stored under it (unique).
        live: Vec<(Key, u64)>,
        inserts: u64,
    }

    impl Ledger {
        fn insert(&mut self, slab: &mut Slab) -> Key {
            self.inserts += 1;
            let key = slab
                .insert(self.inserts, waker())
                .expect("the slab has room");
            assert!(
                self.seen.insert((key.index, key.generation)),
                "{key:?} was handed out before"
            );
            self.live.push((key, self.inserts));
            key
        }

        /// Removes the live entry at position `i`.
        fn remove(&mut self, slab: &mut Slab, i: usize) -> Key {
            let (key, _) = self.live.swap_remove(i);
            slab.remove(key.index);
            self.dead.push(key);
            key
        }

        /// Removes the newest live entry, whose slot the next insert reuses.
        fn remove_newest(&mut self, slab: &mut Slab) -> Key {
            self.remove(slab, self.live.len() - 1)
        }

        fn clear(&mut self, slab: &mut Slab) {
            while !self.live.is_empty() {
                self.remove_newest(slab);
            }
        }

        /// Live keys reach their own entries, and dead keys reach nothing.
        fn check(&self, slab: &Slab) {
            assert_eq!(slab.len(), self.live.len());
            for &(key, deadline) in &self.live {
                let found = slab.get(key).map(|entry| entry.deadline);
                assert_eq!(found, Some(deadline), "live {key:?}");
            }
            for &key in &self.dead {
                assert!(slab.get(key).is_none(), "stale {key:?} reaches an entry");
            }
        }

        /// [`check`](Ledger::check), and the same through `get_mut`.
        fn check_mut(&self, slab: &mut Slab) {
            self.check(slab);
            for &(key, deadline) in &self.live {
                let found = slab.get_mut(key).map(|entry| entry.deadline);
                assert_eq!(found, Some(deadline), "live {key:?}");
            }
            for &key in &self.dead {
                assert!(
                    slab.get_mut(key).is_none(),
                    "stale {key:?} reaches an entry"
                );
            }
        }
    }

    const ONE_PAGE: usize = PAGE_LEN * std::mem::size_of::<Entry>();

    /// The shape of a shard whose busiest slot outlived its generations: the
    /// first page full of long timers, one slot of the second page reused
    /// until it retires, then a quiet moment that empties the shard.
    #[test]
    fn a_page_released_after_its_last_generation_never_hands_out_old_keys() {
        let mut slab = Slab::default();
        let mut ledger = Ledger::default();
        for _ in 0..PAGE_LEN {
            ledger.insert(&mut slab);
        }
        let hot = ledger.insert(&mut slab);
        ledger.remove_newest(&mut slab);
        // Stands in for 2^32 - 4 reuses.
        slab.set_generation(hot.index, u32::MAX - 3);
        let mut generations = Vec::new();
        loop {
            // Bounded: a slot that never retired would loop forever.
            assert!(generations.len() <= 4, "the slot did not retire");
            let key = ledger.insert(&mut slab);
            ledger.remove_newest(&mut slab);
            if key.index != hot.index {
                break;
            }
            generations.push(key.generation);
        }
        assert_eq!(
            generations,
            [u32::MAX - 3, u32::MAX - 2, u32::MAX - 1, u32::MAX],
            "the slot serves up to u32::MAX, then retires"
        );
        ledger.clear(&mut slab);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE, "emptying released pages");
        ledger.check(&slab);

        // Grow well past the old pages: no key from before comes back.
        for _ in 0..3 * PAGE_LEN {
            ledger.insert(&mut slab);
        }
        ledger.check_mut(&mut slab);
        ledger.clear(&mut slab);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE, "released again");

        // Register/cancel with one page and one entry pending reuses a slot.
        for _ in 0..PAGE_LEN + 1 {
            ledger.insert(&mut slab);
        }
        let bytes = slab.allocated_bytes();
        assert_eq!(bytes, 2 * ONE_PAGE);
        for _ in 0..20 * PAGE_LEN {
            ledger.insert(&mut slab);
            ledger.remove_newest(&mut slab);
        }
        assert_eq!(
            slab.allocated_bytes(),
            bytes,
            "register/cancel grew the slab"
        );
        ledger.check_mut(&mut slab);
        ledger.clear(&mut slab);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE);
    }

    #[test]
    fn retiring_the_last_entry_still_releases_the_pages() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..PAGE_LEN as u64 + 1)
            .map(|i| slab.insert(i, waker()).unwrap())
            .collect();
        let last = keys[PAGE_LEN];
        slab.remove(last.index);
        slab.set_generation(last.index, u32::MAX);
        let last = slab.insert(7, waker()).unwrap();
        assert_eq!(last.generation, u32::MAX);
        for k in &keys[..PAGE_LEN] {
            slab.remove(k.index);
        }
        assert_eq!(slab.allocated_bytes(), 2 * ONE_PAGE, "one entry keeps them");
        // The slot retires as it empties the shard.
        slab.remove(last.index);
        assert_eq!(slab.len(), 0);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE, "the second page was kept");
    }

    /// A slab that empties with one page keeps its free list as it was:
    /// only a slab with more pages has pages to release and a free list to
    /// rebuild, so emptying a small shard (every time its last timer fires)
    /// costs no walk over the page.
    #[test]
    fn emptying_a_one_page_slab_keeps_its_free_list() {
        let mut slab = Slab::default();
        let keys: Vec<Key> = (0..3).map(|i| slab.insert(i, waker()).unwrap()).collect();
        for i in [0, 2, 1] {
            slab.remove(keys[i].index);
        }
        assert_eq!(slab.len(), 0);
        let order: Vec<u32> = (0..3)
            .map(|i| slab.insert(i, waker()).unwrap().index)
            .collect();
        assert_eq!(
            order,
            [keys[1].index, keys[2].index, keys[0].index],
            "the last freed slot is reused first"
        );
    }

    /// Every key up to the last one below `MAX_KEY` can be handed out, and
    /// then the slab is full. Retired page indexes stand in for the 4
    /// billion live entries below: growth steps over them without
    /// allocating, as it does over indexes whose generations ran out.
    #[test]
    fn the_slab_is_full_only_when_every_key_below_the_limit_is_used() {
        // The last page whose keys all lie below `MAX_KEY`.
        let last_page = (MAX_KEY as usize + 1) / PAGE_LEN - 1;
        let mut slab = Slab {
            floors: vec![RETIRED; last_page],
            ..Slab::default()
        };
        let first = slab.insert(0, waker()).unwrap();
        assert_eq!(first.index as usize, last_page * PAGE_LEN);
        let mut highest = first.index;
        for i in 1..PAGE_LEN as u64 {
            highest = slab.insert(i, waker()).unwrap().index;
        }
        assert!(highest < MAX_KEY, "key {highest} names a Sleep state");
        assert_eq!(highest as usize, last_page * PAGE_LEN + PAGE_LEN - 1);
        assert!(
            slab.insert(0, waker()).is_none(),
            "the next page passes the limit"
        );
        assert_eq!(slab.len(), PAGE_LEN);
        assert_eq!(
            slab.allocated_bytes(),
            ONE_PAGE,
            "retired indexes hold no memory"
        );
        // A freed key is reused, so the slab is not full any more.
        slab.remove(first.index);
        assert_eq!(slab.insert(9, waker()).unwrap().index, first.index);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Insert this many entries (past a page, so pages grow).
        Insert(usize),
        /// Remove the live entry at this position (modulo the live count).
        Remove(usize),
        /// Remove the newest entry and insert again, this many times: one
        /// slot is reused until its generations run out.
        Churn(usize),
        /// Remove every entry: the shard empties and releases its pages.
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (1usize..1500).prop_map(Op::Insert),
            3 => any::<usize>().prop_map(Op::Remove),
            3 => (1usize..8).prop_map(Op::Churn),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// Every page starts within a few generations of the top, so slots
        /// and pages run out of generations all the time: no key is ever
        /// handed out twice, no stale key reaches an entry, and emptying
        /// always brings the slab back to one page.
        #[test]
        fn stale_keys_never_match_under_random_reuse_growth_and_release(
            headroom in 0u32..8,
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let mut slab = Slab::with_first_generation(u32::MAX - headroom);
            let mut ledger = Ledger::default();
            for op in ops {
                match op {
                    Op::Insert(n) => {
                        for _ in 0..n {
                            ledger.insert(&mut slab);
                        }
                    }
                    Op::Remove(i) if !ledger.live.is_empty() => {
                        ledger.remove(&mut slab, i % ledger.live.len());
                    }
                    Op::Remove(_) => {}
                    Op::Churn(times) => {
                        for _ in 0..times {
                            if !ledger.live.is_empty() {
                                ledger.remove_newest(&mut slab);
                            }
                            ledger.insert(&mut slab);
                        }
                    }
                    Op::Clear => {
                        ledger.clear(&mut slab);
                        prop_assert!(slab.allocated_bytes() <= ONE_PAGE, "pages kept after emptying");
                    }
                }
                ledger.check(&slab);
            }
        }
    }
}
