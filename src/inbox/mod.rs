//! The receiving side of tombstones: deletions made in another database, delivered by its outbox,
//! turned into deletions here. A remote model (`[models.X] remote = { category = "..." }`) reads
//! one category; its tombstones are taken into `cascade_inbox` (acknowledged only once that
//! transaction has committed, a redelivered message the same row), and a worker applies them as
//! the deletion of the remote model's local children, children first, in batches, recorded in
//! the audit trail like every deletion.
//!
//! ```no_run
//! # async fn example(engine: cascade::engine::Engine) -> Result<(), Box<dyn std::error::Error>> {
//! let body = std::io::read_to_string(std::io::stdin())?;
//! let received = cascade::inbox::receive(engine.database(), "control", &body).await?;
//! println!("{} new of {}", received.new, received.messages);
//! let applied = cascade::inbox::apply(&engine, &cascade::inbox::ApplyOptions::default()).await?;
//! println!("{} tombstones applied", applied.applied);
//! # Ok(())
//! # }
//! ```

mod apply;
#[cfg(feature = "kafka")]
mod consume;
mod preview;
mod serve;
mod store;
mod sweep;

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub use apply::{ApplyOptions, ApplyReport, apply, run_applier};
#[cfg(feature = "kafka")]
pub use consume::{ConsumeError, ConsumeOptions, ConsumeReport, consume};
pub use preview::{InboxPreview, PREVIEW_TOMBSTONES, RelationPreview, preview};
pub use serve::{LISTENING, MAX_BODY_BYTES, ServeOptions, ServeReport, serve};

use crate::config::Config;
use crate::db::{Database, DbError};

/// Why tombstones could not be taken in or applied.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// The delivered body is not the JSON array of messages an outbox sink sends.
    #[error("cannot read the delivered messages: {0} (expected the JSON array an outbox sink sends)")]
    Body(serde_json::Error),
    /// A message lacks what a tombstone needs.
    #[error("message {index} of the delivery has an empty `{field}`")]
    EmptyField {
        /// Its position in the array, from 1.
        index: usize,
        /// The field.
        field: &'static str,
    },
    /// The inbox's database failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A preview was asked of a model that is not remote.
    #[error("`{model}` is not a remote model: only a remote model's deletions come through the inbox")]
    NotRemote {
        /// The model.
        model: String,
    },
    /// A relation of the remote model could not be counted.
    #[error("cannot count what the tombstones would delete: {0}")]
    Preview(String),
}

/// One message of an outbox sink's delivery, as the inbox reads it (other fields are ignored).
#[derive(Debug, Deserialize)]
struct Message {
    idempotency_key: String,
    category: String,
    #[serde(default)]
    model: String,
    object_identifier: String,
    #[serde(default)]
    payload: serde_json::Value,
    #[serde(default)]
    date_added: Option<String>,
}

/// A tombstone to take in.
#[derive(Debug)]
struct TombstoneIn {
    idempotency_key: String,
    category: String,
    /// The sender's model.
    model: String,
    /// The deleted row's key.
    key: String,
    payload: Option<String>,
    sent_at: Option<String>,
}

/// A pending tombstone a worker claimed.
#[derive(Debug, Clone)]
struct Tombstone {
    id: i64,
    category: String,
    key: String,
    /// Claims so far, this one included.
    attempts: u64,
}

/// What one delivery brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Received {
    /// Messages in the delivery.
    pub messages: u64,
    /// Those not received before.
    pub new: u64,
}

/// Takes the tombstones of one delivery from `source` (the sending database, as the receiver
/// names it) into the inbox, all in one transaction: when this returns `Ok`, they are committed
/// and the delivery may be acknowledged. A message received before from the same source (its
/// idempotency key) is not taken again. Nothing is taken when any message cannot be read.
pub async fn receive(database: &Database, source: &str, body: &str) -> Result<Received, InboxError> {
    let tombstones = parse_delivery(body)?;
    crate::db::migrate(database).await?;
    take(database, source, &tombstones).await
}

/// The tombstones of a delivery's body; an error for the first message that is not one.
fn parse_delivery(body: &str) -> Result<Vec<TombstoneIn>, InboxError> {
    let messages: Vec<Message> = serde_json::from_str(body).map_err(InboxError::Body)?;
    (1..).zip(messages).map(|(index, message)| message.tombstone(index)).collect()
}

impl Message {
    /// The tombstone of the message at `index` (from 1) of its delivery.
    fn tombstone(self, index: usize) -> Result<TombstoneIn, InboxError> {
        for (field, value) in [
            ("idempotency_key", &self.idempotency_key),
            ("category", &self.category),
            ("object_identifier", &self.object_identifier),
        ] {
            if value.is_empty() {
                return Err(InboxError::EmptyField { index, field });
            }
        }
        Ok(TombstoneIn {
            idempotency_key: self.idempotency_key,
            category: self.category,
            model: self.model,
            key: self.object_identifier,
            payload: (!self.payload.is_null()).then(|| self.payload.to_string()),
            sent_at: self.date_added,
        })
    }
}

/// Inserts `tombstones` from `source` in one transaction, committed when this returns `Ok`.
async fn take(database: &Database, source: &str, tombstones: &[TombstoneIn]) -> Result<Received, InboxError> {
    let mut transaction = database.begin_write().await?;
    let new = store::insert(database, &mut transaction, source, tombstones).await?;
    transaction.commit().await?;
    Ok(Received { messages: tombstones.len() as u64, new })
}

/// The inbox of one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryInbox {
    /// The category.
    pub category: String,
    /// The remote model that reads it; none when no remote model of the config does (its
    /// tombstones wait).
    pub remote_model: Option<String>,
    /// Tombstones waiting to be applied.
    pub pending: u64,
    /// Tombstones applied (kept for the retention window).
    pub applied: u64,
    /// Tombstones whose application failed too often: they wait for an operator.
    pub parked: u64,
    /// How long the oldest pending tombstone has waited, in seconds (0 with none pending).
    pub oldest_pending_age_seconds: f64,
}

/// The inbox per category at `now`; empty before anything was received.
pub async fn stats(database: &Database, config: &Config, now: SystemTime) -> Result<Vec<CategoryInbox>, InboxError> {
    if !database.table_exists("cascade_inbox").await? {
        return Ok(Vec::new());
    }
    let counts = store::counts(database).await?;
    Ok(counts
        .into_iter()
        .map(|(category, pending, applied, parked, oldest)| {
            let oldest = oldest.and_then(|oldest| humantime::parse_rfc3339_weak(&oldest).ok()).unwrap_or(now);
            CategoryInbox {
                remote_model: config.remote_model_of(&category).map(|model| model.name.value.clone()),
                category,
                pending,
                applied,
                parked,
                oldest_pending_age_seconds: now.duration_since(oldest).unwrap_or_default().as_secs_f64(),
            }
        })
        .collect())
}
