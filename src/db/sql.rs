//! Statements: every identifier quoted, every value bound. A list of keys is always one
//! parameter (a JSON array on SQLite, an array on PostgreSQL), so each statement's text is fixed
//! whatever the chunk holds. The statements are written for a database through its `Backend`:
//! every dialect difference in how SQL is written lives behind that one trait, which
//! `sqlite.rs` and `postgres.rs` implement.

use std::fmt::Debug;
use std::time::SystemTime;

use super::keys::Keys;
use super::kind::Kind;
pub use super::values::KeyType;
pub(crate) use super::values::SqlValue;

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

    /// `CAST(expression AS TEXT)`, as the backend writes it.
    pub(crate) fn text(&mut self, expression: &str) -> &mut Self {
        let text = self.backend.text(expression);
        self.push(&text)
    }

    /// ` AS TEXT)`: the end of a `CAST(` to text whose expression was written piece by piece.
    pub(crate) fn as_text(&mut self) -> &mut Self {
        let text_type = self.backend.text_type();
        self.push(" AS ").push(text_type).push(")")
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

    /// `rows` rows of `columns` values each (`value` writes the value of a row and column) as a
    /// table, in parentheses, whose columns are `column1`, `column2`...: a `VALUES` list where
    /// parameters work in one (MariaDB reads them as empty), else a `UNION ALL` of `SELECT`s.
    pub(crate) fn values_table(
        &mut self,
        columns: usize,
        rows: usize,
        mut value: impl FnMut(&mut Self, usize, usize),
    ) -> &mut Self {
        let values = self.backend.tuning().parameters_in_values;
        self.push(if values { "(VALUES " } else { "(" });
        for row in 0..rows {
            match (values, row) {
                (true, 0) => self.push("("),
                (true, _) => self.push(", ("),
                (false, 0) => self.push("SELECT "),
                (false, _) => self.push(" UNION ALL SELECT "),
            };
            for column in 0..columns {
                self.push(if column == 0 { "" } else { ", " });
                value(self, row, column);
                if !values && row == 0 {
                    self.push(&format!(" AS column{}", column + 1));
                }
            }
            if values {
                self.push(")");
            }
        }
        self.push(")")
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

/// A name of several parts (`schema.table`), each quoted.
pub(crate) fn quote_parts(parts: &[&str]) -> String {
    parts.iter().map(|part| quote_identifier(part)).collect::<Vec<_>>().join(".")
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
        for (kind, expected) in [(Kind::Sqlite, "?1, ?2"), (Kind::Postgres, "$1, $2"), (Kind::Mysql, "?, ?")] {
            let mut sql = SqlBuilder::new(kind.backend());
            sql.bind_text("a").push(", ").bind_text("b");
            assert_eq!(sql.finish().sql, expected);
        }
    }
}

/// Only `db` implements [`Backend`]: every dialect difference lives there.
pub(super) mod sealed {
    pub(crate) trait Sealed {}
}

/// How a set-based statement addresses the rows it picks in a `LIMIT`ed sub-select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowSelector {
    /// What the sub-select returns (`rowid`, `ctid`, `tableoid, ctid`, the key's columns).
    pub select: String,
    /// What the outer statement compares with it (`rowid`, `ctid`, `(tableoid, ctid)`, the key).
    pub matched: String,
    /// Text between `matched` and the sub-select, and after the sub-select.
    pub open: &'static str,
    /// Closes what `open` opened.
    pub close: &'static str,
}

/// How statements are written for SQLite, PostgreSQL or MySQL: placeholders, key lists, JSON, timestamps,
/// and the database's [`Tuning`]. Sealed: only `db` implements it.
pub(crate) trait Backend: sealed::Sealed + Send + Sync + Debug {
    /// Which database this backend speaks to.
    fn kind(&self) -> Kind;

    /// The placeholder of the `number`-th parameter, from 1.
    fn placeholder(&self, number: usize) -> String;

    /// The type keys of type `values` are compared as when they look up the rows of a `column`
    /// that references them: their own, except where the database would not convert them to what
    /// the column holds (SQLite: integer keys never equal the text a TEXT column holds, `'1'`).
    fn compared_as(&self, values: &KeyType, column: &KeyType) -> KeyType;

    /// Whether the database compares values of the two key types with `=`: SQLite compares any
    /// two values; PostgreSQL refuses the pairs [`KeyType::compares_on_postgres`] knows of.
    fn can_compare(&self, left: &KeyType, right: &KeyType) -> bool;

    /// `column` is one of the keys bound as the single parameter `list`, typed as `key_type`
    /// (compared as that type: see [`Backend::compared_as`]).
    fn key_list(&self, sql: &mut SqlBuilder, column: &str, key_type: &KeyType, list: Param);

    /// `(columns)` is one of the composite keys bound as the single parameter `list`
    /// ([`crate::db::Keys::Tuples`]), each part compared as its column's `key_types` entry.
    fn key_tuples(&self, sql: &mut SqlBuilder, columns: &[String], key_types: &[KeyType], list: Param);

    /// A key read back as one text: a column's value as text; for several columns, the JSON
    /// array (as text) of their values as texts, which [`crate::db::Keys::parse_for`] reads.
    fn key_text(&self, sql: &mut SqlBuilder, columns: &[String]);

    /// One key bound as `value`, typed as `key_type` for a comparison with a key column.
    fn key_value(&self, sql: &mut SqlBuilder, key_type: &KeyType, value: Param);

    /// How a set-based statement addresses rows; `partitioned` for a partitioned table, whose
    /// key columns are `key`.
    fn row_selector(&self, partitioned: bool, key: &[String]) -> RowSelector;

    /// `DELETE FROM table AS alias`, the start of a delete whose conditions name its row by
    /// `alias` (`table` already quoted).
    fn delete_from(&self, sql: &mut SqlBuilder, table: &str, alias: &str) {
        sql.push("DELETE FROM ").push(table).push(" AS ").identifier(alias);
    }

    /// `UPDATE table AS alias SET column = value FROM (rows) WHERE condition`: `column` of the
    /// rows of `table` (already quoted) that `condition` matches with a row `rows` writes (a
    /// `FROM` item), set to `value`. `value` and `condition` name the table's row by `alias`.
    fn update_joined(
        &self,
        sql: &mut SqlBuilder,
        (table, alias): (&str, &str),
        (column, value): (&str, &str),
        rows: &mut dyn FnMut(&mut SqlBuilder),
        condition: &str,
    ) {
        sql.push("UPDATE ").push(table).push(" AS ").identifier(alias).push(" SET ").identifier(column);
        sql.push(" = ").push(value).push(" FROM ");
        rows(sql);
        sql.push(" WHERE ").push(condition);
    }

    /// The type `CAST` converts to text with: `TEXT`, MySQL's `CHAR`.
    fn text_type(&self) -> &'static str {
        "TEXT"
    }

    /// What an insert does with a row whose `key` (a unique key's columns) another row holds:
    /// nothing when `updated` is empty, else sets the columns `updated` to the inserted row's and
    /// runs the assignments `also` (`updated_at = CURRENT_TIMESTAMP`, or empty).
    fn on_duplicate(&self, sql: &mut SqlBuilder, key: &[&str], updated: &[&str], also: &str) {
        sql.push(" ON CONFLICT (").push(&key.join(", ")).push(")");
        if updated.is_empty() {
            sql.push(" DO NOTHING");
            return;
        }
        let mut assignments: Vec<String> =
            updated.iter().map(|column| format!("{column} = excluded.{column}")).collect();
        assignments.extend((!also.is_empty()).then(|| also.to_owned()));
        sql.push(" DO UPDATE SET ").push(&assignments.join(", "));
    }

    /// [`Self::on_duplicate`] that updates the row another row holds only where `condition` (on
    /// the table's row, named by the table) holds. The first of `updated` takes a value no row
    /// holds yet (a fresh token): a `RETURNING` of it tells whether the row was updated, as MySQL
    /// returns the row either way.
    fn on_duplicate_when(
        &self,
        sql: &mut SqlBuilder,
        key: &[&str],
        updated: &[&str],
        condition: &mut dyn FnMut(&mut SqlBuilder),
    ) {
        self.on_duplicate(sql, key, updated, "");
        sql.push(" WHERE ");
        condition(sql);
    }

    /// The texts `expression` writes, of every row of a group, joined by newlines (NULL for none).
    fn lines_agg(&self, sql: &mut SqlBuilder, expression: &mut dyn FnMut(&mut SqlBuilder)) {
        sql.push("string_agg(");
        expression(sql);
        sql.push(", ").bind_text("\n").push(")");
    }

    /// The type `CAST` converts to a double-precision number with.
    fn double_type(&self) -> &'static str {
        "DOUBLE PRECISION"
    }

    /// `expression` converted to text.
    fn text(&self, expression: &str) -> String {
        format!("CAST({expression} AS {})", self.text_type())
    }

    /// A JSON object (as text) of `columns`, named by themselves.
    fn json_object(&self, sql: &mut SqlBuilder, columns: &[String]);

    /// A JSON array (as text) of the values of `columns`, in order.
    fn json_array(&self, sql: &mut SqlBuilder, columns: &[String]);

    /// An aggregate: the values of the column `value` (text) of the rows it sees as one JSON
    /// array (as text), in the order of the column `order`. One result row instead of one per
    /// value: a database driver hands rows over one by one, and for a chunk of keys that cost
    /// more than the query.
    fn json_array_agg(&self, sql: &mut SqlBuilder, value: &str, order: &str);

    /// The whole row of the table aliased `alias` as a JSON object (as text); `columns` are the
    /// table's columns, for a backend that must name them.
    fn row_json(&self, sql: &mut SqlBuilder, alias: &str, columns: &[String]);

    /// The field `name` of the current record of `json_records`.
    fn json_field(&self, name: &str) -> String;

    /// [`Self::json_field`] as a key of `key_type`, for a comparison with a key column or to be
    /// stored in one (an integer key is a JSON number in the record).
    fn json_key_field(&self, name: &str, key_type: &KeyType) -> String;

    /// `FROM` the objects of a JSON array bound as `records`, each with the text `fields`.
    fn json_records(&self, sql: &mut SqlBuilder, records: Param, fields: &[&str]);

    /// A timestamp parameter (UTC).
    fn timestamp(&self, sql: &mut SqlBuilder, time: SystemTime);

    /// A timestamp column read back as `YYYY-MM-DD HH:MM:SS.mmm` UTC text.
    fn timestamp_text(&self, column: &str) -> String;

    /// An outbox row's shard or object identifier as stored, from `expression` (a key): text,
    /// or on SQLite, whose columns take any type, an integer when its text is one written the
    /// usual way (`7`, not `07` or `+7`; see [`super::outbox::stored_as_integer`]), which
    /// stores and indexes in half the time.
    fn outbox_identifier(&self, expression: &str) -> String;

    /// Binds an outbox identifier (its text) as [`Backend::outbox_identifier`] stores it, for
    /// comparing it with the column.
    fn bind_outbox_identifier(&self, sql: &mut SqlBuilder, text: &str);

    /// Appended to the sub-select that picks a row to claim, so two claimers never block on or
    /// take the same row.
    fn claim_lock(&self) -> &'static str;

    /// Appended to a select whose rows of `alias` the transaction is about to change on the
    /// strength of other rows it reads, so that a concurrent transaction doing the same waits
    /// and then sees this one's writes: `FOR UPDATE OF alias`, or nothing where a write
    /// transaction holds the whole database (SQLite's `BEGIN IMMEDIATE`).
    fn lock_rows_of(&self, alias: &str) -> String;

    /// A statement returning 1 when the table (or view) `name` exists, else 0.
    fn table_exists(&self, sql: &mut SqlBuilder, name: &str);

    /// A statement returning one value (as text) of `column` (of `column_type`) of the `table`
    /// (already quoted) that lookups by keys of type `keys` would miss although the database
    /// would take it for such a key (of the `referenced` table and key column, when it is a
    /// reference: one of whose rows it then matches), or `false` (nothing written) where there
    /// can be none. Only SQLite has such values: a column without a type holding `'8'` beside
    /// keys that travel as text, or a TEXT column holding `'08'`, which its `=` matches with the
    /// integer key 8.
    fn unmatched_keys_in(
        &self,
        sql: &mut SqlBuilder,
        table: &str,
        column: &str,
        column_type: &KeyType,
        keys: &KeyType,
        referenced: Option<(&str, &str)>,
    ) -> bool;

    /// `CREATE UNIQUE INDEX "name" ON table (columns);` for a `table` named by its parts
    /// (`[schema, name]` or `[name]`), built the way that keeps the table writable while the
    /// index is built where the database can (PostgreSQL: `CONCURRENTLY`, which a `partitioned`
    /// table does not allow). The statement is printed for a person to run.
    fn create_unique_index(
        &self,
        sql: &mut SqlBuilder,
        name: &str,
        table: &[&str],
        columns: &[String],
        partitioned: bool,
    );

    /// How the tool runs its statements on this database.
    fn tuning(&self) -> &'static Tuning;
}

/// What differs in how the tool runs its statements on a database, beyond how they are
/// written: plain facts, one value per database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// The most bytes of an identifier the database keeps (PostgreSQL cuts longer names to 63),
    /// if it has a limit.
    pub identifier_limit: Option<usize>,
    /// Whether another writer can commit while a transaction is open (so a foreign-key refusal
    /// may be a row inserted meanwhile, not an undeclared reference).
    pub concurrent_writers: bool,
    /// Whether a table can be partitioned by range (PostgreSQL's declarative partitioning,
    /// MySQL's `RANGE` partitions), which partition retention needs.
    pub range_partitions: bool,
    /// The statement that defers the foreign-key checks of the open transaction to its commit,
    /// where the database has one (SQLite); without it (PostgreSQL, whose keys defer only when
    /// declared `DEFERRABLE`), rows that reference each other in a loop go in one statement.
    pub defer_foreign_keys: Option<&'static str>,
    /// Whether a `WITH` query can be made to be read once (`AS MATERIALIZED`), not inlined where
    /// it is used.
    pub materialized_with: bool,
    /// Whether an `UPDATE` can return what it changed (`RETURNING`); without, a nullify whose rows
    /// are recorded selects them first, locking them, then sets them to NULL by key.
    pub updates_return: bool,
    /// The statements that turn the session's foreign-key checks off and back on, where the
    /// database checks every key row by row and defers none (MySQL): a loop's deletes run between
    /// them, and what the checks would have caught is checked after them.
    pub unchecked_foreign_keys: Option<(&'static str, &'static str)>,
    /// Whether a `DELETE` as the tool writes it can return what it deleted (`RETURNING`; MariaDB's
    /// multiple-table form cannot); without, a delete whose rows make tombstones or the archive
    /// selects them first, locking them, then deletes them by key.
    pub deletes_return: bool,
    /// Whether an insert that skips a row whose key another row holds ([`Backend::on_duplicate`]
    /// with nothing updated) still counts that row as changed: MySQL's client (sqlx's) asks for
    /// the rows found, not the rows changed.
    pub skipped_duplicates_count: bool,
    /// Whether a `VALUES` list takes parameters (MariaDB's reads them as empty).
    pub parameters_in_values: bool,
    /// Whether a `WITH` query may hold a `DELETE ... RETURNING` whose rows the main statement
    /// inserts elsewhere (PostgreSQL's data-modifying `WITH`).
    pub deletes_in_with: bool,
    /// Whether deleting "up to N rows" through the row selector's sub-select costs clearly more
    /// than deleting all matching rows straight from an index, so that counting the rows first
    /// (and deleting them all when they fit) pays off.
    pub limited_delete_is_slow: bool,
    /// How many keys a scan for rows in key order (a clean-up's orphans) reads in one query
    /// ahead of its batches, each batch's keys then checked again right before it runs; 0 reads
    /// one batch at a time.
    pub scan_read_ahead: u64,
    /// The statement that, first in a transaction, gives a read of many rows back what a
    /// writer's connection turns off for its chunk-sized statements; `None` when nothing is.
    pub wide_read_setting: Option<&'static str>,
    /// The statement that, first in a transaction whose statements all look rows up by key
    /// arrays of one chunk, makes them skip planning for each array's values; `None` when
    /// nothing does.
    pub key_array_setting: Option<&'static str>,
}
