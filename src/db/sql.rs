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

/// The row address a set-based statement picks rows by: SQLite's `rowid`, PostgreSQL's `ctid`
/// (with `tableoid` on a partitioned table, where a `ctid` is unique only per partition).
pub fn row_address(dialect: Dialect, partitioned: bool) -> &'static str {
    match (dialect, partitioned) {
        (Dialect::Sqlite, _) => "rowid",
        (Dialect::Postgres, false) => "ctid",
        (Dialect::Postgres, true) => "(tableoid, ctid)",
    }
}

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
    /// The column this node's rows are found by: the relation column, or the key at the root.
    fn match_column(&self) -> &str {
        self.node.column.as_deref().or(self.node.key.as_deref()).unwrap_or("id")
    }

    /// per_row: the next chunk of keys (plus `extra` columns, for the outbox) among the rows
    /// matching `matched` (the parent chunk's keys, or the root ids).
    pub fn select_chunk(&self, matched: Param, extra: &[String]) -> Statement {
        let key = self.node.key.as_deref().unwrap_or("id");
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("SELECT ").identifier(key);
        if !extra.is_empty() {
            sql.push(", ").identifiers(extra);
        }
        sql.push(" FROM ").table(&self.node.table).push(" WHERE ");
        sql.in_list(self.match_column(), &self.match_type, matched);
        sql.push(" ORDER BY ").identifier(key).push(" LIMIT ").push(&self.node.chunk_size.to_string());
        sql.finish()
    }

    /// per_row: deletes one chunk by key.
    pub fn delete_by_keys(&self, keys: Param) -> Statement {
        let key = self.node.key.as_deref().unwrap_or("id");
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("DELETE FROM ").table(&self.node.table).push(" WHERE ");
        sql.in_list(key, &self.key_type, keys);
        sql.finish()
    }

    /// bulk: deletes (or, for a nullify node, sets the column to NULL in) up to one chunk of the
    /// rows matching `matched`, returning `returning` columns of the rows it touched.
    pub fn set_based_chunk(&self, matched: Param, returning: &[String]) -> Statement {
        let address = row_address(self.dialect, self.partitioned);
        let mut sql = SqlBuilder::new(self.dialect);
        match self.node.action {
            Action::Delete => sql.push("DELETE FROM ").table(&self.node.table),
            Action::Nullify => sql
                .push("UPDATE ")
                .table(&self.node.table)
                .push(" SET ")
                .identifier(self.match_column())
                .push(" = NULL"),
        };
        sql.push(" WHERE ").push(address).push(" IN (SELECT ").push(address).push(" FROM ").table(&self.node.table);
        sql.push(" WHERE ");
        sql.in_list(self.match_column(), &self.match_type, matched);
        sql.push(" LIMIT ").push(&self.node.chunk_size.to_string()).push(")");
        if !returning.is_empty() {
            sql.push(" RETURNING ").identifiers(returning);
        }
        sql.finish()
    }

    /// Whether this node deletes chunk by chunk through its keys (loading them) or set-based.
    pub fn loads_rows(&self) -> bool {
        self.node.action == Action::Delete && self.node.strategy == Strategy::PerRow
    }
}

impl NodeSql<'_> {
    /// Root rows whose status allows the deletion are marked in progress before anything else.
    pub fn mark_in_progress(&self, ids: Param, status: &StatusCheck) -> Statement {
        let key = self.node.key.as_deref().unwrap_or("id");
        let column = &status.column.value;
        let mut sql = SqlBuilder::new(self.dialect);
        sql.push("UPDATE ").table(&self.node.table).push(" SET ").identifier(column).push(" = ");
        sql.bind(Param::Value(SqlValue::from(&status.in_progress.value))).push(" WHERE ");
        sql.in_list(key, &self.key_type, ids).push(" AND ").status_in(column, &status.proceed);
        sql.finish()
    }
}

/// The columns of `cascade_outbox` a tombstone fills, in the order `outbox_insert` binds them.
pub const OUTBOX_COLUMNS: [&str; 5] = ["scope", "shard_identifier", "category", "object_identifier", "payload"];

/// One outbox tombstone, written in the same transaction as the delete of its row.
pub fn outbox_insert(dialect: Dialect, values: [Param; 5]) -> Statement {
    let mut sql = SqlBuilder::new(dialect);
    sql.push("INSERT INTO ").identifier("cascade_outbox").push(" (");
    sql.identifiers(&OUTBOX_COLUMNS.map(String::from));
    sql.push(", \"scheduled_for\", \"scheduled_from\", \"date_added\") VALUES (");
    sql.binds(values).push(", CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)");
    sql.finish()
}
