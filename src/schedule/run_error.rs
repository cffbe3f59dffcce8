//! [`RunError`]: why one run of a periodic task failed, and [`RunOutcome`],
//! which return types a periodic task may have.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Mutex;

use crate::engine::unwind::Payload as Panic;

/// A boxed error, as a failed run reports it.
pub(crate) type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a periodic task's future may return: `()` (a run never fails unless
/// it panics) or any `Result<T, E>` whose error converts into a boxed error
/// (every `std::error::Error + Send + Sync`, `String`, `&'static str`, and
/// `anyhow::Error` do). An `Err` is reported to the
/// [`on_error`](crate::ScheduleEvery::on_error) hook; the `Ok` value is
/// dropped. A panic in [`into_result`](RunOutcome::into_result) (a custom
/// impl's, or the `Ok` value's drop) counts as a panicking run.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// // Both compile: one returns (), the other a Result.
/// let a = timer.schedule_every(Duration::from_secs(1), || async {}).start();
/// let b = timer
///     .schedule_every(Duration::from_secs(1), || async { Err::<(), _>("no reply") })
///     .start();
/// # a.cancel(); b.cancel();
/// # }
/// ```
pub trait RunOutcome: Send + 'static {
    /// `Ok(())` for a good run, else the error to report.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickwheel::RunOutcome;
    ///
    /// assert!(().into_result().is_ok());
    /// assert!(Ok::<u8, &str>(7).into_result().is_ok());
    /// let err = Err::<(), _>("no reply").into_result().unwrap_err();
    /// assert_eq!(err.to_string(), "no reply");
    /// ```
    fn into_result(self) -> Result<(), Box<dyn StdError + Send + Sync + 'static>>;
}

impl RunOutcome for () {
    fn into_result(self) -> Result<(), BoxError> {
        Ok(())
    }
}

impl<T, E> RunOutcome for Result<T, E>
where
    T: Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    fn into_result(self) -> Result<(), BoxError> {
        self.map(drop).map_err(Into::into)
    }
}

/// Why one run of a periodic task failed: it returned an error, or it
/// panicked. Passed to the [`on_error`](crate::ScheduleEvery::on_error)
/// hook; the schedule goes on either way.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// let timer = tickwheel::Timer::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let task = timer
///     .schedule_every(Duration::from_secs(1), || async { Err::<(), _>("refused") })
///     .on_error(move |err| log.lock().unwrap().push((err.run(), err.to_string())))
///     .start();
/// tokio::time::sleep(Duration::from_millis(2500)).await;
/// task.cancel();
/// assert_eq!(
///     *seen.lock().unwrap(),
///     [(1, "run 1 failed: refused".to_string()), (2, "run 2 failed: refused".to_string())]
/// );
/// # }
/// ```
pub struct RunError {
    run: u64,
    kind: Kind,
}

enum Kind {
    Failed(BoxError),
    /// The message is read out at once; the payload sits in a `Mutex` only
    /// so that `RunError` is `Sync` (a payload is `Send` but not `Sync`),
    /// like every error that converts into `Box<dyn Error + Send + Sync>`.
    Panicked {
        message: Option<String>,
        payload: Mutex<Panic>,
    },
}

impl RunError {
    pub(crate) fn failed(run: u64, error: BoxError) -> Self {
        RunError {
            run,
            kind: Kind::Failed(error),
        }
    }

    pub(crate) fn panicked(run: u64, payload: Panic) -> Self {
        let message = payload
            .downcast_ref::<&'static str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        RunError {
            run,
            kind: Kind::Panicked {
                message,
                payload: Mutex::new(payload),
            },
        }
    }

    /// Which run failed, counting from 1 (every run counts, good or bad).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { Err::<(), _>("no reply") })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// assert_eq!(err.run(), 1);
    /// assert_eq!(errors.recv().await.unwrap().run(), 2);
    /// # task.cancel();
    /// # }
    /// ```
    pub fn run(&self) -> u64 {
        self.run
    }

    /// `true` if the run panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { if true { panic!("bug") } })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// # task.cancel();
    /// assert!(err.is_panic());
    /// assert!(!err.is_failure());
    /// # }
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, Kind::Panicked { .. })
    }

    /// `true` if the run returned an error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { Err::<(), _>("no reply") })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// # task.cancel();
    /// assert!(err.is_failure());
    /// assert!(!err.is_panic());
    /// # }
    /// ```
    pub fn is_failure(&self) -> bool {
        matches!(self.kind, Kind::Failed(_))
    }

    /// The error the run returned, if it returned one. Downcast it with
    /// `downcast_ref` to get the task's own error type back.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { Err::<(), _>(std::io::Error::other("disk full")) })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// # task.cancel();
    /// let io = err.error().unwrap().downcast_ref::<std::io::Error>().unwrap();
    /// assert_eq!(io.to_string(), "disk full");
    /// assert!(err.panic_message().is_none());
    /// # }
    /// ```
    pub fn error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.kind {
            Kind::Failed(err) => Some(&**err),
            Kind::Panicked { .. } => None,
        }
    }

    /// The panic message, if the run panicked with a string message (as
    /// `panic!("..")` does).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { if true { panic!("lost the lease") } })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// # task.cancel();
    /// assert_eq!(err.panic_message(), Some("lost the lease"));
    /// assert!(err.error().is_none());
    /// # }
    /// ```
    pub fn panic_message(&self) -> Option<&str> {
        match &self.kind {
            Kind::Panicked { message, .. } => message.as_deref(),
            Kind::Failed(_) => None,
        }
    }

    /// The panic payload, if the run panicked, for
    /// `std::panic::resume_unwind` or a custom downcast.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let (failed, mut errors) = tokio::sync::mpsc::unbounded_channel();
    /// let task = timer
    ///     .schedule_every(Duration::from_secs(1), || async { if true { std::panic::panic_any(42_u32) } })
    ///     .on_error(move |err| drop(failed.send(err)))
    ///     .start();
    /// let err = errors.recv().await.unwrap();
    /// # task.cancel();
    /// assert_eq!(err.panic_message(), None); // not a string
    /// let payload = err.into_panic().unwrap();
    /// assert_eq!(payload.downcast_ref::<u32>(), Some(&42));
    /// # }
    /// ```
    pub fn into_panic(self) -> Option<Box<dyn std::any::Any + Send + 'static>> {
        match self.kind {
            Kind::Panicked { payload, .. } => {
                Some(payload.into_inner().unwrap_or_else(|e| e.into_inner()))
            }
            Kind::Failed(_) => None,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Failed(err) => write!(f, "run {} failed: {err}", self.run),
            Kind::Panicked { .. } => match self.panic_message() {
                Some(msg) => write!(f, "run {} panicked: {msg}", self.run),
                None => write!(f, "run {} panicked", self.run),
            },
        }
    }
}

impl fmt::Debug for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RunError");
        d.field("run", &self.run);
        match &self.kind {
            Kind::Failed(err) => d.field("error", err),
            Kind::Panicked { message, .. } => d.field("panic", message),
        };
        d.finish()
    }
}

impl StdError for RunError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.kind {
            Kind::Failed(err) => Some(&**err),
            Kind::Panicked { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_and_messages() {
        let failed = RunError::failed(3, "refused".into());
        assert!(failed.is_failure() && !failed.is_panic());
        assert_eq!(failed.to_string(), "run 3 failed: refused");
        assert!(failed.source().is_some());
        assert!(failed.into_panic().is_none());

        let panicked = RunError::panicked(4, Box::new(String::from("boom")));
        assert!(panicked.is_panic() && !panicked.is_failure());
        assert_eq!(panicked.panic_message(), Some("boom"));
        assert_eq!(panicked.to_string(), "run 4 panicked: boom");
        assert!(panicked.error().is_none());

        let opaque = RunError::panicked(5, Box::new(42_u8));
        assert_eq!(opaque.to_string(), "run 5 panicked");
        assert_eq!(opaque.into_panic().unwrap().downcast_ref::<u8>(), Some(&42));

        // Converts into the usual boxed error (needs Send + Sync).
        let boxed: Box<dyn StdError + Send + Sync> = Box::new(panicked);
        assert_eq!(boxed.to_string(), "run 4 panicked: boom");
    }

    #[test]
    fn outcomes_convert() {
        assert!(().into_result().is_ok());
        assert!(Ok::<u8, String>(1).into_result().is_ok());
        let err = Err::<(), _>(std::io::Error::other("x")).into_result();
        assert!(err.unwrap_err().downcast_ref::<std::io::Error>().is_some());
    }
}
