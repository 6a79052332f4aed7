//! `empty-scope` (warning): a scope that registers no category does nothing, which is usually a
//! leftover or a category registered in the wrong scope.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for scope in context.config.outbox.scopes.values().filter(|scope| scope.categories.is_empty()) {
        diagnostics.push(
            Diagnostic::new(
                Code::EmptyScope,
                scope.name.location.clone(),
                format!("outbox scope `{}` registers no categories", scope.name.value),
            )
            .label("empty scope")
            .help("add its categories, or remove the scope"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.scopes.user]
shard_key = "user_id"
categories = []
"#;

    #[test]
    fn warns_about_a_scope_without_categories() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::EmptyScope, 2)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
