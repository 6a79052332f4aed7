//! A run's row in `cascade_run`: recorded when it starts, kept alive by a heartbeat while it
//! runs, given its rows with every transaction that does something, and its outcome at the end.
//! Deletions, clean-ups and partition prunes all record themselves through a [`Run`].

use std::time::{Duration, SystemTime};

use super::outcome::{RUNNING, RunOutcome, RunRows};
use super::process;
use crate::db::sql::{Param, SqlBuilder};
use crate::db::{Database, DbError, Transaction, WriterLock};

/// What a run is about, as `cascade_run` records it: a rerun of the same roots is recognised as
/// resuming an interrupted run of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunStart<'a> {
    /// Who runs it.
    pub actor: &'a str,
    /// The command line, database passwords redacted.
    pub command: &'a str,
    /// The root model (a clean-up of several models: `a, b`).
    pub root_model: &'a str,
    /// The root ids (a clean-up: what it cleans, such as `event.project_id`).
    pub root_ids: &'a [String],
}

/// Which runs a run that must run alone may not start beside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alone {
    /// Runs of the same root model and ids (the same orphans clean-up: they share checkpoints).
    SameRoots,
    /// Runs of the same root model, whatever their ids (any duplicates clean-up of the model, a
    /// deletion of some of its rows: each could remove the row another keeps).
    SameModel,
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
            (Some(_), Some(pid)) if process::is_local(self.host.as_deref(), self.process.as_deref()) => {
                write!(formatter, ", process {pid} on this host")
            }
            (Some(host), Some(pid)) => write!(formatter, ", process {pid} on {host}"),
            _ => Ok(()),
        }
    }
}

/// A run recorded in `cascade_run` and running: its heartbeat task keeps the row fresh until the
/// handle is dropped, so that a run whose process died is told from one still at work.
#[derive(Debug)]
pub(crate) struct Run {
    database: Database,
    id: i64,
    resumes: Option<i64>,
    heartbeat: tokio::task::JoinHandle<()>,
    _held: Held,
}

/// The runs this process recorded and still holds the handle of, each with how many handles
/// (two databases may hand out the same id). A row recorded by this very process whose run is
/// not here ended without recording it (the database was gone when it tried), so it is known
/// dead at once, as a run of a killed process is: the next run of its roots resumes it.
static HELD: std::sync::Mutex<std::collections::BTreeMap<i64, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// A run id in [`HELD`] while this lives: taken before the run's row commits, so no other task
/// of the process sees the row without it.
#[derive(Debug)]
struct Held(i64);

impl Held {
    fn new(id: i64) -> Self {
        *HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(id).or_default() += 1;
        Self(id)
    }

    fn is_held(id: i64) -> bool {
        HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains_key(&id)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.0) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.0);
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

impl Run {
    /// Records the start of a run, with a first heartbeat and its process, and starts
    /// heartbeating it every quarter of `lease`. Earlier runs of the same roots still marked
    /// `running` whose process died (on this host), or whose heartbeat is older than `lease`, are
    /// marked `interrupted`, and the new run records that it resumes the latest of them.
    pub(crate) async fn start(database: &Database, start: RunStart<'_>, lease: Duration) -> Result<Self, DbError> {
        let mut transaction = database.begin_write().await?;
        let earlier = end_dead_runs(database, &mut transaction, start, lease).await?;
        let id = insert(database, &mut transaction, start, earlier.resumes).await?;
        let held = Held::new(id);
        transaction.commit().await?;
        Ok(Self::alive(database, held, earlier.resumes, lease))
    }

    /// [`Run::start`] for a run that must not run beside another (`alone`: of the same roots, or
    /// of the same model): while one is running, nothing is recorded and that run is returned
    /// instead.
    pub(crate) async fn start_alone(
        database: &Database,
        start: RunStart<'_>,
        alone: Alone,
        lease: Duration,
    ) -> Result<Result<Self, LiveRun>, DbError> {
        let mut transaction = database.begin_write().await?;
        transaction.lock_writers(WriterLock::RunStart).await?;
        let mut earlier = end_dead_runs(database, &mut transaction, start, lease).await?;
        if alone == Alone::SameModel {
            let of_model = running(database, &mut transaction, start.root_model, None, lease).await?;
            earlier.live.extend(of_model.into_iter().filter(|(_, dead)| !dead).map(|(run, _)| run));
        }
        if let Some(live) = earlier.live.pop() {
            transaction.commit().await?;
            return Ok(Err(live));
        }
        let id = insert(database, &mut transaction, start, earlier.resumes).await?;
        let held = Held::new(id);
        transaction.commit().await?;
        Ok(Ok(Self::alive(database, held, earlier.resumes, lease)))
    }

    fn alive(database: &Database, held: Held, resumes: Option<i64>, lease: Duration) -> Self {
        let id = held.0;
        let every = (lease / 4).max(Duration::from_millis(100));
        let beating = database.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if let Err(error) = heartbeat(&beating, id).await {
                    tracing::debug!(%error, run = id, "run heartbeat failed");
                }
            }
        });
        Self { database: database.clone(), id, resumes, heartbeat, _held: held }
    }

    /// The run's id in `cascade_run` (the archive's file names carry it).
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    /// The interrupted run of the same roots that this one resumes.
    pub(crate) fn resumes(&self) -> Option<i64> {
        self.resumes
    }

    /// Records how the run ended, with what it did and the error that stopped it.
    pub(crate) async fn finish(self, outcome: RunOutcome, rows: &RunRows, error: Option<&str>) -> Result<(), DbError> {
        let mut transaction = self.database.begin_write().await?;
        self.finish_in(&mut transaction, outcome, rows, error).await?;
        transaction.commit().await
    }

    /// [`Run::finish`] inside `transaction`, so the run is recorded as ended exactly when what
    /// it did last commits (a dropped partition).
    pub(crate) async fn finish_in(
        &self,
        transaction: &mut Transaction,
        outcome: RunOutcome,
        rows: &RunRows,
        error: Option<&str>,
    ) -> Result<(), DbError> {
        let mut sql = SqlBuilder::new(transaction.backend());
        sql.push("UPDATE cascade_run SET finished_at = CURRENT_TIMESTAMP, \"rows\" = ").bind_text(&rows.json());
        sql.push(", outcome = ").bind_text(outcome.as_str()).push(", error = ");
        match error {
            Some(error) => sql.bind_text(&crate::secret::redact(error)),
            None => sql.push("NULL"),
        };
        sql.push(" WHERE id = ").bind(Param::integer(self.id));
        transaction.execute(&sql.finish()).await?;
        Ok(())
    }
}

/// Records `rows` as what the run `id` did so far, in the transaction that did the last of it,
/// so a run killed after any commit shows what it committed. By id: a deletion that is one batch
/// of a caller's run records into the caller's row.
pub(crate) async fn record_rows(transaction: &mut Transaction, id: i64, rows: &RunRows) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("UPDATE cascade_run SET \"rows\" = ")
        .bind_text(&rows.json())
        .push(" WHERE id = ")
        .bind(Param::integer(id));
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// The run is alive.
async fn heartbeat(database: &Database, id: i64) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_run SET heartbeat = ").timestamp(SystemTime::now());
    sql.push(" WHERE id = ").bind(Param::integer(id));
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// The runs of the same roots still marked `running` when a run starts.
struct EarlierRuns {
    /// The latest of those whose process died, now marked `interrupted`.
    resumes: Option<i64>,
    /// Those still running, oldest first.
    live: Vec<LiveRun>,
}

/// Marks the runs of `start`'s roots still `running` whose process died as `interrupted`, and
/// returns the live ones and the run a new one resumes: the latest of those, else the latest run
/// of the same roots when it was interrupted (stopped by a signal or `--max-batches`).
async fn end_dead_runs(
    database: &Database,
    transaction: &mut Transaction,
    start: RunStart<'_>,
    lease: Duration,
) -> Result<EarlierRuns, DbError> {
    let mut earlier = EarlierRuns { resumes: None, live: Vec::new() };
    for (run, dead) in running(database, transaction, start.root_model, Some(start.root_ids), lease).await? {
        if !dead {
            earlier.live.push(run);
            continue;
        }
        // Only while it is still `running`: a run that finished since it was read keeps its outcome.
        let mut mark = database.sql();
        mark.push("UPDATE cascade_run SET outcome = ").bind_text(RunOutcome::Interrupted.as_str());
        mark.push(", finished_at = CURRENT_TIMESTAMP WHERE id = ").bind(Param::integer(run.id));
        mark.push(" AND outcome = ").bind_text(RUNNING);
        if transaction.execute(&mark.finish()).await? > 0 {
            earlier.resumes = Some(run.id);
        }
    }
    if earlier.resumes.is_none() {
        let mut latest = database.sql();
        latest
            .push("SELECT ")
            .text("id")
            .push(" AS id FROM cascade_run WHERE id = (SELECT MAX(id) FROM cascade_run WHERE ");
        latest.push("root_model = ").bind_text(start.root_model);
        latest.push(" AND root_ids = ").bind_text(&ids_json(start.root_ids));
        latest.push(") AND outcome = ").bind_text(RunOutcome::Interrupted.as_str());
        let interrupted = transaction.fetch_records(&latest.finish()).await?;
        earlier.resumes = interrupted.first().map(|run| run.parsed("id")).transpose()?;
    }
    Ok(earlier)
}

/// The runs of `root_model` (of `root_ids` only, when given; else any run one of whose models it
/// is) still marked `running`, oldest first, each with whether it is dead: its process gone from
/// this host, or its heartbeat older than `lease`.
async fn running(
    database: &Database,
    transaction: &mut Transaction,
    root_model: &str,
    root_ids: Option<&[String]>,
    lease: Duration,
) -> Result<Vec<(LiveRun, bool)>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT ").text("id").push(" AS id, actor, ").push(&database.backend().timestamp_text("started_at"));
    sql.push(" AS started_at, host, ").text("pid").push(" AS pid, process, CASE WHEN ");
    stale(&mut sql, lease);
    sql.push(" THEN 'stale' END AS stale, root_model FROM cascade_run WHERE outcome = ").bind_text(RUNNING);
    if let Some(root_ids) = root_ids {
        sql.push(" AND root_model = ").bind_text(root_model).push(" AND root_ids = ").bind_text(&ids_json(root_ids));
    }
    // The table's column, not the text alias of the same name (which would sort `9` after `10`).
    sql.push(" ORDER BY cascade_run.id");
    let mut runs = Vec::new();
    for row in transaction.fetch_records(&sql.finish()).await? {
        // A clean-up of several models records them as `a, b`: any run of the model counts.
        if root_ids.is_none() && !row.text("root_model")?.split(", ").any(|model| model == root_model) {
            continue;
        }
        let run = LiveRun {
            id: row.parsed("id")?,
            actor: row.text("actor")?,
            started_at: row.text("started_at")?,
            host: row.optional_text("host")?,
            pid: row.optional("pid")?,
            process: row.optional_text("process")?,
        };
        let (host, process) = (run.host.as_deref(), run.process.as_deref());
        let dead = row.optional_text("stale")?.is_some()
            || process::is_gone(host, run.pid, process)
            || (process::is_this(host, run.pid, process) && !Held::is_held(run.id));
        runs.push((run, dead));
    }
    Ok(runs)
}

async fn insert(
    database: &Database,
    transaction: &mut Transaction,
    start: RunStart<'_>,
    resumes: Option<i64>,
) -> Result<i64, DbError> {
    let ids = ids_json(start.root_ids);
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome, host, pid, process, heartbeat, ");
    sql.push("resumes) VALUES (");
    sql.binds([start.actor, start.command, start.root_model, &ids, RUNNING, process::this_host()].map(Param::text));
    sql.push(", ").bind(Param::integer(process::this_pid())).push(", ");
    match process::this_process() {
        Some(process) => sql.bind_text(process),
        None => sql.push("NULL"),
    };
    sql.push(", ").timestamp(SystemTime::now());
    match resumes {
        Some(id) => sql.push(", ").bind(Param::integer(id)),
        None => sql.push(", NULL"),
    };
    sql.push(") RETURNING ").text("id").push(" AS id");
    let rows = transaction.fetch_records(&sql.finish()).await?;
    rows.first().map_or_else(|| Err(DbError::NoRowReturned("cascade_run")), |run| run.parsed("id"))
}

/// Root ids as `cascade_run.root_ids` holds them: a JSON array of texts.
pub(super) fn ids_json(root_ids: &[String]) -> String {
    serde_json::Value::from_iter(root_ids.iter().map(|id| serde_json::json!(id))).to_string()
}

/// `cascade_run` rows still `running` whose heartbeat is older than `lease` (or that never had
/// one: runs recorded before heartbeats existed).
pub(super) fn stale(sql: &mut SqlBuilder, lease: Duration) {
    let cutoff = SystemTime::now().checked_sub(lease).unwrap_or(SystemTime::UNIX_EPOCH);
    sql.push("outcome = ").bind_text(RUNNING).push(" AND (heartbeat IS NULL OR heartbeat < ").timestamp(cutoff);
    sql.push(")");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Run, RunStart};
    use crate::db::sql::Statement;
    use crate::db::{Access, Database};

    async fn outcomes(database: &Database) -> Vec<Vec<Option<String>>> {
        let sql = "SELECT CAST(id AS TEXT), outcome, CAST(resumes AS TEXT) FROM cascade_run ORDER BY id";
        database.fetch_texts(&Statement { sql: sql.to_owned(), params: Vec::new() }).await.unwrap()
    }

    /// A run this process recorded and dropped without recording its end (the database was gone
    /// when it tried) is known dead at once: the next run of its roots marks it interrupted and
    /// resumes it, while a run whose handle is held is left alone.
    #[tokio::test]
    async fn a_run_of_this_process_whose_handle_is_gone_is_resumed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        std::fs::File::create(&path).unwrap();
        let database = Database::connect(&format!("sqlite://{}", path.display()), Access::ReadWrite).await.unwrap();
        crate::db::migrate(&database).await.unwrap();
        let ids = ["1".to_owned()];
        let start = RunStart { actor: "test", command: "test", root_model: "item", root_ids: &ids };
        let lease = Duration::from_secs(3600);

        let first = Run::start(&database, start, lease).await.unwrap();
        let beside = Run::start(&database, start, lease).await.unwrap();
        assert_eq!(beside.resumes(), None, "a held run is alive");
        drop(first);
        let next = Run::start(&database, start, lease).await.unwrap();
        assert_eq!(next.resumes(), Some(1));
        let expected = |id: &str, outcome: &str, resumes: Option<&str>| {
            vec![Some(id.to_owned()), Some(outcome.to_owned()), resumes.map(str::to_owned)]
        };
        assert_eq!(
            outcomes(&database).await,
            [expected("1", "interrupted", None), expected("2", "running", None), expected("3", "running", Some("1"))]
        );
        drop((beside, next));
        database.close().await;
    }
}
