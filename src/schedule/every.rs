//! [`ScheduleEvery`] and [`PeriodicTask`]: a task run again and again with a
//! fixed delay between runs, for heartbeats and watchdogs.
//!
//! One spawned loop owns the task closure and one reusable wheel [`Sleep`]:
//! wait, run (catching panics), report a failure to the hook, then reset the
//! sleep to one period after the run ended. Runs therefore never overlap and
//! never pile up after a slow run or a stall.

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::engine::unwind::run_contained;
use crate::schedule::catch_unwind::CatchUnwind;
use crate::schedule::control::{Control, State};
use crate::schedule::run_error::{RunError, RunOutcome};
use crate::sleep::Sleep;
use crate::timer::Timer;

/// The hook failed runs are reported to.
type Hook = Box<dyn FnMut(RunError) + Send + 'static>;

/// State shared by the handle and the loop.
#[derive(Debug)]
struct Shared {
    /// `Waiting` while runs keep coming; `Cancelled` once stopped by
    /// `cancel` or by the timer's shutdown, after which no run starts.
    control: Control,
    runs: AtomicU64,
    failures: AtomicU64,
}

/// A periodic schedule being set up, from [`Timer::schedule_every`]; call
/// [`start`](ScheduleEvery::start) to begin it.
///
/// | setting | default |
/// |---|---|
/// | [`initial_delay`](ScheduleEvery::initial_delay) | one period |
/// | [`on_error`](ScheduleEvery::on_error) | none: failures are only counted ([`PeriodicTask::failures`]) |
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let heartbeat = timer
///     .schedule_every(Duration::from_secs(5), || async {
///         Ok::<_, std::io::Error>(()) // send a ping here
///     })
///     .initial_delay(Duration::ZERO)
///     .on_error(|err| eprintln!("heartbeat: {err}"))
///     .start();
/// tokio::time::sleep(Duration::from_secs(12)).await;
/// assert_eq!(heartbeat.runs(), 3); // at 0, 5 and 10 s
/// heartbeat.cancel();
/// # }
/// ```
#[must_use = "a periodic schedule does nothing until `.start()` is called"]
pub struct ScheduleEvery<F> {
    timer: Timer,
    period: Duration,
    initial_delay: Duration,
    task: F,
    on_error: Option<Hook>,
}

impl<F, Fut> ScheduleEvery<F>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: RunOutcome,
{
    pub(crate) fn new(timer: &Timer, period: Duration, task: F) -> Self {
        let period = if period.is_zero() {
            timer.tick()
        } else {
            period
        };
        ScheduleEvery {
            timer: timer.clone(),
            period,
            initial_delay: period,
            task,
            on_error: None,
        }
    }

    /// How long after [`start`](ScheduleEvery::start) the first run begins
    /// (default: one period; `Duration::ZERO` runs it at once).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(10), || async {})
    ///     .initial_delay(Duration::ZERO) // run once at start, then every 10 s
    ///     .start();
    /// tokio::time::sleep(Duration::from_secs(15)).await;
    /// assert_eq!(task.runs(), 2); // at 0 s and 10 s
    /// # task.cancel();
    /// # }
    /// ```
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Calls `hook` with every failed run: one that returned `Err` or
    /// panicked (see [`PeriodicTask`]'s failures). The schedule goes on
    /// after it. The hook runs on the task's loop, between runs, so it should
    /// be quick; a panic inside the hook (including one raised by dropping
    /// the [`RunError`], or by dropping the hook's own panic payload) is
    /// caught and ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let panics = Arc::new(AtomicU32::new(0));
    /// let seen = panics.clone();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async {
    ///         let config: Option<u32> = None;
    ///         config.expect("bug");
    ///     })
    ///     .on_error(move |err| {
    ///         assert_eq!(err.panic_message(), Some("bug"));
    ///         seen.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .start();
    /// tokio::time::sleep(Duration::from_millis(3500)).await;
    /// assert_eq!(panics.load(Ordering::SeqCst), 3); // and it is still scheduled
    /// # task.cancel();
    /// # }
    /// ```
    pub fn on_error(mut self, hook: impl FnMut(RunError) + Send + 'static) -> Self {
        self.on_error = Some(Box::new(hook));
        self
    }

    /// Starts the schedule on the runtime that hosts the timer's driver and
    /// returns its handle.
    ///
    /// # Panics
    ///
    /// As [`Timer::sleep`]: if the timer has shut down, or if it has a
    /// [`max_pending`](crate::Builder::max_pending) limit and that many sleeps
    /// are already alive (the schedule holds one sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let heartbeat = timer.schedule_every(Duration::from_secs(1), || async {});
    /// // Nothing runs until `start`:
    /// let task = heartbeat.start();
    /// tokio::time::sleep(Duration::from_millis(2500)).await;
    /// assert_eq!(task.runs(), 2); // at 1 s and 2 s
    /// assert!(task.cancel());
    /// # }
    /// ```
    #[track_caller]
    pub fn start(self) -> PeriodicTask {
        let ScheduleEvery {
            timer,
            period,
            initial_delay,
            task,
            on_error,
        } = self;
        let shared = Arc::new(Shared {
            control: Control::new(),
            runs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        });
        let sleep = timer.sleep(initial_delay);
        timer
            .runtime()
            .spawn(run_loop(shared.clone(), sleep, period, task, on_error));
        PeriodicTask { shared, period }
    }
}

/// The schedule: wait, run, report, repeat, until cancelled or shut down.
async fn run_loop<F, Fut>(
    shared: Arc<Shared>,
    mut sleep: Sleep,
    period: Duration,
    mut task: F,
    mut on_error: Option<Hook>,
) where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: RunOutcome,
{
    let control = &shared.control;
    loop {
        tokio::select! {
            biased;
            () = control.cancelled() => return,
            () = &mut sleep => {}
        }
        if control.state() == State::Cancelled {
            return;
        }
        if sleep.timer_is_shut_down() {
            control.cancel();
            return;
        }
        let run = shared.runs.load(Ordering::Relaxed) + 1;
        let outcome = run_once(&mut task, run).await;
        shared.runs.store(run, Ordering::Release);
        if let Err(err) = outcome {
            shared.failures.fetch_add(1, Ordering::AcqRel);
            // The hook is user code, and so is the error's drop (a panic
            // payload or an error type may panic when dropped): neither may
            // end the schedule, nor may the payload of their panic.
            run_contained(|| match on_error.as_mut() {
                Some(hook) => hook(err),
                None => drop(err),
            });
        }
        if control.state() == State::Cancelled {
            return;
        }
        // Fixed delay: the next run is one period after this one ended, on
        // the timer's clock. A period too long for the clock saturates as a
        // sleep's does (never), rather than overflowing into a deadline that
        // has passed, which would run the task back to back.
        if Pin::new(&mut sleep).try_reset_after(period).is_err() {
            // The timer shut down during the run: no run starts again.
            control.cancel();
            return;
        }
    }
}

/// One run, with every panic of user code in it caught and reported as the
/// run's failure: calling the task, polling its future, dropping the future
/// (done or panicked), and turning the output into a result (which drops the
/// output, or calls a custom [`RunOutcome`]).
async fn run_once<F, Fut>(task: &mut F, run: u64) -> Result<(), RunError>
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: RunOutcome,
{
    // Calling the closure may panic too, before there is a future.
    let future = catch_unwind(AssertUnwindSafe(task)).map_err(|p| RunError::panicked(run, p))?;
    let output = CatchUnwind::new(future)
        .await
        .map_err(|p| RunError::panicked(run, p))?;
    match catch_unwind(AssertUnwindSafe(|| output.into_result())) {
        Ok(result) => result.map_err(|e| RunError::failed(run, e)),
        Err(payload) => Err(RunError::panicked(run, payload)),
    }
}

/// A handle to a periodic task started with [`Timer::schedule_every`].
///
/// # Timing
///
/// Fixed delay: the first run begins after the
/// [`initial_delay`](ScheduleEvery::initial_delay) (one period by default),
/// and each later run begins one period after the previous run **ended**
/// (rounded up to the timer's tick, like every deadline on the wheel). Runs
/// never overlap, and a slow run or a stall never causes a burst of catch-up
/// runs; a run that takes longer than the period just pushes the next one
/// back. A zero period is raised to the timer's tick. A period too long for
/// the clock (beyond about 292 years, such as `Duration::MAX`) saturates as a
/// sleep's does: no run is ever followed by another, however far the clock
/// moves (and with the default initial delay of one period, no run comes at
/// all); cancel and shutdown still end the schedule.
///
/// # Failures
///
/// A run that returns `Err` or panics is counted
/// ([`failures`](PeriodicTask::failures)) and reported to the
/// [`on_error`](ScheduleEvery::on_error) hook, and the schedule goes on.
/// That holds wherever the run panics: in the task closure, in its future's
/// `poll`, when the future is dropped (once it is done, or after its own
/// panic), or when its output is dropped (or converted, for a custom
/// [`RunOutcome`]). A panic payload that panics again when dropped is
/// contained too, and so are panics in the hook and in dropping the
/// [`RunError`] (with or without a hook). The one panic nothing can catch is
/// one raised while another unwinds (a local of an `async` block that panics
/// when dropped during the block's own panic): Rust aborts the process then.
///
/// # Cancellation
///
/// [`cancel`](PeriodicTask::cancel) stops the schedule: no run starts after
/// it returns. A run in progress is not interrupted; it finishes (and its
/// failure, if any, is still reported), then the loop ends. Dropping the
/// handle does **not** cancel: the task then runs until the timer shuts down.
///
/// # Shutdown
///
/// When the timer [shuts down](Timer::shutdown) no further run starts (a run
/// in progress finishes) and the task counts as cancelled.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let renew = timer
///     .schedule_every(Duration::from_secs(10), || async { /* renew a lease */ })
///     .start();
/// tokio::time::sleep(Duration::from_secs(35)).await;
/// assert_eq!(renew.runs(), 3);
/// assert!(renew.cancel());
/// tokio::time::sleep(Duration::from_secs(60)).await;
/// assert_eq!(renew.runs(), 3);
/// # }
/// ```
pub struct PeriodicTask {
    shared: Arc<Shared>,
    period: Duration,
}

impl PeriodicTask {
    /// Stops the schedule. Returns `true` if this call stopped it; `false`
    /// if it was already stopped (an earlier `cancel`, or the timer's
    /// shutdown).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule_every(Duration::from_secs(1), || async {}).start();
    /// tokio::time::sleep(Duration::from_millis(1500)).await;
    /// assert!(task.cancel());
    /// assert!(!task.cancel()); // already stopped
    /// tokio::time::sleep(Duration::from_secs(10)).await;
    /// assert_eq!(task.runs(), 1);
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        self.shared.control.cancel()
    }

    /// `true` once the schedule is stopped: by [`cancel`](PeriodicTask::cancel),
    /// or by the timer's shutdown (once the loop has seen it).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule_every(Duration::from_secs(1), || async {}).start();
    /// assert!(!task.is_cancelled());
    /// timer.shutdown();
    /// tokio::time::sleep(Duration::from_millis(1)).await; // the loop sees it
    /// assert!(task.is_cancelled());
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.shared.control.state() == State::Cancelled
    }

    /// How many runs have completed, good or failed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule_every(Duration::from_secs(1), || async {}).start();
    /// assert_eq!(task.runs(), 0);
    /// tokio::time::sleep(Duration::from_millis(3500)).await;
    /// assert_eq!(task.runs(), 3);
    /// # task.cancel();
    /// # }
    /// ```
    pub fn runs(&self) -> u64 {
        self.shared.runs.load(Ordering::Acquire)
    }

    /// How many runs failed (returned `Err` or panicked).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut run = 0;
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), move || {
    ///         run += 1;
    ///         let odd = run % 2 == 1;
    ///         async move { if odd { Err("odd run") } else { Ok(()) } }
    ///     })
    ///     .start();
    /// tokio::time::sleep(Duration::from_millis(4500)).await;
    /// assert_eq!((task.runs(), task.failures()), (4, 2));
    /// # task.cancel();
    /// # }
    /// ```
    pub fn failures(&self) -> u64 {
        self.shared.failures.load(Ordering::Acquire)
    }

    /// The delay between the end of one run and the start of the next.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let task = timer.schedule_every(Duration::from_secs(30), || async {}).start();
    /// assert_eq!(task.period(), Duration::from_secs(30));
    /// # task.cancel();
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }
}

impl fmt::Debug for PeriodicTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodicTask")
            .field("period", &self.period)
            .field("cancelled", &self.is_cancelled())
            .field("runs", &self.runs())
            .field("failures", &self.failures())
            .finish()
    }
}

impl<F> fmt::Debug for ScheduleEvery<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleEvery")
            .field("period", &self.period)
            .field("initial_delay", &self.initial_delay)
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}
