//! `literal-secret` (warning): a header whose name says it carries a credential (Authorization,
//! Proxy-Authorization, Cookie, or a name containing token, secret, key, password or auth, in any
//! case) has a value written in the file instead of `env:NAME`, so the secret would be committed
//! with the config. An empty value holds no secret and is left alone.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for sink in context.config.outbox.sinks.values() {
        for (header, value) in &sink.headers {
            if value.value.is_empty() || value.value.starts_with("env:") || !looks_secret(header) {
                continue;
            }
            let variable = variable_name(&sink.name.value, header);
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
                        "header `{header}` of sink `{}` has a literal value, and its name says it carries a secret",
                        sink.name.value
                    ),
                )
                .label("secret written in the config")
                .help(help),
            );
        }
    }
}

/// Whether a header name says its value is a credential.
fn looks_secret(header: &str) -> bool {
    let header = header.to_ascii_lowercase();
    ["authorization", "proxy-authorization", "cookie"].contains(&header.as_str())
        || ["token", "secret", "key", "password", "auth"].iter().any(|word| header.contains(word))
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
    use super::{looks_secret, variable_name};
    use crate::diagnostic::Code;
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

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update", "project_update"]
sink = "search"
category_sinks = { project_update = "billing" }
"#;

    #[test]
    fn warns_about_literal_values_of_secret_headers_only() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::LiteralSecret, 4),
                (Code::LiteralSecret, 10),
                (Code::LiteralSecret, 11),
                (Code::LiteralSecret, 13)
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn secret_header_names() {
        for name in ["Authorization", "proxy-authorization", "COOKIE", "X-Api-Key", "X-Auth-Token", "Client-Secret"] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["Accept", "Content-Type", "X-Request-Source", "Set-Cookie-Policy"] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn suggested_variable_names() {
        assert_eq!(variable_name("billing", "Authorization"), "BILLING_AUTHORIZATION");
        assert_eq!(variable_name("search-index", "X-Api-Key"), "SEARCH_INDEX_X_API_KEY");
        assert_eq!(variable_name("1st", "Cookie"), "_1ST_COOKIE");
    }
}
