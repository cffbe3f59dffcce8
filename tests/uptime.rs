//! Long uptime: a timer that has been running for days, months and years
//! still fires every timer on time.
//!
//! tokio shipped such a bug (fixed by tokio-rs/tokio#8334): once the uptime
//! passed 2^30 ms (about 12.4 days), a very long sleep parked in the top
//! level of its wheel, whose slot had wrapped around, was taken for the next
//! expiration instead of the near ones, so 1-second intervals stopped
//! firing. tickwheel
//! has no levels, but it has the same kind of arithmetic that only large
//! uptimes reach: laps (revolutions) numbered from the origin, an overflow
//! level keyed by lap that far timers move out of, the driver sleeping to a
//! move-in tick far ahead, and nanosecond offsets that saturate at about 292
//! years.
//!
//! Each test runs on the paused clock and moves it in large steps
//! (`tokio::time::advance` by days or years, and auto-advance through idle
//! stretches) and small ones (`advance` by 250 ms between the ticks of a
//! 1-second interval), while far timers (hours, days, months, years,
//! `Duration::MAX`) wait in the overflow level. Timers are awaited, by the
//! test task or by spawned tasks, so the driver runs as it would in a
//! service; nothing expects a sleep to be ready right after `advance`
//! without awaiting it.
//!
//! A bug of this kind tends to hang rather than fail (the driver loops, or
//! a sleep never fires and the paused clock has nowhere to go), so each test
//! runs on its own thread and runtime under a watchdog on the real clock:
//! no result in time is a failure, not a hang.
//!
//! The long variant (13 days of continuous one-second ticks, the shape of
//! the tokio report) is ignored by default:
//!
//! ```text
//! TICKWHEEL_UPTIME_DAYS=13 cargo test --release --test uptime -- --ignored
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickwheel::{MissedTickBehavior, Timer};
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod common;
use common::watchdog::paused;

const SEC: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3_600);
const DAY: Duration = Duration::from_secs(86_400);
const YEAR: Duration = Duration::from_secs(365 * 86_400);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Real time allowed for each short test (it takes well under a second).
const WATCHDOG: Duration = Duration::from_secs(120);

/// 2^n milliseconds: the uptimes where a levelled wheel of 64-slot levels
/// changes level (2^30 ms is tokio's top level, 2^36 ms the end of its
/// wheel), and 2^32 ms where a `u32` of milliseconds wraps.
fn pow2_ms(n: u32) -> Duration {
    ms(1 << n)
}

/// The first tick boundary of a timer built at `origin` at or after
/// `deadline`: where the precision contract says a timer completes on the
/// paused clock.
fn boundary_after(origin: Instant, deadline: Instant, tick: Duration) -> Instant {
    let since = deadline.saturating_duration_since(origin).as_nanos();
    let ticks = since.div_ceil(tick.as_nanos());
    origin + Duration::from_nanos(u64::try_from(ticks * tick.as_nanos()).unwrap())
}

/// A far timer: a spawned task awaiting a wheel sleep, returning the instant
/// it completed.
struct Far {
    /// `None` for `Duration::MAX`: never fires.
    deadline: Option<Instant>,
    task: JoinHandle<Instant>,
}

/// The test's side of one long run: the timer, everything it was asked to
/// do, and the counts the wake-up bound is computed from.
struct Run {
    timer: Timer,
    origin: Instant,
    tick: Duration,
    far: Vec<Far>,
    /// Period of the heartbeat interval that runs for the whole test.
    heartbeat: Duration,
    /// Awaits by the test task of a wheel sleep or interval tick that
    /// registered (each costs the driver at most a notice and a fire).
    awaits: u64,
    /// `tokio::time::advance` calls.
    advances: u64,
}

impl Run {
    fn new(timer: Timer, heartbeat: Duration) -> Run {
        let origin = Instant::now();
        let tick = timer.tick();
        Run {
            timer,
            origin,
            tick,
            far: Vec::new(),
            heartbeat,
            awaits: 0,
            advances: 0,
        }
    }

    fn boundary(&self, deadline: Instant) -> Instant {
        boundary_after(self.origin, deadline, self.tick)
    }

    fn far_until(&mut self, deadline: Instant) {
        let timer = self.timer.clone();
        let task = tokio::spawn(async move {
            timer.sleep_until(deadline).await;
            Instant::now()
        });
        self.far.push(Far {
            deadline: Some(deadline),
            task,
        });
    }

    fn far_after(&mut self, d: Duration) {
        self.far_until(Instant::now() + d);
    }

    fn far_forever(&mut self) {
        let timer = self.timer.clone();
        let task = tokio::spawn(async move {
            timer.sleep(Duration::MAX).await;
            Instant::now()
        });
        self.far.push(Far {
            deadline: None,
            task,
        });
    }

    /// The earliest instant after `now` at which something registered is
    /// due: a far timer's tick boundary or the heartbeat's next tick.
    fn next_due(&self, now: Instant) -> Instant {
        let since = (now - self.origin).as_nanos();
        let period = self.heartbeat.as_nanos();
        let beat = self.origin
            + Duration::from_nanos(u64::try_from((since / period + 1) * period).unwrap());
        self.far
            .iter()
            .filter_map(|f| f.deadline)
            .map(|d| self.boundary(d))
            .filter(|&b| b > now)
            .fold(beat, Instant::min)
    }

    /// Moves the clock to `target`'s tick boundary without ever jumping over
    /// a due timer: one large `advance` to two seconds before the next due
    /// instant, then a wheel sleep until it (auto-advance), repeated.
    /// Jumping past the driver's own wake-up target (the tick at which a far
    /// lap moves out of the overflow) is allowed, and happens.
    async fn travel_to(&mut self, target: Instant) {
        let target = self.boundary(target);
        loop {
            let now = Instant::now();
            if now >= target {
                assert_eq!(now, target, "travelled past the target");
                return;
            }
            let next = self.next_due(now).min(target);
            if let Some(gap) = (next - now).checked_sub(2 * SEC).filter(|g| !g.is_zero()) {
                tokio::time::advance(gap).await;
                self.advances += 1;
            }
            self.timer.sleep_until(next).await;
            // Spawned tasks woken at this same instant (far timers, the
            // heartbeat) record the time they run: let them run before this
            // task moves the clock on, as tokio::spawn'd tasks on tokio's
            // own timers would need too (the woken tasks run after the
            // task that called `advance` is polled again).
            tokio::task::yield_now().await;
            self.awaits += 1;
            assert_eq!(Instant::now(), self.boundary(next), "woke off the boundary");
        }
    }

    /// A window of `ticks` one-second ticks from `at`, on the given interval,
    /// each checked to land on its tick boundary. Before the first three,
    /// the interval registers and the clock moves in 250 ms steps.
    async fn tick_window(&mut self, interval: &mut tickwheel::Interval, at: Instant, ticks: u32) {
        self.travel_to(at).await;
        interval.reset_at(at);
        assert_eq!(interval.tick().await, at);
        for k in 1..=ticks {
            let due = at + SEC * k;
            let small_steps = k <= 3 && self.next_due(Instant::now()) >= self.boundary(due);
            if small_steps {
                // Register the tick's sleep, then move up to it in steps.
                assert!(futures::poll!(std::pin::pin!(interval.tick())).is_pending());
                for _ in 0..3 {
                    tokio::time::advance(ms(250)).await;
                    self.advances += 1;
                }
            }
            let scheduled = interval.tick().await;
            self.awaits += 1;
            assert_eq!(
                scheduled,
                due,
                "tick {k} of the window at {:?}",
                at - self.origin
            );
            assert_eq!(
                Instant::now(),
                self.boundary(due),
                "tick {k} of the window at {:?} off its boundary",
                at - self.origin
            );
        }
    }
}

/// Spawns the heartbeat: an interval of `period` from the origin (taking its
/// first tick here, at once), each later tick checked to complete on its
/// boundary; returns how many ticks it has taken.
async fn spawn_heartbeat(
    timer: &Timer,
    period: Duration,
    origin: Instant,
) -> (JoinHandle<()>, Arc<AtomicU64>) {
    let mut interval = timer.interval_at(origin, period);
    assert_eq!(interval.tick().await, origin);
    let beats = Arc::new(AtomicU64::new(1));
    let task = tokio::spawn({
        let (timer, beats) = (timer.clone(), beats.clone());
        async move {
            for n in 1u32.. {
                let at = interval.tick().await;
                assert_eq!(at, origin + period * n, "heartbeat {n} off schedule");
                let now = Instant::now();
                assert_eq!(
                    now,
                    boundary_after(origin, at, timer.tick()),
                    "heartbeat {n} at {:?} off its boundary",
                    at - origin
                );
                beats.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    (task, beats)
}

/// Uptimes (from the timer's origin) at which a window of one-second ticks
/// runs: the boundaries of tokio's levels and of a `u32` of milliseconds
/// (the windows straddle them), then years up to 250.
fn checkpoints() -> Vec<Duration> {
    vec![
        HOUR,
        DAY,
        pow2_ms(30) - 10 * SEC,
        30 * DAY,
        pow2_ms(32) - 10 * SEC,
        YEAR,
        pow2_ms(36) - 10 * SEC,
        10 * YEAR,
        100 * YEAR,
        250 * YEAR,
    ]
}

/// Days to years of uptime: at each checkpoint, 20 one-second ticks, all
/// exact, while far timers (some registered at the start, some at each
/// checkpoint, some never due) wait in the overflow level and fire exactly
/// on their tick boundary, and a 30-day heartbeat runs throughout. The
/// driver's wake-ups stay bounded by what was scheduled.
async fn days_to_years(timer: Timer) {
    const WINDOW: u32 = 20;
    let heartbeat = 30 * DAY;
    let mut run = Run::new(timer, heartbeat);
    let origin = run.origin;
    let (beat_task, beats) = spawn_heartbeat(&run.timer, heartbeat, origin).await;

    // Registered at uptime zero: two inside every window (one between
    // boundaries), some between windows, two beyond the end, one never.
    for c in checkpoints() {
        run.far_until(origin + c + ms(7_500));
        run.far_until(origin + c + Duration::from_micros(12_345_678));
    }
    for d in [6 * HOUR, 3 * DAY, 45 * DAY, 200 * DAY, 3 * YEAR, 50 * YEAR] {
        run.far_until(origin + d);
    }
    run.far_until(origin + 280 * YEAR);
    run.far_until(origin + 290 * YEAR);
    run.far_forever();

    let mut interval = run.timer.interval(SEC);
    interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let windows = checkpoints().len() as u64;
    for c in checkpoints() {
        run.tick_window(&mut interval, origin + c, 0).await;
        // Registered at this uptime: one firing inside the window (after
        // tick 17), others an hour, forty days and three years on, and one
        // that never fires.
        run.far_after(Duration::from_micros(17_250_000));
        run.far_after(HOUR + ms(500));
        run.far_after(40 * DAY);
        run.far_after(3 * YEAR);
        run.far_forever();
        run.tick_window(&mut interval, origin + c, WINDOW).await;
    }
    drop(interval);
    let end = origin + 250 * YEAR + 2 * DAY;
    run.travel_to(end).await;
    assert_eq!(Instant::now(), end);

    // Every far timer due by now fired exactly on its tick boundary; the
    // rest are still waiting.
    let mut fired = 0u64;
    let mut waiting = Vec::new();
    for (i, far) in run.far.drain(..).enumerate() {
        match far.deadline {
            Some(deadline) if boundary_after(origin, deadline, run.tick) <= end => {
                assert!(far.task.is_finished(), "far timer {i} never fired");
                let at = far.task.await.unwrap();
                assert_eq!(
                    at,
                    boundary_after(origin, deadline, run.tick),
                    "far timer {i}, due at {:?} of uptime, fired {:?} of uptime",
                    deadline - origin,
                    at - origin
                );
                fired += 1;
            }
            _ => {
                assert!(!far.task.is_finished(), "far timer {i} fired early");
                waiting.push(far.task);
            }
        }
    }
    assert!(!beat_task.is_finished(), "the heartbeat stopped");
    let expected_beats = ((end - origin).as_nanos() / heartbeat.as_nanos()) as u64 + 1;
    assert_eq!(beats.load(Ordering::SeqCst), expected_beats);

    let stats = run.timer.stats();
    assert_eq!(
        stats.ticks,
        ((end - origin).as_nanos() / run.tick.as_nanos()) as u64,
        "the wheel's clock kept up"
    );
    assert!(
        stats.lateness.max < run.tick,
        "a timer fired {:?} late (tick {:?})",
        stats.lateness.max,
        run.tick
    );
    // Each registered await of the test task and each heartbeat tick costs
    // the driver at most two wake-ups (the registration's notice, the fire),
    // each far timer at most three (notice, move out of the overflow, fire),
    // each advance at most one.
    let scheduled = run.awaits + expected_beats;
    let far_total = fired + waiting.len() as u64;
    let bound = 2 * scheduled + 3 * far_total + run.advances + 16;
    assert!(
        stats.wakeups <= bound,
        "{} driver wake-ups for {} awaits, {} heartbeats, {} far timers, {} advances \
         ({} windows): bound {bound}",
        stats.wakeups,
        run.awaits,
        expected_beats,
        far_total,
        run.advances,
        windows
    );
    assert!(
        stats.wakeups * 1_000_000 < stats.ticks,
        "not proportional to busy ticks"
    );
    assert_eq!(
        stats.pending,
        waiting.len() + 1,
        "the far timers still waiting, and the heartbeat"
    );

    // Shutdown still reaches the ones that never fire.
    beat_task.abort();
    assert!(beat_task.await.unwrap_err().is_cancelled());
    run.timer.shutdown();
    for task in waiting {
        assert_eq!(task.await.unwrap(), end);
    }
}

#[test]
fn days_to_years_of_uptime_default_timer() {
    paused("default timer", WATCHDOG, || days_to_years(Timer::new()));
}

/// The default before 1 ms x 8192: coarse ticks, laps of 5.12 s.
#[test]
fn days_to_years_of_uptime_10ms_ticks_and_512_slots() {
    paused("10 ms x 512 slots", WATCHDOG, || {
        days_to_years(common::old_default_timer())
    });
}

#[test]
fn days_to_years_of_uptime_1ms_ticks_and_short_laps() {
    // 64 slots of 1 ms: a lap is 64 ms, so every second crosses laps and
    // the far timers sit billions of laps out.
    paused("1 ms x 64 slots", WATCHDOG, || {
        days_to_years(Timer::builder().tick(ms(1)).slots(64).build().unwrap())
    });
}

/// Large steps that do jump over deadlines: one `advance` of ten years past
/// timers due in hours, days, months and years. Each fires once, when the
/// driver next runs (at the end of the step, never before its deadline), in
/// one or two driver wake-ups, and the one-second interval and new timers
/// are exact again right after. Then the same from there to 100 years.
#[test]
fn steps_of_years_over_many_deadlines() {
    paused("steps of years", WATCHDOG, steps_of_years);
}

async fn steps_of_years() {
    let timer = Timer::new();
    let origin = Instant::now();
    let tick = timer.tick();
    let mut interval = timer.interval(SEC);
    interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(interval.tick().await, origin);

    for step in [10 * YEAR, 90 * YEAR] {
        let start = Instant::now();
        let due = [
            HOUR,
            6 * HOUR,
            DAY,
            pow2_ms(30),
            30 * DAY,
            pow2_ms(32),
            YEAR,
            pow2_ms(36),
            5 * YEAR,
            step - SEC,
        ];
        let spawn = |at: Option<Instant>| {
            let timer = timer.clone();
            tokio::spawn(async move {
                match at {
                    Some(at) => timer.sleep_until(at).await,
                    None => timer.sleep(Duration::MAX).await,
                }
                Instant::now()
            })
        };
        let fire: Vec<_> = due.iter().map(|&d| spawn(Some(start + d))).collect();
        let beyond = spawn(Some(start + step + YEAR));
        let never = spawn(None);
        // The next tick registers, and the spawned timers too, before the step.
        let next = interval.tick().await;
        assert_eq!(next, start + SEC);
        assert!(futures::poll!(std::pin::pin!(interval.tick())).is_pending());

        let before = timer.stats();
        tokio::time::advance(step - SEC).await;
        let end = Instant::now();
        assert_eq!(end, start + step);
        // The tick registered before the step is late: Skip returns it,
        // completing now, then goes back to the grid.
        assert_eq!(interval.tick().await, start + 2 * SEC);
        assert_eq!(Instant::now(), end);
        for (task, d) in fire.into_iter().zip(due) {
            // Awaiting a finished task does not move the clock; awaiting an
            // unfinished one would let it run (or hang, if it never fires).
            assert_eq!(task.await.unwrap(), end, "due {d:?} into the step");
        }
        assert!(!beyond.is_finished() && !never.is_finished(), "fired early");
        let after = timer.stats();
        assert!(
            after.wakeups - before.wakeups <= 3,
            "{} driver wake-ups for one step",
            after.wakeups - before.wakeups
        );
        // The far timers fire on the driver (their tasks are only polled
        // once woken); the interval's entry may fire there too.
        assert!(after.fired - before.fired >= due.len() as u64);

        // Exact again: a second of ticks, and new timers at this uptime.
        let soon = {
            let timer = timer.clone();
            tokio::spawn(async move {
                timer.sleep(ms(3_333)).await;
                Instant::now()
            })
        };
        for k in 1..=5u32 {
            let at = interval.tick().await;
            assert_eq!(at, end + SEC * k);
            assert_eq!(Instant::now(), at);
        }
        assert_eq!(
            soon.await.unwrap(),
            boundary_after(origin, end + ms(3_333), tick)
        );
        beyond.abort();
        never.abort();
        assert!(beyond.await.unwrap_err().is_cancelled());
        assert!(never.await.unwrap_err().is_cancelled());
    }
    assert_eq!(timer.stats().pending, 0);
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The shape of the tokio report: a one-second interval ticks continuously
/// for an hour from the start, then, after one `advance` to an hour before
/// 2^30 ms of uptime (tokio's top level), for two hours across it, while a
/// `Duration::MAX` sleep and a ten-year sleep registered at the start wait.
/// Every minute a request timeout of 90 s is registered and dropped before
/// it fires, and every hour a sleep of just under an hour is registered and
/// fires. Every tick and every hourly sleep is exact, and the driver wakes at
/// most a few times per busy tick.
#[test]
fn one_second_ticks_across_2_pow_30_ms_with_far_timers_waiting() {
    let top = pow2_ms(30).as_secs();
    paused("one-second ticks", WATCHDOG, move || {
        one_second_ticks(vec![(0, 3_600), (top - 3_600, top + 3_600)])
    });
}

/// As above, continuously from the start for `TICKWHEEL_UPTIME_DAYS` days
/// (13 by default: past 2^30 ms).
#[test]
#[ignore = "a million ticks: about half a minute in debug; see the file's docs"]
fn one_second_ticks_for_days_with_far_timers_waiting() {
    let days = env_or("TICKWHEEL_UPTIME_DAYS", 13);
    // Generous: about 1.5 s a day in debug on a quiet machine.
    let watchdog = WATCHDOG + Duration::from_secs(30 * days);
    paused("one-second ticks for days", watchdog, move || {
        one_second_ticks(vec![(0, days * 86_400)])
    });
}

/// Runs the one-second interval through each phase, given as (first, last)
/// tick in seconds of uptime, moving from one phase to the next with a
/// single `advance`.
async fn one_second_ticks(phases: Vec<(u64, u64)>) {
    let timer = Timer::new();
    let origin = Instant::now();
    let mut interval = timer.interval(SEC);
    let forever = tokio::spawn({
        let timer = timer.clone();
        async move { timer.sleep(Duration::MAX).await }
    });
    let decade = tokio::spawn({
        let timer = timer.clone();
        async move { timer.sleep(10 * YEAR).await }
    });
    let (mut seconds, mut minutes, mut hours, mut advances) = (0u64, 0u64, 0u64, 0u64);
    for (first, last) in phases {
        let first_at = origin + Duration::from_secs(first);
        if let Some(gap) = (first_at - Instant::now()).checked_sub(SEC) {
            if !gap.is_zero() {
                tokio::time::advance(gap).await;
                advances += 1;
            }
        }
        interval.reset_at(first_at);
        let mut hourly: Option<(Instant, JoinHandle<Instant>)> = None;
        let mut request = None;
        for n in first..=last {
            let at = interval.tick().await;
            assert_eq!(at, origin + Duration::from_secs(n), "tick {n}");
            assert_eq!(Instant::now(), at, "tick {n} off schedule");
            seconds += 1;
            if (n - first) % 60 == 0 {
                // A new request; the previous one answered in time, so its
                // timeout is dropped before it fires.
                let mut r = timer.timeout(90 * SEC, std::future::pending::<()>());
                assert!(futures::poll!(&mut r).is_pending());
                request = Some(r);
                minutes += 1;
            }
            if (n - first) % 3_600 == 0 {
                if let Some((due, task)) = hourly.take() {
                    let fired = task.await.unwrap();
                    assert_eq!(fired, due, "the hourly sleep due at {:?}", due - origin);
                }
                let due = at + HOUR - ms(250);
                let timer = timer.clone();
                hourly = Some((
                    boundary_after(origin, due, timer.tick()),
                    tokio::spawn(async move {
                        timer.sleep_until(due).await;
                        Instant::now()
                    }),
                ));
                hours += 1;
            }
        }
        // Not due yet: cancelled with the phase.
        if let Some((_, task)) = hourly {
            task.abort();
            assert!(task.await.unwrap_err().is_cancelled());
        }
        drop(request);
    }
    assert!(!forever.is_finished() && !decade.is_finished());
    let stats = timer.stats();
    // Per tick: its notice and fire; per request its notice and its move out
    // of the overflow; per hourly sleep its notice, move and fire; per
    // advance, one.
    let bound = 2 * seconds + 2 * minutes + 3 * hours + advances + 16;
    assert!(
        stats.wakeups <= bound,
        "{} wake-ups for {seconds} ticks, {minutes} requests, {hours} hourly sleeps: bound {bound}",
        stats.wakeups
    );
    assert!(stats.lateness.max < timer.tick());
    assert_eq!(stats.pending, 2, "the two far sleeps");
    timer.shutdown();
    forever.await.unwrap();
    decade.await.unwrap();
}
