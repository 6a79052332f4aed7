//! `retention-on-referenced`: dropping a partition deletes its rows without visiting their
//! children, so a model with `retention` may only have children that are nullified (the prune
//! sets their column to NULL first) or that are dropped by the same policy (a child model with
//! the same `retention.keep`, pruned before its parent). A delete relation would be orphaned.

use crate::config::{Model, OnDelete, Relation};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        let Some(retention) = &model.retention else { continue };
        for relation in model.children.iter().filter(|relation| relation.action() == OnDelete::Delete) {
            let child = context.config.model(&relation.model.value);
            let same_policy = child
                .and_then(|child| child.retention.as_ref())
                .is_some_and(|child_retention| child_retention.keep.value == retention.keep.value);
            if !same_policy {
                diagnostics.push(diagnostic(model, relation));
            }
        }
    }
}

fn diagnostic(model: &Model, relation: &Relation) -> Diagnostic {
    Diagnostic::new(
        Code::RetentionOnReferenced,
        relation.location.clone(),
        format!(
            "model `{}` has a retention policy, but `{}.{}` references it with a delete relation: dropping a \
             partition would orphan those rows",
            model.name.value,
            relation.model.value,
            relation.describe_columns()
        ),
    )
    .label("a delete relation of a model with retention")
    .help(format!(
        "make it `on_delete = \"nullify\"` (the prune sets `{}` to NULL first), or give model `{}` the same \
         `retention.keep` so its partitions are dropped with its parent's",
        relation.describe_columns(),
        relation.model.value
    ))
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.page_view]
table = "page_view"
retention = { keep = "90d", column = "entered_at" }
children = [
  { model = "click", column = "page_view_id" },
  { model = "share", column = "page_view_id", on_delete = "nullify" },
  { model = "view_tag", column = "page_view_id" },
]

[models.click]
table = "click"
strategy = "bulk"

[models.share]
table = "share"
strategy = "bulk"

[models.view_tag]
table = "view_tag"
strategy = "bulk"
retention = { keep = "90d", column = "entered_at" }
"#;

    #[test]
    fn a_delete_relation_is_refused_unless_the_child_is_pruned_alike() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::RetentionOnReferenced, 6)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn a_child_kept_longer_is_refused() {
        let longer = CONFIG.replace(
            "strategy = \"bulk\"\nretention = { keep = \"90d\"",
            "strategy = \"bulk\"\nretention = { keep = \"180d\"",
        );
        assert_eq!(fixture::codes(&longer), vec![(Code::RetentionOnReferenced, 6), (Code::RetentionOnReferenced, 8)]);
    }
}
