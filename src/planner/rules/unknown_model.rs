//! `unknown-model`: a relation names a model that is not declared.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, suggest_model};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for model in config.models.values() {
        for relation in &model.children {
            let child = &relation.model;
            if config.model(&child.value).is_some() || config.unreadable_models.contains(&child.value) {
                continue;
            }
            let mut diagnostic = Diagnostic::new(
                Code::UnknownModel,
                child.location.clone(),
                format!("model `{}` has a relation to unknown model `{}`", model.name.value, child.value),
            )
            .label("no model of this name");
            diagnostic = diagnostic.help(
                suggest_model(config, &child.value)
                    .unwrap_or_else(|| format!("declare it as [models.{}] or fix the name", child.value)),
            );
            diagnostics.push(diagnostic);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.organization]
table = "organization"
children = [{ model = "projct", column = "organization_id" }]

[models.project]
table = "project"
"#;

    #[test]
    fn names_the_unknown_model_and_suggests_the_nearest() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UnknownModel, 4)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn a_model_declared_with_errors_is_not_also_unknown() {
        let config = "[models.like]\ntabel = \"like\"\n\n[models.post]\ntable = \"post\"\nchildren = [{ model = \"like\", column = \"post_id\" }]\n";
        let codes: Vec<_> = fixture::codes(config).into_iter().map(|(code, _)| code).collect();
        assert_eq!(codes, vec![Code::MissingKey, Code::UnknownKey]);
    }
}
