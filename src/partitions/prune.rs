//! Dropping the partitions a policy no longer keeps, one at a time: rows that reference the
//! partition through a nullify relation are set to NULL (chunked), a checkpoint names the table
//! its rows will be in, it is detached (PostgreSQL: `CONCURRENTLY` where the server allows;
//! MySQL: its rows swapped into a table of their own), archived from that table, and the table
//! dropped in the same transaction that records the run as finished and removes the checkpoint
//! (on MySQL, whose `DROP TABLE` commits by itself, just before that transaction).
//! A prune killed between detach and drop leaves the checkpoint behind; the next prune finds the
//! detached table by it and finishes it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use indexmap::IndexMap;
use serde::Serialize;
use tracing::info;

use super::{PartitionError, Policy, older_than};
use crate::audit::RunRows;
use crate::audit::{self, Run, RunOutcome, RunStart};
use crate::config::{Config, OnDelete, describe_columns};
use crate::db::Database;
use crate::db::partitions::{Detach, Detaching};
use crate::engine::Archive;
use crate::schema::{ForeignKey, Partition, Schema, Table};

/// How a prune runs.
#[derive(Debug, Clone, Default)]
pub struct PruneOptions {
    /// Write every dropped row to `DIR/MODEL.RUN.jsonl.gz` before the drop.
    pub archive: Option<PathBuf>,
    /// Who runs it, for `cascade_run`.
    pub actor: String,
    /// The command line, for `cascade_run`.
    pub command: String,
    /// How old a running run's heartbeat may be before it counts as interrupted.
    pub run_lease: Duration,
    /// A test hook: after each detach, wait until this file exists (so a test can kill the
    /// process between detach and drop).
    pub pause_after_detach: Option<PathBuf>,
}

/// One dropped partition.
#[derive(Debug, Clone, Serialize)]
pub struct Dropped {
    /// The model.
    pub model: String,
    /// The partition, `schema.name`.
    pub partition: String,
    /// Its rows when it was dropped.
    pub rows: u64,
    /// How it was detached.
    pub detach: Detach,
    /// Rows of referencing tables set to NULL first, per `table.column`.
    pub nullified: IndexMap<String, u64>,
    /// The archive file, when archived.
    pub archive: Option<PathBuf>,
    /// Its `cascade_run` id.
    pub run: i64,
}

/// A partition being pruned: its name, the table its rows are in once detached, and its
/// checkpoint (`partition-prune:PARENT:PARTITION`, kept from before the detach until the drop
/// commits).
struct Target {
    /// `schema.name` (MySQL: `table.partition`), as the output and `cascade_run.root_ids` show it.
    name: String,
    /// The detached table.
    detaching: Detaching,
    checkpoint: String,
    /// Where its rows are archived: the prune that detached it decides, so a later prune (the
    /// worker's, say) that finishes it archives it too.
    archive: Option<PathBuf>,
}

/// What the checkpoint of a partition being pruned holds: the detached table with what tells it
/// from a table made later under the same name, and the archive directory asked for.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Checkpoint {
    #[serde(flatten)]
    detaching: Detaching,
    archive: Option<PathBuf>,
}

fn checkpoint_prefix(policy: &Policy<'_>) -> String {
    format!("partition-prune:{}:", policy.table.qualified_name())
}

/// Partitions an interrupted prune of `policy` detached but did not drop: the checkpoint's table
/// is still there under the same oid, no longer a partition, and no prune still running (its
/// run's heartbeat fresh) is at work on it. Other checkpoints are left out.
async fn leftovers(
    database: &Database,
    policy: &Policy<'_>,
    run_lease: Duration,
) -> Result<Vec<Target>, PartitionError> {
    let prefix = checkpoint_prefix(policy);
    let mut leftovers = Vec::new();
    for (checkpoint, position) in audit::checkpoint::with_prefix(database, &prefix).await? {
        let Ok(saved) = serde_json::from_str::<Checkpoint>(&position) else { continue };
        let name = checkpoint[prefix.len()..].to_owned();
        let ids = [name.clone()];
        if policy.partitioning.still_detached(database, &saved.detaching).await?
            && !audit::run_alive(database, &policy.model.name.value, &ids, run_lease).await?
        {
            leftovers.push(Target { name, detaching: saved.detaching, checkpoint, archive: saved.archive });
        }
    }
    Ok(leftovers)
}

/// Records, before the detach, which table is being detached and where it is to be archived.
async fn remember_detaching(database: &Database, target: &Target) -> Result<(), PartitionError> {
    let saved = Checkpoint { detaching: target.detaching.clone(), archive: target.archive.clone() };
    let position = serde_json::to_string(&saved).expect("a checkpoint serialises");
    Ok(audit::checkpoint::save_alone(database, &target.checkpoint, &position).await?)
}

/// The names (`schema.name`) of the partitions an interrupted prune detached but did not drop.
pub(super) async fn detached_leftovers(
    database: &Database,
    policy: &Policy<'_>,
) -> Result<Vec<String>, PartitionError> {
    Ok(leftovers(database, policy, Duration::ZERO).await?.into_iter().map(|target| target.name).collect())
}

/// Drops every partition of `policy` wholly older than `now` minus `keep`, and finishes any an
/// interrupted prune left detached. Refuses, before touching a partition, when rows of another
/// table reference it other than through a nullify relation of the model.
pub async fn prune(
    database: &Database,
    config: &Config,
    schema: &Schema,
    policy: &Policy<'_>,
    now: SystemTime,
    options: &PruneOptions,
) -> Result<Vec<Dropped>, PartitionError> {
    // `now` is a test's clock: one later than the real one would drop what the policy keeps.
    if now > SystemTime::now() {
        return Err(PartitionError::FutureNow(now));
    }
    crate::db::migrate(database).await?;
    let mut dropped = Vec::new();
    for target in leftovers(database, policy, options.run_lease).await? {
        info!(model = %policy.model.name.value, partition = %target.name, "finishing a partition detached earlier");
        let run = start_run(database, policy, &target.name, options).await?;
        let done = archive_and_drop(database, policy, &target, &run, Detach::Earlier, RunRows::default()).await;
        dropped.push(failed_run_on_error(run, &RunRows::default(), done).await?);
    }
    let listed = policy.partitions(database).await?;
    let drop = older_than(database, policy, &listed, policy.cutoff(now)?).await?;
    let has_default = listed.iter().any(|partition| partition.default);
    for partition in listed.iter().zip(drop).filter(|(_, drop)| *drop).map(|(partition, _)| partition) {
        let name = partition.qualified_name();
        let checkpoint = format!("{}{name}", checkpoint_prefix(policy));
        let run = start_run(database, policy, &name, options).await?;
        // What the run committed so far, as its row records it: the references set to NULL.
        let mut rows = RunRows::default();
        let done = async {
            clean_references(database, config, schema, policy, partition, run.id(), &mut rows).await?;
            let detaching = policy.partitioning.detaching(database, partition, run.id()).await?;
            let target = Target { name, detaching, checkpoint, archive: options.archive.clone() };
            remember_detaching(database, &target).await?;
            let detach = policy
                .partitioning
                .detach(database, policy.partitioned(), partition, &target.detaching, has_default)
                .await?;
            info!(model = %policy.model.name.value, partition = %target.name, ?detach, "partition detached");
            if let Some(file) = &options.pause_after_detach {
                wait_for(file).await;
            }
            archive_and_drop(database, policy, &target, &run, detach, rows.clone()).await
        };
        let done = done.await;
        dropped.push(failed_run_on_error(run, &rows, done).await?);
    }
    Ok(dropped)
}

/// `result`, with the run recorded as failed (and why, with the `rows` it committed) when it is
/// an error.
async fn failed_run_on_error(
    run: Run,
    rows: &RunRows,
    result: Result<Dropped, PartitionError>,
) -> Result<Dropped, PartitionError> {
    if let Err(error) = &result {
        run.finish(RunOutcome::Failed, rows, Some(&error.to_string())).await?;
    }
    result
}

async fn start_run(
    database: &Database,
    policy: &Policy<'_>,
    partition: &str,
    options: &PruneOptions,
) -> Result<Run, PartitionError> {
    let ids = [partition.to_owned()];
    let start = RunStart {
        actor: &options.actor,
        command: &options.command,
        root_model: &policy.model.name.value,
        root_ids: &ids,
    };
    Ok(Run::start(database, start, options.run_lease).await?)
}

/// Archives the detached table (when asked), then drops it, records the run as finished and
/// removes the checkpoint, in one transaction.
async fn archive_and_drop(
    database: &Database,
    policy: &Policy<'_>,
    target: &Target,
    run: &Run,
    detach: Detach,
    mut done: RunRows,
) -> Result<Dropped, PartitionError> {
    let model = &policy.model.name.value;
    let (run, recording) = (run.id(), run);
    let (rows, archive) = match &target.archive {
        Some(dir) => {
            let rows = archive(database, policy, dir, run, target).await?;
            (rows, Some(Archive::path(dir, model, run)))
        }
        None => {
            let mut sql = database.sql();
            sql.push("SELECT COUNT(*) FROM ").push(&target.detaching.table);
            (database.fetch_count(&sql.finish()).await?, None)
        }
    };
    let mut transaction = database.begin_write().await?;
    let mut sql = database.sql();
    sql.push("DROP TABLE ").push(&target.detaching.table);
    transaction.execute(&sql.finish()).await?;
    done.deleted.insert(model.clone(), rows);
    recording.finish_in(&mut transaction, RunOutcome::Succeeded, &done, None).await?;
    audit::checkpoint::remove(&mut transaction, &target.checkpoint).await?;
    transaction.commit().await?;
    info!(model = %model, partition = %target.name, rows, run, "partition dropped");
    Ok(Dropped {
        model: model.clone(),
        partition: target.name.clone(),
        rows,
        detach,
        nullified: done.nullified,
        archive,
        run,
    })
}

/// Writes every row of the detached table to the archive, a batch at a time, and syncs it (each
/// batch before the next, where the batches leave the table as they go); the number of rows.
async fn archive(
    database: &Database,
    policy: &Policy<'_>,
    dir: &Path,
    run: i64,
    target: &Target,
) -> Result<u64, PartitionError> {
    let mut archive = Archive::open(dir, run)?;
    let model = &policy.model.name.value;
    let columns: Vec<String> = policy.table.columns.iter().map(|column| column.name.clone()).collect();
    let consumed = policy.partitioning.archive_consumes_rows();
    let write = |batch: &[String]| -> Result<(), PartitionError> {
        archive.write(model, &target.name, batch)?;
        archive.flush()?;
        if consumed {
            archive.sync()?;
        }
        Ok(())
    };
    let rows = policy.partitioning.archive(database, &target.detaching.table, &columns, write).await?;
    archive.sync()?;
    Ok(rows)
}

/// Sets to NULL the column of every row that references `partition` through a nullify relation
/// of the model, a chunk per transaction; refuses when rows reference it any other way.
async fn clean_references(
    database: &Database,
    config: &Config,
    schema: &Schema,
    policy: &Policy<'_>,
    partition: &Partition,
    run: i64,
    rows: &mut RunRows,
) -> Result<(), PartitionError> {
    for (child, fk) in references_into(config, schema, policy) {
        let fk = &fk;
        let referenced = if fk.referenced_columns.is_empty() {
            policy.table.primary_key.clone()
        } else {
            fk.referenced_columns.clone()
        };
        match nullify_relation(config, schema, policy, child, fk) {
            Some((columns, chunk)) => {
                let nullified = format!("{}.{}", child.qualified_name(), describe_columns(&columns));
                loop {
                    let mut sql = database.sql();
                    let selector = database.backend().row_selector(child.partitioned, &child.primary_key);
                    sql.push("UPDATE ").push(&child.quoted()).push(" SET ");
                    for (index, column) in columns.iter().enumerate() {
                        sql.push(if index > 0 { ", " } else { "" }).identifier(column).push(" = NULL");
                    }
                    sql.push(" WHERE ");
                    sql.push(&selector.matched).push(selector.open).push(&selector.select).push(" FROM ");
                    sql.push(&child.quoted()).push(" c WHERE ");
                    references(&mut sql, policy, partition, fk, &referenced);
                    sql.push(&format!(" LIMIT {chunk}")).push(selector.close);
                    let mut transaction = database.begin_write().await?;
                    let changed = transaction.execute(&sql.finish()).await?;
                    let mut after = rows.clone();
                    *after.nullified.entry(nullified.clone()).or_default() += changed;
                    if changed > 0 {
                        audit::record_rows(&mut transaction, run, &after).await?;
                    }
                    transaction.commit().await?;
                    *rows = after;
                    if changed == 0 {
                        break;
                    }
                }
            }
            None => {
                let mut sql = database.sql();
                sql.push("SELECT COUNT(*) FROM ").push(&child.quoted()).push(" c WHERE ");
                references(&mut sql, policy, partition, fk, &referenced);
                let rows = database.fetch_count(&sql.finish()).await?;
                if rows > 0 {
                    return Err(PartitionError::Referenced {
                        model: policy.model.name.value.clone(),
                        partition: partition.qualified_name(),
                        table: child.qualified_name(),
                        columns: fk.columns.join(", "),
                        rows,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Every way rows of another table reference the model's table: its foreign keys, and the
/// model's declared relations that no foreign key backs (as a foreign key on the relation's
/// column to the model's key), so a relation the database does not enforce is cleaned or
/// refused all the same.
fn references_into<'a>(config: &Config, schema: &'a Schema, policy: &Policy<'a>) -> Vec<(&'a Table, ForeignKey)> {
    let mut found: Vec<(&Table, ForeignKey)> =
        schema.references_to(policy.table).map(|(child, fk)| (child, fk.clone())).collect();
    for relation in &policy.model.children {
        let Some(child) = config.model(&relation.model.value).and_then(|model| schema.table(&model.table.value)) else {
            continue;
        };
        let columns = relation.column_names();
        let backed =
            found.iter().any(|(table, fk)| std::ptr::eq(*table, child) && within(&columns, &fk.columns).is_some());
        if !backed {
            let catalog = |table: &Table, column: &String| {
                table.column(column).map_or_else(|| column.clone(), |c| c.name.clone())
            };
            found.push((
                child,
                ForeignKey {
                    name: None,
                    columns: columns.iter().map(|column| catalog(child, column)).collect(),
                    referenced_schema: policy.table.schema.clone(),
                    referenced_table: policy.table.name.clone(),
                    referenced_columns: relation
                        .referenced(policy.model)
                        .iter()
                        .map(|column| catalog(policy.table, column))
                        .collect(),
                    on_delete: crate::schema::ReferentialAction::NoAction,
                },
            ));
        }
    }
    found
}

/// `EXISTS (SELECT 1 FROM (the partition's rows) p WHERE p.k = c.f ...)`: the row `c` references
/// a row of the partition.
fn references(
    sql: &mut crate::db::sql::SqlBuilder,
    policy: &Policy<'_>,
    partition: &Partition,
    fk: &ForeignKey,
    referenced: &[String],
) {
    sql.push("EXISTS (SELECT 1 FROM ").push(&policy.partitioning.rows_of(policy.partitioned(), partition, "p"));
    sql.push(" WHERE ");
    for (index, (column, target)) in fk.columns.iter().zip(referenced).enumerate() {
        if index > 0 {
            sql.push(" AND ");
        }
        sql.push("p.").identifier(target).push(" = c.").identifier(column);
    }
    sql.push(")");
}

/// The columns to set to NULL, and the chunk size, when the model declares the foreign key `fk`
/// of `child` as a nullify relation.
fn nullify_relation(
    config: &Config,
    schema: &Schema,
    policy: &Policy<'_>,
    child: &Table,
    fk: &ForeignKey,
) -> Option<(Vec<String>, u64)> {
    policy.model.children.iter().filter(|relation| relation.action() == OnDelete::Nullify).find_map(|relation| {
        let model = config.model(&relation.model.value)?;
        schema.table(&model.table.value).filter(|table| std::ptr::eq(*table, child))?;
        let columns = within(&relation.column_names(), &fk.columns)?;
        let strategy = relation.strategy.as_ref().or(model.strategy.as_ref()).map(|s| s.value);
        let chunk = relation
            .chunk_size
            .as_ref()
            .or(model.chunk_size.as_ref())
            .map(|c| c.value)
            .unwrap_or_else(|| config.settings.chunk_size(strategy.unwrap_or(crate::config::Strategy::PerRow)));
        Some((columns, chunk.max(1)))
    })
}

/// `columns` as `fk_columns` spell them, when each of them is one of `fk_columns`: a relation
/// over some columns of a foreign key is backed by it (a NULL in any of them releases the row).
fn within(columns: &[String], fk_columns: &[String]) -> Option<Vec<String>> {
    columns
        .iter()
        .map(|column| fk_columns.iter().find(|fk_column| fk_column.eq_ignore_ascii_case(column)).cloned())
        .collect()
}

/// Waits until `file` exists (the test hook of [`PruneOptions::pause_after_detach`]).
async fn wait_for(file: &Path) {
    while !file.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
