//! `kafka-property`: a Kafka sink's `properties` go to librdkafka as they are, so a name it does
//! not know or a value it refuses would stop the drainer at its start. Each is checked here with
//! librdkafka itself (`rd_kafka_conf_set`, which needs no broker): an `env:NAME` value is not
//! known before the drainer starts, so only its name is checked. The properties that make a
//! delivery what the sink promises (its brokers, an idempotent producer acknowledged by all
//! in-sync replicas, the sink's `timeout`) are the sink's own: setting them is refused too. A
//! build without Kafka support has no librdkafka to ask: `kafka-unsupported` says so instead.

#[cfg(feature = "kafka")]
use rdkafka::ClientConfig;
#[cfg(feature = "kafka")]
use rdkafka::error::KafkaError;
#[cfg(feature = "kafka")]
use rdkafka::types::RDKafkaConfRes;

use crate::config::KAFKA_SINK_PROPERTIES;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        let Some(kafka) = &sink.kafka else { continue };
        for (name, value) in &kafka.value.properties {
            let sink = &sink.name.value;
            let diagnostic = if let Some((_, decided_by)) = KAFKA_SINK_PROPERTIES.iter().find(|(n, _)| n == name) {
                Diagnostic::new(
                    Code::KafkaProperty,
                    value.location.clone(),
                    format!("property `{name}` of sink `{sink}` is decided by {decided_by}"),
                )
                .label("the sink sets this itself")
                .help(format!("remove `{name}` from `properties`"))
            } else if let Some(refusal) = refusal(name, &value.value) {
                Diagnostic::new(
                    Code::KafkaProperty,
                    value.location.clone(),
                    format!("property `{name}` of sink `{sink}`: {refusal}"),
                )
                .label("refused by librdkafka")
                .help("see librdkafka's CONFIGURATION.md for the properties a producer takes and their values")
            } else {
                continue;
            };
            diagnostics.push(diagnostic);
        }
    }
}

/// Why librdkafka refuses `name = value`, if it does; for `env:NAME`, only an unknown name.
#[cfg(feature = "kafka")]
fn refusal(name: &str, value: &str) -> Option<String> {
    let from_environment = value.starts_with("env:");
    let checked = if from_environment { "" } else { value };
    match ClientConfig::new().set(name, checked).create_native_config() {
        Ok(_) => None,
        Err(KafkaError::ClientConfig(RDKafkaConfRes::RD_KAFKA_CONF_INVALID, ..)) if from_environment => None,
        Err(KafkaError::ClientConfig(_, description, ..)) => Some(description),
        Err(KafkaError::Nul(_)) => Some("a name or value with a NUL character".to_owned()),
        Err(other) => Some(other.to_string()),
    }
}

/// Nothing to ask without librdkafka (the sink is a `kafka-unsupported` error then).
#[cfg(not(feature = "kafka"))]
fn refusal(_: &str, _: &str) -> Option<String> {
    None
}

#[cfg(all(test, feature = "kafka"))]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.events.kafka]
brokers = "kafka-1:9092"

[outbox.sinks.events.kafka.properties]
"compression.type" = "zstd"
"linger.ms" = 5
"socket.keepalive.enable" = true
"sasl.password" = "env:KAFKA_PASSWORD"
"compression.codec" = "zip"
"lingr.ms" = 5
"sasl.pasword" = "env:KAFKA_PASSWORD"
"acks" = "1"
"bootstrap.servers" = "kafka-2:9092"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update"]
sink = "events"
"#;

    #[test]
    fn reports_what_librdkafka_refuses_and_what_the_sink_decides() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::KafkaProperty, 10),
                (Code::KafkaProperty, 11),
                (Code::KafkaProperty, 12),
                (Code::KafkaProperty, 13),
                (Code::KafkaProperty, 14)
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
