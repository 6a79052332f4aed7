//! `foreign-key-elsewhere`: a relation's column is a foreign key to another table than its
//! parent's. Its values are keys of that other table, so the relation would delete (or nullify)
//! the child rows whose values happen to equal a parent's keys: `genre` → `playlist_track` by
//! `TrackId` deletes the playlist entries of the tracks numbered as the genre is. A relation
//! meant this way is a typo or a relation under the wrong model, never a deletion to run.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        let Some(parent_table) = found.parent_table else { continue };
        if !found.foreign_keys(schema).is_empty() {
            continue;
        }
        let columns = found.relation.column_names();
        let elsewhere = found.child_table.foreign_keys.iter().find_map(|key| {
            let same_columns = key.columns.len() == columns.len()
                && key.columns.iter().all(|column| columns.iter().any(|c| c.eq_ignore_ascii_case(column)));
            let target = schema.resolve(key)?;
            (same_columns && !std::ptr::eq(target, parent_table)).then_some((key, target))
        });
        let Some((key, target)) = elsewhere else { continue };
        let SchemaRelation { parent, relation, child_table, .. } = found;
        let owner = context.config.models.values().find(|model| context.table_of(model).is_some_and(|t| std::ptr::eq(t, target)));
        let help = match owner {
            Some(owner) => format!(
                "declare the relation under [models.{}], the model of `{}`, or name the column of `{}` that holds `{}` keys",
                owner.name.value, target.name, child_table.name, parent.name.value
            ),
            None => format!(
                "name the column of `{}` that holds `{}` keys, or remove the relation",
                child_table.name, parent.name.value
            ),
        };
        diagnostics.push(
            Diagnostic::new(
                Code::ForeignKeyElsewhere,
                relation.location.clone(),
                format!(
                    "the foreign key {} references `{}`, not `{}`, the table of `{}`: this relation would go to the \
                     `{}` rows whose values equal a `{}` key by chance",
                    key.describe(&child_table.name),
                    target.name,
                    parent_table.name,
                    parent.name.value,
                    child_table.name,
                    parent.name.value
                ),
            )
            .label("a foreign key to another table")
            .help(help),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE genre (id integer PRIMARY KEY);
        CREATE TABLE track (id integer PRIMARY KEY, genre_id integer REFERENCES genre);
        CREATE TABLE playlist_track (id integer PRIMARY KEY, track_id integer REFERENCES track, note_id integer);
        CREATE INDEX track_genre ON track (genre_id);
        CREATE INDEX playlist_track_track ON playlist_track (track_id);
        CREATE INDEX playlist_track_note ON playlist_track (note_id);";

    const CONFIG: &str = r#"
[models.genre]
table = "genre"
children = [
  { model = "track", column = "genre_id" },
  { model = "playlist_track", column = "track_id" },
  { model = "playlist_track", column = "note_id", on_delete = "nullify" },
]

[models.track]
table = "track"
children = [{ model = "playlist_track", column = "track_id" }]

[models.playlist_track]
table = "playlist_track"
strategy = "bulk"
"#;

    #[test]
    fn a_relation_over_a_foreign_key_to_another_table_is_an_error_naming_its_owner() {
        let codes = fixture::codes_against(CONFIG, Some(DDL));
        assert_eq!(
            codes,
            vec![(Code::ForeignKeyElsewhere, 6)],
            "the relation over the key to `genre`, the one under `track` and the column with no key are fine"
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
