//! One bit per wheel slot, set while the slot's bucket is non-empty.
//!
//! This is what lets the driver skip empty ticks: the next non-empty bucket is
//! found with a few `trailing_zeros` over 64-slot words instead of a walk over
//! every tick (the Linux timer wheel and tokio's `level.rs` do the same).

pub(crate) struct Bitmap {
    words: Box<[u64]>,
}

impl Bitmap {
    /// A bitmap for `slots` slots, all clear.
    pub(crate) fn new(slots: usize) -> Self {
        Bitmap {
            words: vec![0; slots.div_ceil(64)].into_boxed_slice(),
        }
    }

    pub(crate) fn set(&mut self, slot: usize) {
        self.words[slot / 64] |= 1 << (slot % 64);
    }

    pub(crate) fn clear(&mut self, slot: usize) {
        self.words[slot / 64] &= !(1 << (slot % 64));
    }

    /// The first set slot at or after `from`, if any (no wrap-around).
    pub(crate) fn next_set(&self, from: usize) -> Option<usize> {
        let mut word_index = from / 64;
        let mut word = *self.words.get(word_index)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some(word_index * 64 + word.trailing_zeros() as usize);
            }
            word_index += 1;
            word = *self.words.get(word_index)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_next_set_slot_across_words() {
        let mut b = Bitmap::new(512);
        assert_eq!(b.next_set(0), None);
        b.set(3);
        b.set(64);
        b.set(511);
        assert_eq!(b.next_set(0), Some(3));
        assert_eq!(b.next_set(3), Some(3), "from is inclusive");
        assert_eq!(b.next_set(4), Some(64));
        assert_eq!(b.next_set(65), Some(511));
        assert_eq!(b.next_set(512), None, "past the end is empty, not a panic");
        b.clear(64);
        assert_eq!(b.next_set(4), Some(511));
    }

    #[test]
    fn small_wheels_work() {
        let mut b = Bitmap::new(1);
        b.set(0);
        assert_eq!(b.next_set(0), Some(0));
        assert_eq!(b.next_set(1), None);
    }
}
