//! `header-env-name`: a header or Kafka property value `env:NAME` is read from the environment
//! variable `NAME` when the drainer starts, so `NAME` must be a name a shell can export: letters, digits and `_`,
//! not starting with a digit. An empty or otherwise invalid name could never be set, so the
//! header could never be sent as meant.

use super::literal_secret::variable_name;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        for setting in sink.settings() {
            let value = setting.value;
            let Some(variable) = value.value.strip_prefix("env:") else {
                continue;
            };
            if is_variable_name(variable) {
                continue;
            }
            let problem = if variable.is_empty() {
                "an empty variable name".to_owned()
            } else {
                format!("`{variable}`, which is not a valid environment variable name")
            };
            let example = suggest(variable).unwrap_or_else(|| variable_name(&sink.name.value, setting.name));
            diagnostics.push(
                Diagnostic::new(
                    Code::HeaderEnvName,
                    value.location.clone(),
                    format!("{} of sink `{}` reads `env:` with {problem}", setting.describe(), sink.name.value),
                )
                .label("no such variable can be set")
                .help(format!(
                    "write `env:NAME`, where NAME is letters, digits and `_` and does not start with a digit, such as \
                     `env:{example}`"
                )),
            );
        }
    }
}

/// A POSIX environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The nearest valid name: surrounding blanks dropped, every other character that a name cannot
/// hold replaced with `_`, and `_` in front of a leading digit. None when nothing is left.
fn suggest(name: &str) -> Option<String> {
    let name: String =
        name.trim().chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    let name = name.trim_matches('_');
    match name.chars().next() {
        None => None,
        Some(c) if c.is_ascii_digit() => Some(format!("_{name}")),
        Some(_) => Some(name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_variable_name, suggest};
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.billing]
url = "https://billing.internal/hooks/tombstones"

[outbox.sinks.billing.headers]
Authorization = "env:"
X-Api-Key = "env:billing-api-key"
X-Tenant = "env: BILLING_TENANT"
X-Auth-Token = "env:BILLING_TOKEN"

[outbox.sinks.events]
kafka = { brokers = "kafka-1:9092", properties = { "sasl.password" = "env:KAFKA PASSWORD" } }

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "member_update"]
sink = "billing"
category_sinks = { member_update = "events" }
"#;

    #[test]
    #[cfg_attr(not(feature = "kafka"), ignore = "a config with a Kafka sink is a kafka-unsupported error without the kafka feature")]
    fn reports_empty_and_invalid_variable_names() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![(Code::HeaderEnvName, 6), (Code::HeaderEnvName, 7), (Code::HeaderEnvName, 8), (Code::HeaderEnvName, 12)]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn variable_names() {
        for name in ["BILLING_TOKEN", "_x", "a1"] {
            assert!(is_variable_name(name), "{name}");
        }
        for name in ["", "1A", "A-B", " A", "A B", "É"] {
            assert!(!is_variable_name(name), "{name}");
        }
        assert_eq!(suggest("billing-api-key").as_deref(), Some("billing_api_key"));
        assert_eq!(suggest(" BILLING_TENANT").as_deref(), Some("BILLING_TENANT"));
        assert_eq!(suggest("9lives").as_deref(), Some("_9lives"));
        assert_eq!(suggest("").as_deref(), None);
        assert_eq!(suggest("--").as_deref(), None);
    }
}
