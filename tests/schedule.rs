//! `Timer::schedule`, `schedule_at` and `schedule_every` on the paused clock.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tickwheel::{PeriodicTask, RunError, RunOutcome, Timer};
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn fine_timer() -> Timer {
    Timer::builder().tick(ms(1)).build().unwrap()
}

/// Records when something happened, in ms since `start`.
#[derive(Clone)]
struct Log {
    start: Instant,
    at: Arc<Mutex<Vec<u128>>>,
}

impl Log {
    fn new() -> Self {
        Log {
            start: Instant::now(),
            at: Arc::default(),
        }
    }
    fn mark(&self) {
        let t = (Instant::now() - self.start).as_millis();
        self.at.lock().unwrap().push(t);
    }
    fn get(&self) -> Vec<u128> {
        self.at.lock().unwrap().clone()
    }
}

// ----- schedule ---------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn schedule_runs_at_the_deadline_and_not_before() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let task = timer.schedule(ms(100), {
        let log = log.clone();
        async move { log.mark() }
    });
    assert_eq!(task.deadline(), log.start + ms(100));

    tokio::time::advance(ms(99)).await;
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(log.get(), Vec::<u128>::new(), "ran before its deadline");
    assert!(!task.is_expired());
    assert!(!task.is_cancelled());

    tokio::time::advance(ms(1)).await;
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(log.get(), [100]);
    assert!(task.is_expired());
    assert!(!task.is_cancelled());
}

/// A task due between two ticks starts at the first boundary after its
/// deadline: on a 10 ms tick 123 ms starts at 130 ms; on the default 1 ms
/// tick, at 123 ms.
#[tokio::test(start_paused = true)]
async fn schedule_on_a_coarse_timer_starts_within_one_tick() {
    let _watchdog = common::Watchdog::start();
    let coarse = Timer::builder().tick(ms(10)).build().unwrap();
    let log = Log::new();
    let _task = coarse.schedule(ms(123), {
        let log = log.clone();
        async move { log.mark() }
    });
    tokio::time::sleep(ms(500)).await;
    assert_eq!(
        log.get(),
        [130],
        "the first tick boundary at or after 123 ms"
    );

    let timer = Timer::new(); // built now: its ticks count from here
    let log = Log::new();
    let _task = timer.schedule(ms(123), {
        let log = log.clone();
        async move { log.mark() }
    });
    tokio::time::sleep(ms(500)).await;
    assert_eq!(
        log.get(),
        [123],
        "on the default 1 ms tick, at the deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_before_the_deadline_prevents_the_run_and_drops_the_future() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let start = Instant::now();
    let ran = Arc::new(AtomicBool::new(false));
    let (guard, dropped) = tokio::sync::oneshot::channel::<()>();
    let task = timer.schedule(ms(100), {
        let ran = ran.clone();
        async move {
            ran.store(true, Ordering::SeqCst);
            drop(guard);
        }
    });
    tokio::time::advance(ms(50)).await;
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(timer.pending(), 1);

    assert!(
        task.cancel(),
        "the first cancel before the deadline succeeds"
    );
    assert!(task.is_cancelled());
    assert!(!task.cancel(), "a second cancel changes nothing");

    // The future is dropped now, without waiting for the deadline; its sleep
    // leaves the wheel.
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert!(dropped.await.is_err(), "the future was dropped unrun");
    assert_eq!(Instant::now(), start + ms(50));
    assert_eq!(timer.pending(), 0);

    tokio::time::sleep(ms(500)).await;
    assert!(!ran.load(Ordering::SeqCst), "a cancelled task ran");
    assert!(!task.is_expired());
}

#[tokio::test(start_paused = true)]
async fn cancel_after_the_start_returns_false_and_the_future_finishes() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let task = timer.schedule(ms(10), {
        let log = log.clone();
        let timer = timer.clone();
        async move {
            log.mark();
            timer.sleep(ms(100)).await;
            log.mark();
        }
    });
    tokio::time::sleep(ms(50)).await;
    assert!(task.is_expired());
    assert!(!task.cancel(), "too late to cancel");
    assert!(!task.is_cancelled());
    tokio::time::sleep(ms(100)).await;
    assert_eq!(log.get(), [10, 110], "a started future is not interrupted");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_does_not_cancel() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    drop(timer.schedule(ms(20), {
        let log = log.clone();
        async move { log.mark() }
    }));
    tokio::time::sleep(ms(100)).await;
    assert_eq!(log.get(), [20]);
}

#[tokio::test(start_paused = true)]
async fn schedule_at_a_past_instant_runs_at_once_and_zero_delay_too() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    tokio::time::advance(ms(5)).await;
    let past = timer.schedule_at(log.start, {
        let log = log.clone();
        async move { log.mark() }
    });
    let zero = timer.schedule(Duration::ZERO, {
        let log = log.clone();
        async move { log.mark() }
    });
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(log.get(), [5, 5]);
    assert!(past.is_expired() && zero.is_expired());
}

#[tokio::test(start_paused = true)]
async fn shutdown_before_the_deadline_cancels_the_task() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let ran = Arc::new(AtomicBool::new(false));
    let task = timer.schedule(ms(100), {
        let ran = ran.clone();
        async move { ran.store(true, Ordering::SeqCst) }
    });
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    timer.shutdown();
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert!(task.is_cancelled());
    assert!(!task.cancel());
    tokio::time::sleep(ms(500)).await;
    assert!(!ran.load(Ordering::SeqCst), "ran after shutdown");

    // Scheduling on a stopped timer is refused loudly, like a sleep.
    let late = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        timer.schedule(ms(1), async {});
    }));
    assert!(late.is_err(), "scheduling on a stopped timer must panic");
}

#[test]
fn cancel_races_with_the_deadline_on_a_multi_thread_runtime() {
    let _watchdog = common::Watchdog::start();
    // No paused clock here: real threads race `cancel` against the start.
    // Whatever the interleaving, the run happened iff cancel returned false.
    let (rt, timer) = common::runtime_with_timer(2);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut won = 0;
    for i in 0..100u64 {
        let before = runs.load(Ordering::SeqCst);
        let task = timer.schedule(ms(1), {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        });
        // Spread the cancel over the first 5 ms: before, at and after the
        // task's start (its tick boundary is 1 to 2 ms away on the default
        // 1 ms tick; on the real clock it starts about 2 to 3 ms in, so
        // cancel wins about half the races).
        std::thread::sleep(Duration::from_micros(i * 997 % 5_000));
        let cancelled = task.cancel();
        won += usize::from(cancelled);
        // Wait until the task has settled one way or the other.
        let settled = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), async {
                while !(task.is_cancelled() || runs.load(Ordering::SeqCst) > before) {
                    tokio::task::yield_now().await;
                }
            })
            .await
        });
        assert!(settled.is_ok());
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(
            runs.load(Ordering::SeqCst) - before,
            usize::from(!cancelled),
            "cancel returned {cancelled}"
        );
        assert_eq!(task.is_cancelled(), cancelled);
        assert_eq!(task.is_expired(), !cancelled);
    }
    drop(timer);
    drop(rt);
    eprintln!("cancel won {won} of 100 races");
}

// ----- schedule_every ---------------------------------------------------

#[tokio::test(start_paused = true)]
async fn every_runs_one_period_apart_after_the_initial_delay() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let task = timer
        .schedule_every(ms(100), {
            let log = log.clone();
            move || {
                let log = log.clone();
                async move { log.mark() }
            }
        })
        .start();
    tokio::time::sleep(ms(450)).await;
    assert_eq!(log.get(), [100, 200, 300, 400]);
    assert_eq!(task.runs(), 4);
    assert_eq!(task.failures(), 0);
    assert_eq!(task.period(), ms(100));

    let log = Log::new();
    let now = timer
        .schedule_every(ms(100), {
            let log = log.clone();
            move || {
                let log = log.clone();
                async move { log.mark() }
            }
        })
        .initial_delay(Duration::ZERO)
        .start();
    tokio::time::sleep(ms(250)).await;
    assert_eq!(log.get(), [0, 100, 200]);
    task.cancel();
    now.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_failed_or_panicking_run_is_reported_and_the_schedule_goes_on() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let task = timer
        .schedule_every(ms(100), {
            let log = log.clone();
            let mut n = 0;
            move || {
                n += 1;
                let log = log.clone();
                // Run 4 panics before it even makes a future.
                if n == 4 {
                    panic!("closure bug");
                }
                async move {
                    log.mark();
                    match n {
                        2 => Err(std::io::Error::other("peer refused")),
                        3 => panic!("run three exploded"),
                        _ => Ok(()),
                    }
                }
            }
        })
        .on_error({
            let reports = reports.clone();
            move |err| {
                let what = if err.is_panic() {
                    format!("panic: {}", err.panic_message().unwrap_or("?"))
                } else {
                    let io = err.error().unwrap().downcast_ref::<std::io::Error>();
                    format!("error: {}", io.unwrap())
                };
                reports.lock().unwrap().push((err.run(), what));
            }
        })
        .start();
    tokio::time::sleep(ms(650)).await;
    // Run 4 never reached `log.mark()`.
    assert_eq!(log.get(), [100, 200, 300, 500, 600]);
    assert_eq!(
        *reports.lock().unwrap(),
        [
            (2, "error: peer refused".to_string()),
            (3, "panic: run three exploded".to_string()),
            (4, "panic: closure bug".to_string()),
        ]
    );
    assert_eq!(task.runs(), 6);
    assert_eq!(task.failures(), 3);
    assert!(!task.is_cancelled());
    assert!(task.cancel());
}

#[tokio::test(start_paused = true)]
async fn a_panicking_hook_does_not_stop_the_schedule() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let task = timer
        .schedule_every(ms(10), || async { Err::<(), _>("no") })
        .on_error(|_| panic!("hook bug"))
        .start();
    tokio::time::sleep(ms(55)).await;
    assert_eq!(task.runs(), 5);
    assert_eq!(task.failures(), 5);
    task.cancel();
}

#[tokio::test(start_paused = true)]
async fn runs_never_overlap_and_the_next_is_timed_from_the_end() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let task = timer
        .schedule_every(ms(100), {
            let (log, timer) = (log.clone(), timer.clone());
            let (running, most) = (running.clone(), most.clone());
            move || {
                let (log, timer) = (log.clone(), timer.clone());
                let (running, most) = (running.clone(), most.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    log.mark();
                    timer.sleep(ms(250)).await; // longer than the period
                    log.mark();
                    running.fetch_sub(1, Ordering::SeqCst);
                }
            }
        })
        .start();
    tokio::time::sleep(ms(1200)).await;
    // start, end pairs: 100-350, 450-700, 800-1050, 1150-...
    assert_eq!(log.get(), [100, 350, 450, 700, 800, 1050, 1150]);
    assert_eq!(most.load(Ordering::SeqCst), 1, "two runs overlapped");
    assert_eq!(task.runs(), 3);
    task.cancel();
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_schedule_and_lets_a_run_in_progress_finish() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let task = timer
        .schedule_every(ms(100), {
            let (log, timer) = (log.clone(), timer.clone());
            move || {
                let (log, timer) = (log.clone(), timer.clone());
                async move {
                    log.mark();
                    timer.sleep(ms(30)).await;
                    log.mark();
                }
            }
        })
        .start();
    tokio::time::sleep(ms(250)).await; // runs at 100-130 and 230-260
    assert!(task.cancel(), "cancel during a run");
    assert!(task.is_cancelled());
    assert!(!task.cancel());
    tokio::time::sleep(ms(1000)).await;
    assert_eq!(
        log.get(),
        [100, 130, 230, 260],
        "no run may start after cancel"
    );
    assert_eq!(task.runs(), 2);
    assert_eq!(timer.pending(), 0, "the loop ended and left the wheel");

    // Cancelling while waiting ends the loop at once.
    let log = Log::new();
    let idle = timer
        .schedule_every(ms(100), {
            let log = log.clone();
            move || {
                let log = log.clone();
                async move { log.mark() }
            }
        })
        .start();
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(timer.pending(), 1);
    assert!(idle.cancel());
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(timer.pending(), 0);
    tokio::time::sleep(ms(500)).await;
    assert_eq!(log.get(), Vec::<u128>::new());
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_schedule() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let task = timer
        .schedule_every(ms(100), {
            let log = log.clone();
            move || {
                let log = log.clone();
                async move { log.mark() }
            }
        })
        .start();
    tokio::time::sleep(ms(250)).await;
    timer.shutdown();
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert!(task.is_cancelled());
    assert!(!task.cancel());
    tokio::time::sleep(ms(1000)).await;
    assert_eq!(log.get(), [100, 200]);

    // Started on a stopped timer: refused loudly, like a sleep.
    let never = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        timer
            .schedule_every(ms(10), || async { panic!("ran after shutdown") as () })
            .initial_delay(Duration::ZERO)
            .start();
    }));
    assert!(never.is_err(), "starting on a stopped timer must panic");
}

#[tokio::test(start_paused = true)]
async fn zero_period_is_raised_to_the_tick() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let task = timer.schedule_every(Duration::ZERO, || async {}).start();
    assert_eq!(task.period(), ms(1));
    tokio::time::sleep(ms(10) + Duration::from_micros(500)).await;
    assert_eq!(task.runs(), 10);
    task.cancel();
}

// ----- schedule_every: periods too long for the clock -----------------------

const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// The shortest duration that `Instant::now()` cannot be moved by: a period
/// that is not `Duration::MAX` yet overflows once added to now.
fn first_overflow() -> Duration {
    let now = Instant::now();
    let at = |n: u128| Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32);
    // `lo` fits, `hi` overflows.
    let (mut lo, mut hi) = (0u128, Duration::MAX.as_nanos());
    assert!(now.checked_add(Duration::MAX).is_none());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if now.checked_add(at(mid)).is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi)
}

/// A period no `Instant` can hold: one run at once, then never again, and
/// the schedule leaves the paused clock free to auto-advance.
async fn runs_once_then_never(period: Duration) {
    let timer = fine_timer();
    let start = Instant::now();
    let task = timer
        .schedule_every(period, || async {})
        .initial_delay(Duration::ZERO)
        .start();
    // The clock stands still: a loop that reset to a passed deadline would
    // run back to back here.
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    assert_eq!(task.runs(), 1, "runs with the clock standing still");
    // Auto-advance still works (a busy loop would keep the runtime from ever
    // going idle, and this sleep would never end).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(Instant::now(), start + Duration::from_secs(1));
    assert_eq!(task.runs(), 1);
    // Past tokio's 30-year "far future" too: a period beyond the clock means
    // never, as it does for `timer.sleep(period)`.
    for _ in 0..3 {
        tokio::time::advance(40 * YEAR).await;
        tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    }
    assert_eq!(task.runs(), 1, "ran again after 120 years");
    assert_eq!(task.failures(), 0);
    assert!(!task.is_cancelled());
    assert_eq!(timer.pending(), 1, "still waiting, so shutdown reaches it");
    timer.shutdown();
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert!(task.is_cancelled());
    assert_eq!(task.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn every_with_duration_max_runs_once_then_never() {
    let _watchdog = common::Watchdog::start();
    runs_once_then_never(Duration::MAX).await;
}

#[tokio::test(start_paused = true)]
async fn every_with_a_period_that_overflows_only_from_now_runs_once_then_never() {
    let _watchdog = common::Watchdog::start();
    let period = first_overflow();
    assert!(period < Duration::MAX);
    runs_once_then_never(period).await;
}

// ----- every way user code can panic -----------------------------------------
//
// "A panicking run is reported and the schedule goes on" must hold however
// user code panics. Nothing here may panic while unwinding (that aborts), so
// the futures that panic in `poll` and again when dropped are hand-written:
// an `async` block would drop its locals during the unwind.

/// Panics with its message when dropped (as a value, an output, an error or
/// a panic payload).
struct Bomb(&'static str);

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("{}", self.0);
    }
}

/// A future that is ready at once (or panics in `poll`) and panics when
/// dropped, counting its drops first.
struct DropBomb {
    poll_panics: bool,
    drops: Arc<AtomicUsize>,
}

impl DropBomb {
    fn new(poll_panics: bool, drops: &Arc<AtomicUsize>) -> Self {
        DropBomb {
            poll_panics,
            drops: drops.clone(),
        }
    }
}

impl std::future::Future for DropBomb {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        if self.poll_panics {
            panic!("poll panic");
        }
        Poll::Ready(())
    }
}

impl Drop for DropBomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        panic!("future drop");
    }
}

/// An error that panics when dropped.
#[derive(Debug)]
struct BombError;

impl std::fmt::Display for BombError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bomb error")
    }
}

impl std::error::Error for BombError {}

impl Drop for BombError {
    fn drop(&mut self) {
        panic!("error drop");
    }
}

/// What the `on_error` hook does with each failed run.
#[derive(Debug, Clone, Copy)]
enum Hook {
    /// No hook: the loop drops each `RunError` itself.
    None,
    /// Records the report, then drops the `RunError`.
    Record,
    /// Records the report, drops the `RunError`, then panics with a payload
    /// that panics when dropped.
    RecordThenPanicWithBomb,
}

const HOOKS: [Hook; 2] = [Hook::None, Hook::Record];

/// Starts `task` every 10 ms with `hook`, lets it run five times (10 to
/// 50 ms), and returns the handle and the hook's reports, as `RunError`
/// displays them.
async fn five_runs<F, Fut>(hook: Hook, task: F) -> (PeriodicTask, Vec<String>)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: RunOutcome,
{
    let timer = fine_timer();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let record = {
        let reports = reports.clone();
        move |err: RunError| {
            let line = err.to_string();
            reports.lock().unwrap().push(line);
            drop(err);
        }
    };
    let every = timer.schedule_every(ms(10), task);
    let every = match hook {
        Hook::None => every,
        Hook::Record => every.on_error(record),
        Hook::RecordThenPanicWithBomb => every.on_error(move |err| {
            record(err);
            std::panic::panic_any(Bomb("hook payload drop"));
        }),
    };
    let task = every.start();
    tokio::time::sleep(ms(55)).await;
    let reports = reports.lock().unwrap().clone();
    (task, reports)
}

/// Five runs, all failed, all reported as `report(run)` (none without a
/// hook), and the schedule still going.
fn assert_five_failures(hook: Hook, task: &PeriodicTask, reports: &[String], report: &str) {
    assert_eq!(
        (task.runs(), task.failures(), task.is_cancelled()),
        (5, 5, false),
        "runs, failures, cancelled with {hook:?}"
    );
    let expected: Vec<String> = match hook {
        Hook::None => Vec::new(),
        _ => (1..=5).map(|n| format!("run {n} {report}")).collect(),
    };
    assert_eq!(reports, expected, "on_error calls with {hook:?}");
    assert!(task.cancel(), "the schedule was still active");
}

#[tokio::test(start_paused = true)]
async fn a_future_that_panics_when_dropped_after_completing_is_a_failed_run() {
    let _watchdog = common::Watchdog::start();
    for hook in HOOKS {
        let drops = Arc::new(AtomicUsize::new(0));
        let (task, reports) = five_runs(hook, {
            let drops = drops.clone();
            move || DropBomb::new(false, &drops)
        })
        .await;
        assert_five_failures(hook, &task, &reports, "panicked: future drop");
        assert_eq!(drops.load(Ordering::SeqCst), 5);
    }
}

#[tokio::test(start_paused = true)]
async fn a_future_that_panics_in_poll_and_when_dropped_reports_the_first_panic() {
    let _watchdog = common::Watchdog::start();
    for hook in HOOKS {
        let drops = Arc::new(AtomicUsize::new(0));
        let (task, reports) = five_runs(hook, {
            let drops = drops.clone();
            move || DropBomb::new(true, &drops)
        })
        .await;
        assert_five_failures(hook, &task, &reports, "panicked: poll panic");
        assert_eq!(drops.load(Ordering::SeqCst), 5);
    }
}

/// Returns `Ok` with a value that panics when dropped.
struct RefusesToConvert;

impl RunOutcome for RefusesToConvert {
    fn into_result(self) -> Result<(), Box<dyn std::error::Error + Send + Sync + 'static>> {
        panic!("into_result panic");
    }
}

#[tokio::test(start_paused = true)]
async fn an_output_that_panics_when_dropped_or_converted_is_a_failed_run() {
    let _watchdog = common::Watchdog::start();
    for hook in HOOKS {
        let (task, reports) =
            five_runs(hook, || async { Ok::<_, String>(Bomb("output drop")) }).await;
        assert_five_failures(hook, &task, &reports, "panicked: output drop");

        let (task, reports) = five_runs(hook, || async { RefusesToConvert }).await;
        assert_five_failures(hook, &task, &reports, "panicked: into_result panic");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_payload_that_panics_when_dropped_is_a_failed_run() {
    let _watchdog = common::Watchdog::start();
    for hook in HOOKS {
        // From the future's poll...
        let (task, reports) = five_runs(hook, || async {
            if true {
                std::panic::panic_any(Bomb("payload drop"));
            }
        })
        .await;
        assert_five_failures(hook, &task, &reports, "panicked");

        // ...and from the task closure, before there is a future.
        let (task, reports) = five_runs(hook, || {
            if true {
                std::panic::panic_any(Bomb("payload drop"));
            }
            async {}
        })
        .await;
        assert_five_failures(hook, &task, &reports, "panicked");
    }
}

#[tokio::test(start_paused = true)]
async fn an_error_that_panics_when_dropped_is_a_failed_run() {
    let _watchdog = common::Watchdog::start();
    // With a hook, the `RunError` is dropped inside it; without one, by the
    // loop.
    for hook in HOOKS {
        let (task, reports) = five_runs(hook, || async { Err::<(), _>(BombError) }).await;
        assert_five_failures(hook, &task, &reports, "failed: bomb error");
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_panicking_with_a_payload_that_panics_when_dropped_does_not_stop_the_schedule() {
    let _watchdog = common::Watchdog::start();
    let hook = Hook::RecordThenPanicWithBomb;
    let (task, reports) = five_runs(hook, || async { Err::<(), _>("refused") }).await;
    assert_five_failures(hook, &task, &reports, "failed: refused");
}

/// A one-shot future that panics when dropped (after completing, after
/// panicking in `poll`, or unrun after a cancel), whose output panics when
/// dropped, or whose panic payload panics when dropped, ends only its own task, as with `tokio::spawn`: the
/// timer, its driver and every other task go on.
#[tokio::test(start_paused = true)]
async fn a_scheduled_future_that_panics_when_dropped_ends_only_its_own_task() {
    let _watchdog = common::Watchdog::start();
    let timer = fine_timer();
    let log = Log::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let heartbeat = timer.schedule_every(ms(10), || async {}).start();
    let completes = timer.schedule(ms(10), DropBomb::new(false, &drops));
    let poll_panics = timer.schedule(ms(20), DropBomb::new(true, &drops));
    let bad_payload = timer.schedule(ms(30), async {
        if true {
            std::panic::panic_any(Bomb("payload drop"));
        }
    });
    let bad_output = timer.schedule(ms(35), async { Bomb("output drop") });
    let cancelled = timer.schedule(ms(40), DropBomb::new(false, &drops));
    let _later = timer.schedule(ms(50), {
        let log = log.clone();
        async move { log.mark() }
    });
    tokio::time::sleep(ms(5)).await;
    assert!(cancelled.cancel());
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped unrun at once");

    tokio::time::sleep(ms(50)).await;
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    for task in [&completes, &poll_panics, &bad_payload, &bad_output] {
        assert!(task.is_expired() && !task.is_cancelled());
    }
    assert!(cancelled.is_cancelled() && !cancelled.is_expired());
    assert_eq!(log.get(), [50], "a later task ran on time");
    assert_eq!(heartbeat.runs(), 5);
    assert_eq!(heartbeat.failures(), 0);
    assert!(!timer.is_shutdown());
    assert_eq!(timer.stats().wake_panics, 0);
    let start = Instant::now();
    timer.sleep(ms(7)).await;
    assert_eq!(start.elapsed(), ms(7));
    assert!(heartbeat.cancel());
    tokio::task::yield_now().await; // the woken task runs, as after tokio::spawn
    assert_eq!(timer.pending(), 0);
}
