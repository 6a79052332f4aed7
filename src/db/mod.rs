//! Database connections: SQLite (the embedded default) or PostgreSQL, chosen by the URL.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

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
    #[error("cannot connect to `{url}`: {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

impl Database {
    pub async fn connect(url: &str, access: Access) -> Result<Self, DbError> {
        let connect_error = |source| DbError::Connect {
            url: redact(url),
            source,
        };
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(connect_error)?
                .read_only(access == Access::ReadOnly)
                .create_if_missing(access == Access::ReadWrite)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10));
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .connect_with(options)
                .await
                .map_err(connect_error)?;
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
    name.split('.')
        .map(quote_identifier)
        .collect::<Vec<_>>()
        .join(".")
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
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/app"),
            "postgres://app:***@db:5432/app"
        );
        assert_eq!(redact("postgres://app@db/app"), "postgres://app@db/app");
        assert_eq!(redact("sqlite://cascade.db"), "sqlite://cascade.db");
    }
}
