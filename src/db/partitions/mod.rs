//! Range partitions as each database has them: PostgreSQL's declarative partitions
//! (`pg_inherits`, `DETACH PARTITION`, `CREATE TABLE ... PARTITION OF`) and MySQL's `RANGE` and
//! `RANGE COLUMNS` partitions (`information_schema.partitions`, `EXCHANGE PARTITION`,
//! `REORGANIZE PARTITION`). Listing a table's partitions, comparing their bounds with a time,
//! detaching, archiving and dropping one, and the statements that create the next. SQLite has
//! none.

mod mysql;
mod postgres;

use std::time::SystemTime;

use serde::Serialize;

use super::sql::{SqlBuilder, quote_identifier};
use super::{Database, DbError, Kind};

/// One partition of a table partitioned by range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Partition {
    /// Its schema; on MySQL, where a partition is a part of its table, the table.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its bound as the catalog shows it: `FOR VALUES FROM (...) TO (...)` or `DEFAULT`
    /// (PostgreSQL), `VALUES LESS THAN (...)` (MySQL).
    pub bound: String,
    /// The lower bound of a range partition, as the literal's text (on MySQL, the bound of the
    /// partition before); `None` for `MINVALUE` (and MySQL's first partition), and for a
    /// partition that is not a one-column range.
    pub from: Option<String>,
    /// The upper bound (exclusive), likewise; `None` for `MAXVALUE`.
    pub to: Option<String>,
    /// The default partition: rows no other partition's bound takes (PostgreSQL only).
    pub default: bool,
    /// The catalog's row estimate; `None` while the partition was never analyzed.
    pub rows_estimate: Option<u64>,
    /// Table, indexes and TOAST, in bytes.
    pub bytes: u64,
    /// A `DETACH PARTITION ... CONCURRENTLY` that was interrupted: it must be finalized.
    pub detach_pending: bool,
}

impl Partition {
    /// `schema.name` (MySQL: `table.partition`).
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// How a partition was detached from its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detach {
    /// `DETACH ... CONCURRENTLY`: writers of the parent go on meanwhile.
    Concurrently,
    /// A plain `DETACH`: PostgreSQL before 14, or a table with a default partition, where
    /// `CONCURRENTLY` is not allowed.
    Plain,
    /// `DETACH ... FINALIZE` of an interrupted concurrent detach.
    Finalized,
    /// By an earlier prune that was interrupted before the drop.
    Earlier,
    /// MySQL: its rows swapped into an empty table of their own (`EXCHANGE PARTITION`), and the
    /// emptied partition dropped, both under a brief write lock of the table.
    Exchanged,
}

/// A table partitioned by range, as the catalog names it.
#[derive(Debug, Clone, Copy)]
pub struct PartitionedTable<'a> {
    /// Its schema (PostgreSQL; `public` when `None`). MySQL's tables are the connection's
    /// database's.
    pub schema: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
}

impl PartitionedTable<'_> {
    /// The table as a statement names it.
    fn quoted(&self, kind: Kind) -> String {
        match kind {
            Kind::Postgres => {
                format!("{}.{}", quote_identifier(self.schema.unwrap_or("public")), quote_identifier(self.name))
            }
            Kind::Sqlite | Kind::Mysql => quote_identifier(self.name),
        }
    }
}

/// The partition key, and how its values read as times.
#[derive(Debug, Clone, Copy)]
pub struct RangeKey<'a> {
    /// The column's type as the catalog spells it (`timestamp with time zone`, `datetime`).
    pub column_type: &'a str,
    /// MySQL: the function of the column the table is partitioned by (`to_days`,
    /// `unix_timestamp`, `year`), whose values the bounds are; `None` where the bounds are the
    /// column's own values.
    pub function: Option<&'a str>,
}

/// The functions of a time column MySQL can partition by range on that keep the order of times,
/// so a bound at or before a time's value holds only older rows: the only ones retention
/// accepts (`MONTH()`, say, puts every January in one partition).
pub const ORDERED_PARTITION_FUNCTIONS: [&str; 3] = ["to_days", "unix_timestamp", "year"];

/// Which side of a time a bound is looked for on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// At or before it: a partition whose upper bound is there holds only older rows.
    AtOrBefore,
    /// After it: a partition whose lower bound is there starts later.
    After,
}

/// Where a partition being pruned goes before it is dropped: the table its rows are in once
/// detached, and what tells that table from a later one of the same name (PostgreSQL: its oid;
/// MySQL: its name, made once per run).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Detaching {
    /// The table, quoted.
    pub table: String,
    /// Its identity.
    #[serde(rename = "oid")]
    pub identity: String,
}

/// Range partitions on a database that has them ([`Database::partitioning`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    /// PostgreSQL's declarative partitions.
    Postgres,
    /// MySQL's `RANGE` and `RANGE COLUMNS` partitions.
    Mysql,
}

impl Database {
    /// How this database partitions tables by range; `None` on SQLite.
    pub fn partitioning(&self) -> Option<Partitioning> {
        match self.kind() {
            Kind::Postgres => Some(Partitioning::Postgres),
            Kind::Mysql => Some(Partitioning::Mysql),
            Kind::Sqlite => None,
        }
    }
}

impl Partitioning {
    fn kind(self) -> Kind {
        match self {
            Partitioning::Postgres => Kind::Postgres,
            Partitioning::Mysql => Kind::Mysql,
        }
    }

    /// Whether a table keeps at least one partition: MySQL refuses to drop the last one (the
    /// newest then stays, with its rows, until a newer one exists).
    pub fn keeps_a_partition(self) -> bool {
        self == Partitioning::Mysql
    }

    /// The table as a statement names it.
    fn quoted(self, table: PartitionedTable<'_>) -> String {
        table.quoted(self.kind())
    }

    /// The partitions of `table`, range partitions by bound, a default partition last.
    pub async fn list(self, database: &Database, table: PartitionedTable<'_>) -> Result<Vec<Partition>, DbError> {
        match self {
            Partitioning::Postgres => postgres::list(database, table).await,
            Partitioning::Mysql => mysql::list(database, table).await,
        }
    }

    /// For each bound (the text of a value of the partition key; empty for an unbounded side,
    /// which is on neither side), whether it lies on `side` of `time`, compared by the database
    /// as values of the key: one statement for all of them.
    pub async fn bounds_against(
        self,
        database: &Database,
        key: RangeKey<'_>,
        bounds: Vec<String>,
        side: Side,
        time: SystemTime,
    ) -> Result<Vec<bool>, DbError> {
        match self {
            Partitioning::Postgres => postgres::bounds_against(database, key, bounds, side, time).await,
            Partitioning::Mysql => mysql::bounds_against(database, key, bounds, side, time).await,
        }
    }

    /// The rows of `partition` alone, as a `FROM` item named `alias`.
    pub fn rows_of(self, table: PartitionedTable<'_>, partition: &Partition, alias: &str) -> String {
        match self {
            Partitioning::Postgres => {
                format!("ONLY {}.{} {alias}", quote_identifier(&partition.schema), quote_identifier(&partition.name))
            }
            Partitioning::Mysql => {
                format!("{} PARTITION ({}) {alias}", self.quoted(table), quote_identifier(&partition.name))
            }
        }
    }

    /// `time` as a value of the partition column (not of the key's function), for a
    /// comparison with the column.
    pub(crate) fn time_as_column(self, sql: &mut SqlBuilder, column_type: &str, time: SystemTime) {
        match self {
            Partitioning::Postgres => postgres::time_as_column(sql, column_type, time),
            Partitioning::Mysql => mysql::time_as_datetime(sql, time),
        }
    }

    /// Where `partition` of `table` goes while a prune's run `run` drops it.
    pub async fn detaching(self, database: &Database, partition: &Partition, run: i64) -> Result<Detaching, DbError> {
        match self {
            Partitioning::Postgres => postgres::detaching(database, partition).await,
            Partitioning::Mysql => Ok(mysql::detaching(run)),
        }
    }

    /// Whether a prune detaching into a table of its own consumes the rows it archives (MySQL):
    /// each batch must then be synced before the next.
    pub fn archive_consumes_rows(self) -> bool {
        self == Partitioning::Mysql
    }

    /// Whether `detaching`'s table is still there, detached (an interrupted prune's).
    pub async fn still_detached(self, database: &Database, detaching: &Detaching) -> Result<bool, DbError> {
        match self {
            Partitioning::Postgres => postgres::still_detached(database, detaching).await,
            Partitioning::Mysql => mysql::still_detached(database, detaching).await,
        }
    }

    /// Takes `partition` out of `table`, its rows into `detaching`'s table; how.
    /// `has_default` tells whether the table has a default partition.
    pub async fn detach(
        self,
        database: &Database,
        table: PartitionedTable<'_>,
        partition: &Partition,
        detaching: &Detaching,
        has_default: bool,
    ) -> Result<Detach, DbError> {
        match self {
            Partitioning::Postgres => postgres::detach(database, table, partition, has_default).await,
            Partitioning::Mysql => mysql::detach(database, table, partition, detaching).await,
        }
    }

    /// Hands every row of the detached table `detached` (quoted; `columns` are its columns) to
    /// `write` as JSON objects, a batch at a time; the number of rows. A batch is durable once
    /// `write` returns: on MySQL the rows handed over are deleted from the table as they go.
    pub async fn archive<E: From<DbError>>(
        self,
        database: &Database,
        detached: &str,
        columns: &[String],
        write: impl FnMut(&[String]) -> Result<(), E>,
    ) -> Result<u64, E> {
        match self {
            Partitioning::Postgres => postgres::archive(database, detached, write).await,
            Partitioning::Mysql => mysql::archive(database, detached, columns, write).await,
        }
    }

    /// The width of the range from `from` to `to` (bounds of the key), as the step to the next
    /// partitions: `1 mon`, `7 days` (PostgreSQL); `1 MONTH`, `604800 SECOND` (MySQL).
    pub async fn step(self, database: &Database, key: RangeKey<'_>, from: &str, to: &str) -> Result<String, DbError> {
        match self {
            Partitioning::Postgres => postgres::step(database, key, from, to).await,
            Partitioning::Mysql => mysql::step(database, key, from, to).await,
        }
    }

    /// The bound one `step` after `bound`, and the date of `bound` as `YYYYMMDD`.
    pub async fn advance(
        self,
        database: &Database,
        key: RangeKey<'_>,
        bound: &str,
        step: &str,
    ) -> Result<(String, String), DbError> {
        match self {
            Partitioning::Postgres => postgres::advance(database, key, bound, step).await,
            Partitioning::Mysql => mysql::advance(database, key, bound, step).await,
        }
    }

    /// Creates the partition of `table` from `from` to `to` named after `date` (`YYYYMMDD`),
    /// beside the `existing` ones; its qualified name.
    pub async fn create(
        self,
        database: &Database,
        table: PartitionedTable<'_>,
        existing: &[Partition],
        date: &str,
        (from, to): (&str, &str),
    ) -> Result<String, DbError> {
        match self {
            Partitioning::Postgres => postgres::create(database, table, date, (from, to)).await,
            Partitioning::Mysql => mysql::create(database, table, existing, date, to).await,
        }
    }
}
