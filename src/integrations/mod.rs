//! Trait implementations that let other crates' retry loops and servers use
//! a [`Timer`](crate::Timer), each behind the Cargo feature of the same name.
//!
//! These modules hold only trait impls (and `hyper`'s stateless
//! [`HyperTimer`] handle, which finds the current runtime's default timer at
//! each sleep): no timer state or logic of their own, so each one is a thin,
//! independently optional adapter over the public `Timer` and `Sleep` API.

#[cfg(feature = "backon")]
mod backon;
#[cfg(feature = "hyper")]
mod hyper;

#[cfg(feature = "hyper")]
pub use self::hyper::HyperTimer;
