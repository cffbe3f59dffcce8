//! [`Sleep`]: the future that waits on the wheel.
//!
//! A `Sleep` owns at most one wheel entry. It registers lazily on its first
//! poll, updates the entry's waker when a different task polls it, and
//! unregisters in O(1) when dropped; the entry's slot is its own until then,
//! even after it fired (the poll that completes it, or its drop, frees it).
//! All of its state is plain fields (no pinned or self-referential parts),
//! so it is `Unpin`, and it is 24 bytes: its shard, its deadline as
//! nanoseconds from the timer's origin, and the index of its entry's slot.
//!
//! [`sleep_on`] makes one, for every way in (a `Timer` handle, the runtime's
//! default timer, the integrations): the deadline as an [`Until`], and what
//! a refusal does as a [`Refuse`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use crate::engine::clock::Clock;
use crate::engine::shard::{Polled, Shard};
use crate::engine::shared::Shared;
use crate::engine::wheel::{Insert, Key, Reset, MAX_KEY};
use crate::error::{shutdown_panic, Error};

/// `key` values above every real slab key name the other states.
const UNCHECKED: u32 = u32::MAX;
const IN_FUTURE: u32 = u32::MAX - 1;
const DONE: u32 = u32::MAX - 2;
const REFUSED: u32 = u32::MAX - 3;
// Checked when compiling: no key the slab hands out can name a state.
const _: () =
    assert!(MAX_KEY <= REFUSED && REFUSED < DONE && DONE < IN_FUTURE && IN_FUTURE < UNCHECKED);

/// Where a sleep stands, decoded from its `key` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not in the wheel yet: it registers on its first poll, unless its
    /// deadline has passed by then. `checked` means the deadline was seen to
    /// be in the future when it was set (by `sleep(d)`, or a reset), so on a
    /// running clock the first poll need not read the clock again (if the
    /// deadline passed meanwhile, the driver fires it on its next pass). On
    /// a clock seen paused (tokio's test clock) the first poll always reads
    /// it, so a deadline an `advance` passed is `Ready` on that poll, as
    /// tokio's is.
    Unregistered { checked: bool },
    /// In the wheel under this key.
    Registered(Key),
    /// Completed; polls return `Ready` until a `reset`.
    Done,
    /// Completed without waiting, and tokio's budget refused it once (the
    /// poll returned `Pending` and woke the task): the next poll returns
    /// `Ready` whatever the budget.
    Refused,
}

/// A future that completes once its deadline has passed, created by
/// [`Timer::sleep`](crate::Timer::sleep) or
/// [`Timer::sleep_until`](crate::Timer::sleep_until).
///
/// It mirrors [`tokio::time::Sleep`]: [`deadline`](Sleep::deadline),
/// [`is_elapsed`](Sleep::is_elapsed) and [`reset`](Sleep::reset) take the
/// same arguments. Unlike tokio's, it is [`Unpin`], so it can live in a
/// struct field and be polled through `&mut` without pinning.
///
/// # Precision
///
/// A sleep never completes before its deadline (by
/// `tokio::time::Instant::now()`), except when its timer shuts down. It
/// completes when the driver processes the first tick boundary at or after the
/// deadline: at most one tick late, plus however long the runtime takes to
/// run the driver and then the waiting task.
///
/// # Cancel safety
///
/// A `Sleep` is cancel safe: dropping it before it completes cancels the
/// timer, removes its wheel entry in O(1) and makes the entry's memory
/// reusable at once (it does not wait for the bucket to come round); nothing
/// else is lost. Polling `&mut sleep` in a `tokio::select!` loop and
/// dropping that borrow leaves the sleep registered with the same deadline.
///
/// # Executors
///
/// Only the timer's driver needs tokio. A `Sleep` can be awaited on any
/// executor (another runtime, `futures::executor::block_on`, ...), as long as
/// the runtime hosting the driver is running.
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
/// let start = Instant::now();
/// timer.sleep(Duration::from_millis(100)).await;
/// assert!(start.elapsed() >= Duration::from_millis(100));
/// # }
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    shard: Arc<Shard>,
    /// Nanoseconds from the timer's origin (negative: before it was built).
    deadline: i64,
    /// Its entry's slab index while registered (a timer's keys carry no
    /// generation: the slot is this sleep's until it frees it), else one of
    /// the state constants above.
    key: u32,
}

/// A new sleep on `shard`, the calling thread's shard of its timer.
#[track_caller]
#[inline(always)]
pub(crate) fn sleep_on(shard: Arc<Shard>, until: Until, refuse: Refuse) -> Result<Sleep, Error> {
    let shared = &shard.shared;
    if shared.is_shutdown() {
        return match refuse {
            Refuse::Error => Err(Error::shutdown()),
            Refuse::Panic => shutdown_panic(),
        };
    }
    shared.try_reserve()?;
    let clock = &shared.clock;
    match until {
        Until::After(duration) => {
            let deadline = shared.deadline_after(duration);
            if duration.is_zero() {
                return Ok(Sleep::done(shard, deadline));
            }
            Ok(Sleep::new(shard, deadline, true))
        }
        Until::At(instant) => {
            let deadline = clock.offset(instant);
            Ok(Sleep::new(shard, deadline, false))
        }
    }
}

/// How a new sleep's deadline is given.
#[derive(Clone, Copy)]
pub(crate) enum Until {
    After(Duration),
    At(Instant),
}

/// What to do when a new sleep cannot be made.
#[derive(Clone, Copy)]
pub(crate) enum Refuse {
    Panic,
    Error,
}

impl Sleep {
    /// A sleep until `deadline` (an offset), registering on its first poll;
    /// `checked` as in [`State::Unregistered`].
    #[inline]
    pub(crate) fn new(shard: Arc<Shard>, deadline: i64, checked: bool) -> Self {
        let mut sleep = Sleep {
            shard,
            deadline,
            key: UNCHECKED,
        };
        sleep.set_state(State::Unregistered { checked });
        sleep
    }

    /// A sleep that is already complete (a zero duration).
    #[inline]
    pub(crate) fn done(shard: Arc<Shard>, deadline: i64) -> Self {
        let mut sleep = Sleep::new(shard, deadline, true);
        sleep.set_state(State::Done);
        sleep
    }

    fn state(&self) -> State {
        match self.key {
            UNCHECKED => State::Unregistered { checked: false },
            IN_FUTURE => State::Unregistered { checked: true },
            DONE => State::Done,
            REFUSED => State::Refused,
            index => State::Registered(Key {
                index,
                generation: 0,
            }),
        }
    }

    fn set_state(&mut self, state: State) {
        self.key = match state {
            State::Unregistered { checked: false } => UNCHECKED,
            State::Unregistered { checked: true } => IN_FUTURE,
            State::Done => DONE,
            State::Refused => REFUSED,
            State::Registered(key) => {
                debug_assert!(key.index < MAX_KEY && key.generation == 0);
                key.index
            }
        };
    }

    fn clock(&self) -> &Clock {
        &self.shard.shared.clock
    }

    /// The instant at which this sleep completes.
    ///
    /// Deadlines more than about 292 years away saturate to that horizon.
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
    /// let at = Instant::now() + Duration::from_secs(3);
    /// assert_eq!(timer.sleep_until(at).deadline(), at);
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.clock().instant_at(self.deadline)
    }

    /// `true` once the sleep has completed: its deadline was reached by the
    /// wheel (or its timer shut down). A sleep that was never polled reports
    /// `false`, as in tokio, unless it was created complete (a zero duration,
    /// or a timer already shut down).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut sleep = timer.sleep(Duration::from_millis(20));
    /// assert!(!sleep.is_elapsed());
    /// (&mut sleep).await;
    /// assert!(sleep.is_elapsed());
    /// # }
    /// ```
    pub fn is_elapsed(&self) -> bool {
        match self.state() {
            State::Done | State::Refused => true,
            State::Registered(key) => !self.shard.is_live(key),
            State::Unregistered { .. } => false,
        }
    }

    /// Moves the deadline to `deadline`, as [`tokio::time::Sleep::reset`] does.
    ///
    /// A registered sleep keeps its wheel entry and its waker: the task that
    /// last polled it is woken at the new deadline even if it does not poll
    /// again first. A deadline that has already passed completes the sleep
    /// (and wakes that task); a poll after the reset returns `Ready`. On a
    /// running clock, a registered sleep's reset reads no clock, as tokio's
    /// does not: if the driver has already processed the deadline's tick the
    /// sleep completes at once, and otherwise the next poll checks the clock
    /// (and without a poll the driver wakes the task on its next pass). A
    /// completed sleep can be reset to run again.
    ///
    /// `Sleep` is `Unpin`, so a sleep held by value can be reset with
    /// `Pin::new(&mut sleep).reset(..)`.
    ///
    /// # Panics
    ///
    /// If the timer has shut down: a new wait on a dead timer would complete
    /// at once, and a loop of them would spin. (`tokio::time` panics likewise
    /// when its runtime is gone.) [`try_reset`](Sleep::try_reset) returns an
    /// error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut sleep = timer.sleep(Duration::from_secs(60));
    /// let start = Instant::now();
    /// Pin::new(&mut sleep).reset(start + Duration::from_millis(30));
    /// sleep.await;
    /// assert!(start.elapsed() < Duration::from_secs(1));
    /// # }
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        if self.try_reset(deadline).is_err() {
            crate::error::shutdown_panic();
        }
    }

    /// [`reset`](Sleep::reset) that returns an error instead of panicking
    /// when the timer has shut down.
    ///
    /// # Errors
    ///
    /// [`Error::is_shutdown`] if the timer has shut down; the sleep is then
    /// left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = tickwheel::Timer::new();
    /// let mut sleep = timer.sleep(Duration::from_secs(1));
    /// timer.shutdown();
    /// let again = Instant::now() + Duration::from_secs(1);
    /// assert!(Pin::new(&mut sleep).try_reset(again).unwrap_err().is_shutdown());
    /// # }
    /// ```
    pub fn try_reset(self: Pin<&mut Self>, deadline: Instant) -> Result<(), Error> {
        let shared = &self.shard.shared;
        let offset = shared.clock.offset(deadline);
        // A registered sleep on a clock that runs reads no clock here, as
        // tokio's reset does not: a deadline in a tick the driver has
        // processed completes it now; otherwise its entry is marked, and the
        // next poll reads the clock and completes it if the deadline has
        // passed (without a poll, the driver fires it on its next pass). A
        // paused clock is read here, so that after `advance` a passed
        // deadline completes at once even if the driver had nothing to wake
        // up for; so is an unregistered sleep's, which has no entry to mark.
        let now = (shared.clock_paused() || !matches!(self.state(), State::Registered(_)))
            .then(|| shared.now_offset());
        self.try_reset_offset(offset, now)
    }

    /// [`try_reset`](Sleep::try_reset) to `duration` from now on the timer's
    /// clock, saturating as [`Timer::sleep`](crate::Timer::sleep) does: a
    /// duration too long for the clock (such as `Duration::MAX`) never
    /// completes, however far the clock moves, where an `Instant` sum would
    /// overflow.
    pub(crate) fn try_reset_after(self: Pin<&mut Self>, duration: Duration) -> Result<(), Error> {
        let shared = &self.shard.shared;
        // One clock read serves both the deadline and the passed check.
        let now = shared.now();
        let offset = shared.clock.offset_after(now, duration);
        let now = shared.clock.offset(now);
        self.try_reset_offset(offset, Some(now))
    }

    /// [`try_reset`](Sleep::try_reset) to a deadline given as an offset from
    /// the timer's origin, `now` being the clock's offset if it was read (it
    /// must be for an unregistered sleep); without it, the wheel decides
    /// from the ticks it has processed, and the next poll reads the clock. (A
    /// caller that knows the deadline is ahead may pass `Some(i64::MIN)`: if
    /// it has passed after all, the wheel fires it on its next pass.)
    pub(crate) fn try_reset_offset(
        self: Pin<&mut Self>,
        new: i64,
        now: Option<i64>,
    ) -> Result<(), Error> {
        let this = self.get_mut();
        if this.shard.shared.is_shutdown() {
            return Err(Error::shutdown());
        }
        let passed = now.is_some_and(|now| this.shard.shared.clock.passed(new, now));
        this.deadline = new;
        let State::Registered(key) = this.state() else {
            this.set_state(if passed {
                State::Done
            } else {
                State::Unregistered { checked: true }
            });
            return Ok(());
        };
        if passed {
            this.set_state(State::Done);
            if let Some(waker) = this.shard.cancel(key) {
                waker.wake();
            }
            return Ok(());
        }
        match this.shard.reset(key, Clock::wheel_ns(new), now.is_none()) {
            Reset::Moved { .. } | Reset::InPlace => {}
            Reset::Stale => this.set_state(State::Unregistered { checked: true }),
            Reset::Elapsed(waker) => {
                this.set_state(State::Done);
                waker.wake();
            }
        }
        Ok(())
    }

    /// `true` if this sleep was cut short by its timer shutting down (the
    /// timer is shut down and the deadline has not been reached).
    pub(crate) fn ended_by_shutdown(&self) -> bool {
        let shared = &self.shard.shared;
        shared.is_shutdown() && !shared.clock.passed(self.deadline, shared.now_offset())
    }

    /// The state this sleep's timer shares with its driver: the clock and the
    /// shutdown flag.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shard.shared
    }

    /// The current time on this sleep's timer's clock.
    pub(crate) fn clock_now(&self) -> Instant {
        self.shard.shared.now()
    }

    /// `true` once this sleep's timer has shut down.
    pub(crate) fn timer_is_shut_down(&self) -> bool {
        self.shard.shared.is_shutdown()
    }

    /// The poll itself: `Ready(true)` if the sleep completes whatever
    /// tokio's budget (it just fired after waiting in the wheel, or the
    /// budget refused it once), `Ready(false)` if it completed without
    /// waiting (a passed deadline, or already complete).
    fn poll_state(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        match self.state() {
            State::Done => Poll::Ready(false),
            State::Refused => {
                self.set_state(State::Done);
                Poll::Ready(true)
            }
            State::Unregistered { checked } => self.register(checked, cx.waker()).map(|()| false),
            State::Registered(key) => {
                let shared = &self.shard.shared;
                let deadline = self.deadline;
                let passed = || shared.clock.passed(deadline, shared.now_offset());
                match self.shard.poll_registered(key, cx.waker(), passed) {
                    Polled::Pending => Poll::Pending,
                    Polled::Fired => {
                        self.set_state(State::Done);
                        Poll::Ready(true)
                    }
                    Polled::Passed => {
                        self.set_state(State::Done);
                        Poll::Ready(false)
                    }
                }
            }
        }
    }

    /// Polls without consulting tokio's task budget, for a future racing
    /// this sleep against one that spent the budget (see `Timeout`).
    pub(crate) fn poll_unbudgeted(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_state(cx).map(drop)
    }

    fn register(&mut self, checked: bool, waker: &Waker) -> Poll<()> {
        let shared = &self.shard.shared;
        if (!checked || shared.clock_paused())
            && shared.clock.passed(self.deadline, shared.now_offset())
        {
            self.set_state(State::Done);
            return Poll::Ready(());
        }
        match self.shard.register(Clock::wheel_ns(self.deadline), waker) {
            Insert::Registered { key, .. } => {
                self.set_state(State::Registered(key));
                Poll::Pending
            }
            Insert::Done => {
                self.set_state(State::Done);
                Poll::Ready(())
            }
            Insert::NoKeys => {
                panic!("tickwheel: a timer shard holds {MAX_KEY} timers, the most it can address")
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    /// # Panics
    ///
    /// Only if one shard of the timer already holds about a billion
    /// registered timers (some 36 GB of entries).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let free = std::task::ready!(this.poll_state(cx));
        if !free {
            // Completing without waiting takes a unit of tokio's cooperative
            // budget, as with `tokio::time::Sleep`: a loop of sleeps that
            // complete at once (zero durations, passed deadlines) yields to
            // the scheduler instead of starving it.
            //
            // But the budget refuses a sleep once at most: the poll after
            // the yield returns `Ready` whatever the budget. A future racing
            // the sleep (a `select!` arm that spends the budget on every
            // poll, hyper's I/O) spends it again before every poll of the
            // sleep, and must not keep it from ever completing; a sleep
            // polled after its deadline (a task late on a busy host, an
            // interval's missed tick) would otherwise never complete there.
            // A sleep that fired after waiting completes whatever the budget
            // too: it cannot fire again before time passes, so it can starve
            // nothing. Pending polls, the hot path, never touch the budget.
            match tokio::task::coop::poll_proceed(cx) {
                Poll::Ready(progress) => progress.made_progress(),
                Poll::Pending => {
                    this.set_state(State::Refused);
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(())
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        // The capacity unit first: dropping the waker below runs executor
        // code, and if that panics the unit must not leak.
        self.shard.shared.release();
        if let State::Registered(key) = self.state() {
            // The lock is taken even if the entry fired (a sleep that fired
            // and was never polled again): its slot is this sleep's to free.
            // The returned waker (if any) is kept, after the lock, for this
            // thread's next registration of the same task.
            if let Some(waker) = self.shard.cancel(key) {
                crate::engine::spare::keep(waker);
            }
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("state", &self.state())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_is_small_send_sync_and_unpin() {
        fn assert_traits<T: Send + Sync + Unpin + 'static>() {}
        assert_traits::<Sleep>();
        assert_eq!(std::mem::size_of::<Sleep>(), 24);
    }

    #[test]
    fn state_round_trips_through_the_key_field() {
        let shared = Arc::new(crate::engine::shared::Shared::new(
            Clock::new(Instant::now(), 1_000_000),
            crate::engine::clock::TimeSource::System,
            None,
        ));
        let shard = Arc::new(Shard::new(
            crate::engine::wheel::TimerWheel::new(8, 1_000_000),
            shared,
        ));
        let mut s = Sleep::new(shard, 5, false);
        for state in [
            State::Unregistered { checked: false },
            State::Unregistered { checked: true },
            State::Done,
            State::Refused,
            State::Registered(Key {
                index: 7,
                generation: 0,
            }),
            // The lowest and highest keys a timer's slab hands out (with no
            // generation).
            State::Registered(Key {
                index: MAX_KEY - 1,
                generation: 0,
            }),
            State::Registered(Key {
                index: 0,
                generation: 0,
            }),
        ] {
            s.set_state(state);
            assert_eq!(s.state(), state);
        }
        s.set_state(State::Done); // so drop does not try to cancel key 7
    }

    /// `try_reset_after` moves the deadline to `duration` from the timer's
    /// now, and saturates instead of overflowing.
    #[test]
    fn a_reset_after_a_duration_moves_the_deadline_from_now() {
        crate::engine::wheel::watchdog::block_on_paused(reset_after_from_now());
    }

    async fn reset_after_from_now() {
        let timer = crate::Timer::new();
        let mut sleep = timer.sleep(Duration::ZERO);
        assert!(sleep.is_elapsed());
        let now = Instant::now();
        Pin::new(&mut sleep)
            .try_reset_after(Duration::from_millis(40))
            .unwrap();
        assert_eq!(sleep.deadline(), now + Duration::from_millis(40));
        assert!(!sleep.is_elapsed(), "waiting again");
        assert!(futures::poll!(&mut sleep).is_pending());
        Pin::new(&mut sleep).try_reset_after(Duration::MAX).unwrap();
        assert!(sleep.deadline() > now + Duration::from_secs(86_400 * 365 * 200));
        assert!(futures::poll!(&mut sleep).is_pending());
        timer.shutdown();
        let err = Pin::new(&mut sleep).try_reset_after(Duration::ZERO);
        assert!(err.unwrap_err().is_shutdown());
    }

    #[test]
    fn debug_shows_the_deadline_and_the_state() {
        crate::engine::wheel::watchdog::block_on_paused(debug_output());
    }

    async fn debug_output() {
        let timer = crate::Timer::new();
        let at = Instant::now() + Duration::from_secs(3);
        let mut sleep = timer.sleep_until(at);
        assert_eq!(
            format!("{sleep:?}"),
            format!("Sleep {{ deadline: {at:?}, state: Unregistered {{ checked: false }} }}")
        );
        assert!(futures::poll!(&mut sleep).is_pending());
        assert!(format!("{sleep:?}").contains("state: Registered(Key { index: 0,"));
        // Completed by a reset to the present, so this test never waits on
        // the driver.
        std::pin::Pin::new(&mut sleep).reset(Instant::now());
        assert!(format!("{sleep:?}").ends_with("state: Done }"));
    }
}
