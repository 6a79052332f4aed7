//! Orphans: child rows whose relation column is not NULL and holds a value that no parent row
//! has. Reported per declared relation of the config and per single-column foreign key of the
//! live schema that the config does not declare; counted in SQL by an anti-join (`NOT EXISTS`,
//! which unlike `NOT IN` is not defeated by a NULL among the parent keys), so no rows are
//! loaded (only the keys of a `sample`) and nothing is changed.
//!
//! [`preview_delete`] is the dry run of deleting them: each orphan as the root of its own
//! cascade, counted through the child model's plan with the engine's counting facility.

use indexmap::IndexMap;
use serde::Serialize;

use super::batches::{self, BatchError, BatchOptions, BatchRun, CleanupSummary, Next};
use crate::audit::Alone;
use crate::config::{Config, Key, OnDelete};
use crate::db::sql::{Param, SqlBuilder, Statement, quote_identifier, quote_qualified};
use crate::db::{Backend, Database, DbError, Keys};
use crate::engine::{self, CountError, Dangling, Engine, RootGuard};
use crate::planner::{self, Plan};
use crate::schema::{Schema, Table};

/// Which relations to report, and how many orphan keys to list for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanOptions {
    /// Only relations whose parent or child is one of these models (a name that is no model may
    /// name a table of the database instead); every relation when empty.
    pub models: Vec<String>,
    /// Only these relations, each `CHILD.COLUMN`: the child model (or table) and its relation
    /// column; every relation when empty. Kept when both this and `models` match.
    pub relations: Vec<String>,
    /// How many orphan keys to list per relation, lowest first (0: none).
    pub sample: u64,
}

/// The orphans of every reported relation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OrphanReport {
    /// Declared relations in config order, then undeclared foreign keys in schema order.
    pub relations: Vec<RelationOrphans>,
    /// Orphans over all relations (a row orphaned by two relations counts in each).
    pub total: u64,
    /// Relations that could not be counted, and why.
    pub skipped: Vec<SkippedRelation>,
}

/// One relation: a child column that references a parent's single-column key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelationOrphans {
    /// The parent model; for an undeclared foreign key, the model of the referenced table, or
    /// `None` when no model has that table.
    pub parent: Option<String>,
    /// The child model, or `None` when no model has the referencing table.
    pub child: Option<String>,
    /// The child's relation column.
    pub column: String,
    /// Whether the config declares the relation (`false`: a foreign key of the schema only).
    pub declared: bool,
    /// Child rows whose column is not NULL and matches no parent row.
    pub orphans: u64,
    /// The keys of the first orphans (by key), as text; each a list of texts for a composite key.
    pub sample: Vec<serde_json::Value>,
    /// `CREATE INDEX ...` when no index of the child table leads with the column, else `None`.
    pub index: Option<String>,
    /// The parent's table, as the database names it (`schema.table` off the search path).
    pub parent_table: String,
    /// The parent's key column that the child column references.
    pub parent_key: String,
    /// The child's table, as the database names it.
    pub child_table: String,
    /// The child key columns the sample lists (empty when the table has no key to list).
    pub key: Vec<String>,
    /// What the config does to a child row when its parent is deleted (`None` when undeclared).
    pub on_delete: Option<OnDelete>,
}

/// A relation or foreign key that is not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedRelation {
    /// The parent model, or the referenced table when no model has it.
    pub parent: String,
    /// The child model, or the referencing table when no model has it.
    pub child: String,
    /// The child's relation column (several, comma-separated, for a composite foreign key).
    pub column: String,
    /// Whether the config declares the relation.
    pub declared: bool,
    /// Why it is not counted.
    pub reason: String,
}

/// Why the orphans could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum OrphanError {
    /// A model filter names neither a model nor a table.
    #[error("unknown model `{name}`{}", suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    UnknownModel {
        /// The name as given.
        name: String,
        /// "did you mean `x`?" when a model's name is close.
        suggestion: Option<String>,
    },
    /// A relation filter is not `CHILD.COLUMN`.
    #[error("`{0}` is not a relation: write CHILD.COLUMN, such as `event.project_id`")]
    NotARelation(String),
    /// A relation filter matches no relation and no foreign key.
    #[error("no relation `{relation}` in the config or the database{}", suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    UnknownRelation {
        /// The filter as given.
        relation: String,
        /// "did you mean `x`?" when a relation's name is close.
        suggestion: Option<String>,
    },
    /// A count or sample query failed.
    #[error("cannot count the orphans of {relation}: {source}")]
    Database {
        /// The relation, as `parent → child.column`.
        relation: String,
        /// What the database said.
        source: DbError,
    },
    /// Deleting the orphans failed or was refused.
    #[error(transparent)]
    Cleanup(#[from] BatchError),
    /// Counting what deleting the orphans would remove failed.
    #[error("cannot count what deleting the orphans of `{model}` would remove: {source}")]
    Count {
        /// The child model whose orphans were counted.
        model: String,
        /// Why.
        source: CountError,
    },
}

/// The alias of the child table in every orphan query.
const CHILD: &str = "orphan";
/// The columns of a batch pick: a key as text, and as the key itself to keep the order by.
const BATCH_KEY: &str = "cascade_key";
const BATCH_ORDER: &str = "cascade_order";
/// The alias of the parent table in the anti-join.
const PARENT: &str = "parent";

/// A relation resolved against the schema, ready to be counted.
struct Candidate<'a> {
    parent: Option<&'a str>,
    parent_table: &'a Table,
    /// The parent key as the catalog spells it.
    parent_key: String,
    child: Option<&'a str>,
    child_table: &'a Table,
    /// The child column as the config spells it (the catalog's for an undeclared key).
    column: String,
    declared: bool,
    on_delete: Option<OnDelete>,
    /// The child table as a `CREATE INDEX` names it: as the config writes it.
    index_table: String,
    /// The child's key columns as the catalog spells them.
    key: Vec<String>,
}

impl Candidate<'_> {
    fn label(&self) -> String {
        format!(
            "`{} → {}.{}`",
            self.parent.unwrap_or(&self.parent_table.name),
            self.child.unwrap_or(&self.child_table.name),
            self.column
        )
    }

    /// The child column as the catalog spells it.
    fn catalog_column(&self) -> String {
        self.child_table.column(&self.column).map_or_else(|| self.column.clone(), |c| c.name.clone())
    }

    /// `"orphan"."column" IS NOT NULL AND NOT EXISTS (...)`: the child row (aliased `orphan`)
    /// points at no parent row.
    fn orphan_condition(&self, sql: &mut SqlBuilder) {
        self.parent_missing().write(sql, CHILD);
    }

    /// ` FROM child AS orphan ... WHERE ...`: the orphans of this relation alone, as the
    /// anti-join a statement reading many rows should use: the join of
    /// [`ParentMissing::write_join`] where the parent key is unique; else `NOT EXISTS`, which
    /// stops at the first parent row where SQLite's join reads every row holding the value (a
    /// key held by 10,000 parent rows made a 0.03 s count take 25 s).
    fn orphans_from(&self, sql: &mut SqlBuilder) {
        sql.push(" FROM ").push(&quoted(self.child_table)).push(" AS ").identifier(CHILD);
        if self.parent_table.column_is_unique(&self.parent_key) {
            self.parent_missing().write_join(sql, CHILD);
        } else {
            sql.push(" WHERE ");
            self.orphan_condition(sql);
        }
    }

    fn parent_missing(&self) -> ParentMissing {
        ParentMissing {
            column: self.catalog_column(),
            parent_table: quoted(self.parent_table),
            parent_key: self.parent_key.clone(),
        }
    }
}

/// The test that a child row points at no parent row by one relation.
struct ParentMissing {
    /// The child's relation column, the parent table as a statement names it, and its key.
    column: String,
    parent_table: String,
    parent_key: String,
}

impl ParentMissing {
    /// `"child"."column" IS NOT NULL AND NOT EXISTS (...)`, the child row aliased `child`.
    fn write(&self, sql: &mut SqlBuilder, child: &str) {
        sql.identifier(child).push(".").identifier(&self.column).push(" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ");
        sql.push(&self.parent_table).push(" AS ").identifier(PARENT).push(" WHERE ");
        sql.identifier(PARENT).push(".").identifier(&self.parent_key).push(" = ");
        sql.identifier(child).push(".").identifier(&self.column).push(")");
    }

    /// ` LEFT JOIN parent ON ... WHERE "child"."column" IS NOT NULL AND "parent"."key" IS NULL`
    /// after the child table (aliased `child`): the same anti-join as [`Self::write`], for a
    /// statement that reads many rows. SQLite runs a correlated `NOT EXISTS` as a subroutine
    /// per row, three times slower than the join's lookup (50,000 rows: 14 against 5 ms);
    /// PostgreSQL plans both as the same anti-join. A parent row that matches has the key it
    /// matched on, never NULL, and a child row matching several parents yields no row either
    /// (but SQLite reads every one of them: see [`Candidate::orphans_from`]).
    fn write_join(&self, sql: &mut SqlBuilder, child: &str) {
        sql.push(" LEFT JOIN ").push(&self.parent_table).push(" AS ").identifier(PARENT).push(" ON ");
        sql.identifier(PARENT).push(".").identifier(&self.parent_key).push(" = ");
        sql.identifier(child).push(".").identifier(&self.column);
        sql.push(" WHERE ").identifier(child).push(".").identifier(&self.column).push(" IS NOT NULL AND ");
        sql.identifier(PARENT).push(".").identifier(&self.parent_key).push(" IS NULL");
    }
}

impl Candidate<'_> {
    fn count(&self, backend: &'static dyn Backend) -> Statement {
        let mut sql = SqlBuilder::new(backend);
        sql.push("SELECT COUNT(*)");
        self.orphans_from(&mut sql);
        sql.finish()
    }

    /// The first `limit` orphans' keys, as text, in key order.
    fn sample(&self, backend: &'static dyn Backend, limit: u64) -> Statement {
        let mut sql = SqlBuilder::new(backend);
        let columns: Vec<String> =
            self.key.iter().map(|key| format!("{}.{}", quote_identifier(CHILD), quote_identifier(key))).collect();
        let texts: Vec<String> = columns.iter().map(|column| format!("CAST({column} AS TEXT)")).collect();
        sql.push("SELECT ").push(&texts.join(", "));
        self.orphans_from(&mut sql);
        sql.push(" ORDER BY ").push(&columns.join(", ")).push(" LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.finish()
    }
}

/// A table as a statement names it: `"schema"."name"` when the catalog has a schema.
fn quoted(table: &Table) -> String {
    match &table.schema {
        Some(schema) => format!("{}.{}", quote_identifier(schema), quote_identifier(&table.name)),
        None => quote_identifier(&table.name),
    }
}

/// What a `--model` or the child of a `--relation` names.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    Model(&'a str),
    Table(&'a Table),
}

impl Target<'_> {
    fn is(&self, model: Option<&str>, table: Option<&Table>) -> bool {
        match self {
            Target::Model(name) => model == Some(*name),
            Target::Table(wanted) => table.is_some_and(|table| std::ptr::eq(table, *wanted)),
        }
    }
}

/// The filters of `options`, resolved against the config and the schema.
struct Filter<'a> {
    models: Vec<Target<'a>>,
    relations: Vec<(String, Target<'a>, String)>,
    /// Whether each relation filter matched something.
    used: Vec<bool>,
    /// `CHILD.COLUMN` of every relation looked at, for suggestions.
    seen: Vec<String>,
}

impl<'a> Filter<'a> {
    fn new(options: &OrphanOptions, config: &'a Config, schema: &'a Schema) -> Result<Self, OrphanError> {
        let target = |name: &str| -> Option<Target<'a>> {
            match config.models.get_key_value(name) {
                Some((model, _)) => Some(Target::Model(model.as_str())),
                None => schema.table(name).map(Target::Table),
            }
        };
        let mut models = Vec::new();
        for name in &options.models {
            models.push(target(name).ok_or_else(|| OrphanError::UnknownModel {
                name: name.clone(),
                suggestion: model_suggestion(config, name),
            })?);
        }
        let mut relations = Vec::new();
        for relation in &options.relations {
            let (child, column) = relation
                .rsplit_once('.')
                .filter(|(child, column)| !child.is_empty() && !column.is_empty())
                .ok_or_else(|| OrphanError::NotARelation(relation.clone()))?;
            let Some(child) = target(child) else {
                return Err(OrphanError::UnknownRelation {
                    relation: relation.clone(),
                    suggestion: model_suggestion(config, child),
                });
            };
            relations.push((relation.clone(), child, column.to_owned()));
        }
        let used = vec![false; relations.len()];
        Ok(Self { models, relations, used, seen: Vec::new() })
    }

    /// Whether a relation passes the filters. A relation filter that names it counts as used
    /// even when a model filter drops it: the relation exists, the filters just exclude it.
    fn keeps(
        &mut self,
        parent: (Option<&str>, Option<&Table>),
        child: (Option<&str>, Option<&Table>),
        column: &str,
    ) -> bool {
        let child_name = child.0.or(child.1.map(|table| table.name.as_str())).unwrap_or_default();
        self.seen.push(format!("{child_name}.{column}"));
        let mut relation_ok = self.relations.is_empty();
        for (index, (_, target, wanted)) in self.relations.iter().enumerate() {
            if target.is(child.0, child.1) && wanted.eq_ignore_ascii_case(column) {
                self.used[index] = true;
                relation_ok = true;
            }
        }
        let model_ok = self.models.is_empty()
            || self.models.iter().any(|target| target.is(parent.0, parent.1) || target.is(child.0, child.1));
        relation_ok && model_ok
    }
}

fn model_suggestion(config: &Config, name: &str) -> Option<String> {
    crate::diagnostic::did_you_mean(name, config.models.keys().map(String::as_str))
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
fn table_label(table: &Table) -> String {
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
fn candidates<'a>(
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
            let column = &relation.column.value;
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
            let parent_key = match parent.key.as_ref().map(|key| &key.value) {
                None => "id",
                Some(Key::Column(key)) => key.as_str(),
                Some(Key::Composite(columns)) => {
                    skip(format!(
                        "the key of `{parent_name}` is composite ({}): a relation is one column referencing a \
                         single-column key",
                        columns.join(", ")
                    ));
                    continue;
                }
            };
            let (Some(parent_table), Some(child_table)) = (parent_table, child_table) else {
                let missing = if parent_table.is_none() { &parent.table.value } else { &child.table.value };
                skip(format!("the database has no table `{missing}` (run `cascade validate --database-url URL`)"));
                continue;
            };
            let Some(key_column) = parent_table.column(parent_key) else {
                skip(format!("`{}` has no column `{parent_key}`, the key of `{parent_name}`", parent_table.name));
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

/// The relations `options` selects, and those that cannot be counted; an error for a filter
/// that names nothing.
fn selected<'a>(
    config: &'a Config,
    schema: &'a Schema,
    options: &OrphanOptions,
) -> Result<(Vec<Candidate<'a>>, Vec<SkippedRelation>), OrphanError> {
    let mut filter = Filter::new(options, config, schema)?;
    let selected = candidates(config, schema, &mut filter);
    if let Some(index) = filter.used.iter().position(|used| !used) {
        let relation = filter.relations[index].0.clone();
        let suggestion = crate::diagnostic::did_you_mean(&relation, filter.seen.iter().map(String::as_str));
        return Err(OrphanError::UnknownRelation { relation, suggestion });
    }
    Ok(selected)
}

/// Counts the orphans of every relation `options` selects, on `database` with its live
/// `schema`, and lists a sample of their keys. Read only; a relation the schema cannot support
/// (a missing table or column, a composite key) is listed in `skipped` rather than failing the
/// report.
pub async fn report(
    database: &Database,
    config: &Config,
    schema: &Schema,
    options: &OrphanOptions,
) -> Result<OrphanReport, OrphanError> {
    let (candidates, skipped) = selected(config, schema, options)?;
    let backend = database.backend();
    let mut report = OrphanReport { skipped, ..OrphanReport::default() };
    for candidate in &candidates {
        let failed = |source| OrphanError::Database { relation: candidate.label(), source };
        let orphans = database.fetch_count(&candidate.count(backend)).await.map_err(failed)?;
        let sample = if options.sample > 0 && orphans > 0 && !candidate.key.is_empty() {
            let rows = database.fetch_texts(&candidate.sample(backend, options.sample)).await.map_err(failed)?;
            rows.into_iter()
                .map(|row| {
                    let mut values: Vec<serde_json::Value> =
                        row.into_iter().map(|value| value.map_or(serde_json::Value::Null, Into::into)).collect();
                    if values.len() == 1 { values.remove(0) } else { serde_json::Value::Array(values) }
                })
                .collect()
        } else {
            Vec::new()
        };
        report.total += orphans;
        report.relations.push(RelationOrphans {
            parent: candidate.parent.map(str::to_owned),
            child: candidate.child.map(str::to_owned),
            column: candidate.column.clone(),
            declared: candidate.declared,
            orphans,
            sample,
            index: candidate.child_table.index_advice(&candidate.column, &candidate.index_table),
            parent_table: table_label(candidate.parent_table),
            parent_key: candidate.parent_key.clone(),
            child_table: table_label(candidate.child_table),
            key: candidate.key.clone(),
            on_delete: candidate.on_delete,
        });
    }
    Ok(report)
}

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
    /// The relation columns by which its rows are orphans.
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

/// A relation whose orphans deleting would not touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftAlone {
    /// The parent model, or table.
    pub parent: String,
    /// The child model, or table.
    pub child: String,
    /// The relation column.
    pub column: String,
    /// Its orphans.
    pub orphans: u64,
    /// Why they are left alone.
    pub reason: String,
}

impl LeftAlone {
    fn of(relation: &RelationOrphans, reason: &str) -> Self {
        Self {
            parent: relation.parent.clone().unwrap_or_else(|| relation.parent_table.clone()),
            child: relation.child.clone().unwrap_or_else(|| relation.child_table.clone()),
            column: relation.column.clone(),
            orphans: relation.orphans,
            reason: reason.to_owned(),
        }
    }
}

/// The dry run of deleting the orphans in `report`: per child model, each orphan of a delete
/// relation as the root of its own cascade (counted through the model's plan, with the
/// engine's counting facility and an anti-join for the roots, so no keys are loaded), and each
/// orphan of a nullify relation as a row whose column would be set to NULL. Undeclared foreign
/// keys are left alone: only the config says what a row's children are.
pub async fn preview_delete(
    database: &Database,
    config: &Config,
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
                column: relation.column.clone(),
                parent_table: parent_config_table(config, relation),
                parent_key: relation.parent_key.clone(),
            })
            .collect();
        let columns = relations.iter().map(|relation| relation.column.clone()).collect();
        let root = match action {
            OnDelete::Delete => {
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
                let mut sql = SqlBuilder::new(backend);
                sql.push("SELECT COUNT(*) FROM ").push(&quoted(table)).push(" AS ").identifier(CHILD).push(" WHERE ");
                for (index, relation) in relations.iter().enumerate() {
                    if index > 0 {
                        sql.push(" OR ");
                    }
                    let candidate = candidate_of(config, schema, relation, table);
                    sql.push("(");
                    if let Some(candidate) = candidate {
                        candidate.orphan_condition(&mut sql);
                    } else {
                        sql.push("FALSE");
                    }
                    sql.push(")");
                }
                let rows = database
                    .fetch_count(&sql.finish())
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

/// Why orphans are left alone that the config says how to clean, in the dry run and the real one.
fn cannot_clean(reason: impl std::fmt::Display) -> String {
    format!("its orphans cannot be cleaned up: {reason}")
}

/// Why the orphans of an undeclared foreign key are left alone.
const UNDECLARED: &str =
    "not declared in the config, so its rows' own children are unknown: declare the relation to clean its orphans up";

/// The relations among `relations` that have orphans, counted, as left alone for `reason`.
async fn leave_alone(
    database: &Database,
    relations: &[&Candidate<'_>],
    reason: &str,
) -> Result<Vec<LeftAlone>, OrphanError> {
    let mut left = Vec::new();
    for relation in relations {
        let failed = |source| OrphanError::Database { relation: relation.label(), source };
        let orphans = database.fetch_count(&relation.count(database.backend())).await.map_err(failed)?;
        if orphans > 0 {
            left.push(LeftAlone {
                parent: relation.parent.map_or_else(|| table_label(relation.parent_table), str::to_owned),
                child: relation.child.map_or_else(|| table_label(relation.child_table), str::to_owned),
                column: relation.column.clone(),
                orphans,
                reason: reason.to_owned(),
            });
        }
    }
    Ok(left)
}

/// What deleting the orphans did, and the relations it left alone.
#[derive(Debug, Clone, Serialize)]
pub struct OrphanCleanup {
    /// What was deleted and nullified.
    #[serde(flatten)]
    pub summary: CleanupSummary,
    /// Relations whose orphans were not touched, and why.
    pub left_alone: Vec<LeftAlone>,
}

/// Deletes the orphans of `report`'s declared relations in batches (see [`batches`]): per child
/// model, the orphans of its delete relations as the roots of their own cascades, in key
/// order; the orphans of its nullify relations get the relation column set to NULL. Each batch is
/// picked by the anti-join again right before it runs, so a row whose parent came back meanwhile
/// is no orphan and stays. One `cascade_run` row (command `orphans`) records it all.
pub async fn delete(
    engine: &Engine,
    options: &OrphanOptions,
    batches: BatchOptions,
) -> Result<OrphanCleanup, OrphanError> {
    let (candidates, _) = selected(engine.config(), engine.schema(), options)?;
    // Not counted first: each scan finds its orphans, or that there are none, as a count would.
    let mut groups: IndexMap<(&str, OnDelete), Vec<&Candidate<'_>>> = IndexMap::new();
    // Relations not cleaned, with why, counted once the run is over: its cascades may have
    // deleted some of their orphans.
    let mut uncleaned: Vec<(Vec<&Candidate<'_>>, String)> = Vec::new();
    for candidate in &candidates {
        match (candidate.child, candidate.on_delete) {
            (Some(child), Some(action)) if candidate.declared => {
                groups.entry((child, action)).or_default().push(candidate)
            }
            _ => uncleaned.push((vec![candidate], UNDECLARED.to_owned())),
        }
    }
    deletes_first(&mut groups);
    let targets: Vec<String> = groups
        .iter()
        .flat_map(|((model, _), relations)| relations.iter().map(move |r| format!("{model}.{}", r.column)))
        .collect();
    let models: Vec<&str> =
        groups.keys().map(|(model, _)| *model).collect::<indexmap::IndexSet<_>>().into_iter().collect();
    let mut run = BatchRun::start(engine, (&models.join(", "), &targets), Alone::SameRoots, batches).await?;
    let (mut cleaned, mut stopped) = (Ok(()), false);
    for ((model, action), relations) in &groups {
        let plan = match action {
            OnDelete::Delete => planner::compile(engine.config(), model).map(Some).map_err(|error| error.to_string()),
            OnDelete::Nullify => Ok(None),
        };
        let (group, plan) = match Group::resolve(engine, model, relations).and_then(|group| Ok((group, plan?))) {
            Ok(resolved) => resolved,
            Err(reason) => {
                uncleaned.push((relations.clone(), cannot_clean(reason)));
                continue;
            }
        };
        let all = group.relations.clone();
        let next = match &plan {
            Some(plan) => group.scan(&mut run, &all, Clean::Delete(plan)).await,
            // One relation at a time: a row may dangle by one column and not by another.
            None => {
                let mut next = Ok(Next::Continue);
                for relation in &all {
                    next = group.scan(&mut run, &[relation], Clean::Nullify(relation)).await;
                    if !matches!(next, Ok(Next::Continue)) {
                        break;
                    }
                }
                next
            }
        };
        match next {
            Ok(Next::Continue) => {}
            Ok(Next::Stop) => {
                stopped = true;
                break;
            }
            Err(error) => {
                cleaned = Err(error);
                break;
            }
        }
    }
    let mut left_alone = Vec::new();
    // Not after a stop: a full count of each such relation would keep a Ctrl-C waiting.
    if cleaned.is_ok() && !stopped {
        for (relations, reason) in &uncleaned {
            match leave_alone(engine.database(), relations, reason).await {
                Ok(counted) => left_alone.extend(counted),
                Err(error) => {
                    cleaned = Err(error);
                    break;
                }
            }
        }
    }
    let error = cleaned.as_ref().err().map(ToString::to_string);
    let finished = run.finish(error.as_deref()).await;
    cleaned?;
    Ok(OrphanCleanup { summary: finished?, left_alone })
}

/// The orphans of one child model by some of its relations, resolved for deleting.
struct Group<'a> {
    engine: &'a Engine,
    model: &'a str,
    table: &'a Table,
    /// The key column as the catalog spells it, and how its values are bound.
    key: String,
    key_type: crate::db::sql::KeyType,
    relations: Vec<&'a Candidate<'a>>,
}

impl<'a> Group<'a> {
    /// The group, or why its orphans cannot be cleaned up.
    fn resolve(engine: &'a Engine, model: &'a str, relations: &[&'a Candidate<'a>]) -> Result<Self, String> {
        let (config, schema) = (engine.config(), engine.schema());
        let declared = config.model(model).ok_or_else(|| format!("no model `{model}`"))?;
        let table =
            schema.table(&declared.table.value).ok_or_else(|| format!("no table `{}`", declared.table.value))?;
        let key = match declared.key.as_ref().map(|key| &key.value) {
            None => "id",
            Some(key) => key.single().ok_or_else(|| {
                format!("the key of `{model}` is composite: a clean-up deletes rows by a single-column key")
            })?,
        };
        let column = table.column(key).ok_or_else(|| format!("`{}` has no column `{key}`", table.name))?;
        let relations = relations.to_vec();
        Ok(Self { engine, model, table, key: column.name.clone(), key_type: column.key_type.clone(), relations })
    }

    /// The checkpoint of the orphans of `relations`.
    fn checkpoint(&self, relations: &[&Candidate<'_>]) -> String {
        let columns: Vec<&str> = relations.iter().map(|relation| relation.column.as_str()).collect();
        format!("orphans:{}:{}", self.model, columns.join(","))
    }

    /// The keys of rows that dangle by any of `relations`, ascending, among `keys`.
    fn orphan_keys(&self, relations: &[&Candidate<'_>], keys: Among<'_>) -> Statement {
        let key = format!("{}.{}", quote_identifier(CHILD), quote_identifier(&self.key));
        let backend = self.engine.database().backend();
        let mut sql = SqlBuilder::new(backend);
        // The keys come back as one JSON array, in key order.
        sql.push("SELECT ");
        backend.json_array_agg(&mut sql, BATCH_KEY, BATCH_ORDER);
        sql.push(" FROM (SELECT CAST(").push(&key).push(" AS TEXT) AS ").identifier(BATCH_KEY);
        sql.push(", ").push(&key).push(" AS ").identifier(BATCH_ORDER);
        match (relations, &keys) {
            // A scan reads many rows: the join's anti-join is the faster one. Among given keys,
            // each row is tested by itself (its key's lookup names the table's column alone).
            ([relation], Among::Next { .. }) => relation.orphans_from(&mut sql),
            // A row dangling by any of several relations: joined to each parent, a row matching
            // two rows of one parent (a key that is not unique) would come back twice.
            _ => {
                sql.push(" FROM ").push(&quoted(self.table)).push(" AS ").identifier(CHILD).push(" WHERE (");
                for (index, relation) in relations.iter().enumerate() {
                    sql.push(if index == 0 { "(" } else { " OR (" });
                    relation.orphan_condition(&mut sql);
                    sql.push(")");
                }
                sql.push(")");
            }
        }
        match keys {
            Among::Next { after, limit } => {
                batches::after(&mut sql, &key, &self.key_type, after);
                sql.push(" ORDER BY ").push(&key).push(" LIMIT ");
                sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
            }
            Among::These(keys) => {
                sql.push(" AND ").key_list(
                    &self.key,
                    &self.key_type,
                    Param::Keys(Keys::read(&self.key_type, keys.to_vec())),
                );
            }
        }
        sql.push(") AS cascade_batch");
        sql.finish()
    }

    /// The orphans of `relations`, batch after batch until none is left after the checkpoint;
    /// the checkpoint goes once the scan is through.
    async fn scan(
        &self,
        run: &mut BatchRun<'_>,
        relations: &[&Candidate<'_>],
        clean: Clean<'_>,
    ) -> Result<Next, OrphanError> {
        let name = self.checkpoint(relations);
        let after = run.resume_from(&name).await?;
        // Where cleaning a row tests that it still dangles, a batch read ahead is not read again
        // first: an update re-checks the anti-join itself, and a root without children is
        // deleted only while it still dangles. Below a root with children, its children's rows
        // would go first either way, and a root with a status is marked in progress before its
        // delete, which would mark a row that found its parent again.
        let checked_when_cleaned = match clean {
            Clean::Delete(plan) => plan.root.children.is_empty() && !self.has_status(),
            Clean::Nullify(_) => true,
        };
        let mut reader = OrphanReader::new(self, relations, after, checked_when_cleaned);
        while run.may_start_batch() {
            let Some(batch) = reader.next_batch(run.batch_size(&name)).await? else {
                run.finished_scan(&name).await?;
                return Ok(Next::Continue);
            };
            // Every key of a batch read ahead may have found its parent again since.
            if batch.keys.is_empty() {
                continue;
            }
            let keys = batch.keys;
            let next = match clean {
                Clean::Delete(plan) => {
                    let guard = batch.unchecked.then(|| self.still_dangling(relations));
                    run.delete_batch(plan, &keys, &name, guard).await?
                }
                Clean::Nullify(relation) => {
                    let update = self.nullify(relation, &keys);
                    run.nullify_batch(&update, &keys, self.model, &name).await?
                }
            };
            if next == Next::Stop {
                return Ok(Next::Stop);
            }
            // The scan's last batch: done, without another read (nor, with `--max-batches`, a
            // run that stops as if some were left).
            if reader.scan_done() {
                run.finished_scan(&name).await?;
                return Ok(Next::Continue);
            }
        }
        Ok(Next::Stop)
    }

    /// Whether the model's rows carry a `status`, which a deletion sets before deleting them.
    fn has_status(&self) -> bool {
        self.engine.config().model(self.model).is_some_and(|model| model.status.is_some())
    }

    /// The test, as a deletion's root guard, that a row still dangles by any of `relations`.
    fn still_dangling(&self, relations: &[&Candidate<'_>]) -> RootGuard {
        let backend = self.engine.database().backend();
        let tests: Vec<ParentMissing> = relations.iter().map(|relation| relation.parent_missing()).collect();
        RootGuard::new(move |row| {
            let mut sql = SqlBuilder::new(backend);
            for (index, test) in tests.iter().enumerate() {
                sql.push(if index == 0 { "(" } else { " OR (" });
                test.write(&mut sql, row);
                sql.push(")");
            }
            sql.finish().sql
        })
    }

    /// Sets the relation column of those rows among `keys` that still dangle by it to NULL.
    fn nullify(&self, relation: &Candidate<'_>, keys: &[String]) -> Statement {
        let mut sql = SqlBuilder::new(self.engine.database().backend());
        // The anti-join tests each updated row; an `IN (SELECT ...)` of the table's orphans was
        // read whole by SQLite for every batch (270 against 19 ms a batch at 1M rows).
        sql.push("UPDATE ").push(&quoted(self.table)).push(" AS ").identifier(CHILD).push(" SET ");
        sql.identifier(&relation.catalog_column()).push(" = NULL WHERE ").key_list(
            &self.key,
            &self.key_type,
            Param::Keys(Keys::read(&self.key_type, keys.to_vec())),
        );
        sql.push(" AND ");
        relation.orphan_condition(&mut sql);
        sql.finish()
    }
}

/// Keys of orphans to clean up, in key order.
struct Batch {
    keys: Vec<String>,
    /// Read ahead and not read again: each row must be tested as it is cleaned.
    unchecked: bool,
}

/// Which keys a read of orphans looks at.
enum Among<'k> {
    /// The first `limit` after `after` (from the lowest without it).
    Next { after: Option<&'k str>, limit: u64 },
    /// Only these.
    These(&'k [String]),
}

/// The orphans of a group's relations in key order, a batch at a time: read a batch at a time,
/// or many batches ahead where the database reads many keys much faster per key
/// ([`crate::db::Backend::scan_read_ahead`]), each batch then read again among its own keys so
/// that rows which found their parent since are left alone, unless cleaning them tests that
/// itself.
struct OrphanReader<'g> {
    group: &'g Group<'g>,
    relations: &'g [&'g Candidate<'g>],
    /// Cleaning a row tests that it still dangles: a batch read ahead is handed out unchecked.
    checked_when_cleaned: bool,
    /// The last key read: the next read starts after it (not the checkpoint, which a batch whose
    /// roots were all skipped by their status leaves where it was).
    after: Option<String>,
    /// Keys read ahead, not yet handed out.
    ahead: std::collections::VecDeque<String>,
    /// The last read found fewer keys than it asked for: none are left after `after`.
    exhausted: bool,
}

impl<'g> OrphanReader<'g> {
    fn new(
        group: &'g Group<'g>,
        relations: &'g [&'g Candidate<'g>],
        after: Option<String>,
        checked_when_cleaned: bool,
    ) -> Self {
        Self { group, relations, checked_when_cleaned, after, ahead: Default::default(), exhausted: false }
    }

    /// The next batch of up to `size` keys (empty when every key read ahead for it found its
    /// parent again), or `None` when the scan is through.
    async fn next_batch(&mut self, size: u64) -> Result<Option<Batch>, OrphanError> {
        let read_ahead = self.group.engine.database().backend().scan_read_ahead();
        if read_ahead <= size {
            let keys = self.read(Among::Next { after: self.after.as_deref(), limit: size }, false).await?;
            self.exhausted = (keys.len() as u64) < size;
            self.after = keys.last().cloned().or(self.after.take());
            return Ok((!keys.is_empty()).then_some(Batch { keys, unchecked: false }));
        }
        if self.ahead.len() < size as usize && !self.exhausted {
            let keys = self.read(Among::Next { after: self.after.as_deref(), limit: read_ahead }, true).await?;
            self.exhausted = (keys.len() as u64) < read_ahead;
            self.after = keys.last().cloned().or(self.after.take());
            self.ahead.extend(keys);
        }
        if self.ahead.is_empty() {
            return Ok(None);
        }
        let keys: Vec<String> = self.ahead.drain(..self.ahead.len().min(size as usize)).collect();
        if self.checked_when_cleaned {
            return Ok(Some(Batch { keys, unchecked: true }));
        }
        Ok(Some(Batch { keys: self.read(Among::These(&keys), false).await?, unchecked: false }))
    }

    /// Whether every key of the scan has been handed out: its last read found fewer than it asked
    /// for, and none read ahead are left.
    fn scan_done(&self) -> bool {
        self.exhausted && self.ahead.is_empty()
    }

    /// Whether the read involves a partitioned table, which a generic plan would not prune.
    fn touches_partitions(&self) -> bool {
        self.group.table.partitioned || self.relations.iter().any(|relation| relation.parent_table.partitioned)
    }

    /// The orphans among `keys`; a `wide` read is one of many rows.
    async fn read(&self, keys: Among<'_>, wide: bool) -> Result<Vec<String>, OrphanError> {
        let (group, database) = (self.group, self.group.engine.database());
        let by_keys = matches!(keys, Among::These(_));
        let statement = group.orphan_keys(self.relations, keys);
        let read = if wide {
            database.fetch_wide_array(&statement).await
        } else if by_keys {
            // A custom plan of thousands of keys hashes the whole parent table (50 ms for
            // 180,000 parents) where probing its index for each key takes 13.
            database.fetch_key_array(&statement, !self.touches_partitions()).await
        } else {
            database.fetch_array(&statement).await
        };
        read.map_err(|source| OrphanError::Database { relation: format!("`{}`", group.model), source })
    }
}

/// What a batch of orphans gets.
#[derive(Clone, Copy)]
enum Clean<'p> {
    /// Deleted as the roots of the plan, each with everything below it.
    Delete(&'p Plan),
    /// The column of the relation set to NULL.
    Nullify(&'p Candidate<'p>),
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
            (Some(child), Some(action)) if relation.declared => {
                groups.entry((child.as_str(), action)).or_default().push(relation)
            }
            _ => left_alone.push(LeftAlone::of(relation, UNDECLARED)),
        }
    }
    deletes_first(&mut groups);
    (groups, left_alone)
}

/// Puts the groups that delete before those that nullify (each kind in report order): a row
/// dangling by a delete relation and by a nullify relation is then deleted, and archived, as it
/// was, rather than first having its column set to NULL by the clean-up itself.
fn deletes_first<R>(groups: &mut IndexMap<(&str, OnDelete), Vec<R>>) {
    groups.sort_by_key(|(_, action), _| *action == OnDelete::Nullify);
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
        column: relation.column.clone(),
        declared: relation.declared,
        on_delete: relation.on_delete,
        index_table: String::new(),
        key: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Filter, OrphanOptions, candidates};
    use crate::db::Kind;
    use crate::planner::fixture;
    use crate::schema::parse_ddl;

    const DDL: &str = "
        CREATE TABLE project (id bigint PRIMARY KEY);
        CREATE TABLE event (id bigint PRIMARY KEY, project_id bigint);
        CREATE TABLE grp (id bigint PRIMARY KEY);
        CREATE TABLE hash (id bigint PRIMARY KEY, grp_id bigint REFERENCES grp (id), project_id bigint REFERENCES project);";

    const CONFIG: &str = r#"
[models.project]
table = "project"
children = [{ model = "event", column = "project_id" }, { model = "hash", column = "project_id" }]

[models.event]
table = "event"
strategy = "bulk"

[models.hash]
table = "hash"
strategy = "bulk"
"#;

    #[test]
    fn orphans_are_counted_with_an_anti_join_and_undeclared_keys_follow_the_declared_ones() {
        let config = fixture::config(CONFIG);
        let schema = parse_ddl(DDL).schema;
        let mut filter = Filter::new(&OrphanOptions::default(), &config, &schema).unwrap();
        let (counted, skipped) = candidates(&config, &schema, &mut filter);
        assert!(skipped.is_empty());
        let found: Vec<(Option<&str>, &str, &str, bool)> =
            counted.iter().map(|c| (c.parent, c.child_table.name.as_str(), c.column.as_str(), c.declared)).collect();
        // hash.project_id is declared, so its foreign key is not reported a second time.
        assert_eq!(
            found,
            [
                (Some("project"), "event", "project_id", true),
                (Some("project"), "hash", "project_id", true),
                (None, "hash", "grp_id", false),
            ]
        );
        let count = counted[0].count(Kind::Postgres.backend());
        assert_eq!(
            count.sql,
            r#"SELECT COUNT(*) FROM "event" AS "orphan" LEFT JOIN "project" AS "parent" ON "parent"."id" = "orphan"."project_id" WHERE "orphan"."project_id" IS NOT NULL AND "parent"."id" IS NULL"#
        );
        let sample = counted[2].sample(Kind::Sqlite.backend(), 5);
        assert!(sample.sql.ends_with(r#"ORDER BY "orphan"."id" LIMIT ?1"#), "{}", sample.sql);
        assert!(!sample.sql.contains("NOT IN"));
    }

    /// Under a parent key that is not unique, SQLite's join would read every parent row holding
    /// the value: the count stays a `NOT EXISTS`, which stops at the first.
    #[test]
    fn orphans_of_a_key_that_is_not_unique_are_counted_with_not_exists() {
        let config = fixture::config(&CONFIG.replace("table = \"project\"", "table = \"project\"\nkey = \"code\""));
        let schema = parse_ddl(&DDL.replace("id bigint PRIMARY KEY);", "id bigint PRIMARY KEY, code bigint);")).schema;
        let mut filter = Filter::new(&OrphanOptions::default(), &config, &schema).unwrap();
        let (counted, _) = candidates(&config, &schema, &mut filter);
        let count = counted[0].count(Kind::Sqlite.backend());
        assert_eq!(
            count.sql,
            r#"SELECT COUNT(*) FROM "event" AS "orphan" WHERE "orphan"."project_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "project" AS "parent" WHERE "parent"."code" = "orphan"."project_id")"#
        );
    }
}
