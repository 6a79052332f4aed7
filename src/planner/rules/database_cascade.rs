//! `database-cascade` (note): the database itself deletes (ON DELETE CASCADE) along a declared
//! delete relation. cascade still deletes children first, but any child the database reaches
//! (one inserted meanwhile) is deleted inside the parent's chunk, beyond its chunk size.

use crate::config::{Model, OnDelete};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};
use crate::schema::{ReferentialAction, Table};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        let cascades = found.foreign_keys(schema).iter().any(|key| key.on_delete == ReferentialAction::Cascade);
        if cascades && found.relation.action() == OnDelete::Delete {
            let SchemaRelation { parent, relation, child_table, .. } = found;
            diagnostics.push(note(parent, child_table, &relation.describe_columns(), &relation.location));
        }
    }
}

fn note(
    model: &Model,
    child_table: &Table,
    column: &str,
    location: &crate::diagnostic::Location,
) -> Diagnostic {
    Diagnostic::new(
        Code::DatabaseCascade,
        location.clone(),
        format!(
            "`{}.{column}` has ON DELETE CASCADE: the database deletes any such row still there inside each chunk \
             of `{}`",
            child_table.name, model.name.value
        ),
    )
    .label("the database also acts on this relation")
    .help("cascade deletes these children first in their own chunks; the database only catches rows inserted meanwhile")
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE artist (id integer PRIMARY KEY);
        CREATE TABLE album (id integer PRIMARY KEY, artist_id integer REFERENCES artist ON DELETE CASCADE);
        CREATE INDEX album_artist ON album (artist_id);
        CREATE TABLE award (id integer PRIMARY KEY, artist_id integer REFERENCES artist ON DELETE RESTRICT);
        CREATE INDEX award_artist ON award (artist_id);";

    const CONFIG: &str = r#"
[models.artist]
table = "artist"
children = [
  { model = "album", column = "artist_id" },
  { model = "award", column = "artist_id" },
]

[models.album]
table = "album"
strategy = "bulk"

[models.award]
table = "award"
strategy = "bulk"
"#;

    #[test]
    fn notes_a_relation_the_database_cascades_itself() {
        assert_eq!(fixture::codes_against(CONFIG, Some(DDL)), vec![(Code::DatabaseCascade, 5)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
