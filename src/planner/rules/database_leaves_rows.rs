//! `database-leaves-rows`: a relation leaves its rows to the database (`on_delete = "database"`),
//! but a foreign key into their table, or into a table the database cascades to from there, is
//! not `ON DELETE CASCADE`. The database then refuses the parent's delete (`NO ACTION`,
//! `RESTRICT`) or keeps rows with a NULL or a default (`SET NULL`, `SET DEFAULT`) that no plan
//! counts and no run reports: below a database relation, cascade follows nothing, so the
//! database's own keys must delete everything there.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};
use crate::schema::ReferentialAction;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        let Some(on_delete) = found.relation.on_delete.as_ref().filter(|a| a.value == OnDelete::Database) else {
            continue;
        };
        let SchemaRelation { child_table, .. } = found;
        let Some((table, key)) = schema.first_not_cascading(child_table) else { continue };
        let effect = match key.on_delete {
            ReferentialAction::SetNull | ReferentialAction::SetDefault => format!(
                "keeps `{}` rows with {} that neither the plan counts nor the run reports",
                table.name,
                if key.on_delete == ReferentialAction::SetNull { "a NULL" } else { "the default" }
            ),
            _ => format!("refuses the delete while `{}` rows reference them", table.name),
        };
        diagnostics.push(
            Diagnostic::new(
                Code::DatabaseLeavesRows,
                on_delete.location.clone(),
                format!(
                    "the database deletes `{}` rows itself, and below them the foreign key {} is ON DELETE {}: the \
                     database {effect}",
                    child_table.name,
                    key.describe(&table.name),
                    key.on_delete.as_sql()
                ),
            )
            .label("left to the database, which does not delete everything below")
            .help(format!(
                r#"make {} ON DELETE CASCADE, or remove `on_delete = "database"` so that cascade deletes these rows and follows their children"#,
                key.describe(&table.name)
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE post (id integer PRIMARY KEY);
        CREATE TABLE comment (id integer PRIMARY KEY,
            post_id integer REFERENCES post ON DELETE CASCADE,
            parent_id integer REFERENCES comment ON DELETE CASCADE);
        CREATE INDEX comment_post ON comment (post_id);
        CREATE INDEX comment_parent ON comment (parent_id);
        CREATE TABLE reaction (id integer PRIMARY KEY, comment_id integer REFERENCES comment ON DELETE CASCADE);
        CREATE INDEX reaction_comment ON reaction (comment_id);
        CREATE TABLE report (id integer PRIMARY KEY,
            reaction_id integer CONSTRAINT report_reaction_fkey REFERENCES reaction);
        CREATE INDEX report_reaction ON report (reaction_id);
        CREATE TABLE tag (id integer PRIMARY KEY, post_id integer REFERENCES post ON DELETE CASCADE);
        CREATE INDEX tag_post ON tag (post_id);
        CREATE TABLE tag_use (id integer PRIMARY KEY, tag_id integer REFERENCES tag ON DELETE CASCADE);
        CREATE INDEX tag_use_tag ON tag_use (tag_id);";

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
    fn a_key_below_a_database_relation_that_does_not_cascade_is_named() {
        let codes = fixture::codes_against(CONFIG, Some(DDL));
        assert_eq!(
            codes.iter().filter(|(code, _)| *code == Code::DatabaseLeavesRows).collect::<Vec<_>>(),
            vec![&(Code::DatabaseLeavesRows, 5)],
            "two levels below, through a self-reference; `tag` cascades all the way: {codes:?}"
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
