//! Which tokio runtime's context the current thread is in.
//!
//! Two paths ask it: a clock read on a timer whose clock may be paused (is
//! the ambient clock the timer's own?), and the ambient timer's lookup
//! (`tickwheel::time::sleep` finds the current runtime's default timer).
//! Both need the runtime whose context is current *at the call*, as tokio
//! itself uses for `tokio::time::sleep`.
//!
//! The answer is tokio's own, asked every time: `Handle::try_current`,
//! which clones the runtime's handle (two atomic operations on its
//! reference count, and a thread-local read). Nothing cheaper is exact. In
//! particular the id of the task being polled does not say which runtime
//! it is in: a task that drives another runtime inside `block_in_place`
//! (`block_in_place(|| b.block_on(..))`) keeps its task id while runtime
//! `b`'s context is current, and a `LocalSet` task keeps its id when the
//! set is driven first by one runtime and later by another. A per-thread
//! table by task id would hand out the first runtime's timer and clock in
//! both cases, so a sleep made there would fire on a runtime nobody drives.

use tokio::runtime::{self, Handle};

/// The id of the runtime whose context the current thread is in, or `None`
/// outside any runtime.
pub(crate) fn current_runtime() -> Option<runtime::Id> {
    Handle::try_current().ok().map(|handle| handle.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn outside_a_runtime_there_is_none() {
        assert_eq!(current_runtime(), None);
    }

    /// In a task, in `block_on` (no task) and after the runtime is left, the
    /// answer is tokio's own, even for tasks of two runtimes on one thread.
    #[test]
    fn tasks_and_block_on_see_their_own_runtime() {
        let (a, b) = (runtime(), runtime());
        for rt in [&a, &b, &a] {
            let id = rt.handle().id();
            assert_eq!(rt.block_on(async { current_runtime() }), Some(id));
            let in_task = rt.block_on(async {
                tokio::spawn(async { (current_runtime(), current_runtime()) })
                    .await
                    .unwrap()
            });
            assert_eq!(in_task, (Some(id), Some(id)), "first and later lookups");
        }
        assert_ne!(a.handle().id(), b.handle().id());
        assert_eq!(current_runtime(), None);
    }

    /// A task that enters another runtime's context in the middle of a poll
    /// is in that runtime until it leaves, and back in its own after.
    #[test]
    fn a_task_that_enters_another_runtime_is_in_it() {
        let (a, b) = (runtime(), runtime());
        let (a_id, b_id) = (a.handle().id(), b.handle().id());
        let b = b.handle().clone();
        let seen = a.block_on(async {
            tokio::spawn(async move {
                let before = current_runtime();
                let inside = {
                    let _b = b.enter();
                    current_runtime()
                };
                (before, inside, current_runtime())
            })
            .await
            .unwrap()
        });
        assert_eq!(seen, (Some(a_id), Some(b_id), Some(a_id)));
    }
}
