//! The database leaf: connections, statements and the tool's own tables, for SQLite (the
//! embedded default), PostgreSQL and MySQL. Every difference between them lives behind
//! `Backend`; nothing here knows of configs or plans.

mod dialect;
mod driver;
mod keys;
mod kind;
mod migrate;
mod mysql;
pub mod options;
pub(crate) mod outbox;
pub mod partitions;
mod postgres;
mod record;
pub(crate) mod sql;
mod sqlite;
mod url;
mod values;

use driver::Driver;
pub use driver::Failure;
pub(crate) use driver::WriterLock;
pub use kind::Kind;
pub use migrate::{SCHEMA_VERSION_TABLE, checksum, migrate, schema_version};
pub(crate) use sql::Backend;
pub(crate) use url::redact_with_query;
pub(crate) use url::register_secrets_with_query;
pub use url::register_url_secrets;
pub use url::{DEFAULT_DATABASE_FILE, DEFAULT_DATABASE_URL, DatabaseUrl, redact, redact_command_line};

use sqlx::mysql::MySqlPool;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

use sql::{Param, SqlValue};

pub use keys::Keys;
pub(crate) use record::Record;

impl Kind {
    /// The backend of this kind of database.
    pub(crate) fn backend(self) -> &'static dyn Backend {
        self.driver()
    }

    /// How the tool connects to this kind of database and reads its errors.
    fn driver(self) -> &'static dyn Driver {
        match self {
            Kind::Sqlite => &sqlite::Sqlite,
            Kind::Postgres => &postgres::Postgres,
            Kind::Mysql => &mysql::Mysql,
        }
    }
}

// The few statement pieces the command line, the tests and programs need; the builder itself is
// internal.
pub(crate) use keys::{key_value, typed_key_json};
pub use sql::{KeyType, Statement, db_time, latest_time, quote_literal};

/// A pool of connections to one database, with the backend that speaks to it.
#[derive(Debug, Clone)]
pub struct Database {
    driver: &'static dyn Driver,
    pool: Pool,
    /// Set once the tool's tables are known to be at this build's version: every later
    /// [`migrate`] of the pool (a clean-up runs one deletion per batch) is free.
    migrated: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The connections themselves; only this module and the schema readers look inside.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
    Mysql(MySqlPool),
}

/// Whether a connection may change the database. Read-only connections never create a missing
/// SQLite file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only.
    ReadOnly,
    /// Reads and writes.
    ReadWrite,
}

/// How to connect: the access, and how long a SQLite statement waits for another writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Whether the connection may change the database.
    pub access: Access,
    /// How long a SQLite statement waits for another process's write lock.
    pub busy_timeout: std::time::Duration,
}

/// What `busy_timeout` is when nothing sets it.
pub const DEFAULT_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl From<Access> for ConnectOptions {
    fn from(access: Access) -> Self {
        ConnectOptions { access, busy_timeout: DEFAULT_BUSY_TIMEOUT }
    }
}

/// A database problem.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL names no supported database.
    #[error("unsupported database URL `{0}`: use sqlite://PATH, postgres://USER@HOST/DB or mysql://USER@HOST/DB")]
    UnsupportedUrl(String),
    /// Connecting failed.
    #[error("cannot connect to `{url}`: {}", describe(reason))]
    Connect {
        /// The URL, redacted.
        url: String,
        /// Why.
        reason: sqlx::Error,
    },
    /// A SQLite URL names a file that does not exist.
    #[error("no SQLite database at `{0}` (it is never created: check the path)")]
    NoSuchFile(String),
    /// The tool's tables were made by a newer release.
    #[error(
        "the tool's tables in this database are at version {found}, newer than this cascade knows ({known}): \
         upgrade cascade"
    )]
    NewerTables {
        /// The version in the database.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// An applied migration of the tool's tables is not this build's script of that version.
    #[error(
        "migration {version} of the tool's tables in this database is not this cascade's (checksum {found}, \
         expected {expected}): another build migrated it; use that build, or the release that made the database"
    )]
    EditedMigration {
        /// The migration's version.
        version: i64,
        /// The checksum recorded in the database.
        found: String,
        /// This build's script's checksum.
        expected: String,
    },
    /// A row of the tool's tables holds what this build cannot read.
    #[error("cannot read column `{column}` of the tool's tables: {problem}")]
    UnreadableColumn {
        /// The column.
        column: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An insert into a tool's table returned no row.
    #[error("the insert into `{0}` returned no row")]
    NoRowReturned(&'static str),
    /// A statement failed.
    #[error("database error: {}", describe(.0))]
    Query(sqlx::Error),
    /// A MySQL server the tool's statements do not run on.
    #[error(
        "cascade runs on MariaDB 10.6 or newer (its JSON_TABLE, SKIP LOCKED and RETURNING); this server is \
         `{0}`: MySQL itself is not supported yet"
    )]
    UnsupportedServer(String),
}

/// What the database said, without sqlx's "error returned from database:" prefix or the server's
/// source position: the message, and its SQLSTATE or SQLite code.
fn describe(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(error) => match error.code() {
            Some(code) if sqlite::is_busy(&code) => format!(
                "{} ({code}): another process holds the database's write lock; stop it, or wait longer with \
                 `[settings] busy_timeout_seconds` (default {})",
                error.message(),
                DEFAULT_BUSY_TIMEOUT.as_secs()
            ),
            Some(code) => format!("{} ({code})", error.message()),
            None => error.message().to_owned(),
        },
        other => other.to_string(),
    }
}

impl From<sqlx::Error> for DbError {
    fn from(error: sqlx::Error) -> Self {
        DbError::Query(error)
    }
}

type SqliteQuery<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;
type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;
type MysqlQuery<'q> = sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>;

fn bind_sqlite<'q>(query: SqliteQuery<'q>, param: &Param) -> SqliteQuery<'q> {
    match bound(param) {
        Bound::Value(SqlValue::Integer(value)) => query.bind(*value),
        Bound::Value(SqlValue::Text(value)) => query.bind(value.clone()),
        // Keys travel as one JSON array, read back with json_each.
        Bound::Keys(keys) => query.bind(keys.json()),
    }
}

fn bind_postgres<'q>(query: PgQuery<'q>, param: &Param) -> PgQuery<'q> {
    match bound(param) {
        Bound::Value(SqlValue::Integer(value)) => query.bind(*value),
        Bound::Value(SqlValue::Text(value)) => query.bind(value.clone()),
        Bound::Keys(Keys::Integers(values)) => query.bind(values.clone()),
        // PostgreSQL columns always have a type: untyped keys are only ever text.
        Bound::Keys(Keys::Texts(values) | Keys::Untyped(values)) => query.bind(values.clone()),
        // Each key's parts are cast to their columns' types where the keys are read.
        Bound::Keys(tuples @ Keys::Tuples { .. }) => query.bind(tuples.json()),
    }
}

fn bind_mysql<'q>(query: MysqlQuery<'q>, param: &Param) -> MysqlQuery<'q> {
    match bound(param) {
        Bound::Value(SqlValue::Integer(value)) => query.bind(*value),
        Bound::Value(SqlValue::Text(value)) => query.bind(value.clone()),
        // Keys travel as one JSON array, read back with JSON_TABLE.
        Bound::Keys(keys) => query.bind(keys.json()),
    }
}

/// Every column of every row as text.
fn texts<R: sqlx::Row>(rows: &[R]) -> Result<Vec<Vec<Option<String>>>, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    rows.iter().map(|row| (0..row.len()).map(|index| row.try_get::<Option<String>, _>(index)).collect()).collect()
}

/// Rows of a query whose columns are all read as text (or NULL).
pub type TextRows = Vec<Vec<Option<String>>>;

/// The first column of the first row, if any: the answer of a one-value query.
pub fn first_text(rows: &TextRows) -> Option<&str> {
    rows.first()?.first()?.as_deref()
}

/// The first column of every row that has a value there: the answer of a one-column query.
pub(crate) fn first_column(rows: TextRows) -> Vec<String> {
    rows.into_iter().filter_map(|row| row.into_iter().next().flatten()).collect()
}

/// The values of a `json_array_agg` result (one row, a JSON array of texts, or NULL when it saw
/// no row), in order.
pub(crate) fn json_array_texts(rows: &TextRows) -> Result<Vec<String>, DbError> {
    first_text(rows)
        .map_or(Ok(Vec::new()), serde_json::from_str)
        .map_err(|error| DbError::Query(sqlx::Error::Decode(Box::new(error))))
}

/// `$run` with `$query` (the statement with its parameters bound) run on `$executor`, whichever
/// database `$on` (a [`Pool`] or a `TransactionInner`) speaks to: the text of each arm is the same,
/// the types differ.
macro_rules! on_either {
    ($on:expr, $kind:ident, $statement:expr, |$query:ident, $executor:ident| $run:expr) => {{
        let sql = sqlx::AssertSqlSafe($statement.sql.clone());
        match $on {
            $kind::Sqlite($executor) => {
                let $query = $statement.params.iter().fold(sqlx::query(sql), bind_sqlite);
                $run
            }
            $kind::Postgres($executor) => {
                let $query = $statement.params.iter().fold(sqlx::query(sql), bind_postgres);
                $run
            }
            $kind::Mysql($executor) => {
                let $query = $statement.params.iter().fold(sqlx::query(sql), bind_mysql);
                $run
            }
        }
    }};
}

/// A write transaction on either database.
pub struct Transaction {
    driver: &'static dyn Driver,
    inner: TransactionInner,
    /// Whether the transaction took a writer lock that outlives it (`Driver::release_writer_locks`).
    holds_writer_lock: bool,
}

enum TransactionInner {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    Mysql(sqlx::Transaction<'static, sqlx::MySql>),
}

impl Transaction {
    /// Runs a statement; the number of rows it changed.
    pub async fn execute(&mut self, statement: &Statement) -> Result<u64, DbError> {
        Ok(on_either!(&mut self.inner, TransactionInner, statement, |query, tx| query
            .execute(&mut **tx)
            .await?
            .rows_affected()))
    }

    /// Runs a statement whose columns are all text (or NULL), such as `... RETURNING`.
    pub async fn fetch_texts(&mut self, statement: &Statement) -> Result<TextRows, DbError> {
        Ok(on_either!(&mut self.inner, TransactionInner, statement, |query, tx| texts(
            &query.fetch_all(&mut **tx).await?
        )?))
    }

    /// The rows of a statement, by column name.
    pub(crate) async fn fetch_records(&mut self, statement: &Statement) -> Result<Vec<Record>, DbError> {
        Ok(on_either!(&mut self.inner, TransactionInner, statement, |query, tx| record::records(
            &query.fetch_all(&mut **tx).await?
        )?))
    }

    /// The texts of a statement that aggregates them with `Backend::json_array_agg`.
    pub async fn fetch_array(&mut self, statement: &Statement) -> Result<Vec<String>, DbError> {
        json_array_texts(&self.fetch_texts(statement).await?)
    }

    /// Runs a `SELECT COUNT(*) ...` (or any statement returning one integer).
    pub async fn fetch_count(&mut self, statement: &Statement) -> Result<u64, DbError> {
        let count: i64 = on_either!(&mut self.inner, TransactionInner, statement, |query, tx| sqlx::Row::try_get(
            &query.fetch_one(&mut **tx).await?,
            0
        )?);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Runs a script of `;`-separated statements without parameters (DDL).
    pub(crate) async fn execute_script(&mut self, script: &str) -> Result<(), DbError> {
        let script = sqlx::AssertSqlSafe(script.to_owned());
        match &mut self.inner {
            TransactionInner::Sqlite(tx) => {
                sqlx::raw_sql(script).execute(&mut **tx).await?;
            }
            TransactionInner::Postgres(tx) => {
                sqlx::raw_sql(script).execute(&mut **tx).await?;
            }
            TransactionInner::Mysql(tx) => {
                sqlx::raw_sql(script).execute(&mut **tx).await?;
            }
        }
        Ok(())
    }

    /// How statements are written for the transaction's database.
    pub(crate) fn backend(&self) -> &'static dyn Backend {
        self.driver
    }

    /// Makes every other process wait, until this transaction ends, before it runs a transaction
    /// that takes `lock` too (nothing where a write transaction already excludes the others).
    pub(crate) async fn lock_writers(&mut self, lock: WriterLock) -> Result<(), DbError> {
        match self.driver.writer_lock(lock) {
            Some(statement) => {
                self.execute_script(statement).await?;
                self.holds_writer_lock = self.driver.release_writer_locks().is_some();
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Releases a writer lock that outlives the transaction, last before it ends: another
    /// process can take it between this and the end (MySQL, where nothing else serves).
    async fn release_writer_locks(&mut self) -> Result<(), DbError> {
        match self.driver.release_writer_locks().filter(|_| self.holds_writer_lock) {
            Some(statement) => self.execute_script(statement).await,
            None => Ok(()),
        }
    }

    /// Commits.
    pub async fn commit(mut self) -> Result<(), DbError> {
        self.release_writer_locks().await?;
        match self.inner {
            TransactionInner::Sqlite(tx) => tx.commit().await?,
            TransactionInner::Postgres(tx) => tx.commit().await?,
            TransactionInner::Mysql(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Rolls back.
    pub async fn rollback(mut self) -> Result<(), DbError> {
        self.release_writer_locks().await?;
        match self.inner {
            TransactionInner::Sqlite(tx) => tx.rollback().await?,
            TransactionInner::Postgres(tx) => tx.rollback().await?,
            TransactionInner::Mysql(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}

/// What a parameter binds.
enum Bound<'a> {
    Value(&'a SqlValue),
    Keys(&'a Keys),
}

/// Statements with described parameters are listings for people (`plan --sql`), never run.
fn bound(param: &Param) -> Bound<'_> {
    match param {
        Param::Value(value) => Bound::Value(value),
        Param::Keys(keys) => Bound::Keys(keys),
        Param::Described(what) => panic!("a statement with an unbound parameter ({what}) was executed"),
    }
}

impl Database {
    fn new(driver: &'static dyn Driver, pool: Pool) -> Self {
        Self { driver, pool, migrated: std::sync::Arc::default() }
    }

    /// Connects to `url` (`sqlite://PATH` or `postgres://...`). A SQLite file is never created.
    pub async fn connect(url: &str, options: impl Into<ConnectOptions>) -> Result<Self, DbError> {
        let url = DatabaseUrl::parse(url)?;
        url.kind().driver().connect(&url, options.into()).await
    }

    /// How statements are written for this database.
    pub(crate) fn backend(&self) -> &'static dyn Backend {
        self.driver
    }

    /// Which database this is.
    pub fn kind(&self) -> Kind {
        self.driver.kind()
    }

    /// The connections, for the schema readers of each backend.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// A new statement for this database.
    pub(crate) fn sql(&self) -> sql::SqlBuilder {
        sql::SqlBuilder::new(self.driver)
    }

    /// Runs a `SELECT COUNT(*) ...` (or any statement returning one integer).
    pub async fn fetch_count(&self, statement: &Statement) -> Result<u64, DbError> {
        let count: i64 = on_either!(&self.pool, Pool, statement, |query, pool| sqlx::Row::try_get(
            &query.fetch_one(pool).await?,
            0
        )?);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// The texts of a statement that aggregates them with `Backend::json_array_agg`.
    pub async fn fetch_array(&self, statement: &Statement) -> Result<Vec<String>, DbError> {
        json_array_texts(&self.fetch_texts(statement).await?)
    }

    /// Like [`Self::fetch_array`], for a statement that reads many rows: with what a writer's
    /// connection turns off for chunk-sized statements turned back on
    /// (`Tuning::wide_read_setting`).
    pub async fn fetch_wide_array(&self, statement: &Statement) -> Result<Vec<String>, DbError> {
        json_array_texts(&self.fetch_texts_with(statement, self.driver.tuning().wide_read_setting).await?)
    }

    /// Like [`Self::fetch_array`], for a statement that picks rows by a bound key array, planned
    /// as the chunks of a deletion are ([`Self::begin_key_array_write`]).
    pub async fn fetch_key_array(&self, statement: &Statement, unpartitioned: bool) -> Result<Vec<String>, DbError> {
        json_array_texts(&self.fetch_key_texts(statement, unpartitioned).await?)
    }

    /// Like [`Self::fetch_texts`], for a statement that looks rows up by a bound key array,
    /// planned as the chunks of a deletion are ([`Self::begin_key_array_write`]): a statement of
    /// many lookups (which children of a chunk have rows) is then planned once, not at every
    /// execution.
    pub async fn fetch_key_texts(&self, statement: &Statement, unpartitioned: bool) -> Result<TextRows, DbError> {
        self.fetch_texts_with(statement, self.driver.tuning().key_array_setting.filter(|_| unpartitioned)).await
    }

    /// The rows of `statement`, in a transaction of its own that runs `setting` first, if any.
    async fn fetch_texts_with(&self, statement: &Statement, setting: Option<&str>) -> Result<TextRows, DbError> {
        let Some(setting) = setting else { return self.fetch_texts(statement).await };
        let mut transaction = self.begin_write_with(Some(setting)).await?;
        let texts = transaction.fetch_texts(statement).await?;
        transaction.commit().await?;
        Ok(texts)
    }

    /// Runs a query whose columns are all text (or NULL), outside any transaction.
    pub async fn fetch_texts(&self, statement: &Statement) -> Result<TextRows, DbError> {
        Ok(on_either!(&self.pool, Pool, statement, |query, pool| texts(&query.fetch_all(pool).await?)?))
    }

    /// The rows of a statement, by column name.
    pub(crate) async fn fetch_records(&self, statement: &Statement) -> Result<Vec<Record>, DbError> {
        Ok(on_either!(&self.pool, Pool, statement, |query, pool| record::records(&query.fetch_all(pool).await?)?))
    }

    /// The rows of a query of two text columns, as pairs; a row with a NULL in either is left
    /// out.
    pub(crate) async fn fetch_pairs(&self, statement: &Statement) -> Result<Vec<(String, String)>, DbError> {
        let rows = self.fetch_texts(statement).await?.into_iter();
        Ok(rows
            .filter_map(|row| {
                let mut fields = row.into_iter();
                Some((fields.next().flatten()?, fields.next().flatten()?))
            })
            .collect())
    }

    /// Whether the table (or view) `name` exists.
    pub async fn table_exists(&self, name: &str) -> Result<bool, DbError> {
        let mut sql = self.sql();
        self.driver.table_exists(&mut sql, name);
        Ok(self.fetch_count(&sql.finish()).await? > 0)
    }

    /// Runs one statement outside any transaction (it commits by itself); the number of rows it
    /// changed.
    pub async fn execute(&self, statement: &Statement) -> Result<u64, DbError> {
        Ok(on_either!(&self.pool, Pool, statement, |query, pool| query.execute(pool).await?.rows_affected()))
    }

    /// Runs one statement in a transaction of its own; the number of rows it changed.
    pub async fn execute_alone(&self, statement: &Statement) -> Result<u64, DbError> {
        let mut transaction = self.begin_write().await?;
        let changed = transaction.execute(statement).await?;
        transaction.commit().await?;
        Ok(changed)
    }

    /// Runs one statement returning rows (`... RETURNING`) in a transaction of its own.
    pub async fn fetch_texts_alone(&self, statement: &Statement) -> Result<TextRows, DbError> {
        let mut transaction = self.begin_write().await?;
        let rows = transaction.fetch_texts(statement).await?;
        transaction.commit().await?;
        Ok(rows)
    }

    /// Runs one statement returning rows (`... RETURNING`) in a transaction of its own; its rows
    /// by column name.
    pub(crate) async fn fetch_records_alone(&self, statement: &Statement) -> Result<Vec<Record>, DbError> {
        let mut transaction = self.begin_write().await?;
        let rows = transaction.fetch_records(statement).await?;
        transaction.commit().await?;
        Ok(rows)
    }

    /// Begins a write transaction. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so what the transaction checks cannot change before it writes.
    pub async fn begin_write(&self) -> Result<Transaction, DbError> {
        let inner = match &self.pool {
            Pool::Sqlite(pool) => TransactionInner::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Pool::Postgres(pool) => TransactionInner::Postgres(pool.begin().await?),
            Pool::Mysql(pool) => TransactionInner::Mysql(pool.begin().await?),
        };
        Ok(Transaction { driver: self.driver, inner, holds_writer_lock: false })
    }

    /// [`Self::begin_write`] for a transaction whose statements all look rows up by key arrays
    /// (a deletion's chunk), with `Tuning::key_array_setting` when `unpartitioned`: no table it
    /// touches is partitioned (a plan made for any key array cannot leave partitions out).
    pub async fn begin_key_array_write(&self, unpartitioned: bool) -> Result<Transaction, DbError> {
        self.begin_write_with(self.driver.tuning().key_array_setting.filter(|_| unpartitioned)).await
    }

    /// [`Self::begin_write`], then the `setting` statement first in the transaction.
    async fn begin_write_with(&self, setting: Option<&str>) -> Result<Transaction, DbError> {
        let mut transaction = self.begin_write().await?;
        if let Some(setting) = setting {
            transaction.execute(&Statement { sql: setting.to_owned(), params: Vec::new() }).await?;
        }
        Ok(transaction)
    }

    /// What kind of failure `error` is, by this database's rules.
    pub fn classify(&self, error: &DbError) -> Failure {
        match error {
            DbError::Query(error) | DbError::Connect { reason: error, .. } => self.driver.classify(error),
            DbError::UnsupportedUrl(_)
            | DbError::NoSuchFile(_)
            | DbError::NewerTables { .. }
            | DbError::EditedMigration { .. }
            | DbError::UnreadableColumn { .. }
            | DbError::NoRowReturned(_)
            | DbError::UnsupportedServer(_) => Failure::Permanent,
        }
    }

    /// Whether `error` is a statement that compared or assigned values of types this database
    /// cannot match (PostgreSQL's `operator does not exist`, `datatype mismatch`).
    pub fn is_type_mismatch(&self, error: &DbError) -> bool {
        matches!(error, DbError::Query(error) if self.driver.type_mismatch(error))
    }

    /// When a unique constraint or index refused the statement of `error`: the database's name
    /// for it (`` `name` `` on PostgreSQL, `on t.a, t.b` on SQLite, which names the columns only).
    pub fn unique_violation(&self, error: &DbError) -> Option<String> {
        let DbError::Query(error) = error else { return None };
        self.driver.unique_violation(error)
    }

    /// When a trigger raised `error`: the trigger function's name, where the database says it.
    pub fn raised_by_trigger(&self, error: &DbError) -> Option<Option<String>> {
        let DbError::Query(error) = error else { return None };
        self.driver.raised_by_trigger(error)
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
            Pool::Mysql(pool) => pool.close().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Access, Database};
    use crate::db::sql::Statement;

    #[tokio::test]
    async fn a_database_error_says_what_the_database_said_once() {
        let database = Database::connect("sqlite::memory:", Access::ReadWrite).await.unwrap();
        let missing = Statement { sql: "SELECT * FROM missing".to_owned(), params: Vec::new() };
        let error = database.fetch_texts(&missing).await.unwrap_err().to_string();
        assert_eq!(error, "database error: no such table: missing (1)");
    }
}
