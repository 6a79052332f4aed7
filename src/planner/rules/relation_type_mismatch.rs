//! `relation-type-mismatch`: on PostgreSQL, a relation's column and the key of the parent it
//! references have types with no `=` between them (an integer and a text, a `uuid` and either):
//! the first statement that looks children up by their parent's keys would fail halfway
//! through a deletion, after the steps before it had committed.

use crate::db::Kind;
use crate::db::sql::quote_identifier;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};

pub fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    if context.schema.is_none_or(|schema| schema.kind != Some(Kind::Postgres)) {
        return;
    }
    for SchemaRelation { parent, parent_table, relation, child_table, .. } in context.schema_relations() {
        let key = parent.key.as_ref().map_or(Some("id"), |key| key.value.single());
        let parent_key = parent_table.zip(key).and_then(|(table, key)| table.column(key));
        let (Some(parent_key), Some(column)) = (parent_key, child_table.column(&relation.column.value)) else {
            continue;
        };
        if parent_key.key_type.compares_on_postgres(&column.key_type) {
            continue;
        }
        let parent_table = parent_table.map_or(parent.table.value.as_str(), |table| table.name.as_str());
        diagnostics.push(
            Diagnostic::new(
                Code::RelationTypeMismatch,
                relation.column.location.clone(),
                format!(
                    "`{}.{}` is `{}`, but the key it references, `{parent_table}.{}`, is `{}`",
                    child_table.name, column.name, column.data_type, parent_key.name, parent_key.data_type
                ),
            )
            .label("PostgreSQL cannot compare these types")
            .help(format!(
                "give the column the key's type: ALTER TABLE {table} ALTER COLUMN {name} TYPE {key_type} USING \
                 {name}::{key_type};",
                table = quote_identifier(&child_table.name),
                name = quote_identifier(&column.name),
                key_type = parent_key.data_type,
            )),
        );
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
"#;

    #[test]
    fn integers_and_texts_do_not_compare_nor_uuids_with_either() {
        let mismatches: Vec<(Code, usize)> = fixture::codes_against(CONFIG, Some(DDL))
            .into_iter()
            .filter(|(code, _)| *code == Code::RelationTypeMismatch)
            .collect();
        assert_eq!(mismatches, vec![(Code::RelationTypeMismatch, 6), (Code::RelationTypeMismatch, 22)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
