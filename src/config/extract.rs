//! Second phase of loading: the parsed TOML of every file becomes one typed `Config`.

use std::collections::BTreeSet;

use indexmap::IndexMap;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::located::Located;
use super::outbox::{Kafka, MAX_SINK_BATCH_SIZE, MAX_SINK_TIMEOUT, Outbox, Scope, Sink};
use super::read::{Diagnostics, Fields, Node};
use super::remote::{Remote, RemoteModel};
use super::types::{
    Config, IgnoredReference, Key, MAX_RETENTION_KEEP, Model, OnDelete, Relation, Retention, Settings, StatusCheck,
    StatusValue, Strategy,
};
use crate::diagnostic::{Code, Diagnostic, FileId, Location, Sources};

/// Merges the parsed files (in order) into one config.
pub(crate) fn config(files: &[(FileId, &Spanned<DeTable<'_>>)], sources: &Sources, d: &mut Diagnostics) -> Config {
    let mut settings = Vec::new();
    let mut options = Vec::new();
    let mut models = Vec::new();
    let mut scopes = Vec::new();
    let mut sinks = Vec::new();
    for &(file, root) in files {
        let mut top = Fields::new(Location::new(file, 0..0), "the file".to_owned(), [(file, root.get_ref())]);
        section(&mut top, "settings", &mut settings, d);
        section(&mut top, "options", &mut options, d);
        section(&mut top, "models", &mut models, d);
        if let Some(mut outbox) = top.optional("outbox").and_then(|node| node.table_described("[outbox]".to_owned(), d))
        {
            section(&mut outbox, "scopes", &mut scopes, d);
            section(&mut outbox, "sinks", &mut sinks, d);
            outbox.finish(d);
        }
        top.finish(d);
    }

    let first = Location::new(files.first().map_or(0, |f| f.0), 0..0);
    let describe = |location: &Location| sources.describe(location);
    let settings = read_settings(Fields::merged(first.clone(), "[settings]", "setting", settings, describe, d), d);
    let mut unreadable_options = BTreeSet::new();
    let options = Fields::merged(first.clone(), "[options]", "option", options, describe, d)
        .take_names("option", d)
        .into_iter()
        .filter_map(|(name, node)| match node.number(d) {
            Some(value) => Some((name.value, value)),
            None => {
                unreadable_options.insert(name.value);
                None
            }
        })
        .collect();
    let models = Fields::merged(first.clone(), "[models]", "model", models, describe, d);
    let mut unreadable_models = BTreeSet::new();
    let declared = read_named(models, "model", d, read_model, &mut unreadable_models);
    let (mut models, mut remote_models) = (IndexMap::new(), IndexMap::new());
    for (name, model) in declared {
        match model {
            Declared::Local(model) => {
                models.insert(name, *model);
            }
            Declared::Remote(model) => {
                remote_models.insert(name, model);
            }
        }
    }
    let scopes = Fields::merged(first.clone(), "[outbox.scopes]", "scope", scopes, describe, d);
    let scopes = read_named(scopes, "scope", d, read_scope, &mut BTreeSet::new());
    let sinks = Fields::merged(first, "[outbox.sinks]", "sink", sinks, describe, d);
    let mut unreadable_sinks = BTreeSet::new();
    let sinks = read_named(sinks, "sink", d, read_sink, &mut unreadable_sinks);
    Config {
        settings,
        options,
        models,
        remote_models,
        outbox: Outbox { scopes, sinks },
        unreadable_models,
        unreadable_sinks,
        unreadable_options,
    }
}

/// Reads every entry of a table keyed by user-chosen names (models, scopes) with `read`; the names
/// of entries that could not be read go to `unreadable`.
fn read_named<'a, T>(
    mut fields: Fields<'a>,
    noun: &str,
    d: &mut Diagnostics,
    read: impl Fn(Located<String>, Fields<'a>, &mut Diagnostics) -> Option<T>,
    unreadable: &mut BTreeSet<String>,
) -> IndexMap<String, T> {
    fields
        .take_names(noun, d)
        .into_iter()
        .filter_map(|(name, node)| {
            let key = name.value.clone();
            let entry = node.table_described(format!("{noun} `{key}`"), d).and_then(|table| read(name, table, d));
            if entry.is_none() {
                unreadable.insert(key.clone());
            }
            Some((key, entry?))
        })
        .collect()
}

/// Collects the table under `key`, to be merged with the same table of the other files.
fn section<'a>(
    fields: &mut Fields<'a>,
    key: &'static str,
    into: &mut Vec<(FileId, &'a DeTable<'a>)>,
    d: &mut Diagnostics,
) {
    let Some(node) = fields.optional(key) else {
        return;
    };
    match node.value.get_ref() {
        DeValue::Table(table) => into.push((node.file, table)),
        _ => {
            node.table(d);
        }
    }
}

fn read_settings(mut fields: Fields<'_>, d: &mut Diagnostics) -> Settings {
    let mut unsigned = |key| fields.optional(key).and_then(|n| n.unsigned(d));
    let per_row_chunk_size = unsigned("per_row_chunk_size");
    let bulk_chunk_size = unsigned("bulk_chunk_size");
    let retry_delay_seconds = unsigned("retry_delay_seconds");
    let busy_timeout_seconds = unsigned("busy_timeout_seconds");
    let target_chunk_ms = unsigned("target_chunk_ms");
    let max_chunk_size = unsigned("max_chunk_size");
    // 0 attempts would run nothing, a lease of 0 seconds hand every claim to the next worker at
    // once, and a budget of 0 rows stop every application before its first batch.
    let mut positive = |key| fields.optional(key).and_then(|n| n.positive(d));
    let max_attempts = positive("max_attempts");
    let lease_seconds = positive("lease_seconds");
    let run_lease_seconds = positive("run_lease_seconds");
    let inbox_budget_rows = positive("inbox_budget_rows");
    let adaptive = fields.optional("adaptive").and_then(|n| n.boolean(d));
    let database_url = fields.optional("database_url").and_then(|n| n.string(d));
    // Its password is shown nowhere from now on: not in a snippet of this file, not in a log.
    if let Some(url) = &database_url {
        crate::db::register_url_secrets(&url.value);
    }
    let allowed_users = fields.optional("allowed_users").and_then(|n| read_allowed_users(&n, d));
    let retention_interval =
        fields.optional("retention_interval").and_then(|n| duration(&n, "a duration such as \"1d\" or \"6h\"", d));
    let inbox_retention =
        fields.optional("inbox_retention").and_then(|n| duration(&n, "a duration such as \"7d\" or \"12h\"", d));
    let inbox_sweep_interval =
        fields.optional("inbox_sweep_interval").and_then(|n| duration(&n, "a duration such as \"5m\" or \"1h\"", d));
    // Less than a second could stop every application before its first batch.
    let inbox_budget_time = fields.optional("inbox_budget_time").and_then(|n| {
        let time = duration(&n, "a duration such as \"1m\" or \"30s\"", d)?;
        if time.value < std::time::Duration::from_secs(1) {
            n.invalid("`inbox_budget_time` must be at least 1s", "too short", d);
            return None;
        }
        Some(time)
    });
    fields.finish(d);
    Settings {
        per_row_chunk_size,
        bulk_chunk_size,
        database_url,
        max_attempts,
        retry_delay_seconds,
        lease_seconds,
        run_lease_seconds,
        busy_timeout_seconds,
        target_chunk_ms,
        max_chunk_size,
        adaptive,
        allowed_users,
        retention_interval,
        inbox_retention,
        inbox_sweep_interval,
        inbox_budget_rows,
        inbox_budget_time,
    }
}

/// A positive duration written as text (`"90d"`, `"6h"`); `expected` says what one looks like.
fn duration(node: &Node<'_>, expected: &str, d: &mut Diagnostics) -> Option<Located<std::time::Duration>> {
    let text = node.string(d)?;
    match humantime::parse_duration(&text.value) {
        Ok(duration) if !duration.is_zero() => Some(Located::new(duration, text.location)),
        _ => {
            node.invalid(format!("`{}` must be {expected}", node.key), "not a duration", d);
            None
        }
    }
}

/// `allowed_users = ["deploy", "postgres"]`: at least one user, no empty names. `[]` is refused
/// rather than read as "nobody" or "anybody", since people read it both ways.
fn read_allowed_users(node: &Node<'_>, d: &mut Diagnostics) -> Option<Located<Vec<Located<String>>>> {
    let items = node.array(d)?;
    if items.is_empty() {
        node.invalid(
            "`allowed_users` must name at least one user; remove the key to let any user run every command",
            "no user",
            d,
        );
        return None;
    }
    let mut users = Vec::new();
    for item in &items {
        let Some(user) = item.string(d) else { continue };
        if user.value.trim().is_empty() {
            item.invalid("`allowed_users` entries must be user names", "an empty name", d);
            continue;
        }
        users.push(user);
    }
    // A list with a bad entry still restricts who may run destructive commands to the good ones
    // (the config has errors, so nothing runs anyway).
    Some(Located::new(users, node.location()))
}

/// An entry of `[models]`: a model of a local table, or a remote model.
enum Declared {
    Local(Box<Model>),
    Remote(RemoteModel),
}

fn read_model(name: Located<String>, mut fields: Fields<'_>, d: &mut Diagnostics) -> Option<Declared> {
    if fields.has("remote") {
        fields.describe_as(format!("remote model `{}`", name.value));
        return read_remote_model(name, fields, d).map(Declared::Remote);
    }
    let table = fields.required("table", d).and_then(|n| n.identifier(d));
    let key = fields.optional("key").and_then(|n| read_key(&n, d));
    let strategy = fields.optional("strategy").and_then(|n| strategy(&n, d));
    let chunk_size = fields.optional("chunk_size").and_then(|n| n.unsigned(d));
    let rate_limit = fields.optional("rate_limit").and_then(|n| n.name("option", d));
    let status = fields.optional("status").and_then(|n| read_status(n.table(d)?, d));
    let outbox = fields.optional("outbox").and_then(|n| n.name("category", d));
    let outbox_payload = fields.optional("outbox_payload").map_or_else(Vec::new, |n| n.array_of(d, Node::identifier));
    let children = fields.optional("children").map_or_else(Vec::new, |n| n.array_of(d, read_relation));
    let require_all_references = fields.optional("require_all_references").and_then(|n| n.boolean(d));
    let ignore_references =
        fields.optional("ignore_references").map_or_else(Vec::new, |n| n.array_of(d, read_ignored_reference));
    let retention = fields.optional("retention").and_then(|n| read_retention(&n, d));
    fields.finish(d);
    Some(Declared::Local(Box::new(Model {
        name,
        table: table?,
        key,
        strategy,
        chunk_size,
        rate_limit,
        status,
        outbox,
        outbox_payload,
        children,
        require_all_references,
        ignore_references,
        retention,
    })))
}

/// A remote model: `remote = { category = "..." }`, an optional one-column `key`, and
/// `children`.
fn read_remote_model(name: Located<String>, mut fields: Fields<'_>, d: &mut Diagnostics) -> Option<RemoteModel> {
    let remote = fields.optional("remote")?;
    let key = fields.optional("key").and_then(|n| read_key(&n, d));
    let children = fields.optional("children").map_or_else(Vec::new, |n| n.array_of(d, read_relation));
    fields.finish(d);
    // A tombstone carries one key value: a relation names the one column that holds it.
    let children = children.into_iter().filter(|relation| {
        let problem = if relation.references.is_some() {
            Some("`references`: a tombstone carries the remote model's key only")
        } else if relation.columns().len() > 1 {
            Some("several columns: a tombstone carries one key value")
        } else {
            None
        };
        if let Some(problem) = problem {
            d.push(
                Diagnostic::new(
                    Code::InvalidValue,
                    relation.location.clone(),
                    format!("a remote model's relation names one `column`, without {problem}"),
                )
                .label("not a relation of a remote model"),
            );
        }
        problem.is_none()
    });
    let children: Vec<Relation> = children.collect();
    let mut remote_fields = remote.table(d)?;
    let category = remote_fields.required("category", d).and_then(|n| n.name("category", d));
    remote_fields.finish(d);
    if let Some(key) = key.as_ref().filter(|key| key.value.single().is_none()) {
        d.push(
            Diagnostic::new(
                Code::InvalidValue,
                key.location.clone(),
                "a remote model's `key` is one column: a tombstone carries one key value".to_owned(),
            )
            .label("several columns"),
        );
        return None;
    }
    Some(RemoteModel { name, remote: Remote { location: remote.location(), category: category? }, key, children })
}

/// `retention = { keep = "90d", column = "entered_at" }`.
fn read_retention(node: &Node<'_>, d: &mut Diagnostics) -> Option<Retention> {
    let mut fields = node.table(d)?;
    let keep = fields.required("keep", d).and_then(|n| {
        let keep = duration(&n, "a duration such as \"90d\" or \"26weeks\"", d)?;
        if keep.value > MAX_RETENTION_KEEP {
            n.invalid("`keep` must be at most 50 years: now minus `keep` must stay after 1970", "too long", d);
            return None;
        }
        Some(keep)
    });
    let column = fields.required("column", d).and_then(|n| n.identifier(d));
    fields.finish(d);
    Some(Retention { location: node.location(), keep: keep?, column: column? })
}

/// `key = "id"` or `key = ["playlist_id", "track_id"]`.
fn read_key(node: &Node<'_>, d: &mut Diagnostics) -> Option<Located<Key>> {
    let location = node.location();
    if !matches!(node.value.get_ref(), DeValue::Array(_)) {
        return node.identifier(d).map(|column| Located::new(Key::Column(column.value), location));
    }
    let columns: Vec<String> = node.array_of(d, Node::identifier).into_iter().map(|c| c.value).collect();
    match columns.len() {
        0 => {
            node.invalid("`key` must name at least one column", "an empty key", d);
            None
        }
        1 => Some(Located::new(Key::Column(columns[0].clone()), location)),
        _ => Some(Located::new(Key::Composite(columns), location)),
    }
}

fn strategy(node: &Node<'_>, d: &mut Diagnostics) -> Option<Located<Strategy>> {
    node.keyword(Strategy::NAMES, Strategy::parse, d)
}

fn read_relation(node: &Node<'_>, d: &mut Diagnostics) -> Option<Relation> {
    let mut fields = node.table(d)?;
    let model = fields.required("model", d).and_then(|n| n.name("model", d));
    let read = read_columns(&mut fields, d);
    let references = fields.optional("references").and_then(|n| read_key(&n, d));
    let on_delete = fields.optional("on_delete").and_then(|n| n.keyword(OnDelete::NAMES, OnDelete::parse, d));
    let strategy = fields.optional("strategy").and_then(|n| strategy(&n, d));
    let chunk_size = fields.optional("chunk_size").and_then(|n| n.unsigned(d));
    fields.finish(d);
    let (column, columns) = read?;
    let count = column.as_ref().map_or_else(|| columns.as_ref().map_or(0, Vec::len), |_| 1);
    if let Some(references) = references.as_ref().filter(|references| references.value.columns().len() != count) {
        d.push(
            Diagnostic::new(
                Code::InvalidValue,
                references.location.clone(),
                format!(
                    "`references` names {} column(s) for the relation's {count}: each column of the relation \
                     references one column of the parent",
                    references.value.columns().len()
                ),
            )
            .label("not as many columns as the relation's"),
        );
        return None;
    }
    Some(Relation {
        location: node.location(),
        model: model?,
        column,
        columns,
        references,
        on_delete,
        strategy,
        chunk_size,
    })
}

/// `column = "a"` or `columns = ["a", "b"]` (one of them, the columns different and at least
/// one), for a relation or an ignored reference; `None` when neither reads.
#[allow(clippy::type_complexity)]
fn read_columns(
    fields: &mut Fields<'_>,
    d: &mut Diagnostics,
) -> Option<(Option<Located<String>>, Option<Vec<Located<String>>>)> {
    let column = fields.optional("column");
    let columns = fields.optional("columns");
    match (column, columns) {
        (Some(column), None) => Some((Some(column.identifier(d)?), None)),
        (None, Some(node)) => {
            let columns = node.array_of(d, Node::identifier);
            let mut seen = std::collections::HashSet::new();
            if let Some(again) = columns.iter().find(|column| !seen.insert(column.value.as_str())) {
                d.push(
                    Diagnostic::new(
                        Code::InvalidValue,
                        again.location.clone(),
                        format!("`{}` is named twice", again.value),
                    )
                    .label("named twice in `columns`"),
                );
                return None;
            }
            if columns.is_empty() {
                node.invalid("`columns` must name at least one column", "no column", d);
                return None;
            }
            Some((None, Some(columns)))
        }
        (Some(_), Some(node)) => {
            node.invalid("a relation names `column` or `columns`, not both", "`column` is given too", d);
            None
        }
        (None, None) => {
            fields.missing_one_of(&["column", "columns"], d);
            None
        }
    }
}

fn read_status(mut fields: Fields<'_>, d: &mut Diagnostics) -> Option<StatusCheck> {
    let column = fields.required("column", d).and_then(|n| n.identifier(d));
    let proceed = fields.required("proceed", d).and_then(|n| {
        let values = n.array_of(d, status_value);
        if values.is_empty() {
            n.invalid("`proceed` must list at least one status", "no status may proceed", d);
            return None;
        }
        Some(values)
    });
    let in_progress = fields.required("in_progress", d).and_then(|n| status_value(&n, d));
    fields.finish(d);
    Some(StatusCheck { column: column?, proceed: proceed?, in_progress: in_progress? })
}

fn status_value(node: &Node<'_>, d: &mut Diagnostics) -> Option<Located<StatusValue>> {
    match node.value.get_ref() {
        DeValue::Integer(_) => node.integer(d).map(|i| Located::new(StatusValue::Integer(i.value), i.location)),
        DeValue::String(_) => node.string(d).map(|s| Located::new(StatusValue::Text(s.value), s.location)),
        _ => {
            node.invalid(
                format!("`{}` values must be integers or strings", node.key),
                "expected an integer or a string",
                d,
            );
            None
        }
    }
}

fn read_ignored_reference(node: &Node<'_>, d: &mut Diagnostics) -> Option<IgnoredReference> {
    let mut fields = node.table(d)?;
    let table = fields.required("table", d).and_then(|n| n.identifier(d));
    let read = read_columns(&mut fields, d);
    let reason = fields.required("reason", d).and_then(|n| n.string(d));
    fields.finish(d);
    let (column, columns) = read?;
    Some(IgnoredReference { table: table?, column, columns, reason: reason? })
}

fn read_scope(name: Located<String>, mut fields: Fields<'_>, d: &mut Diagnostics) -> Option<Scope> {
    let shard_key = fields.required("shard_key", d).and_then(|n| n.identifier(d));
    let categories =
        fields.optional("categories").map_or_else(Vec::new, |n| n.array_of(d, |item, d| item.name("category", d)));
    let sink = fields.optional("sink").and_then(|n| n.name("sink", d));
    let category_sinks =
        fields.optional("category_sinks").map_or_else(IndexMap::new, |n| string_table(&n, Some("category"), d));
    let cells = fields.optional("cells").map_or_else(Vec::new, |n| {
        n.array_of(d, |item, d| {
            let cell = item.name("cell", d)?;
            if cell.value.is_empty() {
                item.invalid("a cell needs a name", "an empty cell name", d);
                return None;
            }
            Some(cell)
        })
    });
    let cell_sinks = fields.optional("cell_sinks").map_or_else(IndexMap::new, |n| string_table(&n, Some("cell"), d));
    fields.finish(d);
    Some(Scope { name, shard_key: shard_key?, categories, sink, category_sinks, cells, cell_sinks })
}

/// A sink whose `command` or `url` has errors is left out (`None`), so that no rule reports it
/// as having no target as well.
fn read_sink(name: Located<String>, mut fields: Fields<'_>, d: &mut Diagnostics) -> Option<Sink> {
    let (command_node, url_node) = (fields.optional("command"), fields.optional("url"));
    let command = command_node.as_ref().and_then(|n| {
        let words: Vec<String> = n.array_of(d, Node::string).into_iter().map(|w| w.value).collect();
        if words.is_empty() {
            // Anything but `[]` was reported already (not an array, or items not strings).
            if matches!(n.value.get_ref(), DeValue::Array(items) if items.is_empty()) {
                n.invalid("`command` must name a program", "an empty command", d);
            }
            return None;
        }
        Some(Located::new(words, n.location()))
    });
    let url = url_node.as_ref().and_then(|n| {
        let url = n.string(d)?;
        if !(url.value.starts_with("http://") || url.value.starts_with("https://")) {
            n.invalid("`url` must be an http:// or https:// URL", "not an http(s) URL", d);
            return None;
        }
        Some(url)
    });
    let kafka_node = fields.optional("kafka");
    let kafka = kafka_node.as_ref().and_then(|n| read_kafka(n, d));
    let headers = fields.optional("headers").map_or_else(IndexMap::new, |n| string_table(&n, None, d));
    let env = fields.optional("env").map_or_else(Vec::new, |n| n.array_of(d, Node::string));
    let timeout = fields.optional("timeout").and_then(|n| {
        let text = n.string(d)?;
        match humantime::parse_duration(&text.value) {
            Ok(duration) if !duration.is_zero() && duration <= MAX_SINK_TIMEOUT => {
                Some(Located::new(duration, text.location))
            }
            _ => {
                n.invalid(
                    "`timeout` must be a duration such as \"30s\" or \"2m\", at most 24h",
                    "not a duration up to 24h",
                    d,
                );
                None
            }
        }
    });
    let batch_size = fields.optional("batch_size").and_then(|n| {
        let size = n.unsigned(d)?;
        if size.value == 0 || size.value > MAX_SINK_BATCH_SIZE {
            n.invalid(
                format!("`batch_size` must be from 1 to {MAX_SINK_BATCH_SIZE}"),
                "messages per delivery out of range",
                d,
            );
            return None;
        }
        Some(size)
    });
    fields.finish(d);
    let unreadable_target = (command_node.is_some() && command.is_none())
        || (url_node.is_some() && url.is_none())
        || (kafka_node.is_some() && kafka.is_none());
    if unreadable_target {
        return None;
    }
    Some(Sink { name, command, url, kafka, headers, env, timeout, batch_size })
}

/// `kafka = { brokers, topic, properties }`; `None` (reported) when it cannot be used.
fn read_kafka(node: &Node<'_>, d: &mut Diagnostics) -> Option<Located<Kafka>> {
    let mut fields = node.table(d)?;
    let brokers = fields.required("brokers", d).and_then(|n| {
        let brokers = n.string(d)?;
        if brokers.value.trim().is_empty() {
            n.invalid("`brokers` must name at least one broker, such as \"kafka-1:9092\"", "no broker", d);
            return None;
        }
        Some(brokers)
    });
    let topic = fields.optional("topic").and_then(|n| n.string(d));
    let properties = fields.optional("properties").map_or_else(IndexMap::new, |n| {
        let Some(mut properties) = n.table(d) else { return IndexMap::new() };
        properties
            .take_all()
            .into_iter()
            .filter_map(|(key, value)| {
                let text = match value.value.get_ref() {
                    DeValue::Integer(_) => value.integer(d).map(|n| n.value.to_string()),
                    DeValue::Boolean(flag) => Some(flag.to_string()),
                    _ => value.string(d).map(|text| text.value),
                }?;
                Some((key.value, Located::new(text, value.location())))
            })
            .collect()
    });
    fields.finish(d);
    Some(Located::new(Kafka { brokers: brokers?, topic, properties }, node.location()))
}

/// A table of user-chosen keys with string values (`headers`); with `names`, a table from names
/// of `names` (categories, cells) to sink names, all checked as names (`category_sinks`).
fn string_table(node: &Node<'_>, names: Option<&str>, d: &mut Diagnostics) -> IndexMap<String, Located<String>> {
    let Some(mut fields) = node.table(d) else {
        return IndexMap::new();
    };
    let entries = match names {
        Some(noun) => fields.take_names(noun, d),
        None => fields.take_all(),
    };
    let value =
        |node: Node<'_>, d: &mut Diagnostics| if names.is_some() { node.name("sink", d) } else { node.string(d) };
    entries.into_iter().filter_map(|(key, node)| Some((key.value, value(node, d)?))).collect()
}
