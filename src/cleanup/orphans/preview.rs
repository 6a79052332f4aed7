//! The dry run of deleting the orphans: what each child model's orphans would take with them
//! (counted through its plan), and what would be set to NULL or left alone.

use indexmap::IndexMap;
use serde::Serialize;

use super::relations::Candidate;
use super::remote::SWEPT;
use super::sql::count_dangling;
use super::{LeftAlone, OrphanError, OrphanReport, RelationOrphans, UNDECLARED, cannot_clean, deletes_first};
use crate::config::{Config, OnDelete};
use crate::db::Database;
use crate::engine::{self, Dangling, Engine};
use crate::planner::{self, CheckedConfig};
use crate::schema::{Schema, Table};

/// What deleting the orphans of a report would remove, counted without changing anything.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeletePreview {
    /// One entry per child model and action whose orphans would be cleaned up.
    pub roots: Vec<RootPreview>,
    /// Rows each model would lose, summed over `roots` (a row reached from orphans of two
    /// models, such as an orphaned child of an orphan, counts once for each).
    pub totals: IndexMap<String, u64>,
    /// Rows of each model whose relation column would be set to NULL, summed over `roots`.
    pub nullify: IndexMap<String, u64>,
    /// Relations with orphans that deleting leaves alone, and why.
    pub left_alone: Vec<LeftAlone>,
}

/// The orphans of one child model that get one action, and what that removes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RootPreview {
    /// The child model.
    pub model: String,
    /// `delete`: each orphan is deleted as the root of its own cascade; `nullify`: its relation
    /// column is set to NULL (what its relation declares for a deleted parent).
    pub action: OnDelete,
    /// The relation columns by which its rows are orphans, a relation's as its `column` writes
    /// them (`a, b` over several).
    pub columns: Vec<String>,
    /// Orphan rows of the model (a row orphaned by two of `columns` counts once).
    pub orphans: u64,
    /// Orphans whose `status` does not allow a deletion (they would be skipped).
    pub skipped_by_status: u64,
    /// Rows each model would lose: the orphans and everything below them.
    pub totals: IndexMap<String, u64>,
    /// Rows of each model whose relation column would be set to NULL.
    pub nullify: IndexMap<String, u64>,
}

/// The dry run of deleting the orphans in `report`: per child model, each orphan of a delete
/// relation as the root of its own cascade (counted through the model's plan, with the
/// engine's counting facility and an anti-join for the roots, so no keys are loaded), and each
/// orphan of a nullify relation as a row whose column would be set to NULL. Undeclared foreign
/// keys are left alone: only the config says what a row's children are.
pub async fn preview_delete(
    database: &Database,
    config: &CheckedConfig,
    schema: &Schema,
    report: &OrphanReport,
) -> Result<DeletePreview, OrphanError> {
    let (groups, left_alone) = groups(report);
    let mut preview = DeletePreview { left_alone, ..DeletePreview::default() };
    let backend = database.backend();
    for ((model, action), relations) in groups {
        let dangling: Vec<Dangling> = relations
            .iter()
            .map(|relation| Dangling {
                columns: relation.columns.clone(),
                parent_table: parent_config_table(config, relation),
                parent_key: relation.parent_key.clone(),
            })
            .collect();
        let columns = relations.iter().map(|relation| relation.column()).collect();
        let root = match action {
            // As `delete` cleans them: an orphan goes by its own cascade (see there).
            OnDelete::Delete | OnDelete::Database => {
                let plan = match planner::compile(config, model) {
                    Ok(plan) => plan,
                    Err(error) => {
                        let reason = cannot_clean(error);
                        preview.left_alone.extend(relations.iter().map(|relation| LeftAlone::of(relation, &reason)));
                        continue;
                    }
                };
                let counts = engine::count_dangling(database, config, schema, &plan, &dangling)
                    .await
                    .map_err(|source| OrphanError::Count { model: model.to_owned(), source })?;
                RootPreview {
                    model: model.to_owned(),
                    action,
                    columns,
                    orphans: counts.rows.get(&plan.root.step).copied().unwrap_or(0),
                    skipped_by_status: counts.skipped_by_status,
                    totals: counts.totals,
                    nullify: counts.nullify,
                }
            }
            OnDelete::Nullify => {
                let Some(table) = config.model(model).and_then(|m| schema.table(&m.table.value)) else { continue };
                let candidates: Vec<Option<Candidate<'_>>> =
                    relations.iter().map(|relation| candidate_of(config, schema, relation, table)).collect();
                let rows = database
                    .fetch_count(&count_dangling(backend, table, &candidates))
                    .await
                    .map_err(|source| OrphanError::Database { relation: format!("`{model}`"), source })?;
                RootPreview {
                    model: model.to_owned(),
                    action,
                    columns,
                    orphans: rows,
                    skipped_by_status: 0,
                    totals: IndexMap::new(),
                    // Each relation's column is set to NULL by an update of its own, and counted
                    // so by the run: a row dangling by two columns is two.
                    nullify: IndexMap::from([(model.to_owned(), relations.iter().map(|r| r.orphans).sum())]),
                }
            }
        };
        for (model, rows) in &root.totals {
            *preview.totals.entry(model.clone()).or_default() += rows;
        }
        for (model, rows) in &root.nullify {
            *preview.nullify.entry(model.clone()).or_default() += rows;
        }
        preview.roots.push(root);
    }
    Ok(preview)
}

/// What `--confirm` would refuse before deleting anything (see [`Engine::refuse_undeletable`]),
/// for the models of `preview` with orphans to delete: the dry run says so as `delete`'s does.
pub async fn refusal(engine: &Engine, preview: &DeletePreview) -> Result<(), engine::DeleteError> {
    for root in preview.roots.iter().filter(|root| root.action == OnDelete::Delete && root.orphans > 0) {
        // A model whose plan does not compile is left alone, with the reason, not refused.
        if let Ok(plan) = planner::compile(engine.config(), &root.model) {
            engine.refuse_undeletable(&plan).await?;
        }
    }
    Ok(())
}

/// The relations of `report` with orphans, by child model and action: only declared relations
/// with a child model are cleaned up (only the config says what a row's children are); the
/// others are left alone.
#[allow(clippy::type_complexity)]
fn groups(report: &OrphanReport) -> (IndexMap<(&str, OnDelete), Vec<&RelationOrphans>>, Vec<LeftAlone>) {
    let mut groups: IndexMap<(&str, OnDelete), Vec<&RelationOrphans>> = IndexMap::new();
    let mut left_alone = Vec::new();
    for relation in report.relations.iter().filter(|r| r.orphans > 0) {
        match (&relation.child, relation.on_delete) {
            _ if relation.remote_category.is_some() => left_alone.push(LeftAlone::of(relation, SWEPT)),
            (Some(child), Some(action)) if relation.declared => {
                groups.entry((child.as_str(), action)).or_default().push(relation)
            }
            _ => left_alone.push(LeftAlone::of(relation, UNDECLARED)),
        }
    }
    deletes_first(&mut groups);
    (groups, left_alone)
}

/// The parent's table as the config writes it (the plan resolves it the same way), for a
/// declared relation.
fn parent_config_table(config: &Config, relation: &RelationOrphans) -> String {
    relation
        .parent
        .as_deref()
        .and_then(|parent| config.model(parent))
        .map_or_else(|| relation.parent_table.clone(), |model| model.table.value.clone())
}

/// The counting side of a reported relation, resolved again against the schema.
fn candidate_of<'a>(
    config: &'a Config,
    schema: &'a Schema,
    relation: &RelationOrphans,
    child_table: &'a Table,
) -> Option<Candidate<'a>> {
    let parent_table = schema.table(&parent_config_table(config, relation))?;
    Some(Candidate {
        parent: None,
        parent_table,
        parent_key: relation.parent_key.clone(),
        child: None,
        child_table,
        columns: relation.columns.clone(),
        declared: relation.declared,
        on_delete: relation.on_delete,
        index_table: String::new(),
        key: Vec::new(),
    })
}
