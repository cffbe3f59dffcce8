//! [`CatchUnwind`]: a future wrapper that turns a panic inside `poll` into an
//! `Err` with the panic payload, so one panicking run of a periodic task does
//! not end the schedule. (The `futures` crate has one; tickwheel depends only
//! on `futures-core`, and this is ten lines.)

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

/// A panic payload, as `std::panic::catch_unwind` returns it.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

pin_project! {
    /// Polls `inner`, catching a panic. Must not be polled again after it
    /// returned `Ready` (the periodic loop never does).
    pub(crate) struct CatchUnwind<F> {
        #[pin]
        inner: F,
    }
}

impl<F> CatchUnwind<F> {
    pub(crate) fn new(inner: F) -> Self {
        CatchUnwind { inner }
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.project().inner;
        // Unwind safety is asserted: after a panic the future is dropped,
        // never polled again, and the run is reported as failed.
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
