//! Changes to the models themselves: added, removed, and what each declares about its own rows.

use serde_json::json;

use super::{ChangeKind as Kind, Draft, Found, Severity};
use crate::config::{Config, Model, Retention, StatusCheck, Strategy};

pub(super) fn compare(found: &mut Found<'_>) {
    let (base, head) = (found.base.config, found.head.config);
    for (name, model) in &head.models {
        match base.models.get(name) {
            Some(before) => compare_model(found, name, before, model),
            None => added(found, name, model),
        }
    }
    for (name, model) in base.models.iter().filter(|(name, _)| !head.models.contains_key(*name)) {
        let draft = Draft::new(
            Severity::Attention,
            Kind::ModelRemoved,
            format!(
                "`{name}` ({}) is no longer declared: no deletion deletes its rows, and a deletion of a model it was \
                 a child of keeps them (or is refused by their foreign key)",
                model.table.value
            ),
        )
        .model(name)
        .values(&model.table.value, ());
        found.add(draft, None, Some(&model.name.location));
    }
}

fn added(found: &mut Found<'_>, name: &str, model: &Model) {
    let draft = Draft::new(
        Severity::Safe,
        Kind::ModelAdded,
        format!(
            "`{name}` ({}) is declared: its rows are deleted where a relation names it, and it can be a deletion's root",
            model.table.value
        ),
    )
    .model(name)
    .values((), &model.table.value);
    found.add(draft, Some(&model.name.location), None);
    // What a new model does on its own, without any relation: prune partitions.
    if let Some(retention) = &model.retention {
        let draft = Draft::new(
            Severity::Destructive,
            Kind::RetentionChanged,
            format!(
                "partitions of `{}` older than {} are dropped by `partitions prune` and the worker",
                model.table.value,
                retention.keep_text()
            ),
        )
        .model(name)
        .values((), retention_value(retention));
        found.add(draft, Some(&retention.location), None);
    }
}

fn compare_model(found: &mut Found<'_>, name: &str, before: &Model, after: &Model) {
    let (base, head) = (found.base.config, found.head.config);
    if before.table.value != after.table.value {
        let draft = Draft::new(
            Severity::Destructive,
            Kind::TableChanged,
            format!("`{name}` deletes from `{}` instead of `{}`: other rows", after.table.value, before.table.value),
        )
        .model(name)
        .values(&before.table.value, &after.table.value);
        found.add(draft, Some(&after.table.location), None);
    }
    let (key_before, key_after) = (key(before), key(after));
    if key_before != key_after {
        let draft = Draft::new(
            Severity::Destructive,
            Kind::KeyChanged,
            format!(
                "`{name}` rows are found and deleted by ({}) instead of ({}): its relations match other rows",
                key_after.join(", "),
                key_before.join(", ")
            ),
        )
        .model(name)
        .values(&key_before, &key_after);
        let location = after.key.as_ref().map_or(&after.name.location, |key| &key.location);
        found.add(draft, Some(location), None);
    }
    let (strategy_before, strategy_after) = (strategy(before), strategy(after));
    if strategy_before != strategy_after {
        let draft = Draft::new(
            Severity::Safe,
            Kind::StrategyChanged,
            format!(
                "`{name}` rows go {} instead of {}: the same rows",
                describe_strategy(strategy_after),
                describe_strategy(strategy_before)
            ),
        )
        .model(name)
        .values(strategy_before.as_str(), strategy_after.as_str());
        let location = after.strategy.as_ref().map_or(&after.name.location, |s| &s.location);
        found.add(draft, Some(location), None);
    }
    let (chunk_before, chunk_after) = (chunk_size(base, before), chunk_size(head, after));
    let declared = (before.chunk_size.as_ref().map(|c| c.value), after.chunk_size.as_ref().map(|c| c.value));
    // A default that moved with the strategy or with `[settings]` is reported there.
    if declared.0 != declared.1 && chunk_before != chunk_after {
        let draft = Draft::new(
            Severity::Safe,
            Kind::ChunkSizeChanged,
            format!("`{name}` deletes {chunk_after} rows per transaction instead of {chunk_before}: the same rows"),
        )
        .model(name)
        .values(chunk_before, chunk_after);
        let location = after.chunk_size.as_ref().map_or(&after.name.location, |c| &c.location);
        found.add(draft, Some(location), None);
    }
    let rate = |model: &Model| model.rate_limit.as_ref().map(|r| r.value.clone());
    if rate(before) != rate(after) {
        let reason = match rate(after) {
            Some(option) => format!("`{name}` deletions are paced by the option `{option}`: the same rows"),
            None => format!("`{name}` deletions are no longer rate-limited: the same rows, faster"),
        };
        let draft =
            Draft::new(Severity::Safe, Kind::RateLimitChanged, reason).model(name).values(rate(before), rate(after));
        let location = after.rate_limit.as_ref().map_or(&after.name.location, |r| &r.location);
        found.add(draft, Some(location), None);
    }
    compare_status(found, name, before, after);
    compare_outbox(found, name, before, after);
    compare_retention(found, name, before, after);
    compare_reference_checks(found, name, before, after);
}

fn compare_status(found: &mut Found<'_>, name: &str, before: &Model, after: &Model) {
    let (severity, reason) = match (&before.status, &after.status) {
        (None, None) => return,
        (Some(_), None) => (
            Severity::Destructive,
            format!(
                "`{name}` roots are deleted whatever their status: the guard that skipped (cancelled) some is gone"
            ),
        ),
        (None, Some(status)) => (
            Severity::Attention,
            format!(
                "`{name}` roots whose `{}` is not in {} are skipped, and their scheduled deletions dropped",
                status.column.value,
                proceed_text(status)
            ),
        ),
        (Some(old), Some(new)) => {
            let (old_values, new_values) = (statuses(old), statuses(new));
            if old.column.value != new.column.value {
                (
                    Severity::Destructive,
                    format!(
                        "`{name}` roots are guarded by `{}` instead of `{}`: other roots go",
                        new.column.value, old.column.value
                    ),
                )
            } else if let Some(widened) = new_values.iter().find(|value| !old_values.contains(value)) {
                (
                    Severity::Destructive,
                    format!("`{name}` roots with status {widened} are deleted too (proceed {})", proceed_text(new)),
                )
            } else if old_values.iter().any(|value| !new_values.contains(value)) {
                (
                    Severity::Attention,
                    format!(
                        "`{name}` roots with a status no longer in proceed {} are skipped, and their scheduled \
                         deletions dropped",
                        proceed_text(new)
                    ),
                )
            } else if old.in_progress.value != new.in_progress.value {
                (
                    Severity::Attention,
                    format!(
                        "`{name}` roots are marked {} while they are deleted, instead of {}",
                        json!(new.in_progress.value),
                        json!(old.in_progress.value)
                    ),
                )
            } else {
                return;
            }
        }
    };
    let draft = Draft::new(severity, Kind::StatusChanged, reason).model(name).values(&before.status, &after.status);
    let location = after.status.as_ref().map_or(&after.name.location, |status| &status.column.location);
    found.add(draft, Some(location), None);
}

fn compare_outbox(found: &mut Found<'_>, name: &str, before: &Model, after: &Model) {
    let category = |model: &Model| model.outbox.as_ref().map(|c| c.value.clone());
    let (old, new) = (category(before), category(after));
    if old != new {
        let reason = match (&old, &new) {
            (None, Some(category)) => format!("each deleted `{name}` row writes a `{category}` tombstone"),
            (Some(category), None) => {
                format!("deleted `{name}` rows write no `{category}` tombstone: its sinks no longer hear of them")
            }
            (_, _) => format!(
                "deleted `{name}` rows write `{}` tombstones instead of `{}`: other sinks and shards hear of them",
                new.as_deref().unwrap_or_default(),
                old.as_deref().unwrap_or_default()
            ),
        };
        let draft = Draft::new(Severity::Attention, Kind::OutboxChanged, reason).model(name).values(&old, &new);
        let location = after.outbox.as_ref().map_or(&after.name.location, |c| &c.location);
        found.add(draft, Some(location), None);
    }
    let payload = |model: &Model| model.outbox_payload.iter().map(|c| c.value.clone()).collect::<Vec<_>>();
    if payload(before) != payload(after) {
        let draft = Draft::new(
            Severity::Attention,
            Kind::PayloadChanged,
            format!(
                "`{name}` tombstones carry ({}) instead of ({})",
                payload(after).join(", "),
                payload(before).join(", ")
            ),
        )
        .model(name)
        .values(payload(before), payload(after));
        let location = after.outbox_payload.first().map_or(&after.name.location, |c| &c.location);
        found.add(draft, Some(location), None);
    }
}

fn compare_retention(found: &mut Found<'_>, name: &str, before: &Model, after: &Model) {
    let (severity, reason) = match (&before.retention, &after.retention) {
        (None, None) => return,
        (None, Some(new)) => (
            Severity::Destructive,
            format!("partitions of `{}` older than {} are dropped", after.table.value, new.keep_text()),
        ),
        (Some(old), None) => (
            Severity::Attention,
            format!(
                "partitions of `{}` are kept: nothing drops them after {} any more",
                after.table.value,
                old.keep_text()
            ),
        ),
        (Some(old), Some(new)) if old.column.value != new.column.value => (
            Severity::Destructive,
            format!(
                "partitions of `{}` are dropped by their `{}` range instead of `{}`",
                after.table.value, new.column.value, old.column.value
            ),
        ),
        (Some(old), Some(new)) if new.keep.value < old.keep.value => (
            Severity::Destructive,
            format!(
                "partitions of `{}` are dropped after {} instead of {}: more rows go",
                after.table.value,
                new.keep_text(),
                old.keep_text()
            ),
        ),
        (Some(old), Some(new)) if new.keep.value > old.keep.value => (
            Severity::Attention,
            format!(
                "partitions of `{}` are kept {} instead of {}",
                after.table.value,
                new.keep_text(),
                old.keep_text()
            ),
        ),
        (Some(_), Some(_)) => return,
    };
    let draft = Draft::new(severity, Kind::RetentionChanged, reason)
        .model(name)
        .values(before.retention.as_ref().map(retention_value), after.retention.as_ref().map(retention_value));
    let location = after.retention.as_ref().map_or(&after.name.location, |r| &r.location);
    found.add(draft, Some(location), None);
}

fn compare_reference_checks(found: &mut Found<'_>, name: &str, before: &Model, after: &Model) {
    let required = |model: &Model| model.require_all_references.as_ref().is_some_and(|r| r.value);
    if required(before) != required(after) {
        let (severity, reason) = if required(after) {
            (Severity::Safe, format!("every foreign key to `{}` must be a relation or ignored", after.table.value))
        } else {
            (
                Severity::Attention,
                format!("foreign keys to `{}` are no longer all required to be relations", after.table.value),
            )
        };
        let draft = Draft::new(severity, Kind::ReferencesCheckChanged, reason)
            .model(name)
            .values(required(before), required(after));
        let location = after.require_all_references.as_ref().map_or(&after.name.location, |r| &r.location);
        found.add(draft, Some(location), None);
    }
    let ignored = |model: &Model| -> Vec<String> {
        model
            .ignore_references
            .iter()
            .map(|ignored| format!("{}.{}", ignored.table.value, ignored.column_names().join(",")))
            .collect()
    };
    let (old, new) = (ignored(before), ignored(after));
    for added in new.iter().filter(|reference| !old.contains(reference)) {
        let entry = after
            .ignore_references
            .iter()
            .find(|i| &format!("{}.{}", i.table.value, i.column_names().join(",")) == added);
        let draft = Draft::new(
            Severity::Attention,
            Kind::ReferencesCheckChanged,
            format!(
                "the foreign key {added} to `{}` is ignored: a deletion no longer refuses over it, and leaves its rows",
                after.table.value
            ),
        )
        .model(name)
        .values((), added);
        found.add(draft, entry.map(|entry| &entry.table.location), None);
    }
    for removed in old.iter().filter(|reference| !new.contains(reference)) {
        let draft = Draft::new(
            Severity::Safe,
            Kind::ReferencesCheckChanged,
            format!("the foreign key {removed} to `{}` is no longer ignored: it must be a relation", after.table.value),
        )
        .model(name)
        .values(removed, ());
        found.add(draft, Some(&after.name.location), None);
    }
}

fn key(model: &Model) -> Vec<String> {
    model.key.as_ref().map_or_else(|| vec!["id".to_owned()], |key| key.value.columns())
}

fn strategy(model: &Model) -> Strategy {
    model.strategy.as_ref().map_or(Strategy::PerRow, |s| s.value)
}

/// A model's own chunk size: declared, else `[settings]`' default for its strategy.
fn chunk_size(config: &Config, model: &Model) -> u64 {
    model.chunk_size.as_ref().map_or_else(|| config.settings.chunk_size(strategy(model)), |c| c.value)
}

pub(super) fn describe_strategy(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::PerRow => "row by row (per_row)",
        Strategy::Bulk => "set-based (bulk)",
    }
}

fn statuses(status: &StatusCheck) -> Vec<serde_json::Value> {
    status.proceed.iter().map(|value| json!(value.value)).collect()
}

fn proceed_text(status: &StatusCheck) -> String {
    let values: Vec<String> = statuses(status).iter().map(ToString::to_string).collect();
    format!("[{}]", values.join(", "))
}

fn retention_value(retention: &Retention) -> serde_json::Value {
    json!({ "keep": retention.keep_text(), "column": retention.column.value })
}
