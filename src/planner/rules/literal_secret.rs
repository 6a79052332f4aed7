//! `literal-secret` (warning): a setting whose name says it carries a credential has a value
//! written in the file instead of `env:NAME`, so the secret would be committed with the config: a
//! webhook header (Authorization, Proxy-Authorization, Cookie, or a name containing token,
//! secret, key, password or auth, in any case) or a Kafka property (a name containing password or
//! secret, or `ssl.key.pem`). An empty value holds no secret and is left alone.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        for setting in sink.settings() {
            let value = setting.value;
            if value.value.is_empty() || value.value.starts_with("env:") || !setting.looks_secret() {
                continue;
            }
            let variable = variable_name(&sink.name.value, setting.name);
            // `ENV:NAME` reads nothing: it is a literal, so say how to write the prefix.
            let help = if value.value.get(..4).is_some_and(|prefix| prefix.eq_ignore_ascii_case("env:")) {
                format!("write `env:{}`: only a lowercase `env:` prefix reads the environment", &value.value[4..])
            } else {
                format!(
                    "write `env:{variable}` and export {variable} where the drainer runs; its value is read from \
                     the environment and never stored in the file"
                )
            };
            diagnostics.push(
                Diagnostic::new(
                    Code::LiteralSecret,
                    value.location.clone(),
                    format!(
                        "{} of sink `{}` has a literal value, and its name says it carries a secret",
                        setting.describe(),
                        sink.name.value
                    ),
                )
                .label("secret written in the config")
                .help(help),
            );
        }
    }
}

/// A variable name to suggest: the sink's and the header's names in upper snake case
/// (`billing` + `X-Api-Key` → `BILLING_X_API_KEY`).
pub(super) fn variable_name(sink: &str, header: &str) -> String {
    let mut name = String::new();
    for c in sink.chars().chain(['_']).chain(header.chars()) {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_uppercase());
        } else if !name.is_empty() && !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_end_matches('_').to_owned();
    if name.starts_with(|c: char| c.is_ascii_digit()) { format!("_{name}") } else { name }
}

#[cfg(test)]
mod tests {
    use super::variable_name;
    use crate::config::{Located, SettingKind, SinkSetting};
    use crate::diagnostic::{Code, Location};
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[outbox.sinks.billing]
url = "https://billing.internal/hooks/tombstones"
headers = { Authorization = "Bearer s3cr3t", Accept = "application/json", X-Request-Source = "cascade" }

[outbox.sinks.search]
url = "https://search.internal/forget"

[outbox.sinks.search.headers]
X-Api-Key = "k-1234"
Cookie = "session=abc"
X-Auth-Token = "env:SEARCH_TOKEN"
x-service-password = "ENV:SEARCH_PASSWORD"

[outbox.sinks.events]
kafka = { brokers = "kafka-1:9092", properties = { "sasl.username" = "cascade", "sasl.password" = "hunter2", "ssl.key.location" = "/etc/kafka/client.key", "ssl.key.password" = "env:KAFKA_KEY_PASSWORD" } }

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update", "member_update"]
sink = "search"
category_sinks = { project_update = "billing", member_update = "events" }
"#;

    #[test]
    #[cfg_attr(not(feature = "kafka"), ignore = "a config with a Kafka sink is a kafka-unsupported error without the kafka feature")]
    fn warns_about_literal_values_of_secret_headers_only() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::LiteralSecret, 4),
                (Code::LiteralSecret, 10),
                (Code::LiteralSecret, 11),
                (Code::LiteralSecret, 13),
                (Code::LiteralSecret, 16)
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    fn looks_secret(kind: SettingKind, name: &str) -> bool {
        let value = Located::new(String::new(), Location::new(0, 0..0));
        SinkSetting { kind, name, value: &value }.looks_secret()
    }

    #[test]
    fn secret_header_names() {
        for name in ["Authorization", "proxy-authorization", "COOKIE", "X-Api-Key", "X-Auth-Token", "Client-Secret"] {
            assert!(looks_secret(SettingKind::Header, name), "{name}");
        }
        for name in ["Accept", "Content-Type", "X-Request-Source", "Set-Cookie-Policy"] {
            assert!(!looks_secret(SettingKind::Header, name), "{name}");
        }
    }

    #[test]
    fn secret_property_names() {
        for name in ["sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.oauthbearer.client.secret", "ssl.key.pem"] {
            assert!(looks_secret(SettingKind::Property, name), "{name}");
        }
        for name in ["sasl.username", "ssl.key.location", "ssl.keystore.location", "sasl.kerberos.keytab", "security.protocol"] {
            assert!(!looks_secret(SettingKind::Property, name), "{name}");
        }
    }

    #[test]
    fn suggested_variable_names() {
        assert_eq!(variable_name("billing", "Authorization"), "BILLING_AUTHORIZATION");
        assert_eq!(variable_name("search-index", "X-Api-Key"), "SEARCH_INDEX_X_API_KEY");
        assert_eq!(variable_name("1st", "Cookie"), "_1ST_COOKIE");
    }
}
