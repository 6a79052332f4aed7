//! Reading and writing the tool's own tables that every deletion uses: the audit of runs
//! (`cascade_run`) and the runtime values of options (`cascade_option`).

use std::time::{Duration, SystemTime};

use indexmap::IndexMap;
use serde::Serialize;

use super::backend::WriterLock;
use super::sql::{KeyType, Param, SqlBuilder, SqlValue, Statement};
use super::{Database, DbError, Transaction, migrate, runner};

/// A run just recorded, and the interrupted run of the same roots it resumes, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartedRun {
    /// The new run's id.
    pub id: i64,
    /// The id of the latest earlier run of the same roots whose process died while it ran, else
    /// of the run of the same roots before this one when it was interrupted.
    pub resumes: Option<i64>,
}

/// Another run of the same roots, running now: its process is alive or its heartbeat is fresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRun {
    /// Its id in `cascade_run`.
    pub id: i64,
    /// Who runs it.
    pub actor: String,
    /// When it started (UTC).
    pub started_at: String,
    /// The host it runs on, where it recorded it.
    pub host: Option<String>,
    /// Its process id on that host, where it recorded it.
    pub pid: Option<i64>,
    /// What tells its process apart from any other of that host's, where the system said.
    pub process: Option<String>,
}

impl std::fmt::Display for LiveRun {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "run {}, by {} since {} UTC", self.id, self.actor, self.started_at)?;
        match (&self.host, self.pid) {
            (Some(_), Some(pid)) if runner::is_local(self.host.as_deref(), self.process.as_deref()) => {
                write!(formatter, ", process {pid} on this host")
            }
            (Some(host), Some(pid)) => write!(formatter, ", process {pid} on {host}"),
            _ => Ok(()),
        }
    }
}

/// Records the start of a deletion in `cascade_run`, with a first heartbeat and its process.
/// Earlier runs of the same roots still marked `running` whose process died (on this host), or
/// whose heartbeat is older than `run_lease`, are marked `interrupted`, and the new run records
/// that it resumes the latest of them.
pub async fn start_run(
    database: &Database,
    actor: &str,
    command: &str,
    root_model: &str,
    root_ids: &[String],
    run_lease: Duration,
) -> Result<StartedRun, DbError> {
    let mut transaction = database.begin_write().await?;
    let earlier = end_dead_runs(database, &mut transaction, root_model, root_ids, run_lease).await?;
    let started = insert_run(database, &mut transaction, actor, command, root_model, root_ids, earlier.resumes).await?;
    transaction.commit().await?;
    Ok(started)
}

/// Which runs a run that must run alone may not start beside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alone {
    /// Runs of the same root model and ids (the same orphans clean-up: they share checkpoints).
    SameRoots,
    /// Runs of the same root model, whatever their ids (any duplicates clean-up of the model, a
    /// deletion of some of its rows: each could remove the row another keeps).
    SameModel,
}

/// [`start_run`] for a run that must not run beside another run (`alone`: of the same roots, or
/// of the same model): while one is running, nothing is recorded and that run is returned
/// instead.
pub async fn start_run_alone(
    database: &Database,
    actor: &str,
    command: &str,
    (root_model, root_ids): (&str, &[String]),
    alone: Alone,
    run_lease: Duration,
) -> Result<Result<StartedRun, LiveRun>, DbError> {
    let mut transaction = database.begin_write().await?;
    if let Some(lock) = database.backend().writer_lock(WriterLock::RunStart) {
        transaction.execute_script(lock).await?;
    }
    let mut earlier = end_dead_runs(database, &mut transaction, root_model, root_ids, run_lease).await?;
    if alone == Alone::SameModel {
        let of_model = running(database, &mut transaction, root_model, None, run_lease).await?;
        earlier.live.extend(of_model.into_iter().filter(|(_, dead)| !dead).map(|(run, _)| run));
    }
    if let Some(live) = earlier.live.pop() {
        transaction.commit().await?;
        return Ok(Err(live));
    }
    let started = insert_run(database, &mut transaction, actor, command, root_model, root_ids, earlier.resumes).await?;
    transaction.commit().await?;
    Ok(Ok(started))
}

/// The runs of the same roots still marked `running` when a run starts.
struct EarlierRuns {
    /// The latest of those whose process died, now marked `interrupted`.
    resumes: Option<i64>,
    /// Those still running, oldest first.
    live: Vec<LiveRun>,
}

/// Marks the runs of `root_model` and `root_ids` still `running` whose process died as
/// `interrupted`, and returns the live ones and the run a new one resumes: the latest of those,
/// else the latest run of the same roots when it was interrupted (stopped by a signal or
/// `--max-batches`).
async fn end_dead_runs(
    database: &Database,
    transaction: &mut Transaction,
    root_model: &str,
    root_ids: &[String],
    run_lease: Duration,
) -> Result<EarlierRuns, DbError> {
    let mut earlier = EarlierRuns { resumes: None, live: Vec::new() };
    for (run, dead) in running(database, transaction, root_model, Some(root_ids), run_lease).await? {
        if !dead {
            earlier.live.push(run);
            continue;
        }
        // Only while it is still `running`: a run that finished since it was read keeps its outcome.
        let mut mark = database.sql();
        mark.push("UPDATE cascade_run SET outcome = 'interrupted', finished_at = CURRENT_TIMESTAMP WHERE id = ");
        mark.bind(Param::integer(run.id)).push(" AND outcome = 'running' RETURNING CAST(id AS TEXT)");
        if !transaction.fetch_texts(&mark.finish()).await?.is_empty() {
            earlier.resumes = Some(run.id);
        }
    }
    if earlier.resumes.is_none() {
        let mut latest = database.sql();
        latest.push("SELECT CAST(id AS TEXT) FROM cascade_run WHERE id = (SELECT MAX(id) FROM cascade_run WHERE ");
        latest.push("root_model = ").bind_text(root_model).push(" AND root_ids = ").bind_text(&ids_json(root_ids));
        latest.push(") AND outcome = 'interrupted'");
        let interrupted = transaction.fetch_texts(&latest.finish()).await?;
        earlier.resumes = interrupted.first().and_then(|row| first_integer(row));
    }
    Ok(earlier)
}

/// The runs of `root_model` (of `root_ids` only, when given; else any run one of whose models it
/// is) still marked `running`, oldest first, each with whether it is dead: its process gone from
/// this host, or its heartbeat older than `run_lease`.
async fn running(
    database: &Database,
    transaction: &mut Transaction,
    root_model: &str,
    root_ids: Option<&[String]>,
    run_lease: Duration,
) -> Result<Vec<(LiveRun, bool)>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT CAST(id AS TEXT), actor, ").push(&database.backend().timestamp_text("started_at"));
    sql.push(", host, CAST(pid AS TEXT), process, CASE WHEN ");
    stale(&mut sql, run_lease);
    sql.push(" THEN 'stale' END, root_model FROM cascade_run WHERE outcome = 'running'");
    if let Some(root_ids) = root_ids {
        sql.push(" AND root_model = ").bind_text(root_model).push(" AND root_ids = ").bind_text(&ids_json(root_ids));
    }
    sql.push(" ORDER BY id");
    let rows = transaction.fetch_texts(&sql.finish()).await?;
    // A clean-up of several models records them as `a, b`: any run of the model counts.
    let of_model = |row: &[Option<String>]| {
        root_ids.is_some()
            || row.get(7).cloned().flatten().is_some_and(|models| models.split(", ").any(|model| model == root_model))
    };
    Ok(rows
        .into_iter()
        .filter(|row| of_model(row))
        .map(|row| {
            let field = |index: usize| row.get(index).cloned().flatten();
            let run = LiveRun {
                id: first_integer(&row).unwrap_or(0),
                actor: field(1).unwrap_or_default(),
                started_at: field(2).unwrap_or_default(),
                host: field(3),
                pid: field(4).and_then(|pid| pid.parse().ok()),
                process: field(5),
            };
            let dead = field(6).is_some() || runner::is_gone(run.host.as_deref(), run.pid, run.process.as_deref());
            (run, dead)
        })
        .collect())
}

async fn insert_run(
    database: &Database,
    transaction: &mut Transaction,
    actor: &str,
    command: &str,
    root_model: &str,
    root_ids: &[String],
    resumes: Option<i64>,
) -> Result<StartedRun, DbError> {
    let ids = ids_json(root_ids);
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome, host, pid, process, heartbeat, ");
    sql.push("resumes) VALUES (");
    sql.binds([actor, command, root_model, &ids, "running", runner::this_host()].map(Param::text));
    sql.push(", ").bind(Param::integer(runner::this_pid())).push(", ");
    match runner::this_process() {
        Some(process) => sql.bind_text(process),
        None => sql.push("NULL"),
    };
    sql.push(", ").timestamp(SystemTime::now());
    match resumes {
        Some(id) => sql.push(", ").bind(Param::integer(id)),
        None => sql.push(", NULL"),
    };
    sql.push(") RETURNING CAST(id AS TEXT)");
    let rows = transaction.fetch_texts(&sql.finish()).await?;
    Ok(StartedRun { id: rows.first().and_then(|row| first_integer(row)).unwrap_or(0), resumes })
}

/// Root ids as `cascade_run.root_ids` holds them: a JSON array of texts.
fn ids_json(root_ids: &[String]) -> String {
    serde_json::Value::from_iter(root_ids.iter().map(|id| serde_json::json!(id))).to_string()
}

/// `cascade_run` rows still `running` whose heartbeat is older than `run_lease` (or that never
/// had one: runs recorded before heartbeats existed).
fn stale(sql: &mut SqlBuilder, run_lease: Duration) {
    let cutoff = SystemTime::now().checked_sub(run_lease).unwrap_or(SystemTime::UNIX_EPOCH);
    sql.push("outcome = 'running' AND (heartbeat IS NULL OR heartbeat < ").timestamp(cutoff).push(")");
}

fn first_integer(row: &[Option<String>]) -> Option<i64> {
    row.first().cloned().flatten().and_then(|value| value.parse().ok())
}

/// Whether a run of `root_model` and `root_ids` is `running` with a heartbeat newer than
/// `run_lease` and a process not known to be gone: its process is still at work.
pub async fn run_alive(
    database: &Database,
    root_model: &str,
    root_ids: &[String],
    run_lease: Duration,
) -> Result<bool, DbError> {
    let ids = ids_json(root_ids);
    let mut sql = database.sql();
    sql.push("SELECT host, CAST(pid AS TEXT), process FROM cascade_run WHERE outcome = 'running' AND NOT (");
    stale(&mut sql, run_lease);
    sql.push(") AND root_model = ").bind_text(root_model).push(" AND root_ids = ").bind_text(&ids);
    let runs = database.fetch_texts(&sql.finish()).await?;
    Ok(runs.iter().any(|row| !process_gone(row, 0)))
}

/// Whether the run whose `host`, `pid` and `process` are the row's fields from `first` on is
/// known to have lost its process.
fn process_gone(row: &[Option<String>], first: usize) -> bool {
    let field = |index: usize| row.get(first + index).cloned().flatten();
    runner::is_gone(field(0).as_deref(), field(1).and_then(|pid| pid.parse().ok()), field(2).as_deref())
}

/// The run is alive.
pub async fn heartbeat_run(database: &Database, id: i64) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_run SET heartbeat = ").timestamp(SystemTime::now());
    sql.push(" WHERE id = ").bind(Param::integer(id));
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// Heartbeats the run every quarter of its lease, so that a run whose process died is told from
/// one that is still working; abort the task when the run ends.
pub fn keep_run_alive(database: Database, run_id: i64, run_lease: Duration) -> tokio::task::JoinHandle<()> {
    let every = (run_lease / 4).max(Duration::from_millis(100));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if let Err(error) = heartbeat_run(&database, run_id).await {
                tracing::debug!(%error, run = run_id, "run heartbeat failed");
            }
        }
    })
}

/// A row of `cascade_run`, as `cascade runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// The run's id (the archive's file names carry it).
    pub id: i64,
    /// When it started (UTC).
    pub started_at: String,
    /// When it ended (UTC), unless it is running or its process died.
    pub finished_at: Option<String>,
    /// Who ran it.
    pub actor: String,
    /// The command line, database passwords redacted.
    pub command: String,
    /// The root model.
    pub root_model: String,
    /// The root ids: a JSON array.
    pub root_ids: serde_json::Value,
    /// `running`, `succeeded`, `failed`, `skipped` or `interrupted` (stopped, or its process
    /// died: a `running` run whose process is gone from this host, or whose heartbeat is older
    /// than the run lease).
    pub outcome: String,
    /// Rows per model: `{"deleted": {...}, "nullified": {...}}` as of the run's last commit.
    pub rows: Option<serde_json::Value>,
    /// The error a failed run stopped on.
    pub error: Option<String>,
    /// The interrupted run this one resumed.
    pub resumes: Option<i64>,
}

/// A column that holds JSON text, as the JSON it holds (as a string if it is not JSON).
fn json_column(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

/// The latest `limit` runs, newest first, a dead `running` run shown as `interrupted` (left
/// `running` in the table until a run of the same roots starts).
pub async fn list_runs(database: &Database, limit: u64, run_lease: Duration) -> Result<Vec<RunRecord>, DbError> {
    if !database.table_exists("cascade_run").await? {
        return Ok(Vec::new());
    }
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT CAST(id AS TEXT), ").push(&backend.timestamp_text("started_at")).push(", ");
    sql.push(&backend.timestamp_text("finished_at")).push(", actor, command, root_model, root_ids, CASE WHEN ");
    stale(&mut sql, run_lease);
    sql.push(" THEN 'interrupted' ELSE outcome END, rows, error, CAST(resumes AS TEXT), host, CAST(pid AS TEXT), ");
    sql.push("process FROM cascade_run ");
    sql.push("ORDER BY id DESC LIMIT ").bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let rows = database.fetch_texts(&sql.finish()).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let field = |index: usize| row.get(index).cloned().flatten();
            RunRecord {
                id: first_integer(&row).unwrap_or(0),
                started_at: field(1).unwrap_or_default(),
                finished_at: field(2),
                actor: field(3).unwrap_or_default(),
                command: field(4).unwrap_or_default(),
                root_model: field(5).unwrap_or_default(),
                root_ids: json_column(field(6).unwrap_or_default()),
                outcome: match field(7).unwrap_or_default() {
                    running if running == "running" && process_gone(&row, 11) => "interrupted".to_owned(),
                    outcome => outcome,
                },
                rows: field(8).map(json_column),
                error: field(9),
                resumes: field(10).and_then(|id| id.parse().ok()),
            }
        })
        .collect())
}

/// Records how a deletion ended: rows per model (JSON), its outcome and error.
pub async fn finish_run(
    database: &Database,
    id: i64,
    rows: &str,
    outcome: &str,
    error: Option<&str>,
) -> Result<(), DbError> {
    let mut transaction = database.begin_write().await?;
    finish_run_in(&mut transaction, id, rows, outcome, error).await?;
    transaction.commit().await
}

/// [`finish_run`] inside `transaction`, so the run is recorded as finished exactly when what it
/// did commits (a dropped partition).
pub async fn finish_run_in(
    transaction: &mut Transaction,
    id: i64,
    rows: &str,
    outcome: &str,
    error: Option<&str>,
) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("UPDATE cascade_run SET finished_at = CURRENT_TIMESTAMP, rows = ").bind_text(rows);
    sql.push(", outcome = ").bind_text(outcome).push(", error = ");
    match error {
        Some(error) => sql.bind_text(error),
        None => sql.push("NULL"),
    };
    sql.push(" WHERE id = ").bind(Param::integer(id));
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// Records `rows` (JSON, as [`finish_run`] takes them) as what the run `id` did so far, in the
/// transaction that did the last of it.
pub async fn record_run_rows(transaction: &mut Transaction, id: i64, rows: &str) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("UPDATE cascade_run SET rows = ").bind_text(rows).push(" WHERE id = ").bind(Param::integer(id));
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// Sets the checkpoint `name` to `position` (creating or moving it), in a transaction of its own.
pub async fn set_checkpoint(database: &Database, name: &str, position: &str) -> Result<(), DbError> {
    migrate(database).await?;
    let mut transaction = database.begin_write().await?;
    save_checkpoint(&mut transaction, name, position).await?;
    transaction.commit().await
}

/// Every checkpoint whose name starts with `prefix`: (name, position), by name.
pub async fn checkpoints(database: &Database, prefix: &str) -> Result<Vec<(String, String)>, DbError> {
    if !database.table_exists("cascade_checkpoint").await? {
        return Ok(Vec::new());
    }
    let mut sql = database.sql();
    sql.push("SELECT name, position FROM cascade_checkpoint WHERE substr(name, 1, CAST(");
    sql.bind(Param::integer(i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX))).push(" AS INTEGER)) = ");
    sql.bind_text(prefix).push(" ORDER BY name");
    Ok(database
        .fetch_texts(&sql.finish())
        .await?
        .into_iter()
        .filter_map(|row| {
            let mut fields = row.into_iter();
            Some((fields.next().flatten()?, fields.next().flatten()?))
        })
        .collect())
}

/// Removes the checkpoint `name` inside `transaction`.
pub async fn clear_checkpoint_in(transaction: &mut Transaction, name: &str) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("DELETE FROM cascade_checkpoint WHERE name = ").bind_text(name);
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// The option values stored in `cascade_option`; none when the table does not exist yet (it
/// is created on first write, and a read-only command never creates it).
pub async fn option_overrides(database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    if !database.table_exists("cascade_option").await? {
        return Ok(IndexMap::new());
    }
    let options = Statement {
        sql: "SELECT name, CAST(value AS TEXT) AS value FROM cascade_option".to_owned(),
        params: Vec::new(),
    };
    let rows = database.fetch_texts(&options).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let mut fields = row.into_iter();
            let (name, value) = (fields.next().flatten()?, fields.next().flatten()?);
            Some((name, value.trim().parse().ok()?))
        })
        .collect())
}

/// Removes an option's runtime value, so the config's applies again; whether there was one.
pub async fn unset_option(database: &Database, name: &str) -> Result<bool, DbError> {
    if !database.table_exists("cascade_option").await? {
        return Ok(false);
    }
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_option WHERE name = ").bind_text(name);
    Ok(database.execute_alone(&sql.finish()).await? > 0)
}

/// Stores an option's runtime value (creating the tool's tables if needed).
pub async fn set_option(database: &Database, name: &str, value: f64) -> Result<(), DbError> {
    migrate(database).await?;
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_option (name, value) VALUES (").bind_text(name);
    sql.push(", CAST(").bind_text(&value.to_string());
    sql.push(" AS DOUBLE PRECISION)) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = CURRENT_TIMESTAMP");
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// The checkpoint name under which a root row's status from before a deletion marked it is
/// kept.
fn status_checkpoint(table: &str, key: &str) -> String {
    format!("status-before-deletion:{table}:{key}")
}

/// Keeps the statuses root rows of `table` had before the deletion marked them in progress
/// (key → status as JSON), in the marking transaction; a status kept by an earlier, interrupted
/// run of the same rows stays.
pub async fn remember_statuses(
    transaction: &mut Transaction,
    table: &str,
    statuses: &[(String, String)],
) -> Result<(), DbError> {
    if statuses.is_empty() {
        return Ok(());
    }
    let backend = transaction.backend();
    let records: Vec<serde_json::Value> = statuses
        .iter()
        .map(|(key, status)| serde_json::json!({ "name": status_checkpoint(table, key), "position": status }))
        .collect();
    let mut sql = SqlBuilder::new(backend);
    sql.push("INSERT INTO cascade_checkpoint (name, position) SELECT ").push(&backend.json_field("name"));
    sql.push(", ").push(&backend.json_field("position")).push(" FROM ");
    backend.json_records(&mut sql, Param::json_records(records), &["name", "position"]);
    sql.push(" WHERE true ON CONFLICT (name) DO NOTHING");
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// The statuses kept for root rows `keys` of `table` (key → status as JSON).
pub async fn remembered_statuses(
    database: &Database,
    table: &str,
    keys: &[String],
) -> Result<IndexMap<String, String>, DbError> {
    let names: Vec<String> = keys.iter().map(|key| status_checkpoint(table, key)).collect();
    let mut sql = database.sql();
    sql.push("SELECT name, position FROM cascade_checkpoint WHERE ");
    sql.key_list("name", &KeyType::Text, Param::Value(SqlValue::Texts(names)));
    let prefix = status_checkpoint(table, "");
    Ok(database
        .fetch_texts(&sql.finish())
        .await?
        .into_iter()
        .filter_map(|row| {
            let mut fields = row.into_iter();
            let (name, position) = (fields.next().flatten()?, fields.next().flatten()?);
            Some((name.strip_prefix(&prefix)?.to_owned(), position))
        })
        .collect())
}

/// Forgets the statuses kept for root rows `keys` of `table` once they are deleted.
pub async fn forget_statuses(database: &Database, table: &str, keys: &[String]) -> Result<(), DbError> {
    let names: Vec<String> = keys.iter().map(|key| status_checkpoint(table, key)).collect();
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_checkpoint WHERE ");
    sql.key_list("name", &KeyType::Text, Param::Value(SqlValue::Texts(names)));
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// Sets the checkpoint `name` to `position`, in the transaction whose work it records.
pub async fn save_checkpoint(transaction: &mut Transaction, name: &str, position: &str) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("INSERT INTO cascade_checkpoint (name, position) VALUES (")
        .binds([Param::text(name), Param::text(position)]);
    sql.push(") ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = CURRENT_TIMESTAMP");
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// The position of the checkpoint `name`, if one is kept.
pub async fn checkpoint(database: &Database, name: &str) -> Result<Option<String>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT position FROM cascade_checkpoint WHERE name = ").bind_text(name);
    Ok(database.fetch_texts(&sql.finish()).await?.into_iter().next().and_then(|row| row.into_iter().next().flatten()))
}

/// Forgets the checkpoint `name`.
pub async fn forget_checkpoint(database: &Database, name: &str) -> Result<(), DbError> {
    let mut transaction = database.begin_write().await?;
    clear_checkpoint_in(&mut transaction, name).await?;
    transaction.commit().await
}
