//! Dubbo's failback invoker (from the seed article on Netty's
//! `HashedWheelTimer`): when a call to a provider fails, the caller gets an
//! empty result at once, and the call is retried in the background, first
//! after 5 s, then every 3 s, at most 5 times, logging each attempt. It suits
//! fire-and-forget work such as message notifications.
//!
//! Here `timer.schedule` starts the background work after 5 s and
//! `timer.retry` with a constant 3 s backoff does the rest. Two notifications
//! are sent: one provider recovers on the third retry, the other never does.
//! The runtime runs on tokio's paused clock, so the 17 simulated seconds take
//! milliseconds and the times printed are exact.
//!
//! Run: `cargo run --example failback_retry`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickwheel::retry::Backoff;
use tickwheel::Timer;
use tokio::time::Instant;

/// A provider that fails its first `failures` calls.
struct Provider {
    name: &'static str,
    failures: usize,
    calls: AtomicUsize,
}

impl Provider {
    async fn notify(&self, message: &str) -> Result<(), String> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call <= self.failures {
            Err(format!("{} refused {message:?} (call {call})", self.name))
        } else {
            Ok(())
        }
    }
}

/// What happened to one background retry: the seconds of each call, and
/// whether it got through.
#[derive(Debug, Default)]
struct Outcome {
    call_times: Vec<u64>,
    delivered: Option<bool>,
}

async fn invoke(
    timer: &Timer,
    start: Instant,
    provider: Arc<Provider>,
    message: &'static str,
) -> Arc<Mutex<Outcome>> {
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    if call(&provider, message, start, &outcome).await.is_ok() {
        return outcome;
    }
    println!(
        "[{:>2}s] {message}: call failed, empty result returned; background retry in 5 s",
        start.elapsed().as_secs()
    );
    let background = outcome.clone();
    let retrier = timer.clone();
    timer.schedule(Duration::from_secs(5), async move {
        let attempt = || call(&provider, message, start, &background);
        // Dubbo's RetryTimerTask(task, tick = 3 s, retries = 5): the first
        // background retry at 5 s, then every 3 s, 5 runs in all.
        let result = retrier
            .retry(
                Backoff::constant(Duration::from_secs(3)).max_attempts(5),
                attempt,
            )
            .notify(move |err: &String, next: Duration| {
                println!(
                    "[{:>2}s] {err}; retrying in {} s",
                    start.elapsed().as_secs(),
                    next.as_secs()
                );
            })
            .await;
        let delivered = result.is_ok();
        match result {
            Ok(()) => println!("[{:>2}s] {message}: delivered", start.elapsed().as_secs()),
            Err(err) => println!(
                "[{:>2}s] {err}; gave up after 5 retries",
                start.elapsed().as_secs()
            ),
        }
        background.lock().unwrap().delivered = Some(delivered);
    });
    outcome
}

async fn call(
    provider: &Provider,
    message: &str,
    start: Instant,
    outcome: &Mutex<Outcome>,
) -> Result<(), String> {
    outcome
        .lock()
        .unwrap()
        .call_times
        .push(start.elapsed().as_secs());
    provider.notify(message).await
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let ok = runtime.block_on(async {
        let timer = Timer::new();
        let start = Instant::now();
        let recovers = Arc::new(Provider {
            name: "provider-a",
            failures: 3, // the first call and two retries fail
            calls: AtomicUsize::new(0),
        });
        let broken = Arc::new(Provider {
            name: "provider-b",
            failures: usize::MAX,
            calls: AtomicUsize::new(0),
        });
        let a = invoke(&timer, start, recovers, "order-created").await;
        let b = invoke(&timer, start, broken, "stock-changed").await;
        tokio::time::sleep(Duration::from_secs(30)).await;

        let a = a.lock().unwrap();
        let b = b.lock().unwrap();
        println!();
        println!(
            "order-created: calls at {:?} s, delivered: {:?}",
            a.call_times, a.delivered
        );
        println!(
            "stock-changed: calls at {:?} s, delivered: {:?}",
            b.call_times, b.delivered
        );
        println!("timer: {:?}", timer.stats());
        a.call_times == [0, 5, 8, 11]
            && a.delivered == Some(true)
            && b.call_times == [0, 5, 8, 11, 14, 17]
            && b.delivered == Some(false)
            && timer.pending() == 0
    });
    if !ok {
        eprintln!(
            "failback_retry: the retries did not follow 5 s, then every 3 s, at most 5 times"
        );
        std::process::exit(1);
    }
}
