//! The executor's side of a plan. For now: counting what a plan would delete, in SQL, without
//! loading rows or changing anything.

pub mod count;
pub mod steps;

pub use count::{CountError, Counts, count};
