//! The synchronisation primitives that futures and the driver share, in one
//! place so the loom models (`src/engine/loom_tests.rs`, built with
//! `RUSTFLAGS="--cfg tickwheel_loom"`) can swap in loom's checked versions.
//!
//! Only state that crosses between a `Sleep` and the driver, or between the
//! driver's hook and its task, goes through here: the shard locks, the
//! driver's wake-up target and shutdown flag, the capacity budget, the signal
//! that wakes a parked driver, and the hook's doorbell. Under loom the
//! signal is a permit flag the models can read; otherwise it is tokio's
//! `Notify`, whose `notify_one` also stores a permit when nobody waits.

#[cfg(not(tickwheel_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(tickwheel_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(tickwheel_loom))]
pub(crate) use tokio::sync::Notify as Signal;

#[cfg(tickwheel_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(tickwheel_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// The driver's wake-up signal under loom: a permit, as `Notify` keeps one.
#[cfg(tickwheel_loom)]
#[derive(Debug)]
pub(crate) struct Signal {
    permit: AtomicBool,
}

#[cfg(tickwheel_loom)]
impl Signal {
    pub(crate) fn new() -> Self {
        Signal {
            permit: AtomicBool::new(false),
        }
    }

    pub(crate) fn notify_one(&self) {
        self.permit.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Consumes the permit; `true` if there was one.
    pub(crate) fn take_permit(&self) -> bool {
        self.permit.swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once a permit is taken (the driver's wait; the models never
    /// run the driver task, but it must compile).
    pub(crate) async fn notified(&self) {
        std::future::poll_fn(|cx| {
            if self.take_permit() {
                std::task::Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
    }
}
