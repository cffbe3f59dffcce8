//! Process-wide settings a `compare` child applies before it builds anything:
//! the tick of the tickwheel timers it makes ([`new_timer`]) and which of
//! tokio's timer implementations its 2-worker runtimes use
//! ([`two_workers`]). Unset, both are the defaults, which is what the
//! criterion bench always gets.
//!
//! [`new_timer`]: crate::new_timer
//! [`two_workers`]: crate::two_workers

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

static TICK: OnceLock<Duration> = OnceLock::new();
static ALT_TIMER: AtomicBool = AtomicBool::new(false);

/// Whether this build can run tokio's alternative timer: tokio offers
/// `runtime::Builder::enable_alt_timer` only when compiled with
/// `--cfg tokio_unstable`.
pub const ALT_TIMER_BUILT: bool = cfg!(tokio_unstable);

/// Makes every timer [`new_timer`](crate::new_timer) builds from now on use
/// `tick` instead of tickwheel's default.
///
/// # Errors
///
/// If the tick was set already (once per process, before any timer).
pub fn set_tick(tick: Duration) -> Result<(), String> {
    TICK.set(tick)
        .map_err(|_| "the tick is set once per process".to_string())
}

/// The tick set by [`set_tick`], if any.
pub fn tick() -> Option<Duration> {
    TICK.get().copied()
}

/// Makes every runtime [`two_workers`](crate::two_workers) builds from now on
/// use tokio's alternative timer.
///
/// # Errors
///
/// If this build has no alternative timer (built without
/// `--cfg tokio_unstable`, see [`ALT_TIMER_BUILT`]).
pub fn use_alt_timer() -> Result<(), String> {
    if ALT_TIMER_BUILT {
        ALT_TIMER.store(true, Ordering::Relaxed);
        Ok(())
    } else {
        Err(
            "tokio's alternative timer needs a build with RUSTFLAGS=\"--cfg tokio_unstable\""
                .into(),
        )
    }
}

/// Whether [`use_alt_timer`] was called.
pub fn alt_timer() -> bool {
    ALT_TIMER.load(Ordering::Relaxed)
}
