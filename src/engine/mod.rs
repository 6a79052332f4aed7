//! The executor's side of a plan: counting what it would delete (without loading rows or
//! changing anything), the statements of each step, and the deletion itself. An [`Engine`] is
//! the way in: it checks the live schema once, then runs deletions on it.

mod archive;
mod count;
mod executor;
mod run;
mod sql;
mod steps;
mod throttle;

pub use archive::ArchiveError;
pub use count::{CountError, Counts, count};
pub use executor::{DeleteError, DeleteOptions, Deletion, RunOutcome, Summary, default_actor};
pub use run::{Engine, Finished, PrepareError};
pub use steps::{ListedStatement, StepStatements, list as list_statements};

use indexmap::IndexMap;

use crate::config::Config;
use crate::db::sql::{KeyType, SqlValue};
use crate::db::{Database, DbError, tables};

/// Keys as the key column wants them bound: integers for an integer key (the first key that is
/// not one is the error), text otherwise.
pub(crate) fn typed_keys(key_type: &KeyType, keys: Vec<String>) -> Result<SqlValue, String> {
    if *key_type != KeyType::Integer {
        return Ok(SqlValue::Texts(keys));
    }
    keys.into_iter()
        .map(|key| key.trim().parse::<i64>().map_err(|_| key))
        .collect::<Result<_, _>>()
        .map(SqlValue::Integers)
}

/// Every option's current value: the config's `[options]`, overridden by `cascade_option`.
pub async fn current_options(config: &Config, database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    let mut values = config.option_values();
    values.extend(tables::option_overrides(database).await?);
    Ok(values)
}
