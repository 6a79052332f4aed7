//! The checks a deletion passes before its first write: every lookup by key finds the rows the
//! database takes for children, and the database can compare every relation with its parent's
//! keys.

use std::collections::HashSet;

use super::DeleteError;
use crate::db::Keys;
use crate::db::sql::{KeyType, Param, SqlBuilder};
use crate::db::{Database, DbError, Failure, first_text};
use crate::engine::sql::key_of;
use crate::engine::steps::{column_types, node_sql};
use crate::planner::{Plan, PlanNode};
use crate::schema::Schema;

/// Refuses, before anything is written, a deletion whose lookups by key would miss rows the
/// database takes for children or would fail on the database's types; whether every lookup was
/// checked (see [`refuse_uncomparable_relations`]).
pub(crate) async fn refuse_unmatched_lookups(
    database: &Database,
    plan: &Plan,
    schema: &Schema,
) -> Result<bool, DeleteError> {
    refuse_ambiguous_keys(database, plan, schema).await?;
    refuse_uncomparable_relations(database, plan, schema).await
}

/// Refuses a deletion through a column that holds a value the database takes for a key but that
/// cascade's lookups by key would miss (SQLite; see [`crate::db::Backend::unmatched_keys_in`]):
/// a column declared without a type holding a key as text reading exactly as an integer (`'8'`:
/// bound as the integer 8, the row `'8'` is never found, its children orphaned or a loop, while a
/// row 8 elsewhere is deleted in its place), or a reference that the parent's integer keys equal
/// only by SQLite's conversion (`'08'` in a TEXT column): left behind, orphaned.
async fn refuse_ambiguous_keys(database: &Database, plan: &Plan, schema: &Schema) -> Result<(), DeleteError> {
    let quoted = |node: &PlanNode| crate::schema::CatalogNames::of(Some(schema), &node.table).quoted_table();
    for (node, parent) in plan.steps_with_parents() {
        let Some(table) = schema.table(&node.table) else { continue };
        // Set-based steps never look their rows up by their own key, only by their relation.
        let by_own_key = parent.is_none() || !node.is_set_based();
        let own_key: Vec<_> = key_of(node)
            .iter()
            .filter(|_| by_own_key)
            .filter_map(|name| table.column(name))
            .map(|key| (key, key, None))
            .collect();
        let mut references = Vec::new();
        if let Some(parent_table) = parent.and_then(|parent| schema.table(&parent.table)) {
            let parent = parent.expect("a parent table is a parent's");
            let referenced = node.references.clone().unwrap_or_else(|| key_of(parent));
            for (name, target) in node.columns.iter().zip(&referenced) {
                if let (Some(column), Some(key)) = (table.column(name), parent_table.column(target)) {
                    references.push((column, key, Some(quoted(parent))));
                }
            }
        }
        // Each column with the key it is looked up by, and for a reference the parent's table.
        for (column, key, parent_table) in own_key.into_iter().chain(references) {
            let mut sql = database.sql();
            let backend = database.backend();
            let referenced = parent_table.as_deref().map(|table| (table, key.name.as_str()));
            let column_type = &column.key_type;
            if !backend.unmatched_keys_in(&mut sql, &quoted(node), &column.name, column_type, &key.key_type, referenced)
            {
                continue;
            }
            let Some(value) = first_text(&database.fetch_texts(&sql.finish()).await?).map(str::to_owned) else {
                continue;
            };
            let (table, column) = (table.name.clone(), column.name.clone());
            return Err(match key.key_type {
                KeyType::Untyped => DeleteError::AmbiguousKey { table, column, value },
                _ => DeleteError::UnmatchedReference { table, column, value, key: key.data_type.clone() },
            });
        }
    }
    Ok(())
}

/// Refuses a deletion through a relation whose column the database cannot compare with its
/// parent's keys (PostgreSQL: `text = numeric` has no operator), before anything is written (see
/// [`uncomparable_relations`]). Found later, the error would stop the deletion halfway, after the
/// steps before it had committed. Whether every step was checked.
async fn refuse_uncomparable_relations(database: &Database, plan: &Plan, schema: &Schema) -> Result<bool, DeleteError> {
    let (mut found, all_checked) = uncomparable_relations(database, plan, schema, &mut HashSet::new()).await?;
    match found.drain(..).next() {
        Some(uncomparable) => Err(DeleteError::UncomparableRelation {
            child: uncomparable.child,
            parent: uncomparable.parent,
            reason: uncomparable.reason,
        }),
        None => Ok(all_checked),
    }
}

/// A relation of a plan whose column the database cannot compare with its parent's keys.
pub(crate) struct Uncomparable {
    /// The parent's model.
    pub(crate) parent_model: String,
    /// The child's model and relation columns, as the config names them.
    pub(crate) child_model: String,
    pub(crate) columns: Vec<String>,
    /// `table.column` of the child, and of the parent columns referenced.
    pub(crate) child: String,
    pub(crate) parent: String,
    /// What the database said.
    pub(crate) reason: String,
}

/// Every relation of `plan` whose lookup of rows by its parent's keys the database refuses on
/// its types: each step's lookup is run once with no keys, which the database parses and
/// type-checks as it would every chunk's. `relation-type-mismatch` names the common pairs from
/// the schema alone; this catches every pair the database itself refuses. Whether every step
/// was checked: a step whose lookup met a transient error (a lock) is left out. `checked`: the
/// relations (parent model, child model, columns) checked before, which are left out and to
/// which these are added.
pub(crate) async fn uncomparable_relations(
    database: &Database,
    plan: &Plan,
    schema: &Schema,
    checked: &mut HashSet<(String, String, Vec<String>)>,
) -> Result<(Vec<Uncomparable>, bool), DbError> {
    let mut lookups = Vec::new();
    for (node, parent) in plan.steps_with_parents() {
        let Some(parent) = parent else { continue };
        let new = checked.insert((parent.model.clone(), node.model.clone(), node.columns.clone()));
        if new && !always_compares(node, parent, schema) {
            lookups.push((node, parent, node_sql(node, Some(parent), database.backend(), Some(schema))));
        }
    }
    let (mut all_checked, mut found) = (true, Vec::new());
    // Many lookups in one statement: one round trip where the database takes them all, which
    // on a large schema is every time; the lookups of a statement it refuses are run one by one.
    for batch in lookups.chunks(LOOKUPS_PER_STATEMENT) {
        let mut together = SqlBuilder::new(database.backend());
        for (index, (_, _, lookup)) in batch.iter().enumerate() {
            together.push(if index == 0 { "SELECT (" } else { ", (" });
            lookup.write_count_up_to(&mut together, Param::Keys(Keys::none(&lookup.match_types)), 1);
            together.push(")");
        }
        if database.fetch_texts(&together.finish()).await.is_ok() {
            continue;
        }
        for (node, parent, lookup) in batch {
            let lookup = lookup.count_up_to(Param::Keys(Keys::none(&lookup.match_types)), 1);
            let Err(error) = database.fetch_texts(&lookup).await else { continue };
            // A lock held elsewhere or a lost connection is no fault of the relation: the
            // deletion meets it again where it is recorded and retried.
            if database.classify(&error) != Failure::Permanent {
                all_checked = false;
                continue;
            }
            if !database.is_type_mismatch(&error) {
                return Err(error);
            }
            let referenced = node.references.clone().unwrap_or_else(|| parent.key.clone());
            found.push(Uncomparable {
                parent_model: parent.model.clone(),
                child_model: node.model.clone(),
                columns: node.columns.clone(),
                child: format!("{}.{}", node.table, node.columns.join(", ")),
                parent: format!("{}.{}", parent.table, referenced.join(", ")),
                reason: error.to_string(),
            });
        }
    }
    Ok((found, all_checked))
}

/// Whether every column of `node`'s relation holds values of a type its parent's keys always
/// compare with ([`KeyType::always_compares_with`]), the keys bound as a parameter: the
/// database would take the lookup, so it is not asked. A lookup through the parent's rows
/// (`references`) compares two columns, whose collations may disagree, so it is always asked.
fn always_compares(node: &PlanNode, parent: &PlanNode, schema: &Schema) -> bool {
    let columns = column_types(schema.table(&node.table), &node.columns);
    let keys = column_types(schema.table(&parent.table), &key_of(parent));
    node.references.is_none()
        && columns.len() == keys.len()
        && keys.iter().zip(&columns).all(|(key, column)| key.always_compares_with(column))
}

/// How many lookups [`uncomparable_relations`] runs in one statement.
const LOOKUPS_PER_STATEMENT: usize = 100;
