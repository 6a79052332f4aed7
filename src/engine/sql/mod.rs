//! The statements of one plan node, built from the node and its key types through the
//! database's backend: the engine knows plans, `db` knows only statements.

use std::sync::Arc;

use crate::config::OnDelete;
use crate::config::{Located, StatusCheck, StatusValue, Strategy};
use crate::db::Backend;
use crate::db::sql::{KeyType, Param, SqlBuilder, SqlValue, Statement, quote_identifier};
use crate::planner::{OutboxTarget, PlanNode};
use crate::schema::CatalogNames;

mod row_keys;
mod with;

use with::tombstones_select;
pub(crate) use with::{delete_archived, delete_together, delete_with_tombstones, outbox_insert};

/// What a delete returns for each row, all as text: the key, and for the outbox the shard key
/// and the payload (a JSON object), and for the archive the whole row (a JSON object).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Returning {
    /// The key columns of a tombstone's object identifier (none without an outbox).
    pub identity: Vec<String>,
    pub shard_key: Option<String>,
    pub payload: Vec<String>,
    /// The table's columns, when rows are archived.
    pub row: Option<Vec<String>>,
}

/// The alias of the table a delete works on, for the archive's whole-row JSON, and of the row a
/// nullify sets to NULL, which its [`NodeSql::spared`] rows are correlated with.
pub(crate) const ROW_ALIAS: &str = "cascade_row";

/// The alias of a loop's child rows when the keys of the rows they reference are read.
const CHILD_ALIAS: &str = "cascade_child";

/// The alias of the key a chunk fetch returns as text.
const KEY_ALIAS: &str = "cascade_key";

/// A status value as a bound parameter.
fn status_value(value: &StatusValue) -> Param {
    Param::Value(match value {
        StatusValue::Integer(i) => SqlValue::Integer(*i),
        StatusValue::Text(t) => SqlValue::Text(t.clone()),
    })
}

/// `"column" IN (values...)`: the status check of root rows.
pub(crate) fn status_in(sql: &mut SqlBuilder, column: &str, values: &[Located<StatusValue>]) {
    sql.one_of(column, values.iter().map(|value| status_value(&value.value)));
}

/// A condition every root row must still meet as it is deleted (a clean-up's orphan must still
/// point at no parent), as SQL over the row under a given alias, without parameters.
#[derive(Clone)]
pub(crate) struct RootGuard(Arc<dyn Fn(&str) -> String + Send + Sync>);

impl RootGuard {
    /// The guard that `condition(alias)` writes.
    pub(crate) fn new(condition: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self(Arc::new(condition))
    }

    fn write(&self, sql: &mut SqlBuilder, alias: &str) {
        sql.push(" AND (").push(&(self.0)(alias)).push(")");
    }
}

impl std::fmt::Debug for RootGuard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&(self.0)("row"))
    }
}

/// How many rows of one table any of `nodes` (nodes of that table) reach through the keys
/// `matched`, as text: a row that several relations reach counts once.
pub(super) fn count_reached(nodes: &[&NodeSql<'_>], matched: &Param) -> Statement {
    let first = nodes.first().expect("a count of at least one node");
    let mut sql = first.builder();
    sql.push("SELECT ").text("COUNT(*)").push(" FROM ").push(&first.table()).push(" WHERE ");
    for (index, node) in nodes.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { " OR (" });
        node.write_match(&mut sql, matched.clone());
        sql.push(")");
    }
    sql.finish()
}

/// Whether each of `children` has a row that the keys `matched` reach, in one result row of
/// `'1'` and `'0'`, one per child, in order.
pub(super) fn children_present(children: &[NodeSql<'_>], matched: &Param) -> Statement {
    let first = children.first().expect("a probe of at least one child");
    let mut sql = first.builder();
    for (index, child) in children.iter().enumerate() {
        sql.push(if index == 0 { "SELECT CAST(CASE WHEN " } else { ", CAST(CASE WHEN " });
        child.write_exists(&mut sql, matched.clone());
        sql.push(" THEN '1' ELSE '0' END").as_text();
    }
    sql.finish()
}

/// The key a node's rows are deleted by, and its children's relations reference by default.
pub(crate) fn key_of(node: &PlanNode) -> Vec<String> {
    if node.key.is_empty() { vec!["id".to_owned()] } else { node.key.clone() }
}

/// One column, or a row of several, to compare with `IN`.
fn write_columns(sql: &mut SqlBuilder, columns: &[String]) {
    match columns {
        [one] => sql.identifier(one),
        several => sql.push("(").identifiers(several).push(")"),
    };
}

/// What a plan node's statements need to know beyond the node itself.
pub(crate) struct NodeSql<'a> {
    pub backend: &'static dyn Backend,
    pub node: &'a PlanNode,
    /// The catalog's spelling of the node's table and columns.
    pub names: CatalogNames<'a>,
    /// Types of this node's key columns (for deleting a chunk by key).
    pub key_types: Vec<KeyType>,
    /// Types of the keys this node is matched by: the parent's key's (each compared as the
    /// relation column it meets), or the ids' at the root.
    pub match_types: Vec<KeyType>,
    /// Where the relation references parent columns other than the parent's key: the parent's
    /// rows of those keys, through which the node's rows are found.
    pub through_parent: Option<ParentRows>,
    pub partitioned: bool,
    /// The node is a recursive relation of a model to itself: its parent rows are of its own
    /// table.
    pub self_reference: bool,
    /// At the root: a condition each row must still meet to be deleted by key.
    pub guard: Option<RootGuard>,
    /// A nullify's ` AND NOT ...` over its row (aliased [`ROW_ALIAS`]): the rows a later step
    /// deletes before their parent row goes (see `steps::spared_rows`), which keep their value.
    pub spared: Option<String>,
    /// A nullify returns the identity (as one text) of each row it sets to NULL, which the run
    /// records (see `audit::nullified`).
    pub returns_nullified: bool,
}

/// The parent rows a relation to parent columns other than the key finds its rows through.
pub(crate) struct ParentRows {
    /// The parent's table, quoted.
    pub table: String,
    /// The parent's key columns, as the catalog spells them.
    pub key: Vec<String>,
    /// Their types.
    pub key_types: Vec<KeyType>,
    /// The parent's columns the relation's columns reference, as the catalog spells them.
    pub referenced: Vec<String>,
}

/// The alias of the parent table in a lookup through the parent's rows.
const PARENT_ALIAS: &str = "cascade_parent";

impl NodeSql<'_> {
    /// The key columns, as the catalog spells them (`id` when the node has none).
    pub(super) fn key_columns(&self) -> Vec<String> {
        match self.node.key.as_slice() {
            [] => vec![self.names.column("id")],
            key => key.iter().map(|column| self.names.column(column)).collect(),
        }
    }

    /// The first key column: the root's key (a root's key is a single column).
    pub(super) fn key(&self) -> String {
        self.key_columns().swap_remove(0)
    }

    /// The columns this node's rows are found by: the relation's, or the key at the root.
    pub(super) fn match_columns(&self) -> Vec<String> {
        if self.node.columns.is_empty() {
            self.key_columns()
        } else {
            self.node.columns.iter().map(|column| self.names.column(column)).collect()
        }
    }

    /// The rows (of the node's table, unaliased or aliased by the caller) that the keys `matched`
    /// (the parent chunk's, or the root ids) reach. A self-reference's parent rows are of its
    /// own table, and a row that references itself (the top of a tree whose root column points
    /// at itself) is not its own child: it goes with its chunk. A row of the chunk that references
    /// another of the chunk is a child all the same, deleted before it: a database that checks
    /// each row at once (`RESTRICT`, SQLite) refuses them in one statement.
    pub(super) fn write_match(&self, sql: &mut SqlBuilder, matched: Param) {
        if self.self_reference {
            sql.push("(");
            self.write_parent_match(sql, matched);
            sql.push(" AND NOT (");
            self.write_points_at_itself(sql);
            sql.push("))");
        } else {
            self.write_parent_match(sql, matched);
        }
    }

    /// `EXISTS` a row that `matched` reaches.
    fn write_exists(&self, sql: &mut SqlBuilder, matched: Param) {
        sql.push("EXISTS (SELECT 1 FROM ").push(&self.table()).push(" WHERE ");
        self.write_match(sql, matched);
        sql.push(")");
    }

    /// A self-reference's row points at itself: each of its columns equals the column it
    /// references, unqualified.
    fn write_points_at_itself(&self, sql: &mut SqlBuilder) {
        for (index, (column, referenced)) in self.match_columns().iter().zip(self.referenced_columns()).enumerate() {
            sql.push(if index == 0 { "" } else { " AND " }).identifier(column).push(" = ").identifier(&referenced);
        }
    }

    fn write_parent_match(&self, sql: &mut SqlBuilder, matched: Param) {
        let Some(parent) = &self.through_parent else {
            sql.keys_in(&self.match_columns(), &self.match_types, matched);
            return;
        };
        write_columns(sql, &self.match_columns());
        sql.push(" IN (SELECT ");
        let referenced: Vec<String> =
            parent.referenced.iter().map(|column| format!("{PARENT_ALIAS}.{}", quote_identifier(column))).collect();
        sql.push(&referenced.join(", ")).push(" FROM ").push(&parent.table).push(" AS ").identifier(PARENT_ALIAS);
        sql.push(" WHERE ").keys_in(&parent.key, &parent.key_types, matched).push(")");
    }

    /// The rows a set-based statement writes: those `matched` reaches, less the spared ones.
    fn write_rows(&self, sql: &mut SqlBuilder, matched: Param) {
        self.write_match(sql, matched);
        if let Some(spared) = &self.spared {
            sql.push(spared);
        }
    }

    /// The node's table, aliased [`ROW_ALIAS`] where a guard or the spared rows refer to its row.
    fn table_of_rows(&self, sql: &mut SqlBuilder) {
        sql.push(&self.table());
        if self.guard.is_some() || self.spared.is_some() {
            sql.push(" AS ").identifier(ROW_ALIAS);
        }
    }

    /// The node's key, read back as one text (see `Backend::key_text`).
    fn key_text(&self, sql: &mut SqlBuilder) {
        self.backend.key_text(sql, &self.key_columns());
    }

    fn table(&self) -> String {
        self.names.quoted_table()
    }

    fn builder(&self) -> SqlBuilder {
        SqlBuilder::new(self.backend)
    }

    /// per_row: the next chunk of up to `limit` keys (as text) among the rows matching `matched`
    /// (the parent chunk's keys, or the root ids), at the root only those whose status allows
    /// deletion, and none of the keys `excluded` (rows of a loop, which go together later).
    pub(super) fn select_chunk(
        &self,
        matched: Param,
        status: Option<&StatusCheck>,
        limit: u64,
        excluded: Option<Param>,
    ) -> Statement {
        let mut sql = self.builder();
        // No ORDER BY: the rows fetched are deleted before the next fetch, so any order finishes,
        // and without a sort the database stops reading at the LIMIT instead of reading and
        // sorting every remaining row of the parent chunk on each fetch.
        // The keys come back as one JSON array (see `Backend::json_array_agg`).
        sql.push("SELECT ");
        self.backend.json_array_agg(&mut sql, KEY_ALIAS, KEY_ALIAS);
        sql.push(" FROM (SELECT ");
        self.key_text(&mut sql);
        sql.push(" AS ").identifier(KEY_ALIAS).push(" FROM ").push(&self.table()).push(" WHERE ");
        self.write_match(&mut sql, matched);
        if let Some(status) = status {
            sql.push(" AND ");
            status_in(&mut sql, &self.names.column(&status.column.value), &status.proceed_or_in_progress());
        }
        if let Some(excluded) = excluded {
            sql.push(" AND NOT (").keys_in(&self.key_columns(), &self.key_types, excluded).push(")");
        }
        sql.push(" LIMIT ").push(&limit.to_string()).push(") AS cascade_chunk");
        sql.finish()
    }

    /// per_row: deletes one chunk by key, returning what the outbox and archive need.
    pub(super) fn delete_by_keys(&self, keys: Param, returning: Option<&Returning>) -> Statement {
        if self.deletes_without_key() {
            return self.delete_without_key(keys, returning, None, true);
        }
        if let Some(returning) = self.selected_before_delete(returning) {
            return self.deleted_rows(keys, returning, None, true);
        }
        let mut sql = self.builder();
        self.write_delete_by_keys(&mut sql, keys);
        self.returning(&mut sql, returning);
        sql.finish()
    }

    /// `DELETE FROM table WHERE key IN keys`, into a statement being built.
    fn write_delete_by_keys(&self, sql: &mut SqlBuilder, keys: Param) {
        self.backend.delete_from(sql, &self.table(), ROW_ALIAS);
        sql.push(" WHERE ");
        self.matching(sql, keys, true);
    }

    /// Each row among `keys` (this node's) with the key of the row among `parent_keys` (of
    /// `parent`, this node's parent) that it references by this node's relation, or NULL: both
    /// as text. How rows of a loop reference each other.
    pub(super) fn references_among(&self, parent: &NodeSql<'_>, keys: Param, parent_keys: Param) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ");
        self.key_text(&mut sql);
        sql.push(", (SELECT ");
        parent.key_text(&mut sql);
        sql.push(" FROM ").push(&parent.table()).push(" WHERE ");
        sql.keys_in(&parent.key_columns(), &parent.key_types, parent_keys);
        let referenced = self.node.references.clone().unwrap_or_else(|| key_of(parent.node));
        for (column, referenced) in self.node.columns.iter().zip(&referenced) {
            sql.push(" AND ").identifier(&parent.names.column(referenced)).push(" = ");
            sql.identifier(CHILD_ALIAS).push(".").identifier(&self.names.column(column));
        }
        sql.push(" LIMIT 1) FROM ").push(&self.table()).push(" AS ").identifier(CHILD_ALIAS).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, keys);
        sql.finish()
    }

    /// A self-reference: the keys (as one JSON array of texts) of the rows that the rows `keys`
    /// reference by this relation, their parents, the way [`Self::select_chunk`] returns keys;
    /// and `"1"` when those parents have other children than `keys` (which a fetch by the
    /// parents' keys would find), `"0"` otherwise.
    pub(super) fn parents_of(&self, keys: Param) -> Statement {
        let columns = self.match_columns();
        let key = self.key_columns();
        let of_keys = |sql: &mut SqlBuilder| {
            sql.push("(SELECT ").identifiers(&columns).push(" FROM ").push(&self.table()).push(" WHERE ");
            sql.keys_in(&key, &self.key_types, keys.clone()).push(")");
        };
        let mut sql = self.builder();
        sql.push("SELECT ");
        self.backend.json_array_agg(&mut sql, KEY_ALIAS, KEY_ALIAS);
        sql.push(", CASE WHEN EXISTS (SELECT 1 FROM ").push(&self.table()).push(" WHERE ");
        write_columns(&mut sql, &columns);
        sql.push(" IN ");
        of_keys(&mut sql);
        sql.push(" AND NOT (").keys_in(&key, &self.key_types, keys.clone()).push(") AND NOT (");
        self.write_points_at_itself(&mut sql);
        sql.push(")) THEN '1' ELSE '0' END FROM (SELECT ");
        self.key_text(&mut sql);
        sql.push(" AS ").identifier(KEY_ALIAS).push(" FROM ").push(&self.table()).push(" WHERE ");
        self.write_referenced(&mut sql);
        sql.push(" IN ");
        of_keys(&mut sql);
        sql.push(") AS cascade_chunk");
        sql.finish()
    }

    /// A self-reference: `"1"` when a row among `keys` is its own ancestor by this relation within
    /// `depth` levels up (its parent's parent, and so on, comes back to it), `"0"` otherwise. Each
    /// row has one parent, so the walk up holds one row per row of `keys` at a time.
    pub(super) fn loop_above(&self, keys: Param, depth: u64) -> Statement {
        let columns = self.match_columns();
        let referenced = self.referenced_columns();
        let slots: Vec<String> = (0..columns.len()).map(|index| format!("cascade_{index}")).collect();
        let mut sql = self.builder();
        sql.push("WITH RECURSIVE cascade_up (").identifiers(&slots).push(", cascade_depth) AS (SELECT ");
        sql.identifiers(&columns).push(", 1 FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, keys.clone()).push(" UNION ALL SELECT ");
        for column in &columns {
            sql.identifier(ROW_ALIAS).push(".").identifier(column).push(", ");
        }
        sql.push("cascade_up.cascade_depth + 1 FROM ").push(&self.table()).push(" AS ").identifier(ROW_ALIAS);
        sql.push(" JOIN cascade_up ON ");
        for (index, (column, slot)) in referenced.iter().zip(&slots).enumerate() {
            sql.push(if index == 0 { "" } else { " AND " }).identifier(ROW_ALIAS).push(".").identifier(column);
            sql.push(" = cascade_up.").identifier(slot);
        }
        sql.push(" WHERE cascade_up.cascade_depth < ").push(&depth.to_string());
        sql.push(") SELECT CASE WHEN EXISTS (SELECT 1 FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, keys).push(" AND ");
        self.write_referenced(&mut sql);
        sql.push(" IN (SELECT ").identifiers(&slots).push(" FROM cascade_up)) THEN '1' ELSE '0' END");
        sql.finish()
    }

    /// Whether [`Self::levels_below`] can read this node's rows: a self-reference to the key.
    pub(super) fn reads_levels_below(&self) -> bool {
        self.self_reference
            && self.through_parent.is_none()
            && self.node.references.as_ref().is_none_or(|referenced| *referenced == key_of(self.node))
    }

    /// A self-reference to the key: the rows below the keys `matched`, level by level, up to
    /// `depth` levels and `rows` rows in all (the deepest level read may be cut short), as rows
    /// of the level (1: the rows `matched` reaches) and its keys in a JSON array of texts.
    pub(super) fn levels_below(&self, matched: Param, depth: u64, rows: u64) -> Statement {
        let key = self.key_columns();
        let slots: Vec<String> = (0..key.len()).map(|index| format!("cascade_{index}")).collect();
        let mut sql = self.builder();
        // Each row's key text is made where the row is read: joining the rows back to the table
        // afterwards made PostgreSQL scan all of it.
        sql.push("WITH RECURSIVE cascade_down (").identifiers(&slots).push(", cascade_depth, ");
        sql.identifier(KEY_ALIAS).push(") AS (SELECT ").identifiers(&key).push(", 1, ");
        self.key_text(&mut sql);
        sql.push(" FROM ").push(&self.table()).push(" WHERE ");
        self.write_match(&mut sql, matched);
        // The table's own columns are unqualified: the query's names all start with `cascade_`.
        sql.push(" UNION ALL SELECT ").identifiers(&key).push(", cascade_down.cascade_depth + 1, ");
        self.key_text(&mut sql);
        sql.push(" FROM ").push(&self.table()).push(" JOIN cascade_down ON ");
        for (index, (column, slot)) in self.match_columns().iter().zip(&slots).enumerate() {
            sql.push(if index == 0 { "" } else { " AND " }).identifier(column);
            sql.push(" = cascade_down.").identifier(slot);
        }
        // A row that references itself is not its own child (see `write_match`).
        sql.push(" WHERE cascade_down.cascade_depth < ").push(&depth.to_string()).push(" AND NOT (");
        self.write_points_at_itself(&mut sql);
        sql.push(")), cascade_some AS (SELECT cascade_depth, ").identifier(KEY_ALIAS);
        sql.push(" FROM cascade_down LIMIT ").push(&rows.to_string());
        // Named apart from the level's number, which the levels are ordered by (not as text).
        sql.push(") SELECT ").text("cascade_depth").push(" AS cascade_level, ");
        self.backend.json_array_agg(&mut sql, KEY_ALIAS, KEY_ALIAS);
        sql.push(" FROM cascade_some GROUP BY cascade_depth ORDER BY cascade_depth");
        sql.finish()
    }

    /// The columns a self-reference's columns point at, as the catalog spells them.
    fn referenced_columns(&self) -> Vec<String> {
        let referenced = self.node.references.clone().unwrap_or_else(|| key_of(self.node));
        referenced.iter().map(|column| self.names.column(column)).collect()
    }

    /// The referenced columns, one or a row of several, to compare with `IN`.
    fn write_referenced(&self, sql: &mut SqlBuilder) {
        write_columns(sql, &self.referenced_columns());
    }

    /// bulk and nullify: one set-based statement over up to `limit` of the rows matching
    /// `matched`; a delete returns what the outbox and archive need.
    pub(super) fn set_based_chunk(&self, matched: Param, returning: Option<&Returning>, limit: u64) -> Statement {
        if self.selects_nullified_first() {
            return self.nullified_rows(matched, Some(limit));
        }
        if self.deletes_without_key() {
            return self.delete_without_key(matched, returning, Some(limit), false);
        }
        if let Some(returning) = self.selected_before_delete(returning) {
            return self.deleted_rows(matched, returning, Some(limit), false);
        }
        let rows = self.backend.row_selector(self.partitioned, &self.row_key());
        let mut sql = self.builder();
        self.set_based_head(&mut sql);
        sql.push(" WHERE ").push(&rows.matched).push(rows.open).push(&rows.select).push(" FROM ");
        self.table_of_rows(&mut sql);
        sql.push(" WHERE ");
        self.write_rows(&mut sql, matched);
        if let Some(guard) = &self.guard {
            guard.write(&mut sql, ROW_ALIAS);
        }
        sql.push(" LIMIT ").push(&limit.to_string()).push(rows.close);
        self.set_based_tail(&mut sql, returning);
        sql.finish()
    }

    /// bulk and nullify: every row matching `matched` in one statement, for a parent chunk whose
    /// rows of this node were counted ([`Self::count_up_to`]) and fit one chunk. Without the
    /// `LIMIT` sub-select the database deletes straight from the relation's index.
    pub(super) fn set_based_all(&self, matched: Param, returning: Option<&Returning>) -> Statement {
        if self.selects_nullified_first() {
            return self.nullified_rows(matched, None);
        }
        if self.deletes_without_key() {
            return self.delete_without_key(matched, returning, None, false);
        }
        if let Some(returning) = self.selected_before_delete(returning) {
            return self.deleted_rows(matched, returning, None, false);
        }
        let mut sql = self.builder();
        self.set_based_head(&mut sql);
        sql.push(" WHERE ");
        self.write_rows(&mut sql, matched);
        self.set_based_tail(&mut sql, returning);
        sql.finish()
    }

    /// Every row whose key (`by_key`: [`Self::delete_by_keys`]) or relation column
    /// ([`Self::set_based_all`]) is in `keys`.
    pub(super) fn delete_matching(&self, keys: Param, returning: Option<&Returning>, by_key: bool) -> Statement {
        if by_key { self.delete_by_keys(keys, returning) } else { self.set_based_all(keys, returning) }
    }

    /// How many rows match `matched`, counting no further than `limit` (an index-only scan of the
    /// relation's index).
    pub(super) fn count_up_to(&self, matched: Param, limit: u64) -> Statement {
        let mut sql = self.builder();
        self.write_count_up_to(&mut sql, matched, limit);
        sql.finish()
    }

    /// [`Self::count_up_to`] written into `sql`, where it may be one of several.
    pub(super) fn write_count_up_to(&self, sql: &mut SqlBuilder, matched: Param, limit: u64) {
        sql.push("SELECT ").text("COUNT(*)").push(" FROM (SELECT 1 FROM ");
        self.table_of_rows(sql);
        sql.push(" WHERE ");
        self.write_rows(sql, matched);
        sql.push(" LIMIT ").push(&limit.to_string()).push(") AS matched_rows");
    }

    fn set_based_head(&self, sql: &mut SqlBuilder) {
        match self.node.action {
            // A database node runs no write (see `count`); a delete is what it stands for.
            OnDelete::Delete | OnDelete::Database => {
                self.backend.delete_from(sql, &self.table(), ROW_ALIAS);
                sql
            }
            OnDelete::Nullify => {
                sql.push("UPDATE ");
                self.table_of_rows(sql);
                sql.push(" SET ");
                for (index, column) in self.match_columns().iter().enumerate() {
                    sql.push(if index == 0 { "" } else { ", " }).identifier(column).push(" = NULL");
                }
                sql
            }
        };
    }

    fn set_based_tail(&self, sql: &mut SqlBuilder, returning: Option<&Returning>) {
        match self.node.action {
            OnDelete::Delete => self.returning(sql, returning),
            OnDelete::Nullify if self.returns_nullified => {
                sql.push(" RETURNING ");
                self.backend.key_text(sql, &self.identity_columns());
            }
            _ => {}
        }
    }

    /// The columns that identify a row of the node's model, as the catalog spells them.
    fn identity_columns(&self) -> Vec<String> {
        self.node.identity.iter().map(|column| self.names.column(column)).collect()
    }

    /// How many rows have one of the identities `keys` (of the identity's column types `types`).
    pub(super) fn count_identified(&self, keys: Param, types: &[KeyType]) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ").text("COUNT(*)").push(" FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.identity_columns(), types, keys);
        sql.finish()
    }

    /// `RETURNING` the key, shard key, payload object and row object, each as text (or NULL).
    fn returning(&self, sql: &mut SqlBuilder, returning: Option<&Returning>) {
        let Some(returning) = returning else { return };
        sql.push(" RETURNING ");
        self.returning_list(sql, returning);
    }

    /// The list [`Self::returning`] returns.
    fn returning_list(&self, sql: &mut SqlBuilder, returning: &Returning) {
        self.tombstone_key(sql, returning, false);
        sql.push(", ");
        self.tombstone_shard(sql, returning, false);
        sql.push(", ");
        self.tombstone_payload(sql, returning);
        sql.push(", ");
        match &returning.row {
            None => sql.push("NULL"),
            Some(columns) => {
                self.backend.row_json(sql, ROW_ALIAS, columns);
                sql
            }
        };
    }

    /// A row's key as a tombstone names it: the key as text (`stored`: as the outbox stores an
    /// identifier), a composite key as a JSON array.
    fn tombstone_key(&self, sql: &mut SqlBuilder, returning: &Returning, stored: bool) {
        match returning.identity.as_slice() {
            [] => {
                sql.push("NULL");
            }
            [column] => {
                sql.push(&self.tombstone_identifier(column, stored));
            }
            columns => self.backend.json_array(sql, columns),
        }
    }

    /// A row's shard key as its tombstone's shard, as text (`stored`: as the outbox stores it).
    fn tombstone_shard(&self, sql: &mut SqlBuilder, returning: &Returning, stored: bool) {
        match &returning.shard_key {
            Some(column) => sql.push(&self.tombstone_identifier(column, stored)),
            None => sql.push("NULL"),
        };
    }

    fn tombstone_identifier(&self, column: &str, stored: bool) -> String {
        if stored {
            self.backend.outbox_identifier(&quote_identifier(column))
        } else {
            self.backend.text(&quote_identifier(column))
        }
    }

    fn tombstone_payload(&self, sql: &mut SqlBuilder, returning: &Returning) {
        if returning.payload.is_empty() {
            sql.push("NULL");
        } else {
            self.backend.json_object(sql, &returning.payload);
        }
    }

    /// The tombstones of the rows whose key (`by_key`) or relation column is in `keys`, written
    /// straight from the table: for a database with one writer at a time, where the same rows
    /// are then deleted in the same transaction, so none is added or lost in between.
    pub(super) fn insert_tombstones(
        &self,
        target: &OutboxTarget,
        returning: &Returning,
        keys: Param,
        by_key: bool,
    ) -> Statement {
        let mut sql = self.builder();
        tombstones_select(
            &mut sql,
            target,
            |sql| self.tombstone_shard(sql, returning, true),
            |sql| {
                self.tombstone_key(sql, returning, true);
                sql.push(", ");
                self.tombstone_payload(sql, returning);
            },
        );
        sql.push(&self.table()).push(" AS ").identifier(ROW_ALIAS).push(" WHERE ");
        self.matching(&mut sql, keys, by_key);
        sql.finish()
    }

    /// The rows whose key (`by_key`) or relation column is in `keys`, read for the archive in one
    /// result row: their number and their row objects (of `columns`) as JSON lines. For a
    /// database with one writer at a time, which then deletes the same rows in the same
    /// transaction; one row instead of one per deleted row.
    pub(super) fn archived_rows(&self, columns: &[String], keys: Param, by_key: bool) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ").text("COUNT(*)").push(", ");
        let backend = self.backend;
        backend.lines_agg(&mut sql, &mut |sql| backend.row_json(sql, ROW_ALIAS, columns));
        sql.push(" FROM ").push(&self.table()).push(" AS ").identifier(ROW_ALIAS);
        sql.push(" WHERE ");
        self.matching(&mut sql, keys, by_key);
        sql.finish()
    }

    /// Locks the rows whose key (`by_key`) or relation column is in `keys` until the transaction
    /// ends, so that what is read of them next is what goes.
    pub(super) fn lock_matching(&self, keys: Param, by_key: bool) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ").text("1").push(" FROM ").push(&self.table()).push(" AS ").identifier(ROW_ALIAS);
        sql.push(" WHERE ");
        self.matching(&mut sql, keys, by_key);
        sql.push(&self.backend.lock_rows_of(ROW_ALIAS));
        sql.finish()
    }

    /// The rows (aliased [`ROW_ALIAS`]) whose key (`by_key`, and the root's guard) or relation
    /// column is in `keys`.
    fn matching(&self, sql: &mut SqlBuilder, keys: Param, by_key: bool) {
        if by_key {
            sql.keys_in(&self.key_columns(), &self.key_types, keys);
            if let Some(guard) = &self.guard {
                guard.write(sql, ROW_ALIAS);
            }
        } else {
            self.write_match(sql, keys);
        }
    }

    /// Whether any row of `child` (by its relation column) still references the keys: checked
    /// in the delete's own transaction, so a child inserted meanwhile is never orphaned.
    pub(super) fn children_exist(&self, children: &[&NodeSql<'_>], keys: &Param) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT CAST(CASE WHEN ");
        for (index, child) in children.iter().enumerate() {
            if index > 0 {
                sql.push(" OR ");
            }
            child.write_exists(&mut sql, keys.clone());
        }
        sql.push(" THEN '1' ELSE '0' END").as_text();
        sql.finish()
    }

    /// Whether this node deletes chunk by chunk through its keys (loading them) or set-based.
    pub(super) fn loads_rows(&self) -> bool {
        self.node.action == OnDelete::Delete && self.node.strategy == Strategy::PerRow
    }

    /// Root rows whose status allows the deletion are marked in progress before anything else.
    pub(super) fn mark_in_progress(&self, ids: Param, status: &StatusCheck) -> Statement {
        let column = &self.names.column(&status.column.value);
        let mut sql = self.builder();
        sql.push("UPDATE ").push(&self.table()).push(" SET ").identifier(column).push(" = ");
        sql.bind(status_value(&status.in_progress.value)).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, ids).push(" AND ");
        status_in(&mut sql, column, &status.proceed_or_in_progress());
        sql.finish()
    }

    /// The key and status (as text) of the root rows among `ids` that are about to be marked in
    /// progress: those whose status allows the deletion and is not already `in_progress`.
    pub(super) fn statuses_before_marking(&self, ids: Param, status: &StatusCheck) -> Statement {
        let column = self.names.column(&status.column.value);
        let unmarked: Vec<Located<StatusValue>> =
            status.proceed.iter().filter(|value| value.value != status.in_progress.value).cloned().collect();
        let mut sql = self.builder();
        sql.push("SELECT ");
        self.key_text(&mut sql);
        sql.push(", ").text(&quote_identifier(&column)).push(" FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, ids).push(" AND ");
        status_in(&mut sql, &column, &unmarked);
        sql.finish()
    }

    /// The keys (as text) of the root rows among `ids` that exist, with their status when the
    /// model has one: `status` is NULL without.
    /// How many root rows have one of the ids.
    pub(super) fn count_roots(&self, ids: Param) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT COUNT(*) FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, ids);
        sql.finish()
    }

    /// The keys (as text) of the root rows with one of the ids whose status does not allow the
    /// deletion.
    pub(super) fn skipped_roots(&self, ids: Param, status: &StatusCheck) -> Statement {
        let mut sql = self.builder();
        let column = self.names.column(&status.column.value);
        sql.push("SELECT ");
        self.key_text(&mut sql);
        sql.push(" FROM ").push(&self.table()).push(" WHERE ").keys_in(&self.key_columns(), &self.key_types, ids);
        sql.push(" AND (").identifier(&column).push(" IS NULL OR NOT ");
        status_in(&mut sql, &column, &status.proceed_or_in_progress());
        sql.push(")");
        sql.finish()
    }

    pub(super) fn select_roots(&self, ids: Param, status: Option<&StatusCheck>) -> Statement {
        let mut sql = self.builder();
        sql.push("SELECT ");
        self.key_text(&mut sql);
        sql.push(", ");
        match status {
            Some(status) => {
                sql.push("CASE WHEN ");
                status_in(&mut sql, &self.names.column(&status.column.value), &status.proceed_or_in_progress());
                sql.push(" THEN 'proceed' ELSE 'skip' END")
            }
            None => sql.push("'proceed'"),
        };
        sql.push(" FROM ").push(&self.table()).push(" WHERE ");
        sql.keys_in(&self.key_columns(), &self.key_types, ids);
        sql.finish()
    }
}
