//! [`Key`]: the handle to an item in a [`DelayQueue`](super::DelayQueue).

/// The handle to an item in a [`DelayQueue`](super::DelayQueue), returned by
/// [`insert`](super::DelayQueue::insert) and
/// [`insert_at`](super::DelayQueue::insert_at), as tokio-util's
/// `delay_queue::Key`.
///
/// A key stays valid until its item leaves the queue (it expires, or is
/// removed, or the queue is cleared). After that it is *stale*, and it stays
/// stale for good: each key carries a generation, so a stale key never
/// reaches an item inserted later in the same slot.
/// [`try_remove`](super::DelayQueue::try_remove) returns `None` for it, and
/// the methods that need a live item ([`remove`](super::DelayQueue::remove),
/// [`reset`](super::DelayQueue::reset),
/// [`deadline`](super::DelayQueue::deadline)) panic, as tokio-util's do.
///
/// `Copy + Eq + Hash`, 8 bytes: keep it in a map beside the value it
/// expires (a session table's entry, a request's slot).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::collections::HashSet;
/// use std::time::Duration;
/// use tickwheel::delay_queue::DelayQueue;
///
/// let timer = tickwheel::Timer::new();
/// let mut queue = DelayQueue::with_timer(&timer);
/// let key = queue.insert("a", Duration::from_secs(1));
/// let mut keys = HashSet::new();
/// keys.insert(key);
///
/// queue.remove(&key);
/// let reused = queue.insert("b", Duration::from_secs(1));
/// assert_ne!(reused, key, "a stale key never names a later item");
/// assert!(queue.try_remove(&key).is_none());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub(super) index: u32,
    pub(super) generation: u32,
}

impl Key {
    /// The key of the item's slot in the queue's wheel.
    pub(super) fn slab_key(self) -> crate::engine::wheel::Key {
        crate::engine::wheel::Key {
            index: self.index,
            generation: self.generation,
        }
    }
}

impl From<crate::engine::wheel::Key> for Key {
    fn from(key: crate::engine::wheel::Key) -> Self {
        Key {
            index: key.index,
            generation: key.generation,
        }
    }
}
