//! [`WheelLock`]: the lock around each shard's wheel, released with a plain
//! store instead of a read-modify-write.
//!
//! Every registration and every cancel takes its shard's lock once, almost
//! always uncontended (threads are spread over the shards round-robin, so
//! each usually has one of its own unless there are more threads than
//! shards; the driver's pass, and rarely the statistics and a shutdown, are
//! the other parties). `std::sync::Mutex` pays two
//! atomic read-modify-writes for that, a compare-and-swap to take it and a
//! swap to release it (the swap tells it whether a waiter sleeps on the
//! futex). This lock pays one: it is taken with a compare-and-swap and
//! released with a `Release` store, which is an ordinary `mov` on x86. For
//! a timeout armed and cancelled before its tick that is two of its six
//! read-modify-writes gone; W1, W2 and W7 measure what that saves
//! (BENCHMARKS.md, "An unlocking store (fourth stop)").
//!
//! The price is the contended case: a releasing store cannot tell whether
//! anyone waits, so nobody sleeps on the lock to be woken. A thread that
//! finds it taken spins briefly, then yields its core a few times, then
//! sleeps in steps that double from 10 µs up to 1 ms, looking again after
//! each ([`Backoff`]). Holders never run user code (wakers are cloned
//! before, and woken and dropped after, the lock: `shard.rs`), so a hold is
//! one wheel operation: microseconds, except when a pass moves a far lap of
//! many entries into the ring or a shutdown drains a wheel. A registration
//! that meets one of those waits for it to end plus the backoff step it is
//! in (up to 1 ms, and the operating system's timer slack), where a futex
//! waiter would have been woken at once; the lock is not fair, so another
//! thread may take it first, and the wait goes on. A waiter never spins
//! longer than the spin and yield phases: after them it sleeps between
//! looks.
//!
//! It does not poison (the shard ignored `std`'s poisoning before): a panic
//! under it releases it in the guard's drop. No user code runs under it,
//! so the only panics there are the wheel's own `debug_assert!`s, which
//! find an internal bug and may leave that wheel inconsistent (in debug
//! builds only: release builds have no such panics).
//!
//! Under `--cfg tickwheel_loom` the flag and the cell are loom's, and a
//! waiter yields to loom's scheduler, so every loom model that takes a
//! shard's lock checks this lock too; `loom_wheel_lock_*` check it alone.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;

use crate::engine::sync::AtomicBool;

#[cfg(not(tickwheel_loom))]
use std::cell::UnsafeCell;

#[cfg(tickwheel_loom)]
use loom::cell::{MutPtr, UnsafeCell};

/// A mutual-exclusion lock whose release is a store (see the module docs).
pub(crate) struct WheelLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one guard at a time (the
// `locked` flag, taken by compare-and-swap), so sharing a `WheelLock` between
// threads moves `T` between threads but never shares it: `T: Send` is what
// that needs, as for `std::sync::Mutex`.
unsafe impl<T: Send> Sync for WheelLock<T> {}
// SAFETY: as above; sending the lock sends its `T`.
unsafe impl<T: Send> Send for WheelLock<T> {}

// A panic under the lock leaves `T` as the panicking code left it and the
// lock released; the wheel keeps its invariants between method calls (see
// the module docs), which is what `std`'s mutex, unwind safe by poisoning,
// gave the shard, which ignored the poison.
impl<T> std::panic::RefUnwindSafe for WheelLock<T> {}
impl<T> std::panic::UnwindSafe for WheelLock<T> {}

impl<T> WheelLock<T> {
    pub(crate) fn new(value: T) -> Self {
        WheelLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, waiting for it if another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> WheelGuard<'_, T> {
        if !self.try_take() {
            self.lock_contended();
        }
        // The only guard made, once the flag is taken.
        WheelGuard {
            lock: self,
            _access: PhantomData,
            #[cfg(tickwheel_loom)]
            ptr: Some(self.value.get_mut()),
        }
    }

    #[inline]
    fn try_take(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut backoff = Backoff::default();
        loop {
            backoff.wait();
            // Read before trying, so waiters do not keep the line exclusive.
            if !self.locked.load(Ordering::Relaxed) && self.try_take() {
                return;
            }
        }
    }
}

/// Access to a [`WheelLock`]'s value; releases the lock when dropped.
pub(crate) struct WheelGuard<'a, T> {
    lock: &'a WheelLock<T>,
    /// The guard hands out `&T` through `&self`: sharing it between threads
    /// must need `T: Sync`, as `&mut T` does (the reference to the lock
    /// alone would only need `T: Send`, like `std`'s guard's marker).
    _access: PhantomData<&'a mut T>,
    /// loom's record of the access, ended before the flag is released.
    #[cfg(tickwheel_loom)]
    ptr: Option<MutPtr<T>>,
}

#[cfg(tickwheel_loom)]
impl<T> WheelGuard<'_, T> {
    fn loom_ptr(&self) -> &MutPtr<T> {
        self.ptr
            .as_ref()
            .expect("the access ends only in the guard's drop")
    }
}

impl<T> Deref for WheelGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        #[cfg(not(tickwheel_loom))]
        // SAFETY: this guard exists only while its thread holds the flag
        // (taken with `Acquire` in `lock`, released with `Release` in the
        // guard's drop), so every reference to `value` comes through this
        // guard, and a `&mut T` only through `deref_mut`'s `&mut self`,
        // which excludes this `&self`; the returned reference borrows the
        // guard, so it ends before the drop.
        unsafe {
            &*self.lock.value.get()
        }
        #[cfg(tickwheel_loom)]
        // SAFETY: as above; loom's `MutPtr` also checks it.
        unsafe {
            self.loom_ptr().deref()
        }
    }
}

impl<T> DerefMut for WheelGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(not(tickwheel_loom))]
        // SAFETY: as in `deref`, and `&mut self` makes this the guard's only
        // borrow, so the `&mut T` is unique.
        unsafe {
            &mut *self.lock.value.get()
        }
        #[cfg(tickwheel_loom)]
        // SAFETY: as above; loom's `MutPtr` also checks it.
        unsafe {
            self.loom_ptr().deref()
        }
    }
}

impl<T> Drop for WheelGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(tickwheel_loom)]
        drop(self.ptr.take());
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// How a thread that found the lock taken waits before it looks again:
/// spins, then yields, then sleeps in doubling steps (see the module docs).
#[derive(Debug, Default)]
struct Backoff {
    step: u32,
}

#[cfg(not(tickwheel_loom))]
impl Backoff {
    const SPINS: u32 = 64;
    const YIELDS: u32 = 16;
    const FIRST_SLEEP_US: u64 = 10;
    const LONGEST_SLEEP_US: u64 = 1_000;

    /// The `n`-th sleep's length, in microseconds.
    fn sleep_us(n: u32) -> u64 {
        (Self::FIRST_SLEEP_US << n.min(16)).min(Self::LONGEST_SLEEP_US)
    }

    fn wait(&mut self) {
        let step = self.step;
        self.step = step.saturating_add(1);
        if step < Self::SPINS {
            std::hint::spin_loop();
        } else if step < Self::SPINS + Self::YIELDS {
            std::thread::yield_now();
        } else {
            let us = Self::sleep_us(step - Self::SPINS - Self::YIELDS);
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
    }
}

#[cfg(tickwheel_loom)]
impl Backoff {
    /// Under loom, every wait is a yield to its scheduler.
    fn wait(&mut self) {
        self.step = self.step.saturating_add(1);
        loom::thread::yield_now();
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use super::*;
    use crate::engine::wheel::watchdog::Watchdog;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_lock_is_send_and_sync_for_a_send_value_and_unwind_safe() {
        fn assert_traits<T: Send + Sync + std::panic::RefUnwindSafe>() {}
        assert_traits::<WheelLock<std::cell::Cell<u64>>>();
        assert_traits::<WheelLock<Vec<std::task::Waker>>>();
        // The guard shares `&T`, so it is `Sync` only for a `Sync` value.
        fn assert_sync<T: Sync>() {}
        assert_sync::<WheelGuard<'static, Vec<std::task::Waker>>>();
    }

    /// A guard of a value that is `Send` but not `Sync` (a `Cell`) is not
    /// `Sync`: sharing it would share the `Cell`. Checked when compiling,
    /// the way `static_assertions::assert_not_impl_any!` does it: if the
    /// guard were `Sync`, both blanket impls would apply and the call below
    /// would be ambiguous.
    #[test]
    fn a_guard_of_a_value_that_is_not_sync_is_not_sync() {
        trait AmbiguousIfSync<A> {
            fn some_item() {}
        }
        impl<T: ?Sized> AmbiguousIfSync<()> for T {}
        struct Invalid;
        impl<T: ?Sized + Sync> AmbiguousIfSync<Invalid> for T {}
        <WheelGuard<'static, std::cell::Cell<u64>> as AmbiguousIfSync<_>>::some_item();
    }

    /// Threads adding to a plain (non-atomic) counter under the lock lose
    /// no update: each add reads and writes it in two steps, so two holders
    /// at once would lose some. More threads than cores, so holders are
    /// preempted and waiters reach the yield and sleep phases.
    #[test]
    fn contended_holders_exclude_each_other() {
        const THREADS: u64 = 4;
        const ADDS: u64 = 20_000;
        let _watchdog = Watchdog::start();
        let lock = Arc::new(WheelLock::new(0u64));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for i in 0..ADDS {
                        let mut guard = lock.lock();
                        let count = *guard;
                        if i % 1_000 == 0 {
                            std::thread::yield_now(); // a holder preempted
                        }
                        *guard = count + 1;
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(*lock.lock(), THREADS * ADDS);
    }

    /// A waiter that reached the sleeping phase (the holder keeps the lock
    /// for 50 ms, far past the spins and yields) still gets the lock once it
    /// is released, and sees what the holder wrote.
    #[test]
    fn a_waiter_past_the_spins_gets_the_lock_after_a_long_hold() {
        let _watchdog = Watchdog::start();
        let lock = Arc::new(WheelLock::new(0u32));
        let mut guard = lock.lock();
        let (started, waiting) = mpsc::channel();
        let waiter = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                started.send(()).unwrap();
                *lock.lock()
            })
        };
        waiting.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        *guard = 7;
        drop(guard);
        assert_eq!(waiter.join().unwrap(), 7);
    }

    /// A panic while the lock is held releases it (no poisoning): the next
    /// `lock` succeeds and sees the value as the panicking code left it.
    #[test]
    fn a_panic_under_the_lock_releases_it() {
        let _watchdog = Watchdog::start();
        let lock = WheelLock::new(1u32);
        let caught = std::panic::catch_unwind(|| {
            let mut guard = lock.lock();
            *guard = 2;
            panic!("under the lock");
        });
        assert!(caught.is_err());
        assert_eq!(*lock.lock(), 2);
    }

    #[test]
    fn the_backoff_sleeps_double_up_to_a_millisecond() {
        let steps: Vec<u64> = (0..10).map(Backoff::sleep_us).collect();
        assert_eq!(steps, [10, 20, 40, 80, 160, 320, 640, 1_000, 1_000, 1_000]);
        assert_eq!(Backoff::sleep_us(u32::MAX), 1_000);
    }
}
