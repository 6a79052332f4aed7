//! Scheduled deletions (`cascade_scheduled_deletion`): scheduling, cancelling, listing, and the
//! claims a worker takes on due rows. Times are UTC, computed by the tool, so every worker must
//! keep its clock in sync (NTP).

pub mod worker;

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::config::Settings;
use crate::db::sql::{Param, SqlBuilder};
use crate::db::{Database, DbError, migrate};

/// How far out `schedule` puts a deletion when no date is given.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why a scheduled deletion could not be scheduled, cancelled or listed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A statement failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A worker is running the deletion, so it can no longer be changed.
    #[error("the deletion of {model} {object_id} is in progress: it cannot be {what} now")]
    InProgress {
        /// The root model.
        model: String,
        /// The root row's id.
        object_id: String,
        /// What was refused: `rescheduled` or `cancelled`.
        what: &'static str,
    },
    /// There is no scheduled deletion of this row to cancel.
    #[error("no deletion of {model} {object_id} is scheduled")]
    NotScheduled {
        /// The root model.
        model: String,
        /// The root row's id.
        object_id: String,
    },
}

/// A row of `cascade_scheduled_deletion`, as `cascade scheduled` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scheduled {
    /// The deletion's stable id, kept when it is rescheduled.
    pub guid: String,
    /// The root model.
    pub model: String,
    /// The root row's id.
    pub object_id: String,
    /// When the deletion is due (UTC), as text.
    pub date_scheduled: String,
    /// `pending`, `in_progress`, `failed` (no attempts left) or `interrupted` (its worker died).
    pub state: String,
    /// Attempts made so far.
    pub attempts: u64,
    /// The error of the latest failed attempt, if any.
    pub last_error: Option<String>,
    /// Who scheduled the deletion, if given.
    pub actor: Option<String>,
}

/// A due deletion a worker has claimed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Claim {
    pub id: i64,
    /// Names this claim in every later update of the row.
    pub token: String,
    pub guid: String,
    pub model: String,
    pub object_id: String,
    pub actor: Option<String>,
    /// Attempts so far, this one included.
    pub attempts: u64,
    /// How long the claim lives past each heartbeat: the claiming worker's lease.
    pub lease: Duration,
}

fn text(value: &str) -> Param {
    Param::text(value)
}

/// Schedules the deletion of `model` `object_id` at `at`. Scheduling it again moves the date
/// (and resets its attempts) but keeps its guid. Returns the guid.
pub async fn schedule(
    database: &Database,
    model: &str,
    object_id: &str,
    at: SystemTime,
    actor: Option<&str>,
    data: Option<&str>,
) -> Result<String, ScheduleError> {
    migrate(database).await?;
    let mut transaction = database.begin_write().await?;
    let mut sql = database.sql();
    sql.push(
        "SELECT guid, CASE WHEN in_progress THEN 'yes' ELSE 'no' END AS in_progress FROM cascade_scheduled_deletion \
         WHERE model = ",
    );
    sql.bind(text(model)).push(" AND object_id = ").bind(text(object_id));
    let existing = transaction.fetch_records(&sql.finish()).await?;
    let optional = |value: Option<&str>| Param::text(value.unwrap_or_default());
    let guid = match existing.first() {
        Some(row) if row.text("in_progress")? == "yes" => {
            transaction.rollback().await?;
            return Err(ScheduleError::InProgress {
                model: model.into(),
                object_id: object_id.into(),
                what: "rescheduled",
            });
        }
        Some(row) => {
            let guid = row.text("guid")?;
            let mut sql = database.sql();
            sql.push("UPDATE cascade_scheduled_deletion SET date_scheduled = ").timestamp(at);
            sql.push(", actor = NULLIF(").bind(optional(actor)).push(", ''), data = NULLIF(").bind(optional(data));
            sql.push(", ''), attempts = 0, last_error = NULL WHERE guid = ").bind(text(&guid));
            transaction.execute(&sql.finish()).await?;
            guid
        }
        None => {
            let guid = uuid::Uuid::new_v4().simple().to_string();
            let mut sql = database.sql();
            sql.push(
                "INSERT INTO cascade_scheduled_deletion (guid, model, object_id, date_scheduled, actor, data) VALUES (",
            );
            sql.binds([text(&guid), text(model), text(object_id)]).push(", ").timestamp(at);
            sql.push(", NULLIF(").bind(optional(actor)).push(", ''), NULLIF(").bind(optional(data)).push(", ''))");
            transaction.execute(&sql.finish()).await?;
            guid
        }
    };
    transaction.commit().await?;
    Ok(guid)
}

/// Removes a scheduled deletion that has not started; its guid.
pub async fn cancel(database: &Database, model: &str, object_id: &str) -> Result<String, ScheduleError> {
    migrate(database).await?;
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_scheduled_deletion WHERE model = ").bind(text(model));
    sql.push(" AND object_id = ").bind(text(object_id)).push(" AND NOT in_progress RETURNING guid");
    let removed = database.fetch_texts_alone(&sql.finish()).await?;
    if let Some(guid) = removed.first().and_then(|row| row[0].clone()) {
        return Ok(guid);
    }
    let mut exists = database.sql();
    exists.push("SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE model = ").bind(text(model));
    exists.push(" AND object_id = ").bind(text(object_id));
    let in_progress = database.fetch_count(&exists.finish()).await? > 0;
    let (model, object_id) = (model.to_owned(), object_id.to_owned());
    Err(if in_progress {
        ScheduleError::InProgress { model, object_id, what: "cancelled" }
    } else {
        ScheduleError::NotScheduled { model, object_id }
    })
}

/// Every scheduled deletion, soonest first, with its state: `pending`, `in_progress`, `failed`
/// (no attempts left, by `settings`), or `interrupted` (claimed, but its worker stopped sending
/// heartbeats: it is released for another worker once the lease has passed).
pub async fn list(database: &Database, settings: &Settings) -> Result<Vec<Scheduled>, ScheduleError> {
    migrate(database).await?;
    let backend = database.backend();
    let silent_since = SystemTime::now().checked_sub(worker_gone_after(settings)).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut sql = database.sql();
    sql.push("SELECT guid, model, object_id, ").push(&backend.timestamp_text("date_scheduled"));
    sql.push(" AS date_scheduled, CASE WHEN in_progress AND heartbeat < ").timestamp(silent_since);
    sql.push(" THEN 'interrupted' WHEN in_progress THEN 'in_progress' WHEN attempts >= ");
    sql.bind(Param::integer(i64::try_from(settings.max_attempts()).unwrap_or(i64::MAX)));
    sql.push(" THEN 'failed' ELSE 'pending' END AS state, ").text("attempts").push(" AS attempts, last_error, actor ");
    // The table's columns, not the text aliases of the same names.
    sql.push("FROM cascade_scheduled_deletion ORDER BY cascade_scheduled_deletion.date_scheduled, ");
    sql.push("cascade_scheduled_deletion.id");
    let rows = database.fetch_records(&sql.finish()).await?;
    let scheduled = rows.into_iter().map(|row| {
        Ok(Scheduled {
            guid: row.text("guid")?,
            model: row.text("model")?,
            object_id: row.text("object_id")?,
            date_scheduled: row.text("date_scheduled")?,
            state: row.text("state")?,
            attempts: row.parsed("attempts")?,
            last_error: row.optional_text("last_error")?,
            actor: row.optional_text("actor")?,
        })
    });
    Ok(scheduled.collect::<Result<_, DbError>>()?)
}

/// How often a worker heartbeats its claim: a quarter of the lease, from 0.2 to 30 seconds.
pub(crate) fn claim_heartbeat_every(lease: Duration) -> Duration {
    (lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(30))
}

/// How long a claim's heartbeat may be silent before its worker counts as gone: two missed
/// heartbeats, and never less than the run lease.
fn worker_gone_after(settings: &Settings) -> Duration {
    settings.run_lease().max(claim_heartbeat_every(settings.lease()) * 2)
}

/// Releases claims past their expiry (their worker died); how many. A claim made before claims
/// carried their expiry expires `lease` after its last heartbeat.
pub(crate) async fn release_expired(database: &Database, lease: Duration) -> Result<u64, DbError> {
    let now = SystemTime::now();
    let mut sql = database.sql();
    sql.push("UPDATE cascade_scheduled_deletion SET in_progress = FALSE, claim_token = NULL, claim_expires_at = NULL ");
    sql.push("WHERE in_progress AND (claim_expires_at < ").timestamp(now);
    sql.push(" OR (claim_expires_at IS NULL AND heartbeat < ")
        .timestamp(now.checked_sub(lease).unwrap_or(SystemTime::UNIX_EPOCH))
        .push("))");
    database.execute_alone(&sql.finish()).await
}

/// When a claim heartbeated at `now` expires.
fn expiry(now: SystemTime, lease: Duration) -> SystemTime {
    now.checked_add(lease).filter(|at| *at <= crate::db::sql::latest_time()).unwrap_or_else(crate::db::sql::latest_time)
}

/// Deletions scheduled for later (waiting, with attempts left, not due yet), and when the first
/// of them is due (UTC, as text).
pub(crate) async fn count_later(database: &Database, max_attempts: u64) -> Result<(u64, Option<String>), DbError> {
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT ").text("COUNT(*)").push(" AS later, ").push(&backend.timestamp_text("MIN(date_scheduled)"));
    sql.push(" AS next_due FROM cascade_scheduled_deletion WHERE NOT in_progress AND date_scheduled > ");
    sql.timestamp(SystemTime::now()).push(" AND attempts < ");
    sql.bind(Param::integer(i64::try_from(max_attempts).unwrap_or(i64::MAX)));
    let rows = database.fetch_records(&sql.finish()).await?;
    let Some(row) = rows.first() else { return Ok((0, None)) };
    Ok((row.parsed("later")?, row.optional_text("next_due")?))
}

/// Deletions due now that are not done: waiting for a worker or running, with attempts left
/// (the rows [`claim`] takes from, and those claimed).
pub(crate) async fn count_due(database: &Database, max_attempts: u64) -> Result<u64, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE (date_scheduled <= ").timestamp(SystemTime::now());
    sql.push(" AND attempts < ").bind(Param::integer(i64::try_from(max_attempts).unwrap_or(i64::MAX)));
    sql.push(") OR in_progress");
    database.fetch_count(&sql.finish()).await
}

/// Claims one due deletion that has attempts left: a conditional update (`in_progress` false →
/// true), on PostgreSQL and MySQL over a row locked with `FOR UPDATE SKIP LOCKED`, so no two
/// workers ever claim the same row. The claim carries a fresh token: every later update of the
/// row names it, so a worker whose claim expired and went to another cannot touch it any more.
/// Where an `UPDATE` returns nothing (MySQL), the row is locked first, then claimed and read in
/// the same transaction.
pub(crate) async fn claim(database: &Database, max_attempts: u64, lease: Duration) -> Result<Option<Claim>, DbError> {
    let now = SystemTime::now();
    let token = uuid::Uuid::new_v4().simple().to_string();
    let backend = database.backend();
    // Its id, as text when it is read back rather than compared.
    let due = |sql: &mut SqlBuilder, as_text: bool| {
        sql.push("SELECT ");
        if as_text {
            sql.text("id")
        } else {
            sql.push("id")
        };
        sql.push(" FROM cascade_scheduled_deletion WHERE NOT in_progress AND date_scheduled <= ");
        sql.timestamp(now);
        sql.push(" AND attempts < ").bind(Param::integer(i64::try_from(max_attempts).unwrap_or(i64::MAX)));
        sql.push(" ORDER BY date_scheduled, id LIMIT 1").push(backend.claim_lock());
    };
    let claimed = |sql: &mut SqlBuilder| {
        sql.push("UPDATE cascade_scheduled_deletion SET in_progress = TRUE, attempts = attempts + 1, claim_token = ");
        sql.bind(text(&token)).push(", heartbeat = ").timestamp(now);
        sql.push(", claim_expires_at = ").timestamp(expiry(now, lease)).push(" WHERE id = ");
    };
    let fields = |sql: &mut SqlBuilder| {
        sql.text("id").push(" AS id, guid, model, object_id, actor, ").text("attempts").push(" AS attempts");
    };
    let rows = if backend.tuning().updates_return {
        let mut sql = database.sql();
        claimed(&mut sql);
        sql.push("(");
        due(&mut sql, false);
        sql.push(") AND NOT in_progress RETURNING ");
        fields(&mut sql);
        database.fetch_records_alone(&sql.finish()).await?
    } else {
        let mut transaction = database.begin_write().await?;
        let mut pick = database.sql();
        due(&mut pick, true);
        let Some(id) = crate::db::first_column(transaction.fetch_texts(&pick.finish()).await?).pop() else {
            transaction.commit().await?;
            return Ok(None);
        };
        let id = Param::integer(id.parse().map_err(|_| DbError::UnreadableColumn {
            column: "id".to_owned(),
            problem: format!("holds `{id}`, which does not read as an integer"),
        })?);
        let mut update = database.sql();
        claimed(&mut update);
        update.bind(id.clone());
        transaction.execute(&update.finish()).await?;
        let mut read = database.sql();
        read.push("SELECT ");
        fields(&mut read);
        read.push(" FROM cascade_scheduled_deletion WHERE id = ").bind(id);
        let rows = transaction.fetch_records(&read.finish()).await?;
        transaction.commit().await?;
        rows
    };
    let Some(row) = rows.first() else { return Ok(None) };
    Ok(Some(Claim {
        id: row.parsed("id")?,
        token,
        guid: row.text("guid")?,
        model: row.text("model")?,
        object_id: row.text("object_id")?,
        actor: row.optional_text("actor")?,
        attempts: row.parsed("attempts")?,
        lease,
    }))
}

/// Runs one update of a row this claim still holds; whether it did.
async fn update_claim(database: &Database, claim: &Claim, set: impl FnOnce(&mut SqlBuilder)) -> Result<bool, DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_scheduled_deletion SET ");
    set(&mut sql);
    sql.push(" WHERE id = ").bind(Param::integer(claim.id));
    sql.push(" AND in_progress AND claim_token = ").bind(text(&claim.token));
    Ok(database.execute_alone(&sql.finish()).await? > 0)
}

/// The claim is alive; `false` when it is no longer this worker's (it expired and was released).
pub(crate) async fn heartbeat(database: &Database, claim: &Claim) -> Result<bool, DbError> {
    let now = SystemTime::now();
    update_claim(database, claim, |sql| {
        sql.push("heartbeat = ").timestamp(now).push(", claim_expires_at = ").timestamp(expiry(now, claim.lease));
    })
    .await
}

/// The claim goes back unused (the worker is stopping), its attempt not counted.
pub(crate) async fn release(database: &Database, claim: &Claim) -> Result<bool, DbError> {
    update_claim(database, claim, |sql| {
        sql.push("in_progress = FALSE, claim_token = NULL, attempts = attempts - 1");
    })
    .await
}

/// The attempt failed: the row waits until `retry_at`, with the error kept.
pub(crate) async fn failed(
    database: &Database,
    claim: &Claim,
    error: &str,
    retry_at: SystemTime,
) -> Result<bool, DbError> {
    update_claim(database, claim, |sql| {
        sql.push("in_progress = FALSE, claim_token = NULL, last_error = ").bind(text(&crate::secret::redact(error)));
        sql.push(", date_scheduled = ").timestamp(retry_at);
    })
    .await
}

/// The attempt failed in a way no retry fixes: the row is kept as failed at once (its attempts
/// used up), with the error.
pub(crate) async fn give_up(
    database: &Database,
    claim: &Claim,
    error: &str,
    max_attempts: u64,
) -> Result<bool, DbError> {
    update_claim(database, claim, |sql| {
        sql.push("in_progress = FALSE, claim_token = NULL, last_error = ");
        sql.bind(text(&crate::secret::redact(error))).push(", attempts = ");
        sql.bind(Param::integer(i64::try_from(max_attempts).unwrap_or(i64::MAX)));
    })
    .await
}

/// The deletion is done (or was cancelled through its status): the row goes, if this claim
/// still holds it.
pub(crate) async fn remove(database: &Database, claim: &Claim) -> Result<bool, DbError> {
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_scheduled_deletion WHERE id = ").bind(Param::integer(claim.id));
    sql.push(" AND claim_token = ").bind(text(&claim.token));
    Ok(database.execute_alone(&sql.finish()).await? > 0)
}
