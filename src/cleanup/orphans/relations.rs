//! The relations to count: every declared relation of the config, then every single-column
//! foreign key of the live schema that the config does not declare, each resolved against the
//! schema (or skipped, with why).

use super::SkippedRelation;
use super::filter::Filter;
use crate::config::{Config, Key, OnDelete, describe_columns};
use crate::db::sql::quote_qualified;
use crate::schema::{Schema, Table};

/// A relation resolved against the schema, ready to be counted.
pub(super) struct Candidate<'a> {
    pub(super) parent: Option<&'a str>,
    pub(super) parent_table: &'a Table,
    /// The parent key as the catalog spells it.
    pub(super) parent_key: String,
    pub(super) child: Option<&'a str>,
    pub(super) child_table: &'a Table,
    /// The child column as the config spells it (the catalog's for an undeclared key).
    pub(super) column: String,
    pub(super) declared: bool,
    pub(super) on_delete: Option<OnDelete>,
    /// The child table as a `CREATE INDEX` names it: as the config writes it.
    pub(super) index_table: String,
    /// The child's key columns as the catalog spells them.
    pub(super) key: Vec<String>,
}

impl Candidate<'_> {
    /// The relation for people: `` `parent → child.column` ``.
    pub(super) fn label(&self) -> String {
        format!(
            "`{} → {}.{}`",
            self.parent.unwrap_or(&self.parent_table.name),
            self.child.unwrap_or(&self.child_table.name),
            self.column
        )
    }

    /// The child column as the catalog spells it.
    pub(super) fn catalog_column(&self) -> String {
        self.child_table.column(&self.column).map_or_else(|| self.column.clone(), |c| c.name.clone())
    }
}

/// The first model (in config order) whose table is `table`.
fn model_of<'a>(config: &'a Config, schema: &Schema, table: &Table) -> Option<&'a str> {
    config
        .models
        .iter()
        .find(|(_, model)| schema.table(&model.table.value).is_some_and(|t| std::ptr::eq(t, table)))
        .map(|(name, _)| name.as_str())
}

/// A table's name for people and `CREATE INDEX`: bare on the search path, else qualified.
pub(super) fn table_label(table: &Table) -> String {
    if table.off_search_path { table.qualified_name() } else { table.name.clone() }
}

/// The key a sample lists: the model's declared key, else the table's primary key, else an `id`
/// column; empty when none of them is in the table.
fn sample_key(declared: Option<&Key>, table: &Table) -> Vec<String> {
    let wanted = match declared {
        Some(key) => key.columns(),
        None if !table.primary_key.is_empty() => table.primary_key.clone(),
        None => vec!["id".to_owned()],
    };
    wanted
        .iter()
        .map(|column| table.column(column).map(|c| c.name.clone()))
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// Every relation to count (after the filters) and those that cannot be.
pub(super) fn candidates<'a>(
    config: &'a Config,
    schema: &'a Schema,
    filter: &mut Filter<'a>,
) -> (Vec<Candidate<'a>>, Vec<SkippedRelation>) {
    let mut counted = Vec::new();
    let mut skipped = Vec::new();
    // (child table, column, parent table) of every declared relation whose tables exist.
    let mut declared: Vec<(&Table, String, &Table)> = Vec::new();
    for (parent_name, parent) in &config.models {
        for relation in &parent.children {
            let Some((child_name, child)) = config.models.get_key_value(&relation.model.value) else { continue };
            let parent_table = schema.table(&parent.table.value);
            let child_table = schema.table(&child.table.value);
            let column = &relation.describe_columns();
            if let (Some(p), Some(c)) = (parent_table, child_table) {
                declared.push((c, column.to_ascii_lowercase(), p));
            }
            if !filter.keeps((Some(parent_name), parent_table), (Some(child_name), child_table), column) {
                continue;
            }
            let mut skip = |reason: String| {
                skipped.push(SkippedRelation {
                    parent: parent_name.clone(),
                    child: child_name.clone(),
                    column: column.clone(),
                    declared: true,
                    reason,
                })
            };
            let referenced = relation.referenced(parent);
            let [parent_key] = &referenced[..] else {
                skip(format!(
                    "the relation is over several columns ({column} → {}): orphans are counted over one column",
                    describe_columns(&referenced)
                ));
                continue;
            };
            let (Some(parent_table), Some(child_table)) = (parent_table, child_table) else {
                let missing = if parent_table.is_none() { &parent.table.value } else { &child.table.value };
                skip(format!("the database has no table `{missing}` (run `cascade validate --database-url URL`)"));
                continue;
            };
            let Some(key_column) = parent_table.column(parent_key) else {
                skip(format!("`{}` has no column `{parent_key}`, which `{column}` references", parent_table.name));
                continue;
            };
            let Some(child_column) = child_table.column(column) else {
                skip(format!("`{}` has no column `{column}`", child_table.name));
                continue;
            };
            if schema.cannot_compare(child_table, child_column, parent_table, key_column) {
                skip(format!(
                    "`{}.{}` is `{}` and the key it references, `{}.{}`, is `{}`: PostgreSQL cannot compare them",
                    child_table.name,
                    child_column.name,
                    child_column.data_type,
                    parent_table.name,
                    key_column.name,
                    key_column.data_type
                ));
                continue;
            }
            counted.push(Candidate {
                parent: Some(parent_name),
                parent_table,
                parent_key: key_column.name.clone(),
                child: Some(child_name),
                child_table,
                column: column.clone(),
                declared: true,
                on_delete: Some(relation.action()),
                index_table: quote_qualified(&child.table.value),
                key: sample_key(child.key.as_ref().map(|key| &key.value), child_table),
            });
        }
    }
    for child_table in &schema.tables {
        let child = model_of(config, schema, child_table);
        for fk in &child_table.foreign_keys {
            let parent_table = schema.resolve(fk);
            let parent = parent_table.and_then(|table| model_of(config, schema, table));
            let columns = fk.columns.join(", ");
            if !filter.keeps((parent, parent_table), (child, Some(child_table)), &columns) {
                continue;
            }
            let mut skip = |reason: String| {
                skipped.push(SkippedRelation {
                    parent: parent.map_or_else(|| fk.referenced_table.clone(), str::to_owned),
                    child: child.map_or_else(|| table_label(child_table), str::to_owned),
                    column: columns.clone(),
                    declared: false,
                    reason,
                })
            };
            let Some(parent_table) = parent_table else {
                skip(format!("it references `{}`, which is not in the schema", fk.referenced_table));
                continue;
            };
            let key = match (&fk.columns[..], &fk.referenced_columns[..]) {
                ([_], [key]) => Some(key),
                ([_], []) => match &parent_table.primary_key[..] {
                    [key] => Some(key),
                    _ => None,
                },
                _ => None,
            };
            let Some(key) = key else {
                skip(
                    "a composite foreign key: only a single column referencing a single-column key is counted"
                        .to_owned(),
                );
                continue;
            };
            let column = &fk.columns[0];
            let is_declared = declared.iter().any(|(c, declared_column, p)| {
                std::ptr::eq(*c, child_table)
                    && std::ptr::eq(*p, parent_table)
                    && declared_column.eq_ignore_ascii_case(column)
            });
            if is_declared {
                continue;
            }
            let child_model = child.and_then(|name| config.model(name));
            counted.push(Candidate {
                parent,
                parent_table,
                parent_key: parent_table.column(key).map_or_else(|| key.clone(), |c| c.name.clone()),
                child,
                child_table,
                column: column.clone(),
                declared: false,
                on_delete: None,
                index_table: match child_model {
                    Some(model) => quote_qualified(&model.table.value),
                    None => quote_qualified(&table_label(child_table)),
                },
                key: sample_key(child_model.and_then(|m| m.key.as_ref()).map(|key| &key.value), child_table),
            });
        }
    }
    (counted, skipped)
}
