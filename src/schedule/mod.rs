//! Delayed and periodic tasks on the wheel, for people coming from Netty's
//! `HashedWheelTimer.newTimeout`: [`Timer::schedule`] and
//! [`Timer::schedule_at`] run a future once after a delay
//! ([`ScheduledTask`]); [`Timer::schedule_every`] runs one again and again
//! with a fixed delay ([`PeriodicTask`]).
//!
//! Both spawn one task on the runtime that hosts the timer's driver; the task
//! waits on a wheel `Sleep`, so no user code ever runs on the driver.
//!
//! - `control.rs`: the cancel handshake a handle shares with its task.
//! - `once.rs`: the one-shot handle and its cancel race.
//! - `every.rs`: the periodic builder, loop and handle.
//! - `run_error.rs`: what a failed periodic run reports.
//! - `catch_unwind.rs`: catches a future's panic in `poll` and in its drop,
//!   so a panicking run does not end the schedule.

mod catch_unwind;
mod control;
mod every;
mod once;
mod run_error;

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::timer::Timer;

pub use self::every::{PeriodicTask, ScheduleEvery};
pub use self::once::ScheduledTask;
pub use self::run_error::{RunError, RunOutcome};

impl Timer {
    /// Spawns `future` on the timer's runtime once `delay` has passed, like
    /// Netty's `newTimeout`; the handle can cancel it until then.
    ///
    /// The future starts at the first tick boundary at or after the deadline
    /// (never before). Its output is dropped; a panic in it (in `poll`, or
    /// when it or its output is dropped) ends only its own task, as with
    /// `tokio::spawn`. See [`ScheduledTask`] for failures, cancellation and
    /// shutdown.
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep): if the timer has shut down (a task that
    /// could never run is refused loudly, as Netty's `newTimeout` does after
    /// `stop`), or if it has a [`max_pending`](crate::Builder::max_pending)
    /// limit and that many sleeps are already alive (a waiting task holds one
    /// sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (tx, rx) = oneshot::channel();
    /// let task = timer.schedule(Duration::from_secs(5), async move {
    ///     tx.send("retrying the failed call").unwrap();
    /// });
    /// assert!(!task.is_expired());
    /// assert_eq!(rx.await.unwrap(), "retrying the failed call");
    /// assert!(task.is_expired());
    /// # }
    /// ```
    #[track_caller]
    pub fn schedule<F>(&self, delay: Duration, future: F) -> ScheduledTask
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        once::spawn(self, self.sleep(delay), future)
    }

    /// Spawns `future` on the timer's runtime at `deadline` (at once if it
    /// has passed); as [`schedule`](Timer::schedule) otherwise.
    ///
    /// # Panics
    ///
    /// As [`schedule`](Timer::schedule): after shutdown, and at the
    /// `max_pending` limit.
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
    /// let at = Instant::now() + Duration::from_secs(60);
    /// let task = timer.schedule_at(at, async { println!("a minute later") });
    /// assert_eq!(task.deadline(), at);
    /// # task.cancel();
    /// # }
    /// ```
    #[track_caller]
    pub fn schedule_at<F>(&self, deadline: Instant, future: F) -> ScheduledTask
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        once::spawn(self, self.sleep_until(deadline), future)
    }

    /// Sets up `task` to run every `period` with a fixed delay: each run
    /// begins one period after the previous one ended, so runs never overlap.
    /// For heartbeats, lease renewals and watchdogs.
    ///
    /// `task` returns a future whose output is `()` or a `Result` (see
    /// [`RunOutcome`]); a run that returns `Err` or panics is reported to the
    /// [`on_error`](ScheduleEvery::on_error) hook and the schedule goes on,
    /// wherever the run panics (the closure, its future, or either's drop;
    /// see [`PeriodicTask`]'s failures). Call [`start`](ScheduleEvery::start) on the result to begin; see
    /// [`PeriodicTask`] for the exact timing, cancellation and shutdown.
    ///
    /// A zero `period` is raised to the timer's [`tick`](Timer::tick).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let watchdog = timer
    ///     .schedule_every(Duration::from_secs(10), || async {
    ///         println!("lease renewed");
    ///     })
    ///     .start();
    /// tokio::time::sleep(Duration::from_secs(25)).await;
    /// assert_eq!(watchdog.runs(), 2); // at 10 s and 20 s
    /// assert!(watchdog.cancel());
    /// # }
    /// ```
    pub fn schedule_every<F, Fut>(&self, period: Duration, task: F) -> ScheduleEvery<F>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: RunOutcome,
    {
        ScheduleEvery::new(self, period, task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_can_be_shared_across_tasks() {
        fn assert_traits<T: Send + Sync + Unpin + 'static>() {}
        assert_traits::<ScheduledTask>();
        assert_traits::<PeriodicTask>();
        assert_traits::<RunError>();
    }
}
