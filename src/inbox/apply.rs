//! Applying tombstones: a worker claims pending ones, folds those of one remote model into one
//! clean-up of its children (every child row naming one of their keys deleted as the root of its
//! own cascade, or its column set to NULL, batch after batch in one recorded run), and marks them
//! applied. A tombstone whose application fails keeps its error and waits `[settings]
//! retry_delay_seconds` for another attempt; after `max_attempts` it is parked.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use indexmap::IndexMap;
use serde::Serialize;
use tracing::{info, warn};

use super::{InboxError, Tombstone, store, sweep};
use crate::audit::Alone;
use crate::cleanup::batches::{self, BatchError, BatchOptions, BatchRun, Budget, Next, Read, Scan};
use crate::config::{OnDelete, Relation, RemoteModel, Settings};
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement, quote_identifier};
use crate::db::{DbError, Failure, Keys};
use crate::engine::Engine;
use crate::planner::{self, Plan};
use crate::telemetry;

/// How tombstones are applied.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// The batches of each clean-up (their size, pause, archive, actor and command, and the
    /// flag that stops them); without a budget of their own, `[settings] inbox_budget_rows` and
    /// `inbox_budget_time` are each application's.
    pub batches: BatchOptions,
    /// Tombstones a worker claims at once, folded by remote model.
    pub claim: u64,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        // Applying tombstones is a deletion: the config's rate limits pace it, not the clean-up
        // commands' pause between batches.
        let batches =
            BatchOptions { command: "inbox apply".to_owned(), sleep: Duration::ZERO, ..BatchOptions::default() };
        Self { batches, claim: 2000 }
    }
}

/// What applying did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ApplyReport {
    /// Tombstones applied.
    pub applied: u64,
    /// Tombstones whose application failed (released for another attempt, or parked).
    pub failed: u64,
    /// Rows deleted per model.
    pub deleted: IndexMap<String, u64>,
    /// Rows set to NULL per model.
    pub nullified: IndexMap<String, u64>,
    /// The applications that failed, with their errors.
    pub errors: Vec<String>,
    /// Tombstones whose run spent its budget (`[settings] inbox_budget_rows` or
    /// `inbox_budget_time`) before their children were all gone: released, not counted as an
    /// attempt, and continued by the next run, after the tombstones behind them had their turn.
    pub deferred: u64,
    /// Rows of those deleted or nullified that were written after their parent's tombstone had
    /// been applied, found by the sweep of kept tombstones.
    pub late_rows: u64,
    /// Applied tombstones removed after the retention window.
    pub purged: u64,
    /// Stopped by the caller's flag before every pending tombstone was applied.
    pub stopped: bool,
}

/// Applies every pending tombstone of the config's remote models, a claim at a time, until none
/// is left (or the stop flag is set), each at most once: one that fails waits for the next call.
/// Tombstones of a category no remote model reads wait.
pub async fn apply(engine: &Engine, options: &ApplyOptions) -> Result<ApplyReport, InboxError> {
    let config = engine.config();
    let categories: Vec<&str> =
        config.remote_models.values().map(|model| model.remote.category.value.as_str()).collect();
    let mut report = ApplyReport::default();
    // Each tombstone is tried once per call (claims go up the ids): one that failed waits for the
    // next call.
    let mut after = 0;
    let settings = &config.settings;
    // The worker's lease, as for a scheduled deletion: a claim outlives a long clean-up.
    let (lease, max_attempts, retry_delay) = (settings.lease(), settings.max_attempts(), settings.retry_delay());
    let options = &options.budgeted(settings);
    let parked = store::park_exhausted(engine.database(), max_attempts, SystemTime::now()).await?;
    if parked > 0 {
        warn!(parked, "tombstones parked: their worker stopped while applying them, on every attempt");
        report.failed += parked;
        report.errors.push(format!("{parked} parked: their worker stopped while applying them, on every attempt"));
    }
    loop {
        if options.batches.stop.as_ref().is_some_and(|stop| stop.load(Ordering::SeqCst)) {
            report.stopped = true;
            break;
        }
        let token = uuid::Uuid::new_v4().simple().to_string();
        let now = SystemTime::now();
        let until = now.checked_add(lease).unwrap_or(now);
        let claim = (categories.as_slice(), after, max_attempts);
        let claimed = store::claim(engine.database(), claim, options.claim, &token, now, until).await?;
        let Some(last) = claimed.last() else { break };
        after = last.id;
        let mut by_model: IndexMap<&str, (&RemoteModel, Vec<&Tombstone>)> = IndexMap::new();
        for tombstone in &claimed {
            // The claim took only categories of remote models.
            let Some(model) = config.remote_model_of(&tombstone.category) else { continue };
            by_model.entry(model.name.value.as_str()).or_insert((model, Vec::new())).1.push(tombstone);
        }
        let mut stopped = false;
        // A failed application is split in halves and each applied again, so one tombstone that
        // cannot be applied fails alone instead of taking the rest of its claim with it.
        let mut groups: Vec<(&RemoteModel, Vec<&Tombstone>)> = by_model.into_values().rev().collect();
        while let Some((model, tombstones)) = groups.pop() {
            let ids: Vec<i64> = tombstones.iter().map(|tombstone| tombstone.id).collect();
            let keys: Vec<String> = tombstones.iter().map(|tombstone| tombstone.key.clone()).collect();
            match clean_up(engine, model, &keys, &token, options).await {
                Ok(cleaned) if cleaned.out_of_budget => {
                    // A run that removed nothing before its budget ran out made no progress: its
                    // claim counts as an attempt, so a tombstone that can never fit is parked.
                    let progressed = cleaned.rows() > 0;
                    report.add_rows(cleaned.deleted, cleaned.nullified);
                    let (done, left) = match finished_tombstones(engine, model, &tombstones).await {
                        Ok(split) => split,
                        // Nothing is known finished: all are released, and the next run looks again.
                        Err(error) => {
                            warn!(model = %model.name.value, %error, "cannot tell which tombstones are finished");
                            (Vec::new(), ids)
                        }
                    };
                    report.applied += mark_applied(engine, model, &done, &token).await?;
                    report.deferred += store::release(engine.database(), &left, &token, progressed).await?;
                    info!(model = %model.name.value, applied = done.len(), left = left.len(), "the run's budget is spent");
                }
                Ok(cleaned) if !cleaned.stopped => {
                    report.applied += mark_applied(engine, model, &ids, &token).await?;
                    info!(model = %model.name.value, tombstones = ids.len(), "tombstones applied");
                    report.add_rows(cleaned.deleted, cleaned.nullified);
                }
                // Stopped between batches: the claim lapses and the rest is applied again later
                // (what was deleted stays deleted).
                Ok(cleaned) => {
                    report.add_rows(cleaned.deleted, cleaned.nullified);
                    stopped = true;
                    break;
                }
                Err(error) if tombstones.len() > 1 => {
                    warn!(model = %model.name.value, tombstones = tombstones.len(), %error, "applying tombstones failed; applying them in halves");
                    let (first, second) = tombstones.split_at(tombstones.len() / 2);
                    groups.push((model, second.to_vec()));
                    groups.push((model, first.to_vec()));
                }
                Err(error) => {
                    let error = crate::secret::redact(&error.to_string());
                    let attempts = tombstones.iter().map(|tombstone| tombstone.attempts).max().unwrap_or(0);
                    warn!(model = %model.name.value, attempts, %error, "applying a tombstone failed");
                    let retry_at = SystemTime::now().checked_add(retry_delay).unwrap_or(now);
                    store::failed(engine.database(), &ids, &token, &error, (max_attempts, retry_at)).await?;
                    report.failed += ids.len() as u64;
                    let key = &tombstones[0].key;
                    report.errors.push(format!("remote model `{}`, key `{key}`: {error}", model.name.value));
                }
            }
        }
        if stopped {
            report.stopped = true;
            break;
        }
    }
    Ok(report)
}

/// Marks the claimed tombstones `ids` of `model` applied, and counts them; those whose claim
/// lapsed and went to another worker are that worker's to count.
async fn mark_applied(engine: &Engine, model: &RemoteModel, ids: &[i64], token: &str) -> Result<u64, InboxError> {
    let applied = store::applied(engine.database(), ids, token).await?;
    metrics::counter!(telemetry::INBOX_APPLIED, telemetry::MODEL => model.name.value.clone()).increment(applied);
    Ok(applied)
}

/// Splits the claimed `tombstones` of `model` whose run spent its budget into those whose key no
/// child row names any more (to be marked applied) and those left, by id. A key of a type whose
/// text cannot be compared counts as left.
async fn finished_tombstones(
    engine: &Engine,
    model: &RemoteModel,
    tombstones: &[&Tombstone],
) -> Result<(Vec<i64>, Vec<i64>), ApplyError> {
    let children = Child::all(engine, model)?;
    let keys: Vec<String> = tombstones.iter().map(|tombstone| tombstone.key.clone()).collect();
    let named = still_named(engine, &children, &keys).await?;
    let named: Vec<HashSet<String>> = children
        .iter()
        .zip(named)
        .map(|(child, keys)| keys.iter().filter_map(|key| child.comparable(key)).collect())
        .collect();
    let (left, done): (Vec<&&Tombstone>, Vec<&&Tombstone>) = tombstones.iter().partition(|tombstone| {
        // A key this cannot compare counts as still named: its tombstone waits for the next run.
        children
            .iter()
            .zip(&named)
            .any(|(child, named)| child.comparable(&tombstone.key).is_none_or(|key| named.contains(&key)))
    });
    let ids = |tombstones: Vec<&&Tombstone>| tombstones.into_iter().map(|tombstone| tombstone.id).collect();
    Ok((ids(done), ids(left)))
}

/// Applies pending tombstones until `stop` is set, looking again every `poll` when none is
/// pending; with `once`, until none is pending. Every `[settings] inbox_sweep_interval` (with
/// `once`, at the end) the kept tombstones are swept for late children and those past the
/// retention window removed. A failed application does not stop it: the tombstone is tried
/// again, or parked.
pub async fn run_applier(
    engine: &Engine,
    options: &ApplyOptions,
    once: bool,
    poll: Duration,
    stop: Arc<AtomicBool>,
) -> Result<ApplyReport, InboxError> {
    let options =
        ApplyOptions { batches: BatchOptions { stop: Some(stop.clone()), ..options.batches.clone() }, ..*options };
    let sweep_interval = engine.config().settings.inbox_sweep_interval();
    let mut swept_at: Option<Instant> = None;
    let mut total = ApplyReport::default();
    loop {
        let mut report = match apply(engine, &options).await {
            Ok(report) => report,
            Err(error) => {
                wait_out(engine, error, poll, &stop).await?;
                continue;
            }
        };
        // Tombstones deferred by a run that removed rows: with `once`, they are taken again now.
        let more = report.deferred > 0 && report.rows() > 0;
        let sweep_due = if once { !more } else { swept_at.is_none_or(|at| at.elapsed() >= sweep_interval) };
        if !report.stopped && sweep_due {
            if let Err(error) = sweep::sweep(engine, &options, SystemTime::now(), &mut report).await {
                wait_out(engine, error, poll, &stop).await?;
                total.add(report);
                continue;
            }
            swept_at = Some(Instant::now());
        }
        if let Err(error) = set_gauges(engine).await {
            wait_out(engine, error, poll, &stop).await?;
        }
        let idle = report.applied + report.failed == 0 && !more;
        total.add(report);
        if stop.load(Ordering::SeqCst) || (once && !more) {
            return Ok(total);
        }
        if idle {
            crate::stop::pause(poll, &stop).await;
        }
    }
}

/// Sets the inbox's gauges per category: pending, parked, and the oldest pending one's age.
async fn set_gauges(engine: &Engine) -> Result<(), InboxError> {
    let mut stats = super::stats(engine.database(), engine.config(), SystemTime::now()).await?;
    // A remote model's category with no row left reads 0, not its last value.
    for model in engine.config().remote_models.values() {
        let category = &model.remote.category.value;
        if !stats.iter().any(|found| &found.category == category) {
            stats.push(super::CategoryInbox {
                category: category.clone(),
                remote_model: Some(model.name.value.clone()),
                pending: 0,
                applied: 0,
                parked: 0,
                oldest_pending_age_seconds: 0.0,
            });
        }
    }
    for category in stats {
        let labels = [(telemetry::CATEGORY, category.category)];
        metrics::gauge!(telemetry::INBOX_PENDING, &labels).set(category.pending as f64);
        metrics::gauge!(telemetry::INBOX_PARKED, &labels).set(category.parked as f64);
        metrics::gauge!(telemetry::INBOX_OLDEST_PENDING_AGE, &labels).set(category.oldest_pending_age_seconds);
    }
    Ok(())
}

/// Waits `poll` after a transient database error, as the worker and the drainer do (the claims
/// it cut short lapse and are taken again); any other error, or one while stopping, is returned.
async fn wait_out(engine: &Engine, error: InboxError, poll: Duration, stop: &AtomicBool) -> Result<(), InboxError> {
    match error {
        InboxError::Database(error)
            if engine.database().classify(&error) == Failure::Transient && !stop.load(Ordering::SeqCst) =>
        {
            warn!(error = %crate::secret::redact(&error.to_string()), "applying tombstones failed; trying again");
            crate::stop::pause(poll, stop).await;
            Ok(())
        }
        error => Err(error),
    }
}

impl ApplyOptions {
    /// These options with the budget of `[settings]` unless they set one.
    pub(super) fn budgeted(&self, settings: &Settings) -> ApplyOptions {
        let (rows, time) = settings.inbox_budget();
        let budget = self.batches.budget.or(Some(Budget { rows, time }));
        ApplyOptions { batches: BatchOptions { budget, ..self.batches.clone() }, ..*self }
    }
}

impl ApplyReport {
    fn add(&mut self, other: ApplyReport) {
        self.applied += other.applied;
        self.failed += other.failed;
        self.errors.extend(other.errors);
        self.stopped |= other.stopped;
        self.late_rows += other.late_rows;
        self.deferred += other.deferred;
        self.purged += other.purged;
        self.add_rows(other.deleted, other.nullified);
    }

    /// Rows deleted and nullified.
    fn rows(&self) -> u64 {
        self.deleted.values().chain(self.nullified.values()).sum()
    }

    pub(super) fn add_rows(&mut self, deleted: IndexMap<String, u64>, nullified: IndexMap<String, u64>) {
        for (into, rows) in [(&mut self.deleted, deleted), (&mut self.nullified, nullified)] {
            for (model, count) in rows {
                *into.entry(model).or_default() += count;
            }
        }
    }
}

/// What one clean-up of a remote model's children did.
pub(super) struct Cleaned {
    pub(super) deleted: IndexMap<String, u64>,
    pub(super) nullified: IndexMap<String, u64>,
    /// Stopped by the caller's flag.
    pub(super) stopped: bool,
    /// Stopped because the run's budget was spent: some keys may still be named.
    pub(super) out_of_budget: bool,
}

impl Cleaned {
    /// Rows deleted and nullified.
    pub(super) fn rows(&self) -> u64 {
        self.deleted.values().chain(self.nullified.values()).sum()
    }
}

/// Why a remote model's children could not be cleaned up.
#[derive(Debug, thiserror::Error)]
pub(super) enum ApplyError {
    #[error("{0}")]
    Unresolved(String),
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error(transparent)]
    Compile(#[from] planner::CompileError),
}

impl From<DbError> for ApplyError {
    fn from(error: DbError) -> Self {
        ApplyError::Batch(error.into())
    }
}

/// Deletes or nullifies, in one recorded run, every child row of `model` that names one of
/// `keys`: the delete relations first, so that no row is nullified that is deleted anyway.
pub(super) async fn clean_up(
    engine: &Engine,
    model: &RemoteModel,
    keys: &[String],
    token: &str,
    options: &ApplyOptions,
) -> Result<Cleaned, ApplyError> {
    let mut relations = Child::all(engine, model)?;
    relations.sort_by_key(|child| child.relation.action() != OnDelete::Delete);
    let targets: Vec<String> = relations.iter().map(|child| format!("{}.{}", child.model, child.column)).collect();
    // The claim's token makes the run its own: two workers apply different tombstones at once.
    let root = format!("inbox {} {token}", model.name.value);
    let mut run = BatchRun::start(engine, (&root, &targets), Alone::SameRoots, options.batches.clone()).await?;
    let mut outcome = Ok(Next::Continue);
    for child in &relations {
        let plan = match child.relation.action() {
            OnDelete::Nullify => None,
            _ => Some(planner::compile(engine.config(), child.model)?),
        };
        let clean = match &plan {
            Some(plan) => Clean::Delete(plan),
            None => Clean::Nullify,
        };
        let checkpoint = format!("inbox:{token}:{}.{}", child.model, child.column);
        let mut scan = ChildScan { engine, child, keys, clean, checkpoint, after: None, exhausted: false };
        outcome = run.scan(&mut scan).await;
        if !matches!(outcome, Ok(Next::Continue)) {
            break;
        }
    }
    let error = outcome.as_ref().err().map(ToString::to_string);
    let out_of_budget = run.out_of_budget();
    let finished = run.finish(error.as_deref()).await;
    let next = outcome?;
    let summary = finished?;
    let stopped = next == Next::Stop && !out_of_budget;
    Ok(Cleaned { deleted: summary.deleted, nullified: summary.nullified, stopped, out_of_budget })
}

/// A relation of a remote model, resolved against the schema.
pub(super) struct Child<'a> {
    pub(super) relation: &'a Relation,
    pub(super) model: &'a str,
    /// The child table, quoted as the catalog spells it.
    table: String,
    /// The child's key column as the catalog spells it, and how its values are bound.
    key: String,
    key_type: KeyType,
    /// The relation column as the catalog spells it, and how the remote keys are bound to it.
    pub(super) column: String,
    pub(super) column_type: KeyType,
}

impl<'a> Child<'a> {
    /// Every relation of `model`, resolved.
    pub(super) fn all(engine: &'a Engine, model: &'a RemoteModel) -> Result<Vec<Self>, ApplyError> {
        model.children.iter().map(|relation| Child::resolve(engine, relation)).collect()
    }

    pub(super) fn resolve(engine: &'a Engine, relation: &'a Relation) -> Result<Self, ApplyError> {
        let model = relation.model.value.as_str();
        let (table, key) = batches::keyed_table(engine, model).map_err(ApplyError::Unresolved)?;
        let written = relation.columns().first().map_or("", |column| column.value.as_str());
        let column = table
            .column(written)
            .ok_or_else(|| ApplyError::Unresolved(format!("`{}` has no column `{written}`", table.name)))?;
        Ok(Self {
            relation,
            model,
            table: table.quoted(),
            key: key.name.clone(),
            key_type: key.key_type.clone(),
            column: column.name.clone(),
            column_type: column.key_type.clone(),
        })
    }

    /// `SELECT COUNT(*)` of the child rows naming one of `keys`.
    pub(super) fn count(&self, engine: &Engine, keys: &[String]) -> Statement {
        let mut sql = SqlBuilder::new(engine.database().backend());
        sql.push("SELECT COUNT(*) FROM ").push(&self.table).push(" WHERE ");
        self.names_a_key(&mut sql, keys);
        sql.finish()
    }

    /// `"column" IN (the remote keys)`, in a statement of the child table alone.
    fn names_a_key(&self, sql: &mut SqlBuilder, keys: &[String]) {
        sql.key_list(&self.column, &self.column_type, Param::Keys(Keys::read(&self.column_type, keys.to_vec())));
    }

    /// The keys, ascending, of up to `limit` rows after `after` that name one of `keys`.
    fn batch(&self, engine: &Engine, keys: &[String], after: Option<&str>, limit: u64) -> Statement {
        let key = quote_identifier(&self.key);
        batches::key_array(engine.database().backend(), &key, |sql| {
            sql.push(" FROM ").push(&self.table).push(" WHERE ");
            self.names_a_key(sql, keys);
            batches::next_keys(sql, &key, &self.key_type, after, limit);
        })
    }

    /// `key` as this child's column compares it: an integer column's keys as integers (`07` is
    /// 7), a text column's (or an untyped SQLite column's, which binds a key as written) as
    /// written. `None` for another type (a `uuid` compares `ABC…` equal to the `abc…` it reads
    /// back), where the text alone cannot tell.
    pub(super) fn comparable(&self, key: &str) -> Option<String> {
        match self.column_type {
            // As `Keys` binds it: `" 7"` is 7.
            KeyType::Integer => Some(key.trim().parse::<i64>().map_or_else(|_| key.to_owned(), |n| n.to_string())),
            KeyType::Text | KeyType::Untyped => Some(key.to_owned()),
            KeyType::Other(_) => None,
        }
    }

    /// Those of `keys` that some row of the child table names, ascending.
    pub(super) fn named(&self, engine: &Engine, keys: &[String]) -> Statement {
        let column = quote_identifier(&self.column);
        batches::key_array(engine.database().backend(), &column, |sql| {
            sql.push(" FROM ").push(&self.table).push(" WHERE ");
            self.names_a_key(sql, keys);
            sql.push(" GROUP BY ").push(&column);
        })
    }

    /// Sets the relation column of the rows among `batch` that still name one of `keys` to NULL.
    fn nullify(&self, engine: &Engine, keys: &[String], batch: &[String]) -> Statement {
        let mut sql = SqlBuilder::new(engine.database().backend());
        sql.push("UPDATE ").push(&self.table).push(" SET ").identifier(&self.column).push(" = NULL WHERE ");
        sql.key_list(&self.key, &self.key_type, Param::Keys(Keys::read(&self.key_type, batch.to_vec()))).push(" AND ");
        self.names_a_key(&mut sql, keys);
        sql.finish()
    }
}

/// Those of `keys` that some row of each of `children` still names, as the database reads them:
/// per child, in the order of `children`.
pub(super) async fn still_named(
    engine: &Engine,
    children: &[Child<'_>],
    keys: &[String],
) -> Result<Vec<Vec<String>>, DbError> {
    let mut named = Vec::with_capacity(children.len());
    for child in children {
        named.push(engine.database().fetch_array(&child.named(engine, keys)).await?);
    }
    Ok(named)
}

/// What a batch of child rows gets.
enum Clean<'p> {
    /// Deleted as the roots of the child model's plan, each with everything below it.
    Delete(&'p Plan),
    /// The relation column set to NULL.
    Nullify,
}

/// The rows of one child relation that name a remote key, in key order.
struct ChildScan<'a> {
    engine: &'a Engine,
    child: &'a Child<'a>,
    keys: &'a [String],
    clean: Clean<'a>,
    checkpoint: String,
    after: Option<String>,
    /// The last read found fewer keys than it asked for.
    exhausted: bool,
}

impl Scan for ChildScan<'_> {
    type Batch = Vec<String>;
    type Error = BatchError;

    fn checkpoint(&self) -> &str {
        &self.checkpoint
    }

    fn start_after(&mut self, after: Option<String>) {
        self.after = after;
    }

    async fn read(&mut self, size: u64) -> Result<Read<Vec<String>>, BatchError> {
        let engine = self.engine;
        let statement = self.child.batch(engine, self.keys, self.after.as_deref(), size);
        let keys = engine.database().fetch_array(&statement).await?;
        self.exhausted = (keys.len() as u64) < size;
        self.after = keys.last().cloned().or(self.after.take());
        Ok(if keys.is_empty() { Read::Through } else { Read::Batch(keys) })
    }

    fn through(&self) -> bool {
        self.exhausted
    }

    async fn clean(&self, run: &mut BatchRun<'_>, batch: Vec<String>) -> Result<Next, BatchError> {
        match self.clean {
            Clean::Delete(plan) => run.delete_batch(plan, &batch, &self.checkpoint, None).await,
            Clean::Nullify => {
                let update = self.child.nullify(self.engine, self.keys, &batch);
                run.nullify_batch(&update, &batch, self.child.model, &self.checkpoint).await
            }
        }
    }
}
