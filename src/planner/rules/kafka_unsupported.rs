//! `kafka-unsupported`: a build without the `kafka` feature has no librdkafka, so a Kafka sink's
//! properties go unchecked (`kafka-property` needs librdkafka) and its messages could never be
//! delivered. Every command checks the config first, so this error, at the sink's `kafka`, is
//! what such a build says wherever a config names a Kafka sink; a build with the feature (the
//! default) never reports it.

use crate::config::{KAFKA_INSTALL, KAFKA_SUPPORTED, KAFKA_UNSUPPORTED};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    check_build(context, KAFKA_SUPPORTED, diagnostics);
}

/// The rule as a build with (`supported`) or without Kafka support runs it.
fn check_build(context: &Context<'_>, supported: bool, diagnostics: &mut Vec<Diagnostic>) {
    if supported {
        return;
    }
    for sink in context.config.outbox.sinks.values() {
        let Some(kafka) = &sink.kafka else { continue };
        diagnostics.push(
            Diagnostic::new(
                Code::KafkaUnsupported,
                kafka.location.clone(),
                format!("sink `{}` writes to Kafka, but {KAFKA_UNSUPPORTED}", sink.name.value),
            )
            .label("needs Kafka support")
            .help(KAFKA_INSTALL),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::check_build;
    use crate::config::load_sources;
    use crate::diagnostic::{Code, Format, Report, Sources};
    use crate::planner::{Context, ModelGraph};

    const CONFIG: &str = r#"[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "org_id"
categories = ["project_update"]
sink = "events"
category_sinks = { project_update = "hook" }

[outbox.sinks.events]
kafka = { brokers = "kafka-1:9092" }

[outbox.sinks.hook]
url = "https://hooks.example.com/cascade"
"#;

    /// The diagnostics of the rule alone, as a build with or without Kafka support reports them.
    fn human(supported: bool) -> (Vec<Code>, String) {
        let mut sources = Sources::default();
        sources.add("cascade.toml", CONFIG);
        let loaded = load_sources(sources);
        assert_eq!(loaded.diagnostics, vec![]);
        let graph = ModelGraph::build(&loaded.config);
        let context = Context { config: &loaded.config, graph: &graph, sources: &loaded.sources, schema: None };
        let mut diagnostics = Vec::new();
        check_build(&context, supported, &mut diagnostics);
        let codes = diagnostics.iter().map(|d| d.code).collect();
        (codes, Report { sources: &loaded.sources, diagnostics: &diagnostics }.render(Format::Human, false))
    }

    #[test]
    fn a_build_without_kafka_reports_each_kafka_sink_at_its_kafka_key() {
        let (codes, human) = human(false);
        assert_eq!(codes, [Code::KafkaUnsupported]);
        insta::assert_snapshot!(human);
    }

    #[test]
    fn a_build_with_kafka_reports_nothing() {
        assert_eq!(human(true).0, []);
    }

    /// What this very build reports, through every rule: the error without the feature only.
    #[test]
    fn this_build_reports_it_only_without_the_kafka_feature() {
        let codes: Vec<Code> = crate::planner::fixture::codes(CONFIG).into_iter().map(|(code, _)| code).collect();
        let expected: &[Code] = if cfg!(feature = "kafka") { &[] } else { &[Code::KafkaUnsupported] };
        assert_eq!(codes, expected);
    }
}
