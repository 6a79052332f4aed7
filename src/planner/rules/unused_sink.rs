//! `unused-sink` (warning): a sink that no scope's `sink`, `category_sinks` or `cell_sinks` value
//! names receives nothing, which is usually a leftover or a sink named with a typo elsewhere.

use std::collections::HashSet;

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let outbox = &context.config.outbox;
    let named: HashSet<&str> = outbox
        .scopes
        .values()
        .flat_map(|scope| scope.sink.iter().chain(scope.category_sinks.values()).chain(scope.cell_sinks.values()))
        .map(|sink| sink.value.as_str())
        .collect();
    for sink in outbox.sinks.values().filter(|sink| !named.contains(sink.name.value.as_str())) {
        diagnostics.push(
            Diagnostic::new(
                Code::UnusedSink,
                sink.name.location.clone(),
                format!(
                    "sink `{}` receives nothing: no scope's `sink`, `category_sinks` or `cell_sinks` names it",
                    sink.name.value
                ),
            )
            .label("unused sink")
            .help(format!(
                "set `sink = \"{}\"` on a scope under [outbox.scopes] (or name it in a scope's `category_sinks`), or \
                 remove the sink",
                sink.name.value
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

[outbox.sinks.audit]
command = ["bin/audit"]

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update"]
sink = "search_index"
category_sinks = { project_update = "billing" }
"#;

    #[test]
    fn warns_about_a_sink_nothing_names() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UnusedSink, 8)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
