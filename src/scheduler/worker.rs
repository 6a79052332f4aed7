//! The worker: claims due scheduled deletions and runs them, `concurrency` at a time. Several
//! workers, on one machine or many, share one database with no other coordinator: claims are
//! conditional updates, heartbeats keep them, and a claim whose heartbeat is older than the
//! lease is released for another worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tracing::{info, warn};

use super::Claim;
use crate::config::Config;
use crate::db::Database;
use crate::engine::{DeleteOptions, Deletion};
use crate::planner;
use crate::schema::Schema;

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub concurrency: usize,
    /// How long to wait when nothing is due.
    pub poll: Duration,
    pub lease: Duration,
    pub max_attempts: u64,
    pub retry_delay: Duration,
    /// Stop once nothing is due instead of polling.
    pub once: bool,
}

/// What a worker did, per outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerReport {
    pub succeeded: u64,
    pub cancelled: u64,
    pub failed: u64,
    pub interrupted: u64,
}

impl WorkerReport {
    fn add(&mut self, other: &WorkerReport) {
        self.succeeded += other.succeeded;
        self.cancelled += other.cancelled;
        self.failed += other.failed;
        self.interrupted += other.interrupted;
    }
}

/// Runs until `stop` is set (after the current chunk, releasing the claim), or with `once`
/// until nothing is due.
pub async fn run(
    database: Database,
    config: Arc<Config>,
    schema: Arc<Schema>,
    options: WorkerOptions,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<WorkerReport> {
    let mut lanes = tokio::task::JoinSet::new();
    for lane in 0..options.concurrency.max(1) {
        let (database, config, schema, options, stop) =
            (database.clone(), config.clone(), schema.clone(), options.clone(), stop.clone());
        lanes.spawn(async move { work(lane, &database, &config, &schema, &options, &stop).await });
    }
    let mut report = WorkerReport::default();
    while let Some(lane) = lanes.join_next().await {
        report.add(&lane??);
    }
    Ok(report)
}

/// One lane: claim, run, repeat.
async fn work(
    lane: usize,
    database: &Database,
    config: &Config,
    schema: &Schema,
    options: &WorkerOptions,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<WorkerReport> {
    let mut report = WorkerReport::default();
    while !stop.load(Ordering::SeqCst) {
        let released = super::release_expired(database, options.lease).await?;
        if released > 0 {
            warn!(lane, released, "released claims whose worker stopped sending heartbeats");
        }
        let Some(claim) = super::claim(database, options.max_attempts).await? else {
            if options.once {
                break;
            }
            pause(options.poll, stop).await;
            continue;
        };
        info!(lane, guid = %claim.guid, model = %claim.model, id = %claim.object_id, attempt = claim.attempts, "claimed");
        match run_claim(database, config, schema, options, stop, &claim).await {
            Ok(Outcome::Succeeded) => {
                super::remove(database, claim.id).await?;
                report.succeeded += 1;
            }
            Ok(Outcome::Cancelled) => {
                info!(guid = %claim.guid, "the root's status no longer allows the deletion: dropped");
                super::remove(database, claim.id).await?;
                report.cancelled += 1;
            }
            Ok(Outcome::Interrupted) => {
                super::release(database, claim.id).await?;
                report.interrupted += 1;
            }
            Err(error) => {
                let message = format!("{error:#}");
                warn!(guid = %claim.guid, attempt = claim.attempts, error = %message, "deletion failed");
                super::failed(database, claim.id, &message, SystemTime::now() + options.retry_delay).await?;
                report.failed += 1;
            }
        }
    }
    Ok(report)
}

enum Outcome {
    Succeeded,
    Cancelled,
    Interrupted,
}

async fn run_claim(
    database: &Database,
    config: &Config,
    schema: &Schema,
    options: &WorkerOptions,
    stop: &Arc<AtomicBool>,
    claim: &Claim,
) -> anyhow::Result<Outcome> {
    let plan = planner::compile(config, &claim.model)?;
    let delete_options = DeleteOptions {
        actor: claim.actor.clone().unwrap_or_else(crate::engine::executor::default_actor),
        command: format!("cascade worker (scheduled deletion {})", claim.guid),
        stop: Some(stop.clone()),
        ..DeleteOptions::default()
    };
    let ids = [claim.object_id.clone()];
    let mut deletion = Deletion::start(database, config, schema, &plan, &ids, delete_options).await?;
    if !deletion.summary().skipped.is_empty() {
        deletion.finish("skipped", None).await?;
        return Ok(Outcome::Cancelled);
    }
    let heartbeat_every = (options.lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
    let mut last_heartbeat = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            deletion.finish("interrupted", None).await?;
            return Ok(Outcome::Interrupted);
        }
        match deletion.chunk().await {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                let message = error.to_string();
                if let Err(record) = deletion.finish("failed", Some(&message)).await {
                    warn!(%record, "could not record the failed run");
                }
                return Err(error.into());
            }
        }
        if last_heartbeat.elapsed() >= heartbeat_every {
            super::heartbeat(database, claim.id).await?;
            last_heartbeat = Instant::now();
        }
    }
    deletion.finish("succeeded", None).await?;
    Ok(Outcome::Succeeded)
}

/// Sleeps `duration`, waking early when `stop` is set.
async fn pause(duration: Duration, stop: &AtomicBool) {
    let until = Instant::now() + duration;
    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(100).min(until - Instant::now())).await;
    }
}
