//! The ring's arithmetic: which lap and bucket a tick belongs to, which
//! ticks the ring covers, and when a far lap must move into it. Pure
//! functions of the ring's shape and the last processed tick, kept apart
//! from the list surgery in `mod.rs` so that each rule can be tested at its
//! edges.
//!
//! A lap is one revolution of `slots` ticks; the ring has `2 * slots`
//! buckets, so it holds two consecutive laps: with `C` the lap of the next
//! tick to process, laps `C` and `C + 1`.

/// The ring's shape, from its number of slots per revolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ring {
    /// `log2(slots)`: a tick's lap is `tick >> shift`.
    shift: u32,
    /// `2 * slots - 1`: a tick's bucket is `tick & mask`.
    mask: u64,
}

impl Ring {
    /// A ring of `slots` ticks per revolution (a power of two).
    pub(crate) fn new(slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two(), "slots = {slots}");
        Ring {
            shift: slots.trailing_zeros(),
            mask: 2 * slots as u64 - 1,
        }
    }

    /// The number of buckets: two laps.
    pub(crate) fn buckets(self) -> usize {
        self.mask as usize + 1
    }

    /// The lap `tick` belongs to.
    pub(crate) fn lap(self, tick: u64) -> u64 {
        tick >> self.shift
    }

    /// The first tick of `lap`.
    pub(crate) fn first_tick(self, lap: u64) -> u64 {
        lap << self.shift
    }

    /// The bucket `tick` lives in while it is in the ring.
    pub(crate) fn bucket(self, tick: u64) -> usize {
        (tick & self.mask) as usize
    }

    /// The current lap: the lap of the next tick to process, `elapsed + 1`.
    pub(crate) fn current_lap(self, elapsed: u64) -> u64 {
        self.lap(elapsed + 1)
    }

    /// The first lap past the ring (after `elapsed`): where the overflow
    /// level starts.
    pub(crate) fn first_overflow_lap(self, elapsed: u64) -> u64 {
        self.current_lap(elapsed) + 2
    }

    /// Whether `tick` (after `elapsed`) belongs in the ring: its lap is the
    /// current one or the next.
    pub(crate) fn in_ring(self, elapsed: u64, tick: u64) -> bool {
        self.lap(tick) <= self.current_lap(elapsed) + 1
    }

    /// The tick of `bucket`, the first occupied one found searching from the
    /// bucket of `elapsed + 1` around the ring. The ring spans fewer than two
    /// laps from `elapsed + 1`, so the distance around it identifies the
    /// tick.
    pub(crate) fn tick_of_bucket(self, elapsed: u64, bucket: usize) -> u64 {
        let from = self.bucket(elapsed + 1) as u64;
        let distance = (bucket as u64).wrapping_sub(from) & self.mask;
        elapsed + 1 + distance
    }

    /// The tick whose processing makes the lap before `lap` current, at
    /// which `lap` (two or more laps ahead, waiting in the overflow) must
    /// move into the ring.
    pub(crate) fn move_in_tick(self, lap: u64) -> u64 {
        debug_assert!(lap >= 2, "lap {lap} is never in the overflow");
        self.first_tick(lap - 1) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_and_buckets_of_an_eight_slot_ring() {
        let ring = Ring::new(8);
        assert_eq!(ring.buckets(), 16);
        assert_eq!(
            (ring.lap(7), ring.lap(8), ring.lap(15), ring.lap(16)),
            (0, 1, 1, 2)
        );
        assert_eq!(
            (ring.first_tick(0), ring.first_tick(1), ring.first_tick(2)),
            (0, 8, 16)
        );
        assert_eq!(
            (
                ring.bucket(3),
                ring.bucket(15),
                ring.bucket(16),
                ring.bucket(19)
            ),
            (3, 15, 0, 3)
        );
    }

    /// The ring holds the current lap and the next; the current lap is the
    /// one of the next tick to process, so processing a lap's last tick
    /// moves the window on.
    #[test]
    fn the_ring_covers_the_current_and_the_next_lap() {
        let ring = Ring::new(8);
        // elapsed 6: the next tick is 7, in lap 0, so laps 0 and 1 (ticks up
        // to 15) are in the ring.
        assert_eq!(ring.current_lap(6), 0);
        assert!(ring.in_ring(6, 15));
        assert!(!ring.in_ring(6, 16));
        // elapsed 7 (lap 0's last tick processed): the next tick is 8.
        assert_eq!(ring.current_lap(7), 1);
        assert!(ring.in_ring(7, 23));
        assert!(!ring.in_ring(7, 24));
    }

    #[test]
    fn a_bucket_maps_back_to_its_tick_across_the_wrap() {
        let ring = Ring::new(8); // 16 buckets
                                 // From elapsed 5 the search starts at tick 6 (bucket 6).
        assert_eq!(ring.tick_of_bucket(5, 6), 6);
        assert_eq!(ring.tick_of_bucket(5, 15), 15);
        assert_eq!(ring.tick_of_bucket(5, 0), 16, "past the wrap");
        assert_eq!(
            ring.tick_of_bucket(5, 5),
            21,
            "the last bucket before the start"
        );
        // Far along: elapsed 1000 starts at tick 1001, bucket 9.
        assert_eq!(ring.tick_of_bucket(1000, 9), 1001);
        assert_eq!(ring.tick_of_bucket(1000, 8), 1016);
    }

    /// A lap moves in when the lap before it becomes current, that is once
    /// the last tick of the lap two before it has been processed.
    #[test]
    fn a_far_lap_moves_in_when_the_lap_before_it_becomes_current() {
        let ring = Ring::new(8);
        assert_eq!(ring.move_in_tick(2), 7);
        assert_eq!(ring.current_lap(ring.move_in_tick(2)), 1);
        assert!(ring.in_ring(ring.move_in_tick(2), 16), "lap 2 fits then");
        assert!(
            !ring.in_ring(ring.move_in_tick(2) - 1, 16),
            "and not before"
        );
        assert_eq!(ring.move_in_tick(125), 991);
    }

    #[test]
    fn a_one_slot_ring_has_two_buckets() {
        let ring = Ring::new(1);
        assert_eq!(ring.buckets(), 2);
        assert_eq!((ring.lap(5), ring.bucket(5)), (5, 1));
        assert!(ring.in_ring(4, 6) && !ring.in_ring(4, 7));
        assert_eq!(ring.move_in_tick(3), 1);
    }
}
