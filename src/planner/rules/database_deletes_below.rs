//! `database-deletes-below` (note): the table of a relation with `on_delete = "database"` is
//! referenced by cascading foreign keys, so the database deletes rows below the ones it is left
//! (every key there cascades, or `database-leaves-rows` says so). Plans count and runs report the
//! relation's own rows only: cascade runs no statement below them, so it sees nothing of the rest.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        let Some(on_delete) = found.relation.on_delete.as_ref().filter(|a| a.value == OnDelete::Database) else {
            continue;
        };
        let SchemaRelation { child_table, .. } = found;
        let mut below: Vec<&str> = schema.references_to(child_table).map(|(table, _)| table.name.as_str()).collect();
        below.dedup();
        if below.is_empty() {
            continue;
        }
        diagnostics.push(
            Diagnostic::new(
                Code::DatabaseDeletesBelow,
                on_delete.location.clone(),
                format!(
                    "the database also deletes what references the `{}` rows it deletes (`{}`): the plan counts and \
                     the run reports the `{}` rows only",
                    child_table.name,
                    below.join("`, `"),
                    child_table.name
                ),
            )
            .label("the database deletes below these rows")
            .help(
                "where a plan also reaches those rows by another relation, the database may delete them first, and the \
                 run then reports fewer of them than the plan counted",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE post (id integer PRIMARY KEY);
        CREATE TABLE comment (id integer PRIMARY KEY, post_id integer REFERENCES post ON DELETE CASCADE);
        CREATE INDEX comment_post ON comment (post_id);
        CREATE TABLE reaction (id integer PRIMARY KEY, comment_id integer REFERENCES comment ON DELETE CASCADE);
        CREATE INDEX reaction_comment ON reaction (comment_id);
        CREATE TABLE tag (id integer PRIMARY KEY, post_id integer REFERENCES post ON DELETE CASCADE);
        CREATE INDEX tag_post ON tag (post_id);";

    const CONFIG: &str = r#"
[models.post]
table = "post"
children = [
  { model = "comment", column = "post_id", on_delete = "database" },
  { model = "tag", column = "post_id", on_delete = "database" },
]

[models.comment]
table = "comment"

[models.tag]
table = "tag"
"#;

    #[test]
    fn notes_the_tables_the_database_deletes_below_a_database_relation() {
        assert_eq!(fixture::codes_against(CONFIG, Some(DDL)), vec![(Code::DatabaseDeletesBelow, 5)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
