//! Retention on a schedule, for the worker: every `[settings] retention_interval`, each model
//! with `retention` is pruned (children before parents). A prune that fails is logged and tried
//! again at the next round; the worker goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use tracing::{info, warn};

use super::{PartitionError, PruneOptions, policies, prune};
use crate::config::Config;
use crate::db::Database;
use crate::stop::pause;

/// What the scheduled prunes did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Partitions dropped.
    pub dropped: u64,
    /// Prunes of a model that failed.
    pub failed: u64,
}

/// Prunes every model with `retention` now and then every `interval`, until `stop` is set; with
/// `once`, one round only.
pub async fn run_retention(
    database: &Database,
    config: &Config,
    options: &PruneOptions,
    interval: Duration,
    once: bool,
    stop: Arc<AtomicBool>,
) -> RetentionReport {
    let mut report = RetentionReport::default();
    while !stop.load(Ordering::SeqCst) {
        match round(database, config, options).await {
            Ok(round) => {
                report.dropped += round.dropped;
                report.failed += round.failed;
            }
            Err(error) => {
                warn!(%error, "retention could not run; trying again after the retention interval");
                report.failed += 1;
            }
        }
        if once {
            break;
        }
        pause(interval, &stop).await;
    }
    report
}

/// One round: the schema is read again (partitions come and go), then each policy is pruned.
async fn round(
    database: &Database,
    config: &Config,
    options: &PruneOptions,
) -> Result<RetentionReport, PartitionError> {
    let schema = crate::schema::introspect(database).await?;
    let mut report = RetentionReport::default();
    for policy in policies(config, &schema, database, None)? {
        match prune(database, config, &schema, &policy, SystemTime::now(), options).await {
            Ok(dropped) => {
                info!(model = %policy.model.name.value, partitions = dropped.len(), "retention pruned");
                report.dropped += dropped.len() as u64;
            }
            Err(error) => {
                warn!(model = %policy.model.name.value, %error, "retention failed; trying again at the next round");
                report.failed += 1;
            }
        }
    }
    Ok(report)
}
