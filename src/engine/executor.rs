//! The executor: deletes a plan's rows children first, one chunk of one table per transaction.
//!
//! Its state is a stack of frames, one per plan node being worked on; `chunk()` advances it
//! until one transaction has committed (or the work is done), so a caller can interleave, pause
//! or stop between chunks. Nothing needs saving between runs: every step finds the rows that
//! are still there, so running the same deletion again after an interruption finishes it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use tracing::{debug, info};

use super::archive::Archive;
use super::chunk_size::ChunkSizes;
use super::sql::RootGuard;
use super::steps::StepSql;
use super::throttle::{Pacing, limits_on_path};
use super::{key_texts as texts, not_found, table_keys};
use crate::config::Config;
use crate::config::OnDelete;
use crate::db::sql::{KeyType, Param, SqlValue, Statement};
use crate::db::{Database, DbError, Failure, TextRows, Transaction, first_text, tables};
use crate::planner::{Plan, PlanNode};
use crate::schema::Schema;
use crate::telemetry;

/// How often an option's value is read again from `cascade_option` while deleting.
const OPTION_REFRESH: Duration = Duration::from_secs(1);

/// How a deletion runs, beyond what it deletes.
#[derive(Debug, Clone)]
pub struct DeleteOptions {
    /// Directory for the gzip JSON-lines archive of every deleted row.
    pub archive: Option<PathBuf>,
    /// Who runs the deletion, for `cascade_run`.
    pub actor: String,
    /// The command line, for `cascade_run`.
    pub command: String,
    /// How often a parent chunk is retried when children keep appearing under it.
    pub orphan_retries: u32,
    /// Set by the caller to stop: a rate-limit wait then ends at once, so the caller sees the
    /// flag right after the current chunk.
    pub stop: Option<Arc<AtomicBool>>,
    /// A `cascade_run` row the caller recorded and keeps alive (a clean-up command deleting
    /// batch after batch): the deletion records no run of its own, and its archive files carry
    /// that run's id.
    pub run: Option<i64>,
    /// A `cascade_checkpoint` name that every transaction deleting root rows advances, in that
    /// transaction, to the highest root key it deleted: the roots must be given in ascending key
    /// order, so that every root up to the checkpoint is done.
    pub checkpoint: Option<String>,
    /// Rate-limit buckets shared with the caller's other deletions of the same plan, so that
    /// together they keep to the limits; the deletion's own otherwise.
    pub pacing: Option<Pacing>,
    /// Root rows per transaction, instead of the root model's (adaptive) chunk size: a clean-up
    /// batch is one chunk of roots.
    pub root_chunk_size: Option<u64>,
    /// The caller read the root ids from the root table right before (a clean-up batch): they
    /// are not looked up again, only their status is.
    pub roots_read: bool,
    /// The caller has had [`crate::engine::Engine::refuse_undeletable`] check this plan's
    /// lookups (a clean-up, once for all its batches): they are not checked again.
    pub lookups_checked: bool,
    /// A condition each root row must still meet to be deleted, where the root has no children
    /// (whose rows would otherwise go first, whether the root then goes or not). A root with a
    /// status is marked in progress before the guard is tested: leave its rows out beforehand.
    pub root_guard: Option<RootGuard>,
    /// What the caller's run (`run`) deleted and nullified before this deletion: each
    /// transaction records those rows and its own, so far, in `cascade_run.rows`.
    pub rows_before: RunRows,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        Self {
            archive: None,
            actor: default_actor(),
            command: String::new(),
            orphan_retries: 5,
            stop: None,
            run: None,
            checkpoint: None,
            pacing: None,
            root_chunk_size: None,
            roots_read: false,
            lookups_checked: false,
            root_guard: None,
            rows_before: RunRows::default(),
        }
    }
}

/// Rows a run deleted and nullified, per model: what `cascade_run.rows` records, as
/// `{"deleted": {MODEL: ROWS}, "nullified": {MODEL: ROWS}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRows {
    /// Rows deleted per model.
    #[serde(default)]
    pub deleted: IndexMap<String, u64>,
    /// Rows whose relation column was set to NULL, per model.
    #[serde(default)]
    pub nullified: IndexMap<String, u64>,
}

impl RunRows {
    /// `deleted` and `nullified` added to these.
    pub fn plus(&self, deleted: &IndexMap<String, u64>, nullified: &IndexMap<String, u64>) -> Self {
        let mut sum = self.clone();
        for (into, from) in [(&mut sum.deleted, deleted), (&mut sum.nullified, nullified)] {
            for (model, rows) in from {
                *into.entry(model.clone()).or_default() += rows;
            }
        }
        sum
    }

    /// The counts of `model`'s rows of the step `action`: deleted, or nullified.
    pub fn of(&mut self, action: OnDelete, model: &str) -> &mut u64 {
        let counts = if action == OnDelete::Delete { &mut self.deleted } else { &mut self.nullified };
        counts.entry(model.to_owned()).or_default()
    }

    /// As `cascade_run.rows` holds them.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("counts serialize")
    }

    /// `cascade_run.rows` read back; `None` for another shape (a `partitions prune` run of an
    /// earlier version recorded `{MODEL: ROWS}`).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }
}

/// `deleted a 3, b 5; nullified c 2`, leaving out zeros; empty when nothing was done.
impl std::fmt::Display for RunRows {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut separator = "";
        for (kind, counts) in [("deleted", &self.deleted), ("nullified", &self.nullified)] {
            let done: Vec<String> =
                counts.iter().filter(|(_, rows)| **rows > 0).map(|(model, rows)| format!("{model} {rows}")).collect();
            if !done.is_empty() {
                write!(formatter, "{separator}{kind} {}", done.join(", "))?;
                separator = "; ";
            }
        }
        Ok(())
    }
}

/// How a run ended, as `cascade_run.outcome` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Everything below the roots is gone.
    Succeeded,
    /// Every root found was skipped: its status does not allow the deletion.
    Skipped,
    /// No requested root row exists (already deleted, or never was): nothing to do.
    NotFound,
    /// Stopped between chunks (Ctrl-C, SIGTERM, a lost claim); running it again finishes it.
    Interrupted,
    /// Stopped by an error.
    Failed,
}

impl RunOutcome {
    /// The word stored in `cascade_run.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Succeeded => "succeeded",
            RunOutcome::Skipped => "skipped",
            RunOutcome::NotFound => "not_found",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::Failed => "failed",
        }
    }

    /// Counts a deletion that ended this way (`cascade_deletions_total{outcome}`).
    pub(crate) fn count(self) {
        metrics::counter!(telemetry::DELETIONS, telemetry::OUTCOME => self.as_str()).increment(1);
    }
}

/// The user running the tool, for the audit trail: the operating-system user's name (see
/// [`crate::user`]), else `uid N`; never "unknown" and never taken from `$USER`.
pub fn default_actor() -> String {
    crate::user::current().display_name()
}

/// What a deletion did; the JSON shape of `delete --format json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Rows deleted per model.
    pub deleted: IndexMap<String, u64>,
    /// Rows whose relation column was set to NULL, per model.
    pub nullified: IndexMap<String, u64>,
    /// Transactions committed.
    pub chunks: u64,
    /// The longest of them, in milliseconds.
    pub max_chunk_ms: f64,
    /// The 99th percentile of their times (nearest rank), in milliseconds; set by
    /// [`Deletion::finish`].
    pub p99_chunk_ms: f64,
    /// How long each transaction took, in milliseconds, in commit order.
    #[serde(skip)]
    pub chunk_ms: Vec<f64>,
    /// Time since the deletion started, in milliseconds.
    pub elapsed_ms: f64,
    /// Outbox tombstones written.
    pub outbox_rows: u64,
    /// Root ids whose status did not allow the deletion.
    pub skipped: Vec<String>,
    /// Root ids that do not exist (already deleted, or never were).
    pub missing: Vec<String>,
    /// The interrupted run (stopped, or its process died) of the same roots that this run
    /// resumes.
    pub resumes: Option<i64>,
}

impl Summary {
    /// Rows deleted and nullified so far.
    pub fn rows(&self) -> u64 {
        self.deleted.values().chain(self.nullified.values()).sum()
    }

    /// Rows deleted and nullified so far, per model.
    pub fn run_rows(&self) -> RunRows {
        RunRows::default().plus(&self.deleted, &self.nullified)
    }
}

/// The `quantile` (0 to 1) of `values` by the nearest-rank method; 0 when there are none.
fn nearest_rank(values: &[f64], quantile: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}

/// Why a deletion stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// A statement failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// The archive could not be written.
    #[error(transparent)]
    Archive(#[from] super::archive::ArchiveError),
    /// The database refused to delete a chunk, probably for an undeclared foreign key.
    #[error(
        "the database refused to delete a chunk of `{model}`: {reason}. A table that references it is probably not \
         declared as its child: `cascade validate --database-url ...` with `require_all_references = true` finds it"
    )]
    Refused {
        /// The model whose rows were refused.
        model: String,
        /// The database's words.
        reason: String,
    },
    /// New child rows kept appearing under a chunk, however often it was retried.
    #[error(
        "rows keep appearing under a chunk of `{model}` (tried {attempts} times): something is still writing \
         children of the rows being deleted; stop it and run the deletion again"
    )]
    ChildrenKeepAppearing {
        /// The parent model.
        model: String,
        /// How often the chunk was tried.
        attempts: u32,
    },
    /// Foreign keys into tables the deletion deletes from that the config does not declare: the
    /// database would refuse the parents after their children were gone, so nothing is deleted.
    #[error(
        "{} foreign key(s) into the tables of this deletion are not declared in the config; nothing was deleted",
        .0.len()
    )]
    UnregisteredReferences(Vec<crate::diagnostic::Diagnostic>),
    /// A column declared without a type holds a key as text that reads as an integer: keys travel
    /// as text, so that row could not be told from the integer's.
    #[error(
        "`{table}.{column}` has no declared type and holds the text '{value}', which cascade cannot tell from the \
         integer {value}: nothing was deleted. Declare the column's type (INTEGER or TEXT) in a copy of the table, \
         or store its keys as one type"
    )]
    AmbiguousKey {
        /// The table.
        table: String,
        /// The column (a key or a relation column).
        column: String,
        /// One such value.
        value: String,
    },
    /// A relation column holds a value that SQLite's `=` matches with a parent's key but that
    /// the deletion's lookups by key would miss.
    #[error(
        "`{table}.{column}` holds '{value}', which SQLite takes for one of the parent's {key} keys but cascade \
         would not find by that key, leaving the row behind: nothing was deleted. Store the column's values as the \
         key stores its keys (UPDATE it to CAST({column} AS INTEGER) where it reads as an integer)"
    )]
    UnmatchedReference {
        /// The child table.
        table: String,
        /// Its relation column.
        column: String,
        /// One such value.
        value: String,
        /// The parent key's declared type.
        key: String,
    },
    /// The database cannot compare a relation's column with its parent's keys.
    #[error(
        "`{child}` cannot be looked up by the keys of `{parent}`: {reason}. Nothing was deleted: give the column \
         the key's type"
    )]
    UncomparableRelation {
        /// The child's table and relation column.
        child: String,
        /// The parent's table and key.
        parent: String,
        /// What the database said.
        reason: String,
    },
    /// A root id does not fit the key's type.
    #[error("id `{id}` is not an integer, but the key of `{table}` is")]
    NotAnInteger {
        /// The id as given.
        id: String,
        /// The root's table.
        table: String,
    },
}

impl DeleteError {
    /// Whether the deletion was refused before its first write (a column's values that no lookup
    /// could match, a relation the database cannot compare, an undeclared foreign key): nothing
    /// was deleted. (A key that is not an integer can also be met halfway, in a child's rows.)
    pub fn refused_before_any_write(&self) -> bool {
        matches!(
            self,
            DeleteError::AmbiguousKey { .. }
                | DeleteError::UnmatchedReference { .. }
                | DeleteError::UncomparableRelation { .. }
                | DeleteError::UnregisteredReferences(_)
        )
    }
}

/// One plan node being worked on, for one set of parent rows.
struct Frame<'a> {
    node: &'a PlanNode,
    step: StepSql<'a>,
    /// The statements of the node's children when every one is set-based (bulk or nullify): a
    /// chunk then goes with its children's rows in one transaction when they fit.
    set_based_children: Option<Vec<(&'a PlanNode, StepSql<'a>)>>,
    /// The parent chunk's keys (or the root ids) this node's rows are found by.
    matched: SqlValue,
    /// The rows the last fetch asked for.
    limit: u64,
    /// The last fetch found fewer rows than it asked for: once its chunk is done, nothing is left
    /// (a child inserted meanwhile is caught by the parent's check or foreign key).
    last_chunk: bool,
    state: State,
}

impl<'a> Frame<'a> {
    /// The set-based children whose rows go after the chunk's own in its transaction (`after`,
    /// see [`StepSql::child_goes_after`]), or those whose rows go before them.
    fn set_based_children_going(&self, after: bool) -> impl Iterator<Item = &(&'a PlanNode, StepSql<'a>)> {
        let children = self.set_based_children.iter().flatten().enumerate();
        children.filter(move |(index, _)| self.step.child_goes_after(*index) == after).map(|(_, child)| child)
    }
}

enum State {
    /// per_row: the next chunk of keys is to be read.
    Fetch,
    /// per_row: the chunk `keys` and its set-based children's rows, in one transaction.
    Together { keys: SqlValue },
    /// per_row: the children of the chunk `keys` are being deleted, `next` is the next one.
    Children { keys: SqlValue, next: usize, attempts: u32 },
    /// per_row: the chunk `keys` is deleted once its children are gone.
    Delete { keys: SqlValue, attempts: u32 },
    /// bulk or nullify: one set-based statement per chunk until none is left.
    SetBased,
}

/// What the transaction of a chunk together with its children did.
enum Together<'a> {
    /// Committed: the rows of each step.
    Done(Vec<(&'a PlanNode, u64)>),
    /// The children had more rows than one chunk of theirs: those deleted are committed (their
    /// rows; none where children that go after the chunk overflowed, which rolls it all back),
    /// the rest go chunk by chunk.
    ChildrenLeft(Vec<(&'a PlanNode, u64)>),
    /// Rows appeared under the chunk after its children were deleted: nothing was committed.
    ChildrenAppeared,
}

/// What one transaction did.
enum Outcome<'a> {
    /// Committed: the rows of the chunk's node and of each child deleted after them.
    Done(Vec<(&'a PlanNode, u64)>),
    /// Children appeared under the chunk meanwhile (or, with `refused`, a foreign key refused
    /// the delete): nothing was deleted.
    ChildrenAppeared { refused: Option<String> },
}

/// One deletion in progress: call [`Deletion::chunk`] until it returns `false`, then
/// [`Deletion::finish`]. Made by [`Engine::start`](super::Engine::start), which checks the
/// schema first.
pub struct Deletion<'a> {
    database: &'a Database,
    config: &'a Config,
    schema: &'a Schema,
    stack: Vec<Frame<'a>>,
    /// The root ids not yet handed to a root frame.
    pending_roots: PendingRoots,
    options: DeleteOptions,
    archive: Option<Archive>,
    pacing: Pacing,
    sizes: ChunkSizes,
    rates: IndexMap<String, f64>,
    rates_read: Option<Instant>,
    summary: Summary,
    /// Tombstones written in the open transaction: counted in `summary` once it commits.
    uncommitted_outbox_rows: u64,
    started: Instant,
    run_id: i64,
    /// Keeps `cascade_run.heartbeat` fresh while the deletion exists, unless the caller
    /// recorded the run.
    heartbeat: Option<tokio::task::JoinHandle<()>>,
    root: &'a PlanNode,
    /// No table of the plan is partitioned: its chunks' statements may skip planning for each
    /// key array ([`Database::begin_key_array_write`]), which would also skip pruning partitions.
    unpartitioned: bool,
    /// The root rows' keys.
    root_keys: Vec<String>,
    /// The statuses root rows had before this deletion (or an interrupted earlier run of it)
    /// marked them, as JSON: what the archive holds.
    statuses_before: IndexMap<String, String>,
}

impl Drop for Deletion<'_> {
    fn drop(&mut self) {
        if let Some(heartbeat) = &self.heartbeat {
            heartbeat.abort();
        }
    }
}

impl<'a> Deletion<'a> {
    /// Prepares the deletion of the root rows `ids`: creates the tool's tables if needed, skips
    /// roots whose status does not allow it, marks the others in progress, and records the run.
    pub(super) async fn start(
        database: &'a Database,
        config: &'a Config,
        schema: &'a Schema,
        plan: &'a Plan,
        ids: &[String],
        options: DeleteOptions,
    ) -> Result<Self, DeleteError> {
        let started = Instant::now();
        // An archive that cannot be written stops the deletion before anything is recorded.
        if let Some(dir) = &options.archive {
            Archive::check(dir)?;
        }
        if !options.lookups_checked {
            refuse_unmatched_lookups(database, config, plan, schema).await?;
        }
        crate::db::migrate(database).await?;
        let root = StepSql::new(&plan.root, None, config, database.backend(), Some(schema), options.archive.is_some());
        let ids = table_keys(&plan.root.table, &root.sql.key_type, ids.to_vec())?;

        let mut summary = Summary::default();
        let (proceeding, skipped, missing) = sort_roots(database, &root, &ids, options.roots_read).await?;
        (summary.skipped, summary.missing) = (skipped, missing);
        let proceeding = table_keys(&plan.root.table, &root.sql.key_type, proceeding)?;
        let mut statuses_before = IndexMap::new();
        if let (Some(status), false) = (root.status, is_empty(&proceeding)) {
            let mut transaction = database.begin_write().await?;
            let before = transaction
                .fetch_texts(&root.sql.statuses_before_marking(Param::Value(proceeding.clone()), status))
                .await?;
            let before: Vec<(String, String)> = before
                .into_iter()
                .filter_map(|row| {
                    Some((row.first().cloned().flatten()?, status_json(row.get(1).cloned().flatten()?, status)))
                })
                .collect();
            tables::remember_statuses(&mut transaction, &plan.root.table, &before).await?;
            transaction.execute(&root.sql.mark_in_progress(Param::Value(proceeding.clone()), status)).await?;
            transaction.commit().await?;
            statuses_before = tables::remembered_statuses(database, &plan.root.table, &texts(&proceeding)).await?;
        }
        let run_lease = config.settings.run_lease();
        let (run_id, heartbeat) = match options.run {
            Some(run) => (run, None),
            None => {
                let run = tables::start_run(
                    database,
                    &options.actor,
                    &options.command,
                    &plan.root.model,
                    &texts(&ids),
                    run_lease,
                )
                .await?;
                summary.resumes = run.resumes;
                (run.id, Some(tables::keep_run_alive(database.clone(), run.id, run_lease)))
            }
        };
        // A batch of the caller's run is the caller's to report.
        if options.run.is_none() {
            info!(run = run_id, resumes = summary.resumes, model = %plan.root.model, roots = texts(&proceeding).len(), skipped = summary.skipped.len(), "deletion started");
        }

        let root_keys = texts(&proceeding);
        let pacing = options.pacing.clone().unwrap_or_else(|| Pacing::for_plan(plan));
        // Each root chunk binds only its own ids: binding all of them to every chunk's fetch
        // made 100,000 ids quadratic.
        Ok(Self {
            database,
            config,
            schema,
            stack: Vec::new(),
            pending_roots: PendingRoots { keys: proceeding, next: 0 },
            archive: options.archive.as_deref().map(|dir| Archive::open(dir, run_id)).transpose()?,
            options,
            pacing,
            sizes: ChunkSizes::new(&config.settings),
            rates: config.option_values(),
            rates_read: None,
            summary,
            uncommitted_outbox_rows: 0,
            started,
            run_id,
            heartbeat,
            root: &plan.root,
            unpartitioned: plan.steps().iter().all(|node| schema.table(&node.table).is_some_and(|t| !t.partitioned)),
            root_keys,
            statuses_before,
        })
    }

    /// What was done so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Runs until one chunk's transaction has committed. `Ok(false)` when nothing is left.
    pub async fn chunk(&mut self) -> Result<bool, DeleteError> {
        loop {
            if self.stack.is_empty() {
                // Each root chunk binds only its own ids: binding all of them to every fetch made
                // 100,000 ids quadratic. The ids were read when the deletion started, so a per_row
                // root chunk needs no fetch: its keys are the ids.
                let Some(matched) = self.pending_roots.take(self.size_of(self.root)) else { return Ok(false) };
                let mut frame = self.frame_of(self.root, None, matched.clone());
                if !self.root.is_set_based() {
                    frame.limit = key_count(&matched);
                    frame.last_chunk = true;
                    frame.state = chunk_state(&frame, matched);
                }
                self.stack.push(frame);
            }
            let frame = self.stack.last_mut().expect("a frame was pushed");
            match &mut frame.state {
                State::Fetch => {
                    frame.limit = self.sizes.of(frame.node);
                    let statement = frame.step.sql.select_chunk(
                        Param::Value(frame.matched.clone()),
                        frame.step.status,
                        frame.limit,
                    );
                    let keys = self.database.fetch_array(&statement).await?;
                    if keys.is_empty() {
                        self.stack.pop();
                        continue;
                    }
                    frame.last_chunk = (keys.len() as u64) < frame.limit;
                    let keys = table_keys(&frame.node.table, &frame.step.sql.key_type, keys)?;
                    frame.state = chunk_state(frame, keys);
                }
                State::Together { keys } => {
                    let (keys, node) = (keys.clone(), frame.node);
                    let frame = self.stack.pop().expect("the frame being worked on");
                    let together = self.delete_together(&frame, &keys).await;
                    self.stack.push(frame);
                    let top = self.stack.last_mut().expect("the frame being worked on");
                    match together? {
                        Together::Done(steps) => {
                            self.charge_rate_limits(&steps).await;
                            self.chunk_done();
                            return Ok(true);
                        }
                        Together::ChildrenLeft(steps) => {
                            top.state = State::Children { keys, next: 0, attempts: 0 };
                            if steps.is_empty() {
                                continue;
                            }
                            self.charge_rate_limits(&steps).await;
                            return Ok(true);
                        }
                        Together::ChildrenAppeared => {
                            debug!(model = %node.model, "children appeared under a chunk; draining them again");
                            top.state = State::Children { keys, next: 0, attempts: 1 };
                        }
                    }
                }
                State::Children { keys, next, attempts } => {
                    let Some(child) = frame.node.children.get(*next) else {
                        frame.state = State::Delete { keys: keys.clone(), attempts: *attempts };
                        continue;
                    };
                    *next += 1;
                    let (parent, keys) = (frame.node, keys.clone());
                    let child_frame = self.frame_of(child, Some(parent), keys);
                    self.stack.push(child_frame);
                }
                State::Delete { keys, attempts } => {
                    let (keys, attempts) = (keys.clone(), *attempts);
                    let frame = self.stack.pop().expect("the frame being worked on");
                    let (outcome, node) = (self.delete_chunk(&frame, &keys).await, frame.node);
                    self.stack.push(frame);
                    match outcome? {
                        Outcome::Done(steps) => {
                            self.charge_rate_limits(&steps).await;
                            self.chunk_done();
                            return Ok(true);
                        }
                        Outcome::ChildrenAppeared { .. } if attempts < self.options.orphan_retries => {
                            debug!(model = %node.model, attempts, "children appeared under a chunk; draining them again");
                            let frame = self.stack.last_mut().expect("the frame being worked on");
                            frame.state = State::Children { keys, next: 0, attempts: attempts + 1 };
                        }
                        Outcome::ChildrenAppeared { refused } => {
                            let model = node.model.clone();
                            return Err(match refused {
                                Some(reason) => DeleteError::Refused { model, reason },
                                None => DeleteError::ChildrenKeepAppearing { model, attempts: attempts + 1 },
                            });
                        }
                    }
                }
                State::SetBased => {
                    let node = frame.node;
                    let limit = self.size_of(node);
                    let frame = self.stack.pop().expect("the frame being worked on");
                    let rows = self.set_based_chunk(&frame, limit).await;
                    self.stack.push(frame);
                    let rows = rows?;
                    if rows > 0 {
                        self.charge_rate_limits(&[(node, rows)]).await;
                    }
                    if self.is_last_set_based(self.stack.last().expect("the frame being worked on"), limit, rows) {
                        self.stack.pop();
                    }
                    if rows > 0 {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Rows per transaction of `node` now.
    fn size_of(&self, node: &PlanNode) -> u64 {
        match self.options.root_chunk_size {
            Some(size) if std::ptr::eq(node, self.root) => size,
            _ => self.sizes.of(node),
        }
    }

    /// The top frame's chunk is deleted: fetch the next, or, after its last, go back to its parent.
    fn chunk_done(&mut self) {
        let frame = self.stack.last_mut().expect("the frame being worked on");
        if frame.last_chunk {
            self.stack.pop();
        } else {
            frame.state = State::Fetch;
        }
    }

    /// Whether no requested root row exists.
    pub fn none_found(&self) -> bool {
        self.pending_roots.is_empty()
            && self.stack.is_empty()
            && self.summary.skipped.is_empty()
            && !self.summary.missing.is_empty()
    }

    /// Whether every requested root exists and was skipped by its status, so nothing is
    /// deleted (a scheduled deletion cancelled through its status).
    pub fn all_skipped(&self) -> bool {
        self.pending_roots.is_empty()
            && self.stack.is_empty()
            && self.summary.missing.is_empty()
            && !self.summary.skipped.is_empty()
    }

    /// Records how the run ended in `cascade_run` and closes the archive.
    pub async fn finish(mut self, outcome: RunOutcome, error: Option<&str>) -> Result<Summary, DeleteError> {
        // Counted even when recording the run fails below: the deletion ended all the same. A
        // batch of a caller's run is counted as part of that run, by the caller.
        if self.options.run.is_none() {
            outcome.count();
        }
        self.summary.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        self.summary.p99_chunk_ms = nearest_rank(&self.summary.chunk_ms, 0.99);
        let rows = self.summary.run_rows().json();
        if outcome == RunOutcome::Succeeded && !self.statuses_before.is_empty() {
            tables::forget_statuses(self.database, &self.root.table, &self.root_keys).await?;
        }
        let outcome = outcome.as_str();
        if self.options.run.is_none() {
            tables::finish_run(self.database, self.run_id, &rows, outcome, error).await?;
            info!(run = self.run_id, outcome, rows = self.summary.rows(), "deletion finished");
        }
        Ok(std::mem::take(&mut self.summary))
    }

    fn frame_of(&self, node: &'a PlanNode, parent: Option<&'a PlanNode>, matched: SqlValue) -> Frame<'a> {
        let step_of = |node, parent| {
            StepSql::new(node, parent, self.config, self.database.backend(), Some(self.schema), self.archive.is_some())
        };
        let mut step = step_of(node, parent);
        if std::ptr::eq(node, self.root) && node.children.is_empty() {
            step.sql.guard = self.options.root_guard.clone();
        }
        let set_based_children = node
            .has_only_set_based_children()
            .then(|| node.children.iter().map(|child| (child, step_of(child, Some(node)))).collect());
        Frame {
            node,
            step,
            set_based_children,
            matched,
            limit: node.chunk_size,
            last_chunk: false,
            state: initial_state(node),
        }
    }

    /// Deletes the chunk `keys` of `frame` and its set-based children's rows in one transaction,
    /// when the children's rows fit one chunk of theirs.
    async fn delete_together(&mut self, frame: &Frame<'a>, keys: &SqlValue) -> Result<Together<'a>, DeleteError> {
        let started = Instant::now();
        let mut transaction = self.begin().await?;
        let mut steps = Vec::new();
        for (child, step) in frame.set_based_children_going(false) {
            let child_rows = self.delete_children(&mut transaction, child, step, keys).await?;
            steps.push((*child, child_rows.rows));
            if child_rows.some_left {
                self.commit(transaction, &steps).await?;
                self.record_transaction(started, &steps);
                self.sizes.overflowed(frame.node, frame.limit, child_rows.counted, self.sizes.in_parent(child));
                return Ok(Together::ChildrenLeft(steps));
            }
        }
        if self.children_exist(&mut transaction, frame, true, keys).await? {
            transaction.rollback().await?;
            return Ok(Together::ChildrenAppeared);
        }
        let deleted = match self.delete_all(&mut transaction, frame.node, &frame.step, keys, true).await {
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                transaction.rollback().await?;
                if !self.database.backend().concurrent_writers() {
                    return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
                }
                return Ok(Together::ChildrenAppeared);
            }
            result => result?,
        };
        if let Some((child, child_rows)) = self.delete_children_after(&mut transaction, frame, keys, &mut steps).await?
        {
            // Too many to go with the chunk: they go first, chunk by chunk, as elsewhere.
            transaction.rollback().await?;
            self.sizes.overflowed(frame.node, frame.limit, child_rows.counted, self.sizes.in_parent(child));
            return Ok(Together::ChildrenLeft(Vec::new()));
        }
        self.advance_checkpoint(&mut transaction, frame.node, keys).await?;
        steps.push((frame.node, deleted));
        self.commit(transaction, &steps).await?;
        self.sizes.record(frame.node, frame.limit, key_count(keys), started.elapsed());
        for (child, rows) in &steps[..steps.len() - 1] {
            let fitting = self.sizes.in_parent(child);
            self.sizes.children_fit(frame.node, key_count(keys), *rows, fitting);
        }
        self.record_transaction(started, &steps);
        Ok(Together::Done(steps))
    }

    /// Deletes the rows of `child` under the chunk `keys`: all of them where a count found they
    /// fit one chunk of the child's (see [`crate::db::Backend::limited_delete_is_slow`]), else up
    /// to one chunk.
    async fn delete_children(
        &mut self,
        transaction: &mut Transaction,
        child: &PlanNode,
        step: &StepSql<'_>,
        keys: &SqlValue,
    ) -> Result<ChildRows, DeleteError> {
        let limit = self.sizes.in_parent(child);
        let matched = || Param::Value(keys.clone());
        let counted = if self.database.backend().limited_delete_is_slow() {
            let counted = transaction.fetch_texts(&step.sql.count_up_to(matched(), limit + 1)).await?;
            first_text(&counted).and_then(|n| n.parse::<u64>().ok())
        } else {
            None
        };
        let deleted = match counted {
            Some(rows) if rows <= limit => self.delete_all(transaction, child, step, keys, false).await,
            _ => {
                let statement = step.sql.set_based_chunk(matched(), step.returning.as_ref(), limit);
                self.run_write(transaction, &statement, child, step).await
            }
        };
        let rows = match deleted {
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                return Err(DeleteError::Refused { model: child.model.clone(), reason: error.to_string() });
            }
            result => result?,
        };
        Ok(ChildRows { rows, counted, some_left: counted.map_or(rows >= limit, |counted| counted > limit) })
    }

    /// Deletes, in `transaction` right after the chunk `keys` of `frame`, the rows of each child
    /// that goes after it (see [`StepSql::child_goes_after`]), adding them to `steps`; the child
    /// whose rows were more than one chunk of its own, after which the transaction is to be
    /// rolled back.
    async fn delete_children_after(
        &mut self,
        transaction: &mut Transaction,
        frame: &Frame<'a>,
        keys: &SqlValue,
        steps: &mut Vec<(&'a PlanNode, u64)>,
    ) -> Result<Option<(&'a PlanNode, ChildRows)>, DeleteError> {
        for (child, step) in frame.set_based_children_going(true) {
            let child_rows = self.delete_children(transaction, child, step, keys).await?;
            if child_rows.some_left {
                return Ok(Some((child, child_rows)));
            }
            steps.push((*child, child_rows.rows));
        }
        Ok(None)
    }

    /// Advances the caller's checkpoint to the last of `keys` when they are root rows just
    /// deleted in `transaction`.
    async fn advance_checkpoint(
        &self,
        transaction: &mut Transaction,
        node: &PlanNode,
        keys: &SqlValue,
    ) -> Result<(), DeleteError> {
        let (Some(name), true) = (&self.options.checkpoint, std::ptr::eq(node, self.root)) else { return Ok(()) };
        match texts(keys).last() {
            Some(last) => Ok(tables::save_checkpoint(transaction, name, last).await?),
            None => Ok(()),
        }
    }

    /// A chunk's transaction (see [`Database::begin_key_array_write`]).
    async fn begin(&mut self) -> Result<Transaction, DeleteError> {
        // Those of a transaction rolled back never counted, and its rows were never archived.
        self.uncommitted_outbox_rows = 0;
        if let Some(archive) = &mut self.archive {
            archive.discard();
        }
        Ok(self.database.begin_key_array_write(self.unpartitioned).await?)
    }

    /// Records the run's rows with those of `steps` in `cascade_run`, makes the chunk's archive
    /// lines durable, then commits: no row is gone before it is on disk, and a run killed after
    /// any commit shows what it did.
    async fn commit(&mut self, mut transaction: Transaction, steps: &[(&PlanNode, u64)]) -> Result<(), DeleteError> {
        if steps.iter().any(|(_, rows)| *rows > 0) {
            let mut rows = self.options.rows_before.plus(&self.summary.deleted, &self.summary.nullified);
            for (node, count) in steps {
                *rows.of(node.action, &node.model) += count;
            }
            tables::record_run_rows(&mut transaction, self.run_id, &rows.json()).await?;
        }
        if let Some(archive) = &mut self.archive {
            archive.sync()?;
        }
        transaction.commit().await?;
        self.summary.outbox_rows += std::mem::take(&mut self.uncommitted_outbox_rows);
        Ok(())
    }

    /// Whether rows of `frame`'s children that its transaction checks (see
    /// [`StepSql::new_children_check`]) reference the chunk `keys`.
    async fn children_exist(
        &self,
        transaction: &mut Transaction,
        frame: &Frame<'a>,
        together: bool,
        keys: &SqlValue,
    ) -> Result<bool, DeleteError> {
        let Some(check) = frame.step.new_children_check(together, &Param::Value(keys.clone())) else {
            return Ok(false);
        };
        let exists = transaction.fetch_texts(&check).await?;
        Ok(first_text(&exists) == Some("1"))
    }

    /// Charges the rows of each step (the top frame's node, or one of its children) to the rate
    /// limits on its path, waiting as long as they ask.
    async fn charge_rate_limits(&mut self, steps: &[(&'a PlanNode, u64)]) {
        for (node, rows) in steps {
            let path = self.stack.iter().map(|frame| frame.node).filter(|above| !std::ptr::eq(*above, *node));
            let limits = limits_on_path(path.chain(std::iter::once(*node)));
            self.wait_for_limits(limits, *rows).await;
        }
    }

    /// Deletes the chunk `keys` of `frame`, then the rows of its children that go after it,
    /// unless children appeared under it.
    async fn delete_chunk(&mut self, frame: &Frame<'a>, keys: &SqlValue) -> Result<Outcome<'a>, DeleteError> {
        let started = Instant::now();
        let step = &frame.step;
        let mut transaction = self.begin().await?;
        // Where writers are concurrent, a child that a foreign key ties to the chunk makes the
        // delete itself fail, and one that goes after the chunk's rows goes with them: the check
        // looks only at the others.
        if self.children_exist(&mut transaction, frame, false, keys).await? {
            transaction.rollback().await?;
            return Ok(Outcome::ChildrenAppeared { refused: None });
        }
        let deleted = match self.delete_all(&mut transaction, frame.node, step, keys, true).await {
            Ok(rows) => rows,
            // A child inserted after the check: the database's foreign key caught it.
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                transaction.rollback().await?;
                // Without concurrent writers, no child was inserted meanwhile: the reference is
                // undeclared.
                if !self.database.backend().concurrent_writers() {
                    return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
                }
                return Ok(Outcome::ChildrenAppeared { refused: Some(error.to_string()) });
            }
            Err(error) => return Err(error),
        };
        let mut steps = Vec::new();
        // More rows than a chunk of theirs, written since they went first.
        if self.delete_children_after(&mut transaction, frame, keys, &mut steps).await?.is_some() {
            transaction.rollback().await?;
            return Ok(Outcome::ChildrenAppeared { refused: None });
        }
        self.advance_checkpoint(&mut transaction, frame.node, keys).await?;
        steps.push((frame.node, deleted));
        self.commit(transaction, &steps).await?;
        self.record_transaction(started, &steps);
        self.sizes.record(frame.node, frame.limit, key_count(keys), started.elapsed());
        Ok(Outcome::Done(steps))
    }

    /// Whether a set-based statement of `frame` that touched `rows` of at most `limit` was its
    /// last: it came back short, or at the root, matched by a unique key, it deleted a row for
    /// every root id (without this, a chunk of exactly `limit` roots took a second, empty
    /// transaction).
    fn is_last_set_based(&self, frame: &Frame<'a>, limit: u64, rows: u64) -> bool {
        rows < limit
            || (std::ptr::eq(frame.node, self.root) && frame.step.key_unique && rows >= key_count(&frame.matched))
    }

    /// One set-based statement of up to `limit` rows of `frame`; the rows it touched.
    async fn set_based_chunk(&mut self, frame: &Frame<'a>, limit: u64) -> Result<u64, DeleteError> {
        let started = Instant::now();
        let statement =
            frame.step.sql.set_based_chunk(Param::Value(frame.matched.clone()), frame.step.returning.as_ref(), limit);
        let mut transaction = self.begin().await?;
        let rows = match self.run_write(&mut transaction, &statement, frame.node, &frame.step).await {
            Ok(rows) => rows,
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                transaction.rollback().await?;
                return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
            }
            Err(error) => return Err(error),
        };
        // The frame's last statement: every root it matched is gone.
        if self.is_last_set_based(frame, limit, rows) {
            self.advance_checkpoint(&mut transaction, frame.node, &frame.matched).await?;
        }
        self.commit(transaction, &[(frame.node, rows)]).await?;
        if rows > 0 {
            self.record_transaction(started, &[(frame.node, rows)]);
            self.sizes.record(frame.node, limit, rows, started.elapsed());
        }
        Ok(rows)
    }

    fn is_foreign_key_violation(&self, error: &DbError) -> bool {
        self.database.classify(error) == Failure::ForeignKeyViolation
    }

    /// Deletes (or nullifies) every row of `node` whose key (`by_key`) or relation column is in
    /// `keys`. Where one writer at a time is the rule, the tombstones and the archive's rows are
    /// read straight from the table first ([`StepSql::row_data_from_table`]), without carrying
    /// the rows through the tool one by one.
    async fn delete_all(
        &mut self,
        transaction: &mut Transaction,
        node: &PlanNode,
        step: &StepSql<'_>,
        keys: &SqlValue,
        by_key: bool,
    ) -> Result<u64, DeleteError> {
        let keys = || Param::Value(keys.clone());
        let Some(returning) = step.row_data_from_table() else {
            let statement = step.sql.delete_matching(keys(), step.returning.as_ref(), by_key);
            return self.run_write(transaction, &statement, node, step).await;
        };
        if let Some(target) = step.outbox {
            let tombstones = step.sql.insert_tombstones(&target.scope, &target.category, returning, keys(), by_key);
            self.uncommitted_outbox_rows += transaction.execute(&tombstones).await?;
        }
        let archived = match (&self.archive, &returning.row) {
            (Some(_), Some(columns)) => {
                Some(transaction.fetch_texts(&step.sql.archived_rows(columns, keys(), by_key)).await?)
            }
            _ => None,
        };
        let deleted = transaction.execute(&step.sql.delete_matching(keys(), None, by_key)).await?;
        // Archived once the delete went through: a refused delete leaves no lines behind.
        if let Some(archived) = archived {
            self.archive_lines(node, step, counted_lines(archived).1)?;
        }
        Ok(deleted)
    }

    /// Runs `node`'s delete or update; with `RETURNING`, archives the deleted rows and writes
    /// their tombstones in the same transaction. The number of rows touched.
    async fn run_write(
        &mut self,
        transaction: &mut Transaction,
        statement: &Statement,
        node: &PlanNode,
        step: &StepSql<'_>,
    ) -> Result<u64, DeleteError> {
        if step.row_data().is_none() {
            return Ok(transaction.execute(statement).await?);
        }
        // The database writes the tombstones itself, and hands over the archive's rows in one
        // result row: deleted rows do not travel one by one.
        if let Some(in_with) = step.deleting_in_with(statement, self.archive.is_some()) {
            let rows = if self.archive.is_some() {
                let (rows, lines) = counted_lines(transaction.fetch_texts(&in_with).await?);
                self.archive_lines(node, step, lines)?;
                rows
            } else {
                transaction.execute(&in_with).await?
            };
            if step.outbox.is_some() {
                self.uncommitted_outbox_rows += rows;
            }
            return Ok(rows);
        }
        let rows = transaction.fetch_texts(statement).await?;
        self.write_row_data(transaction, rows, node, step).await
    }

    /// Archives the deleted rows of `node` (JSON objects), the root's with their status as it
    /// was before the deletion marked them.
    fn archive_lines(&mut self, node: &PlanNode, step: &StepSql<'_>, lines: Vec<String>) -> Result<(), DeleteError> {
        let Some(archive) = &mut self.archive else { return Ok(()) };
        let status = step.status.map(|s| step.sql.names.column(&s.column.value));
        let lines = match status {
            Some(status) if std::ptr::eq(node, self.root) && !self.statuses_before.is_empty() => {
                let key = step.sql.key();
                lines.into_iter().map(|line| with_status_before(line, &key, &status, &self.statuses_before)).collect()
            }
            _ => lines,
        };
        Ok(archive.write(&node.model, &node.table, &lines)?)
    }

    /// Archives the deleted rows and writes their tombstones, inside the chunk's transaction;
    /// the number of rows.
    async fn write_row_data(
        &mut self,
        transaction: &mut Transaction,
        rows: Vec<Vec<Option<String>>>,
        node: &PlanNode,
        step: &StepSql<'_>,
    ) -> Result<u64, DeleteError> {
        if self.archive.is_some() {
            let lines = rows.iter().filter_map(|row| row.get(3).cloned().flatten()).collect();
            self.archive_lines(node, step, lines)?;
        }
        let composite = node.identity.len() > 1;
        let tombstones: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| {
                let key = if composite { row[0].as_deref().map(compact_json) } else { row[0].clone() };
                serde_json::json!({ "key": key, "shard": row.get(1).cloned().flatten(), "payload": row.get(2).cloned().flatten() })
            })
            .collect();
        let count = tombstones.len() as u64;
        if let (Some(statement), true) = (step.tombstones(Param::json_records(tombstones)), count > 0) {
            transaction.execute(&statement).await?;
            self.uncommitted_outbox_rows += count;
        }
        Ok(rows.len() as u64)
    }

    /// Counts a committed transaction that touched the rows of `steps`.
    fn record_transaction(&mut self, started: Instant, steps: &[(&PlanNode, u64)]) {
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        self.summary.chunks += 1;
        self.summary.max_chunk_ms = self.summary.max_chunk_ms.max(elapsed_ms);
        self.summary.chunk_ms.push(elapsed_ms);
        metrics::histogram!(telemetry::CHUNK_DURATION).record(elapsed_ms / 1e3);
        for (node, rows) in steps {
            let (counts, metric) = if node.action == OnDelete::Delete {
                (&mut self.summary.deleted, telemetry::ROWS_DELETED)
            } else {
                (&mut self.summary.nullified, telemetry::ROWS_NULLIFIED)
            };
            *counts.entry(node.model.clone()).or_default() += rows;
            metrics::counter!(metric, telemetry::MODEL => node.model.clone()).increment(*rows);
        }
        let models: Vec<&str> = steps.iter().map(|(node, _)| node.model.as_str()).collect();
        let rows: u64 = steps.iter().map(|(_, rows)| rows).sum();
        debug!(models = ?models, rows, ms = elapsed_ms, "chunk committed");
    }

    /// Takes `rows` from the bucket of each of `limits`, waiting while one is empty.
    async fn wait_for_limits(&mut self, limits: Vec<&str>, rows: u64) {
        for option in limits {
            let rate = self.rate(option).await;
            if !self.pacing.take(option, rate, rows, self.options.stop.as_deref()).await {
                return;
            }
        }
    }

    /// The option's current value: `cascade_option` over `[options]`, read at most once a second.
    async fn rate(&mut self, option: &str) -> f64 {
        if self.rates_read.is_none_or(|read| read.elapsed() >= OPTION_REFRESH) {
            match super::current_options(self.config, self.database).await {
                Ok(rates) => {
                    for (name, rate) in &rates {
                        if self.rates.get(name) != Some(rate) {
                            info!(option = %name, rows_per_second = rate, "rate limit changed");
                        }
                    }
                    self.rates = rates;
                }
                Err(error) => debug!(%error, "cannot read cascade_option; keeping the previous values"),
            }
            self.rates_read = Some(Instant::now());
        }
        self.rates.get(option).copied().unwrap_or(0.0)
    }
}

/// The one row of an archive read (`archived_rows`, `delete_archived`): the number
/// of rows and their JSON objects, one per line (JSON text holds no raw line break).
fn counted_lines(rows: TextRows) -> (u64, Vec<String>) {
    let mut row = rows.into_iter().next().unwrap_or_default().into_iter();
    let count = row.next().flatten().and_then(|count| count.parse().ok()).unwrap_or(0);
    let lines = row.next().flatten().map(|text| text.split('\n').map(str::to_owned).collect()).unwrap_or_default();
    (count, lines)
}

/// A composite key's JSON array as one spelling on every database (`[1,3]`: PostgreSQL writes
/// `[1, 3]`).
fn compact_json(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text).map_or_else(|_| text.to_owned(), |value| value.to_string())
}

/// A status read back as text, as the JSON value the config's status values have.
fn status_json(text: String, status: &crate::config::StatusCheck) -> String {
    match (&status.in_progress.value, text.trim().parse::<i64>()) {
        (crate::config::StatusValue::Integer(_), Ok(number)) => number.to_string(),
        _ => serde_json::Value::from(text).to_string(),
    }
}

/// An archived root row (a JSON object) with its status as it was before the deletion marked
/// it in progress.
fn with_status_before(line: String, key: &str, status: &str, before: &IndexMap<String, String>) -> String {
    let Ok(serde_json::Value::Object(mut row)) = serde_json::from_str::<serde_json::Value>(&line) else { return line };
    let row_key = match row.get(key) {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => return line,
    };
    let Some(original) = before.get(&row_key).and_then(|json| serde_json::from_str(json).ok()) else { return line };
    row.insert(status.to_owned(), original);
    serde_json::Value::Object(row).to_string()
}

fn initial_state(node: &PlanNode) -> State {
    if node.is_set_based() { State::SetBased } else { State::Fetch }
}

/// The requested root `ids` sorted into those to delete, those whose status skips them and those
/// that match no row. When every id has its row (the usual case) only the count and the skipped
/// keys are read, not a row per id: with 100,000 ids that read alone took a third of the run.
/// Keys the database spells its own way (uuid, ...) are always read, so that later steps use the
/// database's spelling, unless they were `read` from the table by the caller (who then spelled
/// them so, and whose rows are there), which also spares the count.
async fn sort_roots(
    database: &Database,
    root: &StepSql<'_>,
    ids: &SqlValue,
    read: bool,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), DeleteError> {
    let requested = super::key_texts(ids);
    let spelled_as_given = !matches!(root.sql.key_type, KeyType::Other(_));
    if read
        || spelled_as_given
            && database.fetch_count(&root.sql.count_roots(Param::Value(ids.clone()))).await? == requested.len() as u64
    {
        let skipped: Vec<String> = match root.status {
            Some(status) => database
                .fetch_texts(&root.sql.skipped_roots(Param::Value(ids.clone()), status))
                .await?
                .into_iter()
                .filter_map(|row| row.into_iter().next().flatten())
                .collect(),
            None => Vec::new(),
        };
        let left_out: std::collections::HashSet<&str> = skipped.iter().map(String::as_str).collect();
        let proceeding = requested.into_iter().filter(|id| !left_out.contains(id.as_str())).collect();
        return Ok((proceeding, skipped, Vec::new()));
    }
    let found = database.fetch_texts(&root.sql.select_roots(Param::Value(ids.clone()), root.status)).await?;
    let (mut proceeding, mut skipped) = (Vec::new(), Vec::new());
    for row in &found {
        let (Some(key), Some(decision)) = (row.first().cloned().flatten(), row.get(1).cloned().flatten()) else {
            continue;
        };
        if decision == "proceed" { proceeding.push(key) } else { skipped.push(key) }
    }
    // In the order asked for (the database returns them in its own): a caller's checkpoint
    // relies on ascending roots staying ascending.
    let position: std::collections::HashMap<String, usize> =
        requested.iter().enumerate().map(|(index, id)| (id.to_ascii_lowercase(), index)).collect();
    proceeding.sort_by_key(|key| position.get(&key.to_ascii_lowercase()).copied().unwrap_or(usize::MAX));
    Ok((proceeding, skipped, not_found(ids, &found, &root.sql.key_type)))
}

/// What a per_row frame does with a chunk of `keys` it has read.
fn chunk_state(frame: &Frame<'_>, keys: SqlValue) -> State {
    if frame.node.children.is_empty() {
        State::Delete { keys, attempts: 0 }
    } else if frame.set_based_children.is_some() {
        State::Together { keys }
    } else {
        State::Children { keys, next: 0, attempts: 0 }
    }
}

/// What deleting one child's rows under a chunk did.
struct ChildRows {
    rows: u64,
    /// The rows counted before, where they were.
    counted: Option<u64>,
    /// Whether rows of the child may be left under the chunk.
    some_left: bool,
}

/// Root ids not yet handed to a root frame.
struct PendingRoots {
    keys: SqlValue,
    next: usize,
}

impl PendingRoots {
    fn is_empty(&self) -> bool {
        self.next >= key_count(&self.keys) as usize
    }

    /// The next `count` ids; `None` when none are left.
    fn take(&mut self, count: u64) -> Option<SqlValue> {
        let start = self.next;
        let end = start.saturating_add(usize::try_from(count).unwrap_or(usize::MAX).max(1));
        let batch = match &self.keys {
            SqlValue::Integers(list) => {
                list.get(start..end.min(list.len())).map(|batch| SqlValue::Integers(batch.to_vec()))
            }
            SqlValue::Texts(list) => list.get(start..end.min(list.len())).map(|batch| SqlValue::Texts(batch.to_vec())),
            SqlValue::UntypedKeys(list) => {
                list.get(start..end.min(list.len())).map(|batch| SqlValue::UntypedKeys(batch.to_vec()))
            }
            single => (start == 0).then(|| single.clone()),
        };
        self.next = end;
        batch.filter(|batch| !is_empty(batch))
    }
}

/// Refuses, before anything is written, a deletion whose lookups by key would miss rows the
/// database takes for children or would fail on the database's types; whether every lookup was
/// checked (see [`refuse_uncomparable_relations`]).
pub(super) async fn refuse_unmatched_lookups(
    database: &Database,
    config: &Config,
    plan: &Plan,
    schema: &Schema,
) -> Result<bool, DeleteError> {
    refuse_ambiguous_keys(database, plan, schema).await?;
    refuse_uncomparable_relations(database, config, plan, schema).await
}

/// Refuses a deletion through a column that holds a value the database takes for a key but that
/// cascade's lookups by key would miss (SQLite; see [`crate::db::Backend::unmatched_keys_in`]):
/// a column declared without a type holding a key as text reading exactly as an integer (`'8'`:
/// bound as the integer 8, the row `'8'` is never found, its children orphaned or a loop, while a
/// row 8 elsewhere is deleted in its place), or a reference that the parent's integer keys equal
/// only by SQLite's conversion (`'08'` in a TEXT column): left behind, orphaned.
async fn refuse_ambiguous_keys(database: &Database, plan: &Plan, schema: &Schema) -> Result<(), DeleteError> {
    let key_of =
        |node: &PlanNode| schema.table(&node.table).and_then(|table| table.column(node.key.as_deref().unwrap_or("id")));
    let quoted = |node: &PlanNode| crate::schema::CatalogNames::of(Some(schema), &node.table).quoted_table();
    for (node, parent) in plan.steps_with_parents() {
        let Some(table) = schema.table(&node.table) else { continue };
        // Set-based steps never look their rows up by their own key, only by their relation.
        let by_own_key = parent.is_none() || !node.is_set_based();
        let own_key = key_of(node).filter(|_| by_own_key).map(|key| (key, key, None));
        let reference = node
            .column
            .as_deref()
            .and_then(|name| table.column(name))
            .zip(parent)
            .and_then(|(column, parent)| key_of(parent).map(|key| (column, key, Some(quoted(parent)))));
        // Each column with the key it is looked up by, and for a reference the parent's table.
        for (column, key, parent_table) in own_key.into_iter().chain(reference) {
            let mut sql = database.sql();
            let backend = database.backend();
            let referenced = parent_table.as_deref().map(|table| (table, key.name.as_str()));
            let column_type = &column.key_type;
            if !backend.unmatched_keys_in(&mut sql, &quoted(node), &column.name, column_type, &key.key_type, referenced)
            {
                continue;
            }
            let Some(value) = first_text(&database.fetch_texts(&sql.finish()).await?).map(str::to_owned) else {
                continue;
            };
            let (table, column) = (table.name.clone(), column.name.clone());
            return Err(match key.key_type {
                KeyType::Untyped => DeleteError::AmbiguousKey { table, column, value },
                _ => DeleteError::UnmatchedReference { table, column, value, key: key.data_type.clone() },
            });
        }
    }
    Ok(())
}

/// Refuses a deletion through a relation whose column the database cannot compare with its
/// parent's keys (PostgreSQL: `text = numeric` has no operator), before anything is written:
/// each step's lookup of its rows by its parent's keys is run once with no keys, which the
/// database parses and type-checks as it would every chunk's. Found later, the error would stop
/// the deletion halfway, after the steps before it had committed. `relation-type-mismatch` names
/// the common pairs in `validate`; this catches every pair the database itself refuses. Whether
/// every step was checked: a step whose lookup met a transient error (a lock) is left out.
async fn refuse_uncomparable_relations(
    database: &Database,
    config: &Config,
    plan: &Plan,
    schema: &Schema,
) -> Result<bool, DeleteError> {
    let mut all_checked = true;
    for (node, parent) in plan.steps_with_parents() {
        let Some(parent) = parent else { continue };
        let step = StepSql::new(node, Some(parent), config, database.backend(), Some(schema), false);
        let no_keys = super::typed_keys(&step.sql.match_type, Vec::new()).unwrap_or(SqlValue::Texts(Vec::new()));
        let lookup = step.sql.count_up_to(Param::Value(no_keys), 1);
        if let Err(error) = database.fetch_texts(&lookup).await {
            // A lock held elsewhere or a lost connection is no fault of the relation: the
            // deletion meets it again where it is recorded and retried.
            if database.classify(&error) != Failure::Permanent {
                all_checked = false;
                continue;
            }
            if !error.is_type_mismatch() {
                return Err(error.into());
            }
            return Err(DeleteError::UncomparableRelation {
                child: format!("{}.{}", node.table, node.column.as_deref().unwrap_or_default()),
                parent: format!("{}.{}", parent.table, parent.key.as_deref().unwrap_or("id")),
                reason: error.to_string(),
            });
        }
    }
    Ok(all_checked)
}

/// How many keys a chunk holds.
fn key_count(keys: &SqlValue) -> u64 {
    match keys {
        SqlValue::Integers(list) => list.len() as u64,
        SqlValue::Texts(list) | SqlValue::UntypedKeys(list) => list.len() as u64,
        _ => 1,
    }
}

fn is_empty(keys: &SqlValue) -> bool {
    match keys {
        SqlValue::Integers(list) => list.is_empty(),
        SqlValue::Texts(list) | SqlValue::UntypedKeys(list) => list.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::nearest_rank;

    #[test]
    fn the_99th_percentile_is_a_measured_value_by_nearest_rank() {
        let hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(nearest_rank(&hundred, 0.99), 99.0);
        assert_eq!(nearest_rank(&[3.0, 1.0, 2.0], 0.99), 3.0);
        assert_eq!(nearest_rank(&[7.5], 0.99), 7.5);
        assert_eq!(nearest_rank(&[], 0.99), 0.0);
    }
}
