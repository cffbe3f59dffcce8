//! The horizon: a timer's clock saturates 2^63 - 1 ns (about 292 years)
//! after its origin, and deadlines there (`Duration::MAX`, anything 292
//! years away) or past the clock's last reachable tick boundary never fire,
//! for every tick the builder accepts, up to the largest for each slot
//! count; deadlines up to that boundary fire at their own boundary, not
//! before. All on tokio's paused clock, which can be advanced up to the
//! horizon and past it.
//!
//! Found with "Fidelity 5", item 2: on the largest tick (`i64::MAX` ns, one
//! slot) a sleep 292 years away completed once the clock reached the
//! horizon, which a wait of a day on the same timer does by itself (its
//! only reachable boundary is the horizon, and tokio's paused clock
//! auto-advances to it). The tick divides 2^63 - 1, so the saturated
//! deadline rounded up to the last tick the clock reaches, and a sleep's
//! lock-free "fired" check trusted the processed tick. On every tick, a
//! wait made past the horizon for `Duration::MAX` completed at once (the
//! saturated deadline compared equal to the saturated clock), and a
//! `DelayQueue` holding only such items spun on its poll.

mod common;

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tickwheel::{BuildError, Builder, DelayQueue, Sleep, Timer};
use tokio::time::{advance, Instant};
use tokio_test::task::{self, Spawn};
use tokio_test::{assert_pending, assert_ready};

/// The horizon, in nanoseconds from the origin.
const H: u64 = i64::MAX as u64;
const DAY: Duration = Duration::from_secs(86_400);
const MS: u64 = 1_000_000;

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// 2^63 - 1 = 7^2 x 73 x 127 x 337 x 92,737 x 649,657: ticks that divide
/// it have the horizon itself as their last boundary.
const DIVIDES: [u64; 4] = [H, H / 7, H / 337, H / 92_737];

/// A timer of `tick_ns` and `slots`, which the builder accepts; a tick one
/// nanosecond longer than the largest for that slot count it refuses.
fn build(tick_ns: u64, slots: usize) -> Timer {
    let largest = H / slots as u64;
    assert!(tick_ns <= largest);
    let refused = Timer::builder().tick(ns(largest + 1)).slots(slots).build();
    assert!(
        matches!(refused, Err(BuildError::SpanOverflow { .. })),
        "{refused:?}"
    );
    Timer::builder()
        .tick(ns(tick_ns))
        .slots(slots)
        .build()
        .expect("a tick the builder accepts")
}

/// The last tick boundary the clock reaches, in ns from the origin.
fn last_boundary(tick_ns: u64) -> u64 {
    H / tick_ns * tick_ns
}

/// The boundary `d` ns rounds up to.
fn boundary(tick_ns: u64, d: u64) -> u64 {
    d.div_ceil(tick_ns) * tick_ns
}

/// Nanoseconds since `t0` (the clock stays below 2^64 ns of it here).
fn since(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).expect("within 584 years")
}

struct Never {
    what: String,
    sleep: Spawn<Sleep>,
}

impl Never {
    fn check(&mut self, at: u64) {
        assert!(!self.sleep.is_woken(), "{} woken at {at} ns", self.what);
        assert_pending!(self.sleep.poll(), "{} completed at {at} ns", self.what);
        assert!(!self.sleep.is_elapsed(), "{} elapsed at {at} ns", self.what);
    }
}

struct Reachable {
    deadline: u64,
    boundary: u64,
    sleep: Spawn<Sleep>,
    fired: bool,
}

impl Reachable {
    /// Pending before its boundary; fired (woken by the wheel) once tokio's
    /// millisecond of the boundary has passed.
    fn check(&mut self, at: u64) {
        let d = self.deadline;
        if at < self.boundary {
            assert!(!self.sleep.is_woken(), "{d} ns woken early, at {at} ns");
            assert_pending!(self.sleep.poll(), "{d} ns early, at {at} ns");
        } else if at >= self.boundary.saturating_add(MS) && !self.fired {
            assert!(self.sleep.is_woken(), "{d} ns not woken at {at} ns");
            assert_ready!(self.sleep.poll(), "{d} ns not done at {at} ns");
            self.fired = true;
        }
    }
}

/// Deadlines at and around the horizon, made at the origin, checked as the
/// clock moves a day, then to each reachable boundary and just short of
/// it, up to the horizon and a day past it; then waits made past the
/// horizon; then shutdown.
async fn horizon_case(tick: u64, slots: usize) {
    let timer = build(tick, slots);
    let t0 = Instant::now();
    let last = last_boundary(tick);
    let divides = last == H;
    assert_eq!(divides, DIVIDES.contains(&tick));

    // The horizon and past it; past the last reachable boundary, short of
    // the horizon (none when that boundary is `H - 1` or `H`).
    let mut never_ns = vec![H, H + 1, u64::MAX];
    never_ns.extend([last + 1, H - 1].into_iter().filter(|&d| last < d && d < H));
    never_ns.sort_unstable();
    never_ns.dedup();
    let mut never: Vec<Never> = never_ns
        .iter()
        .map(|&d| Never {
            what: format!("a sleep of {d} ns"),
            sleep: task::spawn(timer.sleep(ns(d))),
        })
        .chain(std::iter::once(Never {
            what: "a sleep of Duration::MAX".to_owned(),
            sleep: task::spawn(timer.sleep(Duration::MAX)),
        }))
        .collect();

    // A day; the first and the last deadline of the last tick (whose
    // boundary is the horizon itself when the tick divides it); one tick
    // before the last boundary.
    let day = u64::try_from(DAY.as_nanos()).unwrap();
    let last_deadline = if divides { H - 1 } else { last };
    let mut reachable_ns = vec![day, last - tick + 1, last_deadline];
    if last - tick > 0 {
        reachable_ns.push(last - tick);
    }
    reachable_ns.sort_unstable();
    reachable_ns.dedup();
    let mut reachable: Vec<Reachable> = reachable_ns
        .iter()
        .map(|&d| Reachable {
            deadline: d,
            boundary: boundary(tick, d),
            sleep: task::spawn(timer.sleep(ns(d))),
            fired: false,
        })
        .collect();
    for r in &reachable {
        assert!(r.boundary <= last && r.deadline < H);
    }

    for n in &mut never {
        n.check(0);
    }
    for r in &mut reachable {
        r.check(0);
    }

    let mut checkpoints = vec![day, H - 1, H, H + MS, H + day];
    for r in &reachable {
        checkpoints.extend([r.boundary - 1, r.boundary + MS]);
    }
    checkpoints.sort_unstable();
    checkpoints.dedup();
    for at in checkpoints {
        let now = since(t0);
        if at > now {
            advance(ns(at - now)).await;
        }
        let at = since(t0);
        for n in &mut never {
            n.check(at);
        }
        for r in &mut reachable {
            r.check(at);
        }
    }
    assert!(since(t0) > H, "tokio's paused clock went past the horizon");
    assert!(reachable.iter().all(|r| r.fired));

    // Past the horizon, a wait for anything later never completes; a
    // deadline at or before the last reachable boundary has passed.
    let now = Instant::now();
    let later: [(&str, Sleep); 6] = [
        ("Duration::MAX", timer.sleep(Duration::MAX)),
        ("a second", timer.sleep(Duration::from_secs(1))),
        ("a day", timer.sleep(DAY)),
        ("now + 1 s", timer.sleep_until(now + Duration::from_secs(1))),
        ("the horizon", timer.sleep_until(t0 + ns(H))),
        (
            "past the last boundary",
            timer.sleep_until(t0 + ns(last + 1)),
        ),
    ];
    let mut later: Vec<Never> = later
        .into_iter()
        .map(|(what, sleep)| Never {
            what: format!("a sleep made past the horizon for {what}"),
            sleep: task::spawn(sleep),
        })
        .collect();
    let mut reset = task::spawn(timer.sleep(Duration::from_secs(1)));
    assert_pending!(reset.poll());
    Pin::new(&mut *reset).reset(t0 + ns(H));
    later.push(Never {
        what: "a sleep reset past the horizon to the horizon".to_owned(),
        sleep: reset,
    });
    let mut passed = task::spawn(timer.sleep_until(t0 + ns(last_deadline)));
    assert_ready!(passed.poll(), "a reachable deadline made past it");
    let mut timeout = task::spawn(timer.timeout(Duration::MAX, std::future::pending::<()>()));
    assert_pending!(timeout.poll());

    advance(DAY).await;
    let at = since(t0);
    for n in never.iter_mut().chain(later.iter_mut()) {
        n.check(at);
    }
    assert!(!timeout.is_woken());
    assert_pending!(timeout.poll());

    let stats = timer.stats();
    assert_eq!(stats.fired, reachable.len() as u64);
    assert_eq!(stats.pending, never.len() + later.len() + 1);

    // Shutdown still reaches all of them, and says so.
    timer.shutdown();
    for n in never.iter_mut().chain(later.iter_mut()) {
        assert!(n.sleep.is_woken(), "{} not woken by shutdown", n.what);
        assert_ready!(n.sleep.poll());
    }
    assert!(timeout.is_woken());
    let err = assert_ready!(timeout.poll()).unwrap_err();
    assert!(
        err.is_shutdown(),
        "a timeout at the horizon ended by shutdown"
    );
}

/// The report's timer: the largest tick there is, one slot.
#[tokio::test(start_paused = true)]
async fn the_largest_tick_with_one_slot() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H, 1).await;
}

/// A power of two, which does not divide 2^63 - 1 (this held before).
#[tokio::test(start_paused = true)]
async fn a_tick_of_2_pow_62_with_one_slot() {
    let _watchdog = common::Watchdog::start();
    horizon_case(1 << 62, 1).await;
}

/// The largest whole-millisecond tick with one slot.
#[tokio::test(start_paused = true)]
async fn the_largest_whole_millisecond_tick_with_one_slot() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / MS * MS, 1).await;
}

#[tokio::test(start_paused = true)]
async fn the_largest_tick_with_two_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / 2, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_seventh_of_the_horizon_with_four_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / 7, 4).await;
}

#[tokio::test(start_paused = true)]
async fn a_tick_dividing_the_horizon_with_256_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / 337, 256).await;
}

#[tokio::test(start_paused = true)]
async fn the_largest_tick_with_1024_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / 1024, 1024).await;
}

#[tokio::test(start_paused = true)]
async fn the_largest_tick_with_the_most_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / Builder::MAX_SLOTS as u64, Builder::MAX_SLOTS).await;
}

#[tokio::test(start_paused = true)]
async fn a_tick_dividing_the_horizon_with_the_most_slots() {
    let _watchdog = common::Watchdog::start();
    horizon_case(H / 92_737, Builder::MAX_SLOTS).await;
}

/// The default tick and slots: the horizon is the same 292 years.
#[tokio::test(start_paused = true)]
async fn the_default_timer() {
    let _watchdog = common::Watchdog::start();
    horizon_case(MS, Builder::DEFAULT_SLOTS).await;
}

/// The report's sequence: on the largest tick, a sleep 292 years away, a
/// day's advance, then a wait of a day on the same timer. That wait rounds
/// up to the timer's one reachable boundary, the horizon, and tokio's
/// paused clock auto-advances there; the far sleep must still not complete.
#[tokio::test(start_paused = true)]
async fn a_wait_that_takes_the_clock_to_the_horizon_leaves_the_far_sleep_pending() {
    let _watchdog = common::Watchdog::start();
    let timer = build(H, 1);
    let t0 = Instant::now();
    let mut far = task::spawn(timer.sleep(ns(H)));
    assert_pending!(far.poll());
    advance(DAY).await;
    assert!(!far.is_woken());
    assert_pending!(far.poll());
    timer.sleep(DAY).await;
    assert!(since(t0) >= H, "the day's wait ended at the horizon");
    assert!(!far.is_woken(), "woken at the horizon");
    assert_pending!(far.poll(), "completed at the horizon");
    assert!(!far.is_elapsed());
    assert_eq!((timer.stats().fired, timer.pending()), (1, 1));
}

/// Takes what a poll of `queue` yields.
fn poll_queue(queue: &mut DelayQueue<&'static str>) -> Poll<Option<&'static str>> {
    let mut next = task::spawn(poll_fn(|cx| queue.poll_expired(cx)));
    next.poll()
        .map(|item| item.map(|expired| expired.into_inner()))
}

/// A `DelayQueue` on the same ticks: items at or past the horizon never
/// come out, those up to the last boundary do, and a queue left holding
/// only the former waits instead of spinning.
async fn delay_queue_case(tick: u64, slots: usize) {
    let timer = build(tick, slots);
    let t0 = Instant::now();
    let last = last_boundary(tick);
    let last_deadline = if last == H { H - 1 } else { last };
    let mut queue = DelayQueue::with_timer(&timer);
    queue.insert("never: Duration::MAX", Duration::MAX);
    queue.insert("never: the horizon", ns(H));
    queue.insert_at("never: at the horizon", t0 + ns(H));
    if last < H {
        queue.insert("never: past the last boundary", ns(last + 1));
    }
    // Moved later in place, to the horizon.
    let moved = queue.insert("never: moved to the horizon", ns(last_deadline));
    queue.reset(&moved, ns(H));
    queue.insert("a day", DAY);
    queue.insert("the last deadline", ns(last_deadline));
    assert_pending!(poll_queue(&mut queue));

    advance(ns(H)).await;
    advance(DAY).await;
    let mut out = Vec::new();
    while let Poll::Ready(Some(item)) = poll_queue(&mut queue) {
        out.push(item);
        assert!(out.len() <= 2, "{out:?}");
    }
    out.sort_unstable(); // on one tick on the largest ticks: a tie
    assert_eq!(out, ["a day", "the last deadline"]);
    assert_pending!(poll_queue(&mut queue));

    queue.insert("never: made past the horizon", Duration::MAX);
    queue.insert("never: a second past the horizon", Duration::from_secs(1));
    queue.insert_at("never: now + 1 s", Instant::now() + Duration::from_secs(1));
    queue.insert("now", Duration::ZERO);
    assert_eq!(assert_ready!(poll_queue(&mut queue)), Some("now"));
    assert_pending!(poll_queue(&mut queue));
    advance(DAY).await;
    assert_pending!(poll_queue(&mut queue));
    let never = if last < H { 8 } else { 7 };
    assert_eq!(queue.len(), never);
}

#[tokio::test(start_paused = true)]
async fn a_delay_queue_on_the_largest_tick() {
    let _watchdog = common::Watchdog::start();
    delay_queue_case(H, 1).await;
}

#[tokio::test(start_paused = true)]
async fn a_delay_queue_on_a_seventh_of_the_horizon() {
    let _watchdog = common::Watchdog::start();
    delay_queue_case(H / 7, 4).await;
}

#[tokio::test(start_paused = true)]
async fn a_delay_queue_on_the_largest_tick_with_two_slots() {
    let _watchdog = common::Watchdog::start();
    delay_queue_case(H / 2, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_delay_queue_on_the_default_timer() {
    let _watchdog = common::Watchdog::start();
    delay_queue_case(MS, Builder::DEFAULT_SLOTS).await;
}
