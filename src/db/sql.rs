//! Statements: every identifier quoted, every value bound. A list of keys is always one
//! parameter (a JSON array on SQLite, an array on PostgreSQL), so each statement's text is fixed
//! whatever the chunk holds.

use std::time::SystemTime;

use super::backend::Backend;
use super::keys::Keys;

/// How a key column's values are bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyType {
    /// Bound as 64-bit integers.
    Integer,
    /// Bound as text.
    Text,
    /// Another PostgreSQL type (`uuid`, ...): values travel as text and are cast to it.
    Other(String),
    /// A SQLite column declared without a type: it keeps values as they were inserted; a key
    /// that reads exactly as an integer is bound as one, any other as text (a deletion refuses a
    /// column holding a text that reads as an integer, which the two cannot tell apart).
    Untyped,
}

impl KeyType {
    /// Whether PostgreSQL compares values of the two types with `=`: only the pairs known to
    /// have no `=` between them (an integer and a text, a `uuid` and either) are refused; a type
    /// the tool does not know may have casts of its own.
    pub fn compares_on_postgres(&self, other: &KeyType) -> bool {
        let is_uuid = |key_type: &KeyType| matches!(key_type, KeyType::Other(name) if name == "uuid");
        let plain = |key_type: &KeyType| matches!(key_type, KeyType::Integer | KeyType::Text);
        match (self, other) {
            (KeyType::Integer, KeyType::Text) | (KeyType::Text, KeyType::Integer) => false,
            _ => !((is_uuid(self) && plain(other)) || (plain(self) && is_uuid(other))),
        }
    }

    /// Whether a key of this type is always found by `=` in a column of type `other` on either
    /// database: integers in integers, strings in strings, and a `uuid` in a `uuid`. A lookup
    /// between such columns needs no check by the database before a deletion.
    pub fn always_compares_with(&self, other: &KeyType) -> bool {
        match (self, other) {
            (KeyType::Integer, KeyType::Integer) | (KeyType::Text, KeyType::Text) => true,
            (KeyType::Other(left), KeyType::Other(right)) => left == "uuid" && right == "uuid",
            _ => false,
        }
    }

    /// Whether PostgreSQL converts a column of this type to `to` in `ALTER COLUMN ... TYPE ...
    /// USING column::to`: every type converts to and from a string type (its I/O conversion
    /// cast), and integers to integers; a `uuid` and an integer have no cast between them. A type
    /// the tool does not know is not assumed to have one.
    pub fn casts_on_postgres(&self, to: &KeyType) -> bool {
        matches!((self, to), (KeyType::Text, _) | (_, KeyType::Text) | (KeyType::Integer, KeyType::Integer))
    }

    /// From a column's declared type by SQLite's affinity rule (a type containing `INT` has
    /// integer affinity; `CHAR`, `CLOB` or `TEXT`, text; none, none). PostgreSQL columns get
    /// theirs from the catalog instead.
    pub fn of_declared(data_type: &str) -> Self {
        let lower = data_type.to_ascii_lowercase();
        if lower.contains("int") || lower == "serial" || lower == "bigserial" {
            KeyType::Integer
        } else if lower.trim().is_empty() {
            KeyType::Untyped
        } else if lower.contains("char") || lower.contains("text") || lower.contains("clob") {
            KeyType::Text
        } else {
            KeyType::Other(lower)
        }
    }
}

/// A bound scalar value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// One integer.
    Integer(i64),
    /// One text.
    Text(String),
}

/// A parameter: a value to bind now, or (for `--sql` listings) what the executor binds there.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// One value, bound when the statement runs.
    Value(SqlValue),
    /// A list of keys, bound as one parameter when the statement runs.
    Keys(Keys),
    /// A description for people; a statement holding one is never run.
    Described(String),
}

impl Param {
    /// A text value.
    pub fn text(value: &str) -> Self {
        Param::Value(SqlValue::Text(value.to_owned()))
    }

    /// An integer value.
    pub fn integer(value: i64) -> Self {
        Param::Value(SqlValue::Integer(value))
    }

    /// JSON records, as text, for `crate::db::Backend::json_records`.
    pub fn json_records(records: Vec<serde_json::Value>) -> Self {
        Param::text(&serde_json::Value::from(records).to_string())
    }
}

/// A statement with its parameters, in placeholder order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Statement {
    /// The SQL text, with the backend's placeholders.
    pub sql: String,
    /// The parameters, in placeholder order.
    pub params: Vec<Param>,
}

/// Builds one statement for a backend, numbering placeholders as it wants them.
pub(crate) struct SqlBuilder {
    backend: &'static dyn Backend,
    statement: Statement,
}

impl SqlBuilder {
    /// An empty statement for `backend`.
    pub(crate) fn new(backend: &'static dyn Backend) -> Self {
        Self { backend, statement: Statement::default() }
    }

    /// The backend the statement is built for.
    pub(crate) fn backend(&self) -> &'static dyn Backend {
        self.backend
    }

    /// Appends SQL text as it is.
    pub(crate) fn push(&mut self, sql: &str) -> &mut Self {
        self.statement.sql.push_str(sql);
        self
    }

    /// Appends a quoted identifier.
    pub(crate) fn identifier(&mut self, name: &str) -> &mut Self {
        self.push(&quote_identifier(name))
    }

    /// One placeholder for `param`.
    pub(crate) fn bind(&mut self, param: Param) -> &mut Self {
        self.statement.params.push(param);
        let placeholder = self.backend.placeholder(self.statement.params.len());
        self.push(&placeholder)
    }

    /// Appends a whole statement built on its own (its placeholders numbered from 1), so it
    /// must come before any parameter of this one.
    pub(crate) fn nest(&mut self, statement: Statement) -> &mut Self {
        assert!(self.statement.params.is_empty(), "a nested statement comes before any parameter");
        self.statement.params = statement.params;
        self.push(&statement.sql)
    }

    /// One placeholder for a text value.
    pub(crate) fn bind_text(&mut self, value: &str) -> &mut Self {
        self.bind(Param::text(value))
    }

    /// Comma-separated placeholders, one per parameter.
    pub(crate) fn binds(&mut self, params: impl IntoIterator<Item = Param>) -> &mut Self {
        for (index, param) in params.into_iter().enumerate() {
            if index > 0 {
                self.push(", ");
            }
            self.bind(param);
        }
        self
    }

    /// Comma-separated quoted column names.
    pub(crate) fn identifiers(&mut self, names: &[String]) -> &mut Self {
        let quoted: Vec<String> = names.iter().map(|name| quote_identifier(name)).collect();
        self.push(&quoted.join(", "))
    }

    /// `'name', "name", ...`: the arguments of a JSON object constructor.
    pub(crate) fn named_columns(&mut self, columns: &[String]) -> &mut Self {
        for (index, column) in columns.iter().enumerate() {
            if index > 0 {
                self.push(", ");
            }
            self.push(&quote_literal(column)).push(", ").identifier(column);
        }
        self
    }

    /// `"column" IN (values...)`, each value its own parameter.
    pub(crate) fn one_of(&mut self, column: &str, values: impl IntoIterator<Item = Param>) -> &mut Self {
        self.identifier(column).push(" IN (");
        self.binds(values).push(")")
    }

    /// `column` is one of the keys bound as the single parameter `list`.
    pub(crate) fn key_list(&mut self, column: &str, key_type: &KeyType, list: Param) -> &mut Self {
        self.backend.key_list(self, column, key_type, list);
        self
    }

    /// `columns` hold one of the keys bound as the single parameter `list`, each column compared
    /// as its `key_types` entry: [`Self::key_list`] for one column, a row value for several.
    pub(crate) fn keys_in(&mut self, columns: &[String], key_types: &[KeyType], list: Param) -> &mut Self {
        match (columns, key_types) {
            ([column], [key_type]) => self.backend.key_list(self, column, key_type, list),
            _ => self.backend.key_tuples(self, columns, key_types, list),
        }
        self
    }

    /// One key bound as `value`, typed as the key column `key_type` wants it for a comparison.
    pub(crate) fn key_value(&mut self, key_type: &KeyType, value: Param) -> &mut Self {
        self.backend.key_value(self, key_type, value);
        self
    }

    /// A timestamp parameter.
    pub(crate) fn timestamp(&mut self, time: SystemTime) -> &mut Self {
        self.backend.timestamp(self, time);
        self
    }

    /// The statement built.
    pub(crate) fn finish(self) -> Statement {
        self.statement
    }
}

/// `"name"`, with embedded quotes doubled: valid on SQLite and PostgreSQL alike.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A possibly `schema.`-qualified name from the config, each part quoted.
pub(crate) fn quote_qualified(name: &str) -> String {
    name.split('.').map(quote_identifier).collect::<Vec<_>>().join(".")
}

/// A SQL string literal.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The latest time a timestamp here holds: 9999-12-31T23:59:59Z (RFC 3339 and the tool's
/// timestamp text end with year 9999).
pub fn latest_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_799)
}

/// `YYYY-MM-DD HH:MM:SS.mmm` in UTC: sorts as text on SQLite, casts on PostgreSQL. Times before
/// 1970 or after 9999 (a lease or delay set absurdly long) are clamped to those bounds.
pub fn db_time(time: SystemTime) -> String {
    let time = time.clamp(SystemTime::UNIX_EPOCH, latest_time());
    humantime::format_rfc3339_millis(time).to_string().replace('T', " ").trim_end_matches('Z').to_owned()
}

#[cfg(test)]
mod tests {
    use super::{SqlBuilder, quote_qualified};
    use crate::db::Kind;

    #[test]
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_qualified("public.group"), r#""public"."group""#);
        assert_eq!(quote_qualified(r#"od"d"#), r#""od""d""#);
    }

    #[test]
    fn times_out_of_range_are_clamped_not_a_panic() {
        use std::time::{Duration, SystemTime};
        let long_ago = SystemTime::UNIX_EPOCH - Duration::from_secs(100 * 365 * 24 * 3600);
        assert_eq!(super::db_time(long_ago), "1970-01-01 00:00:00.000");
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(super::db_time(far), "9999-12-31 23:59:59.000");
    }

    #[test]
    fn placeholders_are_numbered_as_the_backend_wants() {
        for (kind, expected) in [(Kind::Sqlite, "?1, ?2"), (Kind::Postgres, "$1, $2")] {
            let mut sql = SqlBuilder::new(kind.backend());
            sql.bind_text("a").push(", ").bind_text("b");
            assert_eq!(sql.finish().sql, expected);
        }
    }
}
