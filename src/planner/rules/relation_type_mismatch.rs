//! `relation-type-mismatch`: a relation's column and the key of the parent it references have
//! types PostgreSQL cannot compare (no `=` between them: an integer and a text, a `uuid` and
//! either): the first statement that looks children up by their parent's keys would fail halfway
//! through a deletion, after the steps before it had committed. SQLite compares any two values;
//! where its affinities would not convert a key to what a column holds (an integer key and a
//! TEXT column's `'1'`), the deletion compares them as the column does (`Backend::compared_as`).

use crate::db::sql::quote_identifier;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};
use crate::config::Located;
use crate::schema::{Column, Table};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        let SchemaRelation { parent_table, child_table, .. } = found;
        let Some(parent_table) = parent_table else { continue };
        for (written, column, parent_key) in found.pairs() {
            if !schema.cannot_compare(child_table, column, parent_table, parent_key) {
                continue;
            }
            diagnostics.push(mismatch(written, child_table, column, parent_table, parent_key));
        }
    }
}

fn mismatch(
    written: &Located<String>,
    child_table: &Table,
    column: &Column,
    parent_table: &Table,
    parent_key: &Column,
) -> Diagnostic {
    Diagnostic::new(
        Code::RelationTypeMismatch,
        written.location.clone(),
        format!(
            "`{}.{}` is `{}`, but the key it references, `{}.{}`, is `{}`",
            child_table.name,
            column.name,
            column.data_type,
            parent_table.name,
            parent_key.name,
            parent_key.data_type
        ),
    )
    .label("PostgreSQL cannot compare these types")
    .help(help(&child_table.name, column, parent_table, parent_key))
}

/// A change the server accepts: the `ALTER` that gives the column the key's type where
/// PostgreSQL casts one to the other, else the relation pointed at a parent column the child's
/// can match.
fn help(child_table: &str, column: &Column, parent_table: &Table, key: &Column) -> String {
    if column.key_type.casts_on_postgres(&key.key_type) {
        return format!(
            "give the column the key's type: ALTER TABLE {table} ALTER COLUMN {name} TYPE {key_type} USING \
             {name}::{key_type};",
            table = quote_identifier(child_table),
            name = quote_identifier(&column.name),
            key_type = key.data_type,
        );
    }
    let no_cast = format!(
        "PostgreSQL has no cast from `{}` to `{}`, so changing the column's type cannot keep its values",
        column.data_type, key.data_type
    );
    let matching = parent_table.columns.iter().find(|other| {
        other.key_type.compares_on_postgres(&column.key_type) && parent_table.column_is_unique(&other.name)
    });
    match matching {
        Some(other) => format!(
            "{no_cast}: if it holds `{}.{}`, reference that column: references = \"{}\" on the relation",
            parent_table.name, other.name, other.name
        ),
        None => format!(
            "{no_cast}: point the relation at the column of `{child_table}` that holds `{}.{}`",
            parent_table.name, key.name
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE artist (id integer PRIMARY KEY, guid uuid UNIQUE);
        CREATE TABLE album (id integer PRIMARY KEY, artist_id bigint REFERENCES artist);
        CREATE TABLE fan (id integer PRIMARY KEY, artist_ref text, artist_guid uuid, amount numeric);
        CREATE TABLE poster (id integer PRIMARY KEY, artist_guid text);
        CREATE TABLE sticker (id integer PRIMARY KEY, artist_guid text REFERENCES artist (guid));
        CREATE INDEX sticker_guid ON sticker (artist_guid);
        CREATE INDEX album_artist ON album (artist_id);
        CREATE INDEX fan_artist ON fan (artist_ref);
        CREATE INDEX fan_amount ON fan (amount);
        CREATE INDEX fan_guid ON fan (artist_guid);
        CREATE INDEX poster_guid ON poster (artist_guid);";

    const CONFIG: &str = r#"
[models.artist]
table = "artist"
children = [
  { model = "album", column = "artist_id" },
  { model = "fan", column = "artist_ref" },
  { model = "tip", column = "amount" },
]

[models.album]
table = "album"

[models.fan]
table = "fan"

[models.tip]
table = "fan"

[models.by_guid]
table = "artist"
key = "guid"
children = [{ model = "poster", column = "artist_guid" }, { model = "fan", column = "artist_guid" }]

[models.poster]
table = "poster"

# A foreign key says the database compares them (here a script's guess at a type, or SQLite's).
[models.sticker_owner]
table = "artist"
key = "guid"
children = [{ model = "sticker", column = "artist_guid" }]

[models.sticker]
table = "sticker"
"#;

    #[test]
    fn integers_and_texts_do_not_compare_nor_uuids_with_either_unless_a_foreign_key_ties_them() {
        let mismatches: Vec<(Code, usize)> = fixture::codes_against(CONFIG, Some(DDL))
            .into_iter()
            .filter(|(code, _)| *code == Code::RelationTypeMismatch)
            .collect();
        assert_eq!(mismatches, vec![(Code::RelationTypeMismatch, 6), (Code::RelationTypeMismatch, 22)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
