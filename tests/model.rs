//! Model-based tests: random sequences of create, poll, reset, drop, clock
//! advances and shutdown, run against a reference model of what each sleep
//! must do.
//!
//! After every step, and for every sleep, the test checks:
//! - never early: a sleep is woken or completes only once the clock has
//!   reached its deadline (or the timer shut down);
//! - at most one tick late: once the clock has passed the first tick boundary
//!   at or after the deadline, a waiting sleep has been woken;
//! - exactly once: a waiting sleep is woken at most once, through the waker
//!   of its latest poll, and its next poll completes;
//! - a dropped sleep is never woken;
//! - `pending()` and `stats()` agree with the model (every registration ends
//!   fired, cancelled, or still pending).
//!
//! Deadlines include zero, the past, exact tick boundaries, many revolutions
//! ahead (through the overflow level of a small wheel), `Duration::MAX` and
//! instants a century away. Set `PROPTEST_CASES` for a longer run.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{poll_with, CountingWaker};
use proptest::prelude::*;
use tickwheel::{Sleep, Timer};
use tokio::time::Instant;

/// How a new sleep gets its deadline, relative to the clock at creation.
#[derive(Debug, Clone)]
enum Deadline {
    /// `sleep(d)`.
    After(Duration),
    /// `sleep_until(now + d)`.
    Until(Duration),
    /// `sleep_until(now - d)`: already passed.
    Past(Duration),
    /// `sleep_until` the `k`-th tick boundary from now.
    OnBoundary(u32),
    /// `sleep(Duration::MAX)`.
    Max,
    /// `sleep_until(now + 100 years)`.
    Century,
}

#[derive(Debug, Clone)]
enum Op {
    Create(Deadline),
    Poll(usize),
    Reset(usize, Deadline),
    Drop(usize),
    Advance(Duration),
    Shutdown,
}

/// A duration that covers sub-tick, tick, revolution and multi-revolution
/// distances for wheels of 1-10 ms ticks and 8-16 slots.
fn distance() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        (1u64..20_000_000).prop_map(Duration::from_nanos),
        (1u64..400).prop_map(Duration::from_millis),
        (400u64..5_000).prop_map(Duration::from_millis),
        // Into the overflow's map on the 1 ms wheels (their arrays of 64 laps
        // reach 0.5-1 s), and through the array and its slides on the 10 ms
        // ones (5.1-10.2 s).
        (5_000u64..60_000).prop_map(Duration::from_millis),
    ]
}

fn deadline() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        4 => distance().prop_map(Deadline::After),
        4 => distance().prop_map(Deadline::Until),
        1 => distance().prop_map(Deadline::Past),
        2 => (0u32..40).prop_map(Deadline::OnBoundary),
        1 => Just(Deadline::Max),
        1 => Just(Deadline::Century),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => deadline().prop_map(Op::Create),
        6 => (0usize..12).prop_map(Op::Poll),
        2 => ((0usize..12), deadline()).prop_map(|(i, d)| Op::Reset(i, d)),
        2 => (0usize..12).prop_map(Op::Drop),
        6 => distance().prop_map(Op::Advance),
        1 => Just(Op::Shutdown),
    ]
}

/// What the model knows about one sleep.
enum State {
    /// Not registered: never polled (or reset after it completed). `checked`
    /// as the crate's own state: `sleep(d)` was created in the future.
    Fresh,
    /// Registered by a pending poll. `start` is the total of wakes when it
    /// started waiting, `latest` the waker of its latest poll.
    Waiting {
        start: usize,
        latest: Arc<CountingWaker>,
    },
    Done,
    /// Dropped; `wakes` is the total it had then (it must never grow).
    Dropped {
        wakes: usize,
    },
}

struct ModelSleep {
    sleep: Option<Sleep>,
    deadline: Instant,
    state: State,
    /// Every waker ever given to this sleep.
    wakers: Vec<Arc<CountingWaker>>,
}

impl ModelSleep {
    fn wakes(&self) -> usize {
        self.wakers.iter().map(|w| w.wakes()).sum()
    }

    /// A waiting sleep that has been woken: its entry left the wheel.
    fn fired(&self) -> bool {
        match &self.state {
            State::Waiting { start, .. } => self.wakes() > *start,
            _ => false,
        }
    }
}

/// The reference counts the timer's statistics must match. (Fired follows:
/// registered = fired + cancelled + pending.)
#[derive(Default, Debug)]
struct Counts {
    registered: u64,
    cancelled: u64,
}

struct Model {
    timer: Timer,
    origin: Instant,
    tick: Duration,
    sleeps: Vec<ModelSleep>,
    shut_down: bool,
    counts: Counts,
}

impl Model {
    fn instant(&self, deadline: &Deadline, now: Instant) -> Instant {
        let far = |d: Duration| {
            now.checked_add(d)
                .unwrap_or(now + Duration::from_secs(1 << 40))
        };
        match deadline {
            Deadline::After(d) | Deadline::Until(d) => far(*d),
            Deadline::Past(d) => now.checked_sub(*d).unwrap_or(now),
            Deadline::OnBoundary(k) => {
                let since = (now - self.origin).as_nanos();
                let tick = self.tick.as_nanos();
                let next = since.div_ceil(tick) + u128::from(*k);
                self.origin + Duration::from_nanos((next * tick) as u64)
            }
            Deadline::Max => far(Duration::MAX),
            Deadline::Century => far(Duration::from_secs(100 * 365 * 24 * 3600)),
        }
    }

    /// The first tick boundary at or after `deadline`, or `None` if it is
    /// too far to reach in a test.
    fn boundary(&self, deadline: Instant) -> Option<Instant> {
        let since = deadline.saturating_duration_since(self.origin).as_nanos();
        let tick = self.tick.as_nanos();
        let nanos = u64::try_from(since.div_ceil(tick) * tick).ok()?;
        self.origin.checked_add(Duration::from_nanos(nanos))
    }

    fn create(&mut self, deadline: &Deadline) {
        let now = Instant::now();
        if self.shut_down {
            // A new wait on a shut-down timer is refused (the plain forms
            // panic): nothing to add to the model.
            let refused = match deadline {
                Deadline::After(d) => self.timer.try_sleep(*d).err(),
                other => self.timer.try_sleep_until(self.instant(other, now)).err(),
            };
            assert!(
                refused.is_some_and(|e| e.is_shutdown()),
                "a sleep after shutdown"
            );
            return;
        }
        let (sleep, at) = match deadline {
            Deadline::After(d) => {
                let sleep = self.timer.sleep(*d);
                let at = sleep.deadline();
                assert!(at >= now, "sleep({d:?}) has a deadline in the past");
                (sleep, at)
            }
            Deadline::Max => {
                let sleep = self.timer.sleep(Duration::MAX);
                let at = sleep.deadline();
                (sleep, at)
            }
            other => {
                let at = self.instant(other, now);
                (self.timer.sleep_until(at), at)
            }
        };
        self.sleeps.push(ModelSleep {
            sleep: Some(sleep),
            deadline: at,
            state: State::Fresh,
            wakers: Vec::new(),
        });
    }

    fn poll(&mut self, i: usize) {
        let now = Instant::now();
        let shut_down = self.shut_down;
        let s = &mut self.sleeps[i];
        if s.sleep.is_none() {
            return;
        }
        let fired = s.fired();
        let (counter, waker) = CountingWaker::new();
        s.wakers.push(counter.clone());
        let ready = poll_with(s.sleep.as_mut().unwrap(), &waker).is_ready();
        if ready {
            assert!(
                now >= s.deadline || shut_down,
                "sleep {i} completed {:?} before its deadline",
                s.deadline - now
            );
        }
        match s.state {
            State::Waiting { .. } => {
                assert_eq!(
                    ready, fired,
                    "sleep {i}: a poll after waking must complete, and only then"
                );
            }
            State::Done => assert!(ready, "sleep {i}: a completed sleep must stay complete"),
            State::Fresh if shut_down => {
                assert!(ready, "sleep {i}: after shutdown sleeps complete at once")
            }
            State::Fresh => {}
            State::Dropped { .. } => unreachable!(),
        }
        if ready {
            s.state = State::Done;
        } else {
            if !matches!(s.state, State::Waiting { .. }) {
                self.counts.registered += 1;
            }
            let start = s.wakes();
            s.state = State::Waiting {
                start,
                latest: counter,
            };
        }
    }

    fn reset(&mut self, i: usize, deadline: &Deadline) {
        let now = Instant::now();
        let at = match deadline {
            Deadline::After(d) => self.instant(&Deadline::Until(*d), now),
            Deadline::Max => self.instant(&Deadline::Max, now),
            other => self.instant(other, now),
        };
        let shut_down = self.shut_down;
        let s = &mut self.sleeps[i];
        if s.sleep.is_none() {
            return;
        }
        let fired = s.fired();
        let before = s.wakes();
        let reset = std::pin::Pin::new(s.sleep.as_mut().unwrap()).try_reset(at);
        if shut_down {
            // Refused, and the sleep is left as it was.
            assert!(
                reset.is_err_and(|e| e.is_shutdown()),
                "sleep {i}: reset after shutdown"
            );
            assert_eq!(
                s.wakes(),
                before,
                "sleep {i}: a refused reset woke something"
            );
            return;
        }
        reset.unwrap();
        s.deadline = at;
        let passed = at <= now;
        match &s.state {
            State::Waiting { .. } if !fired && !shut_down => {
                if passed {
                    // The reset completes it and wakes the waiting task.
                    assert_eq!(
                        s.wakes(),
                        before + 1,
                        "sleep {i}: reset to the past must wake"
                    );
                    self.counts.cancelled += 1;
                    s.state = State::Done;
                } else {
                    assert_eq!(s.wakes(), before, "sleep {i}: a moved sleep must not wake");
                }
            }
            _ => {
                assert_eq!(
                    s.wakes(),
                    before,
                    "sleep {i}: reset of an idle sleep woke something"
                );
                s.state = if passed { State::Done } else { State::Fresh };
            }
        }
    }

    fn drop_sleep(&mut self, i: usize) {
        let s = &mut self.sleeps[i];
        if s.sleep.take().is_none() {
            return;
        }
        if matches!(s.state, State::Waiting { .. }) && !s.fired() {
            self.counts.cancelled += 1;
        }
        s.state = State::Dropped { wakes: s.wakes() };
    }

    fn shutdown(&mut self) {
        for s in &self.sleeps {
            if matches!(s.state, State::Waiting { .. }) && !s.fired() {
                self.counts.cancelled += 1;
            }
        }
        self.timer.shutdown();
        self.shut_down = true;
    }

    /// Checks every invariant; `woken_before` holds each sleep's total wakes
    /// before the step (to spot the wakes the step caused).
    fn check(&self, woken_before: &[usize], step: &Op) {
        let now = Instant::now();
        for (i, s) in self.sleeps.iter().enumerate() {
            let wakes = s.wakes();
            let new_wakes = wakes - woken_before.get(i).copied().unwrap_or(0);
            match &s.state {
                State::Dropped { wakes: at_drop } => {
                    assert_eq!(wakes, *at_drop, "sleep {i} was woken after it was dropped");
                }
                State::Waiting { start, latest } => {
                    let fired = wakes - start;
                    assert!(fired <= 1, "sleep {i} was woken {fired} times");
                    if fired == 1 {
                        assert_eq!(latest.wakes(), 1, "sleep {i}: a stale waker was woken");
                        if new_wakes > 0 && !self.shut_down {
                            assert!(
                                now >= s.deadline,
                                "sleep {i} woken {:?} early after {step:?}",
                                s.deadline - now
                            );
                        }
                    } else if let Some(boundary) = self.boundary(s.deadline) {
                        assert!(
                            now < boundary,
                            "sleep {i} still waits {:?} past its tick boundary",
                            now - boundary
                        );
                    }
                }
                State::Fresh | State::Done => {}
            }
        }
        let waiting = self
            .sleeps
            .iter()
            .filter(|s| matches!(s.state, State::Waiting { .. }) && !s.fired())
            .count();
        assert_eq!(
            self.timer.pending(),
            waiting,
            "pending() disagrees with the model"
        );
        let stats = self.timer.stats();
        assert_eq!(stats.registered, self.counts.registered, "registered");
        assert_eq!(stats.cancelled, self.counts.cancelled, "cancelled");
        assert_eq!(
            stats.registered,
            stats.fired + stats.cancelled + stats.pending as u64,
            "every registration ends fired, cancelled or pending: {stats:?}"
        );
    }
}

fn run(tick_ms: u64, slots: usize, ops: Vec<Op>) {
    let _watchdog = common::Watchdog::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let tick = Duration::from_millis(tick_ms);
        let timer = Timer::builder().tick(tick).slots(slots).build().unwrap();
        let mut model = Model {
            origin: Instant::now(),
            timer,
            tick,
            sleeps: Vec::new(),
            shut_down: false,
            counts: Counts::default(),
        };
        for op in &ops {
            let before: Vec<usize> = model.sleeps.iter().map(ModelSleep::wakes).collect();
            let n = model.sleeps.len();
            match op {
                Op::Create(d) => model.create(d),
                Op::Poll(i) if *i < n => model.poll(*i),
                Op::Reset(i, d) if *i < n => model.reset(*i, d),
                Op::Drop(i) if *i < n => model.drop_sleep(*i),
                Op::Advance(d) => tokio::time::advance(*d).await,
                Op::Shutdown => model.shutdown(),
                _ => continue,
            }
            model.check(&before, op);
        }
        // Finally let every reachable deadline pass: all waiting sleeps fire.
        tokio::time::advance(Duration::from_secs(60)).await;
        let before: Vec<usize> = model.sleeps.iter().map(ModelSleep::wakes).collect();
        model.check(&before, &Op::Advance(Duration::from_secs(60)));
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_wheel_behaves_like_the_model(
        tick_ms in prop_oneof![Just(1u64), Just(10u64)],
        slots in prop_oneof![Just(8usize), Just(16usize)],
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        run(tick_ms, slots, ops);
    }
}
