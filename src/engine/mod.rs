//! The executor's side of a plan: counting what it would delete (without loading rows or
//! changing anything), the statements of each step, and the deletion itself. An [`Engine`] is
//! the way in: it checks the live schema once, then runs deletions on it.

mod archive;
mod chunk_size;
mod condition;
mod count;
mod deletion;
mod lookups;
mod run;
mod sql;
mod steps;
mod throttle;

pub(crate) use archive::Archive;
pub use archive::ArchiveError;
pub(crate) use chunk_size::next_size as next_chunk_size;
pub use condition::{ConditionError, ROOTS_PER_RUN, RootCondition};
pub use count::{CountError, Counts, count};
pub(crate) use count::{Dangling, count_dangling, count_naming};
pub(crate) use deletion::RunBatch;
pub(crate) use deletion::whole_microseconds;
pub use deletion::{DeleteError, DeleteOptions, Deletion, Summary, default_actor};
pub use lookups::check_lookups;
pub use run::{Engine, Finished, PrepareError};
pub(crate) use sql::RootGuard;
pub use steps::{ListedStatement, StepStatements, list as list_statements};
pub(crate) use throttle::{Pacing, least_bursts, limits_above, paced_seconds};

pub(crate) use sql::status_in;

use indexmap::IndexMap;

use crate::config::Config;
use crate::db::Keys;
use crate::db::sql::KeyType;
use crate::db::{Database, DbError, TextRows, options};
use crate::planner::Plan;

/// [`Keys::parse`] for the keys of `table`, a key that does not fit being a [`DeleteError`].
pub(crate) fn table_keys(table: &str, key_types: &[KeyType], keys: Vec<String>) -> Result<Keys, DeleteError> {
    Keys::parse_for(key_types, keys).map_err(|id| DeleteError::NotAnInteger { id, table: table.to_owned() })
}

/// The requested `ids` that no row of `found` (rows whose first column is a key, as the
/// database writes it) has. Keys of other types than integer and text (uuid, ...) compare
/// without regard to ASCII case: the database writes `A1B2...` as `a1b2...`.
pub(crate) fn not_found(ids: &Keys, found: &TextRows, key_types: &[KeyType]) -> Vec<String> {
    let fold = |key: &str| match key_types.first().unwrap_or(&KeyType::Integer) {
        KeyType::Other(_) => key.to_ascii_lowercase(),
        KeyType::Integer | KeyType::Text | KeyType::Untyped => key.to_owned(),
    };
    let found: std::collections::HashSet<String> =
        found.iter().filter_map(|row| row.first().and_then(Option::as_deref)).map(fold).collect();
    ids.texts().into_iter().filter(|id| !found.contains(&fold(id))).collect()
}

/// Checks that `ids` fit the key of `plan`'s root table in the live schema, so that a
/// scheduled deletion of an id that cannot exist is refused now instead of failing later.
pub async fn check_root_ids(database: &Database, plan: &Plan, ids: &[String]) -> Result<(), DeleteError> {
    let schema = crate::schema::introspect(database).await?;
    let root = steps::node_sql(&plan.root, None, database.backend(), Some(&schema));
    root_keys(plan, &root.key_types, ids).map(|_| ())
}

/// The root ids of `plan` as keys of its root table, an id that does not fit being a refusal.
pub(crate) fn root_keys(plan: &Plan, key_types: &[KeyType], ids: &[String]) -> Result<Keys, DeleteError> {
    Keys::parse_for(key_types, ids.to_vec())
        .map_err(|id| DeleteError::RootNotAnInteger { id, table: plan.root.table.clone() })
}

/// Every option's current value: the config's `[options]`, overridden by `cascade_option`.
pub async fn current_options(config: &Config, database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    let mut values = config.option_values();
    values.extend(options::overrides(database).await?);
    Ok(values)
}
