//! How `cascade_outbox_entry` stores what a row names (migration 9). Scope, category and model
//! are integer codes of `cascade_outbox_name`: a name is registered before the first row that
//! holds it is written and keeps its code for good, so rows only ever name codes that exist.
//! Shard and object identifiers are text, or on SQLite integers where their text is one (see
//! [`Backend::outbox_identifier`](super::Backend::outbox_identifier)).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::sql::{SqlBuilder, Statement};
use super::{Database, DbError};

/// The codes of the names registered when last read. A name keeps its code for good, so a code
/// read once never goes stale; a name registered since is missing until the next
/// [`Codes::read`]. A reader binds codes as values, which lets PostgreSQL plan a statement on its
/// parameters (a code looked up inside the statement makes it probe row by row).
#[derive(Debug, Clone, Default)]
pub(crate) struct Codes(Arc<RwLock<HashMap<String, i64>>>);

impl Codes {
    /// Reads every registered name's code (none before migration 9's table has rows).
    pub(crate) async fn read(&self, database: &Database) -> Result<(), DbError> {
        let mut sql = database.sql();
        sql.push("SELECT name, ").text("code").push(" AS code FROM cascade_outbox_name");
        let rows = database.fetch_records(&sql.finish()).await?;
        let codes = rows.iter().map(|row| Ok((row.text("name")?, row.parsed("code")?)));
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = codes.collect::<Result<_, DbError>>()?;
        Ok(())
    }

    /// The code of `name`, when it was registered by the last read.
    pub(crate) fn get(&self, name: &str) -> Option<i64> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).copied()
    }

    /// The name of `code`, when it was registered by the last read (a few dozen names: a scan).
    pub(crate) fn name(&self, code: i64) -> Option<String> {
        let codes = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        codes.iter().find(|(_, known)| **known == code).map(|(name, _)| name.clone())
    }
}

/// `(SELECT code ...)`: the code of `name`, NULL while it is not registered.
pub(crate) fn push_code(sql: &mut SqlBuilder, name: &str) {
    sql.push("(SELECT code FROM cascade_outbox_name WHERE name = ").bind_text(name).push(")");
}

/// `text` as the integer an outbox identifier is stored as on SQLite, when it is one written the
/// usual way: what SQLite's `CAST(CAST(x AS INTEGER) AS TEXT) = x` accepts (no sign but `-`, no
/// leading zeros, within 64 bits).
pub(crate) fn stored_as_integer(text: &str) -> Option<i64> {
    super::keys::exact_integer(text)
}

/// `text` bound as the outbox identifier column stores it.
pub(crate) fn push_identifier(sql: &mut SqlBuilder, text: &str) {
    let backend = sql.backend();
    backend.bind_outbox_identifier(sql, text);
}

/// The statement registering `names` (each once; a name already there keeps its code), none
/// without names. A writer runs it in the transaction that writes the first rows holding them;
/// the names are inserted in order, so two writers registering some of the same new names wait
/// for each other instead of deadlocking.
pub(crate) fn registration(database: &Database, names: &std::collections::BTreeSet<&str>) -> Option<Statement> {
    if names.is_empty() {
        return None;
    }
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_outbox_name (name) VALUES ");
    for (index, name) in names.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { ", (" }).bind_text(name).push(")");
    }
    let backend = sql.backend();
    backend.on_duplicate(&mut sql, &["name"], &[], "");
    Some(sql.finish())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_integers_written_the_usual_way_are_stored_as_integers() {
        for (text, stored) in
            [("7", Some(7)), ("-12", Some(-12)), ("0", Some(0)), ("9223372036854775807", Some(i64::MAX))]
        {
            assert_eq!(super::stored_as_integer(text), stored, "{text}");
        }
        for text in ["07", "+7", "-0", " 7", "7 ", "1.0", "1e3", "9223372036854775808", "abc", "", "[1,2]"] {
            assert_eq!(super::stored_as_integer(text), None, "{text}");
        }
    }
}
