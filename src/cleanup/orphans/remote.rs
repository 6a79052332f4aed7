//! Late children: rows of a remote model's children that name a key whose tombstone was applied
//! here and is still kept (`[settings] inbox_retention`). A foreign key cannot reach the other
//! database, so the inbox is the parent table: such a row was written after its parent's
//! deletion had been applied. The worker's sweep deletes them; the report counts them so that
//! they are seen before it runs.

use std::time::SystemTime;

use super::filter::Filter;
use super::relations::{sample_key, table_label};
use super::report::sample_values;
use super::{OrphanError, RelationOrphans, SkippedRelation};
use crate::config::{Config, Relation, RemoteModel};
use crate::db::sql::{Param, SqlBuilder, Statement, quote_identifier};
use crate::db::{Backend, Database};
use crate::schema::{Schema, Table};

/// What the report names as a remote relation's parent table.
const INBOX: &str = "cascade_inbox";

/// Why the orphans of a remote model's relation are left alone by `orphans --delete`.
pub(super) const SWEPT: &str = "their parent is a remote model: the inbox's sweep deletes them (`cascade inbox apply`, \
                                or the worker every `inbox_sweep_interval`)";

/// A relation of a remote model, resolved against the schema.
pub(super) struct RemoteCandidate<'a> {
    model: &'a RemoteModel,
    relation: &'a Relation,
    child: &'a str,
    child_table: &'a Table,
    /// The relation column as the catalog spells it.
    column: String,
    /// The child's key columns as the catalog spells them, for the sample.
    key: Vec<String>,
    /// The child table as a `CREATE INDEX` names it.
    index_table: String,
    /// Tombstones applied since then are kept: those the sweep looks for (`inbox_retention`).
    kept_since: SystemTime,
}

/// The remote models' relations that pass `filter`, and those that cannot be counted.
pub(super) fn remote_candidates<'a>(
    config: &'a Config,
    schema: &'a Schema,
    filter: &mut Filter<'a>,
) -> (Vec<RemoteCandidate<'a>>, Vec<SkippedRelation>) {
    let mut counted = Vec::new();
    let mut skipped = Vec::new();
    let now = SystemTime::now();
    let kept_since = now.checked_sub(config.settings.inbox_retention()).unwrap_or(SystemTime::UNIX_EPOCH);
    for (name, model) in &config.remote_models {
        for relation in &model.children {
            let Some((child, child_model)) = config.models.get_key_value(&relation.model.value) else { continue };
            let child_table = schema.table(&child_model.table.value);
            let columns = relation.column_names();
            if !filter.keeps((Some(name), None), (Some(child), child_table), &columns.join(", ")) {
                continue;
            }
            let mut skip = |reason: String| {
                skipped.push(SkippedRelation {
                    parent: name.clone(),
                    child: child.clone(),
                    column: columns.join(", "),
                    declared: true,
                    reason,
                })
            };
            let Some(child_table) = child_table else {
                let missing = &child_model.table.value;
                skip(format!("the database has no table `{missing}` (run `cascade validate --database-url URL`)"));
                continue;
            };
            let [column] = columns.as_slice() else {
                skip("a remote model's relation names its key with one column".to_owned());
                continue;
            };
            let Some(column) = child_table.column(column) else {
                skip(format!("`{}` has no column `{column}`", child_table.name));
                continue;
            };
            let key = child_model.key.as_ref().map(|key| &key.value);
            counted.push(RemoteCandidate {
                model,
                relation,
                child,
                child_table,
                column: column.name.clone(),
                key: sample_key(key, child_table),
                index_table: child_model.table.value.clone(),
                kept_since,
            });
        }
    }
    (counted, skipped)
}

impl RemoteCandidate<'_> {
    /// The relation for people: `` `parent → child.column` ``.
    pub(super) fn label(&self) -> String {
        format!("`{} → {}.{}`", self.model.name.value, self.child, self.relation.describe_columns())
    }

    /// ` FROM child AS "orphan" WHERE ...`: the rows naming a key of a kept applied tombstone of
    /// the model's category. Keys are compared as text, as the sender's outbox writes them (an
    /// integer as its digits, a uuid in lowercase), where the sweep binds them as the column's
    /// type: a key written another way (`007`, an uppercase uuid) is swept but not reported.
    fn late_from(&self, sql: &mut SqlBuilder) {
        let column = format!("{}.{}", quote_identifier("orphan"), quote_identifier(&self.column));
        sql.push(" FROM ").push(&self.child_table.quoted()).push(" AS ").identifier("orphan").push(" WHERE ");
        sql.push(&column).push(" IS NOT NULL AND ").text(&column).push(" IN (SELECT object_key FROM ");
        sql.push(INBOX).push(" WHERE category = ").bind_text(&self.model.remote.category.value);
        sql.push(" AND applied_at >= ").timestamp(self.kept_since).push(")");
    }

    /// `SELECT COUNT(*)` of its late children.
    pub(super) fn count(&self, backend: &'static dyn Backend) -> Statement {
        let mut sql = SqlBuilder::new(backend);
        sql.push("SELECT COUNT(*)");
        self.late_from(&mut sql);
        sql.finish()
    }

    /// The first `limit` late children's keys, as text, in key order.
    fn sample(&self, backend: &'static dyn Backend, limit: u64) -> Statement {
        let columns: Vec<String> =
            self.key.iter().map(|key| format!("{}.{}", quote_identifier("orphan"), quote_identifier(key))).collect();
        let texts: Vec<String> = columns.iter().map(|column| backend.text(column)).collect();
        let mut sql = SqlBuilder::new(backend);
        sql.push("SELECT ").push(&texts.join(", "));
        self.late_from(&mut sql);
        sql.push(" ORDER BY ").push(&columns.join(", ")).push(" LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.finish()
    }

    /// Counts its late children (none before anything was received) and lists the first
    /// `sample` keys.
    pub(super) async fn report(&self, database: &Database, sample: u64) -> Result<RelationOrphans, OrphanError> {
        let failed = |source| OrphanError::Database { relation: self.label(), source };
        let received = database.table_exists(INBOX).await.map_err(failed)?;
        let backend = database.backend();
        let orphans = if received { database.fetch_count(&self.count(backend)).await.map_err(failed)? } else { 0 };
        let keys = if sample > 0 && orphans > 0 && !self.key.is_empty() {
            sample_values(database.fetch_texts(&self.sample(backend, sample)).await.map_err(failed)?)
        } else {
            Vec::new()
        };
        let columns = vec![self.column.clone()];
        Ok(RelationOrphans {
            parent: Some(self.model.name.value.clone()),
            child: Some(self.child.to_owned()),
            index: self.child_table.index_advice(&columns, &self.index_table, Some(database.kind())),
            columns,
            declared: true,
            orphans,
            sample: keys,
            parent_table: INBOX.to_owned(),
            parent_key: vec!["object_key".to_owned()],
            child_table: table_label(self.child_table),
            key: self.key.clone(),
            on_delete: Some(self.relation.action()),
            remote_category: Some(self.model.remote.category.value.clone()),
        })
    }
}
