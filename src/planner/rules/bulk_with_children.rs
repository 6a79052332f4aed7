//! `bulk-with-children`: a set-based delete of a model that has delete-children would leave
//! those children orphaned, so bulk is only for leaves (or models whose children are nullified).

use crate::config::{Located, Model, OnDelete, Strategy};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for model in config.models.values() {
        if let Some(strategy) = bulk(&model.strategy) {
            if let Some(child) = first_delete_child(model) {
                diagnostics.push(diagnostic(strategy, model, child, "model"));
            }
        }
        for relation in &model.children {
            let (Some(strategy), Some(child_model)) = (bulk(&relation.strategy), config.model(&relation.model.value))
            else {
                continue;
            };
            if let Some(grandchild) = first_delete_child(child_model) {
                diagnostics.push(diagnostic(strategy, child_model, grandchild, "relation"));
            }
        }
    }
}

fn bulk(strategy: &Option<Located<Strategy>>) -> Option<&Located<Strategy>> {
    strategy.as_ref().filter(|s| s.value == Strategy::Bulk)
}

fn first_delete_child(model: &Model) -> Option<&str> {
    model.children.iter().find(|r| r.action() == OnDelete::Delete).map(|r| r.model.value.as_str())
}

fn diagnostic(strategy: &Located<Strategy>, model: &Model, child: &str, set_on: &str) -> Diagnostic {
    Diagnostic::new(
        Code::BulkWithChildren,
        strategy.location.clone(),
        format!("`{}` is deleted in bulk but has delete-children (`{child}`) that would be orphaned", model.name.value),
    )
    .label(format!("bulk strategy set on this {set_on}"))
    .help(r#"use `strategy = "per_row"` for models with children"#)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.project]
table = "project"
strategy = "bulk"
children = [{ model = "event", column = "project_id" }]

[models.group]
table = "group"
children = [{ model = "project", column = "group_id", strategy = "bulk" }]

[models.event]
table = "event"
strategy = "bulk"
"#;

    #[test]
    fn reports_bulk_models_and_bulk_relations_with_children() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::BulkWithChildren, 4), (Code::BulkWithChildren, 9)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn nullified_children_are_allowed_under_a_bulk_model() {
        let config = CONFIG.replace(r#"column = "project_id""#, r#"column = "project_id", on_delete = "nullify""#);
        assert_eq!(fixture::codes(&config), vec![]);
    }
}
