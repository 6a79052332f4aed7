//! The outbox drainer: delivers the tombstones deletions write to `cascade_outbox` through the
//! sinks of the config, at least once, in order per shard, coalesced per object.
//!
//! A shard is `(scope, shard_identifier)`. Within a shard only the newest row of each
//! `(category, model, object_identifier)` is delivered, messages go in id order, and on success that row
//! and every older row of its object are deleted. A failed delivery leaves the rows and backs the
//! shard off (2 s, doubling, at most 1 h) while other shards go on. One drainer holds a shard at a
//! time through a claim with a lease; a drainer that dies loses its claims when their lease ends.
//!
//! A scope with cells delivers every message to each of its cells, each through its own sink:
//! claims, attempts and backoff are per shard and cell, so a failing cell backs off alone, and a
//! row goes only when every cell has it (`cells.rs`).

mod cells;
mod drain;
mod gauges;
mod options;
mod routes;
mod sink;
#[cfg(feature = "kafka")]
pub(crate) use sink::{KafkaLogger, kafka_log_level};
mod stats;
mod store;

use std::time::{Duration, SystemTime};

pub use drain::{DrainReport, Drainer};
pub use options::DrainOptions;
pub use sink::{Message, Variables};
pub use stats::{CategoryStats, CellStats, OutboxStats, ShardState, stats};

use crate::db::DbError;

/// Why draining could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// A statement failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A sink cannot be used as configured.
    #[error("sink `{sink}`: {reason}")]
    Sink {
        /// The sink's name.
        sink: String,
        /// What is wrong.
        reason: String,
    },
    /// `--scope` or `--category` names something the config does not have.
    #[error("{0}")]
    Filter(String),
}

/// Where the drainer reads the time: the system clock, or a test's.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// How long a shard waits after its `attempts`-th failed delivery in a row: 2 s, doubling, at
/// most an hour.
pub(crate) fn backoff(attempts: u64) -> Duration {
    const FIRST: Duration = Duration::from_secs(2);
    const LONGEST: Duration = Duration::from_secs(3600);
    let doublings = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX).min(12);
    (FIRST * 2u32.pow(doublings)).min(LONGEST)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn backoff_starts_at_two_seconds_and_doubles_up_to_an_hour() {
        let delays: Vec<u64> = (1..=13).map(|n| super::backoff(n).as_secs()).collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600]);
        assert_eq!(super::backoff(u64::MAX), Duration::from_secs(3600));
    }
}
