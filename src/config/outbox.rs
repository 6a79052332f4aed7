//! The outbox part of the config: scopes (which categories they register, their shard key, the
//! sinks or cells they deliver to) and sinks (a command, a webhook or a Kafka topic).

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use super::located::Located;

/// The transactional-outbox registry.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Outbox {
    /// Outbox scopes keyed by name. Every category belongs to exactly one scope.
    #[serde(default)]
    pub scopes: IndexMap<String, Scope>,
    /// Where the drainer delivers outbox messages, keyed by sink name. A scope's `sink` and its
    /// `category_sinks` name them.
    #[serde(default)]
    pub sinks: IndexMap<String, Sink>,
}

/// An outbox scope: decides the shard key of the categories registered in it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Scope {
    /// The scope's name: its key under `[outbox.scopes]`.
    #[serde(skip)]
    pub name: Located<String>,
    /// Column of a deleted row that becomes the outbox shard id.
    pub shard_key: Located<String>,
    /// Outbox categories registered in this scope.
    #[serde(default)]
    pub categories: Vec<Located<String>>,
    /// The sink (a name under `[outbox.sinks]`) that receives this scope's messages, except
    /// those of categories that `category_sinks` sends elsewhere.
    pub sink: Option<Located<String>>,
    /// Sinks for single categories of this scope, instead of the scope's `sink`: category name
    /// to sink name, such as `{ project_update = "billing" }`.
    #[serde(default)]
    pub category_sinks: IndexMap<String, Located<String>>,
    /// Cells (regions) that must each hear of every message of this scope, such as
    /// `["us", "de"]`. Each cell is delivered through its own sink (`cell_sinks`), claimed,
    /// retried and backed off on its own; a row goes when every cell has it.
    #[serde(default)]
    #[schemars(extend("items" = {"type": "string", "minLength": 1}))]
    pub cells: Vec<Located<String>>,
    /// The sink of each cell: cell name to sink name, such as `{ us = "us_hook", de = "de_hook" }`.
    /// A scope with `cells` delivers through these instead of `sink` and `category_sinks`.
    #[serde(default)]
    pub cell_sinks: IndexMap<String, Located<String>>,
}

impl Scope {
    /// Whether the scope fans its messages out to cells.
    pub fn has_cells(&self) -> bool {
        !self.cells.is_empty()
    }
}

/// How long a sink may take per delivery when `timeout` is not given.
pub const DEFAULT_SINK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How many coalesced messages a sink receives per delivery when `batch_size` is not given.
pub const DEFAULT_SINK_BATCH_SIZE: u64 = 100;

/// The most coalesced messages one delivery may carry.
pub const MAX_SINK_BATCH_SIZE: u64 = 10_000;

/// The longest a sink's `timeout` may be (a claim lasts twice as long).
pub const MAX_SINK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Whether this build delivers to Kafka: the `kafka` feature, on by default (librdkafka is built
/// from C, with cmake, so a build may leave it out).
pub const KAFKA_SUPPORTED: bool = cfg!(feature = "kafka");

/// What a build without Kafka support says about a Kafka sink, and how to get one with it.
pub const KAFKA_UNSUPPORTED: &str =
    "this build of cascade has no Kafka support (it was built without the `kafka` feature)";

/// How to install a build with Kafka support.
pub const KAFKA_INSTALL: &str = "install cascade with its default features, which include Kafka: `cargo install --locked --path .` in its repository, without `--no-default-features`";

/// The topic a Kafka sink writes to when `topic` is not given.
pub const DEFAULT_KAFKA_TOPIC: &str = "cascade.{scope}.{category}";

/// A destination of outbox messages: a command that reads them as JSON on stdin, a webhook
/// that receives them as the JSON body of a POST, or a Kafka topic. Exactly one of `command`,
/// `url` and `kafka` is given.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Sink {
    /// The sink's name: its key under `[outbox.sinks]`.
    #[serde(skip)]
    pub name: Located<String>,
    /// A program and its arguments (no shell): it reads a JSON array of messages on stdin and
    /// exits 0 when they are delivered.
    #[schemars(length(min = 1))]
    pub command: Option<Located<Vec<String>>>,
    /// An `http://` or `https://` URL that receives the JSON array of messages as a POST; any
    /// 2xx status means delivered.
    #[schemars(regex(pattern = r"^https?://"))]
    pub url: Option<Located<String>>,
    /// A Kafka topic that receives one record per message (key: the object identifier; value:
    /// the message as JSON; headers: `idempotency_key`, `category`, `scope`,
    /// `shard_identifier`), through an idempotent producer: delivered = acknowledged by every
    /// in-sync replica.
    pub kafka: Option<Located<Kafka>>,
    /// HTTP headers sent with each POST to `url` (a `command` sink takes none). Write secrets as
    /// `env:NAME`: the value is read from the environment variable `NAME` when the drainer
    /// starts, never stored in the file.
    #[serde(default)]
    pub headers: IndexMap<String, Located<String>>,
    /// Environment variables a `command` sink receives from the drainer, by name, besides
    /// `PATH`, `HOME`, `LANG` and the `CASCADE_OUTBOX_*` variables: nothing else of the
    /// drainer's environment (database passwords, `env:` secrets) reaches the program.
    #[serde(default)]
    pub env: Vec<Located<String>>,
    /// How long one delivery may take before it counts as failed, such as `"30s"` or `"2m"`
    /// (at most 24h).
    #[schemars(with = "Option<String>")]
    #[schemars(extend("default" = humantime::format_duration(DEFAULT_SINK_TIMEOUT).to_string()))]
    pub timeout: Option<Located<std::time::Duration>>,
    /// The most coalesced messages per delivery (1 to 10,000).
    #[schemars(extend("default" = DEFAULT_SINK_BATCH_SIZE), range(min = 1, max = MAX_SINK_BATCH_SIZE))]
    pub batch_size: Option<Located<u64>>,
}

/// Where a Kafka sink writes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Kafka {
    /// The bootstrap brokers, `host:port` separated by commas.
    #[schemars(length(min = 1))]
    pub brokers: Located<String>,
    /// The topic of each message: `{scope}` and `{category}` are replaced by the message's.
    #[schemars(extend("default" = DEFAULT_KAFKA_TOPIC))]
    pub topic: Option<Located<String>>,
    /// librdkafka settings (`security.protocol`, `sasl.*`, `ssl.*`, `compression.type`, ...)
    /// as written in its CONFIGURATION.md. Write secrets as `env:NAME`: read from the
    /// environment variable `NAME` when the drainer starts, never stored in the file nor shown.
    #[serde(default)]
    #[schemars(schema_with = "kafka_properties_schema")]
    pub properties: IndexMap<String, Located<String>>,
}

impl Kafka {
    /// The topic template.
    pub fn topic(&self) -> &str {
        self.topic.as_ref().map_or(DEFAULT_KAFKA_TOPIC, |topic| topic.value.as_str())
    }

    /// The topic of the messages of `category` in `scope`: the template with its placeholders
    /// replaced (in one pass, so a name holding braces is never read as a placeholder).
    pub fn topic_for(&self, scope: &str, category: &str) -> String {
        let mut topic = String::new();
        for part in topic_parts(self.topic()) {
            match part {
                TopicPart::Literal(text) => topic.push_str(text),
                TopicPart::Scope => topic.push_str(scope),
                TopicPart::Category => topic.push_str(category),
                TopicPart::Invalid(text) => topic.push_str(text),
            }
        }
        topic
    }
}

/// The librdkafka properties a Kafka sink sets itself, each with what decides it instead: a
/// `properties` entry may not set them (the sink's values win regardless).
pub const KAFKA_SINK_PROPERTIES: &[(&str, &str)] = &[
    ("bootstrap.servers", "the sink's `brokers`"),
    ("metadata.broker.list", "the sink's `brokers`"),
    ("enable.idempotence", "the sink: its producer is always idempotent"),
    ("acks", "the sink: a delivery counts once all in-sync replicas have it (`acks=all`)"),
    ("request.required.acks", "the sink: a delivery counts once all in-sync replicas have it (`acks=all`)"),
    ("message.timeout.ms", "the sink's `timeout`"),
    ("delivery.timeout.ms", "the sink's `timeout`"),
    ("transactional.id", "the sink: it acknowledges deliveries without transactions"),
];

/// What is wrong with a topic template, if anything: a placeholder other than `{scope}` and
/// `{category}`, a brace that opens or closes none, or a character no topic may hold.
pub fn topic_template_problem(template: &str) -> Option<String> {
    for part in topic_parts(template) {
        match part {
            TopicPart::Invalid(text) if text.starts_with('{') && text.ends_with('}') && text.len() > 1 => {
                return Some(format!("`{text}` is not a placeholder: only `{{scope}}` and `{{category}}` are"));
            }
            TopicPart::Invalid(text) => return Some(format!("`{text}` opens or closes no placeholder")),
            TopicPart::Literal(text) => {
                if let Some(refused) = text.chars().find(|c| !is_topic_char(*c)) {
                    return Some(format!("{refused:?} cannot be part of a Kafka topic name"));
                }
            }
            TopicPart::Scope | TopicPart::Category => {}
        }
    }
    None
}

/// The longest topic name Kafka accepts.
pub const MAX_KAFKA_TOPIC_LENGTH: usize = 249;

/// What Kafka refuses about a topic name, if anything: characters other than ASCII letters,
/// digits, `.`, `_` and `-`, more than 249 of them, or a name that is `.` or `..`.
pub fn topic_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name == "." || name == ".." {
        return Some(format!("`{name}` is not a topic name"));
    }
    if let Some(refused) = name.chars().find(|c| !is_topic_char(*c)) {
        return Some(format!("{refused:?} cannot be part of a Kafka topic name"));
    }
    if name.len() > MAX_KAFKA_TOPIC_LENGTH {
        return Some(format!("it is {} characters long, more than Kafka's {MAX_KAFKA_TOPIC_LENGTH}", name.len()));
    }
    None
}

fn is_topic_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// A piece of a topic template.
enum TopicPart<'a> {
    Literal(&'a str),
    Scope,
    Category,
    /// An unknown `{placeholder}`, or a brace that opens or closes none.
    Invalid(&'a str),
}

fn topic_parts(template: &str) -> Vec<TopicPart<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let brace = rest.find(['{', '}']).unwrap_or(rest.len());
        if brace > 0 {
            parts.push(TopicPart::Literal(&rest[..brace]));
            rest = &rest[brace..];
            continue;
        }
        if rest.starts_with('}') {
            parts.push(TopicPart::Invalid(&rest[..1]));
            rest = &rest[1..];
            continue;
        }
        // `rest` starts with `{`: a placeholder up to the next brace of either kind.
        let end = rest[1..].find(['{', '}']).map(|at| at + 1);
        match end {
            Some(end) if rest[end..].starts_with('}') => {
                parts.push(match &rest[..=end] {
                    "{scope}" => TopicPart::Scope,
                    "{category}" => TopicPart::Category,
                    other => TopicPart::Invalid(other),
                });
                rest = &rest[end + 1..];
            }
            _ => {
                parts.push(TopicPart::Invalid(&rest[..1]));
                rest = &rest[1..];
            }
        }
    }
    parts
}

/// `properties`: librdkafka reads every value as text, so the file may write a number or a
/// boolean as well.
fn kafka_properties_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": { "type": ["string", "integer", "boolean"] },
    })
}

impl Sink {
    /// How long one delivery may take.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout.as_ref().map_or(DEFAULT_SINK_TIMEOUT, |t| t.value)
    }

    /// The most coalesced messages per delivery.
    pub fn batch_size(&self) -> u64 {
        self.batch_size.as_ref().map_or(DEFAULT_SINK_BATCH_SIZE, |b| b.value.max(1))
    }

    /// The settings whose values may be secrets read from the environment (`env:NAME`): a
    /// webhook's headers and a Kafka sink's properties.
    pub fn settings(&self) -> impl Iterator<Item = SinkSetting<'_>> {
        let headers = self.headers.iter().map(|(name, value)| SinkSetting { kind: SettingKind::Header, name, value });
        let properties = self.kafka.iter().flat_map(|kafka| {
            kafka.value.properties.iter().map(|(name, value)| SinkSetting { kind: SettingKind::Property, name, value })
        });
        headers.chain(properties)
    }
}

/// What a [`SinkSetting`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// An HTTP header of a webhook.
    Header,
    /// A librdkafka property of a Kafka sink.
    Property,
}

/// A header or property of a sink, whose value is literal or `env:NAME`.
#[derive(Debug, Clone, Copy)]
pub struct SinkSetting<'a> {
    /// A header or a property.
    pub kind: SettingKind,
    /// The header's or property's name.
    pub name: &'a str,
    /// Its value as written.
    pub value: &'a Located<String>,
}

impl SinkSetting<'_> {
    /// How messages name the setting: "header `Authorization`", "property `sasl.password`".
    pub fn describe(&self) -> String {
        match self.kind {
            SettingKind::Header => format!("header `{}`", self.name),
            SettingKind::Property => format!("property `{}`", self.name),
        }
    }

    /// Whether the setting's name says its value is a credential: for a header Authorization,
    /// Proxy-Authorization, Cookie, or a name with token, secret, key, password or auth in it;
    /// for a Kafka property a name with password or secret in it, or `ssl.key.pem` (where
    /// `ssl.key.location` and the like name files, not secrets).
    pub fn looks_secret(&self) -> bool {
        let name = self.name.to_ascii_lowercase();
        match self.kind {
            SettingKind::Header => {
                ["authorization", "proxy-authorization", "cookie"].contains(&name.as_str())
                    || ["token", "secret", "key", "password", "auth"].iter().any(|word| name.contains(word))
            }
            SettingKind::Property => kafka_property_looks_secret(&name),
        }
    }
}

/// Whether a librdkafka property's name says its value is a credential: a name with password or
/// secret in it, or `ssl.key.pem` (where `ssl.key.location` and the like name files).
pub fn kafka_property_looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "ssl.key.pem" || ["password", "secret"].iter().any(|word| name.contains(word))
}

#[cfg(test)]
mod tests {
    use super::{topic_name_problem, topic_template_problem};

    #[test]
    fn topic_templates_take_scope_and_category_only() {
        for good in ["cascade.{scope}.{category}", "deletions", "{category}", "a-b_c.{scope}"] {
            assert_eq!(topic_template_problem(good), None, "{good}");
        }
        let problem = |template| topic_template_problem(template).unwrap();
        assert_eq!(problem("cascade.{model}"), "`{model}` is not a placeholder: only `{scope}` and `{category}` are");
        assert_eq!(problem("cascade.{scope"), "`{` opens or closes no placeholder");
        assert_eq!(problem("cascade.scope}"), "`}` opens or closes no placeholder");
        assert_eq!(problem("cascade/{scope}"), "'/' cannot be part of a Kafka topic name");
    }

    #[test]
    fn topic_names_follow_kafkas_rules() {
        assert_eq!(topic_name_problem("cascade.control.user_update"), None);
        assert_eq!(topic_name_problem(&"t".repeat(249)), None);
        assert!(topic_name_problem(&"t".repeat(250)).unwrap().contains("250 characters"));
        assert!(topic_name_problem("..").is_some());
        assert!(topic_name_problem("user update").unwrap().contains("' '"));
    }
}
