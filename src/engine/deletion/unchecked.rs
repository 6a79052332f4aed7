//! A loop's rows deleted one table after the other, where a data-modifying `WITH` cannot take
//! them in one statement. SQLite defers its checks to the commit. InnoDB checks every key row by
//! row and defers none, so rows that reference each other (a store and its manager) go only with
//! its checks off: they are off for the deletes alone, and what they would have caught is checked
//! by hand before the commit: no row of any table still references a value the deleted rows held.
//! A row inserted meanwhile that does waits for the deleted rows' locks, then fails its own check.

use super::{DeleteError, Deletion};
use crate::db::sql::{KeyType, Param, SqlBuilder};
use crate::db::{Keys, Transaction, first_column};
use crate::engine::steps::{StepSql, column_types};
use crate::planner::PlanNode;
use crate::schema::ReferentialAction;

/// The values of deleted rows that the columns of a foreign key may hold.
struct Referenced {
    /// The referencing table, quoted.
    table: String,
    columns: Vec<String>,
    types: Vec<KeyType>,
    /// Each value as one text (a JSON array for several columns).
    values: Vec<String>,
}

impl<'a> Deletion<'a> {
    /// Deletes each `(node, step, keys)` group by key, in `transaction`; with the database's checks
    /// off where it has no other way (`Tuning::unchecked_foreign_keys`). The rows the deletes
    /// took, and the reason the rows cannot go yet when another row still references them.
    pub(super) async fn delete_groups<'g>(
        &self,
        transaction: &mut Transaction,
        groups: &[(&'g PlanNode, &StepSql<'g>, Keys)],
    ) -> Result<(u64, Option<String>), DeleteError> {
        let tuning = self.database.backend().tuning();
        // The database's own cascades do not run with its checks off: a loop with children only the
        // database deletes keeps them on, for InnoDB to check (and refuse rows it cannot order).
        // Nor a loop of a table the schema does not know: the references to it cannot be checked.
        let checkable = groups
            .iter()
            .all(|(node, step, _)| step.database_children.is_empty() && self.schema.table(&node.table).is_some());
        let unchecked = tuning.unchecked_foreign_keys.filter(|_| checkable);
        let Some((off, on)) = unchecked else {
            let mut rows = 0;
            for (_, step, keys) in groups {
                rows += transaction.execute(&step.sql.delete_by_keys(Param::Keys(keys.clone()), None)).await?;
            }
            return Ok((rows, None));
        };
        let referenced = self.referenced_values(transaction, groups).await?;
        transaction.execute_script(off).await?;
        let mut deleted = Ok(0);
        for (_, step, keys) in groups {
            let statement = step.sql.delete_by_keys(Param::Keys(keys.clone()), None);
            deleted = match deleted {
                Ok(rows) => transaction.execute(&statement).await.map(|more| rows + more),
                failed => failed,
            };
        }
        // Back on whatever happened: the connection goes back to the pool.
        transaction.execute_script(on).await?;
        let rows = deleted?;
        Ok((rows, self.still_referenced(transaction, &referenced).await?))
    }

    /// Whether rows of `node` are deleted by key with the database's checks off and checked by
    /// hand ([`Self::delete_self_referencing`]): where the database checks every key row by row
    /// (InnoDB) and `node`'s table references itself through a key that refuses, so a row that
    /// references itself (a tree's top row, its own root) could not go otherwise.
    pub(super) fn refers_to_itself_unchecked(&self, node: &PlanNode, step: &StepSql<'_>) -> bool {
        let unchecked = self.database.backend().tuning().unchecked_foreign_keys.is_some();
        let Some(table) = self.schema.table(&node.table).filter(|_| unchecked && step.database_children.is_empty())
        else {
            return false;
        };
        self.schema.references_to(table).any(|(child, fk)| {
            std::ptr::eq(child, table)
                && matches!(fk.on_delete, ReferentialAction::Restrict | ReferentialAction::NoAction)
        })
    }

    /// Deletes the rows of `node` whose keys are `keys` with the checks off
    /// ([`Self::delete_groups`]), writing their tombstones and archive lines as any delete does;
    /// the rows deleted, or [`DeleteError::StillReferenced`] when another row still references
    /// one of them (inserted meanwhile: the chunk is taken again, as after a foreign key's
    /// refusal).
    pub(super) async fn delete_self_referencing(
        &mut self,
        transaction: &mut Transaction,
        node: &PlanNode,
        step: &StepSql<'_>,
        keys: &Keys,
    ) -> Result<u64, DeleteError> {
        let matched = || Param::Keys(keys.clone());
        // The rows, locked, with what their delete would return.
        let returned = match step.row_data() {
            Some(returning) => {
                Some(transaction.fetch_texts(&step.sql.delete_by_keys(matched(), Some(returning))).await?)
            }
            None => None,
        };
        let (deleted, refused) = self.delete_groups(transaction, &[(node, step, keys.clone())]).await?;
        if let Some(reason) = refused {
            return Err(DeleteError::StillReferenced { model: node.model.clone(), reason });
        }
        match returned {
            Some(rows) => self.write_row_data(transaction, rows, node, step).await,
            None => Ok(deleted),
        }
    }

    /// What other rows may reference of the rows of `groups`, by every foreign key to their
    /// tables, read before they go.
    async fn referenced_values<'g>(
        &self,
        transaction: &mut Transaction,
        groups: &[(&'g PlanNode, &StepSql<'g>, Keys)],
    ) -> Result<Vec<Referenced>, DeleteError> {
        let backend = self.database.backend();
        let mut found = Vec::new();
        for (node, step, keys) in groups {
            let Some(table) = self.schema.table(&node.table) else { continue };
            for (child, fk) in self.schema.references_to(table) {
                let referenced =
                    if fk.referenced_columns.is_empty() { &table.primary_key } else { &fk.referenced_columns };
                let mut sql = SqlBuilder::new(backend);
                sql.push("SELECT ");
                backend.key_text(&mut sql, referenced);
                sql.push(" FROM ").push(&table.quoted()).push(" WHERE ");
                sql.keys_in(&step.sql.key_columns(), &step.sql.key_types, Param::Keys(keys.clone()));
                // Locked: a referenced column that is not the key cannot change meanwhile.
                sql.push(&backend.lock_rows_of(""));
                let types = column_types(Some(child), &fk.columns);
                // A value with a NULL part references nothing; one that does not fit the
                // referencing columns' types is in none of their rows.
                let values: Vec<String> = first_column(transaction.fetch_texts(&sql.finish()).await?)
                    .into_iter()
                    .filter(|value| Keys::parse_for(&types, vec![value.clone()]).is_ok())
                    .collect();
                if !values.is_empty() {
                    found.push(Referenced { table: child.quoted(), columns: fk.columns.clone(), types, values });
                }
            }
        }
        Ok(found)
    }

    /// Why the deleted rows cannot go yet: a row that still references one of their values, read
    /// with a lock (what is committed now, not the transaction's first view).
    async fn still_referenced(
        &self,
        transaction: &mut Transaction,
        referenced: &[Referenced],
    ) -> Result<Option<String>, DeleteError> {
        let backend = self.database.backend();
        for found in referenced {
            // Each value fits on its own (`referenced_values`), so all of them do.
            let Ok(keys) = Keys::parse_for(&found.types, found.values.clone()) else { continue };
            let mut sql = SqlBuilder::new(backend);
            sql.push("SELECT COUNT(*) FROM ").push(&found.table).push(" AS cascade_child WHERE ");
            sql.keys_in(&found.columns, &found.types, Param::Keys(keys));
            sql.push(&backend.lock_rows_of("cascade_child"));
            let rows = transaction.fetch_count(&sql.finish()).await?;
            if rows > 0 {
                return Ok(Some(format!(
                    "{rows} row(s) of {} still reference rows of a loop through ({})",
                    found.table,
                    found.columns.join(", ")
                )));
            }
        }
        Ok(None)
    }
}
