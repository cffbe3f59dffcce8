//! Which tokio runtime the current thread is running in, cheaply.
//!
//! Two hot paths ask it: a clock read on a timer whose clock may be paused
//! (is the ambient clock the timer's own?), and the ambient timer's lookup
//! (`tickwheel::time::sleep` finds the current runtime's default timer).
//! Asking tokio (`Handle::try_current`) clones the runtime's handle, two
//! atomic operations each time. But a task is always polled inside its own
//! runtime's context, so the answer for the task being polled never changes:
//! a small per-thread table remembers it by task id (tokio hands task ids out
//! from a process-wide counter), and only a task seen for the first time, or
//! code outside any task, asks tokio.
//!
//! The one case the table can get wrong is a task that enters another
//! runtime's context in the middle of a poll: a `spawn_blocking` closure
//! that runs a second runtime's `block_on`, or a `LocalSet` driven by one
//! runtime and later by another. The table keeps the runtime it saw first.
//! Then a clock read may take the ambient clock for the timer's (they
//! differ only if one of them is a paused test clock), and the
//! default-timer lookup may hand out the first runtime's timer while it
//! lives (its sleeps fire on that runtime's clock); once that timer has
//! shut down, the lookup refuses it and asks tokio.

use std::cell::Cell;
use std::hash::{Hash, Hasher};

use tokio::runtime::{self, Handle};
use tokio::task;

/// The id of the runtime whose context the current thread is in, or `None`
/// outside any runtime.
pub(crate) fn current_runtime() -> Option<runtime::Id> {
    const SLOTS: usize = 16;
    type Table = [Cell<Option<(task::Id, runtime::Id)>>; SLOTS];
    thread_local! {
        static SEEN: Table = const { [const { Cell::new(None) }; SLOTS] };
    }
    let Some(task) = task::try_id() else {
        return ask_tokio();
    };
    let slot = task_slot(task) % SLOTS;
    SEEN.try_with(|seen| match seen[slot].get() {
        Some((seen_task, runtime)) if seen_task == task => Some(runtime),
        _ => {
            let runtime = ask_tokio();
            seen[slot].set(runtime.map(|runtime| (task, runtime)));
            runtime
        }
    })
    .unwrap_or_else(|_| ask_tokio())
}

/// The exact answer, at the price of a handle clone.
pub(crate) fn ask_tokio() -> Option<runtime::Id> {
    Handle::try_current().ok().map(|handle| handle.id())
}

/// A table slot for `task`: its id's own bits (ids count up, so consecutive
/// tasks get consecutive slots).
fn task_slot(task: task::Id) -> usize {
    struct Bits(u64);
    impl Hasher for Bits {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = self.0.rotate_left(8) ^ u64::from(b);
            }
        }
        fn write_u64(&mut self, n: u64) {
            self.0 ^= n;
        }
    }
    let mut bits = Bits(0);
    task.hash(&mut bits);
    bits.finish() as usize
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
            assert_eq!(in_task, (Some(id), Some(id)), "first and cached lookups");
        }
        assert_ne!(a.handle().id(), b.handle().id());
        assert_eq!(current_runtime(), None);
    }
}
