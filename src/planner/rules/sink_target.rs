//! `sink-target`: a sink delivers by running a `command`, by POSTing to a `url` or by writing to
//! `kafka`, so it needs exactly one of the three. `headers` are part of the webhook's HTTP
//! request; a command or Kafka sink sends no such request, so headers on it would be silently
//! ignored (and secrets in them would be read for nothing): that is reported under the same code,
//! as one more way the target is wrong.

use crate::diagnostic::{Code, Diagnostic, Location};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        let name = &sink.name.value;
        let mut targets: Vec<(&str, &Location)> = [
            sink.command.as_ref().map(|command| ("command", &command.location)),
            sink.url.as_ref().map(|url| ("url", &url.location)),
            sink.kafka.as_ref().map(|kafka| ("kafka", &kafka.location)),
        ]
        .into_iter()
        .flatten()
        .collect();
        // The second target is the one written second.
        targets.sort_by_key(|(_, location)| (location.file, location.span.start));
        match targets.as_slice() {
            [] => diagnostics.push(
                Diagnostic::new(
                    Code::SinkTarget,
                    sink.name.location.clone(),
                    format!("sink `{name}` has none of `command`, `url` and `kafka`, so it cannot deliver anything"),
                )
                .label("no target")
                .help(
                    "add `command = [\"PROGRAM\", \"ARG\"]` (reads the messages as JSON on stdin), \
                     `url = \"https://...\"` (receives them as a POST) or `kafka = { brokers = \"HOST:9092\" }`",
                ),
            ),
            [(first, first_location), rest @ ..] if !rest.is_empty() => {
                let (second, second_location) = rest[0];
                diagnostics.push(
                    Diagnostic::new(
                        Code::SinkTarget,
                        second_location.clone(),
                        format!("sink `{name}` has both `{first}` and `{second}`; a sink delivers to exactly one"),
                    )
                    .label("second target")
                    .related((*first_location).clone(), "first target")
                    .help(
                        "keep one, and declare another sink for the other target (a scope's `category_sinks` can \
                         route categories to it)",
                    ),
                );
            }
            [(target, location)] if *target != "url" => {
                if let Some(header) = sink.headers.values().next() {
                    let what = if *target == "command" { "runs a command" } else { "writes to Kafka" };
                    diagnostics.push(
                        Diagnostic::new(
                            Code::SinkTarget,
                            header.location.clone(),
                            format!("sink `{name}` {what} but sets `headers`, which only a webhook (`url`) sends"),
                        )
                        .label("never sent")
                        .related((*location).clone(), format!("a `{target}` sink"))
                        .help(if *target == "command" {
                            "remove `headers`; a command gets what it needs through its arguments or its environment"
                        } else {
                            "remove `headers`; a Kafka sink's credentials go in `kafka.properties` (as `env:NAME`)"
                        }),
                    );
                }
            }
            _ => {}
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

[outbox.sinks.stream]
kafka = { brokers = "kafka-1:9092" }
url = "https://search.internal/forget"

[outbox.sinks.topic]
kafka = { brokers = "kafka-1:9092" }
headers = { Authorization = "env:SEARCH_TOKEN" }

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update", "member_update", "group_update", "stream_update", "topic_update"]
sink = "nowhere"
category_sinks = { project_update = "both", member_update = "script", group_update = "webhook", stream_update = "stream", topic_update = "topic" }
"#;

    #[test]
    #[cfg_attr(not(feature = "kafka"), ignore = "a config with a Kafka sink is a kafka-unsupported error without the kafka feature")]
    fn reports_a_sink_without_target_with_two_and_headers_on_a_command() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::SinkTarget, 2),
                (Code::SinkTarget, 7),
                (Code::SinkTarget, 11),
                (Code::SinkTarget, 19),
                (Code::SinkTarget, 23)
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
