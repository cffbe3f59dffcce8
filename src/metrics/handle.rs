//! [`MetricsTask`]: the handle to a publishing task, which stops it when
//! dropped or cancelled.

use std::fmt;
use std::panic::resume_unwind;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::task::TaskState;

/// The handle to a publishing task, from
/// [`Timer::publish_metrics`](crate::Timer::publish_metrics) or
/// [`Publisher::spawn`](crate::metrics::Publisher::spawn).
///
/// Dropping it stops the task, as [`cancel`](MetricsTask::cancel) does;
/// [`detach`](MetricsTask::detach) lets the task run until the timer shuts
/// down instead. The task also ends by itself when the timer shuts down
/// (see the [module docs](crate::metrics#waiting-and-stopping)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let mut task = timer.publish_metrics(Duration::from_secs(1));
/// tokio::time::sleep(Duration::from_millis(2500)).await;
/// assert_eq!(task.samples(), 3); // at 0, 1 and 2 s
/// timer.shutdown();
/// task.stopped().await;
/// assert_eq!(task.samples(), 4); // and a final one at shutdown
/// assert!(task.is_finished());
/// # }
/// ```
#[must_use = "dropping a MetricsTask stops its task; call `.detach()` to keep it running"]
pub struct MetricsTask {
    /// `None` once detached, or once `stopped` has seen the task end.
    task: Option<JoinHandle<()>>,
    state: Arc<TaskState>,
    period: Duration,
}

impl MetricsTask {
    /// The handle to `task`, which shares `state`.
    pub(super) fn new(
        task: JoinHandle<()>,
        state: Arc<TaskState>,
        period: Duration,
    ) -> MetricsTask {
        MetricsTask {
            task: Some(task),
            state,
            period,
        }
    }

    /// Stops the task: no sample starts after it returns. A sample is
    /// recorded within one poll of the task, so none is ever cut in half (on
    /// a multi-threaded runtime, one in progress on another thread
    /// finishes).
    /// Returns `true` if this call stopped it, `false` if it had already
    /// ended (by shutdown or an earlier `cancel`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(1));
    /// tokio::task::yield_now().await;
    /// assert!(task.cancel());
    /// assert!(!task.cancel());
    /// tokio::time::sleep(Duration::from_secs(5)).await;
    /// assert_eq!(task.samples(), 1); // only the one at start
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        match &self.task {
            Some(task) if !task.is_finished() => {
                let first = !self.state.stopped.swap(true, Ordering::AcqRel);
                task.abort();
                first
            }
            _ => false,
        }
    }

    /// `true` once the task has ended: the timer shut down (and the task
    /// recorded its final sample), or the task was cancelled and the runtime
    /// has dropped it (at its next turn).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(1));
    /// assert!(!task.is_finished());
    /// timer.shutdown();
    /// tokio::task::yield_now().await;
    /// assert!(task.is_finished());
    /// # }
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// How many snapshots the task has recorded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::from_secs(10));
    /// assert_eq!(task.samples(), 0); // spawned, not yet run
    /// tokio::time::sleep(Duration::from_secs(25)).await;
    /// assert_eq!(task.samples(), 3); // at 0, 10 and 20 s
    /// # }
    /// ```
    pub fn samples(&self) -> u64 {
        self.state.samples.load(Ordering::Acquire)
    }

    /// The time between samples (a zero period given is raised to the
    /// timer's tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.publish_metrics(Duration::ZERO);
    /// assert_eq!(task.period(), timer.tick());
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Lets the task run without its handle: until the timer shuts down (or
    /// its runtime does). For a service that publishes for the timer's
    /// whole life.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// timer.publish_metrics(Duration::from_secs(10)).detach();
    /// # tokio::time::sleep(Duration::from_secs(1)).await;
    /// # timer.shutdown();
    /// # }
    /// ```
    pub fn detach(mut self) {
        // Dropping a tokio JoinHandle detaches its task.
        self.task = None;
    }

    /// Waits until the task has ended: after the timer's shutdown (once its
    /// final sample is recorded), or after [`cancel`](MetricsTask::cancel).
    /// Returns at once if it already has. It does not end the task itself:
    /// awaited on a running timer, it waits until the timer shuts down.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes leaves the task
    /// and this handle as they were, and it can be awaited again.
    ///
    /// # Panics
    ///
    /// With the task's panic, if it panicked: only a recorder that panics
    /// can make it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut task = timer.publish_metrics(Duration::from_secs(1));
    /// let stopper = timer.clone();
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_millis(3500)).await;
    ///     stopper.shutdown();
    /// });
    /// task.stopped().await;
    /// assert_eq!(task.samples(), 5); // at 0, 1, 2 and 3 s, and at shutdown
    /// # }
    /// ```
    pub async fn stopped(&mut self) {
        if let Some(task) = &mut self.task {
            let ended = task.await;
            self.task = None;
            if let Err(err) = ended {
                if err.is_panic() {
                    resume_unwind(err.into_panic());
                }
            }
        }
    }
}

impl Drop for MetricsTask {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            self.state.stopped.store(true, Ordering::Release);
            task.abort();
        }
    }
}

impl fmt::Debug for MetricsTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsTask")
            .field("period", &self.period)
            .field("samples", &self.samples())
            .field("finished", &self.is_finished())
            .finish()
    }
}
