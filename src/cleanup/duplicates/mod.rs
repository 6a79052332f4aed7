//! Duplicates: groups of rows of a model's table that are equal on some columns (`--by`),
//! counted in SQL; which row of each group would be kept (the oldest or the newest by an order
//! column, ties broken by the key) and which removed; and the unique index that stops duplicates
//! coming back, or the one that already does. [`find`] reads only; [`remove`] is the confirmed
//! removal, in batches.
//!
//! Equality is the database's own (`GROUP BY`, with the columns' collations), the same that a
//! unique index enforces; so a NULL equals nothing, and a row with a NULL in any of the columns
//! is in no group, as a unique index would let it be.
//!
//! `queries` holds the statements, `unique_index` the index that keeps duplicates out, `remove`
//! the removal and `merge` its re-pointing of children at the kept rows.

mod merge;
mod queries;
mod remove;
mod unique_index;

use indexmap::IndexMap;
use serde::Serialize;

pub use remove::remove;

use crate::cleanup::batches::BatchError;
use crate::config::Config;
use crate::db::{Database, DbError};
use crate::diagnostic::did_you_mean;
use crate::schema::{CatalogNames, Schema, Table};
use queries::Queries;
use unique_index::unique_index;

/// Sample groups shown when the caller asks for no other number.
pub const DEFAULT_SAMPLE: usize = 5;

/// The most removed keys listed per sample group (the group's `rows` gives how many there are).
pub const SAMPLE_REMOVED_KEYS: usize = 10;

/// Which row of a group of duplicates stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// The row with the lowest order value (ties: the lowest key).
    Oldest,
    /// The row with the highest order value (ties: the highest key).
    Newest,
}

impl Keep {
    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Keep::Oldest => "oldest",
            Keep::Newest => "newest",
        }
    }
}

/// What to look for.
#[derive(Debug, Clone)]
pub struct Search {
    /// The model whose table is searched.
    pub model: String,
    /// The columns rows must be equal on, as the user wrote them.
    pub by: Vec<String>,
    /// Which row of each group stays.
    pub keep: Keep,
    /// The column that says which row is oldest; the model's key when `None`.
    pub order_by: Option<String>,
    /// How many groups to show, the largest first.
    pub sample: usize,
}

/// The duplicates of a table; the JSON shape of `duplicates --format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Duplicates {
    /// The model searched.
    pub model: String,
    /// Its table, as the catalog names it (without its schema).
    pub table: String,
    /// The key columns that name rows.
    pub key: Vec<String>,
    /// The columns rows are equal on, as the catalog spells them.
    pub by: Vec<String>,
    /// Which row of each group stays.
    pub keep: Keep,
    /// The columns that order a group (the `--order-by` column, else the key); the key breaks ties.
    pub order_by: Vec<String>,
    /// Groups of two or more rows equal on `by`.
    pub groups: u64,
    /// Rows in those groups.
    pub rows: u64,
    /// Rows that would be removed: all but the kept row of each group (`rows - groups`).
    pub removable: u64,
    /// Rows with a NULL in some `by` column, which are in no group.
    pub null_rows: u64,
    /// The largest groups (ties: by their values), at most the number asked for.
    pub sample: Vec<Group>,
    /// The unique index that keeps duplicates out, existing or proposed.
    pub unique_index: UniqueIndex,
}

/// One group of equal rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The `by` columns' values (as text).
    pub values: IndexMap<String, String>,
    /// Rows in the group.
    pub rows: u64,
    /// The key of the row that stays (a JSON array for a composite key).
    pub kept: String,
    /// Keys of the rows that would be removed, in order (the next to be kept first), at most
    /// [`SAMPLE_REMOVED_KEYS`] of them.
    pub removed: Vec<String>,
}

/// What already makes rows unique on the `by` columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Uniqueness {
    /// The table's primary key.
    PrimaryKey,
    /// A unique index (or the index of a unique constraint): whole-table, on plain columns.
    UniqueIndex,
}

/// The unique index on the `by` columns: one that exists, or the statement that creates it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UniqueIndex {
    /// Whether a primary key or unique index already makes rows unique on the columns (on
    /// exactly them, or on some of them, which is stronger).
    pub exists: bool,
    /// What it is, when it exists.
    pub kind: Option<Uniqueness>,
    /// The existing index's name (none for a primary key without a named index), or the name
    /// proposed: `<table>_<columns>_key`.
    pub name: Option<String>,
    /// The existing index's columns, or those of the proposed one.
    pub columns: Vec<String>,
    /// The statement that creates the proposed index; none when one exists.
    pub statement: Option<String>,
    /// Unique indexes on exactly these columns left INVALID by a failed `CREATE INDEX
    /// CONCURRENTLY` (PostgreSQL): they enforce nothing reliably and must be dropped first.
    pub invalid: Vec<String>,
}

/// Why duplicates could not be looked for.
#[derive(Debug, thiserror::Error)]
pub enum DuplicatesError {
    /// The model is not in the config.
    #[error("unknown model `{name}`{}", hint(suggestion))]
    UnknownModel {
        /// The name given.
        name: String,
        /// "did you mean `x`?" when a model's name is close.
        suggestion: Option<String>,
    },
    /// The model's table is not in the database.
    #[error("table `{table}` of model `{model}` is not in the database")]
    MissingTable {
        /// The model.
        model: String,
        /// Its table, as the config names it.
        table: String,
    },
    /// No `--by` column was given.
    #[error("--by needs at least one column")]
    NoColumns,
    /// A column named on the command line is not in the table.
    #[error("{option}: table `{table}` has no column `{column}`{}", hint(suggestion))]
    UnknownColumn {
        /// Where it was named: `--by` or `--order-by`.
        option: &'static str,
        /// The table.
        table: String,
        /// The column given.
        column: String,
        /// "did you mean `x`?" when a column's name is close.
        suggestion: Option<String>,
    },
    /// A `--by` column was named twice.
    #[error("--by names column `{0}` twice")]
    RepeatedColumn(String),
    /// The model's key is not a column of its table, so rows cannot be named.
    #[error(
        "the key `{column}` of model `{model}` is not a column of table `{table}`: set `key` in the model's config{}",
        primary_key.as_ref().map(|key| format!(" (the table's primary key is `{key}`)")).unwrap_or_default()
    )]
    MissingKey {
        /// The model.
        model: String,
        /// Its table.
        table: String,
        /// The key column that is missing.
        column: String,
        /// The table's primary key, when it has one.
        primary_key: Option<String>,
    },
    /// A query failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// Removing duplicates failed or was refused.
    #[error(transparent)]
    Cleanup(#[from] BatchError),
    /// The model's rows cannot be the roots of a deletion.
    #[error("duplicates of `{model}` cannot be removed: {reason}")]
    NotRemovable {
        /// The model.
        model: String,
        /// Why.
        reason: String,
    },
    /// Re-pointing the children of a group's duplicates at its kept row would break a unique
    /// constraint of the child table; nothing of the group was changed.
    #[error(
        "merging the duplicates {} of `{model}` into {kept} would violate the unique constraint {constraint} of \
         `{child}` (rows of `{child}` point at both); nothing of this group was changed: merge or delete those \
         rows first, or remove the duplicates without --merge",
        duplicates.join(", ")
    )]
    MergeConflict {
        /// The model.
        model: String,
        /// The key of the group's kept row.
        kept: String,
        /// The keys of the group's duplicates.
        duplicates: Vec<String>,
        /// The child model whose rows would collide.
        child: String,
        /// The database's name for the constraint.
        constraint: String,
    },
}

fn hint(suggestion: &Option<String>) -> String {
    suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default()
}

/// Looks for the duplicates `search` describes in the model's table of `database`, whose live
/// schema is `schema`. Reads only.
pub async fn find(
    database: &Database,
    config: &Config,
    schema: &Schema,
    search: &Search,
) -> Result<Duplicates, DuplicatesError> {
    let Resolved { names, table, key, by, order_by } = Resolved::of(config, schema, search)?;
    let queries = Queries { table: names.quoted_table(), by: &by, key: &key, order_by: &order_by, keep: search.keep };
    let totals = database.fetch_texts(&queries.totals(database.sql())).await?;
    let number = |index: usize| -> u64 {
        totals.first().and_then(|row| row.get(index)).and_then(|value| value.as_deref()?.parse().ok()).unwrap_or(0)
    };
    let (groups, rows) = (number(0), number(1));
    let null_rows = database.fetch_count(&queries.null_rows(database.sql())).await?;
    let sample = if groups > 0 && search.sample > 0 {
        let found = database.fetch_texts(&queries.sample(database.sql(), search.sample)).await?;
        sample_groups(&found, &by)
    } else {
        Vec::new()
    };
    Ok(Duplicates {
        model: search.model.clone(),
        table: table.name.clone(),
        key,
        unique_index: unique_index(database, schema, table, &by),
        by,
        keep: search.keep,
        order_by,
        groups,
        rows,
        removable: rows.saturating_sub(groups),
        null_rows,
        sample,
    })
}

/// A search resolved against the live schema: the table and its columns as the catalog spells them.
struct Resolved<'a> {
    names: CatalogNames<'a>,
    table: &'a Table,
    key: Vec<String>,
    by: Vec<String>,
    order_by: Vec<String>,
}

impl<'a> Resolved<'a> {
    fn of(config: &'a Config, schema: &'a Schema, search: &Search) -> Result<Self, DuplicatesError> {
        let model = config.model(&search.model).ok_or_else(|| DuplicatesError::UnknownModel {
            name: search.model.clone(),
            suggestion: did_you_mean(&search.model, config.models.keys().map(String::as_str)),
        })?;
        let names = CatalogNames::of(Some(schema), &model.table.value);
        let table = names.table().ok_or_else(|| DuplicatesError::MissingTable {
            model: search.model.clone(),
            table: model.table.value.clone(),
        })?;
        let key_columns = model.key.as_ref().map_or_else(|| vec!["id".to_owned()], |key| key.value.columns());
        let key = key_columns
            .iter()
            .map(|column| {
                table.column(column).map(|c| c.name.clone()).ok_or_else(|| DuplicatesError::MissingKey {
                    model: search.model.clone(),
                    table: table.name.clone(),
                    column: column.clone(),
                    primary_key: (!table.primary_key.is_empty()).then(|| table.primary_key.join(", ")),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if search.by.is_empty() {
            return Err(DuplicatesError::NoColumns);
        }
        let mut by: Vec<String> = Vec::new();
        for column in &search.by {
            let column = resolve(table, "--by", column)?;
            if by.contains(&column) {
                return Err(DuplicatesError::RepeatedColumn(column));
            }
            by.push(column);
        }
        let order_by = match &search.order_by {
            Some(column) => vec![resolve(table, "--order-by", column)?],
            None => key.clone(),
        };
        Ok(Self { names, table, key, by, order_by })
    }
}

/// A column named on the command line, as the catalog spells it.
fn resolve(table: &Table, option: &'static str, column: &str) -> Result<String, DuplicatesError> {
    table.column(column).map(|c| c.name.clone()).ok_or_else(|| DuplicatesError::UnknownColumn {
        option,
        table: table.name.clone(),
        column: column.to_owned(),
        suggestion: did_you_mean(column, table.columns.iter().map(|c| c.name.as_str())),
    })
}

/// The sample's rows (group, size, key, values...) as groups: each group's first row is kept.
fn sample_groups(found: &crate::db::TextRows, by: &[String]) -> Vec<Group> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for row in found {
        let text = |index: usize| row.get(index).cloned().flatten().unwrap_or_default();
        let (number, key) = (text(0), text(2));
        match groups.last_mut() {
            Some((last, group)) if *last == number => group.removed.push(key),
            _ => {
                let values = by.iter().enumerate().map(|(index, column)| (column.clone(), text(3 + index))).collect();
                let rows = text(1).parse().unwrap_or(0);
                groups.push((number, Group { values, rows, kept: key, removed: Vec::new() }));
            }
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}
