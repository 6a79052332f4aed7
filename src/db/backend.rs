//! One trait for everything that differs between SQLite and PostgreSQL in statements and
//! connections; `sqlite.rs` and `postgres.rs` implement it. How each dialect's SQL text reads
//! (names, the parser's dialect) is `Kind`'s, in `dialect.rs`. Code above `db` asks the backend
//! or the kind instead of matching on a dialect.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use super::sql::{KeyType, Param, SqlBuilder};
use super::url::DatabaseUrl;
use super::{ConnectOptions, Database, DbError};

/// Which database: the one name for a dialect across the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// SQLite, the embedded default.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Kind {
    /// The backend of this kind of database.
    pub(crate) fn backend(self) -> &'static dyn Backend {
        self.driver()
    }

    /// How the tool connects to this kind of database and reads its errors.
    pub(super) fn driver(self) -> &'static dyn Driver {
        match self {
            Kind::Sqlite => &super::sqlite::Sqlite,
            Kind::Postgres => &super::postgres::Postgres,
        }
    }
}

/// Only `db` implements [`Backend`]: every dialect difference lives there.
pub(super) mod sealed {
    pub(crate) trait Sealed {}
}

/// A boxed future, so that the trait stays usable as `dyn Backend`.
pub(super) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a set-based statement addresses the rows it picks in a `LIMIT`ed sub-select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowSelector {
    /// What the sub-select returns (`rowid`, `ctid`, `tableoid, ctid`).
    pub select: &'static str,
    /// What the outer statement compares with it (`rowid`, `ctid`, `(tableoid, ctid)`).
    pub matched: &'static str,
    /// Text between `matched` and the sub-select, and after the sub-select.
    pub open: &'static str,
    /// Closes what `open` opened.
    pub close: &'static str,
}

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

/// How statements are written for SQLite or PostgreSQL: placeholders, key lists, JSON, timestamps,
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

    /// How a set-based statement addresses rows; `partitioned` for a partitioned table.
    fn row_selector(&self, partitioned: bool) -> RowSelector;

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

    /// `CREATE UNIQUE INDEX "name" ON table (columns);` for a `table` already quoted, built the
    /// way that keeps the table writable while the index is built where the database can
    /// (PostgreSQL: `CONCURRENTLY`, which a `partitioned` table does not allow).
    fn create_unique_index(&self, sql: &mut SqlBuilder, name: &str, table: &str, columns: &[String], partitioned: bool);

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
    /// Whether a table can be partitioned by range (PostgreSQL's declarative partitioning),
    /// which partition retention needs.
    pub range_partitions: bool,
    /// The statement that defers the foreign-key checks of the open transaction to its commit,
    /// where the database has one (SQLite); without it (PostgreSQL, whose keys defer only when
    /// declared `DEFERRABLE`), rows that reference each other in a loop go in one statement.
    pub defer_foreign_keys: Option<&'static str>,
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

/// How the tool connects to a database and reads its errors: `db`'s own side of a backend.
pub(super) trait Driver: Backend {
    /// Opens a pool of connections to `url`.
    fn connect<'a>(&'a self, url: &'a DatabaseUrl, options: ConnectOptions)
    -> BoxFuture<'a, Result<Database, DbError>>;

    /// The scripts that create and upgrade the tool's tables, in order; script N brings the
    /// tables to version N.
    fn migrations(&self) -> &'static [&'static str];

    /// A statement run first in a write transaction so that two processes never run `lock`'s
    /// transaction at once (none where a write transaction already excludes the others).
    fn writer_lock(&self, lock: WriterLock) -> Option<&'static str>;

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

/// Transactions that two processes must never run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriterLock {
    /// Creating or upgrading the tool's tables.
    Migration,
    /// Recording the start of a run that must run alone (a clean-up).
    RunStart,
}
