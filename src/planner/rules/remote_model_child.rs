//! `remote-model-child`: a relation names a remote model as a child. A remote model's rows are in
//! another database: no deletion here can reach them, and their deletions arrive as tombstones.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for (name, relation) in config.every_relation() {
        let child = &relation.model;
        let Some(remote) = config.remote_models.get(&child.value) else { continue };
        diagnostics.push(
            Diagnostic::new(
                Code::RemoteModelChild,
                child.location.clone(),
                format!(
                    "model `{}` has a relation to remote model `{}`, whose rows are in another database",
                    name.value, child.value
                ),
            )
            .label("a remote model is never a child")
            .related(remote.remote.location.clone(), "declared remote here")
            .help(format!(
                "its rows go when the other database deletes them: remove the relation, or make `{}` a model of a \
                 local table",
                child.value
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.organization]
remote = { category = "organization_deleted" }
children = [{ model = "project", column = "organization_id" }]

[models.project]
table = "project"
children = [{ model = "organization", column = "owner_id" }]
"#;

    #[test]
    fn names_the_relation_and_where_the_model_is_remote() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::RemoteModelChild, 8)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
