//! `database-without-cascade`: `on_delete = "database"` on a relation whose foreign key is not
//! `ON DELETE CASCADE` (or that no foreign key backs). The database would not delete those rows:
//! it refuses the parent's delete (`NO ACTION`, `RESTRICT`), keeps them (`SET NULL`, `SET
//! DEFAULT`), or, without a foreign key, leaves them orphaned.

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
        let keys = found.foreign_keys(schema);
        if keys.iter().any(|key| key.on_delete == ReferentialAction::Cascade) {
            continue;
        }
        let SchemaRelation { parent, relation, child_table, .. } = &found;
        let (child, parent, columns) = (&child_table.name, &parent.name.value, relation.describe_columns());
        let (message, fix) = match keys.first() {
            Some(key) => (
                format!(
                    "the foreign key {} is ON DELETE {}, not CASCADE: the database does not delete `{child}` rows \
                     when a `{parent}` row goes",
                    key.describe(child),
                    key.on_delete.as_sql()
                ),
                format!("make {} ON DELETE CASCADE", key.describe(child)),
            ),
            None => (
                format!(
                    "no foreign key of `{child}` on {columns} references `{parent}`: the database does not delete \
                     `{child}` rows when a `{parent}` row goes"
                ),
                format!("add a foreign key on `{child}` ({columns}) ON DELETE CASCADE"),
            ),
        };
        diagnostics.push(
            Diagnostic::new(Code::DatabaseWithoutCascade, on_delete.location.clone(), message)
                .label("left to the database, which does not delete them")
                .help(format!(
                    r#"{fix}, or remove `on_delete = "database"` so that cascade deletes these rows itself"#
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
            post_id integer CONSTRAINT comment_post_fkey REFERENCES post ON DELETE CASCADE,
            editor_id integer CONSTRAINT comment_editor_fkey REFERENCES post ON DELETE SET NULL,
            quoted_id integer);
        CREATE INDEX comment_post ON comment (post_id);
        CREATE INDEX comment_editor ON comment (editor_id);
        CREATE INDEX comment_quoted ON comment (quoted_id);";

    const CONFIG: &str = r#"
[models.post]
table = "post"
children = [
  { model = "comment", column = "post_id", on_delete = "database" },
  { model = "comment", column = "editor_id", on_delete = "database" },
  { model = "comment", column = "quoted_id", on_delete = "database" },
]

[models.comment]
table = "comment"
"#;

    #[test]
    fn a_database_relation_needs_a_foreign_key_on_delete_cascade() {
        let codes = fixture::codes_against(CONFIG, Some(DDL));
        assert_eq!(
            codes.iter().filter(|(code, _)| *code == Code::DatabaseWithoutCascade).collect::<Vec<_>>(),
            vec![&(Code::DatabaseWithoutCascade, 6), &(Code::DatabaseWithoutCascade, 7)],
            "over ON DELETE CASCADE, no error: {codes:?}"
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
