//! Storage for a [`DelayQueue`](super::DelayQueue)'s items: pages of slots
//! addressed by `u32` indices, a generation per slot, and the links of the
//! lists the items sit in (`buckets.rs` owns those lists; this file only
//! stores the links).
//!
//! This is not the timer's own slab (`wheel/slab.rs`): a timer entry holds a
//! waker, a queue item holds the user's value, and the queue is meant to cost
//! far less per item than a task and a sleep each. So the layout is tighter:
//! an occupied slot is the value, the deadline and two links, and a free slot
//! reuses the same bytes (the deadline is never zero, which gives the enum its
//! tag for free: 24 bytes for a `u64` value). Generations live beside the
//! slots, 4 bytes each, so they survive the value's removal: slots come in
//! pairs followed by their two generations, so checking a key and reading
//! its item is one place in memory.
//!
//! Growth never copies a full page: the first page doubles from 8 slots up to
//! [`PAGE_LEN`] (so a small queue stays small), later pages are allocated at
//! full size. Items never move, so a key stays valid without any remapping
//! table, and `compact` can only release pages that hold no item.
//!
//! No key is handed out twice:
//! - a slot's generation only counts up; a slot that has handed out
//!   `u32::MAX` is retired (left out of the free list) instead of wrapping;
//! - a released page remembers a floor one above every generation its slots
//!   reached, and a page grown again at that index starts every slot there.
//!   A page whose floor saturates is never grown again.

use std::num::NonZeroU64;

use super::key::Key;

/// The "no item" index ending every list; every index is below it.
pub(super) const NIL: u32 = (1 << TAG_SHIFT) - 1;

/// `prev` values at or above this mark the head of a list and name the list
/// (`buckets.rs` decides the names); indices are always below it.
pub(super) const HEAD: u32 = 1 << 31;

/// An item's `link` keeps its successor's index below this bit and a 2-bit
/// tag above it (`buckets.rs` uses the tag to say which kind of list the
/// item is in).
const TAG_SHIFT: u32 = 30;

const PAGE_SHIFT: u32 = 10;
/// Slots per page (the first page grows up to this).
pub(super) const PAGE_LEN: usize = 1 << PAGE_SHIFT;
const PAGE_MASK: u32 = PAGE_LEN as u32 - 1;
/// The first page's first allocation.
const FIRST_PAGE_MIN: usize = 8;
/// The most pages: every index stays below [`NIL`].
const MAX_PAGES: usize = (NIL as usize) >> PAGE_SHIFT;

/// A deadline as signed nanoseconds from the timer's origin, stored so that
/// it is never zero (the slot enum keeps its tag in that niche).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Deadline(NonZeroU64);

impl Deadline {
    const BIAS: u64 = 1 << 63;

    /// `offset` as stored. `i64::MIN` (some 292 years before the origin) is
    /// stored as one nanosecond later: both are long past.
    pub(super) fn new(offset: i64) -> Self {
        let biased = (offset.max(i64::MIN + 1) as u64) ^ Self::BIAS;
        Deadline(NonZeroU64::new(biased).unwrap_or(NonZeroU64::MIN))
    }

    /// Signed nanoseconds from the timer's origin.
    pub(super) fn offset(self) -> i64 {
        (self.0.get() ^ Self::BIAS) as i64
    }
}

/// One item in the queue.
#[derive(Debug)]
pub(super) struct Item<T> {
    pub(super) value: T,
    pub(super) deadline: Deadline,
    /// The next item in the same list ([`NIL`] at the end) and the list's
    /// tag: see [`Item::next`] and [`Item::tag`].
    link: u32,
    /// Previous item in the same list, or (at the head) [`HEAD`] plus the
    /// list's name.
    pub(super) prev: u32,
}

impl<T> Item<T> {
    /// The next item in the same list, or [`NIL`].
    pub(super) fn next(&self) -> u32 {
        self.link & NIL
    }

    pub(super) fn set_next(&mut self, next: u32) {
        debug_assert!(next <= NIL);
        self.link = (self.link & !NIL) | next;
    }

    /// The 2-bit tag `buckets.rs` keeps with the item.
    pub(super) fn tag(&self) -> u32 {
        self.link >> TAG_SHIFT
    }

    pub(super) fn set_tag(&mut self, tag: u32) {
        debug_assert!(tag < 4);
        self.link = (self.link & NIL) | (tag << TAG_SHIFT);
    }
}

#[derive(Debug)]
enum Slot<T> {
    Occupied(Item<T>),
    /// Free; `next_free` continues the free list ([`NIL`] at its end).
    Vacant {
        next_free: u32,
    },
}

/// Two slots and their generations side by side, so a slot and its
/// generation share a cache line (or sit in adjacent ones): a key check is
/// one memory access, not two, at the same 4 bytes a slot.
#[derive(Debug)]
struct Pair<T> {
    slots: [Slot<T>; 2],
    generations: [u32; 2],
}

#[derive(Debug)]
struct Page<T> {
    /// Empty while the page is released.
    pairs: Vec<Pair<T>>,
    /// Occupied slots.
    used: u32,
    /// The generation every slot starts at when the page is (re)grown.
    floor: u32,
}

impl<T> Page<T> {
    fn released(floor: u32) -> Self {
        Page {
            pairs: Vec::new(),
            used: 0,
            floor,
        }
    }

    fn slots(&self) -> usize {
        self.pairs.len() * 2
    }

    /// Drops the pairs after the last one holding an item or a retired slot
    /// (kept so that its last key is never handed out again), raising the
    /// floor above every generation dropped. Returns `true` if it dropped
    /// any. Only the first page is ever shorter than [`PAGE_LEN`], so only
    /// it is trimmed.
    fn trim(&mut self) -> bool {
        let keep = self
            .pairs
            .iter()
            .rposition(|pair| {
                pair.slots
                    .iter()
                    .any(|slot| matches!(slot, Slot::Occupied(_)))
                    || pair.generations.contains(&u32::MAX)
            })
            .map_or(0, |last| last + 1);
        if keep == self.pairs.len() {
            return false;
        }
        // Below u32::MAX: the retired slots are kept.
        let highest = self.pairs[keep..]
            .iter()
            .flat_map(|pair| pair.generations)
            .max()
            .unwrap_or(self.floor);
        self.floor = self.floor.max(highest + 1);
        self.pairs.truncate(keep);
        self.pairs.shrink_to_fit();
        true
    }

    fn slot(&self, offset: usize) -> Option<(&Slot<T>, u32)> {
        let pair = self.pairs.get(offset / 2)?;
        Some((&pair.slots[offset % 2], pair.generations[offset % 2]))
    }

    fn slot_mut(&mut self, offset: usize) -> (&mut Slot<T>, &mut u32) {
        let pair = &mut self.pairs[offset / 2];
        (
            &mut pair.slots[offset % 2],
            &mut pair.generations[offset % 2],
        )
    }

    /// Every slot with its generation, lowest offset first.
    fn slots_mut(&mut self) -> impl Iterator<Item = (&mut Slot<T>, &mut u32)> {
        self.pairs.iter_mut().flat_map(|pair| {
            let [a, b] = &mut pair.slots;
            let [ga, gb] = &mut pair.generations;
            [(a, ga), (b, gb)]
        })
    }
}

#[derive(Debug)]
pub(super) struct Slab<T> {
    pages: Vec<Page<T>>,
    /// Head of the free list.
    free: u32,
    /// Slots on the free list.
    free_len: usize,
    /// Occupied slots.
    len: usize,
}

impl<T> Slab<T> {
    pub(super) fn new() -> Self {
        Slab {
            pages: Vec::new(),
            free: NIL,
            free_len: 0,
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated, occupied or not.
    pub(super) fn capacity(&self) -> usize {
        self.pages.iter().map(Page::slots).sum()
    }

    /// Bytes held by the pages (slots and generations), for `Debug`.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.pages
            .iter()
            .map(|page| page.pairs.capacity() * std::mem::size_of::<Pair<T>>())
            .sum()
    }

    /// Grows until `additional` more items fit without allocating. Returns
    /// `false` if the index space ran out first.
    pub(super) fn reserve(&mut self, additional: usize) -> bool {
        // Growth puts its new slots at the front of the free list; growing
        // past free slots would hand out high indices first, which keeps
        // pages from emptying and `compact` from trimming.
        let mut reorder = false;
        while self.free_len < additional {
            reorder |= self.free != NIL;
            if !self.grow() {
                return false;
            }
        }
        if reorder {
            self.rebuild_free_list();
        }
        true
    }

    /// Stores an unlinked item; `None` if every index is in use or retired
    /// (about a billion items).
    pub(super) fn insert(&mut self, value: T, deadline: Deadline) -> Option<Key> {
        if self.free == NIL && !self.grow() {
            return None;
        }
        let index = self.free;
        let (page, offset) = split(index);
        let page = &mut self.pages[page];
        let (slot, &mut generation) = page.slot_mut(offset);
        let Slot::Vacant { next_free } = *slot else {
            unreachable!("slot {index} is on the free list while occupied");
        };
        *slot = Slot::Occupied(Item {
            value,
            deadline,
            link: NIL,
            prev: NIL,
        });
        page.used += 1;
        self.free = next_free;
        self.free_len -= 1;
        self.len += 1;
        Some(Key { index, generation })
    }

    /// The item behind `key`, or `None` if it has left the queue since.
    pub(super) fn get(&self, key: Key) -> Option<&Item<T>> {
        let (page, offset) = split(key.index);
        match self.pages.get(page)?.slot(offset)? {
            (Slot::Occupied(item), generation) if generation == key.generation => Some(item),
            _ => None,
        }
    }

    /// The occupied slot at `index` (lists reach items by index).
    pub(super) fn at(&self, index: u32) -> &Item<T> {
        let (page, offset) = split(index);
        match self.pages[page].slot(offset) {
            Some((Slot::Occupied(item), _)) => item,
            _ => unreachable!("slot {index} is linked while vacant"),
        }
    }

    pub(super) fn at_mut(&mut self, index: u32) -> &mut Item<T> {
        let (page, offset) = split(index);
        match self.pages[page].slot_mut(offset).0 {
            Slot::Occupied(item) => item,
            Slot::Vacant { .. } => unreachable!("slot {index} is linked while vacant"),
        }
    }

    /// The key of the occupied slot at `index`.
    pub(super) fn key_at(&self, index: u32) -> Key {
        let (page, offset) = split(index);
        let generation = self.pages[page].slot(offset).map_or(0, |(_, g)| g);
        Key { index, generation }
    }

    /// Frees the occupied slot at `index` (already unlinked from its list)
    /// and returns its item and the key it had.
    pub(super) fn remove(&mut self, index: u32) -> (Item<T>, Key) {
        let (page_index, offset) = split(index);
        let page = &mut self.pages[page_index];
        let (slot, generation) = page.slot_mut(offset);
        let key = Key {
            index,
            generation: *generation,
        };
        let retire = *generation == u32::MAX;
        let next_free = if retire { NIL } else { self.free };
        let Slot::Occupied(item) = std::mem::replace(slot, Slot::Vacant { next_free }) else {
            unreachable!("slot {index} removed while vacant");
        };
        if !retire {
            // The next key from this slot can never equal the one just used.
            *generation += 1;
            self.free = index;
            self.free_len += 1;
        }
        page.used -= 1;
        self.len -= 1;
        (item, key)
    }

    /// Removes every item, keeping the pages (as `Vec::clear` keeps its
    /// buffer). Every key handed out so far becomes stale.
    pub(super) fn clear(&mut self) {
        for page in &mut self.pages {
            for (slot, generation) in page.slots_mut() {
                if matches!(slot, Slot::Occupied(_)) {
                    *slot = Slot::Vacant { next_free: NIL };
                    // A slot at the last generation stays there, retired
                    // by the rebuild below.
                    *generation = generation.saturating_add(1);
                }
            }
            page.used = 0;
        }
        self.len = 0;
        self.rebuild_free_list();
    }

    /// Releases the memory of pages that hold no item: only trailing ones
    /// when `anywhere` is false (`shrink_to_fit`), every one otherwise
    /// (`compact`). The first page, the one page that is not always full
    /// size, is also trimmed to its last item when it is reached. Items never
    /// move, so every key stays valid.
    pub(super) fn release_empty_pages(&mut self, anywhere: bool) {
        let mut released = false;
        for (index, page) in self.pages.iter_mut().enumerate().rev() {
            if page.used != 0 {
                if index == 0 {
                    released |= page.trim();
                }
                if anywhere {
                    continue;
                }
                break;
            }
            if page.pairs.is_empty() {
                continue;
            }
            // Above every generation the page handed out; saturates (and so
            // retires the page) near the top.
            let highest = page
                .pairs
                .iter()
                .flat_map(|pair| pair.generations)
                .max()
                .unwrap_or(page.floor);
            *page = Page::released(highest.saturating_add(1).max(page.floor));
            released = true;
        }
        // Released pages keep their place (and floor) in `pages`: 40 bytes
        // per 1024 slots of the queue's peak.
        if released {
            self.rebuild_free_list();
        }
    }

    /// Threads the free list through every vacant, unretired slot, lowest
    /// index first (so reuse stays in the lowest pages).
    fn rebuild_free_list(&mut self) {
        let mut free = Vec::new();
        for (page_index, page) in self.pages.iter_mut().enumerate() {
            let base = (page_index << PAGE_SHIFT) as u32;
            for (offset, (slot, generation)) in page.slots_mut().enumerate() {
                if let Slot::Vacant { next_free } = slot {
                    *next_free = NIL;
                    // A slot at the last generation is retired.
                    if *generation != u32::MAX {
                        free.push(base + offset as u32);
                    }
                }
            }
        }
        for pair in free.windows(2) {
            let (page, offset) = split(pair[0]);
            if let (Slot::Vacant { next_free }, _) = self.pages[page].slot_mut(offset) {
                *next_free = pair[1];
            }
        }
        self.free = free.first().copied().unwrap_or(NIL);
        self.free_len = free.len();
    }

    /// Adds vacant slots to the free list: doubles the first page while it
    /// is short, else grows a released page again, else adds a page.
    /// Returns `false` once no index is left.
    fn grow(&mut self) -> bool {
        if let Some(first) = self.pages.first() {
            let len = first.slots();
            if len > 0 && len < PAGE_LEN {
                // A trimmed first page need not be a power of two.
                self.extend_page(0, (len * 2).min(PAGE_LEN));
                return true;
            }
        }
        let reuse = self
            .pages
            .iter()
            .position(|page| page.pairs.is_empty() && page.floor != u32::MAX);
        let index = match reuse {
            Some(index) => index,
            None if self.pages.len() < MAX_PAGES => {
                self.pages.push(Page::released(0));
                self.pages.len() - 1
            }
            None => return false,
        };
        let len = if index == 0 { FIRST_PAGE_MIN } else { PAGE_LEN };
        self.extend_page(index, len);
        true
    }

    /// Extends page `index` to `len` vacant slots (an even number) at its
    /// floor and puts the new ones on the free list, lowest first.
    fn extend_page(&mut self, index: usize, len: usize) {
        let base = (index << PAGE_SHIFT) as u32;
        let free = self.free;
        let page = &mut self.pages[index];
        let old = page.slots();
        let next_free = |offset: usize| {
            if offset + 1 < len {
                base + offset as u32 + 1
            } else {
                free
            }
        };
        page.pairs.reserve_exact((len - old) / 2);
        for offset in (old..len).step_by(2) {
            page.pairs.push(Pair {
                slots: [
                    Slot::Vacant {
                        next_free: next_free(offset),
                    },
                    Slot::Vacant {
                        next_free: next_free(offset + 1),
                    },
                ],
                generations: [page.floor; 2],
            });
        }
        self.free = base + old as u32;
        self.free_len += len - old;
    }
}

#[cfg(test)]
impl<T> Slab<T> {
    /// Moves the vacant slot at `index` on to `generation`, as if it had
    /// been reused that many times.
    pub(super) fn set_generation(&mut self, index: u32, generation: u32) {
        let (page, offset) = split(index);
        let (slot, current) = self.pages[page].slot_mut(offset);
        assert!(matches!(slot, Slot::Vacant { .. }));
        assert!(generation >= *current);
        *current = generation;
    }
}

/// The page and the offset in it of `index`.
fn split(index: u32) -> (usize, usize) {
    ((index >> PAGE_SHIFT) as usize, (index & PAGE_MASK) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn d(offset: i64) -> Deadline {
        Deadline::new(offset)
    }

    /// Every index stays below `NIL` (which ends the lists): the page that
    /// would hold `NIL` is never grown, so the slab is full one page short
    /// of 2^20 pages. Retired pages stand in for the ones before (32 MB of
    /// page headers instead of a billion items).
    #[test]
    fn the_slab_is_full_before_an_index_reaches_nil() {
        let pages_below_nil = (NIL >> PAGE_SHIFT) as usize; // 2^20 - 1
        let mut slab: Slab<u8> = Slab::new();
        slab.pages = (0..pages_below_nil - 1)
            .map(|_| Page::released(u32::MAX))
            .collect();
        for _ in 0..PAGE_LEN {
            let key = slab.insert(0, d(1)).expect("the last page has room");
            assert!(key.index < NIL, "index {} reaches NIL", key.index);
        }
        assert!(
            slab.insert(0, d(1)).is_none(),
            "grew the page that holds NIL"
        );
    }

    #[test]
    fn a_slot_holding_a_u64_and_its_generation_take_28_bytes() {
        assert_eq!(std::mem::size_of::<Slot<u64>>(), 24);
        assert_eq!(std::mem::size_of::<Pair<u64>>(), 2 * 28);
        assert_eq!(std::mem::size_of::<Slot<()>>(), 16);
    }

    #[test]
    fn the_tag_and_the_next_index_share_a_word() {
        let mut slab = Slab::new();
        let key = slab.insert(1u8, d(0)).unwrap();
        let item = slab.at_mut(key.index);
        assert_eq!((item.next(), item.tag()), (NIL, 0));
        item.set_tag(3);
        item.set_next(12);
        assert_eq!((item.next(), item.tag()), (12, 3));
        item.set_next(NIL);
        item.set_tag(1);
        assert_eq!((item.next(), item.tag()), (NIL, 1));
    }

    #[test]
    fn deadlines_round_trip_except_the_very_first_nanosecond() {
        for offset in [i64::MIN + 1, -5, -1, 0, 1, 1_000_000_007, i64::MAX] {
            assert_eq!(Deadline::new(offset).offset(), offset);
        }
        assert_eq!(Deadline::new(i64::MIN).offset(), i64::MIN + 1);
    }

    #[test]
    fn stale_keys_never_reach_a_reused_slot() {
        let mut slab = Slab::new();
        let a = slab.insert("a", d(1)).unwrap();
        let (item, key) = slab.remove(a.index);
        assert_eq!((item.value, key), ("a", a));
        assert!(slab.get(a).is_none());
        let b = slab.insert("b", d(2)).unwrap();
        assert_eq!(b.index, a.index, "the freed slot is reused first");
        assert_ne!(b.generation, a.generation);
        assert!(slab.get(a).is_none());
        assert_eq!(slab.get(b).unwrap().value, "b");
        assert_eq!(slab.key_at(b.index), b);
    }

    #[test]
    fn a_slot_is_retired_before_its_generation_wraps() {
        let mut slab = Slab::new();
        let a = slab.insert(1u8, d(1)).unwrap();
        slab.remove(a.index);
        slab.set_generation(a.index, u32::MAX);
        let last = slab.insert(2, d(1)).unwrap();
        assert_eq!((last.index, last.generation), (a.index, u32::MAX));
        slab.remove(last.index);
        // The slot is not reused: the next insert takes another index.
        let next = slab.insert(3, d(1)).unwrap();
        assert_ne!(next.index, a.index);
        assert!(slab.get(last).is_none());
        // Nor after clear or a rebuild of the free list.
        slab.clear();
        for _ in 0..PAGE_LEN {
            let key = slab.insert(4, d(1)).unwrap();
            assert_ne!(key.index, a.index);
        }
    }

    #[test]
    fn growth_doubles_the_first_page_then_adds_full_pages() {
        let mut slab = Slab::new();
        assert_eq!(slab.capacity(), 0);
        slab.insert(0u64, d(0)).unwrap();
        assert_eq!(slab.capacity(), FIRST_PAGE_MIN);
        for i in 1..=PAGE_LEN as u64 {
            slab.insert(i, d(0)).unwrap();
        }
        assert_eq!(slab.capacity(), 2 * PAGE_LEN);
        assert!(slab.reserve(PAGE_LEN * 2));
        assert!(slab.capacity() - slab.len() >= PAGE_LEN * 2);
        assert_eq!(slab.capacity() % PAGE_LEN, 0);
    }

    /// The first page doubles (8, 16, 32, ... 1024 slots), and every page
    /// allocates exactly its slots: the bytes `Debug` and the README quote
    /// per item are the pairs in use, with no spare capacity.
    #[test]
    fn the_first_page_doubles_and_every_page_allocates_exactly_its_slots() {
        let pair = std::mem::size_of::<Pair<u64>>();
        let mut slab = Slab::new();
        assert_eq!(slab.allocated_bytes(), 0);
        let mut expected = FIRST_PAGE_MIN;
        for i in 0..=PAGE_LEN as u64 {
            slab.insert(i, d(0)).unwrap();
            if slab.len() > expected {
                expected = if expected < PAGE_LEN {
                    expected * 2
                } else {
                    expected + PAGE_LEN
                };
            }
            assert_eq!(slab.capacity(), expected, "after {} items", slab.len());
            assert_eq!(
                slab.allocated_bytes(),
                expected / 2 * pair,
                "after {} items",
                slab.len()
            );
        }
        assert_eq!(slab.capacity(), 2 * PAGE_LEN);
    }

    /// `reserve` grows only past the free slots it has, and after growing
    /// hands out the lowest free slots first (so pages can empty again and
    /// `compact` can trim).
    #[test]
    fn reserve_grows_only_when_needed_and_keeps_the_lowest_slots_first() {
        let mut slab = Slab::new();
        slab.insert(0u64, d(0)).unwrap();
        let free = slab.capacity() - slab.len();
        assert!(slab.reserve(free));
        assert_eq!(slab.capacity(), FIRST_PAGE_MIN, "grew with room to spare");
        assert!(slab.reserve(free + 1));
        assert_eq!(slab.capacity(), 2 * FIRST_PAGE_MIN);
        let next = slab.insert(1, d(0)).unwrap();
        assert_eq!(next.index, 1, "the lowest free slot comes first");
    }

    /// A page released by compaction is grown again before any new page is
    /// added, so compacting and regrowing never uses up the index space.
    #[test]
    fn a_released_page_is_grown_again_before_a_new_one() {
        let mut slab = Slab::new();
        let keys: Vec<_> = (0..2 * PAGE_LEN as u64)
            .map(|i| slab.insert(i, d(0)).unwrap())
            .collect();
        for key in &keys[PAGE_LEN..] {
            slab.remove(key.index);
        }
        slab.release_empty_pages(true);
        assert_eq!(slab.capacity(), PAGE_LEN);
        for i in 0..PAGE_LEN as u64 {
            slab.insert(i, d(0)).unwrap();
        }
        assert_eq!(
            slab.pages.len(),
            2,
            "a new page instead of the released one"
        );
    }

    /// A first page trimmed to a length that is not a power of two (6
    /// slots) doubles back and stops at exactly a full page, allocating no
    /// more than its slots (768 -> 1024 slots, not 1536).
    #[test]
    fn a_trimmed_first_page_regrows_to_exactly_a_page() {
        let pair = std::mem::size_of::<Pair<u64>>();
        let mut slab = Slab::new();
        let keys: Vec<_> = (0..8u64).map(|i| slab.insert(i, d(0)).unwrap()).collect();
        for key in keys.iter().filter(|key| key.index != 5) {
            slab.remove(key.index);
        }
        slab.release_empty_pages(true);
        assert_eq!(slab.capacity(), 6);
        while slab.capacity() < PAGE_LEN {
            slab.insert(0, d(0)).unwrap();
            assert_eq!(slab.allocated_bytes(), slab.capacity() / 2 * pair);
        }
        assert_eq!(slab.capacity(), PAGE_LEN);
    }

    #[test]
    fn keys_stay_unique_through_compaction_and_regrowth() {
        let mut slab = Slab::new();
        let mut seen = HashSet::new();
        let mut live = Vec::new();
        for round in 0..4u32 {
            for i in 0..3 * PAGE_LEN as u32 {
                let key = slab.insert(i, d(i64::from(round))).unwrap();
                assert!(seen.insert(key), "key {key:?} handed out twice");
                live.push(key);
            }
            // Keep one item on the second page only.
            let keep = live
                .iter()
                .copied()
                .find(|k| k.index as usize == PAGE_LEN + 5);
            for key in live.drain(..) {
                if Some(key) != keep {
                    slab.remove(key.index);
                }
            }
            live.extend(keep);
            slab.release_empty_pages(true);
            assert_eq!(slab.capacity(), PAGE_LEN, "only the kept item's page stays");
            for key in &seen {
                assert_eq!(slab.get(*key).is_some(), live.contains(key));
            }
        }
    }

    #[test]
    fn compacting_trims_the_first_page_and_never_reissues_a_key() {
        let mut slab = Slab::new();
        let keys: Vec<_> = (0..6).map(|i| slab.insert(i, d(0)).unwrap()).collect();
        assert_eq!(slab.capacity(), FIRST_PAGE_MIN);
        for key in &keys[1..] {
            slab.remove(key.index);
        }
        slab.release_empty_pages(true);
        assert_eq!(slab.capacity(), 2, "trimmed to the pair of its last item");
        // Regrowth doubles from there, and hands out none of the old keys.
        for _ in 0..PAGE_LEN + 10 {
            let key = slab.insert(9, d(0)).unwrap();
            assert!(!keys.contains(&key), "{key:?} handed out twice");
        }
        assert_eq!(
            slab.capacity(),
            2 * PAGE_LEN,
            "the first page stops at full size"
        );
        assert_eq!(slab.get(keys[0]).unwrap().value, 0);
    }

    #[test]
    fn trimming_keeps_a_retired_slot() {
        let mut slab = Slab::new();
        let a = slab.insert(1u8, d(0)).unwrap();
        let b = slab.insert(2, d(0)).unwrap();
        let c = slab.insert(3, d(0)).unwrap();
        slab.remove(c.index);
        slab.set_generation(c.index, u32::MAX);
        let last = slab.insert(4, d(0)).unwrap();
        assert_eq!((last.index, last.generation), (c.index, u32::MAX));
        slab.remove(last.index);
        slab.remove(b.index);
        slab.release_empty_pages(true);
        // The pair holding the retired slot stays, so its key is never
        // handed out again by a regrown slot.
        assert_eq!(slab.capacity(), 4);
        for _ in 0..20 {
            assert_ne!(slab.insert(5, d(0)).unwrap(), last);
        }
        assert_eq!(slab.get(a).unwrap().value, 1);
    }

    #[test]
    fn shrinking_releases_only_trailing_pages() {
        let mut slab = Slab::new();
        let keys: Vec<_> = (0..3 * PAGE_LEN)
            .map(|i| slab.insert(i, d(0)).unwrap())
            .collect();
        // Empty the middle page and the last one.
        for key in &keys[PAGE_LEN..] {
            slab.remove(key.index);
        }
        let capacity = slab.capacity();
        slab.release_empty_pages(false);
        assert_eq!(slab.capacity(), PAGE_LEN);
        assert!(capacity > slab.capacity());
        assert_eq!(slab.len(), PAGE_LEN);
        for key in &keys[..PAGE_LEN] {
            assert!(slab.get(*key).is_some());
        }
        for key in &keys[PAGE_LEN..] {
            assert!(slab.get(*key).is_none());
        }
        // Growing again never revives an old key.
        for _ in 0..2 * PAGE_LEN {
            let key = slab.insert(0, d(0)).unwrap();
            assert!(!keys.contains(&key));
        }
    }
}
