//! The hooks a [`Retry`](crate::Retry) calls, as traits with a no-op default
//! each, so that `Retry` holds them by value: no `Box`, no `'static`, no
//! `Send` bound of its own. A hook may borrow from its caller and use types
//! that are not `Send` (on a `LocalSet`); a `Retry` is `Send` whenever its
//! operation, backoff and hooks are. Closures implement them, so users never
//! name these traits: `.when(|e| ..)`, `.notify(|e, d| ..)`,
//! `.retry_after(|e| ..)`.

use std::time::Duration;

/// Decides whether an error is retried ([`Retry::when`](crate::Retry::when)).
pub trait When<E> {
    /// `true` to retry after `error`.
    fn retry(&mut self, error: &E) -> bool;
}

/// Hears of each retry before its wait ([`Retry::notify`](crate::Retry::notify)).
pub trait Notify<E> {
    /// `error` is retried after `delay`.
    fn notify(&mut self, error: &E, delay: Duration);
}

/// Lets an error set the next wait ([`Retry::retry_after`](crate::Retry::retry_after)).
pub trait RetryAfter<E> {
    /// The wait `error` asks for, if any.
    fn retry_after(&mut self, error: &E) -> Option<Duration>;
}

impl<E, F: FnMut(&E) -> bool> When<E> for F {
    fn retry(&mut self, error: &E) -> bool {
        self(error)
    }
}

impl<E, F: FnMut(&E, Duration)> Notify<E> for F {
    fn notify(&mut self, error: &E, delay: Duration) {
        self(error, delay)
    }
}

impl<E, F: FnMut(&E) -> Option<Duration>> RetryAfter<E> for F {
    fn retry_after(&mut self, error: &E) -> Option<Duration> {
        self(error)
    }
}

/// The default [`When`]: every error is retried.
#[derive(Debug, Clone, Copy, Default)]
pub struct Always;

impl<E> When<E> for Always {
    fn retry(&mut self, _: &E) -> bool {
        true
    }
}

/// The default [`Notify`]: nothing is told.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl<E> Notify<E> for Quiet {
    fn notify(&mut self, _: &E, _: Duration) {}
}

/// The default [`RetryAfter`]: the backoff's delays are used as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOverride;

impl<E> RetryAfter<E> for NoOverride {
    fn retry_after(&mut self, _: &E) -> Option<Duration> {
        None
    }
}
