//! SQLite: the embedded default. Lists of keys travel as one JSON array read with `json_each`;
//! rows are addressed by `rowid`; one writer at a time (`BEGIN IMMEDIATE`).

use std::str::FromStr;
use std::time::SystemTime;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use super::driver::{BoxFuture, Driver, Failure, WriterLock, connection_failure};
use super::kind::Kind;
use super::sql::sealed::Sealed;
use super::sql::{
    Backend, KeyType, Param, RowSelector, SqlBuilder, Tuning, db_time, quote_identifier, quote_literal, quote_parts,
};
use super::url::DatabaseUrl;
use super::{Access, ConnectOptions, Database, DbError, Pool};

const MIGRATIONS: &[&str] = &[
    include_str!("../../schemas/migrations/sqlite/0001_tables.sql"),
    include_str!("../../schemas/migrations/sqlite/0002_claim_tokens_and_run_heartbeats.sql"),
    include_str!("../../schemas/migrations/sqlite/0003_claim_expiry.sql"),
    include_str!("../../schemas/migrations/sqlite/0004_outbox_drain.sql"),
    include_str!("../../schemas/migrations/sqlite/0005_run_process.sql"),
    include_str!("../../schemas/migrations/sqlite/0006_root_statuses.sql"),
    include_str!("../../schemas/migrations/sqlite/0007_outbox_model.sql"),
    include_str!("../../schemas/migrations/sqlite/0008_outbox_cells.sql"),
    include_str!("../../schemas/migrations/sqlite/0009_outbox_entry.sql"),
    include_str!("../../schemas/migrations/sqlite/0010_nullified_rows.sql"),
    include_str!("../../schemas/migrations/sqlite/0011_migration_checksums.sql"),
    include_str!("../../schemas/migrations/sqlite/0012_inbox.sql"),
];

/// Whether SQLite can create its journal, WAL index and lock files beside the database. Where it
/// cannot (a read-only mount, another user's directory), a read-only connection opens the file as
/// immutable: SQLite then takes no locks and reads no journal, which is right for a file nobody can
/// be writing there and the only way to read it at all.
#[cfg(unix)]
fn writable_directory(path: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let directory = match std::path::Path::new(path).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    let Ok(directory) = std::ffi::CString::new(directory.as_os_str().as_bytes()) else { return true };
    // SAFETY: `directory` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(directory.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(not(unix))]
fn writable_directory(_path: &str) -> bool {
    true
}

/// Whether a SQLite result code is SQLITE_BUSY ("database is locked"), with its extended codes.
pub(super) fn is_busy(code: &str) -> bool {
    code.parse::<i64>().is_ok_and(|code| code & 0xff == 5)
}

/// The SQLite backend.
#[derive(Debug)]
pub(super) struct Sqlite;

impl Sealed for Sqlite {}

impl Backend for Sqlite {
    fn kind(&self) -> Kind {
        Kind::Sqlite
    }

    fn placeholder(&self, number: usize) -> String {
        format!("?{number}")
    }

    fn compared_as(&self, values: &KeyType, column: &KeyType) -> KeyType {
        // Only integer keys: SQLite's own `=` matches no untyped key with a TEXT column's text.
        if *column == KeyType::Text && *values == KeyType::Integer { KeyType::Text } else { values.clone() }
    }

    fn can_compare(&self, _left: &KeyType, _right: &KeyType) -> bool {
        true
    }

    fn key_list(&self, sql: &mut SqlBuilder, column: &str, key_type: &KeyType, list: Param) {
        // `json_each` gives a JSON number as an integer, and SQLite converts it to no column's
        // affinity in `IN (SELECT ...)`: a TEXT column's `'1'` is found as text only.
        let value = if *key_type == KeyType::Text { "CAST(value AS TEXT)" } else { "value" };
        sql.identifier(column).push(" IN (SELECT ").push(value).push(" FROM json_each(").bind(list).push("))");
    }

    fn key_tuples(&self, sql: &mut SqlBuilder, columns: &[String], key_types: &[KeyType], list: Param) {
        sql.push("(").identifiers(columns).push(") IN (SELECT ");
        for (index, key_type) in key_types.iter().enumerate() {
            let part = format!("json_extract(value, '$[{index}]')");
            let part = if *key_type == KeyType::Text { format!("CAST({part} AS TEXT)") } else { part };
            sql.push(if index == 0 { "" } else { ", " }).push(&part);
        }
        sql.push(" FROM json_each(").bind(list).push("))");
    }

    fn key_text(&self, sql: &mut SqlBuilder, columns: &[String]) {
        let parts: Vec<String> =
            columns.iter().map(|column| format!("CAST({} AS TEXT)", quote_identifier(column))).collect();
        match parts.as_slice() {
            [one] => sql.push(one),
            several => sql.push("json_array(").push(&several.join(", ")).push(")"),
        };
    }

    fn key_value(&self, sql: &mut SqlBuilder, _key_type: &KeyType, value: Param) {
        // The key column's affinity converts the bound value for the comparison.
        sql.bind(value);
    }

    fn row_selector(&self, _partitioned: bool, _key: &[String]) -> RowSelector {
        RowSelector { select: "rowid".into(), matched: "rowid".into(), open: " IN (SELECT ", close: ")" }
    }

    fn json_object(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("json_object(");
        sql.named_columns(columns);
        sql.push(")");
    }

    fn json_array(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("json_array(").identifiers(columns).push(")");
    }

    fn json_array_agg(&self, sql: &mut SqlBuilder, value: &str, order: &str) {
        sql.push("json_group_array(").identifier(value).push(" ORDER BY ").identifier(order).push(")");
    }

    fn row_json(&self, sql: &mut SqlBuilder, _alias: &str, columns: &[String]) {
        if columns.is_empty() {
            sql.push("NULL");
        } else {
            self.json_object(sql, columns);
        }
    }

    fn json_field(&self, name: &str) -> String {
        format!("json_extract(r.value, {})", quote_literal(&format!("$.{name}")))
    }

    fn json_key_field(&self, name: &str, _key_type: &KeyType) -> String {
        // `json_extract` gives a JSON number as an integer and a string as text, as the key
        // column holds them; a TEXT column's `=` converts the integer to its text.
        self.json_field(name)
    }

    fn json_records(&self, sql: &mut SqlBuilder, records: Param, _fields: &[&str]) {
        // Named `r` as on PostgreSQL, so that a table with a column `value` joined to the
        // records is no ambiguity.
        sql.push("json_each(").bind(records).push(") AS r");
    }

    fn timestamp(&self, sql: &mut SqlBuilder, time: SystemTime) {
        sql.bind_text(&db_time(time));
    }

    fn timestamp_text(&self, column: &str) -> String {
        column.to_owned()
    }

    fn outbox_identifier(&self, expression: &str) -> String {
        // An integer key as it is; text (or a real) that reads back as the same integer, as that
        // integer; anything else as text. `stored_as_integer` is the same rule in Rust.
        format!(
            "CASE WHEN typeof({expression}) = 'integer' THEN {expression} \
             WHEN CAST(CAST({expression} AS INTEGER) AS TEXT) = CAST({expression} AS TEXT) \
             THEN CAST({expression} AS INTEGER) ELSE CAST({expression} AS TEXT) END"
        )
    }

    fn bind_outbox_identifier(&self, sql: &mut SqlBuilder, text: &str) {
        match super::outbox::stored_as_integer(text) {
            Some(integer) => sql.bind(Param::integer(integer)),
            None => sql.bind_text(text),
        };
    }

    fn claim_lock(&self) -> &'static str {
        ""
    }

    fn lock_rows_of(&self, _alias: &str) -> String {
        String::new()
    }

    fn table_exists(&self, sql: &mut SqlBuilder, name: &str) {
        sql.push("SELECT COUNT(*) FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ").bind_text(name);
    }

    fn unmatched_keys_in(
        &self,
        sql: &mut SqlBuilder,
        table: &str,
        column: &str,
        column_type: &KeyType,
        keys: &KeyType,
        referenced: Option<(&str, &str)>,
    ) -> bool {
        // SQLite's affinity rule: no declared type, or one containing BLOB, keeps values as given.
        let without_affinity =
            *column_type == KeyType::Untyped || matches!(column_type, KeyType::Other(name) if name.contains("blob"));
        let c = quote_identifier(column);
        // A text SQLite's `=` converts to an integer: `'01'`, `' 1'`, `'1.0'`, `'.1e1'`.
        let integral = format!(
            "typeof({c}) = 'text' AND ({c} = CAST({c} AS INTEGER) OR ({c} = CAST({c} AS REAL) \
             AND CAST({c} AS REAL) = CAST(CAST({c} AS REAL) AS INTEGER)))"
        );
        let condition = match keys {
            // Keys that read as integers are bound as integers, never equal to such a text.
            KeyType::Untyped if without_affinity => {
                format!("typeof({c}) = 'text' AND CAST(CAST({c} AS INTEGER) AS TEXT) = {c}")
            }
            KeyType::Integer if without_affinity => integral,
            // Compared as text (see `compared_as`), `'1'` is found, `'01'` or `' 1'` not.
            KeyType::Integer if *column_type == KeyType::Text => {
                format!("{integral} AND {c} <> CAST(CAST({c} AS INTEGER) AS TEXT)")
            }
            _ => return false,
        };
        sql.push("SELECT CAST(").identifier(column).push(" AS TEXT) FROM ").push(table).push(" AS cascade_row");
        sql.push(" WHERE ").push(&condition);
        if let (KeyType::Integer, Some((parent, key))) = (keys, referenced) {
            // Only a value that matches a parent row: an orphan's `'099'` is left to `orphans`.
            sql.push(" AND EXISTS (SELECT 1 FROM ").push(parent).push(" AS cascade_parent WHERE cascade_parent.");
            sql.identifier(key).push(" = cascade_row.").identifier(column).push(")");
        }
        sql.push(" LIMIT 1");
        true
    }

    fn create_unique_index(&self, sql: &mut SqlBuilder, name: &str, table: &[&str], columns: &[String], _: bool) {
        // SQLite builds an index under the write lock; there is no concurrent build.
        sql.push("CREATE UNIQUE INDEX ").identifier(name).push(" ON ").push(&quote_parts(table));
        sql.push(" (").identifiers(columns).push(");");
    }

    fn tuning(&self) -> &'static Tuning {
        &TUNING
    }
}

const TUNING: Tuning = Tuning {
    identifier_limit: None,
    concurrent_writers: false,
    range_partitions: false,
    defer_foreign_keys: Some("PRAGMA defer_foreign_keys = ON"),
    materialized_with: true,
    updates_return: true,
    unchecked_foreign_keys: None,
    skipped_duplicates_count: false,
    deletes_return: true,
    parameters_in_values: true,
    deletes_in_with: false,
    // `rowid IN (SELECT rowid ... LIMIT n)` builds a temporary b-tree of rowids first.
    limited_delete_is_slow: true,
    // SQLite joins by probing an index per row however many rows it reads: a larger read
    // would only add the check again.
    scan_read_ahead: 0,
    wide_read_setting: None,
    key_array_setting: None,
};

impl Driver for Sqlite {
    fn connect<'a>(
        &'a self,
        url: &'a DatabaseUrl,
        options: ConnectOptions,
    ) -> BoxFuture<'a, Result<Database, DbError>> {
        Box::pin(async move {
            let connect_error = |reason| DbError::Connect { url: url.redacted(), reason };
            // A mistyped path must not become a new, empty database.
            let path = url.sqlite_path();
            if !path.is_empty() && path != ":memory:" && !std::path::Path::new(path).exists() {
                return Err(DbError::NoSuchFile(path.to_owned()));
            }
            let read_only = options.access == Access::ReadOnly;
            let connect_options = SqliteConnectOptions::from_str(url.as_str())
                .map_err(connect_error)?
                .read_only(read_only)
                .immutable(read_only && !writable_directory(path))
                .create_if_missing(false)
                .foreign_keys(true)
                // 16 MiB of page cache (SQLite's default is 2 MiB): a chunk's dirty pages then stay
                // in memory until its commit instead of spilling to the journal part-way.
                .pragma("cache_size", "-16384")
                .busy_timeout(options.busy_timeout);
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .test_before_acquire(false)
                .connect_with(connect_options)
                .await
                .map_err(connect_error)?;
            Ok(Database::new(&Sqlite, Pool::Sqlite(pool)))
        })
    }

    fn migrations(&self) -> &'static [&'static str] {
        MIGRATIONS
    }

    fn checksummed_from(&self) -> i64 {
        11
    }

    fn writer_lock(&self, _lock: WriterLock) -> Option<&'static str> {
        None
    }

    fn lock_for_migration(&self, _tables: &[&str]) -> Option<String> {
        None
    }

    fn classify(&self, error: &sqlx::Error) -> Failure {
        if let Some(failure) = connection_failure(error) {
            return failure;
        }
        // SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes (code + 256 * n).
        let primary = match error {
            sqlx::Error::Database(error) => error.code().and_then(|code| code.parse::<i64>().ok()).map(|c| c & 0xff),
            _ => None,
        };
        if matches!(primary, Some(5 | 6)) { Failure::Transient } else { Failure::Permanent }
    }

    fn type_mismatch(&self, _error: &sqlx::Error) -> bool {
        // SQLite compares values of any two types.
        false
    }

    fn unique_violation(&self, error: &sqlx::Error) -> Option<String> {
        let error = error.as_database_error().filter(|error| error.is_unique_violation())?;
        // SQLite names the columns only: `UNIQUE constraint failed: t.a, t.b`.
        let message = error.message();
        Some(
            message
                .strip_prefix("UNIQUE constraint failed: ")
                .map_or_else(|| message.to_owned(), |on| format!("on {on}")),
        )
    }

    fn raised_by_trigger(&self, error: &sqlx::Error) -> Option<Option<String>> {
        // SQLITE_CONSTRAINT_TRIGGER: `RAISE(ABORT | FAIL | ROLLBACK, ...)` in a trigger. SQLite
        // does not say which trigger.
        let code = error.as_database_error()?.code()?;
        (code == "1811").then_some(None)
    }
}
