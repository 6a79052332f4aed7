//! Metrics: the name of every metric the library records, and [`describe`], which describes them
//! all to the installed recorder. The library records through the `metrics` facade's macros,
//! which do nothing until a program installs a recorder: a service embedding the library pays
//! nothing unless it wants the numbers, and then installs the exporter of its choice (the
//! `cascade` binary serves them in Prometheus's text format with `--metrics-addr`).

use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};

/// Counter, label [`MODEL`]: rows deleted, added when the chunk that deleted them commits.
pub const ROWS_DELETED: &str = "cascade_rows_deleted_total";

/// Counter, label [`MODEL`]: rows whose relation column was set to NULL, added when their chunk
/// commits.
pub const ROWS_NULLIFIED: &str = "cascade_rows_nullified_total";

/// Histogram: how long each committed chunk's transaction took, in seconds.
pub const CHUNK_DURATION: &str = "cascade_chunk_duration_seconds";

/// Counter, label [`OUTCOME`]: root deletions that ended, by the outcome `cascade_run` records
/// (`succeeded`, `skipped`, `not_found`, `interrupted`, `failed`); `failed` also counts a
/// deletion refused before its run was recorded.
pub const DELETIONS: &str = "cascade_deletions_total";

/// Counter, label [`OPTION`]: chunks that waited for a rate limit (one per chunk and option).
pub const RATE_LIMIT_WAITS: &str = "cascade_rate_limit_waits_total";

/// Seconds chunks waited for a rate limit, label [`OPTION`]. It only ever grows, as a counter
/// does, but the `metrics` facade's counters hold whole numbers, so it is recorded (and
/// exported) as a gauge that is only ever incremented.
pub const RATE_LIMIT_WAIT_SECONDS: &str = "cascade_rate_limit_wait_seconds_total";

/// Counter, label [`SINK`]: outbox messages delivered.
pub const OUTBOX_DELIVERED: &str = "cascade_outbox_delivered_total";

/// Counter, label [`SINK`]: outbox deliveries that failed (the shard is retried later).
pub const OUTBOX_FAILED: &str = "cascade_outbox_failed_total";

/// Gauge, label [`SCOPE`] (and [`CELL`] for a scope with cells): outbox rows waiting to be
/// delivered (to that cell).
pub const OUTBOX_BACKLOG: &str = "cascade_outbox_backlog";

/// Gauge, label [`SCOPE`] (and [`CELL`] for a scope with cells): age in seconds of the oldest
/// outbox row waiting to be delivered (to that cell).
pub const OUTBOX_OLDEST_AGE: &str = "cascade_outbox_oldest_age_seconds";

/// Gauge, label [`SCOPE`] (and [`CELL`] for a scope with cells): outbox shards whose latest
/// delivery (to that cell) failed, backing off until their next attempt.
pub const OUTBOX_FAILING_SHARDS: &str = "cascade_outbox_failing_shards";

/// Gauge, label [`SCOPE`] (and [`CELL`] for a scope with cells): how long, in seconds, the
/// longest-failing shard has been failing (since the first of its current run of failed
/// deliveries); 0 when none is failing.
pub const OUTBOX_LONGEST_FAILING: &str = "cascade_outbox_longest_failing_seconds";

/// Counter, label [`MODEL`]: scheduled deletions a worker claimed (each attempt counts).
pub const SCHEDULED_CLAIMED: &str = "cascade_scheduled_deletions_claimed_total";

/// Gauge: scheduled deletions due and not done (waiting for a worker or running), attempts left;
/// measured by the worker when it polls.
pub const SCHEDULED_DUE: &str = "cascade_scheduled_deletions_due";

/// Gauge: when the worker started, in seconds since the Unix epoch. A new value is a restart.
pub const WORKER_START_TIME: &str = "cascade_worker_start_time_seconds";

/// Counter, label [`MODEL`] (a remote model): inbox tombstones applied.
pub const INBOX_APPLIED: &str = "cascade_inbox_applied_total";

/// Gauge, label [`CATEGORY`]: inbox tombstones waiting to be applied; measured by the worker.
pub const INBOX_PENDING: &str = "cascade_inbox_pending";

/// Gauge, label [`CATEGORY`]: age in seconds of the oldest inbox tombstone waiting to be applied
/// (0 when none waits); measured by the worker.
pub const INBOX_OLDEST_PENDING_AGE: &str = "cascade_inbox_oldest_pending_age_seconds";

/// Gauge, label [`CATEGORY`]: inbox tombstones parked after failing every attempt; they wait for
/// an operator. Measured by the worker.
pub const INBOX_PARKED: &str = "cascade_inbox_parked";

/// Label: the model of the rows.
pub const MODEL: &str = "model";
/// Label: how a deletion ended.
pub const OUTCOME: &str = "outcome";
/// Label: the `[options]` entry of a rate limit.
pub const OPTION: &str = "option";
/// Label: an outbox sink.
pub const SINK: &str = "sink";
/// Label: an outbox scope.
pub const SCOPE: &str = "scope";
/// Label: a cell of an outbox scope with cells.
pub const CELL: &str = "cell";
/// Label: an outbox category, as an inbox receives it.
pub const CATEGORY: &str = "category";

/// Histogram buckets for [`CHUNK_DURATION`], in seconds: 1 ms to 10 s (chunks aim at 50 ms).
pub const CHUNK_DURATION_BUCKETS: &[f64] =
    &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Describes every metric to the installed recorder (their help text and unit). Call it once,
/// after installing a recorder; without one it does nothing.
pub fn describe() {
    describe_counter!(ROWS_DELETED, Unit::Count, "Rows deleted, per model, counted when their chunk commits.");
    describe_counter!(
        ROWS_NULLIFIED,
        Unit::Count,
        "Rows whose relation column was set to NULL, per model, counted when their chunk commits."
    );
    describe_histogram!(CHUNK_DURATION, Unit::Seconds, "Duration of each committed chunk's transaction.");
    describe_counter!(
        DELETIONS,
        Unit::Count,
        "Root deletions that ended, by outcome (succeeded, skipped, not_found, interrupted, failed)."
    );
    describe_counter!(RATE_LIMIT_WAITS, Unit::Count, "Chunks that waited for a rate limit, per option.");
    describe_gauge!(
        RATE_LIMIT_WAIT_SECONDS,
        Unit::Seconds,
        "Seconds chunks waited for a rate limit, per option; only grows (use rate() or increase() on it)."
    );
    describe_counter!(OUTBOX_DELIVERED, Unit::Count, "Outbox messages delivered, per sink.");
    describe_counter!(OUTBOX_FAILED, Unit::Count, "Outbox deliveries that failed, per sink.");
    describe_gauge!(OUTBOX_BACKLOG, Unit::Count, "Outbox rows waiting to be delivered, per scope (and cell).");
    describe_gauge!(
        OUTBOX_OLDEST_AGE,
        Unit::Seconds,
        "Age of the oldest outbox row waiting to be delivered, per scope (and cell)."
    );
    describe_gauge!(
        OUTBOX_FAILING_SHARDS,
        Unit::Count,
        "Outbox shards whose latest delivery failed, per scope (and cell)."
    );
    describe_counter!(INBOX_APPLIED, Unit::Count, "Inbox tombstones applied, per remote model.");
    describe_gauge!(INBOX_PENDING, Unit::Count, "Inbox tombstones waiting to be applied, per category.");
    describe_gauge!(
        INBOX_OLDEST_PENDING_AGE,
        Unit::Seconds,
        "Age of the oldest inbox tombstone waiting to be applied, per category; 0 when none waits."
    );
    describe_gauge!(INBOX_PARKED, Unit::Count, "Inbox tombstones parked after failing every attempt, per category.");
    describe_gauge!(
        OUTBOX_LONGEST_FAILING,
        Unit::Seconds,
        "How long the longest-failing outbox shard has been failing, per scope (and cell); 0 when none is."
    );
    describe_counter!(
        SCHEDULED_CLAIMED,
        Unit::Count,
        "Scheduled deletions a worker claimed, per model (each attempt)."
    );
    describe_gauge!(
        SCHEDULED_DUE,
        Unit::Count,
        "Scheduled deletions due and not done (waiting or running, attempts left), measured when the worker polls."
    );
    describe_gauge!(WORKER_START_TIME, Unit::Seconds, "When the worker started, in seconds since the Unix epoch.");
}
