//! MySQL and MariaDB (tested on MariaDB 10.11). Every connection runs with `ANSI_QUOTES` (a
//! double-quoted name is an identifier, as on the other databases), `PIPES_AS_CONCAT` and
//! `NO_BACKSLASH_ESCAPES` (a literal's only escape is a doubled quote) in UTC. Lists of keys
//! travel as one JSON array read with `JSON_TABLE`; rows are addressed by their key; claims skip
//! locked rows. Data definition commits by itself here, so the tool's migrations are written to
//! be run again safely.

use std::str::FromStr;
use std::time::SystemTime;

use sqlx::Connection as _;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPoolOptions};

use super::driver::{
    BoxFuture, CONNECT_TIMEOUT, Driver, Failure, WriterLock, connect_within_timeout, connection_failure,
};
use super::kind::Kind;
use super::sql::sealed::Sealed;
use super::sql::{Backend, KeyType, Param, RowSelector, SqlBuilder, Tuning, db_time, quote_identifier};
use super::url::DatabaseUrl;
use super::{Access, ConnectOptions, Database, DbError, Pool};

const MIGRATIONS: &[&str] = &[include_str!("../../schemas/migrations/mysql/0001_tables.sql")];

/// What every connection sets first. `JSON_ARRAYAGG` is built on `GROUP_CONCAT` and cut at
/// `group_concat_max_len` (1 MiB by default), which a chunk's keys must never meet. Transactions
/// read committed rows, as on PostgreSQL: InnoDB's default (repeatable read) also locks the gaps
/// between the rows a statement reads, and writers working on neighbouring rows (drainers of one
/// shard's cells, deletions of neighbouring subtrees) would deadlock on them. A recursive query
/// (a plan's count of a tree) runs to its end: MariaDB stops one after 1,000 iterations by
/// default, with only a warning.
const SESSION: &str = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES'), \
     group_concat_max_len = 1073741824, max_recursive_iterations = 4294967295; \
     SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// The MySQL backend.
#[derive(Debug)]
pub(super) struct Mysql;

impl Sealed for Mysql {}

/// The type a key of `key_type` is read from JSON as: `JSON_TABLE` wants a type for each column,
/// and a key of a type the tool does not know travels as text for MySQL to convert.
fn json_column_type(key_type: &KeyType) -> &'static str {
    match key_type {
        KeyType::Integer => "BIGINT",
        KeyType::Text | KeyType::Untyped | KeyType::Other(_) => "VARCHAR(3072)",
    }
}

impl Backend for Mysql {
    fn kind(&self) -> Kind {
        Kind::Mysql
    }

    fn placeholder(&self, _number: usize) -> String {
        // MySQL's placeholders are not numbered: they bind in the order they appear, which is the
        // order the builder numbers them in.
        "?".to_owned()
    }

    fn compared_as(&self, values: &KeyType, _column: &KeyType) -> KeyType {
        values.clone()
    }

    fn can_compare(&self, _left: &KeyType, _right: &KeyType) -> bool {
        // MySQL's `=` converts between any two types.
        true
    }

    fn key_list(&self, sql: &mut SqlBuilder, column: &str, key_type: &KeyType, list: Param) {
        sql.identifier(column).push(" IN (SELECT cascade_value FROM JSON_TABLE(").bind(list);
        sql.push(", '$[*]' COLUMNS (cascade_value ").push(json_column_type(key_type));
        sql.push(" PATH '$')) AS cascade_values)");
    }

    fn key_tuples(&self, sql: &mut SqlBuilder, columns: &[String], key_types: &[KeyType], list: Param) {
        let parts: Vec<String> = (0..key_types.len()).map(|index| format!("cascade_{index}")).collect();
        sql.push("(").identifiers(columns).push(") IN (SELECT ").push(&parts.join(", "));
        sql.push(" FROM JSON_TABLE(").bind(list).push(", '$[*]' COLUMNS (");
        for (index, key_type) in key_types.iter().enumerate() {
            let part = format!("cascade_{index} {} PATH '$[{index}]'", json_column_type(key_type));
            sql.push(if index == 0 { "" } else { ", " }).push(&part);
        }
        sql.push(")) AS cascade_keys)");
    }

    fn key_text(&self, sql: &mut SqlBuilder, columns: &[String]) {
        let parts: Vec<String> = columns.iter().map(|column| self.text(&quote_identifier(column))).collect();
        match parts.as_slice() {
            [one] => sql.push(one),
            // Text, not JSON: `JSON_ARRAYAGG` would nest a JSON value as an array.
            several => sql.push("CAST(JSON_ARRAY(").push(&several.join(", ")).push(") AS CHAR)"),
        };
    }

    fn key_value(&self, sql: &mut SqlBuilder, key_type: &KeyType, value: Param) {
        if *key_type == KeyType::Integer {
            sql.push("CAST(").bind(value).push(" AS SIGNED)");
        } else {
            sql.bind(value);
        }
    }

    fn row_selector(&self, _partitioned: bool, key: &[String]) -> RowSelector {
        // No row address: the key. MySQL refuses a `LIMIT` in an `IN` sub-select, and a
        // sub-select of the table a statement changes, unless it is a derived table, which is
        // read whole before the statement changes a row.
        let columns: Vec<String> = key.iter().map(|column| quote_identifier(column)).collect();
        let matched = match columns.as_slice() {
            [one] => one.clone(),
            several => format!("({})", several.join(", ")),
        };
        RowSelector {
            select: columns.join(", "),
            matched,
            open: " IN (SELECT * FROM (SELECT ",
            close: ") AS cascade_limited)",
        }
    }

    fn delete_from(&self, sql: &mut SqlBuilder, table: &str, alias: &str) {
        // MariaDB names an alias in a single-table DELETE only from 11.6: the multiple-table form.
        sql.push("DELETE ").identifier(alias).push(" FROM ").push(table).push(" AS ").identifier(alias);
    }

    fn update_joined(
        &self,
        sql: &mut SqlBuilder,
        (table, alias): (&str, &str),
        (column, value): (&str, &str),
        rows: &mut dyn FnMut(&mut SqlBuilder),
        condition: &str,
    ) {
        // MySQL has no `UPDATE ... FROM`: the rows are joined, and the column named by its table
        // (a multiple-table update reads a bare name in either).
        sql.push("UPDATE ").push(table).push(" AS ").identifier(alias).push(" JOIN ");
        rows(sql);
        sql.push(" ON ").push(condition).push(" SET ").identifier(alias).push(".").identifier(column);
        sql.push(" = ").push(value);
    }

    fn on_duplicate(&self, sql: &mut SqlBuilder, key: &[&str], updated: &[&str], also: &str) {
        // Nothing to do is a column set to itself, which changes no row; `INSERT IGNORE` would
        // also turn other errors (a value too long) into warnings.
        let mut assignments: Vec<String> = match updated {
            [] => key.iter().take(1).map(|column| format!("{column} = {column}")).collect(),
            updated => updated.iter().map(|column| format!("{column} = VALUES({column})")).collect(),
        };
        assignments.extend((!also.is_empty() && !updated.is_empty()).then(|| also.to_owned()));
        sql.push(" ON DUPLICATE KEY UPDATE ").push(&assignments.join(", "));
    }

    fn on_duplicate_when(
        &self,
        sql: &mut SqlBuilder,
        _key: &[&str],
        updated: &[&str],
        condition: &mut dyn FnMut(&mut SqlBuilder),
    ) {
        // Assignments run in order, each seeing those before: the first decides, and the others
        // follow it when it took the new (never held) value.
        let Some((first, others)) = updated.split_first() else { return };
        sql.push(" ON DUPLICATE KEY UPDATE ").push(first).push(" = IF(");
        condition(sql);
        sql.push(&format!(", VALUES({first}), {first})"));
        for column in others {
            sql.push(&format!(", {column} = IF({first} = VALUES({first}), VALUES({column}), {column})"));
        }
    }

    fn lines_agg(&self, sql: &mut SqlBuilder, expression: &mut dyn FnMut(&mut SqlBuilder)) {
        // `SEPARATOR` takes a literal only, not a parameter: a newline, written as one.
        sql.push("GROUP_CONCAT(");
        expression(sql);
        sql.push(" SEPARATOR '\n')");
    }

    fn double_type(&self) -> &'static str {
        "DOUBLE"
    }

    fn text_type(&self) -> &'static str {
        "CHAR"
    }

    fn json_object(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("JSON_OBJECT(");
        sql.named_columns(columns);
        sql.push(")");
    }

    fn json_array(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("JSON_ARRAY(").identifiers(columns).push(")");
    }

    fn json_array_agg(&self, sql: &mut SqlBuilder, value: &str, order: &str) {
        sql.push("JSON_ARRAYAGG(").identifier(value).push(" ORDER BY ").identifier(order).push(")");
    }

    fn row_json(&self, sql: &mut SqlBuilder, _alias: &str, columns: &[String]) {
        if columns.is_empty() {
            sql.push("NULL");
        } else {
            self.json_object(sql, columns);
        }
    }

    fn json_field(&self, name: &str) -> String {
        // The field names are the tool's own, fixed in code; some are MySQL keywords (`key`).
        format!("r.{}", quote_identifier(name))
    }

    fn json_key_field(&self, name: &str, key_type: &KeyType) -> String {
        match key_type {
            KeyType::Integer => format!("CAST({} AS SIGNED)", self.json_field(name)),
            _ => self.json_field(name),
        }
    }

    fn json_records(&self, sql: &mut SqlBuilder, records: Param, fields: &[&str]) {
        let columns: Vec<String> =
            fields.iter().map(|field| format!("{} LONGTEXT PATH '$.{field}'", quote_identifier(field))).collect();
        sql.push("JSON_TABLE(").bind(records).push(", '$[*]' COLUMNS (").push(&columns.join(", ")).push(")) AS r");
    }

    fn timestamp(&self, sql: &mut SqlBuilder, time: SystemTime) {
        sql.push("CAST(").bind_text(&db_time(time)).push(" AS DATETIME(3))");
    }

    fn timestamp_text(&self, column: &str) -> String {
        // `%f` is microseconds: the tool's text has milliseconds.
        format!("LEFT(DATE_FORMAT({column}, '%Y-%m-%d %H:%i:%s.%f'), 23)")
    }

    fn outbox_identifier(&self, expression: &str) -> String {
        self.text(expression)
    }

    fn bind_outbox_identifier(&self, sql: &mut SqlBuilder, text: &str) {
        sql.bind_text(text);
    }

    fn claim_lock(&self) -> &'static str {
        " FOR UPDATE SKIP LOCKED"
    }

    fn lock_rows_of(&self, _alias: &str) -> String {
        // MariaDB has no `FOR UPDATE OF`: every row the select reads is locked.
        " FOR UPDATE".to_owned()
    }

    fn table_exists(&self, sql: &mut SqlBuilder, name: &str) {
        sql.push("SELECT COUNT(*) FROM information_schema.tables WHERE ");
        match name.split_once('.') {
            Some((schema, table)) => {
                sql.push("table_schema = ").bind_text(schema).push(" AND table_name = ").bind_text(table)
            }
            None => sql.push("table_schema = DATABASE() AND table_name = ").bind_text(name),
        };
    }

    fn unmatched_keys_in(
        &self,
        _: &mut SqlBuilder,
        _: &str,
        _: &str,
        _: &KeyType,
        _: &KeyType,
        _: Option<(&str, &str)>,
    ) -> bool {
        // Every MySQL column has a type, and keys are bound in it.
        false
    }

    fn create_unique_index(&self, sql: &mut SqlBuilder, name: &str, table: &[&str], columns: &[String], _: bool) {
        // InnoDB builds an index in place and lets writes go on meanwhile. Backquotes: the
        // statement is printed for the `mysql` client, whose sessions do not read `"` as a quote.
        let quote = |name: &str| Kind::Mysql.quote_part_for_clients(name);
        let table: Vec<String> = table.iter().map(|part| quote(part)).collect();
        let columns: Vec<String> = columns.iter().map(|column| quote(column)).collect();
        sql.push("CREATE UNIQUE INDEX ").push(&quote(name)).push(" ON ").push(&table.join("."));
        sql.push(" (").push(&columns.join(", ")).push(");");
    }

    fn tuning(&self) -> &'static Tuning {
        &TUNING
    }
}

const TUNING: Tuning = Tuning {
    identifier_limit: Some(64),
    concurrent_writers: true,
    range_partitions: true,
    defer_foreign_keys: None,
    materialized_with: false,
    updates_return: false,
    unchecked_foreign_keys: Some(("SET SESSION foreign_key_checks = 0", "SET SESSION foreign_key_checks = 1")),
    skipped_duplicates_count: true,
    deletes_return: false,
    parameters_in_values: false,
    deletes_in_with: false,
    // The limited sub-select is materialized before its rows are deleted by key.
    limited_delete_is_slow: true,
    scan_read_ahead: 0,
    wide_read_setting: None,
    key_array_setting: None,
};

impl Driver for Mysql {
    fn connect<'a>(
        &'a self,
        url: &'a DatabaseUrl,
        connect: ConnectOptions,
    ) -> BoxFuture<'a, Result<Database, DbError>> {
        Box::pin(async move {
            let failed = |reason| DbError::Connect { url: url.redacted(), reason };
            let options = MySqlConnectOptions::from_str(url.as_str()).map_err(failed)?.timezone(Some("+00:00".into()));
            let read_only = connect.access == Access::ReadOnly;
            let pool = MySqlPoolOptions::new()
                .max_connections(4)
                .test_before_acquire(false)
                .acquire_timeout(CONNECT_TIMEOUT)
                .after_connect(move |connection, _| {
                    Box::pin(async move {
                        sqlx::raw_sql(SESSION).execute(&mut *connection).await?;
                        // A write the tool never means to make fails instead of happening.
                        if read_only {
                            sqlx::raw_sql("SET SESSION TRANSACTION READ ONLY").execute(&mut *connection).await?;
                        }
                        Ok(())
                    })
                })
                .connect_lazy_with(options.clone());
            // A connection of its own first, which also tells the server's version.
            let mut checked = connect_within_timeout(MySqlConnection::connect_with(&options)).await.map_err(failed)?;
            let version: String =
                sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut checked).await.map_err(failed)?;
            let _ = checked.close().await;
            if !supported(&version) {
                return Err(DbError::UnsupportedServer(version));
            }
            pool.acquire().await.map_err(failed)?;
            Ok(Database::new(&Mysql, Pool::Mysql(pool)))
        })
    }

    fn migrations(&self) -> &'static [&'static str] {
        MIGRATIONS
    }

    fn checksummed_from(&self) -> i64 {
        1
    }

    fn writer_lock(&self, lock: WriterLock) -> Option<&'static str> {
        // A named lock, held by the connection until `release_writer_locks`: MySQL has no lock
        // that a transaction's end releases and that data definition (which commits by itself,
        // as a migration's does) leaves held.
        Some(match lock {
            WriterLock::Migration => "DO GET_LOCK('cascade_migration', 600)",
            WriterLock::RunStart => "DO GET_LOCK('cascade_run_start', 600)",
        })
    }

    fn release_writer_locks(&self) -> Option<&'static str> {
        Some("DO RELEASE_ALL_LOCKS()")
    }

    fn lock_for_migration(&self, _tables: &[&str]) -> Option<String> {
        // The tool's tables are created, never moved, on MySQL so far: nothing to hold still.
        None
    }

    fn classify(&self, error: &sqlx::Error) -> Failure {
        if let Some(failure) = connection_failure(error) {
            return failure;
        }
        // 1205 lock wait timeout; 1213 deadlock; 1040 too many connections; 1053 server shutdown;
        // 1927 connection killed; 1969 MariaDB's statement timeout; 3024 MySQL's; 4031 the server
        // closed an idle connection; 2006 and 2013 the server went away or the connection was
        // lost mid-statement.
        let transient = number(error).is_some_and(|number| {
            matches!(number, 1040 | 1053 | 1205 | 1213 | 1927 | 1969 | 2006 | 2013 | 3024 | 4031)
        });
        if transient { Failure::Transient } else { Failure::Permanent }
    }

    fn type_mismatch(&self, _error: &sqlx::Error) -> bool {
        // MySQL's `=` converts between any two types.
        false
    }

    fn unique_violation(&self, error: &sqlx::Error) -> Option<String> {
        let error = error.as_database_error().filter(|error| error.is_unique_violation())?;
        // `Duplicate entry '7' for key 'name'`: the key's name is last.
        let message = error.message();
        let name = message.rsplit_once(" for key '").map(|(_, name)| name.trim_end_matches('\''));
        Some(name.map_or_else(|| message.to_owned(), |name| format!("`{name}`")))
    }

    fn raised_by_trigger(&self, error: &sqlx::Error) -> Option<Option<String>> {
        // 1644: `SIGNAL` with a user's SQLSTATE, as a trigger raises an error. MySQL does not
        // say which trigger.
        (number(error)? == 1644).then_some(None)
    }
}

/// Whether the server's `VERSION()` (`10.11.19-MariaDB-0+deb12u1`) is MariaDB 10.6 or newer.
fn supported(version: &str) -> bool {
    let mut parts = version.split(['.', '-']).map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    version.contains("MariaDB") && (major, minor) >= (10, 6)
}

/// MySQL's own number for a database error.
fn number(error: &sqlx::Error) -> Option<u16> {
    Some(error.as_database_error()?.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()?.number())
}

#[cfg(test)]
mod tests {
    #[test]
    fn mariadb_from_10_6_is_supported_and_mysql_is_not() {
        assert!(super::supported("10.11.19-MariaDB-0+deb12u1"));
        assert!(super::supported("11.4.2-MariaDB"));
        assert!(!super::supported("10.5.23-MariaDB"));
        assert!(!super::supported("8.0.36"));
    }
}
