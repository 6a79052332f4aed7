//! Changes to the outbox registry: which scope each category is registered in (its shard key),
//! where each category is delivered, and the sinks themselves. A change here deletes no other
//! rows, but changes who hears of the deletions and in what order: attention, except what only
//! tunes a delivery.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::{ChangeKind as Kind, Draft, Found, Severity};
use crate::config::{Config, Scope, Sink};

/// The fields of a scope that are compared one by one; any other (future) field is compared as
/// a whole value.
const SCOPE_FIELDS: &[&str] = &["shard_key", "categories", "sink", "category_sinks"];
/// Sink fields that only tune a delivery.
const SINK_TUNING: &[&str] = &["timeout", "batch_size"];
/// Sink fields whose values may be secrets: only their names are shown.
const SINK_SECRETS: &[&str] = &["headers", "properties"];

pub(super) fn compare(found: &mut Found<'_>) {
    compare_scopes(found);
    compare_categories(found);
    compare_sinks(found);
}

/// The models that write `categories`, in either config.
fn writers(found: &Found<'_>, categories: &[&str]) -> Vec<String> {
    let mut models = indexmap::IndexSet::new();
    for config in [found.head.config, found.base.config] {
        for (name, model) in &config.models {
            if model.outbox.as_ref().is_some_and(|c| categories.contains(&c.value.as_str())) {
                models.insert(name);
            }
        }
    }
    models.into_iter().cloned().collect()
}

fn categories_of(scope: &Scope) -> Vec<&str> {
    scope.categories.iter().map(|c| c.value.as_str()).collect()
}

fn compare_scopes(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    for (name, scope) in &head.outbox.scopes {
        let touches = writers(found, &categories_of(scope));
        let Some(before) = base.outbox.scopes.get(name) else {
            let draft = Draft::new(Severity::Safe, Kind::ScopeAdded, format!("the outbox scope `{name}` is declared"))
                .subject(format!("[outbox.scopes.{name}]"))
                .touching(touches)
                .values((), &scope.shard_key.value);
            found.add(draft, Some(&scope.name.location), None);
            continue;
        };
        if before.shard_key.value != scope.shard_key.value {
            let draft = Draft::new(
                Severity::Attention,
                Kind::ShardKeyChanged,
                format!(
                    "tombstones of scope `{name}` are sharded by `{}` instead of `{}`: new shards, each delivered in \
                     its own order, while the old shards drain",
                    scope.shard_key.value, before.shard_key.value
                ),
            )
            .subject(format!("[outbox.scopes.{name}] shard_key"))
            .touching(touches.clone())
            .values(&before.shard_key.value, &scope.shard_key.value);
            found.add(draft, Some(&scope.shard_key.location), None);
        }
        let (old, new) = (other_fields(before), other_fields(scope));
        for (field, (old_value, new_value)) in changed_fields(&old, &new) {
            let draft = Draft::new(
                Severity::Attention,
                Kind::RoutingChanged,
                format!("`{field}` of the outbox scope `{name}` changed: its tombstones are delivered otherwise"),
            )
            .subject(format!("[outbox.scopes.{name}] {field}"))
            .touching(touches.clone())
            .values(old_value, new_value);
            found.add(draft, Some(&scope.name.location), None);
        }
    }
    for (name, scope) in base.outbox.scopes.iter().filter(|(name, _)| !head.outbox.scopes.contains_key(*name)) {
        let touches = writers(found, &categories_of(scope));
        let draft = Draft::new(
            Severity::Attention,
            Kind::ScopeRemoved,
            format!("the outbox scope `{name}` is no longer declared: its tombstones are not delivered"),
        )
        .subject(format!("[outbox.scopes.{name}]"))
        .touching(touches)
        .values(&scope.shard_key.value, ());
        found.add(draft, None, Some(&scope.name.location));
    }
}

/// Every category of a config with its scope, and where the scope registers it.
fn registrations(config: &Config) -> IndexMap<&str, (&Scope, &crate::diagnostic::Location)> {
    let mut found = IndexMap::new();
    for scope in config.outbox.scopes.values() {
        for category in &scope.categories {
            found.entry(category.value.as_str()).or_insert((scope, &category.location));
        }
    }
    found
}

fn compare_categories(found: &mut Found<'_>) {
    let (base, head) = (registrations(found.base.config), registrations(found.head.config));
    for (category, (scope, location)) in &head {
        let touches = writers(found, &[category]);
        let scope_name = &scope.name.value;
        let Some((old_scope, _)) = base.get(category) else {
            let draft = Draft::new(
                Severity::Safe,
                Kind::CategoryScopeChanged,
                format!("the category `{category}` is registered in the scope `{scope_name}`"),
            )
            .subject(format!("category {category}"))
            .touching(touches)
            .values((), scope_name);
            found.add(draft, Some(location), None);
            continue;
        };
        let old_name = &old_scope.name.value;
        if old_name != scope_name {
            let draft = Draft::new(
                Severity::Attention,
                Kind::CategoryScopeChanged,
                format!(
                    "`{category}` tombstones move from the scope `{old_name}` to `{scope_name}`: sharded by `{}` \
                     instead of `{}` (a reshard) and delivered to that scope's sinks",
                    scope.shard_key.value, old_scope.shard_key.value
                ),
            )
            .subject(format!("category {category}"))
            .touching(touches)
            .values(old_name, scope_name);
            found.add(draft, Some(location), None);
            continue;
        }
        let (old_sink, new_sink) = (sink_name(old_scope, category), sink_name(scope, category));
        if old_sink != new_sink {
            let reason = match new_sink {
                Some(sink) => format!("`{category}` tombstones are delivered to the sink `{sink}`"),
                None => format!("`{category}` tombstones are delivered to no sink"),
            };
            let draft = Draft::new(Severity::Attention, Kind::RoutingChanged, reason)
                .subject(format!("category {category}"))
                .touching(touches)
                .values(old_sink, new_sink);
            let where_routed = scope.category_sinks.get(*category).or(scope.sink.as_ref()).map(|s| &s.location);
            found.add(draft, Some(where_routed.unwrap_or(location)), None);
        }
    }
    for (category, (scope, location)) in base.iter().filter(|(category, _)| !head.contains_key(*category)) {
        let draft = Draft::new(
            Severity::Attention,
            Kind::CategoryScopeChanged,
            format!("the category `{category}` is registered in no scope: its tombstones have no shard key or sink"),
        )
        .subject(format!("category {category}"))
        .touching(writers(found, &[category]))
        .values(&scope.name.value, ());
        found.add(draft, None, Some(location));
    }
}

fn sink_name<'a>(scope: &'a Scope, category: &str) -> Option<&'a str> {
    scope.category_sinks.get(category).or(scope.sink.as_ref()).map(|sink| sink.value.as_str())
}

/// The models whose tombstones `sink` delivers, in `config`.
fn delivered_by(config: &Config, sink: &str) -> Vec<String> {
    let mut categories = Vec::new();
    for scope in config.outbox.scopes.values() {
        for category in &scope.categories {
            if sink_name(scope, &category.value) == Some(sink) {
                categories.push(category.value.as_str());
            }
        }
    }
    config
        .models
        .iter()
        .filter(|(_, model)| model.outbox.as_ref().is_some_and(|c| categories.contains(&c.value.as_str())))
        .map(|(name, _)| name.clone())
        .collect()
}

fn compare_sinks(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    for (name, sink) in &head.outbox.sinks {
        let touches = delivered_by(head, name);
        let Some(before) = base.outbox.sinks.get(name) else {
            let draft = Draft::new(Severity::Safe, Kind::SinkAdded, format!("the outbox sink `{name}` is declared"))
                .subject(format!("[outbox.sinks.{name}]"))
                .touching(touches);
            found.add(draft, Some(&sink.name.location), None);
            continue;
        };
        let (old_fields, new_fields) = shown(before, sink);
        for (field, _) in changed_fields(&fields(before), &fields(sink)) {
            let old_value = old_fields.get(&field).cloned().unwrap_or(Value::Null);
            let new_value = marked_if_hidden(&old_value, new_fields.get(&field).cloned().unwrap_or(Value::Null));
            let severity = if SINK_TUNING.contains(&field.as_str()) { Severity::Safe } else { Severity::Attention };
            let reason = if severity == Severity::Safe {
                format!(
                    "`{field}` of the sink `{name}` changed: the same messages, delivered in other batches or times"
                )
            } else {
                format!("`{field}` of the sink `{name}` changed: its messages go elsewhere or otherwise")
            };
            let draft = Draft::new(severity, Kind::SinkChanged, reason)
                .subject(format!("[outbox.sinks.{name}] {field}"))
                .touching(touches.clone())
                .values(old_value, new_value);
            found.add(draft, Some(&sink.name.location), None);
        }
    }
    for (name, sink) in base.outbox.sinks.iter().filter(|(name, _)| !head.outbox.sinks.contains_key(*name)) {
        let draft = Draft::new(
            Severity::Attention,
            Kind::SinkRemoved,
            format!("the outbox sink `{name}` is no longer declared: what it delivered reaches it no more"),
        )
        .subject(format!("[outbox.sinks.{name}]"))
        .touching(delivered_by(base, name));
        found.add(draft, None, Some(&sink.name.location));
    }
}

/// Two sinks' fields as they may be shown: secrets (header and property values) as `***`
/// (`*** (changed)` on the head's side where the value changed), URLs without their passwords.
fn shown(before: &Sink, after: &Sink) -> (Map<String, Value>, Map<String, Value>) {
    let (mut old, mut new) = (fields(before), fields(after));
    hide_secrets(&mut old, &mut new);
    // A Kafka sink's properties sit inside its `kafka` table.
    let (mut old_kafka, mut new_kafka) = (Map::new(), Map::new());
    let old_kafka = match old.get_mut("kafka") {
        Some(Value::Object(kafka)) => kafka,
        _ => &mut old_kafka,
    };
    let new_kafka = match new.get_mut("kafka") {
        Some(Value::Object(kafka)) => kafka,
        _ => &mut new_kafka,
    };
    hide_secrets(old_kafka, new_kafka);
    redact_urls(&mut old);
    redact_urls(&mut new);
    (old, new)
}

/// The values of the secret fields (`SINK_SECRETS`) of `old` and `new` as `***`, and
/// `*** (changed)` on `new`'s side where the value changed.
fn hide_secrets(old: &mut Map<String, Value>, new: &mut Map<String, Value>) {
    for field in SINK_SECRETS {
        let old_values = match old.get_mut(*field) {
            Some(Value::Object(values)) => std::mem::take(values),
            _ => Map::new(),
        };
        if let Some(Value::Object(values)) = new.get_mut(*field) {
            for (name, value) in values.iter_mut() {
                let same = old_values.get(name) == Some(value);
                *value = Value::String(if same { "***" } else { "*** (changed)" }.to_owned());
            }
        }
        if let Some(Value::Object(values)) = old.get_mut(*field) {
            values.extend(old_values.into_iter().map(|(name, _)| (name, Value::String("***".to_owned()))));
        }
    }
}

/// `new`, of a value that changed, as shown: marked when only a hidden part of it changed (a
/// URL's password or query token), which shows it as `old` is shown.
pub(super) fn marked_if_hidden(old: &Value, new: Value) -> Value {
    if *old == new { Value::String(format!("{} (a secret changed)", super::format::value_text(&new))) } else { new }
}

fn redact_urls(fields: &mut Map<String, Value>) {
    for value in fields.values_mut() {
        match value {
            Value::String(text) if text.contains("://") => *text = crate::db::redact_with_query(text),
            Value::Object(inner) => redact_urls(inner),
            _ => {}
        }
    }
}

/// A sink's fields as written, secrets included: for comparing only.
fn fields(sink: &Sink) -> Map<String, Value> {
    match serde_json::to_value(sink) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    }
}

/// The fields of a scope besides the ones compared one by one.
fn other_fields(scope: &Scope) -> Map<String, Value> {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(scope) else { return Map::new() };
    fields.retain(|field, _| !SCOPE_FIELDS.contains(&field.as_str()));
    fields
}

/// The fields whose values differ, in the head's order then the base's: (before, after).
fn changed_fields(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<(String, (Value, Value))> {
    let mut changed = Vec::new();
    for (field, value) in after {
        let old = before.get(field).cloned().unwrap_or(Value::Null);
        if &old != value && !(old.is_null() && is_empty(value)) {
            changed.push((field.clone(), (old, value.clone())));
        }
    }
    for (field, value) in before.iter().filter(|(field, _)| !after.contains_key(*field)) {
        if !is_empty(value) {
            changed.push((field.clone(), (value.clone(), Value::Null)));
        }
    }
    changed
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}
