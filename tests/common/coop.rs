//! Futures that spend tokio's cooperative budget, for the tests that race
//! timers against them.

use std::future::Future;

/// Spends the task's budget on every poll and never completes (a stream
/// over a fast socket, a loop on a ready channel).
pub async fn busy() {
    loop {
        tokio::task::coop::consume_budget().await;
    }
}

/// Spends what is left of the task's budget without yielding.
pub async fn spend_the_budget() {
    while tokio::task::coop::has_budget_remaining() {
        tokio::task::coop::consume_budget().await;
    }
}

/// Awaits `future` in a biased `select!` whose first arm, [`busy`], spends
/// the task's budget before every poll of `future`; returns its output.
pub async fn beside_a_busy_arm<F: Future>(future: F) -> F::Output {
    let busy = busy();
    tokio::pin!(busy, future);
    tokio::select! {
        biased;
        () = &mut busy => unreachable!("busy never completes"),
        output = &mut future => output,
    }
}
