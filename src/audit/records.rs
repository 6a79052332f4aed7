//! Reading the audit trail back: the runs `cascade runs` lists, and whether a run is at work.

use std::time::Duration;

use serde::Serialize;

use super::outcome::{RUNNING, RunOutcome, RunState};
use super::process;
use super::run::{ids_json, stale};
use crate::db::sql::Param;
use crate::db::{Database, DbError, Record};

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
    /// Running, or how it ended; a `running` run whose process is gone from this host, or whose
    /// heartbeat is older than the run lease, counts as interrupted.
    pub outcome: RunState,
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

/// The latest `limit` runs, newest first, a dead `running` run shown as interrupted (left
/// `running` in the table until a run of the same roots starts). A word in `outcome` that no
/// version of the tool writes reads as failed.
pub async fn list_runs(database: &Database, limit: u64, run_lease: Duration) -> Result<Vec<RunRecord>, DbError> {
    if !database.table_exists("cascade_run").await? {
        return Ok(Vec::new());
    }
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT ")
        .text("id")
        .push(" AS id, ")
        .push(&backend.timestamp_text("started_at"))
        .push(" AS started_at, ");
    sql.push(&backend.timestamp_text("finished_at"));
    sql.push(" AS finished_at, actor, command, root_model, root_ids, CASE WHEN ");
    stale(&mut sql, run_lease);
    sql.push(" THEN ")
        .bind_text(RunOutcome::Interrupted.as_str())
        .push(" ELSE outcome END AS outcome, \"rows\", error, ");
    sql.text("resumes").push(" AS resumes, host, ").text("pid").push(" AS pid, process FROM cascade_run ");
    // The table's column, not the text alias of the same name (which would sort `9` after `10`).
    sql.push("ORDER BY cascade_run.id DESC LIMIT ").bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let rows = database.fetch_records(&sql.finish()).await?;
    rows.into_iter()
        .map(|row| {
            let state = RunState::parse(&row.text("outcome")?).unwrap_or(RunState::Ended(RunOutcome::Failed));
            Ok(RunRecord {
                id: row.parsed("id")?,
                started_at: row.text("started_at")?,
                finished_at: row.optional_text("finished_at")?,
                actor: row.text("actor")?,
                command: row.text("command")?,
                root_model: row.text("root_model")?,
                root_ids: json_column(row.text("root_ids")?),
                outcome: match state {
                    RunState::Running if process_gone(&row)? => RunState::Ended(RunOutcome::Interrupted),
                    state => state,
                },
                rows: row.optional_text("rows")?.map(json_column),
                error: row.optional_text("error")?,
                resumes: row.optional("resumes")?,
            })
        })
        .collect()
}

/// Whether a run of `root_model` and `root_ids` is `running` with a heartbeat newer than
/// `run_lease` and a process not known to be gone: its process is still at work.
pub(crate) async fn run_alive(
    database: &Database,
    root_model: &str,
    root_ids: &[String],
    run_lease: Duration,
) -> Result<bool, DbError> {
    let ids = ids_json(root_ids);
    let mut sql = database.sql();
    sql.push("SELECT host, ").text("pid").push(" AS pid, process FROM cascade_run WHERE outcome = ").bind_text(RUNNING);
    sql.push(" AND NOT (");
    stale(&mut sql, run_lease);
    sql.push(") AND root_model = ").bind_text(root_model).push(" AND root_ids = ").bind_text(&ids);
    for run in database.fetch_records(&sql.finish()).await? {
        if !process_gone(&run)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the run whose `host`, `pid` and `process` the row holds is known to have lost its
/// process.
fn process_gone(run: &Record) -> Result<bool, DbError> {
    let (host, process) = (run.optional_text("host")?, run.optional_text("process")?);
    Ok(process::is_gone(host.as_deref(), run.optional("pid")?, process.as_deref()))
}
