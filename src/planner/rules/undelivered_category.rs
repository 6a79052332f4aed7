//! `undelivered-category` (warning): once `[outbox.sinks]` declares a sink, every category
//! should reach one, through its scope's `sink` or a `category_sinks` entry; a category that
//! reaches none has nowhere to go when the outbox is drained. A config that declares no sink at
//! all (written before sinks existed) is not warned about.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let outbox = &context.config.outbox;
    if outbox.sinks.is_empty() {
        return;
    }
    // A scope with cells delivers through `cell_sinks`, which `cell-sinks` checks.
    for scope in outbox.scopes.values().filter(|scope| scope.sink.is_none() && !scope.has_cells()) {
        let undelivered: Vec<String> = scope
            .categories
            .iter()
            .filter(|category| !scope.category_sinks.contains_key(&category.value))
            .map(|category| format!("`{}`", category.value))
            .collect();
        let message = match undelivered.as_slice() {
            [] => continue,
            [one] => format!("scope `{}` has no sink for category {one}", scope.name.value),
            many => format!("scope `{}` has no sink for categories {}", scope.name.value, many.join(", ")),
        };
        let sink = match outbox.sinks.len() {
            1 => outbox.sinks.keys().next().map_or("NAME", String::as_str),
            _ => "NAME",
        };
        diagnostics.push(
            Diagnostic::new(Code::UndeliveredCategory, scope.name.location.clone(), message)
                .label("messages with no sink")
                .help(format!(
                    "set `sink = \"{sink}\"` on the scope, or give each category a sink in `category_sinks`"
                )),
        );
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
categories = ["team_update", "member_update", "project_update"]
category_sinks = { project_update = "billing" }

[outbox.scopes.project]
shard_key = "project_id"
categories = ["group_update"]
category_sinks = { group_update = "search_index" }

[outbox.scopes.control]
shard_key = "id"
categories = ["organization_update"]
"#;

    #[test]
    fn names_the_categories_that_reach_no_sink() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UndeliveredCategory, 8), (Code::UndeliveredCategory, 18)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn with_one_sink_the_help_names_it() {
        let config = r#"
[outbox.sinks.search_index]
command = ["bin/forget-in-search"]

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update"]
"#;
        assert_eq!(fixture::codes(config), vec![(Code::UnusedSink, 2), (Code::UndeliveredCategory, 5)]);
        let human = fixture::human(config);
        assert!(human.contains("set `sink = \"search_index\"` on the scope"), "{human}");
    }

    #[test]
    fn a_config_without_sinks_is_not_warned_about() {
        let config = r#"
[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update"]
"#;
        assert_eq!(fixture::codes(config), vec![]);
    }
}
