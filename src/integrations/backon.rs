//! `backon::Sleeper` for [`Timer`]: backon's retry loops wait on the wheel.

use std::time::Duration;

use crate::sleep::Sleep;
use crate::timer::Timer;

/// Lets [backon] sleep between retries on this timer's wheel instead
/// of `tokio::time`: pass a clone of the timer to `Retry::sleep`. (Feature
/// `backon`.)
///
/// Each backoff delay becomes a [`Timer::sleep`], so it rounds up to the next
/// tick, and a retry waiting out its backoff ends that wait at once if the
/// timer shuts down.
///
/// # Panics
///
/// As [`Timer::sleep`]: when backon starts a wait on a timer that has shut
/// down (a retry loop whose waits completed at once would spin through its
/// attempts), and if the timer has a
/// [`max_pending`](crate::Builder::max_pending) limit and that many sleeps are
/// alive when the retry starts its wait. [`Timer::retry`] ends with the last
/// error instead.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use backon::{ConstantBuilder, Retryable};
/// use tokio::time::Instant;
///
/// let timer = tickwheel::Timer::new();
/// let start = Instant::now();
/// let mut calls = 0;
/// let reply = (|| {
///     calls += 1;
///     let attempt = calls;
///     async move { if attempt < 3 { Err("busy") } else { Ok("done") } }
/// })
/// .retry(ConstantBuilder::default().with_delay(Duration::from_millis(100)))
/// .sleep(timer.clone())
/// .await;
/// assert_eq!(reply, Ok("done"));
/// // Two waits of 100 ms, both on the wheel.
/// assert!(start.elapsed() >= Duration::from_millis(200));
/// assert_eq!(timer.stats().registered, 2);
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "backon")))]
impl ::backon::Sleeper for Timer {
    type Sleep = Sleep;

    fn sleep(&self, dur: Duration) -> Sleep {
        Timer::sleep(self, dur)
    }
}
