//! How `cascade_outbox_entry` stores what a row names (migration 9). Scope, category and model
//! are integer codes of `cascade_outbox_name`: a name is registered before the first row that
//! holds it is written and keeps its code for good, so rows only ever name codes that exist.
//! Shard and object identifiers are text, or on SQLite integers where their text is one (see
//! [`Backend::outbox_identifier`](super::Backend::outbox_identifier)).

use super::Database;
use super::sql::{Param, SqlBuilder, Statement};

/// `(SELECT code ...)`: the code of `name`, NULL while it is not registered.
pub(crate) fn push_code(sql: &mut SqlBuilder, name: &str) {
    sql.push("(SELECT code FROM cascade_outbox_name WHERE name = ").bind_text(name).push(")");
}

/// `(SELECT code ... IN (...))`: the codes of `names` that are registered.
pub(crate) fn push_codes<'a>(sql: &mut SqlBuilder, names: impl IntoIterator<Item = &'a String>) {
    sql.push("(SELECT code FROM cascade_outbox_name WHERE name IN (");
    sql.binds(names.into_iter().map(|name| Param::text(name))).push("))");
}

/// `text` as the integer an outbox identifier is stored as on SQLite, when it is one written the
/// usual way: what SQLite's `CAST(CAST(x AS INTEGER) AS TEXT) = x` accepts (no sign but `-`, no
/// leading zeros, within 64 bits).
pub(crate) fn stored_as_integer(text: &str) -> Option<i64> {
    text.parse::<i64>().ok().filter(|integer| integer.to_string() == text)
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
    sql.push(" ON CONFLICT (name) DO NOTHING");
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
