//! PostgreSQL. Lists of keys travel as one array parameter cast to the key's type; rows are
//! addressed by `ctid` (with `tableoid` on a partitioned table); claims skip locked rows.

use std::str::FromStr;
use std::time::SystemTime;

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

use super::driver::{
    BoxFuture, CONNECT_TIMEOUT, Driver, Failure, WriterLock, connect_within_timeout, connection_failure,
};
use super::kind::Kind;
use super::sql::sealed::Sealed;
use super::sql::{Backend, KeyType, Param, RowSelector, SqlBuilder, Tuning, db_time, quote_identifier, quote_parts};
use super::url::DatabaseUrl;
use super::{Access, ConnectOptions, Database, DbError, Pool};

const MIGRATIONS: &[&str] = &[
    include_str!("../../schemas/migrations/postgres/0001_tables.sql"),
    include_str!("../../schemas/migrations/postgres/0002_claim_tokens_and_run_heartbeats.sql"),
    include_str!("../../schemas/migrations/postgres/0003_claim_expiry.sql"),
    include_str!("../../schemas/migrations/postgres/0004_outbox_drain.sql"),
    include_str!("../../schemas/migrations/postgres/0005_run_process.sql"),
    include_str!("../../schemas/migrations/postgres/0006_root_statuses.sql"),
    include_str!("../../schemas/migrations/postgres/0007_outbox_model.sql"),
    include_str!("../../schemas/migrations/postgres/0008_outbox_cells.sql"),
    include_str!("../../schemas/migrations/postgres/0009_outbox_entry.sql"),
    include_str!("../../schemas/migrations/postgres/0010_nullified_rows.sql"),
    include_str!("../../schemas/migrations/postgres/0011_migration_checksums.sql"),
    include_str!("../../schemas/migrations/postgres/0012_inbox.sql"),
];

/// The PostgreSQL backend.
#[derive(Debug)]
pub(super) struct Postgres;

impl Sealed for Postgres {}

impl Backend for Postgres {
    fn kind(&self) -> Kind {
        Kind::Postgres
    }

    fn placeholder(&self, number: usize) -> String {
        format!("${number}")
    }

    fn compared_as(&self, values: &KeyType, _column: &KeyType) -> KeyType {
        // `=` between the two converts as it must, or has no operator: `relation-type-mismatch`.
        values.clone()
    }

    fn can_compare(&self, left: &KeyType, right: &KeyType) -> bool {
        left.compares_on_postgres(right)
    }

    fn key_list(&self, sql: &mut SqlBuilder, column: &str, key_type: &KeyType, list: Param) {
        let cast_from_text = bound_as_text(&list, key_type);
        sql.identifier(column).push(" = ANY(").bind(list);
        if cast_from_text {
            sql.push("::text[]");
        }
        sql.push("::").push(key_cast(key_type)).push("[])");
    }

    fn key_tuples(&self, sql: &mut SqlBuilder, columns: &[String], key_types: &[KeyType], list: Param) {
        sql.push("(").identifiers(columns).push(") IN (SELECT ");
        for (index, key_type) in key_types.iter().enumerate() {
            let part = format!("CAST(cascade_key ->> {index} AS {})", key_cast(key_type));
            sql.push(if index == 0 { "" } else { ", " }).push(&part);
        }
        sql.push(" FROM jsonb_array_elements(CAST(").bind(list).push(" AS jsonb)) AS cascade_keys(cascade_key))");
    }

    fn key_text(&self, sql: &mut SqlBuilder, columns: &[String]) {
        let parts: Vec<String> =
            columns.iter().map(|column| format!("CAST({} AS TEXT)", quote_identifier(column))).collect();
        match parts.as_slice() {
            [one] => sql.push(one),
            several => sql.push("CAST(json_build_array(").push(&several.join(", ")).push(") AS TEXT)"),
        };
    }

    fn key_value(&self, sql: &mut SqlBuilder, key_type: &KeyType, value: Param) {
        let cast_from_text = bound_as_text(&value, key_type);
        sql.push("CAST(").bind(value);
        if cast_from_text {
            sql.push("::text");
        }
        sql.push(" AS ").push(key_cast(key_type)).push(")");
    }

    fn row_selector(&self, partitioned: bool, _key: &[String]) -> RowSelector {
        // PostgreSQL looks a `ctid = ANY(ARRAY(...))` up row by row, far faster than the hash
        // join it plans for `ctid IN (SELECT ...)`; a `ctid` is unique only inside one
        // partition, so a partitioned table needs the pair.
        if partitioned {
            RowSelector {
                select: "tableoid, ctid".into(),
                matched: "(tableoid, ctid)".into(),
                open: " IN (SELECT ",
                close: ")",
            }
        } else {
            RowSelector { select: "ctid".into(), matched: "ctid".into(), open: " = ANY(ARRAY(SELECT ", close: "))" }
        }
    }

    fn json_object(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("CAST(json_build_object(");
        sql.named_columns(columns);
        sql.push(") AS TEXT)");
    }

    fn json_array(&self, sql: &mut SqlBuilder, columns: &[String]) {
        sql.push("CAST(json_build_array(").identifiers(columns).push(") AS TEXT)");
    }

    fn json_array_agg(&self, sql: &mut SqlBuilder, value: &str, order: &str) {
        sql.push("CAST(json_agg(").identifier(value).push(" ORDER BY ").identifier(order).push(") AS TEXT)");
    }

    fn row_json(&self, sql: &mut SqlBuilder, alias: &str, _columns: &[String]) {
        sql.push("CAST(row_to_json(").identifier(alias).push(") AS TEXT)");
    }

    fn json_field(&self, name: &str) -> String {
        // The field names are the tool's own, fixed in code.
        format!("r.{name}")
    }

    fn json_key_field(&self, name: &str, key_type: &KeyType) -> String {
        format!("CAST({} AS {})", self.json_field(name), key_cast(key_type))
    }

    fn json_records(&self, sql: &mut SqlBuilder, records: Param, fields: &[&str]) {
        let columns: Vec<String> = fields.iter().map(|field| format!("{field} text")).collect();
        sql.push("json_to_recordset(CAST(").bind(records).push(" AS json)) AS r(").push(&columns.join(", ")).push(")");
    }

    fn timestamp(&self, sql: &mut SqlBuilder, time: SystemTime) {
        sql.push("CAST(").bind_text(&db_time(time)).push(" || '+00' AS TIMESTAMPTZ)");
    }

    fn timestamp_text(&self, column: &str) -> String {
        format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')")
    }

    fn outbox_identifier(&self, expression: &str) -> String {
        format!("CAST({expression} AS TEXT)")
    }

    fn bind_outbox_identifier(&self, sql: &mut SqlBuilder, text: &str) {
        sql.bind_text(text);
    }

    fn claim_lock(&self) -> &'static str {
        " FOR UPDATE SKIP LOCKED"
    }

    fn lock_rows_of(&self, alias: &str) -> String {
        format!(" FOR UPDATE OF {alias}")
    }

    fn table_exists(&self, sql: &mut SqlBuilder, name: &str) {
        sql.push("SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass(").bind_text(name).push(")");
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
        // Every PostgreSQL column has a type, and keys are bound in it: `=` finds what it matches.
        false
    }

    fn create_unique_index(
        &self,
        sql: &mut SqlBuilder,
        name: &str,
        table: &[&str],
        columns: &[String],
        partitioned: bool,
    ) {
        // CONCURRENTLY keeps the table writable while the index is built (it cannot run inside a
        // transaction block); a partitioned table refuses it, and locks for the build instead.
        let how = if partitioned { "CREATE UNIQUE INDEX " } else { "CREATE UNIQUE INDEX CONCURRENTLY " };
        sql.push(how).identifier(name).push(" ON ").push(&quote_parts(table));
        sql.push(" (").identifiers(columns).push(");");
    }

    fn tuning(&self) -> &'static Tuning {
        &TUNING
    }
}

const TUNING: Tuning = Tuning {
    // NAMEDATALEN - 1.
    identifier_limit: Some(63),
    concurrent_writers: true,
    range_partitions: true,
    defer_foreign_keys: None,
    materialized_with: true,
    updates_return: true,
    unchecked_foreign_keys: None,
    skipped_duplicates_count: false,
    deletes_return: true,
    parameters_in_values: true,
    deletes_in_with: true,
    // `ctid = ANY(ARRAY(SELECT ctid ... LIMIT n))` visits each row once, like the index.
    limited_delete_is_slow: false,
    // A read of a batch is a nested-loop anti-join probing the parent's index for every
    // child row (80 ms of a 100 ms batch of 5,000 orphans at 1M rows); for this many keys the
    // planner hashes the parent table once instead (about a fifth of the time per key).
    scan_read_ahead: 100_000,
    // PostgreSQL's default number of parallel workers per query (`connect` sets none; `TO
    // DEFAULT` would restore that connection's 0), within the server's `max_parallel_workers`:
    // a read-ahead of 100,000 orphans took 440-580 ms without them, about 300 ms with two.
    wide_read_setting: Some("SET LOCAL max_parallel_workers_per_gather = 2"),
    // A custom plan of `col = ANY($1)` estimates the selectivity key by key at every
    // execution (1-3 ms per statement of a 2,000-key chunk, about 10 % of a deletion), and
    // lands on the same index scan.
    key_array_setting: Some("SET LOCAL plan_cache_mode = force_generic_plan"),
};

impl Driver for Postgres {
    fn connect<'a>(
        &'a self,
        url: &'a DatabaseUrl,
        connect: ConnectOptions,
    ) -> BoxFuture<'a, Result<Database, DbError>> {
        Box::pin(async move {
            let failed = |reason| DbError::Connect { url: url.redacted(), reason };
            let mut options = PgConnectOptions::from_str(url.as_str()).map_err(failed)?;
            options = match connect.access {
                // Every transaction of a read-only connection is read only: a write the tool
                // never means to make fails instead of happening.
                Access::ReadOnly => options.options([("default_transaction_read_only", "on")]),
                // A writer's statements each touch a chunk (`... LIMIT 500`): parallel workers
                // only add their start-up, which made picking a batch of orphans 4× slower.
                Access::ReadWrite => options.options([("max_parallel_workers_per_gather", "0")]),
            };
            // No ping before each use: a chunk is a handful of statements, and a ping per acquire
            // was a round trip each; a connection that died fails its statement, which is a
            // transient failure like any other.
            let pool = PgPoolOptions::new()
                .max_connections(4)
                .test_before_acquire(false)
                .acquire_timeout(CONNECT_TIMEOUT)
                .connect_lazy_with(options.clone());
            // The pool's first connection, while a connection of its own is made beside it: a
            // refused or failed connection is reported by the latter as what it is at once,
            // where the pool would retry it until its timeout and say only that it timed out.
            let warming = tokio::spawn({
                let pool = pool.clone();
                async move { pool.acquire().await.map(drop) }
            });
            let checked = connect_within_timeout(PgConnection::connect_with(&options)).await;
            let first = match checked {
                Ok(first) => first,
                Err(error) => {
                    warming.abort();
                    return Err(failed(error));
                }
            };
            let _ = first.close().await;
            match warming.await {
                Ok(warmed) => warmed.map_err(failed)?,
                Err(_) => return Err(failed(sqlx::Error::PoolClosed)),
            }
            Ok(Database::new(&Postgres, Pool::Postgres(pool)))
        })
    }

    fn migrations(&self) -> &'static [&'static str] {
        MIGRATIONS
    }

    fn checksummed_from(&self) -> i64 {
        11
    }

    fn writer_lock(&self, lock: WriterLock) -> Option<&'static str> {
        // Any numbers: the tool's own advisory locks, held until the transaction ends.
        Some(match lock {
            WriterLock::Migration => "SELECT pg_advisory_xact_lock(4242424242)",
            WriterLock::RunStart => "SELECT pg_advisory_xact_lock(4242424243)",
        })
    }

    fn lock_for_migration(&self, tables: &[&str]) -> Option<String> {
        // EXCLUSIVE blocks every write and lets reads go on; the advisory lock alone would let
        // another session (an application's own outbox writes, a worker of the release before)
        // commit rows into a table between a migration's copy of it and its drop. The names
        // are the migrations' own, never a user's.
        let names: Vec<String> = tables.iter().map(|table| format!("'{table}'")).collect();
        Some(format!(
            "DO $lock$
            DECLARE tables TEXT;
            BEGIN
                SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.relname) INTO tables
                FROM pg_class c
                WHERE c.relname IN ({}) AND c.relkind IN ('r', 'p') AND pg_table_is_visible(c.oid);
                IF tables IS NOT NULL THEN
                    EXECUTE 'LOCK TABLE ' || tables || ' IN EXCLUSIVE MODE';
                END IF;
            END
            $lock$",
            names.join(", ")
        ))
    }

    fn classify(&self, error: &sqlx::Error) -> Failure {
        if let Some(failure) = connection_failure(error) {
            return failure;
        }
        let (state, message) = match error {
            sqlx::Error::Database(error) => {
                (error.code().map(|code| code.into_owned()).unwrap_or_default(), error.message().to_owned())
            }
            _ => (String::new(), String::new()),
        };
        // 08: connection exception; 40001 serialization failure; 40P01 deadlock; 55P03 lock not
        // available; 57014 statement timeout or cancel; 57P0x server shutting down or starting;
        // 53: out of resources. 55000 is transient only for a database that does not accept
        // connections for now; otherwise (a table without replica identity in a publication)
        // it fails the same way every time.
        let transient = state.starts_with("08")
            || state.starts_with("53")
            || state.starts_with("57P")
            || matches!(state.as_str(), "40001" | "40P01" | "55P03" | "57014")
            || (state == "55000" && message.contains("not currently accepting connections"));
        if transient { Failure::Transient } else { Failure::Permanent }
    }

    fn type_mismatch(&self, error: &sqlx::Error) -> bool {
        // 42883 undefined function (`operator does not exist`), 42804 datatype mismatch.
        error.as_database_error().and_then(|error| error.code()).is_some_and(|code| matches!(&*code, "42883" | "42804"))
    }

    fn unique_violation(&self, error: &sqlx::Error) -> Option<String> {
        let error = error.as_database_error().filter(|error| error.is_unique_violation())?;
        Some(error.constraint().map_or_else(|| error.message().to_owned(), |constraint| format!("`{constraint}`")))
    }

    fn raised_by_trigger(&self, error: &sqlx::Error) -> Option<Option<String>> {
        // A delete runs no function but a trigger's: an error raised in PL/pgSQL (its context
        // reads `PL/pgSQL function guard() line 3 at RAISE`) came from one. PostgreSQL names the
        // function, not the trigger.
        let error = error.as_database_error()?.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()?;
        let context = error.r#where()?;
        let function = context.lines().find_map(|line| line.strip_prefix("PL/pgSQL function "))?;
        Some(function.split(" line ").next().map(str::to_owned))
    }
}

/// The type a key of `key_type` is cast to.
/// Whether `param`, for a key of an integer column, is bound as text (a key that does not read as
/// an integer, for the database to refuse or match nothing). Its statement then says so: the
/// statement cache keys prepared statements by their text, and one prepared for a text parameter
/// refuses an integer one (and the reverse) with the same text.
fn bound_as_text(param: &Param, key_type: &KeyType) -> bool {
    *key_type == KeyType::Integer
        && matches!(param, Param::Keys(super::Keys::Texts(_)) | Param::Value(super::values::SqlValue::Text(_)))
}

fn key_cast(key_type: &KeyType) -> &str {
    match key_type {
        KeyType::Integer => "int8",
        KeyType::Text | KeyType::Untyped => "text",
        KeyType::Other(cast) => cast,
    }
}
