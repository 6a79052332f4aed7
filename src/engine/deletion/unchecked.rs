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
    ///
    /// The database's own cascades do not run with its checks off: the groups with children only
    /// the database deletes go after the others, with the checks on, for InnoDB to cascade (the
    /// loop's rows that referenced them already gone; it refuses rows it still cannot order). So
    /// do the groups of a table the schema does not know: the references to it cannot be checked.
    pub(super) async fn delete_groups<'g>(
        &self,
        transaction: &mut Transaction,
        groups: &[(&'g PlanNode, &StepSql<'g>, Keys)],
    ) -> Result<(u64, Option<String>), DeleteError> {
        let Some((off, on)) = self.database.backend().tuning().unchecked_foreign_keys else {
            // The checks wait for the commit (SQLite): any order goes.
            let mut rows = 0;
            for (_, step, keys) in groups {
                rows += transaction.execute(&step.sql.delete_by_keys(Param::Keys(keys.clone()), None)).await?;
            }
            return Ok((rows, None));
        };
        let checkable = |group: &&(&PlanNode, &StepSql<'_>, Keys)| {
            group.1.database_children.is_empty() && self.schema.table(&group.0.table).is_some()
        };
        let (unchecked, checked): (Vec<_>, Vec<_>) = groups.iter().partition(checkable);
        let mut rows = 0;
        let mut referenced = Vec::new();
        if !unchecked.is_empty() {
            let unchecked: Vec<_> = unchecked.into_iter().cloned().collect();
            referenced = self.referenced_values(transaction, &unchecked).await?;
            transaction.execute_script(off).await?;
            let mut deleted = Ok(0);
            for (_, step, keys) in &unchecked {
                let statement = step.sql.delete_by_keys(Param::Keys(keys.clone()), None);
                deleted = match deleted {
                    Ok(rows) => transaction.execute(&statement).await.map(|more| rows + more),
                    failed => failed,
                };
            }
            // Back on whatever happened: the connection goes back to the pool.
            transaction.execute_script(on).await?;
            rows += deleted?;
        }
        let checked = checked.into_iter().map(|(node, step, keys)| (*node, *step, keys.texts())).collect();
        rows += self.delete_in_reference_order(transaction, checked).await?;
        Ok((rows, self.still_referenced(transaction, &referenced).await?))
    }

    /// Deletes the rows of `groups` with the checks on, children first. InnoDB
    /// checks each key row by row, and cascades one (to rows that keys which refuse may still
    /// reference) inside the delete: a row goes only once no other row of the groups references
    /// it, by any key, a round of those rows at a time, until none is left. Rows left that all
    /// reference each other have a key of theirs that may be NULL set to NULL first (they are
    /// about to go, and their tombstones and archive lines were read before); without
    /// one, InnoDB refuses them, naming the key.
    async fn delete_in_reference_order(
        &self,
        transaction: &mut Transaction,
        mut groups: Vec<(&PlanNode, &StepSql<'_>, Vec<String>)>,
    ) -> Result<u64, DeleteError> {
        let mut rows = 0;
        loop {
            groups.retain(|(.., keys)| !keys.is_empty());
            let mut progressed = false;
            for index in 0..groups.len() {
                let referenced = self.referenced_within(transaction, &groups, index).await?;
                let (node, step, keys) = &mut groups[index];
                let leaves: Vec<String> = keys.iter().filter(|key| !referenced.contains(*key)).cloned().collect();
                if leaves.is_empty() {
                    continue;
                }
                let leaves = crate::engine::table_keys(&node.table, &step.sql.key_types, leaves)?;
                rows += transaction.execute(&step.sql.delete_by_keys(Param::Keys(leaves), None)).await?;
                *keys = referenced.into_iter().collect();
                progressed = true;
            }
            if !progressed && !self.break_a_loop(transaction, &groups).await? {
                break;
            }
        }
        for (node, step, keys) in groups.into_iter().filter(|(.., keys)| !keys.is_empty()) {
            let keys = crate::engine::table_keys(&node.table, &step.sql.key_types, keys)?;
            rows += transaction.execute(&step.sql.delete_by_keys(Param::Keys(keys), None)).await?;
        }
        Ok(rows)
    }

    /// Sets to NULL, in the rows of a group, the columns of a key that may be NULL and references
    /// the table of a group: one edge of a loop the groups' rows form, where no order deletes
    /// them. Whether some row changed.
    async fn break_a_loop(
        &self,
        transaction: &mut Transaction,
        groups: &[(&PlanNode, &StepSql<'_>, Vec<String>)],
    ) -> Result<bool, DeleteError> {
        let tables: Vec<&crate::schema::Table> =
            groups.iter().filter_map(|(node, ..)| self.schema.table(&node.table)).collect();
        for (node, step, keys) in groups {
            let Some(table) = self.schema.table(&node.table) else { continue };
            for fk in &table.foreign_keys {
                let references_a_group = tables.iter().any(|target| {
                    target.name.eq_ignore_ascii_case(&fk.referenced_table)
                        && fk.referenced_schema.as_deref().is_none_or(|schema| target.schema.as_deref() == Some(schema))
                });
                let nullable = fk.columns.iter().all(|column| table.column(column).is_some_and(|c| c.nullable));
                // A key column set to NULL would let the delete by key miss its row.
                let key_columns = step.sql.key_columns();
                let in_key =
                    fk.columns.iter().any(|column| key_columns.iter().any(|key| key.eq_ignore_ascii_case(column)));
                if !references_a_group || !nullable || in_key {
                    continue;
                }
                let mut sql = SqlBuilder::new(self.database.backend());
                sql.push("UPDATE ").push(&table.quoted()).push(" SET ");
                for (index, column) in fk.columns.iter().enumerate() {
                    sql.push(if index == 0 { "" } else { ", " }).identifier(column).push(" = NULL");
                }
                sql.push(" WHERE ");
                let keys = crate::engine::table_keys(&node.table, &step.sql.key_types, keys.clone())?;
                sql.keys_in(&step.sql.key_columns(), &step.sql.key_types, Param::Keys(keys));
                for column in &fk.columns {
                    sql.push(" AND ").identifier(column).push(" IS NOT NULL");
                }
                if transaction.execute(&sql.finish()).await? > 0 {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The keys of the rows of `groups[index]` that a row of any group references, itself
    /// included: InnoDB refuses the delete of a row that references itself by a key it checks.
    async fn referenced_within(
        &self,
        transaction: &mut Transaction,
        groups: &[(&PlanNode, &StepSql<'_>, Vec<String>)],
        index: usize,
    ) -> Result<std::collections::BTreeSet<String>, DeleteError> {
        let backend = self.database.backend();
        let (node, step, keys) = &groups[index];
        let Some(table) = self.schema.table(&node.table) else { return Ok(Default::default()) };
        let columns = step.sql.key_columns();
        let quoted = table.quoted();
        let mut referenced = std::collections::BTreeSet::new();
        for (child, fk) in self.schema.references_to(table) {
            let in_child = |other: &&(&PlanNode, &StepSql<'_>, Vec<String>)| {
                self.schema.table(&other.0.table).is_some_and(|found| std::ptr::eq(found, child))
            };
            for (child_node, child_step, child_keys) in groups.iter().filter(in_child) {
                let target = if fk.referenced_columns.is_empty() { &table.primary_key } else { &fk.referenced_columns };
                let mut sql = SqlBuilder::new(backend);
                sql.push("SELECT ");
                backend.key_text(&mut sql, &columns);
                sql.push(" FROM ").push(&quoted).push(" WHERE ");
                let own = crate::engine::table_keys(&node.table, &step.sql.key_types, keys.clone())?;
                sql.keys_in(&columns, &step.sql.key_types, Param::Keys(own));
                sql.push(" AND EXISTS (SELECT 1 FROM ").push(&child.quoted()).push(" AS cascade_child WHERE ");
                let theirs =
                    crate::engine::table_keys(&child_node.table, &child_step.sql.key_types, child_keys.clone())?;
                sql.keys_in(&child_step.sql.key_columns(), &child_step.sql.key_types, Param::Keys(theirs));
                for (column, target) in fk.columns.iter().zip(target) {
                    sql.push(" AND cascade_child.").identifier(column).push(" = ").push(&quoted).push(".");
                    sql.identifier(target);
                }
                sql.push(")");
                // As the groups write their keys (MariaDB's JSON arrays have spaces).
                let found = first_column(transaction.fetch_texts(&sql.finish()).await?);
                referenced.extend(crate::engine::table_keys(&node.table, &step.sql.key_types, found)?.texts());
            }
        }
        Ok(referenced)
    }

    /// Whether rows of `node` are deleted by key as a loop's are
    /// ([`Self::delete_self_referencing`]): where the database checks every key row by row
    /// (InnoDB) and `node`'s table references itself through a key that refuses, so a row that
    /// references itself (a tree's top row, its own root) could not go otherwise: with the checks
    /// off, or on where the database deletes children of the table (its self-references set to
    /// NULL first, where they may be).
    pub(super) fn refers_to_itself_row_by_row(&self, node: &PlanNode) -> bool {
        let unchecked = self.database.backend().tuning().unchecked_foreign_keys.is_some();
        let Some(table) = self.schema.table(&node.table).filter(|_| unchecked) else {
            return false;
        };
        self.schema.references_to(table).any(|(child, fk)| {
            std::ptr::eq(child, table)
                && matches!(fk.on_delete, ReferentialAction::Restrict | ReferentialAction::NoAction)
        })
    }

    /// Deletes the rows of `node` whose keys are `keys` as a loop's ([`Self::delete_groups`]),
    /// writing their tombstones and archive lines as any delete does;
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
