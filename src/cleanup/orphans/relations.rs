//! The relations to count: every declared relation of the config, then every foreign key of the
//! live schema that the config does not declare, each over one column or several and resolved
//! against the schema (or skipped, with why).

use super::filter::Filter;
use super::remote::{RemoteCandidate, remote_candidates};
use super::{OrphanError, OrphanOptions, SkippedRelation};
use crate::config::{Config, Key, OnDelete, describe_columns};
use crate::schema::{Schema, Table};

/// A relation resolved against the schema, ready to be counted.
pub(super) struct Candidate<'a> {
    pub(super) parent: Option<&'a str>,
    pub(super) parent_table: &'a Table,
    /// The parent columns the child's columns reference, pair by pair, as the catalog spells
    /// them: the parent's key, or the columns the relation `references`.
    pub(super) parent_key: Vec<String>,
    pub(super) child: Option<&'a str>,
    pub(super) child_table: &'a Table,
    /// The child's relation columns as the config spells them (the catalog's for an undeclared
    /// key): a row is an orphan when none of them is NULL and no parent row has their values.
    pub(super) columns: Vec<String>,
    pub(super) declared: bool,
    pub(super) on_delete: Option<OnDelete>,
    /// The child table as a `CREATE INDEX` names it: as the config writes it.
    pub(super) index_table: String,
    /// The child's key columns as the catalog spells them.
    pub(super) key: Vec<String>,
}

impl Candidate<'_> {
    /// The relation for people: `` `parent → child.column` `` (`child.(a, b)` over several).
    pub(super) fn label(&self) -> String {
        format!(
            "`{} → {}.{}`",
            self.parent.unwrap_or(&self.parent_table.name),
            self.child.unwrap_or(&self.child_table.name),
            describe_columns(&self.columns)
        )
    }

    /// The relation's columns as a report writes them: `a`, or `a, b` over several.
    pub(super) fn column(&self) -> String {
        self.columns.join(", ")
    }

    /// The child columns as the catalog spells them.
    pub(super) fn catalog_columns(&self) -> Vec<String> {
        self.columns
            .iter()
            .map(|column| self.child_table.column(column).map_or_else(|| column.clone(), |c| c.name.clone()))
            .collect()
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
pub(super) fn sample_key(declared: Option<&Key>, table: &Table) -> Vec<String> {
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

/// The relations `options` selects.
pub(super) struct Selected<'a> {
    /// Relations between local tables: declared ones, then undeclared foreign keys.
    pub(super) local: Vec<Candidate<'a>>,
    /// The remote models' relations.
    pub(super) remote: Vec<RemoteCandidate<'a>>,
    /// Those that cannot be counted, and why.
    pub(super) skipped: Vec<SkippedRelation>,
}

/// The relations `options` selects, and those that cannot be counted; an error for a filter
/// that names nothing.
pub(super) fn selected<'a>(
    config: &'a Config,
    schema: &'a Schema,
    options: &OrphanOptions,
) -> Result<Selected<'a>, OrphanError> {
    let mut filter = Filter::new(options, config, schema)?;
    let (local, mut skipped) = candidates(config, schema, &mut filter);
    let (remote, remote_skipped) = remote_candidates(config, schema, &mut filter);
    skipped.extend(remote_skipped);
    match filter.unused() {
        Some(error) => Err(error),
        None => Ok(Selected { local, remote, skipped }),
    }
}

/// Every relation to count (after the filters) and those that cannot be.
pub(super) fn candidates<'a>(
    config: &'a Config,
    schema: &'a Schema,
    filter: &mut Filter<'a>,
) -> (Vec<Candidate<'a>>, Vec<SkippedRelation>) {
    let mut counted = Vec::new();
    let mut skipped = Vec::new();
    // (child table, columns, parent table) of every declared relation whose tables exist.
    let mut declared: Vec<(&Table, Vec<String>, &Table)> = Vec::new();
    for (parent_name, parent) in &config.models {
        for relation in &parent.children {
            let Some((child_name, child)) = config.models.get_key_value(&relation.model.value) else { continue };
            let parent_table = schema.table(&parent.table.value);
            let child_table = schema.table(&child.table.value);
            let columns = relation.column_names();
            let column = &columns.join(", ");
            if let (Some(p), Some(c)) = (parent_table, child_table) {
                declared.push((c, columns.clone(), p));
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
            let described = relation.describe_columns();
            if referenced.len() != columns.len() {
                skip(format!(
                    "the relation's columns, {described}, are not as many as the columns they reference, {}",
                    describe_columns(&referenced)
                ));
                continue;
            }
            let (Some(parent_table), Some(child_table)) = (parent_table, child_table) else {
                let missing = if parent_table.is_none() { &parent.table.value } else { &child.table.value };
                skip(format!("the database has no table `{missing}` (run `cascade validate --database-url URL`)"));
                continue;
            };
            let mut parent_key = Vec::new();
            let mut unresolved = None;
            for (column, key) in columns.iter().zip(&referenced) {
                let Some(key_column) = parent_table.column(key) else {
                    unresolved =
                        Some(format!("`{}` has no column `{key}`, which `{described}` references", parent_table.name));
                    break;
                };
                let Some(child_column) = child_table.column(column) else {
                    unresolved = Some(format!("`{}` has no column `{column}`", child_table.name));
                    break;
                };
                if schema.cannot_compare(child_table, child_column, parent_table, key_column) {
                    unresolved = Some(format!(
                        "`{}.{}` is `{}` and the key it references, `{}.{}`, is `{}`: PostgreSQL cannot compare them",
                        child_table.name,
                        child_column.name,
                        child_column.data_type,
                        parent_table.name,
                        key_column.name,
                        key_column.data_type
                    ));
                    break;
                }
                parent_key.push(key_column.name.clone());
            }
            if let Some(reason) = unresolved {
                skip(reason);
                continue;
            }
            counted.push(Candidate {
                parent: Some(parent_name),
                parent_table,
                parent_key,
                child: Some(child_name),
                child_table,
                columns,
                declared: true,
                on_delete: Some(relation.action()),
                index_table: child.table.value.clone(),
                key: sample_key(child.key.as_ref().map(|key| &key.value), child_table),
            });
        }
    }
    for child_table in &schema.tables {
        let child = model_of(config, schema, child_table);
        for fk in &child_table.foreign_keys {
            let parent_table = schema.resolve(fk);
            let parent = parent_table.and_then(|table| model_of(config, schema, table));
            let column = fk.columns.join(", ");
            if !filter.keeps((parent, parent_table), (child, Some(child_table)), &column) {
                continue;
            }
            let mut skip = |reason: String| {
                skipped.push(SkippedRelation {
                    parent: parent.map_or_else(|| fk.referenced_table.clone(), str::to_owned),
                    child: child.map_or_else(|| table_label(child_table), str::to_owned),
                    column: column.clone(),
                    declared: false,
                    reason,
                })
            };
            let Some(parent_table) = parent_table else {
                skip(format!("it references `{}`, which is not in the schema", fk.referenced_table));
                continue;
            };
            let parent_key: Vec<String> = fk
                .pairs(parent_table)
                .map(|(_, key)| parent_table.column(key).map_or_else(|| key.to_owned(), |c| c.name.clone()))
                .collect();
            if parent_key.len() != fk.columns.len() {
                skip(format!(
                    "its columns, {}, are not as many as those of the primary key of `{}`, which they reference",
                    describe_columns(&fk.columns),
                    parent_table.name
                ));
                continue;
            }
            let is_declared = declared.iter().any(|(c, declared_columns, p)| {
                std::ptr::eq(*c, child_table)
                    && std::ptr::eq(*p, parent_table)
                    && declared_columns.len() == fk.columns.len()
                    && declared_columns.iter().zip(&fk.columns).all(|(d, f)| d.eq_ignore_ascii_case(f))
            });
            if is_declared {
                continue;
            }
            let child_model = child.and_then(|name| config.model(name));
            counted.push(Candidate {
                parent,
                parent_table,
                parent_key,
                child,
                child_table,
                columns: fk.columns.clone(),
                declared: false,
                on_delete: None,
                index_table: match child_model {
                    Some(model) => model.table.value.clone(),
                    None => table_label(child_table),
                },
                key: sample_key(child_model.and_then(|m| m.key.as_ref()).map(|key| &key.value), child_table),
            });
        }
    }
    (counted, skipped)
}
