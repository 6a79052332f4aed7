//! The statements of the orphans, all built on one anti-join (a child row whose relation columns
//! are all not NULL and match no parent row, one equality per column): a relation's count and sample, the keys of a batch,
//! the dry run's count of rows to nullify, and a batch's update and root guard.

use super::group::Group;
use super::relations::Candidate;
use crate::cleanup::batches;
use crate::db::sql::{Param, SqlBuilder, Statement, quote_identifier};
use crate::db::{Backend, Keys};
use crate::engine::RootGuard;
use crate::schema::Table;

/// The alias of the child table in every orphan query.
const CHILD: &str = "orphan";
/// The alias of the parent table in the anti-join.
const PARENT: &str = "parent";

impl Candidate<'_> {
    /// `"orphan"."column" IS NOT NULL AND NOT EXISTS (...)`: the child row (aliased `orphan`)
    /// points at no parent row.
    fn orphan_condition(&self, sql: &mut SqlBuilder) {
        self.parent_missing().write(sql, CHILD);
    }

    /// ` FROM child AS orphan ... WHERE ...`: the orphans of this relation alone, as the
    /// anti-join a statement reading many rows should use: the join of
    /// [`ParentMissing::write_join`] where the parent key is unique; else `NOT EXISTS`, which
    /// stops at the first parent row where SQLite's join reads every row holding the value (a
    /// key held by 10,000 parent rows made a 0.03 s count take 25 s).
    fn orphans_from(&self, sql: &mut SqlBuilder) {
        sql.push(" FROM ").push(&self.child_table.quoted()).push(" AS ").identifier(CHILD);
        if self.parent_table.columns_are_unique(&self.parent_key) {
            self.parent_missing().write_join(sql, CHILD);
        } else {
            sql.push(" WHERE ");
            self.orphan_condition(sql);
        }
    }

    fn parent_missing(&self) -> ParentMissing {
        ParentMissing {
            pairs: self.catalog_columns().into_iter().zip(self.parent_key.iter().cloned()).collect(),
            parent_table: self.parent_table.quoted(),
        }
    }

    /// `SELECT COUNT(*)` of its orphans.
    pub(super) fn count(&self, backend: &'static dyn Backend) -> Statement {
        let mut sql = SqlBuilder::new(backend);
        sql.push("SELECT COUNT(*)");
        self.orphans_from(&mut sql);
        sql.finish()
    }

    /// The first `limit` orphans' keys, as text, in key order.
    pub(super) fn sample(&self, backend: &'static dyn Backend, limit: u64) -> Statement {
        let mut sql = SqlBuilder::new(backend);
        let columns: Vec<String> =
            self.key.iter().map(|key| format!("{}.{}", quote_identifier(CHILD), quote_identifier(key))).collect();
        let texts: Vec<String> = columns.iter().map(|column| backend.text(column)).collect();
        sql.push("SELECT ").push(&texts.join(", "));
        self.orphans_from(&mut sql);
        sql.push(" ORDER BY ").push(&columns.join(", ")).push(" LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.finish()
    }
}

/// The test that a child row points at no parent row by one relation. Over several columns a
/// row with a NULL in any of them references nothing (`MATCH SIMPLE`, what both databases
/// enforce), so it is no orphan.
struct ParentMissing {
    /// Each child relation column with the parent column it references.
    pairs: Vec<(String, String)>,
    /// The parent table as a statement names it.
    parent_table: String,
}

impl ParentMissing {
    /// `"child"."a" IS NOT NULL AND ... AND `, the child row aliased `child`.
    fn write_not_null(&self, sql: &mut SqlBuilder, child: &str) {
        for (column, _) in &self.pairs {
            sql.identifier(child).push(".").identifier(column).push(" IS NOT NULL AND ");
        }
    }

    /// `"parent"."x" = "child"."a" AND ...`: a parent row the child row points at.
    fn write_match(&self, sql: &mut SqlBuilder, child: &str) {
        for (index, (column, key)) in self.pairs.iter().enumerate() {
            if index > 0 {
                sql.push(" AND ");
            }
            sql.identifier(PARENT).push(".").identifier(key).push(" = ");
            sql.identifier(child).push(".").identifier(column);
        }
    }

    /// `"child"."column" IS NOT NULL AND NOT EXISTS (...)`, the child row aliased `child`.
    fn write(&self, sql: &mut SqlBuilder, child: &str) {
        self.write_not_null(sql, child);
        sql.push("NOT EXISTS (SELECT 1 FROM ").push(&self.parent_table).push(" AS ").identifier(PARENT);
        sql.push(" WHERE ");
        self.write_match(sql, child);
        sql.push(")");
    }

    /// ` LEFT JOIN parent ON ... WHERE "child"."column" IS NOT NULL AND "parent"."key" IS NULL`
    /// after the child table (aliased `child`): the same anti-join as [`Self::write`], for a
    /// statement that reads many rows. SQLite runs a correlated `NOT EXISTS` as a subroutine
    /// per row, three times slower than the join's lookup (50,000 rows: 14 against 5 ms);
    /// PostgreSQL plans both as the same anti-join. A parent row that matches has the key it
    /// matched on, never NULL, and a child row matching several parents yields no row either
    /// (but SQLite reads every one of them: see [`Candidate::orphans_from`]).
    fn write_join(&self, sql: &mut SqlBuilder, child: &str) {
        sql.push(" LEFT JOIN ").push(&self.parent_table).push(" AS ").identifier(PARENT).push(" ON ");
        self.write_match(sql, child);
        sql.push(" WHERE ");
        self.write_not_null(sql, child);
        let (_, key) = &self.pairs[0];
        sql.identifier(PARENT).push(".").identifier(key).push(" IS NULL");
    }
}

/// `SELECT COUNT(*)` of the rows of `table` that dangle by any of `relations` (`None`: a
/// relation that no longer resolves against the schema, which matches no row).
pub(super) fn count_dangling(
    backend: &'static dyn Backend,
    table: &Table,
    relations: &[Option<Candidate<'_>>],
) -> Statement {
    let mut sql = SqlBuilder::new(backend);
    sql.push("SELECT COUNT(*) FROM ").push(&table.quoted()).push(" AS ").identifier(CHILD).push(" WHERE ");
    for (index, relation) in relations.iter().enumerate() {
        if index > 0 {
            sql.push(" OR ");
        }
        sql.push("(");
        if let Some(relation) = relation {
            relation.orphan_condition(&mut sql);
        } else {
            sql.push("FALSE");
        }
        sql.push(")");
    }
    sql.finish()
}

/// Which keys a read of orphans looks at.
pub(super) enum Among<'k> {
    /// The first `limit` after `after` (from the lowest without it).
    Next { after: Option<&'k str>, limit: u64 },
    /// Only these.
    These(&'k [String]),
}

impl Group<'_> {
    /// The keys of rows that dangle by any of `relations`, ascending, among `keys`.
    pub(super) fn orphan_keys(&self, relations: &[&Candidate<'_>], keys: Among<'_>) -> Statement {
        let key = format!("{}.{}", quote_identifier(CHILD), quote_identifier(&self.key));
        batches::key_array(self.engine.database().backend(), &key, |sql| {
            match (relations, &keys) {
                // A scan reads many rows: the join's anti-join is the faster one. Among given keys,
                // each row is tested by itself (its key's lookup names the table's column alone).
                ([relation], Among::Next { .. }) => relation.orphans_from(sql),
                // A row dangling by any of several relations: joined to each parent, a row matching
                // two rows of one parent (a key that is not unique) would come back twice.
                _ => {
                    sql.push(" FROM ").push(&self.table.quoted()).push(" AS ").identifier(CHILD).push(" WHERE (");
                    for (index, relation) in relations.iter().enumerate() {
                        sql.push(if index == 0 { "(" } else { " OR (" });
                        relation.orphan_condition(sql);
                        sql.push(")");
                    }
                    sql.push(")");
                }
            }
            match keys {
                Among::Next { after, limit } => batches::next_keys(sql, &key, &self.key_type, after, limit),
                Among::These(keys) => {
                    let keys = Param::Keys(Keys::read(&self.key_type, keys.to_vec()));
                    sql.push(" AND ").key_list(&self.key, &self.key_type, keys);
                }
            }
        })
    }

    /// The test, as a deletion's root guard, that a row still dangles by any of `relations`.
    pub(super) fn still_dangling(&self, relations: &[&Candidate<'_>]) -> RootGuard {
        let backend = self.engine.database().backend();
        let tests: Vec<ParentMissing> = relations.iter().map(|relation| relation.parent_missing()).collect();
        RootGuard::new(move |row| {
            let mut sql = SqlBuilder::new(backend);
            for (index, test) in tests.iter().enumerate() {
                sql.push(if index == 0 { "(" } else { " OR (" });
                test.write(&mut sql, row);
                sql.push(")");
            }
            sql.finish().sql
        })
    }

    /// Sets the relation columns (all of them) of those rows among `keys` that still dangle by
    /// it to NULL.
    pub(super) fn nullify(&self, relation: &Candidate<'_>, keys: &[String]) -> Statement {
        let mut sql = SqlBuilder::new(self.engine.database().backend());
        // The anti-join tests each updated row; an `IN (SELECT ...)` of the table's orphans was
        // read whole by SQLite for every batch (270 against 19 ms a batch at 1M rows).
        sql.push("UPDATE ").push(&self.table.quoted()).push(" AS ").identifier(CHILD).push(" SET ");
        for (index, column) in relation.catalog_columns().iter().enumerate() {
            sql.push(if index == 0 { "" } else { ", " }).identifier(column).push(" = NULL");
        }
        sql.push(" WHERE ").key_list(&self.key, &self.key_type, Param::Keys(Keys::read(&self.key_type, keys.to_vec())));
        sql.push(" AND ");
        relation.orphan_condition(&mut sql);
        sql.finish()
    }
}
