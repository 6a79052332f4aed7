//! Late children: a child row written after its parent's tombstone was applied (the sender
//! cannot see that race) names a key whose row is gone. Applied tombstones are kept for `[settings]
//! inbox_retention`; every `inbox_sweep_interval` the worker looks for child rows naming a kept
//! key and deletes or nullifies them as the tombstone's application did, for at most one
//! application's `inbox_budget_time`. After the window the tombstones are removed.

use std::time::{Instant, SystemTime};

use tracing::warn;

use super::apply::{ApplyError, Child, clean_up, still_named};
use super::{ApplyOptions, ApplyReport, InboxError, store};
use crate::config::RemoteModel;
use crate::engine::Engine;

/// Kept tombstones looked at per query of each child table.
const KEYS_PER_LOOK: u64 = 500;

/// Sweeps the kept tombstones of every remote model for late children, then removes those past
/// the retention window, at `now`; what it found and removed goes into `report`.
pub(super) async fn sweep(
    engine: &Engine,
    options: &ApplyOptions,
    now: SystemTime,
    report: &mut ApplyReport,
) -> Result<(), InboxError> {
    let options = &options.budgeted(&engine.config().settings);
    // One sweep runs for at most one application's time: the pending tombstones wait meanwhile.
    let (_, time) = engine.config().settings.inbox_budget();
    let deadline = Instant::now() + time;
    let retention = engine.config().settings.inbox_retention();
    let since = now.checked_sub(retention).unwrap_or(SystemTime::UNIX_EPOCH);
    for model in engine.config().remote_models.values() {
        match sweep_model(engine, model, (since, deadline), options, report).await {
            Ok(stopped) if stopped => {
                report.stopped = true;
                return Ok(());
            }
            Ok(_) => {}
            Err(SweepError::Inbox(error)) => return Err(error),
            Err(SweepError::Apply(error)) => {
                let error = crate::secret::redact(&error.to_string());
                warn!(model = %model.name.value, %error, "sweeping for late children failed");
                report.errors.push(format!("remote model `{}`, late children: {error}", model.name.value));
            }
        }
    }
    report.purged += store::purge(engine.database(), since).await?;
    Ok(())
}

enum SweepError {
    Inbox(InboxError),
    Apply(ApplyError),
}

impl From<ApplyError> for SweepError {
    fn from(error: ApplyError) -> Self {
        SweepError::Apply(error)
    }
}

/// Sweeps one remote model's kept tombstones, a page at a time; whether it was stopped.
async fn sweep_model(
    engine: &Engine,
    model: &RemoteModel,
    (since, deadline): (SystemTime, Instant),
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> Result<bool, SweepError> {
    let children = Child::all(engine, model)?;
    let category = &model.remote.category.value;
    let mut after = 0;
    // Past the deadline the rest waits for the next sweep.
    while Instant::now() < deadline {
        let kept = store::kept(engine.database(), category, (after, since), KEYS_PER_LOOK)
            .await
            .map_err(|error| SweepError::Inbox(error.into()))?;
        let Some((last, _)) = kept.last() else { return Ok(false) };
        after = *last;
        let keys: Vec<String> = kept.into_iter().map(|(_, key)| key).collect();
        // Most sweeps find nothing: looking first keeps them from recording empty runs.
        let named = still_named(engine, &children, &keys).await.map_err(ApplyError::from)?;
        let mut named: Vec<String> = named.into_iter().flatten().collect();
        named.sort();
        named.dedup();
        if named.is_empty() {
            continue;
        }
        warn!(model = %model.name.value, keys = named.len(), "late children of applied tombstones found");
        let token = uuid::Uuid::new_v4().simple().to_string();
        let cleaned = clean_up(engine, model, &named, &token, options).await?;
        report.late_rows += cleaned.rows();
        report.add_rows(cleaned.deleted, cleaned.nullified);
        if cleaned.stopped {
            return Ok(true);
        }
    }
    Ok(false)
}
