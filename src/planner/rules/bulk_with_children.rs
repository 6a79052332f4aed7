//! `bulk-with-children`: a set-based delete loads no rows, so it cannot find the children of the
//! rows it deletes: delete-children would be orphaned, and nullify children would keep pointing
//! at deleted rows, and the rows the database deletes itself could not be counted under each
//! chunk. Bulk is only for leaves.

use crate::config::{Located, Model, OnDelete, Relation, Strategy};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for model in config.models.values() {
        if let Some(strategy) = bulk(&model.strategy)
            && let Some(child) = first_child(model)
        {
            diagnostics.push(diagnostic(strategy, model, child, "model"));
        }
        for relation in &model.children {
            let (Some(strategy), Some(child_model)) = (bulk(&relation.strategy), config.model(&relation.model.value))
            else {
                continue;
            };
            if let Some(grandchild) = first_child(child_model) {
                diagnostics.push(diagnostic(strategy, child_model, grandchild, "relation"));
            }
        }
    }
}

fn bulk(strategy: &Option<Located<Strategy>>) -> Option<&Located<Strategy>> {
    strategy.as_ref().filter(|s| s.value == Strategy::Bulk)
}

/// The first delete-child, else the first nullify child, else the first the database deletes.
fn first_child(model: &Model) -> Option<&Relation> {
    let of = |action| model.children.iter().find(|r| r.action() == action);
    of(OnDelete::Delete).or_else(|| of(OnDelete::Nullify)).or_else(|| of(OnDelete::Database))
}

fn diagnostic(strategy: &Located<Strategy>, model: &Model, child: &Relation, set_on: &str) -> Diagnostic {
    let (name, action, child) = (&model.name.value, child.action(), &child.model.value);
    let message = match action {
        OnDelete::Delete => {
            format!("`{name}` is deleted in bulk but has delete-children (`{child}`) that would be orphaned")
        }
        OnDelete::Nullify => format!(
            "`{name}` is deleted in bulk but has a nullify child (`{child}`): bulk loads no rows, so the child's \
             column could not be set to NULL and would point at deleted rows"
        ),
        OnDelete::Database => format!(
            "`{name}` is deleted in bulk but has a child the database deletes (`{child}`): its rows are counted \
             under each chunk of keys before the chunk goes, and bulk loads no keys"
        ),
    };
    Diagnostic::new(Code::BulkWithChildren, strategy.location.clone(), message)
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
    fn nullified_children_are_refused_under_a_bulk_model_too() {
        let config = CONFIG.replace(r#"column = "project_id""#, r#"column = "project_id", on_delete = "nullify""#);
        assert_eq!(fixture::codes(&config), vec![(Code::BulkWithChildren, 4), (Code::BulkWithChildren, 9)]);
        insta::assert_snapshot!(fixture::human(&config));
    }
}
