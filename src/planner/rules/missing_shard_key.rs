//! `missing-shard-key`: the scope of a model's outbox category takes its shard id from a column
//! of the deleted row, so the model's table must have that column.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for model in config.models.values() {
        let Some(category) = &model.outbox else {
            continue;
        };
        let Some(scope) = config.scope_of(&category.value) else {
            continue;
        };
        let Some(table) = context.table_of(model) else {
            continue;
        };
        if table.column(&scope.shard_key.value).is_some() {
            continue;
        }
        diagnostics.push(
            Diagnostic::new(
                Code::MissingShardKey,
                category.location.clone(),
                format!(
                    "model `{}` writes category `{}` of scope `{}`, whose shard key `{}` is not a column of `{}`",
                    model.name.value, category.value, scope.name.value, scope.shard_key.value, table.name
                ),
            )
            .label("no shard key for these outbox rows")
            .related(scope.shard_key.location.clone(), "the scope's shard key")
            .help("register the category in a scope whose shard key this table has"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE organization (id integer PRIMARY KEY);
        CREATE TABLE project (id integer PRIMARY KEY, organization_id integer);";

    const CONFIG: &str = r#"
[models.organization]
table = "organization"
outbox = "organization_update"

[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["organization_update", "project_update"]
"#;

    #[test]
    fn reports_the_model_whose_table_lacks_the_shard_key() {
        assert_eq!(fixture::codes_against(CONFIG, Some(DDL)), vec![(Code::MissingShardKey, 4)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
