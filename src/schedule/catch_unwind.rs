//! [`CatchUnwind`]: a future wrapper that turns a panic of the future it
//! wraps into an `Err` with the panic payload: a panic in `poll`, and a panic
//! when the future is dropped, which it does itself, under a guard, as soon
//! as the future is done. So one panicking run of a periodic task does not
//! end the schedule, and a scheduled one-shot future is never dropped during
//! an unwind (a second panic there would abort the process). (The `futures`
//! crate has one, which covers `poll` only; tickwheel depends only on
//! `futures-core`.)

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::engine::unwind::{drop_payload, run_contained, Payload};

pin_project! {
    /// Polls `inner`, catching a panic, and drops it once it is done (ready
    /// or panicked), catching a panic there too. Must not be polled again
    /// after it returned `Ready`.
    pub(crate) struct CatchUnwind<F> {
        // `None` once the future is done and dropped.
        #[pin]
        inner: Option<F>,
    }
}

impl<F> CatchUnwind<F> {
    pub(crate) fn new(inner: F) -> Self {
        CatchUnwind { inner: Some(inner) }
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Payload>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.project().inner;
        let inner = slot
            .as_mut()
            .as_pin_mut()
            .expect("CatchUnwind polled after completion");
        // Unwind safety is asserted: after a panic the future is dropped,
        // never polled again, and the run is reported as failed.
        let polled = match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(output)) => Ok(output),
            Err(payload) => Err(payload),
        };
        // Dropped here, not during an unwind. `Pin::set` leaves `None` in
        // place even if the future's drop panics.
        let dropped = catch_unwind(AssertUnwindSafe(|| slot.set(None)));
        Poll::Ready(match (polled, dropped) {
            (polled, Ok(())) => polled,
            // Done, but its drop panicked: the run failed all the same.
            (Ok(output), Err(payload)) => {
                run_contained(|| drop(output));
                Err(payload)
            }
            // The panic in `poll` is the one to report.
            (Err(first), Err(second)) => {
                drop_payload(second);
                Err(first)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Waker;

    #[test]
    fn a_panic_in_poll_becomes_an_error_with_its_payload() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut ok = Box::pin(CatchUnwind::new(async { 7 }));
        assert!(matches!(ok.as_mut().poll(&mut cx), Poll::Ready(Ok(7))));

        let mut bad = Box::pin(CatchUnwind::new(async { panic!("boom") }));
        let Poll::Ready(Err(payload)) = bad.as_mut().poll(&mut cx) else {
            panic!("the panic was not caught");
        };
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    }

    /// Ready at once, or panics in `poll`; panics when dropped, counting
    /// its drops first.
    struct DropBomb<'a> {
        poll_panics: bool,
        drops: &'a AtomicUsize,
    }

    impl Future for DropBomb<'_> {
        type Output = u8;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
            if self.poll_panics {
                panic!("poll");
            }
            Poll::Ready(7)
        }
    }

    impl Drop for DropBomb<'_> {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
            panic!("drop");
        }
    }

    fn poll_once<F: Future>(future: F) -> Poll<Result<F::Output, Payload>> {
        let mut cx = Context::from_waker(Waker::noop());
        Box::pin(CatchUnwind::new(future)).as_mut().poll(&mut cx)
    }

    #[test]
    fn the_future_is_dropped_once_done_and_a_panic_there_is_caught() {
        let drops = AtomicUsize::new(0);
        let done = poll_once(DropBomb {
            poll_panics: false,
            drops: &drops,
        });
        let Poll::Ready(Err(payload)) = done else {
            panic!("the drop's panic was not reported");
        };
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"drop"));

        // Both panic: the one in `poll` is reported.
        let both = poll_once(DropBomb {
            poll_panics: true,
            drops: &drops,
        });
        let Poll::Ready(Err(payload)) = both else {
            panic!("the poll's panic was not reported");
        };
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"poll"));
        assert_eq!(drops.load(Ordering::SeqCst), 2, "each dropped once");
    }
}
