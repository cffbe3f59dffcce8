//! [`ScheduledTask`]: a future spawned on the timer's runtime once a delay
//! has passed, unless cancelled first (Netty's `Timeout`).
//!
//! The spawned task waits on a wheel [`Sleep`] and on its [`Control`]'s
//! cancel; whoever moves the control out of `Waiting` first (the task, to
//! start the future, or [`ScheduledTask::cancel`]) decides whether the
//! future ever runs. The future is not polled before that, so a successful
//! cancel is final.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio::time::Instant;

use crate::schedule::catch_unwind::CatchUnwind;
use crate::schedule::control::{Control, State};
use crate::sleep::Sleep;
use crate::timer::Timer;

/// Spawns the waiting task for [`Timer::schedule`] and
/// [`Timer::schedule_at`].
pub(crate) fn spawn<F>(timer: &Timer, mut sleep: Sleep, future: F) -> ScheduledTask
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let control = Arc::new(Control::new());
    let deadline = sleep.deadline();
    let task = control.clone();
    timer.runtime().spawn(async move {
        tokio::select! {
            biased;
            () = task.cancelled() => return,
            () = &mut sleep => {}
        }
        // A shutdown ends every sleep early; a task that has not started by
        // then never runs.
        if sleep.timer_is_shut_down() {
            task.cancel();
            return;
        }
        drop(sleep);
        if task.start() {
            drop(task);
            // A panic in `poll` would drop the future during the unwind, and
            // a second panic in its drop would abort the process: catch the
            // first, drop the future, then let the panic end this task, as
            // it would under `tokio::spawn`.
            if let Err(payload) = CatchUnwind::new(future).await {
                std::panic::resume_unwind(payload);
            }
        }
    });
    ScheduledTask { control, deadline }
}

/// A handle to a future scheduled with [`Timer::schedule`] or
/// [`Timer::schedule_at`]: Netty's `Timeout`.
///
/// The future is spawned on the runtime that hosts the timer's driver once
/// its [`deadline`](ScheduledTask::deadline) has passed (at the first tick
/// boundary at or after it, never before).
///
/// # Failures
///
/// Nothing reports a run's outcome: the output is dropped. A panic in the
/// future, in `poll` or when the future or its output is dropped (also a
/// future dropped unrun after a cancel or shutdown), ends only the task that
/// holds it, as with `tokio::spawn` (the runtime's panic handling applies);
/// the timer, its driver and every other task go on. Unlike a bare
/// `tokio::spawn`, a future that panics in `poll` and again when dropped does
/// not abort the process: it is dropped after the first panic is caught, not
/// during its unwind, and that first panic then ends the task.
///
/// # Cancellation
///
/// [`cancel`](ScheduledTask::cancel) before the deadline means the future is
/// never polled; it is dropped promptly, not at the deadline. A future that
/// has started is not interrupted: `cancel` then returns `false`.
///
/// Dropping the handle does **not** cancel the task (as with Netty's
/// `Timeout` and tokio's `JoinHandle`): keep the handle to cancel it.
///
/// # Shutdown
///
/// When the timer [shuts down](Timer::shutdown), a task that has not started
/// is cancelled and never runs; [`is_cancelled`](ScheduledTask::is_cancelled)
/// reports it once the task has seen the shutdown (at its next poll, which
/// the shutdown triggers). A future already running goes on. If the runtime
/// itself shuts down, its tasks are dropped, started or not.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let reminder = timer.schedule(Duration::from_secs(30), async {
///     println!("30 s passed without a reply");
/// });
/// // The reply came in time:
/// assert!(reminder.cancel());
/// assert!(reminder.is_cancelled());
/// # }
/// ```
pub struct ScheduledTask {
    control: Arc<Control>,
    deadline: Instant,
}

impl ScheduledTask {
    /// Cancels the task if it has not started. Returns `true` if this call
    /// prevented the run; `false` if the future already started, or the task
    /// was already cancelled (by an earlier call or by the timer's shutdown).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule(Duration::from_millis(10), async {});
    /// tokio::time::sleep(Duration::from_millis(20)).await;
    /// assert!(task.is_expired());
    /// assert!(!task.cancel()); // too late
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        self.control.cancel()
    }

    /// `true` if the task was cancelled before it started.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule(Duration::from_secs(5), async {});
    /// assert!(!task.is_cancelled());
    /// task.cancel();
    /// assert!(task.is_cancelled());
    /// assert!(!task.is_expired()); // it never started
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.control.state() == State::Cancelled
    }

    /// `true` once the deadline has passed and the future was started (it may
    /// still be running).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule(Duration::from_secs(5), async {});
    /// assert!(!task.is_expired());
    /// tokio::time::sleep(Duration::from_secs(6)).await;
    /// assert!(task.is_expired());
    /// # }
    /// ```
    pub fn is_expired(&self) -> bool {
        self.control.state() == State::Started
    }

    /// When the future is due to start, as given (the wheel starts it at the
    /// first tick boundary at or after this instant).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule(Duration::from_secs(5), async {});
    /// assert_eq!(task.deadline(), Instant::now() + Duration::from_secs(5));
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl fmt::Debug for ScheduledTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledTask")
            .field("deadline", &self.deadline)
            .field("state", &self.control.state())
            .finish()
    }
}
