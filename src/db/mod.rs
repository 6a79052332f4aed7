//! Database connections: SQLite (the embedded default) or PostgreSQL, chosen by the URL.

pub mod options;
pub mod sql;
pub mod tables;

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use sql::{Dialect, Param, SqlValue, Statement};

/// The database URL used when neither `--database-url` nor `CASCADE_DATABASE_URL` is given.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://cascade.db";

#[derive(Debug, Clone)]
pub enum Database {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Whether a connection may change the database. Read-only connections never create a missing
/// SQLite file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL `{0}`: use sqlite://PATH or postgres://USER@HOST/DB")]
    UnsupportedUrl(String),
    #[error("cannot connect to `{url}`: {reason}")]
    Connect { url: String, reason: sqlx::Error },
    #[error("no SQLite database at `{0}` (it is never created: check the path)")]
    NoSuchFile(String),
    #[error("database error: {0}")]
    Query(sqlx::Error),
}

impl From<sqlx::Error> for DbError {
    fn from(error: sqlx::Error) -> Self {
        DbError::Query(error)
    }
}

impl DbError {
    /// A foreign key refused the statement (a child row still references a deleted parent).
    pub fn is_foreign_key_violation(&self) -> bool {
        matches!(self, DbError::Query(sqlx::Error::Database(error)) if error.is_foreign_key_violation())
    }
}

type SqliteQuery<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;
type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn bind_sqlite<'q>(query: SqliteQuery<'q>, param: &Param) -> SqliteQuery<'q> {
    match value_of(param) {
        SqlValue::Integer(value) => query.bind(*value),
        SqlValue::Text(value) => query.bind(value.clone()),
        // Lists travel as one JSON array, read back with json_each.
        SqlValue::Integers(values) => query.bind(serde_json::to_string(values).expect("integers serialise")),
        SqlValue::Texts(values) => query.bind(serde_json::to_string(values).expect("strings serialise")),
    }
}

fn bind_postgres<'q>(query: PgQuery<'q>, param: &Param) -> PgQuery<'q> {
    match value_of(param) {
        SqlValue::Integer(value) => query.bind(*value),
        SqlValue::Text(value) => query.bind(value.clone()),
        SqlValue::Integers(values) => query.bind(values.clone()),
        SqlValue::Texts(values) => query.bind(values.clone()),
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

/// A write transaction on either database.
pub enum Transaction {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Transaction {
    /// Runs a statement; the number of rows it changed.
    pub async fn execute(&mut self, statement: &Statement) -> Result<u64, DbError> {
        let sql = sqlx::AssertSqlSafe(statement.sql.clone());
        Ok(match self {
            Transaction::Sqlite(tx) => {
                statement.params.iter().fold(sqlx::query(sql), bind_sqlite).execute(&mut **tx).await?.rows_affected()
            }
            Transaction::Postgres(tx) => {
                statement.params.iter().fold(sqlx::query(sql), bind_postgres).execute(&mut **tx).await?.rows_affected()
            }
        })
    }

    /// Runs a statement whose columns are all text (or NULL), such as `... RETURNING`.
    pub async fn fetch_texts(&mut self, statement: &Statement) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let sql = sqlx::AssertSqlSafe(statement.sql.clone());
        Ok(match self {
            Transaction::Sqlite(tx) => {
                texts(&statement.params.iter().fold(sqlx::query(sql), bind_sqlite).fetch_all(&mut **tx).await?)?
            }
            Transaction::Postgres(tx) => {
                texts(&statement.params.iter().fold(sqlx::query(sql), bind_postgres).fetch_all(&mut **tx).await?)?
            }
        })
    }

    pub async fn commit(self) -> Result<(), DbError> {
        match self {
            Transaction::Sqlite(tx) => tx.commit().await?,
            Transaction::Postgres(tx) => tx.commit().await?,
        }
        Ok(())
    }

    pub async fn rollback(self) -> Result<(), DbError> {
        match self {
            Transaction::Sqlite(tx) => tx.rollback().await?,
            Transaction::Postgres(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}

/// Statements with described parameters are listings for people (`plan --sql`), never run.
fn value_of(param: &Param) -> &SqlValue {
    match param {
        Param::Value(value) => value,
        Param::Described(what) => panic!("a statement with an unbound parameter ({what}) was executed"),
    }
}

impl Database {
    pub async fn connect(url: &str, access: Access) -> Result<Self, DbError> {
        let connect_error = |reason| DbError::Connect { url: redact(url), reason };
        if url.starts_with("sqlite:") {
            // A mistyped path must not become a new, empty database.
            let path = url.trim_start_matches("sqlite:").trim_start_matches("//");
            let path = path.split('?').next().unwrap_or(path);
            if !path.is_empty() && path != ":memory:" && !std::path::Path::new(path).exists() {
                return Err(DbError::NoSuchFile(path.to_owned()));
            }
            let options = SqliteConnectOptions::from_str(url)
                .map_err(connect_error)?
                .read_only(access == Access::ReadOnly)
                .create_if_missing(false)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10));
            let pool =
                SqlitePoolOptions::new().max_connections(4).connect_with(options).await.map_err(connect_error)?;
            Ok(Database::Sqlite(pool))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let pool = PgPoolOptions::new()
                .max_connections(4)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await
                .map_err(connect_error)?;
            Ok(Database::Postgres(pool))
        } else {
            Err(DbError::UnsupportedUrl(redact(url)))
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Database::Sqlite(_) => Dialect::Sqlite,
            Database::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a `SELECT COUNT(*) ...` (or any statement returning one integer).
    pub async fn fetch_count(&self, statement: &Statement) -> Result<u64, DbError> {
        let sql = sqlx::AssertSqlSafe(statement.sql.clone());
        let count: i64 = match self {
            Database::Sqlite(pool) => {
                let query = statement.params.iter().fold(sqlx::query(sql), bind_sqlite);
                sqlx::Row::try_get(&query.fetch_one(pool).await?, 0)?
            }
            Database::Postgres(pool) => {
                let query = statement.params.iter().fold(sqlx::query(sql), bind_postgres);
                sqlx::Row::try_get(&query.fetch_one(pool).await?, 0)?
            }
        };
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Runs a query whose columns are all text (or NULL), outside any transaction.
    pub async fn fetch_texts(&self, statement: &Statement) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let sql = sqlx::AssertSqlSafe(statement.sql.clone());
        Ok(match self {
            Database::Sqlite(pool) => {
                texts(&statement.params.iter().fold(sqlx::query(sql), bind_sqlite).fetch_all(pool).await?)?
            }
            Database::Postgres(pool) => {
                texts(&statement.params.iter().fold(sqlx::query(sql), bind_postgres).fetch_all(pool).await?)?
            }
        })
    }

    /// Begins a write transaction. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so what the transaction checks cannot change before it writes.
    pub async fn begin_write(&self) -> Result<Transaction, DbError> {
        Ok(match self {
            Database::Sqlite(pool) => Transaction::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Database::Postgres(pool) => Transaction::Postgres(pool.begin().await?),
        })
    }

    pub async fn close(&self) {
        match self {
            Database::Sqlite(pool) => pool.close().await,
            Database::Postgres(pool) => pool.close().await,
        }
    }
}

/// The URL without its password, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// `"name"`, with embedded quotes doubled: valid on SQLite and PostgreSQL alike.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A possibly `schema.`-qualified name from the config, each part quoted.
pub fn quote_qualified(name: &str) -> String {
    name.split('.').map(quote_identifier).collect::<Vec<_>>().join(".")
}

#[cfg(test)]
mod tests {
    use super::{quote_qualified, redact};

    #[test]
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_qualified("public.group"), r#""public"."group""#);
        assert_eq!(quote_qualified(r#"od"d"#), r#""od""d""#);
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://app:s3cret@db:5432/app"), "postgres://app:***@db:5432/app");
        assert_eq!(redact("postgres://app@db/app"), "postgres://app@db/app");
        assert_eq!(redact("sqlite://cascade.db"), "sqlite://cascade.db");
    }
}
