//! `cascade outbox stats`: the backlog per scope and category, per cell of the scopes with cells,
//! and every shard (or cell of a shard) that is failing or being delivered. Reads only.

use std::time::SystemTime;

use serde::Serialize;

use super::cells;
use crate::config::Config;
use crate::db::{Database, DbError};

/// The outbox's backlog and its troubled shards.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutboxStats {
    /// Rows waiting in `cascade_outbox`.
    pub pending: u64,
    /// Per scope and category.
    pub categories: Vec<CategoryStats>,
    /// Per cell of every scope with cells: what each cell has not received yet.
    pub cells: Vec<CellStats>,
    /// Shards (or cells of shards) backing off after failed deliveries, or claimed by a drainer
    /// right now.
    pub shards: Vec<ShardState>,
}

/// The backlog of one cell: the rows of its scope it has not received.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CellStats {
    /// The scope.
    pub scope: String,
    /// The cell.
    pub cell: String,
    /// The sink the config delivers the cell's messages to (none: the scope is not delivered).
    pub sink: Option<String>,
    /// Rows the cell has not received.
    pub pending: u64,
    /// Shards they are in.
    pub shards: u64,
    /// Age of the oldest of them, in seconds.
    pub oldest_age_seconds: f64,
    /// The cell's shards backing off after failed deliveries.
    pub failing_shards: u64,
}

/// The backlog of one category.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CategoryStats {
    /// The scope the rows were written for.
    pub scope: String,
    /// The category.
    pub category: String,
    /// The sink the config delivers it to; none means the rows wait until one is configured, or,
    /// with `cells`, that each cell has its own (in [`OutboxStats::cells`]).
    pub sink: Option<String>,
    /// The cells of the scope, each of which gets every row through its own sink (none for a
    /// scope without cells).
    pub cells: Vec<String>,
    /// Rows waiting.
    pub pending: u64,
    /// Distinct objects per shard among them: the messages left after coalescing.
    pub objects: u64,
    /// Shards they are in.
    pub shards: u64,
    /// Age of the oldest row, in seconds.
    pub oldest_age_seconds: f64,
}

/// A shard with a drainer's claim or a failure on record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ShardState {
    /// The shard's scope.
    pub scope: String,
    /// The shard identifier ('' for NULL).
    pub shard_identifier: String,
    /// The cell (null for a scope without cells).
    pub cell: Option<String>,
    /// `delivering` (claimed now), `backing_off` (failed, waiting for its next attempt) or
    /// `due` (failed, its next attempt may start).
    pub state: &'static str,
    /// Failed deliveries in a row.
    pub attempts: u64,
    /// When the next attempt may start (UTC).
    pub next_attempt_at: Option<String>,
    /// The error of the latest failed delivery.
    pub last_error: Option<String>,
    /// When the current run of failed deliveries began (UTC; null when the last one went
    /// through).
    pub failing_since: Option<String>,
}

/// The outbox's backlog at `now`.
pub async fn stats(database: &Database, config: &Config, now: SystemTime) -> Result<OutboxStats, DbError> {
    let mut result = OutboxStats { pending: 0, categories: Vec::new(), cells: Vec::new(), shards: Vec::new() };
    if !database.table_exists("cascade_outbox").await? {
        return Ok(result);
    }
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT scope, category, ").text("COUNT(*)").push(" AS pending, CAST(COUNT(DISTINCT ");
    sql.push("COALESCE(shard_identifier, '') || '/' || model || '/' || object_identifier)")
        .as_text()
        .push(" AS objects, ");
    sql.text("COUNT(DISTINCT COALESCE(shard_identifier, ''))")
        .push(" AS shards, ")
        .push(&backend.timestamp_text("MIN(date_added)"));
    sql.push(" AS oldest FROM cascade_outbox GROUP BY scope, category ORDER BY scope, category");
    for row in database.fetch_records(&sql.finish()).await? {
        let (scope, category) = (row.text("scope")?, row.text("category")?);
        let oldest = humantime::parse_rfc3339_weak(&row.text("oldest")?).unwrap_or(now);
        let pending: u64 = row.parsed("pending")?;
        result.pending += pending;
        result.categories.push(CategoryStats {
            sink: config.sink_for(&scope, &category).map(|sink| sink.name.value.clone()),
            cells: config
                .outbox
                .scopes
                .get(&scope)
                .map_or_else(Vec::new, |declared| declared.cells.iter().map(|cell| cell.value.clone()).collect()),
            scope,
            category,
            pending,
            objects: row.parsed("objects")?,
            shards: row.parsed("shards")?,
            oldest_age_seconds: now.duration_since(oldest).unwrap_or_default().as_secs_f64(),
        });
    }
    // Tables from before cells (a read-only command never migrates): no cell has received any
    // row, and no shard state has a cell.
    let cells_migrated = database.table_exists("cascade_outbox_delivered").await?;
    if !database.table_exists("cascade_outbox_shard").await? {
        result.cells = cell_stats(database, config, now, &result.shards, cells_migrated).await?;
        return Ok(result);
    }
    let mut sql = database.sql();
    sql.push("SELECT scope, shard_identifier, ")
        .text("attempts")
        .push(" AS attempts, ")
        .push(&backend.timestamp_text("next_attempt_at"));
    sql.push(" AS next_attempt_at, last_error, CASE WHEN claim_expires_at > ").timestamp(now);
    sql.push(" THEN 'delivering' WHEN next_attempt_at > ").timestamp(now);
    sql.push(" THEN 'backing_off' ELSE 'due' END AS state, ");
    if cells_migrated {
        sql.push("cell, ").push(&backend.timestamp_text("failing_since")).push(" AS failing_since");
    } else {
        sql.push("NULL AS cell, NULL AS failing_since");
    }
    sql.push(" FROM cascade_outbox_shard WHERE claim_expires_at > ").timestamp(now);
    sql.push(" OR attempts > 0 ORDER BY scope, shard_identifier, cell");
    for row in database.fetch_records(&sql.finish()).await? {
        result.shards.push(ShardState {
            scope: row.text("scope")?,
            shard_identifier: row.text("shard_identifier")?,
            state: match row.text("state")?.as_str() {
                "delivering" => "delivering",
                "backing_off" => "backing_off",
                _ => "due",
            },
            attempts: row.parsed("attempts")?,
            next_attempt_at: row.optional_text("next_attempt_at")?,
            last_error: row.optional_text("last_error")?,
            cell: row.optional_text("cell")?.filter(|cell| !cell.is_empty()),
            failing_since: row.optional_text("failing_since")?,
        });
    }
    result.cells = cell_stats(database, config, now, &result.shards, cells_migrated).await?;
    Ok(result)
}

/// The backlog of every cell of the config's scopes with cells, with its failing shards.
async fn cell_stats(
    database: &Database,
    config: &Config,
    now: SystemTime,
    shards: &[ShardState],
    cells_migrated: bool,
) -> Result<Vec<CellStats>, DbError> {
    let wanted: Vec<(String, String)> = config
        .outbox
        .scopes
        .values()
        .flat_map(|scope| scope.cells.iter().map(|cell| (scope.name.value.clone(), cell.value.clone())))
        .collect();
    let backlog = cells::backlog(database, &wanted, cells_migrated).await?;
    Ok(wanted
        .into_iter()
        .map(|(scope, cell)| {
            let found = backlog.iter().find(|found| found.scope == scope && found.cell == cell);
            let oldest = found.and_then(|found| found.oldest.as_deref());
            let oldest = oldest.and_then(|oldest| humantime::parse_rfc3339_weak(oldest).ok()).unwrap_or(now);
            let failing = shards.iter().filter(|shard| {
                shard.scope == scope && shard.cell.as_deref() == Some(cell.as_str()) && shard.attempts > 0
            });
            let sink = config.outbox.scopes.get(&scope).and_then(|declared| declared.cell_sinks.get(&cell));
            CellStats {
                sink: sink.map(|sink| sink.value.clone()),
                pending: found.map_or(0, |found| found.rows),
                shards: found.map_or(0, |found| found.shards),
                oldest_age_seconds: now.duration_since(oldest).unwrap_or_default().as_secs_f64(),
                failing_shards: failing.count() as u64,
                scope,
                cell,
            }
        })
        .collect())
}
