//! The publishing task: samples a timer's stats every period until the
//! timer shuts down, then takes a final sample, even when its runtime drops
//! it first.
//!
//! The final sample must count the timers the shutdown cancelled, so it is
//! taken once the timer's shutdown has drained every shard
//! ([`Inner::drained`]). A running task waits for that beside its next
//! period. A task dropped first (its runtime's shutdown drops every task in
//! an order of its own, the driver's among them, whose exit guard shuts
//! the timer down) leaves a [`FinalSample`] behind, which waits for the
//! drain as a waker of its own: the engine knows nothing of it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use tokio::time::Instant;

use super::handle::MetricsTask;
use super::publisher::Publisher;
use crate::engine::state::Inner;
use crate::engine::unwind::run_contained;
use crate::stats::Stats;
use crate::timer::Timer;

/// Spawns the task that [`Publisher::spawn`] describes, with its handle.
pub(super) fn spawn(publisher: Publisher, timer: &Timer, period: Duration) -> MetricsTask {
    let period = if period.is_zero() {
        timer.tick()
    } else {
        period
    };
    let state = Arc::new(TaskState::default());
    let publishing = Publishing {
        inner: timer.inner().clone(),
        publisher: Some(publisher),
        state: state.clone(),
    };
    let task = timer.runtime().spawn(publish(publishing, period));
    MetricsTask::new(task, state, period)
}

/// What a publishing task and its [`MetricsTask`] share.
#[derive(Debug, Default)]
pub(super) struct TaskState {
    pub(super) samples: AtomicU64,
    /// Set by the handle when it stops the task (dropped or cancelled):
    /// the task then owes no final sample.
    pub(super) stopped: AtomicBool,
}

/// The publishing task's state, which owes a final sample until it has
/// taken one. The task takes it itself when it sees the timer's shutdown
/// drained; when the task is dropped first (its runtime shutting down drops
/// every task without polling it again; or it never ran), `Drop` takes it:
/// at once if the timer is drained, else through a [`FinalSample`]. It
/// counts the timers the shutdown cancelled either way.
struct Publishing {
    inner: Arc<Inner>,
    /// `None` once the final sample is taken, or while a sample is being
    /// recorded (so a recorder that panics leaves nothing owed).
    publisher: Option<Publisher>,
    state: Arc<TaskState>,
}

impl Publishing {
    /// Records a sample; the last one if `last`.
    fn sample(&mut self, last: bool) {
        if let Some(mut publisher) = self.publisher.take() {
            publisher.record(&Stats::of(&self.inner));
            self.state.samples.fetch_add(1, Ordering::Release);
            if !last {
                self.publisher = Some(publisher);
            }
        }
    }
}

impl Drop for Publishing {
    fn drop(&mut self) {
        let Some(publisher) = self.publisher.take() else {
            return;
        };
        if self.state.stopped.load(Ordering::Acquire) {
            return;
        }
        FinalSample::wait(publisher, self.inner.clone(), self.state.clone());
    }
}

/// The final sample of a publishing task dropped before it took it: it
/// waits for the timer's drain ([`Inner::drained`]) as a waker, and the
/// shutdown that drains the timer wakes it on its own thread, where it
/// records the sample (a recorder's panic contained: that thread may be
/// the driver's exit guard in a runtime's shutdown).
///
/// While it waits, nothing but the drain's waiter list holds it: the waker
/// registered there owns it, and it owns the future that holds the waiter
/// (a cycle the wake breaks). A shutdown that never comes (a runtime
/// leaked, never dropped) leaves it waiting, as it leaves the runtime's
/// tasks.
struct FinalSample {
    /// `None` once taken (or skipped: the handle stopped the task).
    waiting: Mutex<Option<Waiting>>,
    state: Arc<TaskState>,
}

/// What a [`FinalSample`] holds until it is taken.
struct Waiting {
    drained: Pin<Box<dyn Future<Output = ()> + Send>>,
    publisher: Publisher,
    inner: Arc<Inner>,
}

impl FinalSample {
    /// Takes the final sample once `inner`'s timer is drained: at once if it
    /// is.
    fn wait(publisher: Publisher, inner: Arc<Inner>, state: Arc<TaskState>) {
        let waiting = Waiting {
            drained: Box::pin(inner.drained()),
            publisher,
            inner,
        };
        let sample = Arc::new(FinalSample {
            waiting: Mutex::new(Some(waiting)),
            state,
        });
        sample.poll();
    }

    /// Polls the drain with this sample as its waker; once it is ready,
    /// records the sample, unless the handle has stopped the task meanwhile.
    fn poll(self: &Arc<Self>) {
        // Held while polling only: no user code runs under it.
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(owed) = waiting.as_mut() else {
            return;
        };
        let waker = Waker::from(self.clone());
        if owed
            .drained
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
        {
            return;
        }
        let Some(Waiting {
            mut publisher,
            inner,
            ..
        }) = waiting.take()
        else {
            return;
        };
        drop(waiting);
        if self.state.stopped.load(Ordering::Acquire) {
            return;
        }
        run_contained(|| {
            publisher.record(&Stats::of(&inner));
            self.state.samples.fetch_add(1, Ordering::Release);
        });
    }
}

impl Wake for FinalSample {
    fn wake(self: Arc<Self>) {
        self.poll();
    }
}

/// The publishing task: sample, wait for the next period or the timer's
/// drained shutdown, repeat; after the shutdown, one final sample (and if
/// the task is dropped first, `Publishing`'s `Drop` sees to it).
async fn publish(mut publishing: Publishing, period: Duration) {
    let drained = publishing.inner.drained();
    tokio::pin!(drained);
    let mut next = Some(Instant::now());
    loop {
        publishing.sample(false);
        let now = Instant::now();
        next = next.and_then(|at| at.checked_add(period)).map(|at| {
            if at > now {
                at
            } else {
                // Late: no catch-up burst.
                now.checked_add(period).unwrap_or(at)
            }
        });
        // A period too long for the clock: only the shutdown is left.
        let wait = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = &mut drained => {
                publishing.sample(true);
                return;
            }
            () = wait => {}
        }
    }
}

#[cfg(all(test, not(tickwheel_loom)))]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use ::metrics::{
        Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use tokio_test::{assert_pending, task};

    use super::{publish, Publishing, TaskState};
    use crate::engine::wheel::watchdog::block_on_paused;
    use crate::metrics::Publisher;
    use crate::Timer;

    const HOUR: Duration = Duration::from_secs(3600);

    /// Counters' totals by name (gauges and histograms go nowhere).
    #[derive(Clone, Default)]
    struct Counters(Arc<Mutex<BTreeMap<String, u64>>>);

    struct Cell(Counters, String);

    impl CounterFn for Cell {
        fn increment(&self, n: u64) {
            *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += n;
        }
        fn absolute(&self, n: u64) {
            self.0 .0.lock().unwrap().insert(self.1.clone(), n);
        }
    }

    impl Counters {
        fn cancelled(&self) -> u64 {
            let counters = self.0.lock().unwrap();
            counters
                .get("tickwheel_cancelled_total")
                .copied()
                .unwrap_or(0)
        }
    }

    impl Recorder for Counters {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(Arc::new(Cell(self.clone(), key.name().to_owned())))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// When the handle stops the task, if it does.
    #[derive(Clone, Copy, PartialEq)]
    enum Stop {
        Never,
        BeforeTheRuntimeDropsIt,
        AfterTheRuntimeDroppedIt,
    }

    /// Three hour-long sleeps pending on `timer`, and a publishing task
    /// polled once (waiting for its first period).
    fn three_sleeps_and_a_task(
        timer: &Timer,
    ) -> (
        Vec<task::Spawn<crate::sleep::Sleep>>,
        Arc<TaskState>,
        task::Spawn<impl std::future::Future<Output = ()>>,
    ) {
        let mut sleeps: Vec<_> = (0..3).map(|_| task::spawn(timer.sleep(HOUR))).collect();
        for sleep in &mut sleeps {
            assert_pending!(sleep.poll());
        }
        let state = Arc::new(TaskState::default());
        let publishing = Publishing {
            inner: timer.inner().clone(),
            publisher: Some(Publisher::new()),
            state: state.clone(),
        };
        let mut task = task::spawn(publish(publishing, HOUR));
        assert_pending!(task.poll());
        (sleeps, state, task)
    }

    /// A publishing task, polled once (its first sample), with 3 registered
    /// sleeps on its timer, is dropped while the driver still runs (as a
    /// shutting-down runtime may drop it before the driver); then the timer
    /// shuts down. Returns the samples taken before the shutdown and after
    /// it, and the cancellations recorded after it.
    fn drop_the_task_before_the_driver(stop: Stop) -> (u64, u64, u64) {
        let counters = Counters::default();
        ::metrics::with_local_recorder(&counters, || {
            block_on_paused(async {
                let timer = Timer::new();
                let (_sleeps, state, task) = three_sleeps_and_a_task(&timer);
                let handle_stops = || state.stopped.store(true, Ordering::Release);
                if stop == Stop::BeforeTheRuntimeDropsIt {
                    handle_stops();
                }
                drop(task);
                if stop == Stop::AfterTheRuntimeDroppedIt {
                    handle_stops();
                }
                let before = state.samples.load(Ordering::Acquire);
                assert_eq!(counters.cancelled(), 0, "recorded before the drain");
                assert_eq!(timer.shutdown(), 3);
                let after = state.samples.load(Ordering::Acquire);
                (before, after, counters.cancelled())
            })
        })
    }

    /// Dropped before the driver, the task leaves its final sample to the
    /// shutdown, which takes it once every shard is drained: it counts the
    /// 3 sleeps the shutdown cancelled.
    #[test]
    fn a_task_dropped_before_the_shutdown_leaves_its_final_sample_to_it() {
        assert_eq!(drop_the_task_before_the_driver(Stop::Never), (1, 2, 3));
    }

    /// A task its handle stopped owes no final sample, whether the handle
    /// stopped it before the runtime dropped it or between that and the
    /// shutdown.
    #[test]
    fn a_task_its_handle_stopped_takes_no_final_sample() {
        for stop in [
            Stop::BeforeTheRuntimeDropsIt,
            Stop::AfterTheRuntimeDroppedIt,
        ] {
            assert_eq!(drop_the_task_before_the_driver(stop), (1, 1, 0));
        }
    }

    /// Panics on every counter once armed (gauges and histograms go
    /// nowhere).
    #[derive(Clone, Default)]
    struct Armed(Arc<AtomicBool>);

    impl Recorder for Armed {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            assert!(!self.0.load(Ordering::SeqCst), "the recorder panics");
            Counter::noop()
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// A recorder that panics in the final sample the shutdown wakes (the
    /// task dropped before the driver) has its panic contained: the
    /// shutdown returns, every sleep is woken, and the sample is not
    /// counted.
    #[test]
    fn a_recorder_that_panics_in_the_final_sample_leaves_the_shutdown_whole() {
        let recorder = Armed::default();
        ::metrics::with_local_recorder(&recorder, || {
            block_on_paused(async {
                let timer = Timer::new();
                let (sleeps, state, task) = three_sleeps_and_a_task(&timer);
                drop(task);
                recorder.0.store(true, Ordering::SeqCst);
                assert_eq!(timer.shutdown(), 3);
                for sleep in &sleeps {
                    assert!(sleep.is_woken(), "the shutdown woke every sleep");
                }
                assert_eq!(state.samples.load(Ordering::Acquire), 1);
            })
        });
    }
}
