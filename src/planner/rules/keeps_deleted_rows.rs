//! `keeps-deleted-rows`: a nullify relation over a foreign key whose action is `ON DELETE
//! CASCADE`. The database deletes those child rows, and everything below them, when their parent
//! goes; the relation keeps them with a NULL instead, so a deletion leaves behind what the
//! schema's own rules remove. The other direction is `deletes-kept-rows`.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;
use crate::planner::SchemaRelation;
use crate::schema::ReferentialAction;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        if found.relation.action() != OnDelete::Nullify {
            continue;
        }
        let deleting = found.foreign_keys(schema).into_iter().find(|key| key.on_delete == ReferentialAction::Cascade);
        let Some(key) = deleting else { continue };
        let SchemaRelation { parent, relation, child_table, .. } = found;
        diagnostics.push(
            Diagnostic::new(
                Code::KeepsDeletedRows,
                relation.location.clone(),
                format!(
                    "the foreign key {} is ON DELETE CASCADE: the database deletes `{}` rows when a `{}` row goes, \
                     but this relation keeps them, with a NULL",
                    key.describe(&child_table.name),
                    child_table.name,
                    parent.name.value
                ),
            )
            .label("keeps what the database would delete")
            .help(r#"remove `on_delete = "nullify"` to delete them, as the database would; keep it only if these rows must stay"#),
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
            parent_id integer CONSTRAINT comment_parent_fkey REFERENCES comment ON DELETE CASCADE,
            editor_id integer REFERENCES post ON DELETE SET NULL,
            quoted_id integer REFERENCES comment);
        CREATE INDEX comment_post ON comment (post_id);
        CREATE INDEX comment_parent ON comment (parent_id);
        CREATE INDEX comment_editor ON comment (editor_id);
        CREATE INDEX comment_quoted ON comment (quoted_id);";

    const CONFIG: &str = r#"
[models.post]
table = "post"
children = [
  { model = "comment", column = "post_id" },
  { model = "comment", column = "editor_id", on_delete = "nullify" },
]

[models.comment]
table = "comment"
children = [
  { model = "comment", column = "parent_id", on_delete = "nullify" },
  { model = "comment", column = "quoted_id", on_delete = "nullify" },
]
"#;

    #[test]
    fn a_nullify_relation_over_cascade_is_named_with_its_foreign_key() {
        let codes = fixture::codes_against(CONFIG, Some(DDL));
        assert_eq!(
            codes.iter().filter(|(code, _)| *code == Code::KeepsDeletedRows).collect::<Vec<_>>(),
            vec![&(Code::KeepsDeletedRows, 12)],
            "over SET NULL, and over NO ACTION (a choice the database would refuse, not overrule), no warning: \
             {codes:?}"
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
