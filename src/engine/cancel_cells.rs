//! A cancel without the shard lock: one compare-and-swap on a cell.
//!
//! Most timeouts are cancelled soon after they are registered, before the
//! driver's next pass. A registration publishes its key in one of the
//! shard's [`CELLS`] cells (the one its slot index picks, if that cell is
//! free); the `Sleep`'s drop then cancels by turning its cell from live to
//! cancelled, one compare-and-swap and no lock. The entry stays in the wheel,
//! its waker with it, until someone holding the shard lock reclaims it:
//!
//! - the shard's next registration, which first reclaims the entry the last
//!   quick cancel left (and usually takes its slot again, so a task that
//!   arms and cancels timeouts in a loop keeps using one slot and one cell);
//! - a registration whose cell holds a cancelled entry, and one that finds
//!   its shard's fresh list full (`FRESH_MAX`), which reclaims them all, so
//!   cancelled entries never crowd new ones out of the fresh list;
//! - the driver's next pass over the shard, which empties every cell before
//!   it fires anything (a cancelled entry is never woken), and shutdown.
//!
//! A cell is only ever set, reclaimed or emptied under the shard lock; the
//! one write outside it is the owner's compare-and-swap from live to
//! cancelled, which fails once the lock's holder has emptied the cell (the
//! owner then cancels under the lock, as before). Keys carry their
//! generation, so a cell never matches a key whose slot was reused.
//! Counting what is pending subtracts the cancelled cells: a quick cancel
//! is exact at once, while its memory waits for one of the three above.

use std::sync::atomic::Ordering;

use crate::engine::sync::AtomicU64;
use crate::engine::wheel::Key;

/// Cells per shard: as many as the entries a shard keeps unfiled between
/// two passes (`FRESH_MAX`).
pub(crate) const CELLS: usize = 64;

const EMPTY: u64 = 0;
const LIVE: u64 = 0b01;
const CANCELLED: u64 = 0b10;
const STATE: u64 = 0b11;

fn encode(key: Key, state: u64) -> u64 {
    debug_assert!(key.index < 1 << 30, "slot indexes fit in 30 bits");
    (u64::from(key.generation) << 32) | (u64::from(key.index) << 2) | state
}

fn decode(cell: u64) -> Key {
    Key {
        index: ((cell & 0xffff_ffff) >> 2) as u32,
        generation: (cell >> 32) as u32,
    }
}

fn cell_of(key: Key) -> usize {
    key.index as usize % CELLS
}

#[derive(Debug)]
pub(crate) struct CancelCells {
    cells: [AtomicU64; CELLS],
    /// The cell of the latest quick cancel: where the next registration
    /// looks first.
    last: AtomicU64,
}

impl CancelCells {
    pub(crate) fn new() -> Self {
        CancelCells {
            cells: std::array::from_fn(|_| AtomicU64::new(EMPTY)),
            last: AtomicU64::new(0),
        }
    }

    /// Owner, without the lock: cancels `key` if its cell still holds it
    /// live. `false`: cancel under the lock instead.
    pub(crate) fn try_cancel(&self, key: Key) -> bool {
        let cell = cell_of(key);
        let won = self.cells[cell]
            .compare_exchange(
                encode(key, LIVE),
                encode(key, CANCELLED),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok();
        if won {
            self.last.store(cell as u64, Ordering::Relaxed);
        }
        won
    }

    /// Under the lock: the entry the latest quick cancel left, if it is still
    /// there; its cell is emptied.
    pub(crate) fn take_last(&self) -> Option<Key> {
        let cell = self.last.load(Ordering::Relaxed) as usize % CELLS;
        self.take_cancelled(cell)
    }

    fn take_cancelled(&self, cell: usize) -> Option<Key> {
        let value = self.cells[cell].load(Ordering::Acquire);
        if value & STATE != CANCELLED {
            return None;
        }
        // Cancelled is final until the lock's holder empties it: no owner
        // writes it again.
        self.cells[cell].store(EMPTY, Ordering::Relaxed);
        Some(decode(value))
    }

    /// Under the lock: passes every cancelled entry to `reclaim`, emptying
    /// its cell; live ones are left.
    pub(crate) fn take_all_cancelled(&self, mut reclaim: impl FnMut(Key)) {
        for cell in 0..CELLS {
            if let Some(key) = self.take_cancelled(cell) {
                reclaim(key);
            }
        }
    }

    /// Under the lock, after registering `key`: publishes it in its cell.
    /// Returns the cancelled entry the cell held, for the caller to
    /// reclaim; a cell holding another live entry is left alone (`key` is
    /// then cancelled under the lock).
    pub(crate) fn publish(&self, key: Key) -> Option<Key> {
        let cell = cell_of(key);
        let taken = self.take_cancelled(cell);
        if self.cells[cell].load(Ordering::Relaxed) == EMPTY {
            self.cells[cell].store(encode(key, LIVE), Ordering::Release);
        }
        taken
    }

    /// Under the lock, by `key`'s owner cancelling it there: empties its
    /// cell if it holds `key` live (nobody else can cancel it meanwhile).
    pub(crate) fn forget(&self, key: Key) {
        let cell = &self.cells[cell_of(key)];
        if cell.load(Ordering::Relaxed) == encode(key, LIVE) {
            cell.store(EMPTY, Ordering::Relaxed);
        }
    }

    /// Under the lock: empties every cell, passing each cancelled entry to
    /// `reclaim`. A live entry's owner then cancels under the lock.
    pub(crate) fn empty(&self, mut reclaim: impl FnMut(Key)) {
        for cell in &self.cells {
            if cell.load(Ordering::Relaxed) == EMPTY {
                continue;
            }
            let value = cell.swap(EMPTY, Ordering::AcqRel);
            if value & STATE == CANCELLED {
                reclaim(decode(value));
            }
        }
    }

    /// Under the lock: entries cancelled here and not yet reclaimed.
    pub(crate) fn cancelled(&self) -> usize {
        self.cells
            .iter()
            .filter(|cell| cell.load(Ordering::Acquire) & STATE == CANCELLED)
            .count()
    }

    /// Under the lock: whether `key` was cancelled here.
    pub(crate) fn is_cancelled(&self, key: Key) -> bool {
        self.cells[cell_of(key)].load(Ordering::Acquire) == encode(key, CANCELLED)
    }
}
