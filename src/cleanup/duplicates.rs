//! Duplicates: groups of rows of a model's table that are equal on some columns (`--by`),
//! counted in SQL; which row of each group would be kept (the oldest or the newest by an order
//! column, ties broken by the key) and which removed; and the unique index that stops duplicates
//! coming back, or the one that already does. Read only: nothing here changes the database.
//!
//! Equality is the database's own (`GROUP BY`, with the columns' collations), the same that a
//! unique index enforces; so a NULL equals nothing, and a row with a NULL in any of the columns
//! is in no group, as a unique index would let it be.

use indexmap::IndexMap;
use serde::Serialize;

use super::batches::{self, BatchError, BatchOptions, BatchRun, CleanupSummary};
use crate::audit::Alone;
use crate::config::{Config, Located, StatusValue};
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement};
use crate::db::{Database, DbError, Transaction, typed_key_json};
use crate::diagnostic::did_you_mean;
use crate::engine::Engine;
use crate::schema::{CatalogNames, Schema, Table};

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
        unique_index: unique_index(database, schema, table, &names, &by),
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

/// Removes the duplicates of `search` in batches (see [`batches`]): all but the kept row of each
/// group, in key order, each as the root of its own cascade through the model's plan. With
/// `merge`, the rows that reference a batch's duplicates through a declared relation are first
/// re-pointed at their group's kept row, in one transaction per batch; when that would break a
/// unique constraint, the batch is rolled back and the first group at fault is named.
pub async fn remove(
    engine: &Engine,
    search: &Search,
    merge: bool,
    options: BatchOptions,
) -> Result<CleanupSummary, DuplicatesError> {
    let (config, schema) = (engine.config(), engine.schema());
    let resolved = Resolved::of(config, schema, search)?;
    let not_removable = |reason: String| DuplicatesError::NotRemovable { model: search.model.clone(), reason };
    let [key] = resolved.key.as_slice() else {
        return Err(not_removable("its key is composite: a clean-up deletes rows by a single-column key".to_owned()));
    };
    let key_type = resolved.table.column(key).map_or(KeyType::Integer, |column| column.key_type.clone());
    let plan = crate::planner::compile(config, &search.model).map_err(|error| not_removable(error.to_string()))?;
    let queries = Queries {
        table: resolved.names.quoted_table(),
        by: &resolved.by,
        key: &resolved.key,
        order_by: &resolved.order_by,
        keep: search.keep,
    };
    let may_go = config.model(&search.model).and_then(|model| model.status.as_ref()).and_then(|status| {
        let column = resolved.table.column(&status.column.value)?.name.clone();
        Some((column, status.proceed_or_in_progress()))
    });
    let merger = merge.then(|| Merger::new(engine, &search.model, &key_type));
    let target = format!("{} by {}", search.model, resolved.by.join(","));
    let name = format!("duplicates:{target}:{}:{}", search.keep.as_str(), resolved.order_by.join(","));
    let mut run = BatchRun::start(engine, (&search.model, &[target]), Alone::SameModel, options).await?;
    let removed = async {
        if merger.is_some() {
            run.refuse_undeletable(&plan).await?;
        }
        let mut after = run.resume_from(&name).await?;
        while run.may_start_batch() {
            let size = run.batch_size(&name);
            let statement =
                queries.removable(engine.database().sql(), &key_type, may_go.as_ref(), after.as_deref(), size);
            let pairs: Vec<(String, String)> = engine
                .database()
                .fetch_texts(&statement)
                .await?
                .into_iter()
                .filter_map(|row| {
                    let mut fields = row.into_iter();
                    Some((fields.next().flatten()?, fields.next().flatten()?))
                })
                .collect();
            let Some((last, _)) = pairs.last().cloned() else {
                run.finished_scan(&name).await?;
                break;
            };
            if let Some(merger) = &merger {
                let started = std::time::Instant::now();
                let re_pointed = merger.repoint(&pairs).await?;
                run.transaction_done(started.elapsed());
                run.re_pointed(re_pointed);
            }
            let keys: Vec<String> = pairs.into_iter().map(|(duplicate, _)| duplicate).collect();
            let next = run.delete_batch(&plan, &keys, &name, None).await?;
            after = Some(last);
            // A batch shorter than asked for was the scan's last: done, without another read
            // (nor, with `--max-batches`, a run that stops as if some were left).
            if (keys.len() as u64) < size && next == batches::Next::Continue {
                run.finished_scan(&name).await?;
                break;
            }
            if next == batches::Next::Stop {
                break;
            }
        }
        Ok::<_, DuplicatesError>(())
    }
    .await;
    let error = removed.as_ref().err().map(ToString::to_string);
    let finished = run.finish(error.as_deref()).await;
    removed?;
    Ok(finished?)
}

/// Re-points the rows that reference duplicates at their group's kept row: one `UPDATE` per
/// declared relation of the model.
struct Merger<'a> {
    engine: &'a Engine,
    model: &'a str,
    key_type: &'a KeyType,
    /// (child model, its table quoted, the relation column as the catalog spells it).
    relations: Vec<(String, String, String)>,
}

impl<'a> Merger<'a> {
    fn new(engine: &'a Engine, model: &'a str, key_type: &'a KeyType) -> Self {
        let (config, schema) = (engine.config(), engine.schema());
        let relations = config
            .model(model)
            .map(|declared| declared.children.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|relation| {
                let child = config.model(&relation.model.value)?;
                let names = CatalogNames::of(Some(schema), &child.table.value);
                let column = names.table()?.column(&relation.column.value)?.name.clone();
                Some((relation.model.value.clone(), names.quoted_table(), column))
            })
            .collect();
        Self { engine, model, key_type, relations }
    }

    /// Re-points the references to each (duplicate, kept) pair's duplicate, in one transaction;
    /// on a unique violation nothing is changed and the first group at fault is named.
    async fn repoint(&self, pairs: &[(String, String)]) -> Result<IndexMap<String, u64>, DuplicatesError> {
        let mut transaction = self.engine.database().begin_write().await?;
        match self.repoint_in(&mut transaction, pairs).await {
            Ok(re_pointed) => {
                transaction.commit().await?;
                Ok(re_pointed)
            }
            Err((child, error)) => {
                transaction.rollback().await?;
                let Some(constraint) = error.unique_violation() else { return Err(error.into()) };
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
        sql.push("UPDATE ").push(table).push(" AS cascade_row SET ").identifier(column).push(" = ");
        sql.push(&backend.json_key_field("kept", self.key_type)).push(" FROM ");
        backend.json_records(&mut sql, records, &["duplicate", "kept"]);
        sql.push(" WHERE cascade_row.").identifier(column).push(" = ");
        sql.push(&backend.json_key_field("duplicate", self.key_type));
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

/// The statements of a search. Aliases and derived columns are named `cascade_*`, so they do not
/// meet the table's own column names.
struct Queries<'a> {
    table: String,
    by: &'a [String],
    key: &'a [String],
    order_by: &'a [String],
    keep: Keep,
}

impl Queries<'_> {
    /// `"a" IS NOT NULL AND "b" IS NOT NULL`: NULL equals nothing, so such rows are in no group.
    fn not_null(&self, sql: &mut SqlBuilder) {
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " AND " }).identifier(column).push(" IS NOT NULL");
        }
    }

    /// `FROM table WHERE ... GROUP BY by HAVING COUNT(*) > 1`: the groups.
    fn groups(&self, sql: &mut SqlBuilder) {
        sql.push(" FROM ").push(&self.table).push(" WHERE ");
        self.not_null(sql);
        sql.push(" GROUP BY ").identifiers(self.by).push(" HAVING COUNT(*) > 1");
    }

    /// The number of groups and the rows in them.
    fn totals(&self, mut sql: SqlBuilder) -> crate::db::sql::Statement {
        sql.push("SELECT CAST(COUNT(*) AS TEXT), CAST(COALESCE(SUM(cascade_rows), 0) AS TEXT) FROM (");
        sql.push("SELECT COUNT(*) AS cascade_rows");
        self.groups(&mut sql);
        sql.push(") AS cascade_groups");
        sql.finish()
    }

    /// Rows with a NULL in some `by` column.
    fn null_rows(&self, mut sql: SqlBuilder) -> crate::db::sql::Statement {
        sql.push("SELECT COUNT(*) FROM ").push(&self.table).push(" WHERE ");
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " OR " }).identifier(column).push(" IS NULL");
        }
        sql.finish()
    }

    /// The largest `groups` groups, each row with its group's number and size, its key and the
    /// group's values, in the order that keeps its first row; at most the kept row and
    /// [`SAMPLE_REMOVED_KEYS`] more per group.
    fn sample(&self, mut sql: SqlBuilder, groups: usize) -> crate::db::sql::Statement {
        let values: Vec<String> = (1..=self.by.len()).map(|n| format!("cascade_value_{n}")).collect();
        sql.push("SELECT CAST(cascade_group AS TEXT), CAST(cascade_rows AS TEXT), cascade_key");
        for value in &values {
            sql.push(", ").push(value);
        }
        sql.push(" FROM (SELECT cascade_dup.cascade_group, cascade_dup.cascade_rows, ");
        self.key_text(&mut sql);
        sql.push(" AS cascade_key");
        for (column, value) in self.by.iter().zip(&values) {
            sql.push(", CAST(cascade_row.").identifier(column).push(" AS TEXT) AS ").push(value);
        }
        sql.push(", ROW_NUMBER() OVER (PARTITION BY cascade_dup.cascade_group ORDER BY ");
        self.keep_order(&mut sql);
        sql.push(") AS cascade_position FROM ").push(&self.table).push(" AS cascade_row JOIN (SELECT ");
        for (index, column) in self.by.iter().enumerate() {
            sql.identifier(column).push(&format!(" AS cascade_by_{}, ", index + 1));
        }
        sql.push("COUNT(*) AS cascade_rows, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, ");
        sql.identifiers(self.by).push(") AS cascade_group");
        self.groups(&mut sql);
        sql.push(" ORDER BY COUNT(*) DESC, ").identifiers(self.by).push(" LIMIT ");
        sql.bind(Param::integer(i64::try_from(groups).unwrap_or(i64::MAX)));
        sql.push(") AS cascade_dup ON ");
        for (index, column) in self.by.iter().enumerate() {
            sql.push(if index == 0 { "" } else { " AND " });
            sql.push("cascade_row.").identifier(column).push(&format!(" = cascade_dup.cascade_by_{}", index + 1));
        }
        sql.push(") AS cascade_sample WHERE cascade_position <= ");
        sql.bind(Param::integer(1 + SAMPLE_REMOVED_KEYS as i64));
        // Qualified: a bare name would sort by the output column of the same name, which is text.
        sql.push(" ORDER BY cascade_sample.cascade_group, cascade_sample.cascade_position");
        sql.finish()
    }

    /// The next `limit` rows after the key `after` that are not their group's kept row, in key
    /// order: (key, the kept row's key), as text.
    /// `may_go`: the status column (as the catalog spells it) and the values that allow a row's
    /// deletion; a duplicate whose status does not is left, children and all.
    fn removable(
        &self,
        mut sql: SqlBuilder,
        key_type: &KeyType,
        may_go: Option<&(String, Vec<Located<StatusValue>>)>,
        after: Option<&str>,
        limit: u64,
    ) -> Statement {
        let key = &self.key[0];
        let window = |sql: &mut SqlBuilder| {
            sql.push(" OVER (PARTITION BY ");
            for (index, column) in self.by.iter().enumerate() {
                sql.push(if index == 0 { "cascade_row." } else { ", cascade_row." }).identifier(column);
            }
            sql.push(" ORDER BY ");
            self.keep_order(sql);
            sql.push(")");
        };
        sql.push("SELECT CAST(cascade_ranked.cascade_key AS TEXT), CAST(cascade_ranked.cascade_kept AS TEXT) FROM (");
        sql.push("SELECT cascade_row.").identifier(key).push(" AS cascade_key, FIRST_VALUE(cascade_row.");
        sql.identifier(key).push(")");
        window(&mut sql);
        sql.push(" AS cascade_kept, ROW_NUMBER()");
        window(&mut sql);
        sql.push(" AS cascade_position, ");
        match may_go {
            Some((column, values)) => {
                sql.push("CASE WHEN ");
                crate::engine::status_in(&mut sql, column, values);
                sql.push(" THEN 1 ELSE 0 END")
            }
            None => sql.push("1"),
        };
        sql.push(" AS cascade_may_go FROM ").push(&self.table).push(" AS cascade_row WHERE ");
        self.not_null(&mut sql);
        sql.push(") AS cascade_ranked WHERE cascade_ranked.cascade_position > 1 AND cascade_ranked.cascade_may_go = 1");
        batches::after(&mut sql, "cascade_ranked.cascade_key", key_type, after);
        sql.push(" ORDER BY cascade_ranked.cascade_key LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        sql.finish()
    }

    /// The key of a row of `cascade_row` as text: the value of a single column, a JSON array of
    /// a composite key's values.
    fn key_text(&self, sql: &mut SqlBuilder) {
        match self.key {
            [single] => {
                sql.push("CAST(cascade_row.").identifier(single).push(" AS TEXT)");
            }
            // The columns are unqualified here: the other side of the join names its own
            // columns `cascade_*`, so they are the table's.
            columns => sql.backend().json_array(sql, columns),
        }
    }

    /// The order in which a group's first row is the one kept: the order columns (NULL last,
    /// whichever the direction: an unknown age is neither oldest nor newest), then the key.
    fn keep_order(&self, sql: &mut SqlBuilder) {
        let direction = match self.keep {
            Keep::Oldest => " ASC",
            Keep::Newest => " DESC",
        };
        let mut first = true;
        for column in self.order_by {
            sql.push(if first { "" } else { ", " });
            first = false;
            sql.push("CASE WHEN cascade_row.").identifier(column).push(" IS NULL THEN 1 ELSE 0 END, ");
            sql.push("cascade_row.").identifier(column).push(direction);
        }
        for column in self.key {
            sql.push(", cascade_row.").identifier(column).push(direction);
        }
    }
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

/// What makes rows unique on `by` already (the primary key or a unique index on exactly those
/// columns, or on some of them), else the statement that creates `<table>_<columns>_key`.
fn unique_index(
    database: &Database,
    schema: &Schema,
    table: &Table,
    names: &CatalogNames<'_>,
    by: &[String],
) -> UniqueIndex {
    let within = |columns: &[String]| {
        !columns.is_empty() && columns.iter().all(|column| by.iter().any(|b| b.eq_ignore_ascii_case(column)))
    };
    let same = |columns: &[String]| within(columns) && columns.len() == by.len();
    let invalid: Vec<String> = table
        .indexes
        .iter()
        .filter(|index| index.unique && index.invalid && !index.partial && !index.expression && same(&index.columns))
        .filter_map(|index| index.name.clone())
        .collect();
    let primary_key = within(&table.primary_key).then(|| {
        // The index behind the primary key, for its name (SQLite's INTEGER PRIMARY KEY has none).
        let name = table
            .indexes
            .iter()
            .find(|index| index.enforces_uniqueness() && index.columns == table.primary_key)
            .and_then(|index| index.name.clone());
        (Uniqueness::PrimaryKey, name, table.primary_key.clone())
    });
    let indexes = table
        .indexes
        .iter()
        .filter(|index| index.enforces_uniqueness() && within(&index.columns))
        .map(|index| (Uniqueness::UniqueIndex, index.name.clone(), index.columns.clone()));
    // Exactly the columns first, the primary key before an index.
    let mut existing: Vec<_> = primary_key.into_iter().chain(indexes).collect();
    existing.sort_by_key(|(_, _, columns)| !same(columns));
    if let Some((kind, name, columns)) = existing.into_iter().next() {
        return UniqueIndex { exists: true, kind: Some(kind), name, columns, statement: None, invalid };
    }
    let name = index_name(database, schema, table, by, &invalid);
    let mut sql = database.sql();
    database.backend().create_unique_index(&mut sql, &name, &names.quoted_table(), by, table.partitioned);
    UniqueIndex {
        exists: false,
        kind: None,
        name: Some(name),
        columns: by.to_vec(),
        statement: Some(sql.finish().sql),
        invalid,
    }
}

/// `<table>_<columns>_key` (PostgreSQL's name for a unique constraint), cut to the database's
/// identifier limit, with a number before the end when a table or index of the schema already
/// has the name (an invalid index on these columns does not count: it is to be dropped first).
fn index_name(database: &Database, schema: &Schema, table: &Table, by: &[String], invalid: &[String]) -> String {
    let taken = |name: &str| {
        !invalid.iter().any(|own| own == name)
            && schema.tables.iter().filter(|other| other.schema == table.schema).any(|other| {
                other.name.eq_ignore_ascii_case(name)
                    || other
                        .indexes
                        .iter()
                        .any(|index| index.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(name)))
            })
    };
    let base = format!("{}_{}", table.name, by.join("_"));
    let limit = database.backend().identifier_limit().unwrap_or(usize::MAX);
    (0..)
        .map(|number: u32| {
            let suffix = if number == 0 { "_key".to_owned() } else { format!("_key{number}") };
            format!("{}{suffix}", cut(&base, limit.saturating_sub(suffix.len())))
        })
        .find(|name| !taken(name))
        .expect("some number is free")
}

/// The longest start of `text` of at most `bytes` bytes that ends on a character boundary.
fn cut(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn names_are_cut_on_character_boundaries() {
        assert_eq!(cut("abc", 10), "abc");
        assert_eq!(cut("abc", 2), "ab");
        assert_eq!(cut("aé", 2), "a", "é is two bytes");
    }
}
