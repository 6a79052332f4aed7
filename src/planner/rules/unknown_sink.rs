//! `unknown-sink`: a scope's `sink` or a `category_sinks` value names a sink that `[outbox.sinks]`
//! does not declare, so the drainer would have nowhere to deliver those messages (and a typo
//! would silently leave them undelivered).

use crate::config::{Located, Scope};
use crate::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let sinks = &context.config.outbox.sinks;
    for scope in context.config.outbox.scopes.values() {
        let named = scope.sink.iter().map(|sink| (None, sink));
        let per_category = scope.category_sinks.iter().map(|(category, sink)| (Some(category.as_str()), sink));
        for (category, sink) in named.chain(per_category) {
            if sinks.contains_key(&sink.value) || context.config.unreadable_sinks.contains(&sink.value) {
                continue;
            }
            let help = did_you_mean(&sink.value, sinks.keys().map(String::as_str)).unwrap_or_else(|| {
                format!(
                    "declare it as [outbox.sinks.{}] with a `command` (JSON on stdin), a `url` (a webhook) or `kafka`",
                    sink.value
                )
            });
            diagnostics.push(
                Diagnostic::new(Code::UnknownSink, sink.location.clone(), message(scope, category, sink))
                    .label("no such sink")
                    .help(help),
            );
        }
    }
}

fn message(scope: &Scope, category: Option<&str>, sink: &Located<String>) -> String {
    let what = match category {
        None => format!("scope `{}` delivers its messages", scope.name.value),
        Some(category) => format!("scope `{}` delivers category `{category}`", scope.name.value),
    };
    format!("{what} to sink `{}`, which is not declared under [outbox.sinks]", sink.value)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.search_index]
command = ["bin/forget-in-search", "--batch"]

[outbox.sinks.billing]
url = "https://billing.internal/hooks/tombstones"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update"]
sink = "serch_index"
category_sinks = { project_update = "billing", team_update = "audit" }

[outbox.scopes.project]
shard_key = "project_id"
categories = ["group_update"]
sink = "search_index"
"#;

    #[test]
    fn reports_the_scope_sink_and_the_category_sink_with_the_nearest_name() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UnknownSink, 11), (Code::UnknownSink, 12)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn without_any_sink_the_help_says_how_to_declare_one() {
        let config = r#"
[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update"]
sink = "search_index"
"#;
        assert_eq!(fixture::codes(config), vec![(Code::UnknownSink, 5)]);
        insta::assert_snapshot!(fixture::human(config));
    }
}
