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
//! A slot whose generation is exhausted is retired rather than reused, so
//! generations never wrap around.
//!
//! When the last entry leaves, every page but the first is released, so a
//! shard's memory returns to one page after a burst. Pages grown again later
//! start their generations above every generation the released pages handed
//! out, so a stale key into a released page can never match a new entry.

use std::task::Waker;

/// The "no entry" key ending every list.
pub(crate) const NIL: u32 = u32::MAX;

/// Keys at or above this are never handed out: `Sleep` uses the values above
/// it to name its unregistered and completed states.
pub(crate) const MAX_KEY: u32 = u32::MAX - 8;

const PAGE_SHIFT: u32 = 10;
const PAGE_LEN: usize = 1 << PAGE_SHIFT;
const PAGE_MASK: u32 = (PAGE_LEN as u32) - 1;

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
}

impl Entry {
    fn vacant(next: u32) -> Self {
        Entry {
            waker: None,
            deadline: 0,
            prev: NIL,
            next,
            generation: 0,
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
    pages: Vec<Box<[Entry]>>,
    free_head: Option<u32>,
    len: usize,
    /// The generation new pages start at: above every generation a released
    /// page held.
    generation_floor: u32,
}

impl Slab {
    /// Number of occupied slots.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by the slab's pages (for memory accounting).
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.pages.len() * PAGE_LEN * std::mem::size_of::<Entry>()
    }

    /// Stores a new entry, unlinked (`prev == next == NIL`).
    ///
    /// Returns `None` only when every key below [`MAX_KEY`] is in use
    /// (about 4 billion live timers in one shard).
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
        let entry = self.pages.get_mut(page_of(key.index))?;
        let entry = &mut entry[offset_of(key.index)];
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
            self.len -= 1;
            return waker;
        }
        entry.generation += 1;
        entry.next = free_next;
        self.free_head = Some(index);
        self.len -= 1;
        if self.len == 0 && self.pages.len() > 1 {
            self.release_pages();
        }
        waker
    }

    /// With no entry left, drops every page but the first and rebuilds the
    /// free list over the first page's reusable slots.
    fn release_pages(&mut self) {
        debug_assert_eq!(self.len, 0, "releasing pages with live entries");
        let highest = self.pages[1..]
            .iter()
            .flat_map(|page| page.iter())
            .map(|entry| entry.generation)
            .max()
            .unwrap_or(0);
        self.generation_floor = self.generation_floor.max(highest.saturating_add(1));
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
        self.pages
            .get(page_of(index))
            .map(|page| &page[offset_of(index)])
    }

    fn slot_mut(&mut self, index: u32) -> &mut Entry {
        &mut self.pages[page_of(index)][offset_of(index)]
    }

    /// Adds a page, threads its slots onto the free list and returns the
    /// first one.
    fn grow(&mut self) -> Option<u32> {
        let base = u32::try_from(self.pages.len() * PAGE_LEN).ok()?;
        if base >= MAX_KEY - PAGE_MASK {
            return None;
        }
        let page: Box<[Entry]> = (0..PAGE_LEN as u32)
            .map(|i| {
                let next = if i + 1 < PAGE_LEN as u32 {
                    base + i + 1
                } else {
                    NIL
                };
                Entry {
                    generation: self.generation_floor,
                    ..Entry::vacant(next)
                }
            })
            .collect();
        self.pages.push(page);
        Some(base)
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
        assert_eq!(slab.get(b).unwrap().deadline, 6);
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
}
