//! What only a scope with cells needs. Every cell of such a scope must hear of every message, so a
//! row cannot go when one cell has it: `cascade_outbox_delivered` records which cells have which
//! rows, and a row goes, with its records, when the last cell of its scope has it.
//!
//! The rule per cell is the rule of a scope without cells, applied to the rows that cell has not
//! received: only the newest such row of an object is delivered to it, and once delivered it
//! stands for every older row of its object in the shard. So when cell `us` gets object 7's row
//! 12, rows 5 and 12 of object 7 count as `us`'s; they go once `de` has them too, whether `de`
//! got row 12 or a row 15 written after `us`'s delivery.

use super::store::{DELETED_PER_STATEMENT, Deliverable, Row, Shard, covered_ids, push_cell_rows, push_not_received};
use crate::db::sql::Param;
use crate::db::{Database, DbError, Transaction};

/// Records that `shard.cell` has the rows the `delivered` messages stand for; the rows every
/// other cell of the scope (`cells`) has already go instead, with their records. How many rows
/// went. One transaction: where the database locks rows, they are locked first, so two cells
/// finishing the same rows at once see each other's records and one of them deletes the rows.
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
        let ids = covered_ids(database, &mut transaction, shard, part, true).await?;
        // A message stands for every older row of its object, however many: the ids go in parts.
        for ids in ids.chunks(DELETED_PER_STATEMENT) {
            let mut sql = database.sql();
            sql.push("DELETE FROM cascade_outbox_entry WHERE id IN (").binds(ids.iter().cloned()).push(")");
            if !others.is_empty() {
                sql.push(" AND (SELECT COUNT(*) FROM cascade_outbox_delivered d WHERE d.outbox_id = ");
                sql.push("cascade_outbox_entry.id AND d.cell IN (").binds(others.iter().map(|cell| Param::text(cell)));
                sql.push(")) = ").bind(Param::integer(i64::try_from(others.len()).unwrap_or(i64::MAX)));
            }
            sql.push(" RETURNING ").text("id");
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
                sql.push("INSERT INTO cascade_outbox_delivered (outbox_id, cell) SELECT id, ").bind_text(&shard.cell);
                sql.push(" FROM cascade_outbox_entry WHERE id IN (").binds(ids.iter().cloned()).push(")");
                database.backend().on_duplicate(&mut sql, &["outbox_id", "cell"], &[], "");
                transaction.execute(&sql.finish()).await?;
            }
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
    sql.push("SELECT c.column1 AS scope, c.column2 AS cell, ").text("COUNT(*)").push(" AS waiting, ");
    sql.text("COUNT(DISTINCT COALESCE(o.shard_identifier, ''))").push(" AS shards, ");
    sql.push(&database.backend().timestamp_text("MIN(o.date_added)"));
    sql.push(" AS oldest FROM cascade_outbox o JOIN ");
    let rows: Vec<(&str, &str)> = cells.iter().map(|(scope, cell)| (scope.as_str(), cell.as_str())).collect();
    push_cell_rows(&mut sql, &rows);
    sql.push(" AS c ON c.column1 = o.scope WHERE true");
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
