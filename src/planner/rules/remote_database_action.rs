//! `remote-database-action`: a remote model's relation leaves its rows to the database
//! (`on_delete = "database"`). No foreign key crosses databases, so nothing would delete them.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.remote_models.values() {
        for relation in &model.children {
            let Some(on_delete) = relation.on_delete.as_ref().filter(|a| a.value == OnDelete::Database) else {
                continue;
            };
            diagnostics.push(
                Diagnostic::new(
                    Code::RemoteDatabaseAction,
                    on_delete.location.clone(),
                    format!(
                        "`{}` rows under remote model `{}` are left to the database, which has no foreign key to \
                         another database",
                        relation.model.value, model.name.value
                    ),
                )
                .label("nothing would delete them")
                .help("delete them (`on_delete = \"delete\"`) or set the column to NULL (`\"nullify\"`)"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.organization]
remote = { category = "organization_deleted" }
children = [
  { model = "member", column = "organization_id", on_delete = "database" },
  { model = "invite", column = "organization_id", on_delete = "nullify" },
]

[models.member]
table = "member"

[models.invite]
table = "invite"
"#;

    #[test]
    fn refuses_the_database_action_and_takes_the_others() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::RemoteDatabaseAction, 5)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
