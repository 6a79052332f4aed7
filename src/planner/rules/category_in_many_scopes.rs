//! `category-in-many-scopes`: every outbox category belongs to exactly one scope, because the
//! scope decides the shard key. Each registration after the first is reported, naming the first.

use std::collections::HashMap;

use crate::config::Located;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let mut first: HashMap<&str, (&str, &Located<String>)> = HashMap::new();
    for scope in context.config.outbox.scopes.values() {
        for category in &scope.categories {
            let Some((first_scope, first_place)) = first.get(category.value.as_str()) else {
                first.insert(&category.value, (&scope.name.value, category));
                continue;
            };
            let where_first = context.sources.describe(&first_place.location);
            diagnostics.push(
                Diagnostic::new(
                    Code::CategoryInManyScopes,
                    category.location.clone(),
                    format!(
                        "outbox category `{}` is registered in scope `{}` and in scope `{first_scope}` (at {where_first})",
                        category.value, scope.name.value
                    ),
                )
                .label(format!("registered in `{}` here", scope.name.value))
                .related(first_place.location.clone(), format!("registered in `{first_scope}` here"))
                .help("keep the category in the one scope whose shard key it should use"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["organization_update", "project_update"]

[outbox.scopes.project]
shard_key = "project_id"
categories = ["project_update"]
"#;

    #[test]
    fn names_both_places() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::CategoryInManyScopes, 8)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn across_files_both_files_are_named() {
        let (first, second) = CONFIG.split_at(CONFIG.find("[outbox.scopes.project]").unwrap());
        let (diagnostics, sources) = fixture::check_files(&[("a.toml", first), ("b.toml", second)]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(sources.describe(&diagnostics[0].location), "b.toml:3:15");
        assert!(diagnostics[0].message.contains("a.toml:4:38"), "{}", diagnostics[0].message);
    }
}
