//! Dropping the partitions a policy no longer keeps, one at a time: rows that reference the
//! partition through a nullify relation are set to NULL (chunked), a checkpoint names the
//! partition, it is detached (`CONCURRENTLY` where the server allows), archived from the
//! detached table, and dropped in the same transaction that records the run as finished and
//! removes the checkpoint. A prune killed between detach and drop leaves the checkpoint behind;
//! the next prune finds the detached table by it and finishes it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use indexmap::IndexMap;
use serde::Serialize;
use tracing::info;

use super::{PartitionError, Policy, older_than, quoted};
use crate::audit::RunRows;
use crate::audit::{self, Run, RunOutcome, RunStart};
use crate::config::{Config, OnDelete, describe_columns};
use crate::db::Database;
use crate::engine::Archive;
use crate::schema::partitions::{partitions, server_version};
use crate::schema::{ForeignKey, Partition, Schema, Table};

/// How long a plain `DETACH` waits for its lock on the parent before it gives up.
const PLAIN_DETACH_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Rows per archive member (one cursor fetch): memory stays flat whatever the partition's size.
const ARCHIVE_BATCH: u64 = 10_000;

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

/// How a partition was detached.
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
}

impl Detach {
    /// The clause after `DETACH PARTITION name`.
    fn clause(self) -> &'static str {
        match self {
            Detach::Concurrently => " CONCURRENTLY",
            Detach::Finalized => " FINALIZE",
            Detach::Plain | Detach::Earlier => "",
        }
    }
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

/// A partition being pruned: its name, how SQL names it, and its checkpoint
/// (`partition-prune:PARENT:PARTITION`, kept from before the detach until the drop commits).
struct Target {
    /// `schema.name`, as the output and `cascade_run.root_ids` show it.
    name: String,
    /// `"schema"."name"`.
    quoted: String,
    checkpoint: String,
    /// Where its rows are archived: the prune that detached it decides, so a later prune (the
    /// worker's, say) that finishes it archives it too.
    archive: Option<PathBuf>,
}

/// What the checkpoint of a partition being pruned holds: the table, its oid (so that a table
/// made later under the same name is never taken for it) and the archive directory asked for.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Detaching {
    table: String,
    oid: String,
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
        let Ok(detaching) = serde_json::from_str::<Detaching>(&position) else { continue };
        let mut sql = database.sql();
        sql.push("SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass(").bind_text(&detaching.table);
        sql.push(") AND CAST(oid AS TEXT) = ").bind_text(&detaching.oid).push(" AND NOT relispartition");
        let name = checkpoint[prefix.len()..].to_owned();
        let ids = [name.clone()];
        if database.fetch_count(&sql.finish()).await? > 0
            && !audit::run_alive(database, &policy.model.name.value, &ids, run_lease).await?
        {
            leftovers.push(Target { name, quoted: detaching.table, checkpoint, archive: detaching.archive });
        }
    }
    Ok(leftovers)
}

/// Records, before the detach, which table is being detached and where it is to be archived.
async fn remember_detaching(database: &Database, target: &Target) -> Result<(), PartitionError> {
    let mut sql = database.sql();
    sql.push("SELECT CAST(CAST(to_regclass(").bind_text(&target.quoted).push(") AS oid) AS TEXT)");
    let oid =
        database.fetch_texts(&sql.finish()).await?.into_iter().next().and_then(|row| row.into_iter().next().flatten());
    let detaching =
        Detaching { table: target.quoted.clone(), oid: oid.unwrap_or_default(), archive: target.archive.clone() };
    let position = serde_json::to_string(&detaching).expect("a checkpoint serialises");
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
        let run = start_run(database, policy, &target, options).await?;
        let done = archive_and_drop(database, policy, &target, &run, Detach::Earlier, RunRows::default()).await;
        dropped.push(failed_run_on_error(run, &RunRows::default(), done).await?);
    }
    let version = server_version(database).await?;
    let listed = partitions(database, policy.table, version).await?;
    let drop = older_than(database, policy, &listed, policy.cutoff(now)?).await?;
    let has_default = listed.iter().any(|partition| partition.default);
    for partition in listed.iter().zip(drop).filter(|(_, drop)| *drop).map(|(partition, _)| partition) {
        let name = partition.qualified_name();
        let checkpoint = format!("{}{name}", checkpoint_prefix(policy));
        let target = Target { name, quoted: partition.quoted(), checkpoint, archive: options.archive.clone() };
        let run = start_run(database, policy, &target, options).await?;
        // What the run committed so far, as its row records it: the references set to NULL.
        let mut rows = RunRows::default();
        let done = async {
            clean_references(database, config, schema, policy, partition, run.id(), &mut rows).await?;
            remember_detaching(database, &target).await?;
            let detach = detach(database, policy, partition, version, has_default).await?;
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
    target: &Target,
    options: &PruneOptions,
) -> Result<Run, PartitionError> {
    let ids = [target.name.clone()];
    let start = RunStart {
        actor: &options.actor,
        command: &options.command,
        root_model: &policy.model.name.value,
        root_ids: &ids,
    };
    Ok(Run::start(database, start, options.run_lease).await?)
}

/// Detaches `partition`: finalizes an interrupted concurrent detach, detaches concurrently where
/// the server allows it (14 and later, no default partition: `CONCURRENTLY` cannot run inside
/// a transaction block, so it runs on its own), plainly otherwise. What was done, for the output.
async fn detach(
    database: &Database,
    policy: &Policy<'_>,
    partition: &Partition,
    version: u32,
    has_default: bool,
) -> Result<Detach, PartitionError> {
    let how = if partition.detach_pending {
        Detach::Finalized
    } else if version >= 140000 && !has_default {
        Detach::Concurrently
    } else {
        Detach::Plain
    };
    let mut sql = database.sql();
    sql.push("ALTER TABLE ").push(&policy.quoted_table()).push(" DETACH PARTITION ").push(&partition.quoted());
    sql.push(how.clause());
    if how != Detach::Plain {
        // CONCURRENTLY and FINALIZE cannot run inside a transaction block.
        database.execute(&sql.finish()).await?;
        return Ok(how);
    }
    // A plain detach takes ACCESS EXCLUSIVE on the parent; queued behind a long reader it would
    // hold up every writer of the table meanwhile: it gives up instead, and the next prune tries again.
    let mut transaction = database.begin_write().await?;
    let mut timeout = database.sql();
    timeout.push(&format!("SET LOCAL lock_timeout = '{}ms'", PLAIN_DETACH_LOCK_TIMEOUT.as_millis()));
    transaction.execute(&timeout.finish()).await?;
    transaction.execute(&sql.finish()).await?;
    transaction.commit().await?;
    Ok(how)
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
            let rows = archive(database, dir, run, model, target).await?;
            (rows, Some(Archive::path(dir, model, run)))
        }
        None => {
            let mut sql = database.sql();
            sql.push("SELECT COUNT(*) FROM ").push(&target.quoted);
            (database.fetch_count(&sql.finish()).await?, None)
        }
    };
    let mut transaction = database.begin_write().await?;
    let mut sql = database.sql();
    sql.push("DROP TABLE ").push(&target.quoted);
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

/// Streams every row of the detached table into the archive through a cursor, a member of
/// [`ARCHIVE_BATCH`] rows at a time, and syncs it; the number of rows.
async fn archive(
    database: &Database,
    dir: &Path,
    run: i64,
    model: &str,
    target: &Target,
) -> Result<u64, PartitionError> {
    let mut archive = Archive::open(dir, run)?;
    let mut transaction = database.begin_write().await?;
    let mut declare = database.sql();
    declare.push("DECLARE cascade_partition_archive NO SCROLL CURSOR FOR SELECT ");
    database.backend().row_json(&mut declare, "t", &[]);
    declare.push(" FROM ").push(&target.quoted).push(" t");
    transaction.execute(&declare.finish()).await?;
    let mut fetch = database.sql();
    fetch.push(&format!("FETCH FORWARD {ARCHIVE_BATCH} FROM cascade_partition_archive"));
    let fetch = fetch.finish();
    let mut rows = 0;
    loop {
        let batch = crate::db::first_column(transaction.fetch_texts(&fetch).await?);
        if batch.is_empty() {
            break;
        }
        rows += batch.len() as u64;
        // A partition's rows are many: each batch goes to the file at once.
        archive.write(model, &target.name, &batch)?;
        archive.flush()?;
    }
    archive.sync()?;
    transaction.commit().await?;
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
                    let selector = database.backend().row_selector(child.partitioned, &[]);
                    sql.push("UPDATE ").push(&quoted(child)).push(" SET ");
                    for (index, column) in columns.iter().enumerate() {
                        sql.push(if index > 0 { ", " } else { "" }).identifier(column).push(" = NULL");
                    }
                    sql.push(" WHERE ");
                    sql.push(&selector.matched).push(selector.open).push(&selector.select).push(" FROM ");
                    sql.push(&quoted(child)).push(" c WHERE ");
                    references(&mut sql, partition, fk, &referenced);
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
                sql.push("SELECT COUNT(*) FROM ").push(&quoted(child)).push(" c WHERE ");
                references(&mut sql, partition, fk, &referenced);
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

/// `EXISTS (SELECT 1 FROM ONLY partition p WHERE p.k = c.f ...)`: the row `c` references a row
/// of the partition.
fn references(sql: &mut crate::db::sql::SqlBuilder, partition: &Partition, fk: &ForeignKey, referenced: &[String]) {
    sql.push("EXISTS (SELECT 1 FROM ONLY ").push(&partition.quoted()).push(" p WHERE ");
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
