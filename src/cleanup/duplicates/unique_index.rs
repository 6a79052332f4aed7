//! The unique index that keeps duplicates out: the primary key or a unique index that already
//! does, else the statement that creates one.

use super::{UniqueIndex, Uniqueness};
use crate::db::Database;
use crate::schema::{Schema, Table};

/// What makes rows unique on `by` already (the primary key or a unique index on exactly those
/// columns, or on some of them), else the statement that creates `<table>_<columns>_key`.
pub(super) fn unique_index(database: &Database, schema: &Schema, table: &Table, by: &[String]) -> UniqueIndex {
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
    let parts: Vec<&str> = table.schema.iter().chain([&table.name]).map(String::as_str).collect();
    database.backend().create_unique_index(&mut sql, &name, &parts, by, table.partitioned);
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
    let limit = database.backend().tuning().identifier_limit.unwrap_or(usize::MAX);
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
