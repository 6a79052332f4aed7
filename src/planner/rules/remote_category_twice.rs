//! `remote-category-twice`: two remote models read the same category. A tombstone would be
//! applied to one of them only, and which one would depend on the order of declaration.

use std::collections::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let mut first = HashMap::new();
    for model in context.config.remote_models.values() {
        let category = &model.remote.category;
        let Some(earlier) = first.get(category.value.as_str()).copied() else {
            first.insert(category.value.as_str(), model);
            continue;
        };
        let earlier: &crate::config::RemoteModel = earlier;
        diagnostics.push(
            Diagnostic::new(
                Code::RemoteCategoryTwice,
                category.location.clone(),
                format!(
                    "remote models `{}` and `{}` both read category `{}`",
                    earlier.name.value, model.name.value, category.value
                ),
            )
            .label("read again here")
            .related(earlier.remote.category.location.clone(), "first read here")
            .help("one remote model per category: put every relation under one of them"),
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
children = [{ model = "member", column = "organization_id" }]

[models.org]
remote = { category = "organization_deleted" }

[models.member]
table = "member"
"#;

    #[test]
    fn names_both_models() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::RemoteCategoryTwice, 7)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
