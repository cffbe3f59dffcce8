//! One waker kept per thread for the next registration of the same task.
//!
//! Cloning a task's waker and dropping the clone are two atomic
//! read-modify-writes on the task's reference count, two of the eight a
//! registration and its cancel took. A task that arms a timeout, gets its
//! answer and cancels it usually arms the next one on the same thread: the
//! cancel keeps the waker it took back from the wheel here, and the next
//! registration on the thread that would wake the same task
//! ([`Waker::will_wake`]) takes it instead of cloning its own. A registration
//! for another task clones as before and leaves the kept waker where it is.
//!
//! What it costs: each thread holds at most one waker it no longer needs,
//! until a later cancel on the thread replaces it, a registration takes it,
//! or the thread exits. That keeps the task's allocation alive that long
//! (not its future, which a finished task has dropped). The clone and every
//! drop run outside the timer's locks, as before; a kept waker's drop runs
//! in whichever later cancel replaces it, or in the thread's exit, so a
//! panic in it is contained there (a thread-local's destructor that panics
//! aborts the process) and goes unreported.

use std::cell::Cell;
use std::task::Waker;

use crate::engine::unwind;

thread_local! {
    static SPARE: Kept = const { Kept(Cell::new(None)) };
}

/// The thread's kept waker; at the thread's exit its drop runs with any
/// panic contained.
struct Kept(Cell<Option<Waker>>);

impl Drop for Kept {
    fn drop(&mut self) {
        drop_contained(self.0.take());
    }
}

/// Drops a kept waker, containing a panic of its `Drop`: it runs in a
/// later cancel or in the thread's exit, neither of which asked for it.
#[inline]
fn drop_contained(waker: Option<Waker>) {
    if let Some(waker) = waker {
        unwind::run_contained(move || drop(waker));
    }
}

/// A waker that wakes what `waker` wakes: the thread's kept one if it
/// would, or a clone.
pub(crate) fn clone_of(waker: &Waker) -> Waker {
    let kept = SPARE.try_with(|spare| match spare.0.take() {
        Some(kept) if kept.will_wake(waker) => Some(kept),
        other => {
            spare.0.set(other); // another task's: left for its next registration
            None
        }
    });
    kept.ok().flatten().unwrap_or_else(|| waker.clone())
}

/// Keeps `waker` for the thread's next registration of the same task,
/// dropping the one kept before (or `waker` itself, on a thread that is
/// exiting).
pub(crate) fn keep(waker: Waker) {
    let mut waker = Some(waker);
    let replaced = SPARE.try_with(|spare| spare.0.replace(waker.take()));
    drop_contained(replaced.unwrap_or(None));
    drop_contained(waker);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Task;
    impl Wake for Task {
        fn wake(self: Arc<Self>) {}
    }

    fn task() -> (Arc<Task>, Waker) {
        let task = Arc::new(Task);
        (task.clone(), Waker::from(task))
    }

    #[test]
    fn the_same_task_s_next_registration_takes_the_kept_waker() {
        std::thread::spawn(|| {
            let (task, waker) = task();
            keep(clone_of(&waker));
            assert_eq!(
                Arc::strong_count(&task),
                3,
                "kept: ours, the waker, the kept"
            );
            let taken = clone_of(&waker);
            assert_eq!(Arc::strong_count(&task), 3, "taken, not cloned");
            drop(taken);
            assert_eq!(Arc::strong_count(&task), 2, "nothing kept now");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn another_task_clones_and_leaves_the_kept_waker() {
        std::thread::spawn(|| {
            let (first, first_waker) = task();
            let (second, second_waker) = task();
            keep(first_waker.clone());
            let clone = clone_of(&second_waker);
            assert!(clone.will_wake(&second_waker));
            assert_eq!(Arc::strong_count(&second), 3, "cloned");
            assert_eq!(Arc::strong_count(&first), 3, "still kept");
            keep(clone);
            assert_eq!(Arc::strong_count(&first), 2, "replaced: at most one kept");
            assert_eq!(Arc::strong_count(&second), 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_kept_waker_is_let_go_when_its_thread_exits() {
        let (task, waker) = task();
        std::thread::spawn(move || keep(waker)).join().unwrap();
        assert_eq!(Arc::strong_count(&task), 1);
    }

    #[test]
    fn a_kept_waker_whose_drop_panics_is_contained_where_it_is_dropped() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Bomb;
        impl Wake for Bomb {
            fn wake(self: Arc<Self>) {}
        }
        impl Drop for Bomb {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
                panic!("this waker panics when dropped");
            }
        }
        // Replaced by a later cancel on the thread, and at the thread's
        // exit (where a panic would abort the process).
        std::thread::spawn(|| {
            keep(Waker::from(Arc::new(Bomb)));
            keep(Waker::from(Arc::new(Bomb)));
            assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        })
        .join()
        .unwrap();
        assert_eq!(DROPS.load(Ordering::SeqCst), 2);
    }
}
