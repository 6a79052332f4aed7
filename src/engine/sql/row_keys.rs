//! Where a statement cannot return what it changed (MySQL: neither its `UPDATE` nor its
//! multiple-table `DELETE`): the rows are selected first, locked, with what a `RETURNING` would
//! give and their row key, then changed by row key in the same transaction; a table without a
//! primary key is deleted by the single-table form.

use super::{NodeSql, ROW_ALIAS, Returning};
use crate::config::OnDelete;
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement};

impl NodeSql<'_> {
    /// Whether this nullify's set-based statements select the identities of the rows it sets to
    /// NULL, locking them, for [`Self::nullify_by_row_keys`] to write: where an `UPDATE` returns
    /// nothing (MySQL) and the run records those rows.
    pub(in crate::engine) fn selects_nullified_first(&self) -> bool {
        self.node.action == OnDelete::Nullify && self.returns_nullified && !self.backend.tuning().updates_return
    }

    /// `returning`, when this node's delete returns rows (for tombstones or the archive) and the
    /// database's delete cannot return them (MySQL): its statements select the rows instead,
    /// locking them, and [`Self::delete_by_row_keys`] deletes exactly those.
    pub(in crate::engine) fn selected_before_delete<'r>(
        &self,
        returning: Option<&'r Returning>,
    ) -> Option<&'r Returning> {
        let selects = self.node.action == OnDelete::Delete && !self.backend.tuning().deletes_return;
        returning.filter(|_| selects && !self.deletes_without_key())
    }

    /// Whether this node's set-based deletes take the database's single-table form, which
    /// addresses no row by key and names no alias: where its delete returns nothing in the
    /// tool's form (MySQL) and the table has no primary key to address its rows by, nor a guard
    /// or spared rows that need the alias. MariaDB's single-table `DELETE` takes a `LIMIT` and a
    /// `RETURNING` of its own.
    pub(super) fn deletes_without_key(&self) -> bool {
        let keyless = self.names.table().is_some_and(|table| table.primary_key.is_empty());
        matches!(self.node.action, OnDelete::Delete | OnDelete::Database)
            && !self.backend.tuning().deletes_return
            && keyless
            && self.guard.is_none()
            && self.spared.is_none()
    }

    /// Up to `limit` (or all) rows whose key (`by_key`) or relation column is in `matched`,
    /// deleted by the single-table form (see [`Self::deletes_without_key`]), returning
    /// `returning`.
    pub(super) fn delete_without_key(
        &self,
        matched: Param,
        returning: Option<&Returning>,
        limit: Option<u64>,
        by_key: bool,
    ) -> Statement {
        let mut sql = self.builder();
        sql.push("DELETE FROM ").push(&self.table()).push(" WHERE ");
        // No guard and no spared rows (see `deletes_without_key`): nothing refers to an alias.
        self.matching(&mut sql, matched, by_key);
        if let Some(limit) = limit {
            sql.push(" LIMIT ").push(&limit.to_string());
        }
        self.returning(&mut sql, returning);
        sql.finish()
    }

    /// What a delete of the rows `matched` reaches (by key, or by relation column) returns, read
    /// instead (see [`Self::selected_before_delete`]): up to `limit` rows, each with its
    /// [`Self::row_key`] as one more text, locked until the transaction ends.
    pub(super) fn deleted_rows(
        &self,
        matched: Param,
        returning: &Returning,
        limit: Option<u64>,
        by_key: bool,
    ) -> Statement {
        self.selected_rows(matched, limit, by_key, |sql| self.returning_list(sql, returning))
    }

    /// `SELECT` what `list` writes and the [`Self::row_key`] (as text) of up to `limit` of the
    /// rows whose key (`by_key`) or relation column is in `matched`, and that the root's guard
    /// lets go, locked until the transaction ends: the rows a statement that returns nothing
    /// then changes by row key.
    fn selected_rows(
        &self,
        matched: Param,
        limit: Option<u64>,
        by_key: bool,
        list: impl FnOnce(&mut SqlBuilder),
    ) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ");
        list(&mut sql);
        sql.push(", ");
        self.backend.key_text(&mut sql, &self.row_key());
        sql.push(" FROM ").push(&self.table()).push(" AS ").identifier(ROW_ALIAS).push(" WHERE ");
        if by_key {
            self.matching(&mut sql, matched, true);
        } else {
            self.write_rows(&mut sql, matched);
            if let Some(guard) = &self.guard {
                guard.write(&mut sql, ROW_ALIAS);
            }
        }
        if let Some(limit) = limit {
            sql.push(" LIMIT ").push(&limit.to_string());
        }
        sql.push(&self.backend.lock_rows_of(ROW_ALIAS));
        sql.finish()
    }

    /// Deletes the rows whose [`Self::row_key`]s (of the column types `types`) are `keys`: those
    /// [`Self::deleted_rows`] selected.
    pub(in crate::engine) fn delete_by_row_keys(&self, keys: Param, types: &[KeyType]) -> Statement {
        let mut sql = self.builder();
        self.backend.delete_from(&mut sql, &self.table(), ROW_ALIAS);
        sql.push(" WHERE ").keys_in(&self.row_key(), types, keys);
        sql.finish()
    }

    /// The identities (as one text each) of up to `limit` of the rows a nullify sets to NULL
    /// among those `matched` reaches, locked until the transaction ends.
    pub(super) fn nullified_rows(&self, matched: Param, limit: Option<u64>) -> Statement {
        self.selected_rows(matched, limit, false, |sql| self.backend.key_text(sql, &self.identity_columns()))
    }

    /// Sets to NULL the relation columns of the rows whose [`Self::row_key`]s (of the column
    /// types `types`) are `keys`: those [`Self::nullified_rows`] selected.
    pub(in crate::engine) fn nullify_by_row_keys(&self, keys: Param, types: &[KeyType]) -> Statement {
        let mut sql = self.builder();
        sql.push("UPDATE ").push(&self.table()).push(" SET ");
        for (index, column) in self.match_columns().iter().enumerate() {
            sql.push(if index == 0 { "" } else { ", " }).identifier(column).push(" = NULL");
        }
        sql.push(" WHERE ").keys_in(&self.row_key(), types, keys);
        sql.finish()
    }

    /// What tells one row of the node's table from every other, where the database has no row
    /// address (MySQL): the table's primary key, else the node's key.
    pub(in crate::engine) fn row_key(&self) -> Vec<String> {
        match self.names.table() {
            Some(table) if !table.primary_key.is_empty() => table.primary_key.clone(),
            _ => self.key_columns(),
        }
    }
}
