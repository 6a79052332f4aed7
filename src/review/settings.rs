//! Changes to `[settings]` and `[options]`: each reported once, with the models it reaches.

use serde_json::{Map, Value};

use super::{ChangeKind as Kind, Draft, Found, Severity};
use crate::config::{Config, Strategy};

pub(super) fn compare(found: &mut Found<'_>) {
    compare_settings(found);
    compare_options(found);
}

fn fields(config: &Config) -> Map<String, Value> {
    match serde_json::to_value(&config.settings) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    }
}

fn compare_settings(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    let (old, new) = (fields(base), fields(head));
    let names: Vec<&String> = new.keys().chain(old.keys().filter(|name| !new.contains_key(*name))).collect();
    for name in names {
        let (before, after) =
            (old.get(name).cloned().unwrap_or(Value::Null), new.get(name).cloned().unwrap_or(Value::Null));
        if before == after {
            continue;
        }
        let (severity, reason, touches) = match name.as_str() {
            "per_row_chunk_size" | "bulk_chunk_size" => {
                let strategy = if name == "bulk_chunk_size" { Strategy::Bulk } else { Strategy::PerRow };
                let defaulted = taking_default(head, strategy);
                let reason = format!(
                    "{} {} models without a `chunk_size` of their own go {} rows per transaction instead of {}: the \
                     same rows",
                    defaulted.len(),
                    strategy.as_str(),
                    head.settings.chunk_size(strategy),
                    base.settings.chunk_size(strategy)
                );
                (Severity::Safe, reason, defaulted)
            }
            // Where and by whom deletions run, not how fast.
            "database_url" => (
                Severity::Attention,
                "commands without `--database-url` run against another database".to_owned(),
                Vec::new(),
            ),
            "allowed_users" => {
                (Severity::Attention, "other users may run the destructive commands".to_owned(), Vec::new())
            }
            _ => (Severity::Safe, format!("`{name}` tunes how deletions run: the same rows"), Vec::new()),
        };
        let (before, after) = if name == "database_url" {
            let before = redacted(before);
            let after = super::outbox::marked_if_hidden(&before, redacted(after));
            (before, after)
        } else {
            (before, after)
        };
        let draft = Draft::new(severity, Kind::SettingChanged, reason)
            .subject(format!("[settings] {name}"))
            .touching(touches)
            .values(before, after);
        found.add(draft, head.settings.location_of(name), base.settings.location_of(name));
    }
}

fn redacted(url: Value) -> Value {
    match url {
        Value::String(url) => Value::String(crate::db::redact(&url)),
        other => other,
    }
}

/// The models of `strategy` whose chunk size is `[settings]`' default.
fn taking_default(config: &Config, strategy: Strategy) -> Vec<String> {
    config
        .models
        .iter()
        .filter(|(_, model)| {
            model.chunk_size.is_none() && model.strategy.as_ref().map_or(Strategy::PerRow, |s| s.value) == strategy
        })
        .map(|(name, _)| name.clone())
        .collect()
}

fn compare_options(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    let names: Vec<&String> =
        head.options.keys().chain(base.options.keys().filter(|name| !head.options.contains_key(*name))).collect();
    for name in names {
        let (before, after) = (base.options.get(name), head.options.get(name));
        let (old, new) = (before.map(|v| v.value), after.map(|v| v.value));
        if old == new {
            continue;
        }
        let paced: Vec<String> = [head, base]
            .iter()
            .flat_map(|config| config.models.iter())
            .filter(|(_, model)| model.rate_limit.as_ref().is_some_and(|r| &r.value == name))
            .map(|(model, _)| model.clone())
            .collect::<indexmap::IndexSet<String>>()
            .into_iter()
            .collect();
        let reason = match new {
            Some(value) if value > 0.0 => {
                format!("`{name}` is {value} (rows per second where it is a rate limit): the same rows")
            }
            Some(_) => format!("`{name}` is 0 (unthrottled where it is a rate limit): the same rows"),
            None => format!("`{name}` is no longer set (unthrottled where it is a rate limit): the same rows"),
        };
        let draft = Draft::new(Severity::Safe, Kind::OptionChanged, reason)
            .subject(format!("[options] \"{name}\""))
            .touching(paced)
            .values(old, new);
        found.add(draft, after.map(|v| &v.location), before.map(|v| &v.location));
    }
}
