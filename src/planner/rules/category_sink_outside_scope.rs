//! `category-sink-outside-scope`: a `category_sinks` entry only routes a category of its own
//! scope, so a key that is not one of the scope's `categories` routes nothing (usually a typo, or
//! an entry written under the wrong scope). TOML keys carry no location, so the diagnostic points
//! at the entry's value.

use crate::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for scope in config.outbox.scopes.values() {
        for (category, sink) in &scope.category_sinks {
            if scope.categories.iter().any(|c| &c.value == category) {
                continue;
            }
            let mut diagnostic = Diagnostic::new(
                Code::CategorySinkOutsideScope,
                sink.location.clone(),
                format!(
                    "`category_sinks` of scope `{}` routes category `{category}`, which is not one of the scope's \
                     `categories`",
                    scope.name.value
                ),
            )
            .label(format!("`{category}` is not in scope `{}`", scope.name.value));
            let other = config.scope_of(category).filter(|other| other.name.value != scope.name.value);
            let help = if let Some(other) = other {
                let registered = other.categories.iter().find(|c| &c.value == category).expect("scope_of found it");
                diagnostic = diagnostic
                    .related(registered.location.clone(), format!("registered in `{}` here", other.name.value));
                format!(
                    "category `{category}` belongs to scope `{}`: move this entry to that scope's `category_sinks`",
                    other.name.value
                )
            } else {
                did_you_mean(category, scope.categories.iter().map(|c| c.value.as_str()))
                    .unwrap_or_else(|| format!("add \"{category}\" to the scope's `categories`, or remove this entry"))
            };
            diagnostics.push(diagnostic.help(help));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.search_index]
command = ["bin/forget-in-search"]

[outbox.sinks.billing]
url = "https://billing.internal/hooks/tombstones"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update"]
sink = "search_index"

[outbox.scopes.organization.category_sinks]
project_updates = "billing"
group_update = "billing"
invoice_update = "billing"

[outbox.scopes.project]
shard_key = "project_id"
categories = ["group_update"]
sink = "search_index"
"#;

    #[test]
    fn names_the_scope_and_where_the_category_belongs() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::CategorySinkOutsideScope, 14),
                (Code::CategorySinkOutsideScope, 15),
                (Code::CategorySinkOutsideScope, 16)
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
