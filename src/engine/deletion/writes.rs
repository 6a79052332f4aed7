//! What a chunk's transaction writes besides its deletes, and in which order it makes it
//! durable: the tombstones, the archive's lines (synced before the commit), the run's rows in
//! `cascade_run`; and what a committed transaction counts (summary, metrics).

use std::time::Instant;

use tracing::debug;

use super::roots::with_status_before;
use super::shared::Carried;
use super::{DeleteError, Deletion};
use crate::audit;
use crate::config::OnDelete;
use crate::db::Keys;
use crate::db::sql::{Param, Statement};
use crate::db::{Failure, TextRows, Transaction};
use crate::engine::sql::Returning;
use crate::engine::steps::{StepSql, column_types};
use crate::engine::table_keys;
use crate::planner::PlanNode;
use crate::schema::CatalogNames;
use crate::telemetry;

impl<'a> Deletion<'a> {
    /// A chunk's transaction (see [`Database::begin_key_array_write`]), which first registers the
    /// plan's outbox names until a transaction that did has committed: no extra commit, and no
    /// tombstone without its names.
    /// A transaction a tree's chunk left open ([`super::shared`]) is taken as it is.
    pub(super) async fn begin(&mut self) -> Result<Transaction, DeleteError> {
        if let Some(transaction) = self.take_shared() {
            return Ok(transaction);
        }
        // One that carried chunks and was dropped did not commit.
        self.lost_shared();
        // Those of a transaction rolled back never counted, and its rows were never archived.
        self.uncommitted_outbox_rows = 0;
        if let Some(archive) = &mut self.archive {
            archive.discard();
        }
        let mut transaction = self.database.begin_key_array_write(self.unpartitioned).await?;
        if let Some(names) = &self.unregistered_outbox_names {
            transaction.execute(names).await?;
        }
        Ok(transaction)
    }

    /// Records the run's rows with those of `steps` in `cascade_run`, makes the chunk's archive
    /// lines durable, then commits: no row is gone before it is on disk, and a run killed after
    /// any commit shows what it did. When it began (`started`, or earlier where chunks shared it)
    /// and the rows of every chunk it committed.
    pub(super) async fn commit(
        &mut self,
        mut transaction: Transaction,
        steps: &[(&'a PlanNode, u64)],
        started: Instant,
    ) -> Result<Carried<'a>, DeleteError> {
        let (started, mut all) = self.carried.take().unwrap_or((started, Vec::new()));
        all.extend_from_slice(steps);
        if all.iter().any(|(_, rows)| *rows > 0) {
            let before = self.options.within.as_ref().map(|batch| &batch.rows_before);
            let mut rows = before.cloned().unwrap_or_default().plus(&self.summary.deleted, &self.summary.nullified);
            for (node, count) in &all {
                *rows.of(node.action, &node.model) += count;
            }
            audit::record_rows(&mut transaction, self.run_id, &rows).await?;
        }
        if let Some(archive) = &mut self.archive {
            archive.sync()?;
        }
        if let Err(error) = transaction.commit().await {
            // What chunks sharing it wrote is undone with it.
            self.sharing_paused |= all.len() > steps.len();
            return Err(error.into());
        }
        self.sharing_paused = false;
        self.unregistered_outbox_names = None;
        self.summary.outbox_rows += std::mem::take(&mut self.uncommitted_outbox_rows);
        Ok((started, all))
    }

    /// Deletes (or nullifies) every row of `node` whose key (`by_key`) or relation column is in
    /// `keys`. Where one writer at a time is the rule, the tombstones and the archive's rows are
    /// read straight from the table first ([`StepSql::row_data_from_table`]), without carrying
    /// the rows through the tool one by one.
    pub(super) async fn delete_all(
        &mut self,
        transaction: &mut Transaction,
        node: &PlanNode,
        step: &StepSql<'_>,
        keys: &Keys,
        by_key: bool,
    ) -> Result<u64, DeleteError> {
        let deleted = self.delete_all_of(transaction, node, step, keys, by_key).await;
        deleted.map_err(|error| self.refused_by_trigger(error, node))
    }

    async fn delete_all_of(
        &mut self,
        transaction: &mut Transaction,
        node: &PlanNode,
        step: &StepSql<'_>,
        keys: &Keys,
        by_key: bool,
    ) -> Result<u64, DeleteError> {
        let matched = || Param::Keys(keys.clone());
        if by_key && self.refers_to_itself_row_by_row(node) {
            return self.delete_self_referencing(transaction, node, step, keys).await;
        }
        let Some(returning) = step.row_data_from_table() else {
            let statement = step.sql.delete_matching(matched(), step.returning.as_ref(), by_key);
            return self.run_write(transaction, &statement, node, step).await;
        };
        let lines = self.read_row_data(transaction, step, returning, keys, by_key).await?;
        let deleted = transaction.execute(&step.sql.delete_matching(matched(), None, by_key)).await?;
        // Archived once the delete went through: a refused delete leaves no lines behind.
        if let Some(lines) = lines {
            self.archive_lines(node, step, lines)?;
        }
        Ok(deleted)
    }

    /// Before a delete that returns nothing: writes the tombstones of the rows of `step` that
    /// `keys` match (by key, or by relation column), read from the table, and reads their archive
    /// lines, to be archived once the delete went through.
    pub(super) async fn read_row_data(
        &mut self,
        transaction: &mut Transaction,
        step: &StepSql<'_>,
        returning: &Returning,
        keys: &Keys,
        by_key: bool,
    ) -> Result<Option<Vec<String>>, DeleteError> {
        let keys = || Param::Keys(keys.clone());
        // Where other writers may change the rows meanwhile, they stay as read until they go.
        if self.database.backend().tuning().concurrent_writers {
            transaction.fetch_texts(&step.sql.lock_matching(keys(), by_key)).await?;
        }
        if let Some(target) = step.outbox {
            let tombstones = step.sql.insert_tombstones(target, returning, keys(), by_key);
            self.uncommitted_outbox_rows += transaction.execute(&tombstones).await?;
        }
        Ok(match (&self.archive, &returning.row) {
            (Some(_), Some(columns)) => {
                let archived = transaction.fetch_texts(&step.sql.archived_rows(columns, keys(), by_key)).await?;
                let (rows, lines) = counted_lines(archived);
                // A table the schema does not know has no columns to archive: no lines.
                Some(if columns.is_empty() { lines } else { whole(&step.sql.node.model, rows, lines)? })
            }
            _ => None,
        })
    }

    /// Runs `node`'s delete or update; with `RETURNING`, archives the deleted rows and writes
    /// their tombstones in the same transaction. The number of rows touched.
    pub(super) async fn run_write(
        &mut self,
        transaction: &mut Transaction,
        statement: &Statement,
        node: &PlanNode,
        step: &StepSql<'_>,
    ) -> Result<u64, DeleteError> {
        let written = self.run_write_of(transaction, statement, node, step).await;
        written.map_err(|error| self.refused_by_trigger(error, node))
    }

    /// `error`, when a trigger raised it in a delete of `node`'s rows, as the refusal that
    /// names the table, its triggers and the fix.
    fn refused_by_trigger(&self, error: DeleteError, node: &PlanNode) -> DeleteError {
        let DeleteError::Database(database_error) = &error else { return error };
        // A foreign key's refusal or a deadlock met inside a trigger keeps its own handling.
        let permanent = self.database.classify(database_error) == Failure::Permanent;
        let function = match self.database.raised_by_trigger(database_error) {
            Some(function) if permanent && node.action == OnDelete::Delete => function,
            _ => return error,
        };
        let table = self.schema.table(&node.table);
        DeleteError::RefusedByTrigger {
            model: node.model.clone(),
            table: table.map_or_else(|| node.table.clone(), |table| table.name.clone()),
            triggers: table.map(|table| table.delete_triggers.clone()).unwrap_or_default(),
            function,
            reason: database_error.to_string(),
        }
    }

    async fn run_write_of(
        &mut self,
        transaction: &mut Transaction,
        statement: &Statement,
        node: &PlanNode,
        step: &StepSql<'_>,
    ) -> Result<u64, DeleteError> {
        if step.sql.returns_nullified {
            let read = transaction.fetch_texts(statement).await?;
            let rows = read.len() as u64;
            if step.sql.selects_nullified_first() {
                // Each row's identity, then its row key.
                self.write_selected(transaction, node, step, &read, 1).await?;
            }
            let keys = crate::db::first_column(read);
            audit::nullified::record(transaction, self.run_id, &node.model, keys).await?;
            return Ok(rows);
        }
        if step.row_data().is_none() {
            return Ok(transaction.execute(statement).await?);
        }
        // The database writes the tombstones itself, and hands over the archive's rows in one
        // result row: deleted rows do not travel one by one.
        if let Some(in_with) = step.deleting_in_with(statement, self.archive.is_some()) {
            let rows = if self.archive.is_some() {
                let (rows, lines) = counted_lines(transaction.fetch_texts(&in_with).await?);
                self.archive_lines(node, step, lines)?;
                rows
            } else {
                transaction.execute(&in_with).await?
            };
            if step.outbox.is_some() {
                self.uncommitted_outbox_rows += rows;
            }
            return Ok(rows);
        }
        let rows = transaction.fetch_texts(statement).await?;
        if step.sql.selected_before_delete(step.returning.as_ref()).is_some() {
            // What a delete returns, then the row key.
            self.write_selected(transaction, node, step, &rows, 4).await?;
        }
        self.write_row_data(transaction, rows, node, step).await
    }

    /// Deletes (or sets to NULL) the rows a statement selected first, locking them, where the
    /// database's statement cannot return what it changed: by the row key each row has in its
    /// column `row_key_at`. Every selected row is gone (or NULL) after it, whether the statement
    /// or the database's own cascade from one of them took it.
    async fn write_selected(
        &mut self,
        transaction: &mut Transaction,
        node: &PlanNode,
        step: &StepSql<'_>,
        rows: &TextRows,
        row_key_at: usize,
    ) -> Result<(), DeleteError> {
        if rows.is_empty() {
            return Ok(());
        }
        let row_key = step.sql.row_key();
        let types = column_types(CatalogNames::of(Some(self.schema), &node.table).table(), &row_key);
        let row_keys = rows.iter().filter_map(|row| row.get(row_key_at).cloned().flatten()).collect();
        let row_keys = Param::Keys(table_keys(&node.table, &types, row_keys)?);
        let statement = match node.action {
            OnDelete::Nullify => step.sql.nullify_by_row_keys(row_keys, &types),
            _ => step.sql.delete_by_row_keys(row_keys, &types),
        };
        transaction.execute(&statement).await?;
        Ok(())
    }

    /// Archives the deleted rows of `node` (JSON objects), the root's with their status as it
    /// was before the deletion marked them.
    pub(super) fn archive_lines(
        &mut self,
        node: &PlanNode,
        step: &StepSql<'_>,
        lines: Vec<String>,
    ) -> Result<(), DeleteError> {
        let Some(archive) = &mut self.archive else { return Ok(()) };
        let status = step.status.map(|s| step.sql.names.column(&s.column.value));
        let lines = match status {
            Some(status) if std::ptr::eq(node, self.root) && !self.statuses_before.is_empty() => {
                let key = step.sql.key();
                lines.into_iter().map(|line| with_status_before(line, &key, &status, &self.statuses_before)).collect()
            }
            _ => lines,
        };
        Ok(archive.write(&node.model, &node.table, &lines)?)
    }

    /// Archives the deleted rows and writes their tombstones, inside the chunk's transaction;
    /// the number of rows.
    pub(super) async fn write_row_data(
        &mut self,
        transaction: &mut Transaction,
        rows: Vec<Vec<Option<String>>>,
        node: &PlanNode,
        step: &StepSql<'_>,
    ) -> Result<u64, DeleteError> {
        if self.archive.is_some() {
            let lines = rows.iter().filter_map(|row| row.get(3).cloned().flatten()).collect();
            self.archive_lines(node, step, lines)?;
        }
        let composite = node.identity.len() > 1;
        let tombstones: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| {
                let key = if composite { row[0].as_deref().map(compact_json) } else { row[0].clone() };
                serde_json::json!({ "key": key, "shard": row.get(1).cloned().flatten(), "payload": row.get(2).cloned().flatten() })
            })
            .collect();
        let count = tombstones.len() as u64;
        if let (Some(statement), true) = (step.tombstones(Param::json_records(tombstones)), count > 0) {
            transaction.execute(&statement).await?;
            self.uncommitted_outbox_rows += count;
        }
        Ok(rows.len() as u64)
    }

    /// Counts a committed transaction that touched the rows of `steps`.
    pub(super) fn record_transaction(&mut self, started: Instant, steps: &[(&PlanNode, u64)]) {
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        self.summary.chunks += 1;
        self.summary.max_chunk_ms = self.summary.max_chunk_ms.max(elapsed_ms);
        self.summary.chunk_ms.push(elapsed_ms);
        metrics::histogram!(telemetry::CHUNK_DURATION).record(elapsed_ms / 1e3);
        for (node, rows) in steps {
            let (counts, metric) = if node.action.deletes() {
                (&mut self.summary.deleted, telemetry::ROWS_DELETED)
            } else {
                (&mut self.summary.nullified, telemetry::ROWS_NULLIFIED)
            };
            *counts.entry(node.model.clone()).or_default() += rows;
            metrics::counter!(metric, telemetry::MODEL => node.model.clone()).increment(*rows);
        }
        let models: Vec<&str> = steps.iter().map(|(node, _)| node.model.as_str()).collect();
        let rows: u64 = steps.iter().map(|(_, rows)| rows).sum();
        debug!(models = ?models, rows, ms = elapsed_ms, "chunk committed");
    }
}

/// The one row of an archive read (`archived_rows`, `delete_archived`): the number
/// of rows and their JSON objects, one per line (JSON text holds no raw line break).
fn counted_lines(rows: TextRows) -> (u64, Vec<String>) {
    let mut row = rows.into_iter().next().unwrap_or_default().into_iter();
    let count = row.next().flatten().and_then(|count| count.parse().ok()).unwrap_or(0);
    let lines = row.next().flatten().map(|text| text.split('\n').map(str::to_owned).collect()).unwrap_or_default();
    (count, lines)
}

/// `lines`, unless the database cut their aggregated text short (MariaDB's `GROUP_CONCAT` past
/// its limits): fewer lines than the `rows` read, or a last line that is not whole JSON. No row
/// goes unarchived. (More lines than rows is a `json` column holding line breaks, as before.)
fn whole(model: &str, rows: u64, lines: Vec<String>) -> Result<Vec<String>, DeleteError> {
    let count = lines.len() as u64;
    let last_whole = || lines.last().is_none_or(|line| serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok());
    if count > rows || (count == rows && last_whole()) {
        Ok(lines)
    } else {
        Err(DeleteError::ArchiveCutShort { model: model.to_owned(), rows, lines: count })
    }
}

/// A composite key's JSON array as one spelling on every database (`[1,3]`: PostgreSQL writes
/// `[1, 3]`).
fn compact_json(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text).map_or_else(|_| text.to_owned(), |value| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::whole;

    #[test]
    fn archive_lines_cut_short_are_refused() {
        let lines = |texts: &[&str]| texts.iter().map(|text| (*text).to_owned()).collect::<Vec<_>>();
        assert!(whole("m", 2, lines(&[r#"{"id":1}"#, r#"{"id":2}"#])).is_ok());
        assert!(whole("m", 0, Vec::new()).is_ok());
        // A `json` column's own line breaks make more lines than rows, as before.
        assert!(whole("m", 1, lines(&["{\"doc\":{", "}}"])).is_ok());
        assert!(whole("m", 2, lines(&[r#"{"id":1}"#])).is_err(), "a row without its line");
        assert!(whole("m", 2, Vec::new()).is_err(), "no text at all (NULL)");
        assert!(whole("m", 2, lines(&[r#"{"id":1}"#, r#"{"id":2,"bo"#])).is_err(), "the last line cut");
    }
}
