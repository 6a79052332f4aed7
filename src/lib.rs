//! `cascade` deletes large, deeply linked relational data safely: a declarative config of models
//! and relations is validated by a graph planner and compiled into a deletion plan.

pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod planner;
