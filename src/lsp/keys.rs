//! What the config's JSON Schema says about a place in a file: the keys a table has, each key's
//! documentation, the values a key takes. The schema is [`crate::config::json_schema`], generated
//! from the config types, so the server, `cascade schema` and taplo read one source.

use std::sync::OnceLock;

use serde_json::Value;

use super::syntax::Segment;

fn root() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(&crate::config::json_schema()).expect("the JSON Schema is JSON"))
}

/// `node` with its references followed (`$ref`, and `allOf` of one, as schemars writes a
/// described reference).
fn resolve(mut node: &'static Value) -> &'static Value {
    for _ in 0..8 {
        if let Some(Value::String(reference)) = node.get("$ref") {
            let name = reference.trim_start_matches("#/definitions/");
            match root()["definitions"].get(name) {
                Some(target) => node = target,
                None => return node,
            }
        } else if let Some(Value::Array(all)) = node.get("allOf")
            && let [only] = all.as_slice()
        {
            node = only;
        } else {
            break;
        }
    }
    node
}

/// The alternatives of `node` (`anyOf`, `oneOf`), or `node` itself, each resolved.
fn alternatives(node: &'static Value) -> Vec<&'static Value> {
    let node = resolve(node);
    match node.get("anyOf").or_else(|| node.get("oneOf")) {
        Some(Value::Array(choices)) => choices.iter().map(resolve).collect(),
        _ => vec![node],
    }
}

/// The schema written for the value at `path` (not resolved: a property keeps its own
/// description), if the config has such a place.
fn at(path: &[Segment]) -> Option<&'static Value> {
    let mut node = root();
    for segment in path {
        node = alternatives(node).into_iter().find_map(|choice| match segment {
            Segment::Key(key) => choice
                .get("properties")
                .and_then(|properties| properties.get(key))
                .or_else(|| choice.get("additionalProperties").filter(|extra| extra.is_object())),
            Segment::Index(_) => choice.get("items"),
        })?;
    }
    Some(node)
}

/// The documentation of the key or value at `path`: its description, default and the values
/// it takes, in Markdown.
pub(crate) fn documentation(path: &[Segment]) -> Option<String> {
    let node = at(path)?;
    let description = node.get("description").or_else(|| resolve(node).get("description"))?.as_str()?;
    let mut text = description.to_owned();
    if let Some(default) = node.get("default").or_else(|| resolve(node).get("default")).filter(|d| is_shown(d)) {
        text.push_str(&format!("\n\nDefault: `{default}`"));
    }
    let values: Vec<String> = values(path).into_iter().map(|(value, _)| format!("`{value}`")).collect();
    if !values.is_empty() {
        text.push_str(&format!("\n\nValues: {}", values.join(", ")));
    }
    Some(text)
}

/// An empty table or list as a default says nothing.
fn is_shown(default: &Value) -> bool {
    match default {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// The keys of the table at `path`, with their descriptions, in the schema's order, each once.
/// Where the table is one of several kinds (a model of a local table, or a remote model), the
/// kinds that have every key of `written` (all, when none has).
pub(crate) fn keys(path: &[Segment], written: &[&str]) -> Vec<(&'static str, &'static str)> {
    let Some(node) = at(path) else { return Vec::new() };
    let kinds: Vec<_> =
        alternatives(node).into_iter().filter_map(|choice| choice.get("properties")?.as_object()).collect();
    let fitting: Vec<_> =
        kinds.iter().filter(|properties| written.iter().all(|key| properties.contains_key(*key))).collect();
    let chosen = if fitting.is_empty() { kinds.iter().collect() } else { fitting };
    let mut keys: Vec<(&'static str, &'static str)> = Vec::new();
    for (key, property) in chosen.into_iter().flat_map(|properties| properties.iter()) {
        if keys.iter().all(|(known, _)| *known != key.as_str()) {
            let description = property.get("description").or_else(|| resolve(property).get("description"));
            keys.push((key.as_str(), description.and_then(Value::as_str).unwrap_or_default()));
        }
    }
    keys
}

/// The values the key at `path` takes, when they are a fixed set (`strategy`, a boolean), as
/// TOML writes them, with their descriptions.
pub(crate) fn values(path: &[Segment]) -> Vec<(String, &'static str)> {
    let Some(node) = at(path) else { return Vec::new() };
    alternatives(node)
        .into_iter()
        .filter_map(|choice| {
            let description = choice.get("description").and_then(Value::as_str).unwrap_or_default();
            match (choice.get("const"), choice.get("type").and_then(Value::as_str)) {
                (Some(Value::String(value)), _) => Some(vec![(format!("\"{value}\""), description)]),
                (_, Some("boolean")) => Some(vec![("true".to_owned(), ""), ("false".to_owned(), "")]),
                _ => None,
            }
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> Vec<Segment> {
        keys.iter().map(|key| key.parse().map_or_else(|_| Segment::Key((*key).to_owned()), Segment::Index)).collect()
    }

    #[test]
    fn every_table_of_the_config_has_its_keys() {
        let names =
            |keys: &[&str]| -> Vec<&str> { super::keys(&path(keys), &[]).into_iter().map(|(k, _)| k).collect() };
        assert_eq!(names(&[]), ["settings", "options", "models", "outbox"]);
        assert_eq!(names(&["outbox"]), ["scopes", "sinks"]);
        assert!(names(&["models", "any"]).starts_with(&["table", "key", "strategy"]));
        assert_eq!(names(&["models", "any", "children", "0"])[..3], ["model", "column", "columns"]);
        assert_eq!(names(&["models", "any", "status"]), ["column", "proceed", "in_progress"]);
        assert_eq!(
            names(&["outbox", "scopes", "s"]),
            ["shard_key", "categories", "sink", "category_sinks", "cells", "cell_sinks"]
        );
        assert!(names(&["models", "any", "table"]).is_empty());
    }

    #[test]
    fn a_model_table_offers_the_keys_of_its_kind() {
        let names = |written: &[&str]| -> Vec<&str> {
            super::keys(&path(&["models", "any"]), written).into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(names(&["remote"]), ["remote", "key", "children"]);
        assert!(!names(&["table"]).contains(&"remote"));
        let both = names(&[]);
        assert!(both.contains(&"remote") && both.contains(&"table"));
        assert_eq!(both.iter().filter(|key| **key == "children").count(), 1, "{both:?}");
    }

    #[test]
    fn keys_are_documented_with_their_default_and_values() {
        assert_eq!(
            documentation(&path(&["models", "m", "strategy"])).unwrap(),
            "How rows are deleted: `per_row` (default) or `bulk`.\n\nValues: `\"per_row\"`, `\"bulk\"`"
        );
        assert_eq!(
            documentation(&path(&["settings", "per_row_chunk_size"])).unwrap(),
            "Default chunk size (rows per transaction) of `per_row` models.\n\nDefault: `100`"
        );
        assert!(documentation(&path(&["models", "m", "nothing"])).is_none());
        let actions: Vec<String> =
            values(&path(&["models", "m", "children", "3", "on_delete"])).into_iter().map(|v| v.0).collect();
        assert_eq!(actions, ["\"delete\"", "\"nullify\"", "\"database\""]);
        assert_eq!(values(&path(&["models", "m", "require_all_references"]))[0].0, "true");
    }
}
