//! Clean-up of data that already went wrong: detect first, read only; acting on it is a separate,
//! confirmed step. `duplicates` finds groups of rows that are equal on some columns.

pub mod duplicates;
