//! `unscoped-category`: a model writes an outbox category that no scope registers, so its
//! tombstones would have no shard key and no drainer would deliver them.

use crate::diagnostic::{Code, Diagnostic, Fix, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    let registered = || config.outbox.scopes.values().flat_map(|s| s.categories.iter().map(|c| c.value.as_str()));
    for model in config.models.values() {
        let Some(category) = &model.outbox else {
            continue;
        };
        if config.scope_of(&category.value).is_some() {
            continue;
        }
        let help = did_you_mean(&category.value, registered()).unwrap_or_else(|| {
            format!("add \"{}\" to the `categories` of one scope under [outbox.scopes]", category.value)
        });
        diagnostics.push(
            Diagnostic::new(
                Code::UnscopedCategory,
                category.location.clone(),
                format!(
                    "model `{}` writes outbox category `{}`, which no scope registers",
                    model.name.value, category.value
                ),
            )
            .label("category in no scope")
            .help(help)
            .fix(Fix::RegisterCategory { category: category.value.clone() }),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.organization]
table = "organization"
outbox = "organisation_update"

[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "id"
categories = ["organization_update", "project_update"]
"#;

    #[test]
    fn reports_the_category_with_the_nearest_registered_one() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UnscopedCategory, 4)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
