//! The crate's `unsafe` code, all of it, each block with a `// SAFETY:`
//! comment; the rest of the crate is `deny(unsafe_code)`. Each piece is
//! here because a benchmark showed it pays (BENCHMARKS.md), and CI runs
//! its tests, and the tests that exercise it through real tokio tasks,
//! under valgrind's memcheck; the lock is under loom too.
//!
//! - [`lock`]: the lock around each shard's wheel, released with a store
//!   (W1, W2, W7: a timeout armed and cancelled).
//! - [`prefetch`]: the cache hints for a fired timer's task (W9) and for a
//!   bucket's next entries as it fires (W3).
//! - [`monotonic`]: the system's monotonic clock read directly, for a new
//!   sleep's deadline (W1, W2: a sleep made with a duration).
#![allow(unsafe_code)]

pub(crate) mod lock;
pub(crate) mod monotonic;
pub(crate) mod prefetch;
