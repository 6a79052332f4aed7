//! The executor's side of a plan: counting what it would delete (without loading rows or
//! changing anything), the statements of each step, and the deletion itself.

pub mod archive;
pub mod count;
pub mod executor;
pub mod steps;
pub mod throttle;

pub use count::{CountError, Counts, count};
pub use executor::{DeleteError, DeleteOptions, Deletion, Summary};

use crate::db::sql::{KeyType, SqlValue};

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
