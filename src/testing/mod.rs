//! Support for berth's own tests: what unit tests across the crate share.

pub mod executor;
