//! `duplicate-relation`: a model declares the same child model and column twice.

use std::collections::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        let mut seen = HashMap::new();
        for relation in &model.children {
            let key = (relation.model.value.as_str(), relation.describe_columns());
            let Some(first) = seen.get(&key) else {
                seen.insert(key, &relation.location);
                continue;
            };
            diagnostics.push(
                Diagnostic::new(
                    Code::DuplicateRelation,
                    relation.location.clone(),
                    format!(
                        "model `{}` declares the relation to `{}` by `{}` twice (first at {})",
                        model.name.value,
                        key.0,
                        key.1,
                        context.sources.describe(first)
                    ),
                )
                .label("declared again here")
                .related((*first).clone(), "first declared here")
                .help("remove one of the two relations"),
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
table = "organization"
children = [
  { model = "project", column = "organization_id" },
  { model = "project", column = "organization_id", strategy = "bulk" },
]

[models.project]
table = "project"
"#;

    #[test]
    fn reports_the_second_declaration() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::DuplicateRelation, 6)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn the_same_model_by_another_column_is_not_a_duplicate() {
        let config = CONFIG.replace(r#"column = "organization_id", strategy = "bulk""#, r#"column = "owner_id""#);
        assert_eq!(fixture::codes(&config), vec![]);
    }
}
