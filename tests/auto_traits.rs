//! The auto traits (`Send`, `Sync`, `Unpin`, `UnwindSafe`, `RefUnwindSafe`)
//! of every public type, checked at compile time, each beside its
//! counterpart in tokio, tokio-util, tokio-stream, tower, tower-http or
//! hyper-util where it has one.
//!
//! Auto traits are part of the public API: a type that stops being `Send`
//! or `UnwindSafe` breaks its users' code (a `Timer` held across
//! `catch_unwind`, a future spawned on another thread) without any change
//! to a signature. Nothing else would notice: round 4 made `Timer`, and
//! everything holding one, lose `UnwindSafe` and `RefUnwindSafe` through an
//! internal `Box<dyn Fn(u64) + Send + Sync>`. So every row here states all
//! five traits, positively or negatively, and a change to any of them
//! stops this file from compiling: a lost trait fails `assert_impl!`, a
//! gained one `assert_not_impl!` (gaining one is harmless to users, but
//! then the row, and the comparison it documents, should be updated).
//!
//! Every tickwheel type has what tickwheel 0.1.0 had (checked by compiling
//! this file against 0.1.0; `HyperTimer` is newer and has no baseline), and
//! at least what its counterpart has: where it has more (tokio's timer
//! futures are `!Unpin` and not unwind safe; tickwheel's are `Unpin` and
//! unwind safe), the row's comment says why. Counterparts that are dependencies (tokio,
//! tower, hyper-util) are asserted too, so a dependency upgrade that
//! changes one shows up here; those that are not (tokio-util,
//! tokio-stream, tower-http) are written in comments, as checked against
//! the versions named there.
//!
//! Generic types are checked with parameters that have all five traits
//! (`std::future::Ready<()>`, a unit service, an empty stream), and again
//! with `NoAutoTraits`, which has none, to show that a parameter's traits
//! pass through as they do in the counterpart.

use std::cell::Cell;
use std::future::{Future, Ready};
use std::marker::{PhantomData, PhantomPinned};
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Fails to compile unless `$t` implements every listed trait.
macro_rules! assert_impl {
    ($t:ty: $($tr:path),+) => {
        const _: fn() = || {
            fn implements<T: ?Sized $(+ $tr)+>() {}
            implements::<$t>();
        };
    };
}

/// Fails to compile if `$t` implements any listed trait: when it does, both
/// impls of `AmbiguousIfImpl` apply, and `_` cannot be inferred (E0283).
macro_rules! assert_not_impl {
    ($t:ty: $($tr:path),+) => {
        $(
            const _: fn() = || {
                struct Invalid;
                trait AmbiguousIfImpl<A> {
                    fn some_item() {}
                }
                impl<T: ?Sized> AmbiguousIfImpl<()> for T {}
                impl<T: ?Sized + $tr> AmbiguousIfImpl<Invalid> for T {}
                let _ = <$t as AmbiguousIfImpl<_>>::some_item;
            };
        )+
    };
}

/// One row of the table: `$t` and all five auto traits in this order, each
/// as `Trait` (asserted with `assert_impl!`) or `!Trait` (with
/// `assert_not_impl!`). A row that leaves one out, or swaps two, does not
/// compile either.
macro_rules! auto_traits {
    ($t:ty: $($spec:tt)+) => {
        auto_traits!(@send $t; $($spec)+);
    };
    (@send $t:ty; Send + $($rest:tt)+) => {
        assert_impl!($t: Send);
        auto_traits!(@sync $t; $($rest)+);
    };
    (@send $t:ty; !Send + $($rest:tt)+) => {
        assert_not_impl!($t: Send);
        auto_traits!(@sync $t; $($rest)+);
    };
    (@sync $t:ty; Sync + $($rest:tt)+) => {
        assert_impl!($t: Sync);
        auto_traits!(@unpin $t; $($rest)+);
    };
    (@sync $t:ty; !Sync + $($rest:tt)+) => {
        assert_not_impl!($t: Sync);
        auto_traits!(@unpin $t; $($rest)+);
    };
    (@unpin $t:ty; Unpin + $($rest:tt)+) => {
        assert_impl!($t: Unpin);
        auto_traits!(@unwind $t; $($rest)+);
    };
    (@unpin $t:ty; !Unpin + $($rest:tt)+) => {
        assert_not_impl!($t: Unpin);
        auto_traits!(@unwind $t; $($rest)+);
    };
    (@unwind $t:ty; UnwindSafe + $($rest:tt)+) => {
        assert_impl!($t: UnwindSafe);
        auto_traits!(@ref $t; $($rest)+);
    };
    (@unwind $t:ty; !UnwindSafe + $($rest:tt)+) => {
        assert_not_impl!($t: UnwindSafe);
        auto_traits!(@ref $t; $($rest)+);
    };
    (@ref $t:ty; RefUnwindSafe) => {
        assert_impl!($t: RefUnwindSafe);
    };
    (@ref $t:ty; !RefUnwindSafe) => {
        assert_not_impl!($t: RefUnwindSafe);
    };
}

/// A future with none of the five auto traits, to check that a generic
/// type passes its parameter's traits through.
struct NoAutoTraits {
    // *const: !Send, !Sync; Cell: !RefUnwindSafe; &mut: !UnwindSafe.
    _not: PhantomData<(*const (), Cell<()>, &'static mut ())>,
    _pinned: PhantomPinned,
}

impl Future for NoAutoTraits {
    type Output = Result<(), ()>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Pending
    }
}

auto_traits!(NoAutoTraits: !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe);

// Parameters with all five auto traits.
type Fut = Ready<()>;
type TryFut = Ready<Result<(), ()>>;
type St = futures::stream::Empty<()>;

// Counterparts are checked against tokio 1.54.1, tokio-util 0.7.20,
// tokio-stream 0.1.19, tower 0.5.3, tower-http 0.6.11 and hyper-util 0.1.21
// (the versions in Cargo.lock), with rustc 1.95.0.

/// The timer, its builder and errors, and `tickwheel::time`.
mod time {
    use super::*;

    // A cheap handle to a running timer, as tokio's runtime Handle is to a
    // runtime: both have all five.
    auto_traits!(tickwheel::Timer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::runtime::Handle: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // tokio's runtime Builder holds its hooks as `Arc<dyn Fn() + Send +
    // Sync>`, which are not unwind safe; tickwheel's holds only settings and
    // an optional runtime Handle.
    auto_traits!(tickwheel::Builder: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::runtime::Builder: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);

    // tokio's Sleep is its timer entry, an intrusive list node that must
    // not move (`!Unpin`), and holds tokio's internal scheduler handle,
    // whose task hooks are `Arc<dyn Fn(..) + Send + Sync>` (the public
    // runtime Handle implements the unwind traits by hand; the internal one
    // does not): so it is not unwind safe, nor are tokio's Timeout (which
    // holds one pinned) and Interval (which boxes one: `Unpin`). That is
    // incidental, not a contract. tickwheel's Sleep is a shard `Arc`, a key
    // and a deadline, its entry living in the shard's slab: it has all
    // five, and so do its Timeout and Interval. More is compatible: every
    // use of tokio's compiles with tickwheel's (`Box::pin`, `tokio::pin!`,
    // `Pin<&mut>`), and tickwheel's can also be polled unpinned.
    // (The crate root's Sleep, Timeout and Interval are these same types.)
    auto_traits!(tickwheel::time::Sleep: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::time::Timeout<Fut>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::time::Interval: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::time::Sleep: Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe);
    auto_traits!(tokio::time::Timeout<Fut>: Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe);
    auto_traits!(tokio::time::Interval: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);

    auto_traits!(
        tickwheel::time::MissedTickBehavior:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    auto_traits!(tokio::time::MissedTickBehavior: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    auto_traits!(tickwheel::time::error::Elapsed: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::time::error::Elapsed: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::time::error::Error: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::time::error::Error: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    auto_traits!(tickwheel::TryCurrentError: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::runtime::TryCurrentError: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // No counterpart: tokio's runtime Builder::build fails with io::Error.
    auto_traits!(tickwheel::BuildError: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // Re-exports of tokio's Instant and std's Duration.
    auto_traits!(tickwheel::time::Instant: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::time::Duration: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // tokio's Timeout is never Unpin (its Sleep is pinned); tickwheel's is
    // Unpin when its future is. Otherwise the future's traits pass through
    // both.
    auto_traits!(
        tickwheel::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tokio::time::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
}

/// `Timer::stats` and what it reports: plain data, no counterpart.
mod stats {
    use super::*;

    auto_traits!(tickwheel::Stats: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::Lateness: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::LatenessHistogram: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::LatenessBucket: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
}

/// `Timer::schedule` and `Timer::schedule_every`.
mod schedule {
    use super::*;

    // Handles that cancel a spawned task, as tokio's AbortHandle (and
    // JoinHandle) do.
    auto_traits!(tickwheel::ScheduledTask: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::PeriodicTask: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::task::AbortHandle: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tokio::task::JoinHandle<()>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // A failed run's error or a panicked run's payload, as tokio's
    // JoinError carries a panic's: both are boxed `dyn` values (BoxError,
    // `Box<dyn Any + Send>`), so neither error is unwind safe.
    auto_traits!(tickwheel::RunError: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);
    auto_traits!(tokio::task::JoinError: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);

    // No counterpart. The builder `start` consumes holds the task closure
    // and the `on_error` hook, a `Box<dyn FnMut(RunError) + Send>`: `Send`
    // is what moving it to the spawned task needs, and asking the hook for
    // `Sync` or unwind safety would refuse closures for nothing (0.1.0 is
    // the same).
    auto_traits!(
        tickwheel::ScheduleEvery<fn() -> Fut>:
        Send + !Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tickwheel::ScheduleEvery<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
}

/// `Timer::retry` and its settings. No counterpart in tokio; the tower
/// section compares `Backoff` with tower's exponential backoff.
mod retry {
    use super::*;
    use tickwheel::retry::Delays;

    auto_traits!(
        tickwheel::Retry<Delays, fn() -> TryFut, TryFut>:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    // The attempt is pinned, the backoff iterator is not.
    auto_traits!(
        tickwheel::Retry<Delays, fn() -> NoAutoTraits, NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tickwheel::Retry<NoAutoTraits, fn() -> TryFut, TryFut>:
        !Send + !Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    );

    auto_traits!(tickwheel::retry::Backoff: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::retry::Delays: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::retry::Jitter: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::retry::Always: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::retry::Quiet: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(tickwheel::retry::NoOverride: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
}

/// `tickwheel::delay_queue`, against tokio-util's `time::DelayQueue`
/// (tokio-util 0.7.20 is not a dependency: its rows are comments).
mod delay_queue {
    use super::*;

    // tokio_util::time::DelayQueue<()>: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    // tokio-util's holds its one timer as a boxed tokio Sleep, not unwind
    // safe (see the time section); tickwheel's holds a wheel Sleep, and is.
    auto_traits!(tickwheel::DelayQueue<()>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    // tokio_util::time::DelayQueue<NoAutoTraits>:
    //     !Send + !Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(
        tickwheel::DelayQueue<NoAutoTraits>:
        !Send + !Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    );

    // tokio_util::time::delay_queue::Expired<()>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    auto_traits!(
        tickwheel::delay_queue::Expired<()>:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    // tokio_util::time::delay_queue::Expired<NoAutoTraits>:
    //     !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(
        tickwheel::delay_queue::Expired<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );

    // tokio_util::time::delay_queue::Key: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    auto_traits!(tickwheel::delay_queue::Key: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
}

/// `tickwheel::stream`, against tokio-stream's adapters (tokio-stream 0.1.19
/// is not a dependency: its rows are comments; its Throttle cannot be named,
/// so it was checked on a value from `StreamExt::throttle`).
mod stream {
    use super::*;

    // tokio-stream's adapters hold a tokio Sleep (Timeout and Throttle
    // pinned, TimeoutRepeating boxed in an Interval), hence `!Unpin` and
    // not unwind safe, as in the time section; tickwheel's hold a wheel
    // Sleep (TimeoutRepeating an Interval).
    // tokio_stream::adapters::Timeout<St>: Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(tickwheel::stream::Timeout<St>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    // tokio_stream::adapters::TimeoutRepeating<St>:
    //     Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(
        tickwheel::stream::TimeoutRepeating<St>:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    // tokio-stream's Throttle<St>: Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(tickwheel::stream::Throttle<St>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // The stream is pinned in all three, in both crates.
    auto_traits!(
        tickwheel::stream::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tickwheel::stream::TimeoutRepeating<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tickwheel::stream::Throttle<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
}

/// `tickwheel::tower`, against tower's `timeout` and `retry::backoff`.
#[cfg(feature = "tower")]
mod tower {
    use super::*;

    /// A service with all five auto traits.
    struct Svc;

    auto_traits!(tickwheel::tower::TimeoutLayer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(::tower::timeout::TimeoutLayer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    auto_traits!(tickwheel::tower::Timeout<Svc>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(::tower::timeout::Timeout<Svc>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(
        tickwheel::tower::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        ::tower::timeout::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );

    // tower's holds a pinned tokio Sleep, as tokio's Timeout does (see the
    // time section); tickwheel's a wheel Sleep.
    auto_traits!(
        tickwheel::tower::ResponseFuture<Fut>:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    auto_traits!(
        ::tower::timeout::future::ResponseFuture<Fut>:
        Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        tickwheel::tower::ResponseFuture<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        ::tower::timeout::future::ResponseFuture<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );

    // The same type: `Box<dyn Error + Send + Sync>`.
    auto_traits!(tickwheel::tower::BoxError: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);
    auto_traits!(::tower::BoxError: Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe);

    auto_traits!(tickwheel::tower::BackoffMaker: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(
        ::tower::retry::backoff::ExponentialBackoffMaker:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    auto_traits!(tickwheel::tower::WheelBackoff: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(
        ::tower::retry::backoff::ExponentialBackoff:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );

    // The backoff's wait, whose counterpart is tower's `Backoff::Future`
    // for ExponentialBackoff, tokio's Sleep. When the wheel refuses the
    // wait (at `max_pending`, or shut down) it falls back to a boxed tokio
    // Sleep, so it is not unwind safe either (0.1.0 is the same); boxed, it
    // is Unpin.
    auto_traits!(
        tickwheel::tower::BackoffSleep:
        Send + Sync + Unpin + !UnwindSafe + !RefUnwindSafe
    );
    auto_traits!(
        <::tower::retry::backoff::ExponentialBackoff as ::tower::retry::backoff::Backoff>::Future:
        Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
}

/// `tickwheel::http`, against tower-http's `timeout` (tower-http 0.6.11 is
/// not a dependency: its rows are comments; its ResponseFuture cannot be
/// named, so it was checked on a value from `Timeout::call`).
#[cfg(feature = "http")]
mod http {
    use super::*;

    /// A service with all five auto traits.
    struct Svc;

    // tower_http::timeout::TimeoutLayer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    auto_traits!(tickwheel::http::TimeoutLayer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);

    // tower_http::timeout::Timeout<Svc>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    auto_traits!(tickwheel::http::Timeout<Svc>: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    // tower_http::timeout::Timeout<NoAutoTraits>:
    //     !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(
        tickwheel::http::Timeout<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );

    // tower-http's holds a pinned tokio Sleep, as tokio's Timeout does (see
    // the time section); tickwheel's a wheel Sleep.
    // tower-http's ResponseFuture<Fut>: Send + Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    auto_traits!(
        tickwheel::http::ResponseFuture<Fut>:
        Send + Sync + Unpin + UnwindSafe + RefUnwindSafe
    );
    auto_traits!(
        tickwheel::http::ResponseFuture<NoAutoTraits>:
        !Send + !Sync + !Unpin + !UnwindSafe + !RefUnwindSafe
    );
}

/// `tickwheel::metrics`.
#[cfg(feature = "metrics")]
mod metrics {
    use super::*;

    // No counterpart.
    auto_traits!(tickwheel::metrics::Publisher: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    // The handle of the publishing task, as tokio's JoinHandle is (see the
    // schedule section).
    auto_traits!(tickwheel::metrics::MetricsTask: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
}

/// `HyperTimer`, against hyper-util's `TokioTimer`. Not in 0.1.0.
#[cfg(feature = "hyper")]
mod hyper {
    use super::*;

    auto_traits!(tickwheel::HyperTimer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
    auto_traits!(hyper_util::rt::TokioTimer: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe);
}
