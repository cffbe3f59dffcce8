//! [`Expired`]: an item as it leaves a [`DelayQueue`](super::DelayQueue).

use tokio::time::Instant;

use super::key::Key;

/// An item that left a [`DelayQueue`](super::DelayQueue): yielded by
/// [`poll_expired`](super::DelayQueue::poll_expired) (and the queue's
/// `Stream`) once its deadline has passed, or returned by
/// [`remove`](super::DelayQueue::remove). Shaped as tokio-util's
/// `delay_queue::Expired`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use futures::StreamExt;
/// use tickwheel::delay_queue::DelayQueue;
///
/// let timer = tickwheel::Timer::new();
/// let mut queue = DelayQueue::with_timer(&timer);
/// let key = queue.insert(String::from("session-7"), Duration::from_secs(30));
/// let deadline = queue.deadline(&key);
///
/// let mut expired = queue.next().await.unwrap();
/// assert_eq!(expired.key(), key);
/// assert_eq!(expired.deadline(), deadline);
/// expired.get_mut().push_str(" (expired)");
/// assert_eq!(expired.get_ref(), "session-7 (expired)");
/// assert_eq!(expired.into_inner(), "session-7 (expired)");
/// # }
/// ```
#[derive(Debug)]
pub struct Expired<T> {
    pub(super) data: T,
    pub(super) deadline: Instant,
    pub(super) key: Key,
}

impl<T> Expired<T> {
    /// The item's value.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("job-1", Duration::from_secs(5));
    /// let removed = queue.remove(&key);
    /// assert_eq!(*removed.get_ref(), "job-1");
    /// # }
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.data
    }

    /// The item's value, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::DelayQueue;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert(vec![1, 2], Duration::from_secs(5));
    /// let mut removed = queue.remove(&key);
    /// removed.get_mut().push(3);
    /// assert_eq!(removed.into_inner(), [1, 2, 3]);
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.data
    }

    /// The item's value, consuming the `Expired`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::DelayQueue;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert(String::from("session-1"), Duration::from_secs(30));
    /// let session: String = queue.next().await.unwrap().into_inner();
    /// assert_eq!(session, "session-1");
    /// # }
    /// ```
    pub fn into_inner(self) -> T {
        self.data
    }

    /// The deadline the item was inserted (or last reset) with.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::DelayQueue;
    /// use tokio::time::Instant;
    ///
    /// let mut queue = DelayQueue::new();
    /// let deadline = Instant::now() + Duration::from_secs(2);
    /// queue.insert_at("ping", deadline);
    /// let expired = queue.next().await.unwrap();
    /// assert_eq!(expired.deadline(), deadline);
    /// assert!(Instant::now() >= deadline);
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The key the item had; it is stale now.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use tickwheel::DelayQueue;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("lease", Duration::from_secs(1));
    /// let expired = queue.next().await.unwrap();
    /// assert_eq!(expired.key(), key);
    /// assert!(queue.try_remove(&key).is_none()); // the key is stale now
    /// # }
    /// ```
    pub fn key(&self) -> Key {
        self.key
    }
}
