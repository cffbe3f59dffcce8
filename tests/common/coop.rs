//! Futures that spend tokio's cooperative budget, for the tests that race
//! timers against them.

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
