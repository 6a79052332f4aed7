//! `kafka-topic`: a Kafka sink writes each message to the topic its `topic` template names for
//! the message's scope and category. A template with a placeholder other than `{scope}` and
//! `{category}`, a lone brace or a character Kafka refuses could never name a topic; nor could a
//! template that makes a name Kafka refuses (a category with a space in it, a name over 249
//! characters) for a scope and category the sink receives. Both are found here rather than by
//! the first delivery, which would fail on every attempt.

use std::collections::BTreeSet;

use crate::config::{Sink, topic_name_problem, topic_template_problem};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for sink in config.outbox.sinks.values() {
        let Some(kafka) = &sink.kafka else { continue };
        let location = kafka.value.topic.as_ref().map_or(&kafka.location, |topic| &topic.location);
        let template = kafka.value.topic();
        if let Some(problem) = topic_template_problem(template) {
            diagnostics.push(
                Diagnostic::new(
                    Code::KafkaTopic,
                    location.clone(),
                    format!("the topic of sink `{}` is not a valid template: {problem}", sink.name.value),
                )
                .label("not a topic template")
                .help(
                    "write letters, digits, `.`, `_` and `-`, with `{scope}` and `{category}` where the message's \
                     go, such as \"cascade.{scope}.{category}\"",
                ),
            );
            continue;
        }
        let mut reported = BTreeSet::new();
        for (scope, category) in received(context, sink) {
            let topic = kafka.value.topic_for(scope, category);
            let Some(problem) = topic_name_problem(&topic) else { continue };
            if !reported.insert(topic.clone()) {
                continue;
            }
            let category_location = config.outbox.scopes[scope].categories.iter().find(|c| c.value == category);
            let mut diagnostic = Diagnostic::new(
                Code::KafkaTopic,
                location.clone(),
                format!(
                    "sink `{}` would write category `{category}` of scope `{scope}` to topic `{topic}`, which Kafka \
                     refuses: {problem}",
                    sink.name.value
                ),
            )
            .label("makes a topic name Kafka refuses")
            .help(
                "give the sink a `topic` without the placeholder that brings the refused name in, or rename the \
                 scope or category",
            );
            if let Some(category) = category_location {
                diagnostic = diagnostic.related(category.location.clone(), "the category");
            }
            diagnostics.push(diagnostic);
        }
    }
}

/// Every scope and category whose messages reach `sink` (directly or through a cell).
fn received<'a>(context: &Context<'a>, sink: &Sink) -> Vec<(&'a str, &'a str)> {
    let config = context.config;
    config
        .outbox
        .scopes
        .values()
        .flat_map(|scope| scope.categories.iter().map(move |category| (scope, category)))
        .filter(|(scope, category)| {
            config
                .deliveries_of(&scope.name.value, &category.value)
                .iter()
                .any(|(_, delivered)| delivered.name.value == sink.name.value)
        })
        .map(|(scope, category)| (scope.name.value.as_str(), category.value.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.events]
kafka = { brokers = "kafka-1:9092", topic = "deletions.{scope}.{model}" }

[outbox.sinks.stream]
kafka = { brokers = "kafka-1:9092" }

[outbox.sinks.fixed]
kafka = { brokers = "kafka-1:9092", topic = "deletions" }

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project update"]
sink = "stream"
category_sinks = { team_update = "events" }

[outbox.scopes.control]
shard_key = "id"
categories = ["user update"]
cells = ["us"]
cell_sinks = { us = "fixed" }
"#;

    #[test]
    #[cfg_attr(not(feature = "kafka"), ignore = "a config with a Kafka sink is a kafka-unsupported error without the kafka feature")]
    fn reports_a_bad_template_and_a_topic_kafka_refuses_but_not_a_fixed_topic() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::KafkaTopic, 3), (Code::KafkaTopic, 6)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
