//! `cascade plan MODEL --inbox`: what a remote model's pending tombstones would delete and
//! nullify if a worker applied them now, counted in the database without changing anything.

use std::time::SystemTime;

use indexmap::IndexMap;
use serde::Serialize;

use super::apply::{ApplyError, Child};
use super::{InboxError, store};
use crate::config::{OnDelete, RemoteModel};
use crate::engine::{Engine, count_naming};
use crate::planner;

/// The most pending tombstones one preview counts (the oldest): the counts say what the next
/// runs would do, and stay quick.
pub const PREVIEW_TOMBSTONES: u64 = 10_000;

/// What a remote model's pending tombstones would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InboxPreview {
    /// The remote model.
    pub model: String,
    /// The category it reads.
    pub category: String,
    /// Its tombstones waiting to be applied.
    pub pending: u64,
    /// Those counted here: the oldest, at most [`PREVIEW_TOMBSTONES`].
    pub counted: u64,
    /// Each relation, deletes first, as they would run.
    pub relations: Vec<RelationPreview>,
}

/// What one relation of the remote model would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelationPreview {
    /// The child model.
    pub model: String,
    /// Its column naming the remote model's key.
    pub column: String,
    /// `delete` or `nullify`.
    pub on_delete: &'static str,
    /// Child rows naming one of the counted keys.
    pub rows: u64,
    /// Rows each model would lose through this relation (the child's own cascade included).
    pub deleted: IndexMap<String, u64>,
    /// Rows of each model whose relation column would be set to NULL through this relation.
    pub nullified: IndexMap<String, u64>,
}

/// Counts what the pending tombstones of the remote model `name` would delete and nullify.
pub async fn preview(engine: &Engine, name: &str) -> Result<InboxPreview, InboxError> {
    let config = engine.config();
    let model = config.remote_models.get(name).ok_or_else(|| InboxError::NotRemote { model: name.to_owned() })?;
    let category = model.remote.category.value.clone();
    let database = engine.database();
    let (pending, keys) = if database.table_exists("cascade_inbox").await? {
        let stats = super::stats(database, config, SystemTime::now()).await?;
        let pending = stats.iter().find(|c| c.category == category).map_or(0, |c| c.pending);
        (pending, store::pending_keys(database, &category, PREVIEW_TOMBSTONES).await?)
    } else {
        (0, Vec::new())
    };
    let relations = count_relations(engine, model, &keys).await.map_err(|error| match error {
        ApplyError::Batch(crate::cleanup::batches::BatchError::Database(error)) => InboxError::Database(error),
        error => InboxError::Preview(error.to_string()),
    })?;
    Ok(InboxPreview { model: name.to_owned(), category, pending, counted: keys.len() as u64, relations })
}

async fn count_relations(
    engine: &Engine,
    model: &RemoteModel,
    keys: &[String],
) -> Result<Vec<RelationPreview>, ApplyError> {
    let mut children = Child::all(engine, model)?;
    children.sort_by_key(|child| child.relation.action() != OnDelete::Delete);
    let (database, config) = (engine.database(), engine.config());
    let mut relations = Vec::new();
    for child in &children {
        let column = child.relation.columns().first().map_or(String::new(), |column| column.value.clone());
        let mut preview = RelationPreview {
            model: child.model.to_owned(),
            column,
            on_delete: if child.relation.action() == OnDelete::Nullify { "nullify" } else { "delete" },
            rows: 0,
            deleted: IndexMap::new(),
            nullified: IndexMap::new(),
        };
        if !keys.is_empty() {
            preview.rows = database.fetch_count(&child.count(engine, keys)).await.map_err(ApplyError::from)?;
            if preview.on_delete == "nullify" {
                preview.nullified.insert(child.model.to_owned(), preview.rows);
            } else {
                let plan = planner::compile(config, child.model)?;
                let target = (child.column.as_str(), &child.column_type);
                let counts = count_naming(database, (config, engine.schema()), &plan, target, keys.to_vec())
                    .await
                    .map_err(|error| ApplyError::Unresolved(error.to_string()))?;
                preview.deleted = counts.totals;
                preview.nullified = counts.nullify;
            }
        }
        relations.push(preview);
    }
    Ok(relations)
}
