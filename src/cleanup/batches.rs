//! The confirmed side of a clean-up command: rows found by a query are removed batch after
//! batch, each batch of root keys (ascending) deleted through the engine as the roots of their
//! own cascades. The whole command is one `cascade_run` row; every batch advances a checkpoint in
//! `cascade_checkpoint` in the transaction that deletes its roots, so a rerun after kill -9
//! continues after the last committed root instead of scanning the done range again. Batches
//! share the rate-limit buckets of their plan, and a pause (`sleep`) separates them.
//!
//! `BatchRun::scan` is the one loop over a scan's batches (from its checkpoint, batch after
//! batch, until it is through, stopped or at `--max-batches`); a `Scan` says how its rows are
//! read and what a batch of them gets.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::Serialize;
use tracing::info;

use crate::audit::{self, Alone, LiveRun, Run, RunOutcome, RunRows, RunStart};
use crate::config::OnDelete;
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement};
use crate::db::{Backend, DbError, key_value};
use crate::engine::{DeleteError, DeleteOptions, Engine, Pacing, RootGuard, RunBatch, Summary};
use crate::planner::Plan;
use crate::schema::{Column, Table};

/// The fewest and the most root keys a batch may hold.
pub const BATCH_SIZES: std::ops::RangeInclusive<u64> = 50..=5_000;

/// The first batch's size when none is given.
pub(crate) const DEFAULT_BATCH_SIZE: u64 = 500;

/// How a confirmed clean-up runs.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Root keys per batch (see [`BATCH_SIZES`]). `None`: batches start at
    /// `DEFAULT_BATCH_SIZE` and, like chunks, grow or shrink so that each batch's longest
    /// transaction takes about `[settings] target_chunk_ms` (unless `adaptive = false`).
    pub batch_size: Option<u64>,
    /// The pause between two batches.
    pub sleep: Duration,
    /// Stop (as interrupted: a rerun continues) after this many batches.
    pub max_batches: Option<u64>,
    /// Ignore the checkpoints of an earlier, interrupted run and start from the lowest key.
    pub restart: bool,
    /// Directory for the gzip JSON-lines archive of every deleted row.
    pub archive: Option<PathBuf>,
    /// Who runs it, for `cascade_run`.
    pub actor: String,
    /// The command line, for `cascade_run`.
    pub command: String,
    /// Set by the caller to stop between two chunks.
    pub stop: Option<Arc<AtomicBool>>,
    /// Stop (as interrupted) before a batch once the run has used this much.
    pub budget: Option<Budget>,
}

/// What one run may use before it stops between two batches, so that other work gets its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Rows deleted and nullified.
    pub rows: u64,
    /// Time since the run started.
    pub time: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            batch_size: None,
            sleep: Duration::from_millis(100),
            max_batches: None,
            restart: false,
            archive: None,
            actor: crate::engine::default_actor(),
            command: String::new(),
            stop: None,
            budget: None,
        }
    }
}

/// What a confirmed clean-up did; the JSON shape of its `--format json` output.
#[derive(Debug, Clone, Serialize)]
pub struct CleanupSummary {
    /// Its `cascade_run` row (the archive files carry this id).
    pub run: i64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// The interrupted run of the same command that this one continues.
    pub resumes: Option<i64>,
    /// Rows deleted per model: the roots and everything below them.
    pub deleted: IndexMap<String, u64>,
    /// Rows whose relation column was set to NULL, per model.
    pub nullified: IndexMap<String, u64>,
    /// Children of removed duplicates pointed at the kept row (`duplicates --merge`), per model.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub re_pointed: IndexMap<String, u64>,
    /// Outbox tombstones written.
    pub outbox_rows: u64,
    /// Batches done.
    pub batches: u64,
    /// The longest batch, in milliseconds (its transactions and the rate-limit waits inside it).
    #[serde(serialize_with = "crate::engine::whole_microseconds")]
    pub slowest_batch_ms: f64,
    /// The longest transaction, in milliseconds.
    #[serde(serialize_with = "crate::engine::whole_microseconds")]
    pub max_transaction_ms: f64,
    /// Roots left in place because their status does not allow a deletion.
    pub skipped: Vec<String>,
    /// From start to end, in milliseconds.
    #[serde(serialize_with = "crate::engine::whole_microseconds")]
    pub elapsed_ms: f64,
    /// Why the run stopped before the end (`--max-batches`), when it did.
    pub stopped_early: Option<String>,
    /// The scans that continued after the checkpoint an earlier run left (scan → key): rows
    /// below it were done by that run, and rows that turned into orphans or duplicates there
    /// since were not looked at (the next run looks at the whole table).
    pub continued_after: IndexMap<String, String>,
}

impl CleanupSummary {
    /// Rows deleted and nullified.
    pub fn rows(&self) -> u64 {
        self.deleted.values().chain(self.nullified.values()).sum()
    }
}

/// Why a clean-up stopped.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A statement of the clean-up itself failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// Deleting a batch failed.
    #[error(transparent)]
    Delete(#[from] DeleteError),
    /// The batch size is out of range.
    #[error("a batch holds {} to {} rows, not {size}", BATCH_SIZES.start(), BATCH_SIZES.end())]
    BatchSize {
        /// The size asked for.
        size: u64,
    },
    /// A run on the same rows is running: the same clean-up (its checkpoints are that run's), or
    /// for duplicates any run on the model (each could remove the row the other keeps).
    #[error(
        "a run on the same rows is already running ({running}): two at once would redo each other's batches or \
         remove the rows each other keeps. Wait for it to finish, or stop it (Ctrl-C stops it after its batch) and \
         run this again; if it ran on another host and its process is gone, run this again once its heartbeat is \
         older than [settings] run_lease_seconds ({} s)",
        lease.as_secs()
    )]
    AlreadyRunning {
        /// The run that is running.
        running: Box<LiveRun>,
        /// How long a run's heartbeat may be silent before it counts as interrupted.
        lease: Duration,
    },
}

/// Whether the run goes on after a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Take the next batch.
    Continue,
    /// Stopped: by the caller's flag, or by `--max-batches`.
    Stop,
}

/// What the read of a scan's next batch found.
pub(crate) enum Read<B> {
    /// Rows to clean.
    Batch(B),
    /// None this time, though more may follow (rows read ahead that need no cleaning any more).
    Nothing,
    /// None: the scan is through.
    Through,
}

/// One scan of a confirmed clean-up, such as a relation's orphans or a model's duplicates: its
/// rows, read in key order a batch at a time, and what a batch of them gets. [`BatchRun::scan`]
/// runs it.
pub(crate) trait Scan {
    /// The rows of one batch, as a read finds them.
    type Batch;
    /// Why a read or a batch fails.
    type Error: From<BatchError>;

    /// The name of its checkpoint (the last key a committed batch cleaned), in
    /// `cascade_checkpoint`.
    fn checkpoint(&self) -> &str;

    /// The first read starts after the key `after` (from the lowest key without it).
    fn start_after(&mut self, after: Option<String>);

    /// The next batch of at most `size` keys, after those read before.
    async fn read(&mut self, size: u64) -> Result<Read<Self::Batch>, Self::Error>;

    /// Whether the last read was the scan's last: it found every key left, and none of them
    /// waits to be handed out.
    fn through(&self) -> bool;

    /// Cleans `batch` in `run` (with [`BatchRun::delete_batch`] or [`BatchRun::nullify_batch`],
    /// which advance the checkpoint and pause after it).
    async fn clean(&self, run: &mut BatchRun<'_>, batch: Self::Batch) -> Result<Next, Self::Error>;
}

/// One confirmed clean-up in progress: its run row, its heartbeat and what it did so far.
pub(crate) struct BatchRun<'a> {
    engine: &'a Engine,
    options: BatchOptions,
    summary: CleanupSummary,
    started: Instant,
    /// When the current batch started: before the query that picks its rows.
    batch_started: Instant,
    /// The longest transaction of the current batch that the caller ran itself (a merge's).
    batch_longest: Duration,
    /// The run's `cascade_run` row, heartbeating while the clean-up runs.
    run: Run,
    /// Rate-limit buckets per plan root, shared by that plan's batches.
    pacing: IndexMap<String, Pacing>,
    /// The plan roots whose lookups were checked before their first batch.
    checked: std::collections::HashSet<String>,
    /// The root keys the first batch of a scan takes.
    first_batch_size: u64,
    /// The root keys the next batch of a scan takes, once it differs from the first's: each
    /// scan (a relation's orphans, a model's duplicates) adapts to its own rows.
    batch_sizes: IndexMap<String, u64>,
    /// Whether batch sizes follow the batches' transaction times.
    adaptive: bool,
    /// Whether the run stopped because its budget was spent.
    out_of_budget: bool,
}

impl<'a> BatchRun<'a> {
    /// Records the run: `root_model` and `targets` (what it cleans, such as `event.project_id`)
    /// stand in `cascade_run` for the root model and ids, so a rerun of the same command is
    /// recognised as resuming an interrupted one.
    pub(crate) async fn start(
        engine: &'a Engine,
        (root_model, targets): (&str, &[String]),
        alone: Alone,
        options: BatchOptions,
    ) -> Result<Self, BatchError> {
        let first_batch_size = options.batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        if !BATCH_SIZES.contains(&first_batch_size) {
            return Err(BatchError::BatchSize { size: first_batch_size });
        }
        let adaptive = options.batch_size.is_none() && engine.config().settings.adaptive();
        if let Some(dir) = &options.archive {
            crate::engine::Archive::check(dir).map_err(DeleteError::from)?;
        }
        let database = engine.database();
        crate::db::migrate(database).await?;
        let lease = engine.config().settings.run_lease();
        let start = RunStart { actor: &options.actor, command: &options.command, root_model, root_ids: targets };
        let run = Run::start_alone(database, start, alone, lease)
            .await?
            .map_err(|running| BatchError::AlreadyRunning { running: Box::new(running), lease })?;
        info!(run = run.id(), resumes = run.resumes(), command = %options.command, "clean-up started");
        Ok(Self {
            engine,
            summary: CleanupSummary {
                run: run.id(),
                outcome: RunOutcome::Succeeded,
                resumes: run.resumes(),
                deleted: IndexMap::new(),
                nullified: IndexMap::new(),
                re_pointed: IndexMap::new(),
                outbox_rows: 0,
                batches: 0,
                slowest_batch_ms: 0.0,
                max_transaction_ms: 0.0,
                skipped: Vec::new(),
                elapsed_ms: 0.0,
                stopped_early: None,
                continued_after: IndexMap::new(),
            },
            run,
            options,
            started: Instant::now(),
            batch_started: Instant::now(),
            batch_longest: Duration::ZERO,
            pacing: IndexMap::new(),
            checked: Default::default(),
            first_batch_size,
            batch_sizes: IndexMap::new(),
            adaptive,
            out_of_budget: false,
        })
    }

    /// Runs `scan` from its checkpoint, batch after batch, until it is through (its checkpoint
    /// then goes, so the next run scans everything: [`Next::Continue`]) or the run stops
    /// ([`Next::Stop`]: by the caller's flag, or by `--max-batches`).
    pub(crate) async fn scan<S: Scan>(&mut self, scan: &mut S) -> Result<Next, S::Error> {
        let name = scan.checkpoint().to_owned();
        scan.start_after(self.resume_from(&name).await?);
        while self.may_start_batch() {
            let batch = match scan.read(self.batch_size(&name)).await? {
                Read::Batch(batch) => batch,
                Read::Nothing => continue,
                Read::Through => {
                    self.finished_scan(&name).await?;
                    return Ok(Next::Continue);
                }
            };
            if scan.clean(self, batch).await? == Next::Stop {
                return Ok(Next::Stop);
            }
            // The scan's last batch: done, without another read (nor, with `--max-batches`, a
            // run that stops as if some were left).
            if scan.through() {
                self.finished_scan(&name).await?;
                return Ok(Next::Continue);
            }
        }
        Ok(Next::Stop)
    }

    /// Where a scan of `name` starts: after its checkpoint, unless `restart` asks to forget it.
    async fn resume_from(&mut self, name: &str) -> Result<Option<String>, BatchError> {
        if self.options.restart {
            return Ok(None);
        }
        let checkpoint = audit::checkpoint::position(self.engine.database(), name).await?;
        if let Some(position) = &checkpoint {
            self.summary.continued_after.insert(name.to_owned(), position.clone());
        }
        Ok(checkpoint)
    }

    /// The scan of `name` found nothing more: its checkpoint goes, so the next run scans everything.
    async fn finished_scan(&self, name: &str) -> Result<(), BatchError> {
        Ok(audit::checkpoint::remove_alone(self.engine.database(), name).await?)
    }

    /// The root keys the next batch of the scan `name` takes.
    fn batch_size(&self, name: &str) -> u64 {
        self.batch_sizes.get(name).copied().unwrap_or(self.first_batch_size)
    }

    /// After a batch of the scan `name` with `keys` root keys whose longest transaction took
    /// `longest`: the scan's next batch size, when it adapts.
    fn adapt(&mut self, name: &str, keys: usize, longest: Duration) {
        let (size, target) = (self.batch_size(name), self.engine.config().settings.target_chunk());
        if let (true, Some(next)) =
            (self.adaptive, crate::engine::next_chunk_size(size, keys as u64, longest, target, BATCH_SIZES))
        {
            self.batch_sizes.insert(name.to_owned(), next);
        }
    }

    /// Whether the caller asked to stop.
    fn stopping(&self) -> bool {
        self.options.stop.as_ref().is_some_and(|stop| stop.load(Ordering::SeqCst))
    }

    /// Whether another batch may start: not after a stop, nor past `--max-batches`. The batch's
    /// time counts from here, the query that picks its rows included.
    fn may_start_batch(&mut self) -> bool {
        self.batch_started = Instant::now();
        self.batch_longest = Duration::ZERO;
        if self.stopping() {
            self.summary.outcome = RunOutcome::Interrupted;
            return false;
        }
        if self.options.max_batches.is_some_and(|max| self.summary.batches >= max) {
            self.summary.outcome = RunOutcome::Interrupted;
            self.summary.stopped_early = Some(format!("--max-batches {} reached", self.summary.batches));
            return false;
        }
        if let Some(budget) = self.options.budget
            && (self.summary.rows() >= budget.rows || self.started.elapsed() >= budget.time)
        {
            self.summary.outcome = RunOutcome::Interrupted;
            let time = humantime::format_duration(budget.time);
            self.summary.stopped_early = Some(format!("its budget of {} rows or {time} spent", budget.rows));
            self.out_of_budget = true;
            return false;
        }
        true
    }

    /// Whether the run stopped because its budget was spent.
    pub(crate) fn out_of_budget(&self) -> bool {
        self.out_of_budget
    }

    /// Deletes the roots `keys` (ascending) of `plan`, each with everything below it, advancing
    /// the checkpoint `name` with every transaction that deletes roots; then pauses.
    pub(crate) async fn delete_batch(
        &mut self,
        plan: &Plan,
        keys: &[String],
        name: &str,
        root_guard: Option<RootGuard>,
    ) -> Result<Next, BatchError> {
        let pacing = self.pacing.entry(plan.root.model.clone()).or_insert_with(|| Pacing::for_plan(plan)).clone();
        self.refuse_undeletable(plan).await?;
        let within = RunBatch {
            run: self.summary.run,
            checkpoint: name.to_owned(),
            pacing,
            root_chunk_size: self.batch_size(name),
            lookups_checked: self.checked.contains(&plan.root.model),
            root_guard,
            rows_before: self.rows(),
        };
        let options = DeleteOptions {
            archive: self.options.archive.clone(),
            actor: self.options.actor.clone(),
            command: self.options.command.clone(),
            stop: self.options.stop.clone(),
            within: Some(within),
            ..DeleteOptions::default()
        };
        // What the chunks committed so far did, kept for a batch that fails halfway: they have
        // recorded it in the run's row, which the run's end must not take back.
        let mut committed = RunRows::default();
        let finished = match self.engine.run_to_end(plan, keys, options, |summary| committed = summary.run_rows()).await
        {
            Ok(finished) => finished,
            Err(error) => {
                self.add_rows(&committed);
                return Err(error.into());
            }
        };
        self.add(&finished.summary);
        let longest = Duration::from_secs_f64(finished.summary.max_chunk_ms / 1e3).max(self.batch_longest);
        self.adapt(name, keys.len(), longest);
        if finished.outcome == RunOutcome::Interrupted {
            self.summary.outcome = RunOutcome::Interrupted;
            return Ok(Next::Stop);
        }
        Ok(self.pause().await)
    }

    /// Refuses `plan` if a deletion by it would be refused before its first write (see
    /// [`Engine::refuse_undeletable`]): once per plan and run, not per batch (it can scan a child
    /// table on SQLite, and runs a statement per step). A caller that writes before a batch's
    /// deletion (a merge's re-pointing) calls it first.
    pub(crate) async fn refuse_undeletable(&mut self, plan: &Plan) -> Result<(), BatchError> {
        if !self.checked.contains(&plan.root.model) && self.engine.refuse_undeletable(plan).await? {
            self.checked.insert(plan.root.model.clone());
        }
        Ok(())
    }

    /// Children of the current batch's duplicates that the caller pointed at their kept rows.
    pub(crate) fn re_pointed(&mut self, rows: IndexMap<String, u64>) {
        for (model, count) in rows {
            *self.summary.re_pointed.entry(model).or_default() += count;
        }
    }

    /// A transaction of the current batch that the caller ran itself took `took`: it counts as
    /// the batch's, for the longest transaction and the next batch's size.
    pub(crate) fn transaction_done(&mut self, took: Duration) {
        self.batch_longest = self.batch_longest.max(took);
        self.summary.max_transaction_ms = self.summary.max_transaction_ms.max(took.as_secs_f64() * 1e3);
    }

    /// Runs `update`, which nullifies the rows of `model` among `keys` (ascending, in the
    /// database's order), with the checkpoint `name` advanced to the last key in the same
    /// transaction; then pauses.
    pub(crate) async fn nullify_batch(
        &mut self,
        update: &Statement,
        keys: &[String],
        model: &str,
        name: &str,
    ) -> Result<Next, BatchError> {
        let started = Instant::now();
        let mut transaction = self.engine.database().begin_write().await?;
        let rows = transaction.execute(update).await?;
        if let Some(last) = keys.last() {
            audit::checkpoint::save(&mut transaction, name, last).await?;
        }
        if rows > 0 {
            let mut done = self.rows();
            *done.of(OnDelete::Nullify, model) += rows;
            audit::record_rows(&mut transaction, self.summary.run, &done).await?;
        }
        transaction.commit().await?;
        let took = started.elapsed();
        self.charge_rate_limit(model, rows).await?;
        let summary = Summary {
            nullified: IndexMap::from([(model.to_owned(), rows)]),
            max_chunk_ms: took.as_secs_f64() * 1e3,
            ..Summary::default()
        };
        self.add(&summary);
        self.adapt(name, keys.len(), took);
        Ok(self.pause().await)
    }

    /// Charges `rows` of `model` to its rate limit, if it has one (a deletion's batches are
    /// charged by the engine).
    async fn charge_rate_limit(&mut self, model: &str, rows: u64) -> Result<(), BatchError> {
        let Some(option) = self.engine.config().model(model).and_then(|m| m.rate_limit.as_ref()) else { return Ok(()) };
        let option = option.value.clone();
        let rates = crate::engine::current_options(self.engine.config(), self.engine.database()).await?;
        let rate = rates.get(&option).copied().unwrap_or(0.0);
        let least_burst = self.first_batch_size;
        let pacing = self.pacing.entry(model.to_owned()).or_insert_with(|| Pacing::for_option(&option, least_burst));
        pacing.take(&option, rate, rows, self.options.stop.as_deref()).await;
        Ok(())
    }

    /// What the run deleted and nullified so far.
    fn rows(&self) -> RunRows {
        RunRows::default().plus(&self.summary.deleted, &self.summary.nullified)
    }

    /// Rows deleted and nullified, per model, to the run's.
    fn add_rows(&mut self, rows: &RunRows) {
        let sum = self.rows().plus(&rows.deleted, &rows.nullified);
        (self.summary.deleted, self.summary.nullified) = (sum.deleted, sum.nullified);
    }

    fn add(&mut self, summary: &Summary) {
        let took = self.batch_started.elapsed();
        self.add_rows(&summary.run_rows());
        self.summary.outbox_rows += summary.outbox_rows;
        self.summary.skipped.extend(summary.skipped.iter().cloned());
        self.summary.batches += 1;
        self.summary.slowest_batch_ms = self.summary.slowest_batch_ms.max(took.as_secs_f64() * 1e3);
        self.summary.max_transaction_ms = self.summary.max_transaction_ms.max(summary.max_chunk_ms);
    }

    /// The pause after a batch, cut short by a stop.
    async fn pause(&mut self) -> Next {
        match &self.options.stop {
            Some(stop) => crate::stop::pause(self.options.sleep, stop).await,
            None => tokio::time::sleep(self.options.sleep).await,
        }
        if self.stopping() {
            self.summary.outcome = RunOutcome::Interrupted;
            return Next::Stop;
        }
        Next::Continue
    }

    /// Records how the run ended (`error`: the failure that stopped it) with its rows per model,
    /// and logs the summary line.
    pub(crate) async fn finish(mut self, error: Option<&str>) -> Result<CleanupSummary, BatchError> {
        if error.is_some() {
            self.summary.outcome = RunOutcome::Failed;
        }
        self.summary.outcome.count();
        self.summary.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        let rows = self.rows();
        let summary = self.summary;
        let outcome = summary.outcome.as_str();
        self.run.finish(summary.outcome, &rows, error).await?;
        info!(
            run = summary.run,
            command = %self.options.command,
            outcome,
            duration_ms = summary.elapsed_ms.round(),
            rows = %rows.json(),
            batches = summary.batches,
            slowest_batch_ms = summary.slowest_batch_ms.round(),
            max_transaction_ms = summary.max_transaction_ms.round(),
            "clean-up finished"
        );
        Ok(summary)
    }
}

/// The table of `model` and its key column, resolved against the engine's schema: what a
/// clean-up deletes rows of, by a single-column key. Why not, when it cannot.
pub(crate) fn keyed_table<'e>(engine: &'e Engine, model: &str) -> Result<(&'e Table, &'e Column), String> {
    let (config, schema) = (engine.config(), engine.schema());
    let declared = config.model(model).ok_or_else(|| format!("no model `{model}`"))?;
    let table = schema.table(&declared.table.value).ok_or_else(|| format!("no table `{}`", declared.table.value))?;
    let key = match declared.key.as_ref().map(|key| &key.value) {
        None => "id",
        Some(key) => key.single().ok_or_else(|| {
            format!("the key of `{model}` is composite: a clean-up deletes rows by a single-column key")
        })?,
    };
    let column = table.column(key).ok_or_else(|| format!("`{}` has no column `{key}`", table.name))?;
    Ok((table, column))
}

/// The keys, as text in one JSON array in key order, of the rows that `rows` writes (` FROM …
/// WHERE …`, and what narrows them further): `key` is their key column as the statement names it.
pub(crate) fn key_array(backend: &'static dyn Backend, key: &str, rows: impl FnOnce(&mut SqlBuilder)) -> Statement {
    const KEY: &str = "cascade_key";
    const ORDER: &str = "cascade_order";
    let mut sql = SqlBuilder::new(backend);
    sql.push("SELECT ");
    backend.json_array_agg(&mut sql, KEY, ORDER);
    sql.push(" FROM (SELECT ").text(key).push(" AS ").identifier(KEY);
    sql.push(", ").push(key).push(" AS ").identifier(ORDER);
    rows(&mut sql);
    sql.push(") AS cascade_batch");
    sql.finish()
}

/// ` AND key > AFTER ORDER BY key LIMIT n`: the next `limit` keys of a scan after `after` (from the
/// lowest without it), `key` as the statement names the column.
pub(crate) fn next_keys(sql: &mut SqlBuilder, key: &str, key_type: &KeyType, after: Option<&str>, limit: u64) {
    self::after(sql, key, key_type, after);
    sql.push(" ORDER BY ").push(key).push(" LIMIT ").bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
}

/// `AND "alias"."key" > CHECKPOINT` when there is a checkpoint: the scan goes on after it.
pub(crate) fn after(sql: &mut SqlBuilder, column: &str, key_type: &KeyType, checkpoint: Option<&str>) {
    if let Some(position) = checkpoint {
        sql.push(" AND ").push(column).push(" > ").key_value(key_type, Param::Value(key_value(key_type, position)));
    }
}
