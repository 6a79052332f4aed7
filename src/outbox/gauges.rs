//! The outbox's gauges, measured by the drainer, per scope it delivers and per cell of a scope
//! with cells (a row waits for each cell that has not received it): the rows waiting and the age
//! of the oldest, and the shards failing and how long the longest-failing one has been.

use std::time::SystemTime;

use super::cells;
use super::store::{self, Deliverable};
use crate::db::{Database, DbError};
use crate::telemetry;

/// Sets the backlog and failing-shard gauges of every scope and cell `deliverable` holds (0 when
/// nothing waits or fails).
pub(super) async fn set(database: &Database, deliverable: &Deliverable, now: SystemTime) -> Result<(), DbError> {
    let age = |since: Option<&str>| {
        let since = since.and_then(|since| humantime::parse_rfc3339_weak(since).ok()).unwrap_or(now);
        now.duration_since(since).unwrap_or_default().as_secs_f64()
    };
    let failing = store::failing(database).await?;
    let set_failing = |labels: &[(&'static str, String)], scope: &str, cell: &str| {
        let found = failing.iter().find(|found| found.scope == scope && found.cell == cell);
        metrics::gauge!(telemetry::OUTBOX_FAILING_SHARDS, labels).set(found.map_or(0, |found| found.shards) as f64);
        metrics::gauge!(telemetry::OUTBOX_LONGEST_FAILING, labels)
            .set(age(found.and_then(|found| found.since.as_deref())));
    };
    if deliverable.scopes(false).next().is_some() {
        let backlog = store::backlog(database).await?;
        for scope in deliverable.scopes(false) {
            let found = backlog.iter().find(|(name, _, _)| *name == scope.name);
            let labels = [(telemetry::SCOPE, scope.name.clone())];
            metrics::gauge!(telemetry::OUTBOX_BACKLOG, &labels).set(found.map_or(0, |(_, rows, _)| *rows) as f64);
            metrics::gauge!(telemetry::OUTBOX_OLDEST_AGE, &labels)
                .set(age(found.map(|(_, _, oldest)| oldest.as_str())));
            set_failing(&labels, &scope.name, "");
        }
    }
    let wanted: Vec<(String, String)> = deliverable
        .scopes(true)
        .flat_map(|scope| scope.cells.iter().map(|cell| (scope.name.clone(), cell.clone())))
        .collect();
    let backlog = cells::backlog(database, &wanted, true).await?;
    for (scope, cell) in wanted {
        let found = backlog.iter().find(|found| found.scope == scope && found.cell == cell);
        let labels = [(telemetry::SCOPE, scope.clone()), (telemetry::CELL, cell.clone())];
        metrics::gauge!(telemetry::OUTBOX_BACKLOG, &labels).set(found.map_or(0, |found| found.rows) as f64);
        metrics::gauge!(telemetry::OUTBOX_OLDEST_AGE, &labels)
            .set(age(found.and_then(|found| found.oldest.as_deref())));
        set_failing(&labels, &scope, &cell);
    }
    Ok(())
}
