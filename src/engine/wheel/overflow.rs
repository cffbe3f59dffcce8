//! The overflow level: the lists of laps too far ahead for the ring (lap
//! `C + 2` and later, with `C` the current lap), one list per lap.
//!
//! The next [`NEAR`] laps (`base .. base + NEAR`, `base = C + 2`) have an
//! array slot each, `lap % NEAR`, and one bit each in an occupancy word, so a
//! timer a few minutes away is linked with an index and found again with a
//! rotate and a `trailing_zeros`, at the cost of the ring's own buckets.
//! Laps beyond that wait in a `BTreeMap` and move into the array as the
//! window slides over them, each once. On a 1 ms x 8192-slot wheel the array
//! reaches about 9 minutes ahead; on 10 ms x 512, about 5.5 minutes.
//!
//! Invariant: every lap in the array is in `base .. base + NEAR`, every lap
//! in the map is at or after `base + NEAR`, so the array's laps all come
//! before the map's. Two laps of the window never share a slot (they differ
//! by less than `NEAR`).

use std::collections::BTreeMap;

use super::slab::NIL;

/// Laps held in the array.
pub(crate) const NEAR: usize = 64;

pub(crate) struct Overflow {
    /// List head of lap `l` at `l % NEAR`, for laps in the window.
    near: [u32; NEAR],
    /// Bit `l % NEAR` set while lap `l`'s list is in `near`.
    occupied: u64,
    /// The first lap of the window: the current lap + 2.
    base: u64,
    /// List heads of laps past the window.
    far: BTreeMap<u64, u32>,
}

impl Overflow {
    /// An empty overflow whose window starts at lap `base`.
    pub(crate) fn new(base: u64) -> Self {
        Overflow {
            near: [NIL; NEAR],
            occupied: 0,
            base,
            far: BTreeMap::new(),
        }
    }

    fn in_window(&self, lap: u64) -> bool {
        debug_assert!(
            lap >= self.base,
            "lap {lap} is before the window at {}",
            self.base
        );
        lap < self.base.saturating_add(NEAR as u64)
    }

    fn slot(lap: u64) -> usize {
        (lap % NEAR as u64) as usize
    }

    /// The earliest lap with a list.
    pub(crate) fn first(&self) -> Option<u64> {
        if self.occupied != 0 {
            let start = Self::slot(self.base) as u32;
            let offset = self.occupied.rotate_right(start).trailing_zeros();
            return Some(self.base + u64::from(offset));
        }
        self.far.first_key_value().map(|(&lap, _)| lap)
    }

    /// The head of `lap`'s list, made empty (`NIL`) if it has none; the
    /// caller links an entry into it.
    pub(crate) fn head_mut(&mut self, lap: u64) -> &mut u32 {
        if self.in_window(lap) {
            let slot = Self::slot(lap);
            self.occupied |= 1 << slot;
            &mut self.near[slot]
        } else {
            self.far.entry(lap).or_insert(NIL)
        }
    }

    /// Removes `lap`'s list and returns its head (`NIL` if it had none).
    pub(crate) fn take(&mut self, lap: u64) -> u32 {
        if self.in_window(lap) {
            let slot = Self::slot(lap);
            self.occupied &= !(1 << slot);
            std::mem::replace(&mut self.near[slot], NIL)
        } else {
            self.far.remove(&lap).unwrap_or(NIL)
        }
    }

    /// The head of `lap`'s list, or [`NIL`] if it has none.
    pub(crate) fn head(&self, lap: u64) -> u32 {
        if lap < self.base {
            NIL
        } else if self.in_window(lap) {
            self.near[Self::slot(lap)]
        } else {
            self.far.get(&lap).copied().unwrap_or(NIL)
        }
    }

    /// Every list as `(lap, head)`, in lap order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        (0..NEAR as u64)
            .map(move |offset| self.base + offset)
            .filter(move |&lap| self.occupied & (1 << Self::slot(lap)) != 0)
            .map(move |lap| (lap, self.near[Self::slot(lap)]))
            .chain(self.far.iter().map(|(&lap, &head)| (lap, head)))
    }

    /// Makes `head` the head of `lap`'s list, removing the list if `head`
    /// is `NIL`.
    pub(crate) fn set_head(&mut self, lap: u64, head: u32) {
        if head == NIL {
            self.take(lap);
        } else {
            *self.head_mut(lap) = head;
        }
    }

    /// Removes the earliest list and returns its head.
    #[cfg(test)]
    pub(crate) fn pop_first(&mut self) -> Option<u32> {
        let lap = self.first()?;
        Some(self.take(lap))
    }

    /// Moves the window to start at lap `base`, after every lap before it
    /// has been taken out; laps of the map that it now covers move into the
    /// array.
    pub(crate) fn slide(&mut self, base: u64) {
        if base <= self.base {
            return;
        }
        debug_assert!(
            self.first().is_none_or(|first| first >= base),
            "lap {:?} left before the window's new start {base}",
            self.first()
        );
        self.base = base;
        let end = base.saturating_add(NEAR as u64);
        while let Some(entry) = self.far.first_entry().filter(|entry| *entry.key() < end) {
            let (lap, head) = entry.remove_entry();
            let slot = Self::slot(lap);
            debug_assert!(self.occupied & (1 << slot) == 0, "slot of lap {lap} taken");
            *self.head_mut(lap) = head;
        }
    }

    /// How many laps wait in the map (past the array's window).
    #[cfg(test)]
    pub(crate) fn in_map(&self) -> usize {
        self.far.len()
    }

    /// The number of laps with a list.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.occupied.count_ones() as usize + self.far.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_laps_come_before_far_ones_and_the_window_wraps() {
        // A window that starts mid-array: its laps wrap around slot 0.
        let mut o = Overflow::new(100);
        *o.head_mut(100 + NEAR as u64 + 5) = 7; // past the window: the map
        assert_eq!(o.first(), Some(100 + NEAR as u64 + 5));
        *o.head_mut(130) = 3; // slot 2, after the wrap
        *o.head_mut(101) = 1; // slot 37
        assert_eq!(o.first(), Some(101));
        assert_eq!(o.len(), 3);
        assert_eq!(o.take(101), 1);
        assert_eq!(o.first(), Some(130));
        assert_eq!(o.pop_first(), Some(3));
        assert_eq!(o.first(), Some(100 + NEAR as u64 + 5));
        assert_eq!(o.head(100 + NEAR as u64 + 5), 7);
        assert_eq!(o.pop_first(), Some(7));
        assert!(o.is_empty());
        assert_eq!(o.pop_first(), None);
    }

    #[test]
    fn sliding_moves_the_laps_it_covers_into_the_array_once() {
        let mut o = Overflow::new(2);
        let far = [2 + NEAR as u64, 2 + NEAR as u64 + 1, 500];
        for (i, &lap) in far.iter().enumerate() {
            *o.head_mut(lap) = i as u32;
        }
        assert_eq!((o.occupied, o.far.len()), (0, 3));
        o.slide(4); // covers the first two
        assert_eq!((o.occupied.count_ones(), o.far.len()), (2, 1));
        assert_eq!(o.first(), Some(2 + NEAR as u64));
        assert_eq!(o.head(2 + NEAR as u64 + 1), 1);
        o.slide(4); // no move: nothing changes
        assert_eq!(o.len(), 3);
        // The wheel takes the laps out before it moves the window past them.
        assert_eq!(o.take(2 + NEAR as u64), 0);
        assert_eq!(o.take(2 + NEAR as u64 + 1), 1);
        o.slide(500 - NEAR as u64); // lap 500 is one past the window
        assert_eq!((o.occupied, o.far.len()), (0, 1));
        o.slide(500 - NEAR as u64 + 1); // now it is the window's last lap
        assert_eq!((o.occupied.count_ones(), o.far.len()), (1, 0));
        assert_eq!(o.first(), Some(500));
        assert_eq!(o.pop_first(), Some(2));
    }

    #[test]
    fn iter_and_get_see_every_list_in_lap_order() {
        let mut o = Overflow::new(40);
        let laps = [40 + NEAR as u64 + 3, 41, 40 + NEAR as u64 - 1, 70, 1_000];
        for (i, &lap) in laps.iter().enumerate() {
            *o.head_mut(lap) = i as u32;
        }
        let mut sorted: Vec<(u64, u32)> = laps.iter().copied().zip(0..).collect();
        sorted.sort_unstable();
        assert_eq!(o.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(o.head(70), 3);
        assert_eq!(o.head(71), NIL);
        assert_eq!(o.head(39), NIL, "before the window");
        assert_eq!(o.head(2_000), NIL);
    }

    #[test]
    fn set_head_to_nil_removes_the_list() {
        let mut o = Overflow::new(0);
        for lap in [5, 5 + 10 * NEAR as u64] {
            *o.head_mut(lap) = 9;
            o.set_head(lap, 4);
            assert_eq!(o.head(lap), 4);
            o.set_head(lap, NIL);
            assert!(o.is_empty());
            assert_eq!(o.first(), None);
        }
    }

    #[test]
    fn laps_near_the_end_of_time_do_not_overflow() {
        let base = u64::MAX - 10;
        let mut o = Overflow::new(base);
        *o.head_mut(u64::MAX - 1) = 1;
        assert_eq!(o.first(), Some(u64::MAX - 1));
        o.slide(u64::MAX - 1);
        assert_eq!(o.pop_first(), Some(1));
    }
}

/// The overflow against a `BTreeMap` of lap lists, with random links, takes,
/// head changes and slides (each after taking the laps it passes, as the
/// wheel does), checking the window's invariant after every step.
#[cfg(test)]
mod model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap as Model;

    #[derive(Debug, Clone)]
    enum Op {
        // lap = base + off
        Link(u64, u32),
        Take(u64),
        SetHead(u64, u32),
        SetNil(u64),
        // new base = base + d; laps below are taken first (the wheel's migrate)
        Slide(u64),
        PopFirst,
    }

    fn off() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..70,
            60u64..140,
            0u64..2000,
            Just(63),
            Just(64),
            Just(65)
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (off(), 0u32..1000).prop_map(|(o, v)| Op::Link(o, v)),
            2 => off().prop_map(Op::Take),
            1 => (off(), 0u32..1000).prop_map(|(o, v)| Op::SetHead(o, v)),
            1 => off().prop_map(Op::SetNil),
            3 => prop_oneof![0u64..3, 0u64..70, 0u64..3000].prop_map(Op::Slide),
            1 => Just(Op::PopFirst),
        ]
    }

    fn check(o: &Overflow, m: &Model<u64, u32>) {
        assert_eq!(o.first(), m.keys().next().copied());
        assert_eq!(o.len(), m.len());
        assert_eq!(
            o.iter().collect::<Vec<_>>(),
            m.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>()
        );
        for (&lap, &head) in m {
            assert_eq!(o.head(lap), head);
        }
        for lap in o.base.saturating_sub(5)..o.base + 200 {
            assert_eq!(
                o.head(lap),
                m.get(&lap).copied().unwrap_or(NIL),
                "head({lap})"
            );
        }
        // invariant
        for s in 0..NEAR {
            if o.occupied & (1 << s) == 0 {
                assert_eq!(o.near[s], NIL);
            } else {
                assert_ne!(o.near[s], NIL);
            }
        }
        for &lap in o.far.keys() {
            assert!(lap >= o.base + NEAR as u64);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn overflow_matches_a_btreemap(start in prop_oneof![Just(0u64), Just(2u64), 0u64..1000], ops in proptest::collection::vec(op(), 1..200)) {
            let mut o = Overflow::new(start);
            let mut m: Model<u64, u32> = Model::new();
            for op in ops {
                let base = o.base;
                match op {
                    Op::Link(off, v) => {
                        let lap = base + off;
                        *o.head_mut(lap) = v;
                        m.insert(lap, v);
                    }
                    Op::Take(off) => {
                        let lap = base + off;
                        assert_eq!(o.take(lap), m.remove(&lap).unwrap_or(NIL));
                    }
                    Op::SetHead(off, v) => {
                        let lap = base + off;
                        o.set_head(lap, v);
                        m.insert(lap, v);
                    }
                    Op::SetNil(off) => {
                        let lap = base + off;
                        o.set_head(lap, NIL);
                        m.remove(&lap);
                    }
                    Op::Slide(d) => {
                        let nb = base + d;
                        while let Some(l) = o.first() {
                            if l >= nb { break; }
                            let (ml, mh) = m.pop_first().unwrap();
                            assert_eq!(ml, l);
                            assert_eq!(o.take(l), mh);
                        }
                        o.slide(nb);
                    }
                    Op::PopFirst => {
                        assert_eq!(o.pop_first(), m.pop_first().map(|(_, h)| h));
                    }
                }
                check(&o, &m);
            }
        }
    }
}
