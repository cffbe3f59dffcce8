//! Heartbeats and idle connections, as Dubbo does them: every client pings
//! the server once a period, and the server closes a connection after three
//! heartbeats in a row are missed.
//!
//! Three simulated clients talk to one server over tokio channels. Each client
//! pings with `Timer::schedule_every`; the server checks each connection with
//! a `Timer::interval`, half a period out of phase with the pings so that a
//! check never races a ping. At 12 s client `c2` hangs (its heartbeat task is
//! cancelled but its connection stays open): the server counts three missed
//! heartbeats and closes it. When `c2` recovers it resumes its heartbeat; the
//! first ping fails on the closed connection, and the schedule's `on_error`
//! hook reports it. `c1` and `c3` stay connected throughout.
//!
//! Periods are Dubbo's shape scaled down (Dubbo pings every 60 s and closes
//! after 180 s; here 5 s and 15 s) and the whole thing runs on tokio's paused clock, so 42 simulated
//! seconds take a few milliseconds and the output is the same on every run.
//! It exits with status 1 if the wrong connections were closed.
//!
//! ```text
//! cargo run --example heartbeat
//! ```

use std::process;
use std::time::Duration;

use tickwheel::{MissedTickBehavior, Timer};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How often clients ping.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// Missed heartbeats in a row after which the server closes a connection.
const MAX_MISSED: u32 = 3;
/// When `c2` hangs.
const HANG_AT: Duration = Duration::from_secs(12);
/// How long the simulation runs.
const RUN_FOR: Duration = Duration::from_secs(42);

/// Seconds since the simulation started, for the log lines.
fn t(start: Instant) -> f64 {
    (Instant::now() - start).as_secs_f64()
}

/// The server side of one connection: count checks without a ping, close
/// after `MAX_MISSED`. Returns the connection's name if it was closed.
async fn serve(
    timer: Timer,
    start: Instant,
    name: &'static str,
    mut pings: mpsc::Receiver<()>,
    closed: oneshot::Sender<()>,
) -> Option<&'static str> {
    let mut check = timer.interval_at(Instant::now() + HEARTBEAT + HEARTBEAT / 2, HEARTBEAT);
    // After a stall, check once rather than counting several misses at once.
    check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pinged = false;
    let mut missed = 0;
    loop {
        tokio::select! {
            ping = pings.recv() => match ping {
                Some(()) => pinged = true,
                None => return None, // the client went away
            },
            _ = check.tick() => {
                if pinged {
                    missed = 0;
                } else {
                    missed += 1;
                    println!("[{:5.1}s] server: {name} missed heartbeat {missed}/{MAX_MISSED}", t(start));
                    if missed == MAX_MISSED {
                        println!("[{:5.1}s] server: closing {name}, idle too long", t(start));
                        drop(pings); // pings now fail on the client side
                        let _ = closed.send(());
                        return Some(name);
                    }
                }
                pinged = false;
            }
        }
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut servers = Vec::new();
    let mut clients = Vec::new();

    for name in ["c1", "c2", "c3"] {
        let (ping_tx, ping_rx) = mpsc::channel::<()>(8);
        let (closed_tx, closed_rx) = oneshot::channel::<()>();
        servers.push(tokio::spawn(serve(
            timer.clone(),
            start,
            name,
            ping_rx,
            closed_tx,
        )));

        let ping = ping_tx.clone(); // for c2's ping after it recovers
        let heartbeat = timer
            .schedule_every(HEARTBEAT, move || {
                let ping_tx = ping_tx.clone();
                async move {
                    ping_tx
                        .send(())
                        .await
                        .map_err(|_| "connection closed by the server")
                }
            })
            .on_error(move |err| println!("[{:5.1}s] {name}: heartbeat failed: {err}", t(start)))
            .start();
        println!(
            "[{:5.1}s] {name}: connected, pinging every {HEARTBEAT:?}",
            t(start)
        );

        let timer = timer.clone();
        clients.push(tokio::spawn(async move {
            if name == "c2" {
                timer.sleep(HANG_AT).await;
                println!("[{:5.1}s] {name}: hangs (stops pinging)", t(start));
                heartbeat.cancel();
                // Still hung when the server closes; then it wakes up and pings.
                let _ = closed_rx.await;
                timer.sleep(Duration::from_secs(2)).await;
                println!("[{:5.1}s] {name}: recovers and pings again", t(start));
                let resumed = timer
                    .schedule_every(HEARTBEAT, move || {
                        let ping = ping.clone();
                        async move {
                            ping.send(())
                                .await
                                .map_err(|_| "connection closed by the server")
                        }
                    })
                    .initial_delay(Duration::ZERO)
                    .on_error(move |err| {
                        println!("[{:5.1}s] {name}: heartbeat failed: {err}", t(start))
                    })
                    .start();
                timer.sleep(Duration::from_secs(1)).await;
                resumed.cancel();
                println!("[{:5.1}s] {name}: gives up; it must reconnect", t(start));
                (name, heartbeat.runs())
            } else {
                drop(ping);
                timer.sleep(RUN_FOR).await;
                heartbeat.cancel();
                (name, heartbeat.runs())
            }
        }));
    }

    let mut pings = Vec::new();
    for client in clients {
        pings.push(client.await.expect("client task"));
    }
    // The healthy clients hang up; their server sides then end.
    let mut closed = Vec::new();
    for server in servers {
        if let Some(name) = server.await.expect("server task") {
            closed.push(name);
        }
    }

    println!();
    for (name, runs) in &pings {
        println!("{name}: sent {runs} heartbeats");
    }
    println!("connections closed by the server: {closed:?}");
    let ok = closed == ["c2"] && timer.pending() == 0;
    println!(
        "{}: only the client that stopped pinging was closed, and no timer is left",
        if ok { "OK" } else { "FAILED" }
    );
    if !ok {
        process::exit(1);
    }
}
