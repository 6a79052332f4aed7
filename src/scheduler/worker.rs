//! The worker: claims due scheduled deletions and runs them, `concurrency` at a time. Several
//! workers, on one machine or many, share one database with no other coordinator: claims are
//! conditional updates, heartbeats keep them, and a claim whose heartbeat is older than the
//! lease is released for another worker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tracing::{info, warn};

use super::Claim;
use crate::audit::RunOutcome;
use crate::config::Settings;
use crate::db::sql::latest_time;
use crate::db::{Database, DbError, Failure};
use crate::diagnostic::Diagnostic;
use crate::engine::{DeleteError, DeleteOptions, Engine, PrepareError, default_actor};
use crate::stop::{CHECK_EVERY, pause};
use crate::telemetry;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Deletions run at the same time.
    pub concurrency: usize,
    /// How long to wait when nothing is due.
    pub poll: Duration,
    /// A claim without a heartbeat for this long is released for another worker.
    pub lease: Duration,
    /// Attempts a deletion gets before it is kept as failed.
    pub max_attempts: u64,
    /// Time between a failed attempt and the next.
    pub retry_delay: Duration,
    /// Stop once nothing is due instead of polling.
    pub once: bool,
}

impl WorkerOptions {
    /// The options `[settings]` gives (lease, attempts, retry delay), with the defaults where it
    /// gives none: one lane, polling every 5 seconds.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            concurrency: 1,
            poll: Duration::from_secs(5),
            lease: settings.lease(),
            max_attempts: settings.max_attempts(),
            retry_delay: settings.retry_delay(),
            once: false,
        }
    }
}

/// What a worker did, per outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerReport {
    /// Deletions that finished.
    pub succeeded: u64,
    /// Deletions dropped because the root's status no longer allowed them.
    pub cancelled: u64,
    /// Attempts that failed (retried later, or kept as failed).
    pub failed: u64,
    /// Deletions stopped by the stop flag, their claims released.
    pub interrupted: u64,
    /// Deletions whose root row no longer existed (dropped: nothing to delete).
    pub not_found: u64,
    /// With `once`: deletions scheduled for later, not due when the run ended.
    pub later: u64,
    /// With `once`: when the first of those is due (UTC, as text).
    pub next_due: Option<String>,
}

impl WorkerReport {
    fn add(&mut self, other: &WorkerReport) {
        self.succeeded += other.succeeded;
        self.cancelled += other.cancelled;
        self.failed += other.failed;
        self.interrupted += other.interrupted;
        self.not_found += other.not_found;
    }
}

/// Why a worker stopped before its work was done.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Its own bookkeeping (claims, heartbeats) failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A lane crashed.
    #[error("a worker lane stopped unexpectedly: {0}")]
    Lane(#[from] tokio::task::JoinError),
    /// The database's schema changed while the worker ran, and the config has errors against
    /// it (every diagnostic, warnings included): no deletion runs until they are fixed, as at
    /// a start against that schema.
    #[error(
        "the database's schema changed, and the config has {} errors against it; fix them first",
        .0.iter().filter(|d| d.is_error()).count()
    )]
    Invalid(Vec<Diagnostic>),
}

/// The engine the lanes share, prepared anew when the database's schema changes
/// ([`Engine::refreshed`], asked before each claim): a deletion never runs on a schema read
/// before a foreign key into its tables was added.
struct CurrentEngine(tokio::sync::Mutex<Engine>);

impl CurrentEngine {
    async fn get(&self) -> Result<Engine, WorkerError> {
        let mut engine = self.0.lock().await;
        match engine.refreshed().await {
            Ok(Some(refreshed)) => {
                info!("the database's schema changed: read it again and checked the config against it");
                *engine = refreshed;
            }
            Ok(None) => {}
            Err(PrepareError::Database(error)) => return Err(error.into()),
            Err(PrepareError::Invalid(diagnostics)) => return Err(WorkerError::Invalid(diagnostics)),
        }
        Ok(engine.clone())
    }
}

/// Runs until `stop` is set (after the current chunk, releasing the claim), or with `once`
/// until nothing is due.
pub async fn run(engine: Engine, options: WorkerOptions, stop: Arc<AtomicBool>) -> Result<WorkerReport, WorkerError> {
    let started = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    metrics::gauge!(telemetry::WORKER_START_TIME).set(started.as_secs_f64());
    crate::db::migrate(engine.database()).await?;
    let due = Arc::new(DueGauge::default());
    let database = engine.database().clone();
    let current = Arc::new(CurrentEngine(tokio::sync::Mutex::new(engine)));
    let mut lanes = tokio::task::JoinSet::new();
    for lane in 0..options.concurrency.max(1) {
        let (database, current, options, stop, due) =
            (database.clone(), current.clone(), options.clone(), stop.clone(), due.clone());
        lanes.spawn(async move { work(lane, &database, &current, &options, &stop, &due).await });
    }
    let mut report = WorkerReport::default();
    while let Some(lane) = lanes.join_next().await {
        report.add(&lane??);
    }
    if options.once && !stop.load(Ordering::SeqCst) {
        (report.later, report.next_due) = super::count_later(&database, options.max_attempts).await?;
    }
    Ok(report)
}

/// One lane: claim, run, repeat. A transient failure of the lane's own bookkeeping (the
/// database restarting) is waited out; a permanent one stops the worker.
async fn work(
    lane: usize,
    database: &Database,
    current: &CurrentEngine,
    options: &WorkerOptions,
    stop: &Arc<AtomicBool>,
    due: &DueGauge,
) -> Result<WorkerReport, WorkerError> {
    let mut report = WorkerReport::default();
    while !stop.load(Ordering::SeqCst) {
        match next(lane, current, options, stop, due, &mut report).await {
            Ok(Next::Continue) => {}
            Ok(Next::NothingDue) if options.once => break,
            Ok(Next::NothingDue) => pause(options.poll, stop).await,
            Err(WorkerError::Database(error)) if database.classify(&error) == Failure::Transient => {
                warn!(lane, %error, "the worker's bookkeeping failed; trying again after the poll interval");
                pause(options.poll, stop).await;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(report)
}

/// What a lane does after one round.
enum Next {
    Continue,
    NothingDue,
}

/// The gauge of deletions due ([`telemetry::SCHEDULED_DUE`]), shared by the lanes: measured
/// whenever a lane finds nothing due (before it waits for the poll interval), and after a claim
/// at most every [`DUE_GAUGE_EVERY`], since counting a long queue costs a scan of it.
#[derive(Default)]
struct DueGauge {
    measured: Mutex<Option<Instant>>,
}

/// How often a busy worker measures the deletions due.
const DUE_GAUGE_EVERY: Duration = Duration::from_secs(10);

impl DueGauge {
    /// Measures and sets the gauge, unless another lane did it less than [`DUE_GAUGE_EVERY`] ago
    /// and `idle` is false. A failure is logged: the gauge is not worth stopping deletions for.
    async fn measure(&self, database: &Database, max_attempts: u64, idle: bool) {
        {
            let mut measured = self.measured.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !idle && measured.is_some_and(|at| at.elapsed() < DUE_GAUGE_EVERY) {
                return;
            }
            *measured = Some(Instant::now());
        }
        match super::count_due(database, max_attempts).await {
            Ok(due) => metrics::gauge!(telemetry::SCHEDULED_DUE).set(due as f64),
            Err(error) => warn!(%error, "could not count the scheduled deletions due"),
        }
    }
}

/// Releases expired claims, claims one due deletion and runs it, on the schema as it is now.
async fn next(
    lane: usize,
    current: &CurrentEngine,
    options: &WorkerOptions,
    stop: &Arc<AtomicBool>,
    due: &DueGauge,
    report: &mut WorkerReport,
) -> Result<Next, WorkerError> {
    let engine = &current.get().await?;
    let database = engine.database();
    let released = super::release_expired(database, options.lease).await?;
    if released > 0 {
        warn!(lane, released, "released claims whose worker stopped sending heartbeats");
    }
    let Some(claim) = super::claim(database, options.max_attempts, options.lease).await? else {
        due.measure(database, options.max_attempts, true).await;
        return Ok(Next::NothingDue);
    };
    metrics::counter!(telemetry::SCHEDULED_CLAIMED, telemetry::MODEL => claim.model.clone()).increment(1);
    due.measure(database, options.max_attempts, false).await;
    info!(lane, guid = %claim.guid, model = %claim.model, id = %claim.object_id, attempt = claim.attempts, "claimed");
    let claim_stop = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicBool::new(false));
    let heartbeat = keep_alive(database.clone(), claim.clone(), options.lease, stop.clone(), &claim_stop, &lost);
    let result = run_claim(engine, &claim_stop, &claim).await;
    heartbeat.abort();
    if lost.load(Ordering::SeqCst) {
        // Another worker holds the deletion now: leave its row alone.
        warn!(guid = %claim.guid, "the claim was lost (its lease ran out); stopped before the next chunk");
        report.interrupted += 1;
        return Ok(Next::Continue);
    }
    let settle = match result {
        Ok(RunOutcome::Succeeded) => {
            report.succeeded += 1;
            Settle::Remove
        }
        Ok(RunOutcome::Skipped) => {
            info!(guid = %claim.guid, "the root's status no longer allows the deletion: dropped");
            report.cancelled += 1;
            Settle::Remove
        }
        Ok(RunOutcome::Interrupted) => {
            report.interrupted += 1;
            Settle::Release
        }
        Ok(RunOutcome::NotFound) => {
            warn!(guid = %claim.guid, id = %claim.object_id, "the root row does not exist: nothing to delete, dropped");
            report.not_found += 1;
            Settle::Remove
        }
        Ok(RunOutcome::Failed) => failed(report, &claim, options, "the deletion failed".to_owned(), Failure::Transient),
        Err((message, failure)) => failed(report, &claim, options, message, failure),
    };
    settle.record(database, &claim, options, stop).await?;
    Ok(Next::Continue)
}

/// What becomes of a claimed deletion's row once its attempt is over.
enum Settle {
    /// Done, dropped or not found: the row goes.
    Remove,
    /// Stopped: the claim goes back, its attempt not counted.
    Release,
    /// Failed: retried at this time, with the error kept.
    Retry(String, SystemTime),
    /// Failed on an error no retry fixes: kept as failed.
    GiveUp(String),
}

/// A failed attempt, counted and logged, and what becomes of its row.
fn failed(
    report: &mut WorkerReport,
    claim: &Claim,
    options: &WorkerOptions,
    message: String,
    failure: Failure,
) -> Settle {
    report.failed += 1;
    if failure == Failure::Transient {
        warn!(guid = %claim.guid, attempt = claim.attempts, error = %message, "deletion failed; it will be retried");
        Settle::Retry(message, SystemTime::now().checked_add(options.retry_delay).unwrap_or_else(latest_time))
    } else {
        warn!(guid = %claim.guid, error = %message, "deletion failed on an error no retry fixes; kept as failed");
        Settle::GiveUp(message)
    }
}

impl Settle {
    /// Writes it to the claimed row, waiting out a database that is restarting (the attempt
    /// often failed for that very reason): a claim left behind would keep the deletion from
    /// every worker until its lease ran out, hours later. Gives up when the worker stops.
    async fn record(
        &self,
        database: &Database,
        claim: &Claim,
        options: &WorkerOptions,
        stop: &AtomicBool,
    ) -> Result<(), DbError> {
        loop {
            let written = match self {
                Self::Remove => super::remove(database, claim).await,
                Self::Release => super::release(database, claim).await,
                Self::Retry(message, at) => super::failed(database, claim, message, *at).await,
                Self::GiveUp(message) => super::give_up(database, claim, message, options.max_attempts).await,
            };
            match written {
                Ok(_) => return Ok(()),
                Err(error) if database.classify(&error) == Failure::Transient && !stop.load(Ordering::SeqCst) => {
                    warn!(guid = %claim.guid, %error, "could not record the attempt on its claim; trying again after the poll interval");
                    pause(options.poll, stop).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// Heartbeats the claim on a timer of its own, so a long chunk or rate-limit wait never lets
/// the lease run out while the worker is alive. Sets `claim_stop` when the worker stops
/// (`stop`) or when the claim turns out to be lost (`lost` too), so the deletion stops before
/// its next chunk.
fn keep_alive(
    database: Database,
    claim: Claim,
    lease: Duration,
    stop: Arc<AtomicBool>,
    claim_stop: &Arc<AtomicBool>,
    lost: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let every = super::claim_heartbeat_every(lease);
    let (claim_stop, lost) = (claim_stop.clone(), lost.clone());
    tokio::spawn(async move {
        let (mut last_try, mut last_success) = (Instant::now(), Instant::now());
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if stop.load(Ordering::SeqCst) {
                claim_stop.store(true, Ordering::SeqCst);
            }
            if last_try.elapsed() < every {
                continue;
            }
            last_try = Instant::now();
            let still_ours = match super::heartbeat(&database, &claim).await {
                Ok(still_ours) => still_ours,
                Err(error) => {
                    warn!(%error, guid = %claim.guid, "heartbeat failed");
                    // Heartbeats failing for most of the lease: another worker may take the
                    // claim any moment, so this one must not go on.
                    last_success.elapsed() < lease * 3 / 4
                }
            };
            if still_ours {
                last_success = last_try;
            } else {
                lost.store(true, Ordering::SeqCst);
                claim_stop.store(true, Ordering::SeqCst);
                return;
            }
        }
    })
}

/// Runs one claimed deletion; an error is returned as the message kept with the claim, and
/// whether a retry can fix it.
async fn run_claim(engine: &Engine, stop: &Arc<AtomicBool>, claim: &Claim) -> Result<RunOutcome, (String, Failure)> {
    let plan = engine.plan(&claim.model).map_err(|error| {
        // No run is recorded for a model the config no longer has, but the deletion failed.
        RunOutcome::Failed.count();
        (chain(&error), Failure::Permanent)
    })?;
    let options = DeleteOptions {
        actor: claim.actor.clone().unwrap_or_else(default_actor),
        command: format!("cascade worker (scheduled deletion {})", claim.guid),
        stop: Some(stop.clone()),
        ..DeleteOptions::default()
    };
    let finished = engine.run_to_end(&plan, std::slice::from_ref(&claim.object_id), options, |_| {}).await;
    finished.map(|finished| finished.outcome).map_err(|error| (describe(engine, &error), engine.failure(&error)))
}

/// What the claim keeps of a failed deletion: the error, and for undeclared references each
/// foreign key with the relation to add.
fn describe(engine: &Engine, error: &DeleteError) -> String {
    match error {
        DeleteError::UnregisteredReferences(diagnostics) => {
            let found: Vec<String> = diagnostics
                .iter()
                .map(|d| format!("{} ({})", d.message, engine.sources().describe(&d.location)))
                .collect();
            format!("{error}: {}", found.join("; "))
        }
        _ => chain(error),
    }
}

/// An error with its causes, `outer: inner: ...`.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let described = cause.to_string();
        if !text.contains(&described) {
            text = format!("{text}: {described}");
        }
        source = cause.source();
    }
    text
}
