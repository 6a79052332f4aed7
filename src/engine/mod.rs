//! The executor's side of a plan: counting what it would delete (without loading rows or
//! changing anything), the statements of each step, and the deletion itself. An [`Engine`] is
//! the way in: it checks the live schema once, then runs deletions on it.

mod archive;
mod chunk_size;
mod count;
mod deletion;
mod run;
mod sql;
mod steps;
mod throttle;

pub use archive::{Archive, ArchiveError};
pub(crate) use chunk_size::next_size as next_chunk_size;
pub use count::{CountError, Counts, Dangling, count, count_dangling};
pub use deletion::{DeleteError, DeleteOptions, Deletion, RunBatch, Summary, default_actor};
pub use run::{Engine, Finished, PrepareError};
pub use sql::RootGuard;
pub use steps::{ListedStatement, StepStatements, list as list_statements};
pub use throttle::Pacing;

pub(crate) use sql::status_in;

use indexmap::IndexMap;

use crate::config::Config;
use crate::db::sql::{KeyType, SqlValue};
use crate::db::{Database, DbError, TextRows, options};
use crate::planner::Plan;

/// Keys as the key column wants them bound: integers for an integer key (the first key that is
/// not one is the error), text otherwise.
pub(crate) fn typed_keys(key_type: &KeyType, keys: Vec<String>) -> Result<SqlValue, String> {
    let integers = |keys: Vec<String>| {
        keys.into_iter().map(|key| key.trim().parse::<i64>().map_err(|_| key)).collect::<Result<Vec<_>, _>>()
    };
    match key_type {
        KeyType::Integer => integers(keys).map(SqlValue::Integers),
        KeyType::Untyped => Ok(SqlValue::UntypedKeys(keys)),
        KeyType::Text | KeyType::Other(_) => Ok(SqlValue::Texts(keys)),
    }
}

/// Keys as text, whatever their bound type.
pub(crate) fn key_texts(keys: &SqlValue) -> Vec<String> {
    match keys {
        SqlValue::Integers(list) => list.iter().map(i64::to_string).collect(),
        SqlValue::Texts(list) | SqlValue::UntypedKeys(list) => list.clone(),
        SqlValue::Integer(i) => vec![i.to_string()],
        SqlValue::Text(t) => vec![t.clone()],
    }
}

/// `typed_keys` for the keys of `table`, a key that does not fit being a [`DeleteError`].
pub(crate) fn table_keys(table: &str, key_type: &KeyType, keys: Vec<String>) -> Result<SqlValue, DeleteError> {
    typed_keys(key_type, keys).map_err(|id| DeleteError::NotAnInteger { id, table: table.to_owned() })
}

/// The requested `ids` that no row of `found` (rows whose first column is a key, as the
/// database writes it) has. Keys of other types than integer and text (uuid, ...) compare
/// without regard to ASCII case: the database writes `A1B2...` as `a1b2...`.
pub(crate) fn not_found(ids: &SqlValue, found: &TextRows, key_type: &KeyType) -> Vec<String> {
    let fold = |key: &str| match key_type {
        KeyType::Other(_) => key.to_ascii_lowercase(),
        KeyType::Integer | KeyType::Text | KeyType::Untyped => key.to_owned(),
    };
    let found: std::collections::HashSet<String> =
        found.iter().filter_map(|row| row.first().and_then(Option::as_deref)).map(fold).collect();
    key_texts(ids).into_iter().filter(|id| !found.contains(&fold(id))).collect()
}

/// Checks that `ids` fit the key of `plan`'s root table in the live schema, so that a
/// scheduled deletion of an id that cannot exist is refused now instead of failing later.
pub async fn check_root_ids(database: &Database, plan: &Plan, ids: &[String]) -> Result<(), DeleteError> {
    let schema = crate::schema::introspect(database).await?;
    let root = steps::node_sql(&plan.root, None, database.backend(), Some(&schema));
    table_keys(&plan.root.table, &root.key_type, ids.to_vec()).map(|_| ())
}

/// Every option's current value: the config's `[options]`, overridden by `cascade_option`.
pub async fn current_options(config: &Config, database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    let mut values = config.option_values();
    values.extend(options::overrides(database).await?);
    Ok(values)
}
