//! `duplicates --merge`: the rows that reference a batch's duplicates are pointed at their
//! group's kept row before the duplicates go.

use indexmap::IndexMap;

use super::DuplicatesError;
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement, quote_identifier};
use crate::db::{DbError, Transaction, typed_key_json};
use crate::engine::Engine;
use crate::schema::CatalogNames;

/// Re-points the rows that reference duplicates at their group's kept row: one `UPDATE` per
/// declared relation of the model.
pub(super) struct Merger<'a> {
    engine: &'a Engine,
    model: &'a str,
    key_type: &'a KeyType,
    /// (child model, its table quoted, the relation column as the catalog spells it).
    relations: Vec<(String, String, String)>,
}

impl<'a> Merger<'a> {
    pub(super) fn new(engine: &'a Engine, model: &'a str, key_type: &'a KeyType) -> Self {
        let (config, schema) = (engine.config(), engine.schema());
        let relations = config
            .model(model)
            .map(|declared| declared.children.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|relation| {
                let child = config.model(&relation.model.value)?;
                let names = CatalogNames::of(Some(schema), &child.table.value);
                let [column] = &relation.column_names()[..] else { return None };
                let column = names.table()?.column(column)?.name.clone();
                Some((relation.model.value.clone(), names.quoted_table(), column))
            })
            .collect();
        Self { engine, model, key_type, relations }
    }

    /// Re-points the references to each (duplicate, kept) pair's duplicate, in one transaction;
    /// on a unique violation nothing is changed and the first group at fault is named.
    pub(super) async fn repoint(&self, pairs: &[(String, String)]) -> Result<IndexMap<String, u64>, DuplicatesError> {
        let mut transaction = self.engine.database().begin_write().await?;
        match self.repoint_in(&mut transaction, pairs).await {
            Ok(re_pointed) => {
                transaction.commit().await?;
                Ok(re_pointed)
            }
            Err((child, error)) => {
                transaction.rollback().await?;
                let Some(constraint) = self.engine.database().unique_violation(&error) else {
                    return Err(error.into());
                };
                Err(self.conflict(pairs, child, constraint).await)
            }
        }
    }

    async fn repoint_in(
        &self,
        transaction: &mut Transaction,
        pairs: &[(String, String)],
    ) -> Result<IndexMap<String, u64>, (String, DbError)> {
        let records = pairs
            .iter()
            .map(|(duplicate, kept)| {
                serde_json::json!({
                    "duplicate": typed_key_json(self.key_type, duplicate),
                    "kept": typed_key_json(self.key_type, kept),
                })
            })
            .collect();
        let records = Param::json_records(records);
        let mut re_pointed = IndexMap::new();
        for (child, table, column) in &self.relations {
            let statement = self.update(table, column, records.clone());
            let rows = transaction.execute(&statement).await.map_err(|error| (child.clone(), error))?;
            *re_pointed.entry(child.clone()).or_default() += rows;
        }
        Ok(re_pointed)
    }

    /// `UPDATE child SET column = kept FROM (the pairs) WHERE column = duplicate`, the pairs as
    /// `{"duplicate", "kept"}` `records`: one join, where a `CASE` with a `WHEN` per pair made
    /// every row compare against the whole batch.
    fn update(&self, table: &str, column: &str, records: Param) -> Statement {
        let database = self.engine.database();
        let backend = database.backend();
        let mut sql = database.sql();
        let kept = backend.json_key_field("kept", self.key_type);
        let condition = format!(
            "cascade_row.{} = {}",
            quote_identifier(column),
            backend.json_key_field("duplicate", self.key_type)
        );
        let mut pairs = |sql: &mut SqlBuilder| backend.json_records(sql, records.clone(), &["duplicate", "kept"]);
        backend.update_joined(&mut sql, (table, "cascade_row"), (column, &kept), &mut pairs, &condition);
        sql.finish()
    }

    /// The first group of `pairs` whose re-pointing alone breaks the constraint (each tried in a
    /// transaction that is rolled back), as the error to report.
    async fn conflict(&self, pairs: &[(String, String)], child: String, constraint: String) -> DuplicatesError {
        let mut groups: indexmap::IndexMap<&str, Vec<(String, String)>> = indexmap::IndexMap::new();
        for (duplicate, kept) in pairs {
            groups.entry(kept.as_str()).or_default().push((duplicate.clone(), kept.clone()));
        }
        let mut at_fault = groups.first().map(|(kept, group)| ((*kept).to_owned(), group.clone()));
        for (kept, group) in &groups {
            let Ok(mut probe) = self.engine.database().begin_write().await else { break };
            let broke = self.repoint_in(&mut probe, group).await.is_err();
            let _ = probe.rollback().await;
            if broke {
                at_fault = Some(((*kept).to_owned(), group.clone()));
                break;
            }
        }
        let (kept, group) = at_fault.unwrap_or_default();
        DuplicatesError::MergeConflict {
            model: self.model.to_owned(),
            kept,
            duplicates: group.into_iter().map(|(duplicate, _)| duplicate).collect(),
            child,
            constraint,
        }
    }
}
