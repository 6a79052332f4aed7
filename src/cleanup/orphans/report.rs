//! The report: per selected relation, its orphans counted, the first keys listed, and the index
//! its anti-join wants when the child table has none.

use super::relations::selected;
use super::relations::table_label;
use super::{OrphanError, OrphanOptions, OrphanReport, RelationOrphans};
use crate::config::Config;
use crate::db::{Database, TextRows};
use crate::schema::Schema;

/// Counts the orphans of every relation `options` selects, on `database` with its live
/// `schema` (a remote model's: its late children), and lists a sample of their keys. Read only; a relation the schema cannot support
/// (a missing table or column) is listed in `skipped` rather than failing the
/// report.
pub async fn report(
    database: &Database,
    config: &Config,
    schema: &Schema,
    options: &OrphanOptions,
) -> Result<OrphanReport, OrphanError> {
    let selected = selected(config, schema, options)?;
    let backend = database.backend();
    let mut report = OrphanReport { skipped: selected.skipped, ..OrphanReport::default() };
    for candidate in &selected.local {
        let failed = |source| OrphanError::Database { relation: candidate.label(), source };
        let orphans = database.fetch_count(&candidate.count(backend)).await.map_err(failed)?;
        let sample = if options.sample > 0 && orphans > 0 && !candidate.key.is_empty() {
            sample_values(database.fetch_texts(&candidate.sample(backend, options.sample)).await.map_err(failed)?)
        } else {
            Vec::new()
        };
        report.total += orphans;
        report.relations.push(RelationOrphans {
            parent: candidate.parent.map(str::to_owned),
            child: candidate.child.map(str::to_owned),
            columns: candidate.columns.clone(),
            declared: candidate.declared,
            orphans,
            sample,
            index: candidate.child_table.index_advice(&candidate.columns, &candidate.index_table, schema.kind),
            parent_table: table_label(candidate.parent_table),
            parent_key: candidate.parent_key.clone(),
            child_table: table_label(candidate.child_table),
            key: candidate.key.clone(),
            on_delete: candidate.on_delete,
            remote_category: None,
        });
    }
    for candidate in &selected.remote {
        let relation = candidate.report(database, options.sample).await?;
        report.total += relation.orphans;
        report.relations.push(relation);
    }
    Ok(report)
}

/// A sample's keys as the report lists them: a text each, or a list of texts for a composite
/// key.
pub(super) fn sample_values(rows: TextRows) -> Vec<serde_json::Value> {
    rows.into_iter()
        .map(|row| {
            let mut values: Vec<serde_json::Value> =
                row.into_iter().map(|value| value.map_or(serde_json::Value::Null, Into::into)).collect();
            if values.len() == 1 { values.remove(0) } else { serde_json::Value::Array(values) }
        })
        .collect()
}
