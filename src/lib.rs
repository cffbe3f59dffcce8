//! tickwheel (docs written below)
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![forbid(unsafe_code)]

mod builder;
mod clock;
mod driver;
mod error;
mod shard;
mod shared;
mod sleep;
mod stats;
mod timeout;
mod timer;
mod wheel;

pub use crate::builder::Builder;
pub use crate::error::{BuildError, Elapsed, Error};
pub use crate::sleep::Sleep;
pub use crate::stats::{Lateness, Stats};
pub use crate::timeout::Timeout;
pub use crate::timer::Timer;
