//! Partition retention: the partitions of a table partitioned by range on a time (PostgreSQL's
//! declarative partitions, MySQL's `RANGE` partitions), which of them a model's `retention`
//! would drop, dropping them (archived, detached, audited, resumable) and creating the next ones
//! ahead of time. How each database does each step is `db::partitions`.

mod create;
mod prune;
mod schedule;

use std::time::{Duration, SystemTime};

use serde::Serialize;

pub use crate::db::partitions::Detach;
pub use create::{Created, create_ahead};
pub use prune::{Dropped, PruneOptions, prune};
pub use schedule::{RetentionReport, run_retention};

use crate::config::{Config, Model, OnDelete};
use crate::db::partitions::{PartitionedTable, Partitioning, RangeKey, Side};
use crate::db::{Database, DbError};
use crate::engine::ArchiveError;
use crate::schema::{Partition, Schema, Table};

/// Why partitions cannot be listed, pruned or created.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    /// `create` would make more partitions than it ever should in one go.
    #[error(
        "creating the partitions of `{model}` up to now would take more than {created}: the last partition ends far \
         in the past, or its step is tiny; create the missing ones by hand"
    )]
    TooFarBehind {
        /// The model.
        model: String,
        /// How many it created before stopping.
        created: usize,
    },
    /// `prune` was given a `now` later than the clock: it would drop partitions still inside
    /// `retention.keep`.
    #[error(
        "--now {} is later than the clock: `partitions prune --confirm` never drops what is still inside \
         retention.keep", humantime::format_rfc3339_seconds(*.0)
    )]
    FutureNow(std::time::SystemTime),
    /// Now minus `retention.keep` is before 1970.
    #[error("now minus retention.keep ({keep}) of model `{model}` is before 1970: no cut-off to prune at")]
    CutoffBeforeEpoch {
        /// The model.
        model: String,
        /// Its `keep`, such as `90d`.
        keep: String,
    },
    /// The database has no range partitions.
    #[error(
        "partitions need a PostgreSQL or MySQL table partitioned by range; this database is SQLite (use `cascade \
         delete`)"
    )]
    NoRangePartitions,
    /// No model has that name.
    #[error("no model `{0}` in the config")]
    UnknownModel(String),
    /// The model has no `retention`.
    #[error("model `{0}` has no `retention = {{ keep = \"...\", column = \"...\" }}`")]
    NoRetention(String),
    /// No model has `retention`.
    #[error("no model has `retention`: nothing to do")]
    NoPolicies,
    /// The model's table is not in the database.
    #[error("table `{table}` of model `{model}` is not in the database")]
    MissingTable {
        /// The model.
        model: String,
        /// The table as the config names it.
        table: String,
    },
    /// The table is not partitioned by range on the retention column.
    #[error(
        "table `{table}` is not partitioned by range on `{column}` alone, a date or time column (or on TO_DAYS, \
         UNIX_TIMESTAMP or YEAR of it, on MySQL), so `retention` cannot drop partitions"
    )]
    NotRangePartitioned {
        /// The table.
        table: String,
        /// The retention column.
        column: String,
    },
    /// Rows of another table reference rows of a partition through a relation the prune may not
    /// change: dropping it would orphan them.
    #[error(
        "partition `{partition}` is referenced by {rows} row(s) of `{table}` through ({columns}); declare that \
         relation with `on_delete = \"nullify\"` under model `{model}`, or delete those rows first (`cascade \
         delete`): the partition was left attached"
    )]
    Referenced {
        /// The model whose partition it is.
        model: String,
        /// The partition.
        partition: String,
        /// The referencing table.
        table: String,
        /// The referencing columns.
        columns: String,
        /// How many rows reference the partition.
        rows: u64,
    },
    /// A database error.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The archive could not be written.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
}

/// A model's retention policy, resolved against the live schema.
#[derive(Debug, Clone)]
pub struct Policy<'a> {
    /// How the database partitions.
    pub partitioning: Partitioning,
    /// The model.
    pub model: &'a Model,
    /// Its partitioned table.
    pub table: &'a Table,
    /// The partition key column, as the catalog spells it.
    pub column: String,
    /// The column's type (`timestamp with time zone`, `date`, ...).
    pub column_type: String,
    /// MySQL: the function of the column the table is partitioned by (`to_days`), if any.
    pub function: Option<String>,
    /// How long rows are kept.
    pub keep: Duration,
}

impl Policy<'_> {
    /// The partitioned table, as the database's partitions name it.
    pub fn partitioned(&self) -> PartitionedTable<'_> {
        PartitionedTable { schema: self.table.schema.as_deref(), name: &self.table.name }
    }

    /// How the partition key's values read as times.
    pub fn key(&self) -> RangeKey<'_> {
        RangeKey { column_type: &self.column_type, function: self.function.as_deref() }
    }

    /// The partitions of the table.
    pub async fn partitions(&self, database: &Database) -> Result<Vec<Partition>, DbError> {
        self.partitioning.list(database, self.partitioned()).await
    }

    /// Rows entered before this time are older than the policy; an error when it falls before
    /// 1970 (an early `--now`), since clamping it would drop rows the policy keeps.
    pub fn cutoff(&self, now: SystemTime) -> Result<SystemTime, PartitionError> {
        now.checked_sub(self.keep).filter(|cutoff| *cutoff >= SystemTime::UNIX_EPOCH).ok_or_else(|| {
            PartitionError::CutoffBeforeEpoch {
                model: self.model.name.value.clone(),
                keep: crate::config::describe_keep(self.keep),
            }
        })
    }
}

/// The policies of `model`, or of every model with `retention` (`None`), in the order they are
/// pruned: a model whose parent has retention too before that parent, so the parent's rows are
/// no longer referenced when its partitions go.
pub fn policies<'a>(
    config: &'a Config,
    schema: &'a Schema,
    database: &Database,
    model: Option<&str>,
) -> Result<Vec<Policy<'a>>, PartitionError> {
    let Some(partitioning) = database.partitioning() else {
        return Err(PartitionError::NoRangePartitions);
    };
    let mut models: Vec<&Model> = match model {
        Some(name) => {
            let model = config.model(name).ok_or_else(|| PartitionError::UnknownModel(name.to_owned()))?;
            if model.retention.is_none() {
                return Err(PartitionError::NoRetention(name.to_owned()));
            }
            vec![model]
        }
        None => config.models.values().filter(|model| model.retention.is_some()).collect(),
    };
    if models.is_empty() {
        return Err(PartitionError::NoPolicies);
    }
    let is_child_of_a_policy = |model: &Model| {
        config.models.values().any(|parent| {
            parent.retention.is_some()
                && parent.children.iter().any(|r| r.model.value == model.name.value && r.action() == OnDelete::Delete)
        })
    };
    models.sort_by_key(|model| !is_child_of_a_policy(model));
    models.into_iter().map(|model| policy(partitioning, model, schema)).collect()
}

fn policy<'a>(partitioning: Partitioning, model: &'a Model, schema: &'a Schema) -> Result<Policy<'a>, PartitionError> {
    let retention = model.retention.as_ref().ok_or_else(|| PartitionError::NoRetention(model.name.value.clone()))?;
    let table = schema.table(&model.table.value).ok_or_else(|| PartitionError::MissingTable {
        model: model.name.value.clone(),
        table: model.table.value.clone(),
    })?;
    let not_range = || PartitionError::NotRangePartitioned {
        table: table.qualified_name(),
        column: retention.column.value.clone(),
    };
    let key = table
        .partition_key
        .as_ref()
        .filter(|_| table.is_range_partitioned_by_time(&retention.column.value, schema.kind));
    let key = key.ok_or_else(not_range)?;
    let column = table.column(&retention.column.value).ok_or_else(not_range)?;
    Ok(Policy {
        partitioning,
        model,
        table,
        column: column.name.clone(),
        column_type: column.data_type.clone(),
        function: key.function.clone(),
        keep: retention.keep.value,
    })
}

/// A partition, and whether the policy drops it.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionState {
    /// The partition.
    #[serde(flatten)]
    pub partition: Partition,
    /// Whether it is wholly older than the policy's cut-off (its upper bound is at or before
    /// it), so `prune` drops it. Never the default partition.
    pub drop: bool,
}

/// What `cascade partitions` shows for one model.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The model.
    pub model: String,
    /// Its table, `schema.name`.
    pub table: String,
    /// The partition key column.
    pub column: String,
    /// The policy's `keep`, such as `90d`.
    pub keep: String,
    /// Now minus `keep` (RFC 3339, UTC): partitions whose upper bound is at or before it go.
    pub cutoff: String,
    /// Every partition of the table, range partitions by bound, a default partition last.
    pub partitions: Vec<PartitionState>,
    /// Rows of the default partition older than the cut-off (never dropped with a partition).
    pub default_older_rows: Option<u64>,
    /// Partitions an interrupted prune detached but did not drop: the next prune drops them.
    pub detached: Vec<String>,
}

/// What `cascade partitions` reports for `policy` at `now`.
pub async fn report(database: &Database, policy: &Policy<'_>, now: SystemTime) -> Result<Report, PartitionError> {
    let cutoff = policy.cutoff(now)?;
    let listed = policy.partitions(database).await?;
    let drop = older_than(database, policy, &listed, cutoff).await?;
    let default_older_rows = match listed.iter().find(|partition| partition.default) {
        Some(default) => Some(rows_older_than(database, policy, default, cutoff).await?),
        None => None,
    };
    let detached = prune::detached_leftovers(database, policy).await?;
    Ok(Report {
        model: policy.model.name.value.clone(),
        table: policy.table.qualified_name(),
        column: policy.column.clone(),
        keep: crate::config::describe_keep(policy.keep),
        cutoff: humantime::format_rfc3339_seconds(cutoff).to_string(),
        partitions: listed.into_iter().zip(drop).map(|(partition, drop)| PartitionState { partition, drop }).collect(),
        default_older_rows,
        detached,
    })
}

/// For each partition, whether its upper bound is at or before `cutoff`, compared by the
/// database as values of the column's type (a `timestamp` or `date` column reads the cut-off in
/// the session's time zone). Never the default partition, nor one reaching to MAXVALUE, nor a
/// table's last partition where the database keeps one ([`Partitioning::keeps_a_partition`]).
async fn older_than(
    database: &Database,
    policy: &Policy<'_>,
    listed: &[Partition],
    cutoff: SystemTime,
) -> Result<Vec<bool>, PartitionError> {
    let uppers: Vec<String> = listed.iter().map(|partition| partition.to.clone().unwrap_or_default()).collect();
    let older = policy.partitioning.bounds_against(database, policy.key(), uppers, Side::AtOrBefore, cutoff).await?;
    let mut drop: Vec<bool> = listed.iter().zip(older).map(|(partition, older)| !partition.default && older).collect();
    if policy.partitioning.keeps_a_partition() && drop.iter().all(|drop| *drop) {
        drop.pop();
        drop.push(false);
    }
    Ok(drop)
}

/// Rows of `partition` older than `cutoff`.
async fn rows_older_than(
    database: &Database,
    policy: &Policy<'_>,
    partition: &Partition,
    cutoff: SystemTime,
) -> Result<u64, PartitionError> {
    let mut sql = database.sql();
    sql.push("SELECT COUNT(*) FROM ").push(&policy.partitioning.rows_of(policy.partitioned(), partition, "p"));
    sql.push(" WHERE p.").identifier(&policy.column).push(" < ");
    policy.partitioning.time_as_column(&mut sql, &policy.column_type, cutoff);
    Ok(database.fetch_count(&sql.finish()).await?)
}
