//! The statements of a search: the totals, the rows with a NULL, the sample groups, and the
//! next batch of removable rows.

use super::{Keep, SAMPLE_REMOVED_KEYS};
use crate::cleanup::batches;
use crate::config::{Located, StatusValue};
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement};

/// The statements of a search. Aliases and derived columns are named `cascade_*`, so they do not
/// meet the table's own column names.
pub(super) struct Queries<'a> {
    pub(super) table: String,
    pub(super) by: &'a [String],
    pub(super) key: &'a [String],
    pub(super) order_by: &'a [String],
    pub(super) keep: Keep,
}

impl Queries<'_> {
    /// `"a" IS NOT NULL AND "b" IS NOT NULL`: NULL equals nothing, so such rows are in no group.
    fn not_null(&self, sql: &mut SqlBuilder) {
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " AND " }).identifier(column).push(" IS NOT NULL");
        }
    }

    /// `FROM table WHERE ... GROUP BY by HAVING COUNT(*) > 1`: the groups.
    fn groups(&self, sql: &mut SqlBuilder) {
        sql.push(" FROM ").push(&self.table).push(" WHERE ");
        self.not_null(sql);
        sql.push(" GROUP BY ").identifiers(self.by).push(" HAVING COUNT(*) > 1");
    }

    /// The number of groups and the rows in them.
    pub(super) fn totals(&self, mut sql: SqlBuilder) -> crate::db::sql::Statement {
        sql.push("SELECT ").text("COUNT(*)").push(", ").text("COALESCE(SUM(cascade_rows), 0)").push(" FROM (");
        sql.push("SELECT COUNT(*) AS cascade_rows");
        self.groups(&mut sql);
        sql.push(") AS cascade_groups");
        sql.finish()
    }

    /// Rows with a NULL in some `by` column.
    pub(super) fn null_rows(&self, mut sql: SqlBuilder) -> crate::db::sql::Statement {
        sql.push("SELECT COUNT(*) FROM ").push(&self.table).push(" WHERE ");
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " OR " }).identifier(column).push(" IS NULL");
        }
        sql.finish()
    }

    /// The largest `groups` groups, each row with its group's number and size, its key and the
    /// group's values, in the order that keeps its first row; at most the kept row and
    /// [`SAMPLE_REMOVED_KEYS`] more per group.
    pub(super) fn sample(&self, mut sql: SqlBuilder, groups: usize) -> crate::db::sql::Statement {
        let values: Vec<String> = (1..=self.by.len()).map(|n| format!("cascade_value_{n}")).collect();
        sql.push("SELECT ").text("cascade_group").push(", ").text("cascade_rows").push(", cascade_key");
        for value in &values {
            sql.push(", ").push(value);
        }
        sql.push(" FROM (SELECT cascade_dup.cascade_group, cascade_dup.cascade_rows, ");
        self.key_text(&mut sql);
        sql.push(" AS cascade_key");
        for (column, value) in self.by.iter().zip(&values) {
            sql.push(", CAST(cascade_row.").identifier(column).as_text().push(" AS ").push(value);
        }
        sql.push(", ROW_NUMBER() OVER (PARTITION BY cascade_dup.cascade_group ORDER BY ");
        self.keep_order(&mut sql);
        sql.push(") AS cascade_position FROM ").push(&self.table).push(" AS cascade_row JOIN (SELECT ");
        for (index, column) in self.by.iter().enumerate() {
            sql.identifier(column).push(&format!(" AS cascade_by_{}, ", index + 1));
        }
        sql.push("COUNT(*) AS cascade_rows, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, ");
        sql.identifiers(self.by).push(") AS cascade_group");
        self.groups(&mut sql);
        sql.push(" ORDER BY COUNT(*) DESC, ").identifiers(self.by).push(" LIMIT ");
        sql.bind(Param::integer(i64::try_from(groups).unwrap_or(i64::MAX)));
        sql.push(") AS cascade_dup ON ");
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " AND " });
            sql.push("cascade_row.").identifier(column).push(&format!(" = cascade_dup.cascade_by_{}", index + 1));
        }
        sql.push(") AS cascade_sample WHERE cascade_position <= ");
        sql.bind(Param::integer(1 + SAMPLE_REMOVED_KEYS as i64));
        // Qualified: a bare name would sort by the output column of the same name, which is text.
        sql.push(" ORDER BY cascade_sample.cascade_group, cascade_sample.cascade_position");
        sql.finish()
    }

    /// The next `limit` rows after the key `after` that are not their group's kept row, in key
    /// order: (key, the kept row's key), as text.
    /// `may_go`: the status column (as the catalog spells it) and the values that allow a row's
    /// deletion; a duplicate whose status does not is left, children and all.
    pub(super) fn removable(
        &self,
        mut sql: SqlBuilder,
        key_type: &KeyType,
        may_go: Option<&(String, Vec<Located<StatusValue>>)>,
        after: Option<&str>,
        limit: u64,
    ) -> Statement {
        let key = &self.key[0];
        let window = |sql: &mut SqlBuilder| {
            sql.push(" OVER (PARTITION BY ");
            for (index, column) in self.by.iter().enumerate() {
                sql.push(if index == 0 { "cascade_row." } else { ", cascade_row." }).identifier(column);
            }
            sql.push(" ORDER BY ");
            self.keep_order(sql);
            sql.push(")");
        };
        sql.push("SELECT ").text("cascade_ranked.cascade_key").push(", ").text("cascade_ranked.cascade_kept");
        sql.push(" FROM (");
        sql.push("SELECT cascade_row.").identifier(key).push(" AS cascade_key, FIRST_VALUE(cascade_row.");
        sql.identifier(key).push(")");
        window(&mut sql);
        sql.push(" AS cascade_kept, ROW_NUMBER()");
        window(&mut sql);
        sql.push(" AS cascade_position, ");
        match may_go {
            Some((column, values)) => {
                sql.push("CASE WHEN ");
                crate::engine::status_in(&mut sql, column, values);
                sql.push(" THEN 1 ELSE 0 END")
            }
            None => sql.push("1"),
        };
        sql.push(" AS cascade_may_go FROM ").push(&self.table).push(" AS cascade_row WHERE ");
        self.not_null(&mut sql);
        sql.push(") AS cascade_ranked WHERE cascade_ranked.cascade_position > 1 AND cascade_ranked.cascade_may_go = 1");
        batches::after(&mut sql, "cascade_ranked.cascade_key", key_type, after);
        sql.push(" ORDER BY cascade_ranked.cascade_key LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.finish()
    }

    /// The key of a row of `cascade_row` as text: the value of a single column, a JSON array of
    /// a composite key's values.
    fn key_text(&self, sql: &mut SqlBuilder) {
        match self.key {
            [single] => {
                sql.push("CAST(cascade_row.").identifier(single).as_text();
            }
            // The columns are unqualified here: the other side of the join names its own
            // columns `cascade_*`, so they are the table's.
            columns => sql.backend().json_array(sql, columns),
        }
    }

    /// The order in which a group's first row is the one kept: the order columns (NULL last,
    /// whichever the direction: an unknown age is neither oldest nor newest), then the key.
    fn keep_order(&self, sql: &mut SqlBuilder) {
        let direction = match self.keep {
            Keep::Oldest => " ASC",
            Keep::Newest => " DESC",
        };
        let mut first = true;
        for column in self.order_by {
            sql.push(if first { "" } else { ", " });
            first = false;
            sql.push("CASE WHEN cascade_row.").identifier(column).push(" IS NULL THEN 1 ELSE 0 END, ");
            sql.push("cascade_row.").identifier(column).push(direction);
        }
        for column in self.key {
            sql.push(", cascade_row.").identifier(column).push(direction);
        }
    }
}
