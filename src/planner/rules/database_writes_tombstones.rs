//! `database-writes-tombstones`: `on_delete = "database"` towards a model that writes an outbox
//! category. A tombstone is written for each deleted row in the transaction that deletes it, from
//! the row cascade deletes; rows the database deletes itself pass through no statement of
//! cascade's, so their tombstones would be lost.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for parent in config.models.values() {
        for relation in &parent.children {
            let Some(on_delete) = relation.on_delete.as_ref().filter(|a| a.value == OnDelete::Database) else {
                continue;
            };
            let Some(child) = config.model(&relation.model.value) else { continue };
            let Some(category) = &child.outbox else { continue };
            diagnostics.push(
                Diagnostic::new(
                    Code::DatabaseWritesTombstones,
                    on_delete.location.clone(),
                    format!(
                        "`{}` writes the outbox category `{}` for each deleted row, but the database deletes these \
                         rows itself: no tombstone would be written",
                        child.name.value, category.value
                    ),
                )
                .label("left to the database")
                .related(category.location.clone(), "tombstones are written here")
                .help(r#"remove `on_delete = "database"` so that cascade deletes these rows and writes their tombstones"#),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.post]
table = "post"
children = [{ model = "comment", column = "post_id", on_delete = "database" }]

[models.comment]
table = "comment"
outbox = "comment_update"

[outbox.scopes.site]
shard_key = "id"
categories = ["comment_update"]
"#;

    #[test]
    fn a_database_relation_to_a_model_with_tombstones_is_refused() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::DatabaseWritesTombstones, 4)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
