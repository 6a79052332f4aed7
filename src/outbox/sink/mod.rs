//! Delivering a batch of messages to a sink: a command that reads the JSON array on stdin and
//! exits 0 (`command.rs`), a webhook that answers a POST of it with a 2xx status (`webhook.rs`),
//! or a Kafka topic whose brokers acknowledge every message (`kafka.rs`). None runs inside a
//! database transaction; each is bounded by the sink's timeout. A sink registers its secrets (a
//! header's or credential property's value, an `env:` value, its URL's password and query
//! values, the variables its command is given) with [`crate::secret`] when it is made, and every
//! error it returns is redacted here: no secret is logged, stored in `cascade_outbox_shard` or
//! printed, in whatever form it comes back.

mod command;
#[cfg(feature = "kafka")]
mod kafka;
#[cfg(feature = "kafka")]
pub(crate) use kafka::{Logger as KafkaLogger, log_level as kafka_log_level};
mod webhook;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::OutboxError;
use crate::config::{SettingKind, Sink, SinkSetting};

/// What a sink receives for each message, in a JSON array.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Message {
    /// Stable across redeliveries of this message: a sink that has seen it may skip it.
    pub idempotency_key: String,
    /// The id of the newest outbox row of this object in the shard (the one delivered).
    pub id: i64,
    /// The category's scope.
    pub scope: String,
    /// The shard: the deleted row's shard key value (null when it was NULL).
    pub shard_identifier: Option<String>,
    /// The outbox category.
    pub category: String,
    /// The model (of the config) whose row was deleted: two models may share a category, and
    /// their rows never coalesce. Empty for rows written before tombstones named their model.
    pub model: String,
    /// The deleted object's key.
    pub object_identifier: String,
    /// The columns the config copies into the payload (null without any).
    pub payload: serde_json::Value,
    /// When the newest row was written (UTC).
    pub date_added: String,
}

/// Where the drainer reads the values of the sinks' `env:NAME` headers and Kafka properties.
#[derive(Clone, Default)]
pub enum Variables {
    /// The process's environment, as the command line reads them.
    #[default]
    Process,
    /// These values, and none from the process's environment: for a program that keeps the
    /// secrets elsewhere, or a test, which must not change the environment of a process whose
    /// other threads read it. A command sink's `env` list still passes the process's variables.
    Given(BTreeMap<String, String>),
}

impl Variables {
    fn get(&self, name: &str) -> Option<String> {
        match self {
            Variables::Process => std::env::var(name).ok(),
            Variables::Given(values) => values.get(name).cloned(),
        }
    }
}

/// The names only: the values are secrets.
impl std::fmt::Debug for Variables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Variables::Process => f.write_str("Process"),
            Variables::Given(values) => f.debug_tuple("Given").field(&values.keys().collect::<Vec<_>>()).finish(),
        }
    }
}

/// A sink ready to deliver: secrets read from the environment, its client built once.
#[derive(Debug)]
pub(crate) struct ReadySink {
    pub name: String,
    target: Target,
    pub timeout: Duration,
    pub batch_size: u64,
}

#[derive(Debug)]
enum Target {
    Command(command::CommandSink),
    Webhook(webhook::Webhook),
    #[cfg(feature = "kafka")]
    Kafka(kafka::KafkaSink),
}

/// Why one delivery failed; the shard is retried after its backoff.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DeliveryError(String);

/// How much of a sink's output (a command's stderr, a webhook's response body) a failure keeps.
const OUTPUT_KEPT: usize = 512;

impl ReadySink {
    /// Reads the `env:NAME` values of headers and properties and builds the sink's client; a
    /// variable that is not set, a header HTTP cannot carry or a property librdkafka refuses is an
    /// error now, not at the first delivery.
    pub(super) fn new(sink: &Sink, variables: &Variables) -> Result<Self, OutboxError> {
        let name = sink.name.value.clone();
        let settings = read_settings(sink, variables)?;
        register_secrets(sink, &settings);
        let refuse = |reason: String| OutboxError::Sink { sink: name.clone(), reason: crate::secret::redact(&reason) };
        let command = sink.command.as_ref().and_then(|command| command.value.split_first());
        let target = match (command, &sink.url, &sink.kafka) {
            (Some((program, arguments)), None, None) => {
                let passed = sink.env.iter().map(|variable| variable.value.clone()).collect();
                Target::Command(command::CommandSink::new(program, arguments, passed))
            }
            (None, Some(url), None) => {
                Target::Webhook(webhook::Webhook::new(&url.value, &settings, sink.timeout()).map_err(refuse)?)
            }
            #[cfg(feature = "kafka")]
            (None, None, Some(kafka)) => {
                Target::Kafka(kafka::KafkaSink::new(&name, &kafka.value, &settings, sink.timeout()).map_err(refuse)?)
            }
            #[cfg(not(feature = "kafka"))]
            (None, None, Some(_)) => return Err(refuse(kafka_unsupported())),
            _ => {
                return Err(refuse(
                    "it needs exactly one of `command`, `url` and `kafka` (run `cascade validate`)".into(),
                ));
            }
        };
        Ok(Self { name, target, timeout: sink.timeout(), batch_size: sink.batch_size() })
    }

    /// Delivers `messages` (one shard's, in id order). The error holds no secret of the sink's.
    pub(super) async fn deliver(&self, messages: &[Message]) -> Result<(), DeliveryError> {
        let delivered = match &self.target {
            Target::Command(command) => command.deliver(&self.name, messages, self.timeout).await,
            Target::Webhook(webhook) => webhook.deliver(messages).await,
            #[cfg(feature = "kafka")]
            Target::Kafka(kafka) => kafka.deliver(messages).await,
        };
        delivered.map_err(|DeliveryError(error)| DeliveryError(crate::secret::redact(&error)))
    }
}

/// Why a Kafka sink cannot be made ready by a build without Kafka support (whose `cascade
/// validate` reports it as `kafka-unsupported`; a program may make a drainer of an unchecked
/// config).
#[cfg(any(test, not(feature = "kafka")))]
fn kafka_unsupported() -> String {
    use crate::config::{KAFKA_INSTALL, KAFKA_UNSUPPORTED};
    format!("it writes to Kafka, but {KAFKA_UNSUPPORTED}: {KAFKA_INSTALL}")
}

/// Registers what the sink may be handed back that must never be shown: every header's value (a
/// webhook may echo any of them), the values of Kafka properties read through `env:` or whose
/// names say they are credentials, its URL's password and query values, and the values of the
/// variables its command is given (a program may print them on stderr).
fn register_secrets(sink: &Sink, settings: &[ReadSetting<'_>]) {
    let secret = |read: &&ReadSetting<'_>| {
        read.setting.kind == SettingKind::Header
            || read.setting.value.value.starts_with("env:")
            || read.setting.looks_secret()
    };
    for read in settings.iter().filter(secret) {
        crate::secret::register(&read.value);
    }
    if let Some(url) = &sink.url {
        crate::db::register_secrets_with_query(&url.value);
    }
    for variable in &sink.env {
        if let Ok(value) = std::env::var(&variable.value) {
            crate::secret::register(&value);
        }
    }
}

/// A header or property with its value read: from the environment for `env:NAME`.
pub(super) struct ReadSetting<'a> {
    pub setting: SinkSetting<'a>,
    pub value: String,
}

/// Every header and property of `sink`, `env:NAME` values read from `variables`.
fn read_settings<'a>(sink: &'a Sink, variables: &Variables) -> Result<Vec<ReadSetting<'a>>, OutboxError> {
    sink.settings()
        .map(|setting| {
            let value = match setting.value.value.strip_prefix("env:") {
                Some(variable) => variables.get(variable).ok_or_else(|| OutboxError::Sink {
                    sink: sink.name.value.clone(),
                    reason: format!(
                        "{} reads the environment variable `{variable}`, which is not set",
                        setting.describe()
                    ),
                })?,
                None => setting.value.value.clone(),
            };
            Ok(ReadSetting { setting, value })
        })
        .collect()
}

/// The key of a whole delivery (the `Idempotency-Key` header, `CASCADE_OUTBOX_IDEMPOTENCY_KEY`):
/// the same batch retried carries the same key.
fn batch_key(messages: &[Message]) -> String {
    let first = messages.first().map_or(0, |m| m.id);
    let last = messages.last().map_or(0, |m| m.id);
    format!("cascade-outbox-{first}-{last}-{}", messages.len())
}

/// The first `limit` bytes of `text` (at a character boundary).
fn head(text: &str, limit: usize) -> &str {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The last `limit` bytes of `text` (at a character boundary).
fn tail(text: &str, limit: usize) -> &str {
    let mut start = text.len().saturating_sub(limit);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::{ReadySink, Variables, kafka_unsupported};
    use crate::outbox::OutboxError;

    /// A build with Kafka support makes the sink's producer (no broker needed for that); one
    /// without refuses the sink, saying so and how to get a build that has it.
    #[test]
    fn a_kafka_sink_is_ready_only_in_a_build_with_kafka_support() {
        let mut sources = crate::diagnostic::Sources::default();
        sources.add("cascade.toml", "[outbox.sinks.events]\nkafka = { brokers = \"127.0.0.1:9\" }\n");
        let loaded = crate::config::load_sources(sources);
        assert_eq!(loaded.diagnostics, vec![]);
        let ready = ReadySink::new(&loaded.config.outbox.sinks["events"], &Variables::Process);
        match (ready, crate::config::KAFKA_SUPPORTED) {
            (Ok(_), true) => {}
            (Err(OutboxError::Sink { sink, reason }), false) => {
                assert_eq!((sink.as_str(), reason), ("events", kafka_unsupported()));
            }
            (other, supported) => panic!("with Kafka support {supported}: {other:?}"),
        }
    }

    #[test]
    fn the_refusal_says_how_to_get_kafka_support() {
        assert_eq!(
            kafka_unsupported(),
            "it writes to Kafka, but this build of cascade has no Kafka support (it was built without the \
             `kafka` feature): install cascade with its default features, which include Kafka: `cargo install \
             --locked --path .` in its repository, without `--no-default-features`"
        );
    }
}
