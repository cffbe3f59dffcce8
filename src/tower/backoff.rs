//! tower's retry backoff traits (`tower::retry::backoff::{MakeBackoff,
//! Backoff}`) for the crate's [`retry::Backoff`](crate::retry::Backoff)
//! settings, waiting on the wheel.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::retry::backoff::{Backoff as TowerBackoff, MakeBackoff};

use crate::ambient;
use crate::retry::{Backoff, Delays};
use crate::sleep::{Sleep, Until};
use crate::timer::Timer;

/// `tower::retry`'s backoff maker for [`retry::Backoff`](Backoff) settings,
/// waiting on the default timer of the runtime each wait starts in.
/// [`BackoffMaker`] waits on a given timer instead. (Feature `tower`.)
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickwheel::retry::Backoff;
/// use tower::retry::backoff::MakeBackoff;
///
/// let mut maker = Backoff::exponential(Duration::from_millis(100));
/// let backoff = maker.make_backoff(); // a tickwheel::tower::WheelBackoff
/// # let _ = backoff;
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
impl MakeBackoff for Backoff {
    type Backoff = WheelBackoff;

    fn make_backoff(&mut self) -> WheelBackoff {
        WheelBackoff::new(*self)
    }
}

/// Makes [`WheelBackoff`]s of some [`retry::Backoff`](Backoff) settings on a
/// given timer (or the runtime's default one): tower's `MakeBackoff`.
/// (Feature `tower`.)
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::retry::Backoff;
/// use tickwheel::tower::BackoffMaker;
/// use tower::retry::backoff::{Backoff as _, MakeBackoff};
///
/// let timer = tickwheel::Timer::new();
/// let mut maker = BackoffMaker::with_timer(Backoff::constant(Duration::from_millis(50)), timer.clone());
/// maker.make_backoff().next_backoff().await;
/// assert_eq!(timer.stats().fired, 1);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BackoffMaker {
    settings: Backoff,
    timer: Option<Timer>,
}

impl BackoffMaker {
    /// Backoffs of `settings` on the default timer of the runtime each wait
    /// starts in.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::BackoffMaker;
    /// use tokio::time::Instant;
    /// use tower::retry::backoff::{Backoff as _, MakeBackoff};
    ///
    /// let mut maker = BackoffMaker::new(Backoff::constant(Duration::from_millis(50)));
    /// let start = Instant::now();
    /// maker.make_backoff().next_backoff().await;
    /// assert_eq!(start.elapsed(), Duration::from_millis(50));
    /// # }
    /// ```
    pub fn new(settings: Backoff) -> Self {
        BackoffMaker {
            settings,
            timer: None,
        }
    }

    /// Backoffs of `settings` on `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::BackoffMaker;
    /// use tower::retry::backoff::{Backoff as _, MakeBackoff};
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut maker = BackoffMaker::with_timer(Backoff::constant(Duration::from_millis(50)), timer.clone());
    /// let wait = maker.make_backoff().next_backoff();
    /// assert!(wait.is_on_wheel());
    /// wait.await;
    /// assert_eq!(timer.stats().fired, 1); // on `timer`'s wheel
    /// # }
    /// ```
    pub fn with_timer(settings: Backoff, timer: Timer) -> Self {
        BackoffMaker {
            settings,
            timer: Some(timer),
        }
    }
}

impl MakeBackoff for BackoffMaker {
    type Backoff = WheelBackoff;

    fn make_backoff(&mut self) -> WheelBackoff {
        WheelBackoff {
            delays: self.settings.into_iter(),
            last: None,
            settings: self.settings,
            timer: self.timer.clone(),
        }
    }
}

/// One backoff session of [`retry::Backoff`](Backoff) settings: tower's
/// `Backoff`, whose waits are sleeps on the wheel. (Feature `tower`.)
///
/// A tower retry `Policy` holds one and returns
/// [`next_backoff`](TowerBackoff::next_backoff) (or
/// [`try_next_backoff`](WheelBackoff::try_next_backoff)) from its `retry`
/// method. As tower's contract asks, a clone starts a fresh session (tower
/// clones the policy for every request).
///
/// - [`try_next_backoff`](WheelBackoff::try_next_backoff) waits for the
///   settings' next delay, and returns `None` once they are used up
///   (`max_attempts`, `max_total_delay`): a policy can stop there, so the
///   settings bound the retries.
/// - [`next_backoff`](TowerBackoff::next_backoff) never ends, as tower's
///   backoffs do (the policy decides when to stop): past the settings'
///   delays it waits the last delay again (the initial one if there was
///   none).
///
/// Each wait is a sleep on the timer: the given one, or the default timer
/// of the runtime the wait starts in. If the timer refuses it (at its
/// [`max_pending`](crate::Builder::max_pending) limit, or shut down), the
/// wait falls back to `tokio::time`, as the `hyper` integration does: a
/// retry inside tower's middleware still waits out its delay, and never
/// panics or spins.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::retry::Backoff;
/// use tickwheel::tower::WheelBackoff;
/// use tokio::time::Instant;
///
/// let mut backoff = WheelBackoff::new(Backoff::exponential(Duration::from_millis(100)).max_attempts(3));
/// let start = Instant::now();
/// backoff.try_next_backoff().unwrap().await;
/// backoff.try_next_backoff().unwrap().await;
/// assert!(backoff.try_next_backoff().is_none(), "3 attempts: 2 waits");
/// assert_eq!(start.elapsed(), Duration::from_millis(300));
/// # }
/// ```
#[derive(Debug)]
pub struct WheelBackoff {
    settings: Backoff,
    delays: Delays,
    /// The last delay waited, repeated once the settings' run has ended.
    last: Option<Duration>,
    timer: Option<Timer>,
}

impl WheelBackoff {
    /// A session of `settings` on the default timer of the runtime each wait
    /// starts in.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::WheelBackoff;
    /// use tokio::time::Instant;
    /// use tower::retry::backoff::Backoff as _;
    ///
    /// let mut backoff = WheelBackoff::new(Backoff::exponential(Duration::from_millis(10)));
    /// let start = Instant::now();
    /// backoff.next_backoff().await;
    /// backoff.next_backoff().await;
    /// assert_eq!(start.elapsed(), Duration::from_millis(30)); // 10 ms, then 20 ms
    /// # }
    /// ```
    pub fn new(settings: Backoff) -> Self {
        BackoffMaker::new(settings).make_backoff()
    }

    /// A session of `settings` on `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::WheelBackoff;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut backoff = WheelBackoff::with_timer(Backoff::constant(Duration::from_millis(10)), timer.clone());
    /// backoff.try_next_backoff().unwrap().await;
    /// assert_eq!(timer.stats().fired, 1);
    /// # }
    /// ```
    pub fn with_timer(settings: Backoff, timer: Timer) -> Self {
        BackoffMaker::with_timer(settings, timer).make_backoff()
    }

    /// The next wait of the settings' run, or `None` once it has ended.
    ///
    /// # Panics
    ///
    /// Without a timer of its own, outside a tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::WheelBackoff;
    ///
    /// let settings = Backoff::constant(Duration::from_millis(10)).max_attempts(3);
    /// let mut backoff = WheelBackoff::new(settings);
    /// let mut waits = 0;
    /// while let Some(wait) = backoff.try_next_backoff() {
    ///     wait.await;
    ///     waits += 1;
    /// }
    /// assert_eq!(waits, 2); // 3 attempts: 2 waits between them
    /// # }
    /// ```
    #[track_caller]
    pub fn try_next_backoff(&mut self) -> Option<BackoffSleep> {
        let delay = self.delays.next()?;
        self.last = Some(delay);
        Some(self.wait(delay))
    }

    #[track_caller]
    fn wait(&self, delay: Duration) -> BackoffSleep {
        let until = Until::After(delay);
        let sleep = ambient::try_sleep_on(self.timer.as_ref(), until);
        BackoffSleep {
            inner: match sleep {
                Ok(sleep) => Wait::Wheel(sleep),
                Err(_) => Wait::Tokio(Box::pin(tokio::time::sleep(delay))),
            },
        }
    }
}

/// A fresh session of the same settings on the same timer.
impl Clone for WheelBackoff {
    fn clone(&self) -> Self {
        BackoffMaker {
            settings: self.settings,
            timer: self.timer.clone(),
        }
        .make_backoff()
    }
}

impl TowerBackoff for WheelBackoff {
    type Future = BackoffSleep;

    /// # Panics
    ///
    /// Without a timer of its own, outside a tokio runtime.
    #[track_caller]
    fn next_backoff(&mut self) -> BackoffSleep {
        match self.try_next_backoff() {
            Some(wait) => wait,
            None => self.wait(self.last.unwrap_or(self.settings.initial())),
        }
    }
}

/// One wait of a [`WheelBackoff`]: a [`Sleep`] on the wheel, or, if the
/// timer refused it, a `tokio::time` sleep. (Feature `tower`.)
///
/// # Cancel safety
///
/// A `BackoffSleep` is cancel safe: dropping it before it completes cancels
/// the wait and frees its wheel entry (or its `tokio::time` sleep), and
/// nothing else is lost. The [`WheelBackoff`] has already moved on to its next
/// delay when it handed this wait out: dropping the wait does not give the
/// delay back.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tickwheel::retry::Backoff;
/// use tickwheel::tower::{BackoffSleep, WheelBackoff};
///
/// let timer = tickwheel::Timer::new();
/// let mut backoff = WheelBackoff::with_timer(Backoff::constant(Duration::from_secs(1)), timer.clone());
/// let wait: BackoffSleep = backoff.try_next_backoff().unwrap();
/// assert_eq!(timer.stats().live, 1);
/// drop(wait); // cancelled: its wheel entry is freed
/// assert_eq!(timer.stats().live, 0);
/// # }
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct BackoffSleep {
    inner: Wait,
}

#[derive(Debug)]
enum Wait {
    Wheel(Sleep),
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

impl BackoffSleep {
    /// `true` if this wait is on the wheel (not the `tokio::time` fallback).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tickwheel::retry::Backoff;
    /// use tickwheel::tower::WheelBackoff;
    ///
    /// let timer = tickwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let _held = timer.sleep(Duration::from_secs(60)); // the one allowed
    /// let mut backoff = WheelBackoff::with_timer(Backoff::constant(Duration::from_millis(10)), timer);
    /// let wait = backoff.try_next_backoff().unwrap();
    /// assert!(!wait.is_on_wheel()); // refused by the wheel: on tokio::time instead
    /// wait.await; // still waits out its delay
    /// # }
    /// ```
    pub fn is_on_wheel(&self) -> bool {
        matches!(self.inner, Wait::Wheel(_))
    }
}

impl Future for BackoffSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.inner {
            Wait::Wheel(sleep) => Pin::new(sleep).poll(cx),
            Wait::Tokio(sleep) => sleep.as_mut().poll(cx),
        }
    }
}
