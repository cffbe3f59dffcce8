//! Storage for a wheel's nodes: pages of slots addressed by `u32` indices,
//! a generation per slot, and the links of the lists the nodes sit in
//! (`mod.rs` owns those lists; this file only stores the links).
//!
//! A node is its payload (a waker for the timer, the user's value for a
//! `DelayQueue`), its deadline and two links. A free slot reuses the same
//! bytes: the deadline is never zero, which gives the slot enum its tag for
//! free, so a slot is the node's size (24 bytes for a `u64` value, 32 for a
//! waker).
//!
//! Keys stand in for pointers: lists link nodes by index, and a `Sleep` or a
//! queue's `Key` remembers its slot's index. What else a slot keeps depends
//! on whether a key can be used after its node is gone:
//! - a queue's `Key` is the user's, who may pass it back after the item came
//!   out: each slot has a generation beside it, 4 bytes, bumped when its node
//!   is removed, so a stale key can never read or unlink the slot's next
//!   occupant. Generations survive the node's removal: slots come in pairs
//!   followed by their two generations, so checking a key and reading its
//!   node is one place in memory;
//! - a timer's key is held by one `Sleep`, and only that sleep frees the slot
//!   (even a fired entry's slot waits for it: `sleeps.rs`), so no stale key
//!   exists and the slot keeps nothing beside it ([`OWNED`]): 32 bytes per
//!   pending sleep instead of 36. Its keys are all `(index, 0)`.
//!
//! Growth never copies a full page: the first page starts at its owner's
//! size ([`Slab::new`]: a queue's at 8 slots, doubling up to [`PAGE_LEN`],
//! so a small queue stays small; a timer shard's at a full page), later
//! pages are allocated at full size. Nodes never move, so a key stays valid
//! without any remapping table, and a page can only be released while it
//! holds no node. Freed slots go on a free list threaded through the vacant
//! slots, so an insert after a remove reuses memory instead of allocating.
//!
//! No key is handed out twice:
//! - a slot's generation only counts up; a slot that has handed out
//!   `u32::MAX` is retired (left out of the free list) instead of wrapping;
//! - a released page keeps its place with a floor one above every generation
//!   its slots reached, and a page grown again at that index starts every
//!   slot there. A page whose floor saturates is never grown again.

use std::num::NonZeroU64;

use super::SATURATED;

/// The "no node" index ending every list; every index is below it.
pub(crate) const NIL: u32 = (1 << FLAG_SHIFT) - 1;

/// Keys at or above this are never handed out: `Sleep` uses the values
/// above it to name its unregistered and completed states.
pub(crate) const MAX_KEY: u32 = NIL;

/// `prev` values at or above this mark the head of a list and name the list
/// (`mod.rs` decides the names); indices are always below it.
pub(crate) const HEAD: u32 = 1 << 31;

/// The links of a node on no list, for [`Slab::put`].
pub(crate) const UNLINKED: [u32; 2] = [NIL, NIL];

/// A node's `link` keeps its successor's index below this bit and two flags
/// above it.
const FLAG_SHIFT: u32 = 30;

/// Flag of `link`: the node is in the wheel's `due` list.
const DUE: u32 = 1 << FLAG_SHIFT;

/// Flag of `link`: kept for the payload's owner, never changed by linking
/// (the timer marks a deadline set by a reset that did not read the clock).
const MARK: u32 = 1 << (FLAG_SHIFT + 1);

const PAGE_SHIFT: u32 = 10;
/// Slots per page (the first page may start smaller and grow up to this).
pub(crate) const PAGE_LEN: usize = 1 << PAGE_SHIFT;
const PAGE_MASK: u32 = PAGE_LEN as u32 - 1;
/// The most pages: every index stays below [`NIL`].
const MAX_PAGES: usize = (NIL as usize) >> PAGE_SHIFT;
/// The most nodes a slab can hold: every page full (2^30 - 1,024).
const MAX_NODES: usize = MAX_PAGES * PAGE_LEN;

/// Whether `additional` more nodes beside `len` could ever fit: a reserve
/// past this is refused before it allocates a page.
fn fits_the_index_space(len: usize, additional: usize) -> bool {
    len.saturating_add(additional) <= MAX_NODES
}

/// A deadline as signed nanoseconds from the timer's origin, stored so that
/// it is never zero (the slot enum keeps its tag in that niche).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deadline(NonZeroU64);

impl Deadline {
    const BIAS: u64 = 1 << 63;

    /// `offset` as stored. `i64::MIN` (some 292 years before the origin) is
    /// stored as one nanosecond later: both are long past.
    #[inline]
    pub(crate) fn new(offset: i64) -> Self {
        let biased = (offset.max(i64::MIN + 1) as u64) ^ Self::BIAS;
        Deadline(NonZeroU64::new(biased).unwrap_or(NonZeroU64::MIN))
    }

    /// A deadline `ns` nanoseconds after the origin; every `ns` at or past
    /// [`SATURATED`] is stored as `SATURATED` (they all never fire).
    #[inline]
    pub(crate) fn from_ns(ns: u64) -> Self {
        Deadline::new(ns.min(SATURATED) as i64)
    }

    /// Signed nanoseconds from the timer's origin.
    #[inline]
    pub(crate) fn offset(self) -> i64 {
        (self.0.get() ^ Self::BIAS) as i64
    }

    /// Nanoseconds since the origin as the wheel files them: deadlines
    /// before the origin count as the origin (they are already due).
    #[inline]
    pub(crate) fn ns(self) -> u64 {
        self.offset().max(0) as u64
    }
}

/// One node of the wheel.
pub(crate) struct Node<P> {
    pub(crate) payload: P,
    pub(crate) deadline: Deadline,
    /// The next node in the same list ([`NIL`] at the end) and two flags:
    /// see [`Node::next`], [`Node::is_due`] and [`Node::take_mark`].
    link: u32,
    /// Previous node in the same list, or (at the head) [`HEAD`] plus the
    /// list's name.
    pub(crate) prev: u32,
}

impl<P> Node<P> {
    /// The next node in the same list, or [`NIL`].
    #[inline]
    pub(crate) fn next(&self) -> u32 {
        self.link & NIL
    }

    #[inline]
    pub(crate) fn set_next(&mut self, next: u32) {
        debug_assert!(next <= NIL);
        self.link = (self.link & !NIL) | next;
    }

    /// Links this node after `prev` (a node, or at the head [`HEAD`] plus
    /// the list's name) and before `next`, in the `due` list or not; keeps
    /// the mark.
    #[inline]
    pub(crate) fn set_links(&mut self, prev: u32, next: u32, due: bool) {
        let [prev, link] = Self::links(prev, next, due);
        self.prev = prev;
        self.link = (self.link & MARK) | link;
    }

    /// `[prev, link]` of a node linked after `prev` and before `next`, in
    /// the `due` list or not, unmarked: see [`Node::set_links`].
    #[inline]
    pub(crate) fn links(prev: u32, next: u32, due: bool) -> [u32; 2] {
        debug_assert!(next <= NIL);
        [prev, if due { DUE } else { 0 } | next]
    }

    /// Whether the node is in the wheel's `due` list (a queue's) or its
    /// `fresh` list (a timer's): no wheel uses both.
    #[inline]
    pub(crate) fn is_due(&self) -> bool {
        self.link & DUE != 0
    }

    /// The owner's flag.
    #[cfg(test)]
    pub(crate) fn mark(&self) -> bool {
        self.link & MARK != 0
    }

    #[inline]
    pub(crate) fn set_mark(&mut self, mark: bool) {
        self.link = (self.link & !MARK) | if mark { MARK } else { 0 };
    }

    /// The owner's flag; clears it.
    #[inline]
    pub(crate) fn take_mark(&mut self) -> bool {
        let was = self.link & MARK != 0;
        self.link &= !MARK;
        was
    }
}

/// A slab's `G` (its generations per pair of slots) when no key is used
/// after its slot is freed, as a timer's: none. The default, 2, gives each
/// slot one.
pub(crate) const OWNED: usize = 0;

/// A stable handle to a slot: valid until its node is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

enum Slot<P> {
    Occupied(Node<P>),
    /// Free; the index it holds continues the free list ([`NIL`] at its
    /// end).
    Vacant(u32),
}

/// Two slots and their generations side by side, so a slot and its
/// generation share a cache line (or sit in adjacent ones): a key check is
/// one memory access, not two, at the same 4 bytes a slot (none with
/// [`OWNED`]).
struct Pair<P, const G: usize = 2> {
    slots: [Slot<P>; 2],
    generations: [u32; G],
}

struct Page<P, const G: usize = 2> {
    /// Empty while the page is released.
    pairs: Vec<Pair<P, G>>,
    /// Occupied slots.
    used: u32,
    /// The generation every slot starts at when the page is (re)grown.
    floor: u32,
}

impl<P, const G: usize> Page<P, G> {
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

    /// Drops the pairs after the last one holding a node or a retired slot
    /// (kept so that its last key is never handed out again). Returns
    /// `true` if it dropped any. Only the first page is ever shorter than
    /// [`PAGE_LEN`], so only it is trimmed.
    fn trim(&mut self) -> bool {
        let keep = self
            .pairs
            .iter()
            .rposition(|pair| {
                matches!(pair.slots, [Slot::Occupied(_), _] | [_, Slot::Occupied(_)])
                    || pair.generations.contains(&u32::MAX)
            })
            .map_or(0, |last| last + 1);
        if keep == self.pairs.len() {
            return false;
        }
        self.release(keep);
        true
    }

    /// Releases the memory of the pairs from `keep` on (every pair for 0),
    /// raising the floor above every generation they handed out
    /// (saturating, which retires the page, near the top).
    fn release(&mut self, keep: usize) {
        let highest = self.pairs[keep..]
            .iter()
            .flat_map(|pair| pair.generations)
            .max()
            .unwrap_or(self.floor);
        self.floor = self.floor.max(highest.saturating_add(1));
        self.pairs.truncate(keep);
        self.pairs.shrink_to_fit();
    }

    #[inline]
    fn slot(&self, offset: usize) -> Option<(&Slot<P>, u32)> {
        let pair = self.pairs.get(offset / 2)?;
        Some((
            &pair.slots[offset % 2],
            pair.generations.get(offset % 2).map_or(0, |g| *g),
        ))
    }

    #[inline]
    fn slot_mut(&mut self, offset: usize) -> (&mut Slot<P>, Option<&mut u32>) {
        let (pair, side) = (&mut self.pairs[offset / 2], offset % 2);
        (&mut pair.slots[side], pair.generations.get_mut(side))
    }
}

pub(crate) struct Slab<P, const G: usize = 2> {
    pages: Vec<Page<P, G>>,
    /// Head of the free list.
    free: u32,
    /// Slots on the free list. A `u32` (indices are), not a `usize` beside
    /// `len`: two adjacent `usize` counters get one 16-byte vector update in
    /// `put` (`insert` then), which waits on `remove`'s two 8-byte updates of the same
    /// bytes (a failed store-to-load forward, the hottest instruction of
    /// `insert` in a profile of W2: BENCHMARKS.md, the thirteenth stop).
    free_len: u32,
    /// Occupied slots.
    len: usize,
    /// Pages holding memory.
    allocated: usize,
    /// Slots of the first page's first allocation.
    first_page: usize,
    /// The generation a page index starts at the first time it grows, so a
    /// test reaches the last generations without 2^32 reuses.
    #[cfg(test)]
    first_generation: u32,
}

impl<P, const G: usize> Slab<P, G> {
    /// An empty slab whose first page starts at `first_page` slots (an even
    /// number up to [`PAGE_LEN`]) and doubles up to a full page.
    pub(crate) fn new(first_page: usize) -> Self {
        debug_assert!(first_page % 2 == 0 && (2..=PAGE_LEN).contains(&first_page));
        Slab {
            pages: Vec::new(),
            free: NIL,
            free_len: 0,
            len: 0,
            allocated: 0,
            first_page,
            #[cfg(test)]
            first_generation: 0,
        }
    }

    /// Occupied slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated, occupied or not.
    pub(crate) fn capacity(&self) -> usize {
        self.pages.iter().map(Page::slots).sum()
    }

    /// Bytes held by the pages (slots and generations), for memory
    /// accounting.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.pages
            .iter()
            .map(|page| page.pairs.capacity() * std::mem::size_of::<Pair<P, G>>())
            .sum()
    }

    /// Grows until `additional` more nodes fit without allocating. Returns
    /// `false` if the index space ran out first.
    pub(crate) fn reserve(&mut self, additional: usize) -> bool {
        if !fits_the_index_space(self.len, additional) {
            return false;
        }
        // Growth puts its new slots at the front of the free list; growing
        // past free slots would hand out high indices first, which keeps
        // pages from emptying and `compact` from trimming.
        let mut reorder = false;
        while (self.free_len as usize) < additional {
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

    /// Stores a node linked by `link` ([`UNLINKED`], or [`Node::links`] for a
    /// node going to the front of a list: written once, not found again to
    /// be linked); hands the payload back if every index is in use or
    /// retired (about a billion nodes), so a caller under a lock can drop it
    /// (a waker: executor code) after releasing the lock.
    #[inline(always)]
    pub(crate) fn put(&mut self, payload: P, deadline: Deadline, link: [u32; 2]) -> Result<Key, P> {
        if self.free == NIL && !self.grow() {
            return Err(payload);
        }
        let index = self.free;
        let (page, offset) = split(index);
        let page = &mut self.pages[page];
        let (slot, generation) = page.slot_mut(offset);
        let generation = generation.map_or(0, |g| *g);
        let Slot::Vacant(next_free) = *slot else {
            unreachable!("slot {index} is on the free list while occupied");
        };
        *slot = Slot::Occupied(Node {
            payload,
            deadline,
            prev: link[0],
            link: link[1],
        });
        page.used += 1;
        self.free = next_free;
        self.free_len -= 1;
        self.len += 1;
        Ok(Key { index, generation })
    }

    /// The node behind `key`, or `None` if it was removed since.
    #[inline(always)]
    pub(crate) fn get(&self, key: Key) -> Option<&Node<P>> {
        let (page, offset) = split(key.index);
        match self.pages.get(page)?.slot(offset)? {
            (Slot::Occupied(node), generation) if generation == key.generation => Some(node),
            _ => None,
        }
    }

    /// Mutable access to the node behind `key`.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut Node<P>> {
        let (page, offset) = split(key.index);
        let pair = self.pages.get_mut(page)?.pairs.get_mut(offset / 2)?;
        let generation = pair.generations.get(offset % 2).copied().unwrap_or(0);
        match &mut pair.slots[offset % 2] {
            Slot::Occupied(node) if generation == key.generation => Some(node),
            _ => None,
        }
    }

    /// The occupied slot at `index` (lists reach nodes by index).
    #[inline]
    pub(crate) fn at(&self, index: u32) -> &Node<P> {
        let (page, offset) = split(index);
        match self.pages[page].slot(offset) {
            Some((Slot::Occupied(node), _)) => node,
            _ => unreachable!("slot {index} is linked while vacant"),
        }
    }

    /// Starts loading the slot at `index` into the cache, without reading
    /// it (a node about to be reached by a list walk).
    #[inline]
    pub(crate) fn prefetch(&self, index: u32) {
        let (page, offset) = split(index);
        // The slot itself, not its pair: an odd slot starts 32 bytes into
        // its pair (64 bytes for a timer, 72 for a queue of wakers), often
        // on the next cache line. Taking the
        // references reads only the page's vector, not the slot.
        let pair = self
            .pages
            .get(page)
            .and_then(|page| page.pairs.get(offset / 2));
        if let Some(pair) = pair {
            crate::engine::raw::prefetch::address(&pair.slots[offset % 2]);
        }
    }

    #[inline]
    pub(crate) fn at_mut(&mut self, index: u32) -> &mut Node<P> {
        let (page, offset) = split(index);
        match self.pages[page].slot_mut(offset).0 {
            Slot::Occupied(node) => node,
            Slot::Vacant(_) => unreachable!("slot {index} is linked while vacant"),
        }
    }

    /// The key of the occupied slot at `index`.
    pub(crate) fn key_at(&self, index: u32) -> Key {
        let (page, offset) = split(index);
        let generation = self.pages[page].slot(offset).map_or(0, |(_, g)| g);
        Key { index, generation }
    }

    /// Frees the occupied slot at `index` and returns its node and the key
    /// it had. The node is unlinked from its list before, or after by the
    /// links it returns ([`Wheel::unlink_links`](super::Wheel::unlink_links)).
    #[inline(always)]
    pub(crate) fn remove(&mut self, index: u32) -> (Node<P>, Key) {
        let (page_index, offset) = split(index);
        let page = &mut self.pages[page_index];
        let (slot, current) = page.slot_mut(offset);
        let generation = current.as_deref().map_or(0, |g| *g);
        let retire = generation == u32::MAX;
        let next_free = if retire { NIL } else { self.free };
        let Slot::Occupied(node) = std::mem::replace(slot, Slot::Vacant(next_free)) else {
            unreachable!("slot {index} removed while vacant");
        };
        if !retire {
            // The next key from this slot can never equal the one just used.
            current.into_iter().for_each(|g| *g += 1);
            self.free = index;
            self.free_len += 1;
        }
        page.used -= 1;
        self.len -= 1;
        (node, Key { index, generation })
    }

    /// With no node left, releases every page but the first (a timer shard
    /// returns to one page after a burst). A slab of one page is left as it
    /// is, free list and all, so emptying a small shard (every time its last
    /// timer fires) costs no walk over the page.
    #[inline]
    pub(crate) fn release_if_empty(&mut self) {
        if self.len == 0 && self.allocated > 1 {
            self.release_pages(1, true);
        }
    }

    /// Removes every node, handing it to `take`, and keeps the pages (as
    /// `Vec::clear` keeps its buffer). Every key handed out so far becomes
    /// stale (an [`OWNED`] slab's holders must never use theirs again: a
    /// timer's clears only at its shutdown).
    pub(crate) fn clear(&mut self, mut take: impl FnMut(Node<P>)) {
        for page in 0..self.pages.len() {
            for offset in 0..self.pages[page].slots() {
                if let Some((Slot::Occupied(_), _)) = self.pages[page].slot(offset) {
                    // Its generation moves on as any removal's does.
                    take(self.remove(((page << PAGE_SHIFT) + offset) as u32).0);
                }
            }
        }
        // Lowest first again, as after growth.
        self.rebuild_free_list();
    }

    /// Releases the memory of pages that hold no node: only trailing ones
    /// when `anywhere` is false (`shrink_to_fit`), every one otherwise
    /// (`compact`). The first page, the one page that is not always full
    /// size, is also trimmed to its last node when it is reached. Nodes
    /// never move, so every key stays valid.
    pub(crate) fn release_empty_pages(&mut self, anywhere: bool) {
        self.release_pages(0, anywhere);
    }

    /// [`release_empty_pages`](Slab::release_empty_pages) over the pages
    /// from `first` on.
    #[cold]
    fn release_pages(&mut self, first: usize, anywhere: bool) {
        let mut released = false;
        for (index, page) in self.pages.iter_mut().enumerate().skip(first).rev() {
            if page.used != 0 {
                if index == 0 {
                    released |= page.trim();
                }
                if !anywhere {
                    break;
                }
            } else if !page.pairs.is_empty() {
                page.release(0);
                self.allocated -= 1;
                released = true;
            }
        }
        // Released pages keep their place (and floor) in `pages`: 32 bytes
        // per 1024 slots of the slab's peak.
        if released {
            self.rebuild_free_list();
        }
    }

    /// Threads the free list through every vacant, unretired slot, lowest
    /// index first (so reuse stays in the lowest pages).
    fn rebuild_free_list(&mut self) {
        (self.free, self.free_len) = (NIL, 0);
        for (page_index, page) in self.pages.iter_mut().enumerate().rev() {
            let base = (page_index << PAGE_SHIFT) as u32;
            for (pair_index, pair) in page.pairs.iter_mut().enumerate().rev() {
                for side in [1, 0] {
                    let index = base + (2 * pair_index + side) as u32;
                    // A slot at the last generation is retired.
                    if let Slot::Vacant(next_free) = &mut pair.slots[side] {
                        if pair.generations.get(side) != Some(&u32::MAX) {
                            *next_free = std::mem::replace(&mut self.free, index);
                            self.free_len += 1;
                        }
                    }
                }
            }
        }
    }

    /// Adds vacant slots to the free list: doubles the first page while it
    /// is short, else grows a released page again, else adds a page.
    /// Returns `false` once no index is left.
    #[cold]
    fn grow(&mut self) -> bool {
        let len = self.pages.first().map_or(0, Page::slots);
        if (1..PAGE_LEN).contains(&len) {
            // A trimmed first page need not be a power of two.
            self.extend_page(0, (len * 2).min(PAGE_LEN));
            return true;
        }
        let reuse = self
            .pages
            .iter()
            .position(|page| page.pairs.is_empty() && page.floor != u32::MAX);
        let index = match reuse {
            Some(index) => index,
            None if self.pages.len() < MAX_PAGES => {
                self.pages.push(Page::released(self.first_generation()));
                self.pages.len() - 1
            }
            None => return false,
        };
        let len = if index == 0 {
            self.first_page
        } else {
            PAGE_LEN
        };
        self.extend_page(index, len);
        true
    }

    /// Extends page `index` to `len` vacant slots (an even number) at its
    /// floor and puts the new ones on the free list, lowest first.
    fn extend_page(&mut self, index: usize, len: usize) {
        let base = (index << PAGE_SHIFT) as u32;
        let page = &mut self.pages[index];
        let (old, floor) = (page.slots(), page.floor);
        self.allocated += usize::from(old == 0);
        let vacant = |offset: usize| Slot::Vacant(base + offset as u32 + 1);
        page.pairs.reserve_exact((len - old) / 2);
        page.pairs.extend((old..len).step_by(2).map(|offset| Pair {
            slots: [vacant(offset), vacant(offset + 1)],
            generations: [floor; G],
        }));
        // The last new slot continues the free list as it was.
        page.pairs[len / 2 - 1].slots[1] = Slot::Vacant(self.free);
        self.free = base + old as u32;
        self.free_len += (len - old) as u32;
    }

    #[cfg(not(test))]
    fn first_generation(&self) -> u32 {
        0
    }
}

#[cfg(test)]
impl<P, const G: usize> Slab<P, G> {
    /// Stores an unlinked node (see [`Slab::put`]).
    pub(crate) fn insert(&mut self, payload: P, deadline: Deadline) -> Result<Key, P> {
        self.put(payload, deadline, UNLINKED)
    }

    /// A slab whose page indexes start at `generation` the first time they
    /// grow.
    pub(crate) fn with_first_generation(first_page: usize, generation: u32) -> Self {
        Slab {
            first_generation: generation,
            ..Slab::new(first_page)
        }
    }

    fn first_generation(&self) -> u32 {
        self.first_generation
    }

    /// Retires every page index of an empty slab, as if a billion nodes had
    /// used up every key: the next insert is refused. (A page header each,
    /// about 32 MB, instead of the nodes.)
    pub(crate) fn retire_every_index(&mut self) {
        assert_eq!(self.len, 0, "only an empty slab");
        self.pages = (0..MAX_PAGES).map(|_| Page::released(u32::MAX)).collect();
        self.free = NIL;
        self.free_len = 0;
    }

    /// Pages holding memory.
    pub(crate) fn allocated_pages(&self) -> usize {
        self.allocated
    }
}

#[cfg(test)]
impl<P> Slab<P> {
    /// Moves the vacant slot at `index` on to `generation`, as if it had
    /// been reused that many times.
    pub(crate) fn set_generation(&mut self, index: u32, generation: u32) {
        let (page, offset) = split(index);
        let (slot, current) = self.pages[page].slot_mut(offset);
        let current = current.expect("a slab with generations");
        assert!(
            matches!(slot, Slot::Vacant { .. }),
            "slot {index} is occupied"
        );
        assert!(
            generation >= *current,
            "moving a generation back would revive old keys"
        );
        *current = generation;
    }
}

/// The page and the offset in it of `index`.
#[inline]
fn split(index: u32) -> (usize, usize) {
    ((index >> PAGE_SHIFT) as usize, (index & PAGE_MASK) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::task::Waker;

    fn d(offset: i64) -> Deadline {
        Deadline::new(offset)
    }

    fn waker() -> Waker {
        Waker::noop().clone()
    }

    /// A timer shard's slab: wakers, a full first page.
    fn timer_slab() -> Slab<Waker> {
        Slab::new(PAGE_LEN)
    }

    /// A queue's slab: its first page starts at 8 slots.
    fn queue_slab<T>() -> Slab<T> {
        Slab::new(8)
    }

    const FIRST_PAGE_MIN: usize = 8;

    /// Every index stays below `NIL` (which ends the lists): the page that
    /// would hold `NIL` is never grown, so the slab is full one page short
    /// of 2^20 pages. Retired pages stand in for the ones before (32 MB of
    /// page headers instead of a billion nodes).
    #[test]
    fn the_slab_is_full_before_an_index_reaches_nil() {
        let pages_below_nil = (NIL >> PAGE_SHIFT) as usize; // 2^20 - 1
        let mut slab: Slab<u8> = queue_slab();
        slab.pages = (0..pages_below_nil - 1)
            .map(|_| Page::released(u32::MAX))
            .collect();
        for _ in 0..PAGE_LEN {
            let key = slab.insert(0, d(1)).expect("the last page has room");
            assert!(key.index < NIL, "index {} reaches NIL", key.index);
        }
        assert!(
            slab.insert(0, d(1)).is_err(),
            "grew the page that holds NIL"
        );
    }

    /// A queue's node with a `u64` value is 24 bytes and its generation 4
    /// more (28 bytes per queue item); a timer's node (a waker) 32, with no
    /// generation ([`OWNED`]): with its 24-byte `Sleep`, 56 bytes per
    /// pending sleep.
    #[test]
    fn a_slot_takes_28_bytes_with_a_u64_and_its_generation_and_32_with_a_timer_waker() {
        assert_eq!(std::mem::size_of::<Slot<u64>>(), 24);
        assert_eq!(std::mem::size_of::<Pair<u64>>(), 2 * 28);
        assert_eq!(std::mem::size_of::<Slot<()>>(), 16);
        assert_eq!(std::mem::size_of::<Slot<Waker>>(), 32);
        assert_eq!(std::mem::size_of::<Pair<Waker>>(), 2 * 36);
        assert_eq!(std::mem::size_of::<Pair<Waker, OWNED>>(), 2 * 32);
        let per_sleep =
            std::mem::size_of::<crate::Sleep>() + std::mem::size_of::<Pair<Waker, OWNED>>() / 2;
        assert_eq!(per_sleep, 56, "bytes per pending sleep");
    }

    /// With [`OWNED`] keys every key is `(index, 0)`, a freed slot is
    /// handed out again at once (its holder let go of the key), and pages
    /// are released and grown as with generations.
    #[test]
    fn owned_keys_carry_no_generation_and_reuse_their_slot_at_once() {
        let mut slab: Slab<Waker, OWNED> = Slab::new(PAGE_LEN);
        let keys: Vec<Key> = (0..=PAGE_LEN as u64)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        assert!(keys.iter().all(|key| key.generation == 0));
        assert_eq!(slab.allocated_pages(), 2);
        let last = keys[PAGE_LEN];
        slab.remove(last.index);
        assert!(slab.get(last).is_none(), "a freed slot reads as free");
        let again = slab.insert(waker(), Deadline::from_ns(7)).unwrap();
        assert_eq!(again, last, "the slot comes back with the same key");
        assert_eq!(slab.get(again).unwrap().deadline.ns(), 7);
        for key in keys {
            slab.remove(key.index);
        }
        slab.release_if_empty();
        assert_eq!((slab.len(), slab.allocated_pages()), (0, 1));
        assert_eq!(slab.allocated_bytes(), PAGE_LEN * 32);
    }

    #[test]
    fn the_flags_and_the_next_index_share_a_word() {
        let mut slab = queue_slab();
        let key = slab.insert(1u8, d(0)).unwrap();
        let node = slab.at_mut(key.index);
        assert_eq!(
            (node.next(), node.is_due(), node.mark()),
            (NIL, false, false)
        );
        node.set_links(3, 12, true);
        node.set_mark(true);
        assert_eq!((node.next(), node.is_due(), node.mark()), (12, true, true));
        node.set_next(NIL);
        node.set_links(3, NIL, false);
        assert_eq!(
            (node.next(), node.is_due(), node.mark()),
            (NIL, false, true)
        );
        node.set_links(HEAD | 5, 7, true);
        assert_eq!(
            (node.prev, node.next(), node.is_due(), node.mark()),
            (HEAD | 5, 7, true, true),
            "a new head keeps the mark"
        );
        assert!(node.take_mark());
        assert!(!node.take_mark());
    }

    #[test]
    fn deadlines_round_trip_except_the_very_first_nanosecond() {
        for offset in [i64::MIN + 1, -5, -1, 0, 1, 1_000_000_007, i64::MAX] {
            assert_eq!(Deadline::new(offset).offset(), offset);
        }
        assert_eq!(Deadline::new(i64::MIN).offset(), i64::MIN + 1);
        assert_eq!(Deadline::new(-5).ns(), 0, "before the origin: due at once");
        assert_eq!(Deadline::from_ns(SATURATED + 5).ns(), SATURATED);
        assert_eq!(Deadline::from_ns(17).ns(), 17);
    }

    #[test]
    fn stale_keys_never_reach_a_reused_slot() {
        let mut slab = queue_slab();
        let a = slab.insert("a", d(1)).unwrap();
        let (node, key) = slab.remove(a.index);
        assert_eq!((node.payload, key), ("a", a));
        assert!(slab.get(a).is_none());
        let b = slab.insert("b", d(2)).unwrap();
        assert_eq!(b.index, a.index, "the freed slot is reused first");
        assert_ne!(b.generation, a.generation);
        assert!(slab.get(a).is_none(), "old key must not see the new node");
        assert!(slab.get_mut(a).is_none(), "nor change it");
        assert_eq!(slab.get(b).unwrap().payload, "b");
        assert_eq!(slab.get_mut(b).unwrap().deadline, d(2));
        assert_eq!(slab.key_at(b.index), b);
    }

    #[test]
    fn a_slot_is_retired_before_its_generation_wraps() {
        let mut slab = queue_slab();
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
        let stale = Key {
            index: a.index,
            generation: 0,
        };
        assert!(slab.get(stale).is_none());
        assert_eq!(slab.len(), 1);
        // Nor after clear or a rebuild of the free list.
        slab.clear(drop);
        for _ in 0..PAGE_LEN {
            let key = slab.insert(4, d(1)).unwrap();
            assert_ne!(key.index, a.index);
        }
    }

    #[test]
    fn growth_doubles_the_first_page_then_adds_full_pages() {
        let mut slab = queue_slab();
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

    /// The index space holds every page full, 2^30 - 1,024 nodes (the
    /// figure `DelayQueue`'s docs give), and a reserve is refused only past
    /// it: a boundary no test can reach by allocating (tens of gigabytes).
    #[test]
    fn a_reserve_is_refused_only_past_the_index_space() {
        assert_eq!(MAX_NODES, (1 << 30) - 1_024);
        assert!(fits_the_index_space(3, 4));
        assert!(fits_the_index_space(0, MAX_NODES));
        assert!(fits_the_index_space(MAX_NODES - 5, 5));
        assert!(!fits_the_index_space(MAX_NODES - 5, 6));
        assert!(!fits_the_index_space(1, usize::MAX), "saturates");
    }

    /// The first page doubles (8, 16, 32, ... 1024 slots), and every page
    /// allocates exactly its slots: the bytes `Debug` and the README quote
    /// per item are the pairs in use, with no spare capacity.
    #[test]
    fn the_first_page_doubles_and_every_page_allocates_exactly_its_slots() {
        let pair = std::mem::size_of::<Pair<u64>>();
        let mut slab = queue_slab();
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
        let mut slab = queue_slab();
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
        let mut slab = queue_slab();
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
        let mut slab = queue_slab();
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
        let mut slab = queue_slab();
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
        let mut slab = queue_slab();
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
        assert_eq!(slab.get(keys[0]).unwrap().payload, 0);
    }

    #[test]
    fn trimming_keeps_a_retired_slot() {
        let mut slab = queue_slab();
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
        assert_eq!(slab.get(a).unwrap().payload, 1);
    }

    #[test]
    fn shrinking_releases_only_trailing_pages() {
        let mut slab = queue_slab();
        let keys: Vec<_> = (0..3 * PAGE_LEN)
            .map(|i| slab.insert(i, d(0)).unwrap())
            .collect();
        // Empty the middle page and the last one.
        for key in &keys[PAGE_LEN..] {
            slab.remove(key.index);
        }
        let capacity = slab.capacity();
        assert_eq!(slab.allocated_pages(), 3);
        slab.release_empty_pages(false);
        assert_eq!(slab.capacity(), PAGE_LEN);
        assert!(capacity > slab.capacity());
        assert_eq!(slab.allocated_pages(), 1, "the count follows the release");
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

    // A timer shard's slab: a full first page, and every page but the first
    // released whenever it empties (`release_if_empty`, which the timer's
    // wheel calls after each removal).

    fn remove_timer(slab: &mut Slab<Waker>, index: u32) {
        slab.remove(index);
        slab.release_if_empty();
    }

    const ONE_PAGE: usize = PAGE_LEN * std::mem::size_of::<Pair<Waker>>() / 2;

    #[test]
    fn stale_keys_never_reach_a_reused_timer_slot() {
        let mut slab = timer_slab();
        let a = slab.insert(waker(), Deadline::from_ns(5)).unwrap();
        remove_timer(&mut slab, a.index);
        assert!(slab.get(a).is_none(), "removed key must be dead");
        let b = slab.insert(waker(), Deadline::from_ns(6)).unwrap();
        assert_eq!(b.index, a.index, "the freed slot is reused first");
        assert_ne!(b.generation, a.generation);
        assert!(slab.get(a).is_none(), "old key must not see the new entry");
        assert!(slab.get_mut(a).is_none(), "nor change it");
        assert_eq!(slab.get(b).unwrap().deadline.ns(), 6);
        assert_eq!(slab.get_mut(b).unwrap().deadline.ns(), 6);
    }

    #[test]
    fn a_timer_slot_is_retired_before_its_generation_wraps() {
        let mut slab = timer_slab();
        let a = slab.insert(waker(), Deadline::from_ns(1)).unwrap();
        remove_timer(&mut slab, a.index);
        slab.set_generation(a.index, u32::MAX);
        let old = slab.insert(waker(), Deadline::from_ns(1)).unwrap();
        assert_eq!((old.index, old.generation), (a.index, u32::MAX));
        let keep = slab.insert(waker(), Deadline::from_ns(3)).unwrap();
        remove_timer(&mut slab, old.index);
        assert!(slab.get(old).is_none());
        let b = slab.insert(waker(), Deadline::from_ns(2)).unwrap();
        assert_ne!(b.index, a.index, "the exhausted slot must not come back");
        let stale = Key {
            index: a.index,
            generation: 0,
        };
        assert!(slab.get(stale).is_none());
        assert_eq!(slab.len(), 2);
        assert!(slab.get(keep).is_some());
    }

    #[test]
    fn grows_by_pages_and_reuses_them_while_entries_remain() {
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..3000)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        assert_eq!(slab.len(), 3000);
        let three_pages = 3 * ONE_PAGE;
        assert_eq!(slab.allocated_bytes(), three_pages);
        for k in &keys[1..] {
            remove_timer(&mut slab, k.index);
        }
        assert_eq!(slab.len(), 1);
        assert_eq!(
            slab.allocated_bytes(),
            three_pages,
            "one live entry keeps the pages"
        );
        // Refilling reuses the pages instead of growing.
        for i in 0..2999 {
            slab.insert(waker(), Deadline::from_ns(i)).unwrap();
        }
        assert_eq!(slab.allocated_bytes(), three_pages);
    }

    #[test]
    fn emptying_releases_every_page_but_the_first() {
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..3000)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        for k in &keys {
            remove_timer(&mut slab, k.index);
        }
        assert_eq!(slab.len(), 0);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE);
        // The first page's slots are all reusable again.
        let again: Vec<Key> = (0..PAGE_LEN as u64)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        assert!(again.iter().all(|k| (k.index as usize) < PAGE_LEN));
        assert_eq!(slab.allocated_pages(), 1);
    }

    #[test]
    fn stale_keys_into_a_released_page_never_match_its_successor() {
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..2 * PAGE_LEN as u64)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        // Churn one slot of the second page so its generation is ahead.
        let mut stale = keys[PAGE_LEN + 5];
        for _ in 0..3 {
            remove_timer(&mut slab, stale.index);
            stale = slab.insert(waker(), Deadline::from_ns(7)).unwrap();
        }
        assert_eq!(stale.index, keys[PAGE_LEN + 5].index);
        for k in &keys {
            if k.index != stale.index {
                remove_timer(&mut slab, k.index);
            }
        }
        remove_timer(&mut slab, stale.index);
        assert_eq!(slab.allocated_pages(), 1, "the second page was released");
        assert!(
            slab.get(stale).is_none(),
            "a key into a released page is dead"
        );
        // Grow the second page again: its slot must not answer to the key.
        let fresh: Vec<Key> = (0..2 * PAGE_LEN as u64)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        let successor = fresh.iter().find(|k| k.index == stale.index).unwrap();
        assert!(successor.generation > stale.generation);
        assert!(slab.get(stale).is_none());
        let inserted_as = fresh.iter().position(|k| k == successor).unwrap() as u64;
        assert_eq!(slab.get(*successor).unwrap().deadline.ns(), inserted_as);
    }

    #[test]
    fn retired_slots_stay_retired_after_a_release() {
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..PAGE_LEN as u64 + 1)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        // Slot 3 hands out its last generation, then is freed.
        remove_timer(&mut slab, keys[3].index);
        slab.set_generation(3, u32::MAX);
        let last = slab.insert(waker(), Deadline::from_ns(3)).unwrap();
        assert_eq!((last.index, last.generation), (3, u32::MAX));
        for k in keys.iter().filter(|k| k.index != 3).chain([&last]) {
            remove_timer(&mut slab, k.index);
        }
        assert_eq!(slab.allocated_pages(), 1);
        let again: Vec<Key> = (0..PAGE_LEN as u64 - 1)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        assert!(again.iter().all(|k| k.index != 3), "slot 3 was retired");
        assert_eq!(
            slab.allocated_pages(),
            1,
            "1023 reusable slots fit in the first page"
        );
    }

    /// Every key a slab handed out, to check that none ever comes back.
    #[derive(Default)]
    struct Ledger {
        /// Every key handed out, as `(index, generation)`: none may repeat.
        seen: HashSet<(u32, u32)>,
        /// Removed keys: none may reach a node again.
        dead: Vec<Key>,
        /// Live keys, each with the deadline stored under it (unique).
        live: Vec<(Key, u64)>,
        inserts: u64,
    }

    impl Ledger {
        fn insert(&mut self, slab: &mut Slab<Waker>) -> Key {
            self.inserts += 1;
            let key = slab
                .insert(waker(), Deadline::from_ns(self.inserts))
                .expect("the slab has room");
            assert!(
                self.seen.insert((key.index, key.generation)),
                "{key:?} was handed out before"
            );
            self.live.push((key, self.inserts));
            key
        }

        /// Removes the live node at position `i`.
        fn remove(&mut self, slab: &mut Slab<Waker>, i: usize) -> Key {
            let (key, _) = self.live.swap_remove(i);
            remove_timer(slab, key.index);
            self.dead.push(key);
            key
        }

        /// Removes the newest live node, whose slot the next insert reuses.
        fn remove_newest(&mut self, slab: &mut Slab<Waker>) -> Key {
            self.remove(slab, self.live.len() - 1)
        }

        fn clear(&mut self, slab: &mut Slab<Waker>) {
            while !self.live.is_empty() {
                self.remove_newest(slab);
            }
        }

        /// Live keys reach their own nodes, and dead keys reach nothing.
        fn check(&self, slab: &Slab<Waker>) {
            assert_eq!(slab.len(), self.live.len());
            for &(key, deadline) in &self.live {
                let found = slab.get(key).map(|node| node.deadline.ns());
                assert_eq!(found, Some(deadline), "live {key:?}");
            }
            for &key in &self.dead {
                assert!(slab.get(key).is_none(), "stale {key:?} reaches a node");
            }
        }

        /// [`check`](Ledger::check), and the same through `get_mut`.
        fn check_mut(&self, slab: &mut Slab<Waker>) {
            self.check(slab);
            for &(key, deadline) in &self.live {
                let found = slab.get_mut(key).map(|node| node.deadline.ns());
                assert_eq!(found, Some(deadline), "live {key:?}");
            }
            for &key in &self.dead {
                assert!(slab.get_mut(key).is_none(), "stale {key:?} reaches a node");
            }
        }
    }

    /// The shape of a shard whose busiest slot outlived its generations: the
    /// first page full of long timers, one slot of the second page reused
    /// until it retires, then a quiet moment that empties the shard.
    #[test]
    fn a_page_released_after_its_last_generation_never_hands_out_old_keys() {
        let mut slab = timer_slab();
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

        // Register/cancel with one page and one node pending reuses a slot.
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
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..PAGE_LEN as u64 + 1)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        let last = keys[PAGE_LEN];
        remove_timer(&mut slab, last.index);
        slab.set_generation(last.index, u32::MAX);
        let last = slab.insert(waker(), Deadline::from_ns(7)).unwrap();
        assert_eq!(last.generation, u32::MAX);
        for k in &keys[..PAGE_LEN] {
            remove_timer(&mut slab, k.index);
        }
        assert_eq!(slab.allocated_bytes(), 2 * ONE_PAGE, "one entry keeps them");
        // The slot retires as it empties the shard.
        remove_timer(&mut slab, last.index);
        assert_eq!(slab.len(), 0);
        assert_eq!(slab.allocated_bytes(), ONE_PAGE, "the second page was kept");
    }

    /// A slab that empties with one page keeps its free list as it was:
    /// only a slab with more pages has pages to release and a free list to
    /// rebuild, so emptying a small shard (every time its last timer fires)
    /// costs no walk over the page.
    #[test]
    fn emptying_a_one_page_slab_keeps_its_free_list() {
        let mut slab = timer_slab();
        let keys: Vec<Key> = (0..3)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap())
            .collect();
        for i in [0, 2, 1] {
            remove_timer(&mut slab, keys[i].index);
        }
        assert_eq!(slab.len(), 0);
        let order: Vec<u32> = (0..3)
            .map(|i| slab.insert(waker(), Deadline::from_ns(i)).unwrap().index)
            .collect();
        assert_eq!(
            order,
            [keys[1].index, keys[2].index, keys[0].index],
            "the last freed slot is reused first"
        );
    }

    /// Every key up to the last one below `MAX_KEY` can be handed out, and
    /// then the slab is full. Retired page indexes stand in for the billion
    /// live nodes below: growth steps over them without allocating, as it
    /// does over indexes whose generations ran out.
    #[test]
    fn the_slab_is_full_only_when_every_key_below_the_limit_is_used() {
        // The last page whose keys all lie below `MAX_KEY`.
        let last_page = MAX_KEY as usize / PAGE_LEN - 1;
        let mut slab = timer_slab();
        slab.pages = (0..last_page).map(|_| Page::released(u32::MAX)).collect();
        let first = slab.insert(waker(), Deadline::from_ns(0)).unwrap();
        assert_eq!(first.index as usize, last_page * PAGE_LEN);
        let mut highest = first.index;
        for i in 1..PAGE_LEN as u64 {
            highest = slab.insert(waker(), Deadline::from_ns(i)).unwrap().index;
        }
        assert!(highest < MAX_KEY, "key {highest} names a Sleep state");
        assert_eq!(highest as usize, last_page * PAGE_LEN + PAGE_LEN - 1);
        assert!(
            slab.insert(waker(), Deadline::from_ns(0)).is_err(),
            "the next page passes the limit"
        );
        assert_eq!(slab.len(), PAGE_LEN);
        assert_eq!(
            slab.allocated_bytes(),
            ONE_PAGE,
            "retired indexes hold no memory"
        );
        // A freed key is reused, so the slab is not full any more.
        remove_timer(&mut slab, first.index);
        assert_eq!(
            slab.insert(waker(), Deadline::from_ns(9)).unwrap().index,
            first.index
        );
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Insert this many nodes (past a page, so pages grow).
        Insert(usize),
        /// Remove the live node at this position (modulo the live count).
        Remove(usize),
        /// Remove the newest node and insert again, this many times: one
        /// slot is reused until its generations run out.
        Churn(usize),
        /// Remove every node: the shard empties and releases its pages.
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
        /// handed out twice, no stale key reaches a node, and emptying
        /// always brings the slab back to one page.
        #[test]
        fn stale_keys_never_match_under_random_reuse_growth_and_release(
            headroom in 0u32..8,
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let mut slab = Slab::with_first_generation(PAGE_LEN, u32::MAX - headroom);
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
