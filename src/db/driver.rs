//! How the tool connects to a database and reads its errors: the `Driver` each backend also is,
//! and what a database error means for what to do next.

use std::future::Future;
use std::pin::Pin;

use super::sql::Backend;
use super::url::DatabaseUrl;
use super::{ConnectOptions, Database, DbError};

/// A boxed future, so that the trait stays usable as `dyn Backend`.
pub(super) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What kind of failure a database error is, for what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A foreign key refused the statement: a row still references one being deleted.
    ForeignKeyViolation,
    /// Retrying can succeed: a lost connection, a deadlock, a lock or statement timeout, a
    /// serialization failure, a busy database.
    Transient,
    /// Retrying the same thing fails the same way: a constraint, a missing table or column, a
    /// type error.
    Permanent,
}

/// How the tool connects to a database and reads its errors: `db`'s own side of a backend.
pub(super) trait Driver: Backend {
    /// Opens a pool of connections to `url`.
    fn connect<'a>(&'a self, url: &'a DatabaseUrl, options: ConnectOptions)
    -> BoxFuture<'a, Result<Database, DbError>>;

    /// The scripts that create and upgrade the tool's tables, in order; script N brings the
    /// tables to version N.
    fn migrations(&self) -> &'static [&'static str];

    /// The first version of the tool's tables that records each migration's checksum.
    fn checksummed_from(&self) -> i64;

    /// A statement run first in a write transaction so that two processes never run `lock`'s
    /// transaction at once (none where a write transaction already excludes the others).
    fn writer_lock(&self, lock: WriterLock) -> Option<&'static str>;

    /// A statement run just before a transaction that took a `writer_lock` ends, where that
    /// lock outlives transactions (MySQL's named locks).
    fn release_writer_locks(&self) -> Option<&'static str> {
        None
    }

    /// A script run before pending migrations that makes every other writer of `tables` (those
    /// of them that exist) wait until the migration commits, so that no row is written into a
    /// table while a migration moves its rows (none where a write transaction already excludes
    /// every other writer).
    fn lock_for_migration(&self, tables: &[&str]) -> Option<String>;

    /// What kind of failure `error` is.
    fn classify(&self, error: &sqlx::Error) -> Failure;

    /// Whether the statement compared or assigned values of types the database cannot match.
    fn type_mismatch(&self, error: &sqlx::Error) -> bool;

    /// When a unique constraint or index refused the statement: the database's name for it.
    fn unique_violation(&self, error: &sqlx::Error) -> Option<String>;

    /// When a trigger raised the error: the trigger function's name where the database says it
    /// (PostgreSQL names the function, SQLite nothing).
    fn raised_by_trigger(&self, error: &sqlx::Error) -> Option<Option<String>>;
}

/// Failures every backend classifies alike: the connection, the pool, the network.
pub(super) fn connection_failure(error: &sqlx::Error) -> Option<Failure> {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => Some(Failure::Transient),
        sqlx::Error::Database(error) if error.is_foreign_key_violation() => Some(Failure::ForeignKeyViolation),
        sqlx::Error::Database(_) => None,
        _ => Some(Failure::Permanent),
    }
}

/// How long connecting to a server may take before it is given up.
pub(super) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One connection of a server's own, made beside its pool: a refused or failed connection is
/// reported as what it is at once, where the pool would retry it until its timeout and say only
/// that it timed out.
pub(super) async fn connect_within_timeout<C>(
    connecting: impl Future<Output = Result<C, sqlx::Error>>,
) -> Result<C, sqlx::Error> {
    tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)
        .and_then(|connected| connected)
}

/// Transactions that two processes must never run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriterLock {
    /// Creating or upgrading the tool's tables.
    Migration,
    /// Recording the start of a run that must run alone (a clean-up).
    RunStart,
}
