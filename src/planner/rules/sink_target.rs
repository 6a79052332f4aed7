//! `sink-target`: a sink delivers either by running a `command` or by POSTing to a `url`, so it
//! needs exactly one of the two. `headers` are part of the webhook's HTTP request; a command sink
//! sends no request, so headers on it would be silently ignored (and secrets in them would be
//! read for nothing): that is reported under the same code, as one more way the target is wrong.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        let name = &sink.name.value;
        match (&sink.command, &sink.url) {
            (None, None) => diagnostics.push(
                Diagnostic::new(
                    Code::SinkTarget,
                    sink.name.location.clone(),
                    format!("sink `{name}` has neither `command` nor `url`, so it cannot deliver anything"),
                )
                .label("no target")
                .help(
                    "add `command = [\"PROGRAM\", \"ARG\"]` (reads the messages as JSON on stdin) or \
                     `url = \"https://...\"` (receives them as a POST)",
                ),
            ),
            (Some(command), Some(url)) => diagnostics.push(
                Diagnostic::new(
                    Code::SinkTarget,
                    url.location.clone(),
                    format!("sink `{name}` has both a `command` and a `url`; a sink delivers to exactly one"),
                )
                .label("second target")
                .related(command.location.clone(), "first target")
                .help(
                    "keep one, and declare another sink for the other target (a scope's `category_sinks` can \
                     route categories to it)",
                ),
            ),
            (Some(command), None) => {
                if let Some(header) = sink.headers.values().next() {
                    diagnostics.push(
                        Diagnostic::new(
                            Code::SinkTarget,
                            header.location.clone(),
                            format!(
                                "sink `{name}` runs a command but sets `headers`, which only a webhook (`url`) sends"
                            ),
                        )
                        .label("never sent")
                        .related(command.location.clone(), "a command sink")
                        .help(
                            "remove `headers`; a command gets what it needs through its arguments or its environment",
                        ),
                    );
                }
            }
            (None, Some(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.nowhere]
timeout = "10s"

[outbox.sinks.both]
command = ["bin/forget"]
url = "https://billing.internal/hooks/tombstones"

[outbox.sinks.script]
command = ["bin/forget"]
headers = { Authorization = "env:SEARCH_TOKEN", Accept = "application/json" }

[outbox.sinks.webhook]
url = "https://search.internal/forget"
headers = { Authorization = "env:SEARCH_TOKEN" }

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update", "member_update", "group_update"]
sink = "nowhere"
category_sinks = { project_update = "both", member_update = "script", group_update = "webhook" }
"#;

    #[test]
    fn reports_a_sink_without_target_with_two_and_headers_on_a_command() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::SinkTarget, 2), (Code::SinkTarget, 7), (Code::SinkTarget, 11)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
