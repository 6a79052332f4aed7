//! What only a scope with cells needs. Every cell of such a scope must hear of every message, so a
//! row cannot go when one cell has it: `cascade_outbox_delivered` records which cells have which
//! rows, and a row goes, with its records, when the last cell of its scope has it.
//!
//! The rule per cell is the rule of a scope without cells, applied to the rows that cell has not
//! received: only the newest such row of an object is delivered to it, and once delivered it
//! stands for every older row of its object in the shard. So when cell `us` gets object 7's row
//! 12, rows 5 and 12 of object 7 count as `us`'s; they go once `de` has them too, whether `de`
//! got row 12 or a row 15 written after `us`'s delivery.

use super::store::{DELETED_PER_STATEMENT, Deliverable, Row, Shard, push_covered, push_not_received};
use crate::db::sql::Param;
use crate::db::{Database, DbError, Transaction};

/// Records that `shard.cell` has the rows the `delivered` messages stand for; the rows every
/// other cell of the scope (`cells`) has already go instead, with their records. How many rows
/// went. One transaction: on PostgreSQL the rows are locked first, so two cells finishing the
/// same rows at once see each other's records and one of them deletes the rows.
pub(crate) async fn record_delivered(
    database: &Database,
    shard: &Shard,
    delivered: &[Row],
    cells: &[String],
) -> Result<u64, DbError> {
    let others: Vec<&String> = cells.iter().filter(|cell| **cell != shard.cell).collect();
    let mut transaction = database.begin_write().await?;
    let mut deleted = 0;
    for part in delivered.chunks(DELETED_PER_STATEMENT) {
        let lock = database.backend().lock_rows_of("o");
        if !lock.is_empty() {
            let mut sql = database.sql();
            push_covered(&mut sql, shard, part);
            sql.push(" ORDER BY o.id").push(&lock);
            transaction.execute(&sql.finish()).await?;
        }
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_outbox_entry WHERE id IN (");
        push_covered(&mut sql, shard, part);
        if !others.is_empty() {
            sql.push(" AND (SELECT COUNT(*) FROM cascade_outbox_delivered d WHERE d.outbox_id = o.id AND d.cell IN (");
            sql.binds(others.iter().map(|cell| Param::text(cell))).push(")) = ");
            sql.bind(Param::integer(i64::try_from(others.len()).unwrap_or(i64::MAX)));
        }
        sql.push(") RETURNING CAST(id AS TEXT)");
        let gone: Vec<Param> = transaction
            .fetch_texts(&sql.finish())
            .await?
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten()?.parse().ok())
            .map(Param::integer)
            .collect();
        deleted += gone.len() as u64;
        forget(database, &mut transaction, gone).await?;
        if !others.is_empty() {
            let mut sql = database.sql();
            sql.push("INSERT INTO cascade_outbox_delivered (outbox_id, cell) SELECT covered.id, ");
            sql.bind_text(&shard.cell).push(" FROM (");
            push_covered(&mut sql, shard, part);
            sql.push(") covered WHERE true ON CONFLICT DO NOTHING");
            transaction.execute(&sql.finish()).await?;
        }
    }
    transaction.commit().await?;
    Ok(deleted)
}

/// Deletes the records of the rows `gone`.
async fn forget(database: &Database, transaction: &mut Transaction, gone: Vec<Param>) -> Result<(), DbError> {
    for part in gone.chunks(DELETED_PER_STATEMENT) {
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_outbox_delivered WHERE outbox_id IN (").binds(part.iter().cloned()).push(")");
        transaction.execute(&sql.finish()).await?;
    }
    Ok(())
}

/// Deletes the rows that every cell of their scope has: a delivery deletes them as it goes, but
/// a cell taken out of the config leaves behind the rows only it was missing. Then what belongs
/// to no cell of the config any more: the delivery state and the records of a cell taken out of
/// its scope (all of them for a scope that lost its cells), and the records of rows that are
/// gone. How many rows went.
pub(crate) async fn sweep(database: &Database, deliverable: &Deliverable) -> Result<u64, DbError> {
    let mut transaction = database.begin_write().await?;
    for scope in deliverable.scopes(true).chain(deliverable.scopes(false)) {
        let cells = || scope.cells.iter().map(|cell| Param::text(cell));
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_outbox_shard WHERE scope = ").bind_text(&scope.name).push(" AND cell <> ''");
        if !scope.cells.is_empty() {
            sql.push(" AND cell NOT IN (").binds(cells()).push(")");
        }
        transaction.execute(&sql.finish()).await?;
        let Some(code) = deliverable.codes.get(&scope.name) else { continue };
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_outbox_delivered WHERE outbox_id IN ");
        sql.push("(SELECT id FROM cascade_outbox_entry WHERE scope_code = ").bind(Param::integer(code)).push(")");
        if !scope.cells.is_empty() {
            sql.push(" AND cell NOT IN (").binds(cells()).push(")");
        }
        transaction.execute(&sql.finish()).await?;
    }
    let mut deleted = 0;
    for scope in deliverable.scopes(true) {
        let mut sql = database.sql();
        let Some(code) = deliverable.codes.get(&scope.name) else { continue };
        sql.push("DELETE FROM cascade_outbox_entry WHERE scope_code = ").bind(Param::integer(code));
        sql.push(" AND id IN (SELECT outbox_id FROM cascade_outbox_delivered WHERE cell IN (");
        sql.binds(scope.cells.iter().map(|cell| Param::text(cell)));
        sql.push(") GROUP BY outbox_id HAVING COUNT(*) = ");
        sql.bind(Param::integer(i64::try_from(scope.cells.len()).unwrap_or(i64::MAX))).push(")");
        deleted += transaction.execute(&sql.finish()).await?;
    }
    let orphans = "DELETE FROM cascade_outbox_delivered WHERE NOT EXISTS \
                   (SELECT 1 FROM cascade_outbox_entry o WHERE o.id = cascade_outbox_delivered.outbox_id)";
    let mut sql = database.sql();
    sql.push(orphans);
    transaction.execute(&sql.finish()).await?;
    transaction.commit().await?;
    Ok(deleted)
}

/// The rows one cell has not received yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellBacklog {
    pub scope: String,
    pub cell: String,
    pub rows: u64,
    /// Shards holding them.
    pub shards: u64,
    /// The oldest one's `date_added`, as text (none without rows).
    pub oldest: Option<String>,
}

/// The backlog of every `(scope, cell)` of `cells` (a cell with nothing to receive has none).
/// Without `received` (tables from before cells), no cell has received anything.
pub(crate) async fn backlog(
    database: &Database,
    cells: &[(String, String)],
    received: bool,
) -> Result<Vec<CellBacklog>, DbError> {
    if cells.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = database.sql();
    sql.push("SELECT c.column1 AS scope, c.column2 AS cell, CAST(COUNT(*) AS TEXT) AS waiting, ");
    sql.push("CAST(COUNT(DISTINCT COALESCE(o.shard_identifier, '')) AS TEXT) AS shards, ");
    sql.push(&database.backend().timestamp_text("MIN(o.date_added)"));
    sql.push(" AS oldest FROM cascade_outbox o JOIN (VALUES ");
    for (index, (scope, cell)) in cells.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { ", (" });
        sql.bind_text(scope).push(", ").bind_text(cell).push(")");
    }
    sql.push(") AS c ON c.column1 = o.scope WHERE true");
    if received {
        push_not_received(&mut sql, "o", |sql| {
            sql.push("c.column2");
        });
    }
    sql.push(" GROUP BY c.column1, c.column2");
    let rows = database.fetch_records(&sql.finish()).await?;
    let backlog = rows.iter().map(|row| {
        Ok(CellBacklog {
            scope: row.text("scope")?,
            cell: row.text("cell")?,
            rows: row.parsed("waiting")?,
            shards: row.parsed("shards")?,
            oldest: row.optional_text("oldest")?,
        })
    });
    backlog.collect()
}
