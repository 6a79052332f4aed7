//! `unknown-model`: a relation names a model that is not declared.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, suggest_model};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for (name, relation) in config.every_relation() {
        let child = &relation.model;
        // A relation to a remote model is `remote-model-child`'s.
        let known = config.model(&child.value).is_some() || config.remote_models.contains_key(&child.value);
        if known || config.unreadable_models.contains(&child.value) {
            continue;
        }
        let mut diagnostic = Diagnostic::new(
            Code::UnknownModel,
            child.location.clone(),
            format!("model `{}` has a relation to unknown model `{}`", name.value, child.value),
        )
        .label("no model of this name");
        diagnostic = diagnostic.help(
            suggest_model(config, &child.value)
                .unwrap_or_else(|| format!("declare it as [models.{}] or fix the name", child.value)),
        );
        diagnostics.push(diagnostic);
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
    fn a_remote_models_children_are_checked_too() {
        let config = "[models.organization]\nremote = { category = \"organization_deleted\" }\n\
                      children = [{ model = \"membr\", column = \"organization_id\" }]\n\n\
                      [models.member]\ntable = \"member\"\n";
        assert_eq!(fixture::codes(config), vec![(Code::UnknownModel, 3)]);
    }

    #[test]
    fn a_model_declared_with_errors_is_not_also_unknown() {
        let config = "[models.like]\ntabel = \"like\"\n\n[models.post]\ntable = \"post\"\nchildren = [{ model = \"like\", column = \"post_id\" }]\n";
        let codes: Vec<_> = fixture::codes(config).into_iter().map(|(code, _)| code).collect();
        assert_eq!(codes, vec![Code::MissingKey, Code::UnknownKey]);
    }
}
