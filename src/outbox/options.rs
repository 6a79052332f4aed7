//! How a drainer runs: what it delivers, how many shards at a time, when it stops.

use std::time::Duration;

use super::sink::Variables;

/// How a drainer runs.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// Deliver what is due now, then return, instead of polling.
    pub once: bool,
    /// Shards delivered at the same time.
    pub concurrency: usize,
    /// Only these scopes (all when empty).
    pub scopes: Vec<String>,
    /// Only these categories (all when empty).
    pub categories: Vec<String>,
    /// Stop after delivering this many messages.
    pub max_messages: Option<u64>,
    /// How long to wait when nothing is due.
    pub poll: Duration,
    /// Where the sinks' `env:NAME` values are read (the process's environment by default).
    pub variables: Variables,
}

impl Default for DrainOptions {
    fn default() -> Self {
        Self {
            once: false,
            concurrency: 1,
            scopes: Vec::new(),
            categories: Vec::new(),
            max_messages: None,
            poll: Duration::from_secs(1),
            variables: Variables::Process,
        }
    }
}
