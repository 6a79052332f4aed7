//! SQL built from a plan: every identifier quoted, every value bound. A list of keys is always
//! one parameter (a JSON array on SQLite, an array on PostgreSQL), so each statement's text is
//! fixed whatever the chunk holds.

use std::fmt::Write as _;

use super::quote_identifier;
use crate::config::{Located, StatusCheck, StatusValue, Strategy};
use crate::planner::{Action, PlanNode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    pub fn of_url(url: &str) -> Self {
        if url.starts_with("postgres") { Dialect::Postgres } else { Dialect::Sqlite }
    }
}

/// How a key column's values are bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyType {
    Integer,
    Text,
    /// Another PostgreSQL type (`uuid`, ...): values travel as text and are cast to it.
    Other(String),
}

impl KeyType {
    /// From a column's declared type, as the schema reports it.
    pub fn of_declared(data_type: &str) -> Self {
        let lower = data_type.to_ascii_lowercase();
        if lower.contains("int") || lower == "serial" || lower == "bigserial" {
            KeyType::Integer
        } else if lower.contains("char") || lower.contains("text") || lower.contains("clob") || lower.is_empty() {
            KeyType::Text
        } else {
            KeyType::Other(lower)
        }
    }
}

/// A bound value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Integer(i64),
    Text(String),
    Integers(Vec<i64>),
    Texts(Vec<String>),
}

impl From<&StatusValue> for SqlValue {
    fn from(value: &StatusValue) -> Self {
        match value {
            StatusValue::Integer(i) => SqlValue::Integer(*i),
            StatusValue::Text(t) => SqlValue::Text(t.clone()),
        }
    }
}

/// A parameter: a value to bind now, or (for `--sql` listings) what the executor binds there.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Value(SqlValue),
    Described(String),
}

/// A statement with its parameters, in placeholder order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<Param>,
}

/// Builds one statement, numbering placeholders as the dialect wants them.
pub struct SqlBuilder {
    dialect: Dialect,
    statement: Statement,
}

impl SqlBuilder {
    pub fn new(dialect: Dialect) -> Self {
        Self { dialect, statement: Statement::default() }
    }

    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.statement.sql.push_str(sql);
        self
    }

    pub fn identifier(&mut self, name: &str) -> &mut Self {
        self.push(&quote_identifier(name))
    }

    /// A possibly `schema.`-qualified table name.
    pub fn table(&mut self, name: &str) -> &mut Self {
        self.push(&super::quote_qualified(name))
    }

    /// One placeholder for `param`.
    pub fn bind(&mut self, param: Param) -> &mut Self {
        self.statement.params.push(param);
        let number = self.statement.params.len();
        match self.dialect {
            Dialect::Sqlite => write!(self.statement.sql, "?{number}"),
            Dialect::Postgres => write!(self.statement.sql, "${number}"),
        }
        .expect("writing to a String cannot fail");
        self
    }

    /// Comma-separated placeholders, one per parameter.
    pub fn binds(&mut self, params: impl IntoIterator<Item = Param>) -> &mut Self {
        for (index, param) in params.into_iter().enumerate() {
            if index > 0 {
                self.push(", ");
            }
            self.bind(param);
        }
        self
    }

    /// Comma-separated quoted column names.
    pub fn identifiers(&mut self, names: &[String]) -> &mut Self {
        let quoted: Vec<String> = names.iter().map(|name| quote_identifier(name)).collect();
        self.push(&quoted.join(", "))
    }

    /// `"column" IN (values...)`: the status check of root rows.
    pub fn status_in(&mut self, column: &str, proceed: &[Located<StatusValue>]) -> &mut Self {
        self.identifier(column).push(" IN (");
        self.binds(proceed.iter().map(|value| Param::Value(SqlValue::from(&value.value)))).push(")")
    }

    /// `"column" IN (the list bound as one parameter)`, typed by the column's key type.
    pub fn in_list(&mut self, column: &str, key_type: &KeyType, list: Param) -> &mut Self {
        self.identifier(column);
        match (self.dialect, key_type) {
            (Dialect::Sqlite, _) => self.push(" IN (SELECT value FROM json_each(").bind(list).push("))"),
            (Dialect::Postgres, KeyType::Integer) => self.push(" = ANY(").bind(list).push("::int8[])"),
            (Dialect::Postgres, KeyType::Text) => self.push(" = ANY(").bind(list).push("::text[])"),
            (Dialect::Postgres, KeyType::Other(cast)) => {
                let cast = format!("::{cast}[])");
                self.push(" = ANY(").bind(list).push(&cast)
            }
        }
    }

    pub fn finish(self) -> Statement {
        self.statement
    }
}

/// The row address a set-based statement picks rows by, as (what the sub-query selects, what
/// the outer statement matches): SQLite's `rowid`, PostgreSQL's `ctid`, and on a partitioned
/// table `(tableoid, ctid)`, since a `ctid` is unique only within one partition.
pub fn row_address(dialect: Dialect, partitioned: bool) -> (&'static str, &'static str) {
    match (dialect, partitioned) {
        (Dialect::Sqlite, _) => ("rowid", "rowid"),
        (Dialect::Postgres, false) => ("ctid", "ctid"),
        (Dialect::Postgres, true) => ("tableoid, ctid", "(tableoid, ctid)"),
    }
}

/// What a delete returns for each row, all as text: the key, and for the outbox the shard key
/// and the payload (a JSON object), and for the archive the whole row (a JSON object).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Returning {
    pub shard_key: Option<String>,
    pub payload: Vec<String>,
    /// The table's columns, when rows are archived (PostgreSQL needs none: `row_to_json`).
    pub row: Option<Vec<String>>,
}

/// The alias of the table a delete works on, for `row_to_json`.
const ROW_ALIAS: &str = "cascade_row";

/// What a plan node's statements need to know beyond the node itself.
pub struct NodeSql<'a> {
    pub dialect: Dialect,
    pub node: &'a PlanNode,
    /// Key type of this node's key column (for deleting a chunk by key).
    pub key_type: KeyType,
    /// Type of the values this node is matched on: the parent's key type, or the ids' at the root.
    pub match_type: KeyType,
    pub partitioned: bool,
}

impl NodeSql<'_> {
    pub fn key(&self) -> &str {
        self.node.key.as_deref().unwrap_or("id")
    }

    /// The column this node's rows are found by: the relation column, or the key at the root.
    fn match_column(&self) -> &str {
        self.node.column.as_deref().unwrap_or_else(|| self.key())
    }

    /// per_row: the next chunk of keys (as text) among the rows matching `matched` (the parent
    /// chunk's keys, or the root ids), at the root only those whose status allows deletion.
    pub fn select_chunk(&self, matched: Param, status: Option<&StatusCheck>) -> Statement {
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("SELECT CAST(").identifier(self.key()).push(" AS TEXT) FROM ").table(&self.node.table);
        sql.push(" WHERE ");
        sql.in_list(self.match_column(), &self.match_type, matched);
        if let Some(status) = status {
            sql.push(" AND ").status_in(&status.column.value, &status.proceed_or_in_progress());
        }
        sql.push(" ORDER BY ").identifier(self.key()).push(" LIMIT ").push(&self.node.chunk_size.to_string());
        sql.finish()
    }

    /// per_row: deletes one chunk by key, returning what the outbox and archive need.
    pub fn delete_by_keys(&self, keys: Param, returning: Option<&Returning>) -> Statement {
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("DELETE FROM ").table(&self.node.table).push(" AS ").identifier(ROW_ALIAS).push(" WHERE ");
        sql.in_list(self.key(), &self.key_type, keys);
        self.returning(&mut sql, returning);
        sql.finish()
    }

    /// bulk and nullify: one set-based statement over up to one chunk of the rows matching
    /// `matched`; a delete returns what the outbox and archive need.
    pub fn set_based_chunk(&self, matched: Param, returning: Option<&Returning>) -> Statement {
        let (select, address) = row_address(self.dialect, self.partitioned);
        let mut sql = SqlBuilder::new(self.dialect);
        match self.node.action {
            Action::Delete => sql.push("DELETE FROM ").table(&self.node.table).push(" AS ").identifier(ROW_ALIAS),
            Action::Nullify => sql
                .push("UPDATE ")
                .table(&self.node.table)
                .push(" SET ")
                .identifier(self.match_column())
                .push(" = NULL"),
        };
        // PostgreSQL looks a `ctid = ANY(ARRAY(...))` up row by row, far faster than the hash
        // join it plans for `ctid IN (SELECT ...)`; a partitioned table needs the pair.
        let (open, close) = match (self.dialect, self.partitioned) {
            (Dialect::Postgres, false) => (" = ANY(ARRAY(SELECT ", "))"),
            _ => (" IN (SELECT ", ")"),
        };
        sql.push(" WHERE ").push(address).push(open).push(select).push(" FROM ").table(&self.node.table);
        sql.push(" WHERE ");
        sql.in_list(self.match_column(), &self.match_type, matched);
        sql.push(" LIMIT ").push(&self.node.chunk_size.to_string()).push(close);
        if self.node.action == Action::Delete {
            self.returning(&mut sql, returning);
        }
        sql.finish()
    }

    /// `RETURNING` the key, shard key, payload object and row object, each as text (or NULL).
    fn returning(&self, sql: &mut SqlBuilder, returning: Option<&Returning>) {
        let Some(returning) = returning else { return };
        sql.push(" RETURNING CAST(").identifier(self.key()).push(" AS TEXT), ");
        match &returning.shard_key {
            Some(column) => sql.push("CAST(").identifier(column).push(" AS TEXT)"),
            None => sql.push("NULL"),
        };
        sql.push(", ");
        self.json_object(sql, &returning.payload);
        sql.push(", ");
        match (&returning.row, self.dialect) {
            (None, _) => sql.push("NULL"),
            (Some(_), Dialect::Postgres) => sql.push("CAST(row_to_json(").identifier(ROW_ALIAS).push(") AS TEXT)"),
            (Some(columns), Dialect::Sqlite) => {
                self.json_object(sql, columns);
                sql
            }
        };
    }

    /// A JSON object of `columns` as text (NULL without columns).
    fn json_object(&self, sql: &mut SqlBuilder, columns: &[String]) {
        if columns.is_empty() {
            sql.push("NULL");
            return;
        }
        sql.push(match self.dialect {
            Dialect::Sqlite => "json_object(",
            Dialect::Postgres => "CAST(json_build_object(",
        });
        for (index, column) in columns.iter().enumerate() {
            if index > 0 {
                sql.push(", ");
            }
            sql.push(&quote_literal(column)).push(", ").identifier(column);
        }
        sql.push(if self.dialect == Dialect::Postgres { ") AS TEXT)" } else { ")" });
    }

    /// Whether any row of `child` (by its relation column) still references the keys: checked
    /// in the delete's own transaction, so a child inserted meanwhile is never orphaned.
    pub fn children_exist(&self, children: &[NodeSql<'_>], keys: &Param) -> Statement {
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("SELECT CAST(CASE WHEN ");
        for (index, child) in children.iter().enumerate() {
            if index > 0 {
                sql.push(" OR ");
            }
            sql.push("EXISTS (SELECT 1 FROM ").table(&child.node.table).push(" WHERE ");
            sql.in_list(child.match_column(), &self.key_type, keys.clone()).push(")");
        }
        sql.push(" THEN '1' ELSE '0' END AS TEXT)");
        sql.finish()
    }

    /// Whether this node deletes chunk by chunk through its keys (loading them) or set-based.
    pub fn loads_rows(&self) -> bool {
        self.node.action == Action::Delete && self.node.strategy == Strategy::PerRow
    }

    /// Root rows whose status allows the deletion are marked in progress before anything else.
    pub fn mark_in_progress(&self, ids: Param, status: &StatusCheck) -> Statement {
        let column = &status.column.value;
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("UPDATE ").table(&self.node.table).push(" SET ").identifier(column).push(" = ");
        sql.bind(Param::Value(SqlValue::from(&status.in_progress.value))).push(" WHERE ");
        sql.in_list(self.key(), &self.key_type, ids).push(" AND ").status_in(column, &status.proceed_or_in_progress());
        sql.finish()
    }

    /// The keys (as text) of the root rows among `ids` that exist, with their status when the
    /// model has one: `status` is NULL without.
    pub fn select_roots(&self, ids: Param, status: Option<&StatusCheck>) -> Statement {
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("SELECT CAST(").identifier(self.key()).push(" AS TEXT), ");
        match status {
            Some(status) => {
                sql.push("CASE WHEN ").status_in(&status.column.value, &status.proceed_or_in_progress());
                sql.push(" THEN 'proceed' ELSE 'skip' END")
            }
            None => sql.push("'proceed'"),
        };
        sql.push(" FROM ").table(&self.node.table).push(" WHERE ");
        sql.in_list(self.key(), &self.key_type, ids);
        sql.finish()
    }
}

/// A SQL string literal.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The tombstones of one chunk, written in the chunk's transaction from one parameter: a JSON
/// array of `{"key", "shard", "payload"}` objects (payload a JSON text or null).
pub fn outbox_insert(dialect: Dialect, scope: &str, category: &str, rows: Param) -> Statement {
    let mut sql = SqlBuilder::new(dialect);
    sql.push("INSERT INTO \"cascade_outbox\" (\"scope\", \"shard_identifier\", \"category\", ");
    sql.push("\"object_identifier\", \"payload\", \"scheduled_for\", \"scheduled_from\", \"date_added\") SELECT ");
    sql.bind(Param::Value(SqlValue::Text(scope.to_owned()))).push(", ");
    match dialect {
        Dialect::Sqlite => {
            sql.push("json_extract(value, '$.shard'), ").bind(Param::Value(SqlValue::Text(category.to_owned())));
            sql.push(", json_extract(value, '$.key'), json_extract(value, '$.payload'), ");
            sql.push("CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM json_each(").bind(rows).push(")");
        }
        Dialect::Postgres => {
            sql.push("r.shard, ").bind(Param::Value(SqlValue::Text(category.to_owned())));
            sql.push(", r.key, r.payload, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP");
            sql.push(" FROM json_to_recordset(CAST(")
                .bind(rows)
                .push(" AS json)) AS r(key text, shard text, payload text)");
        }
    }
    sql.finish()
}
