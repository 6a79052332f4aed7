//! Hover: on a model, its table, key, strategy and what deleting one of its rows does (the
//! plan's steps, what it deletes and nullifies); on a remote model, its category and what a
//! tombstone deletes and nullifies; on an outbox category or an option, where it is
//! registered and who uses it; on any other key or value, the key's documentation from the JSON
//! Schema.

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};

use super::analysis::Analysis;
use super::keys;
use super::symbols::Kind;
use super::syntax::Segment;
use crate::config::{Key, OnDelete, Relation, RemoteModel, describe_columns};
use crate::diagnostic::FileId;

pub(crate) fn hover(analysis: &Analysis, file: FileId, offset: usize) -> Option<Hover> {
    let (text, span) = match analysis.symbols.at(file, offset) {
        Some(name) if matches!(name.kind, Kind::Model | Kind::Category | Kind::Option) => {
            let text = match name.kind {
                Kind::Model => model(analysis, &name.name),
                Kind::Category => category(analysis, &name.name),
                _ => option(analysis, &name.name),
            };
            (text, name.span.clone())
        }
        _ => {
            let token = analysis.files[file].syntax.at(offset)?;
            (documentation(token.path())?, token.span().clone())
        }
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: text }),
        range: Some(analysis.range(file, &span)),
    })
}

/// The documentation of the key a path ends in (an item of a list: the list's key), titled.
fn documentation(path: &[Segment]) -> Option<String> {
    let end = path.iter().rposition(|segment| matches!(segment, Segment::Key(_)))?;
    let key = path[end].key()?;
    let text = keys::documentation(&path[..=end])?;
    Some(format!("**`{key}`**\n\n{text}"))
}

fn model(analysis: &Analysis, name: &str) -> String {
    let config = &analysis.loaded.config;
    if let Some(model) = config.remote_models.get(name) {
        return remote_model(model);
    }
    let Some(model) = config.model(name) else {
        return format!("**model `{name}`** is not declared, or has errors");
    };
    let key = key_text(model.key.as_ref().map(|key| &key.value));
    let strategy = match &model.strategy {
        Some(strategy) => format!("`{}`", strategy.value.as_str()),
        None => "`per_row` (default)".to_owned(),
    };
    let mut text = format!("**model `{name}`**: table `{}`, key {key}, strategy {strategy}", model.table.value);
    let Some(checked) = &analysis.checked else {
        text.push_str("\n\nNo plan while the config has errors.");
        return text;
    };
    match crate::planner::compile(checked, name) {
        Ok(plan) => {
            let steps = plan.steps();
            let mut deleted: Vec<String> = Vec::new();
            let mut nullified: Vec<String> = Vec::new();
            for step in &steps {
                let (list, entry) = match step.action {
                    OnDelete::Delete => (&mut deleted, format!("`{}`", step.model)),
                    OnDelete::Database => (&mut deleted, format!("`{}` (by the database)", step.model)),
                    OnDelete::Nullify => {
                        (&mut nullified, format!("`{}.{}`", step.model, describe_columns(&step.columns)))
                    }
                };
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
            let plural = if steps.len() == 1 { "" } else { "s" };
            text.push_str(&format!(
                "\n\nDeleting its rows takes {} step{plural}: deletes {}",
                steps.len(),
                deleted.join(", ")
            ));
            if !nullified.is_empty() {
                text.push_str(&format!("; nullifies {}", nullified.join(", ")));
            }
        }
        Err(error) => text.push_str(&format!("\n\nNo plan: {error}")),
    }
    text
}

/// A model's key as a hover writes it.
fn key_text(key: Option<&Key>) -> String {
    match key {
        Some(Key::Column(column)) => format!("`{column}`"),
        Some(Key::Composite(columns)) => format!("`({})`", columns.join(", ")),
        None => "`id` (default)".to_owned(),
    }
}

/// A remote model: where its deletions come from and what each tombstone does here.
fn remote_model(model: &RemoteModel) -> String {
    let key = key_text(model.key.as_ref().map(|key| &key.value));
    let mut text = format!(
        "**remote model `{}`**: its rows live in another database, whose `{}` tombstones reach this one's \
         inbox; key {key}",
        model.name.value, model.remote.category.value
    );
    let (deleted, nullified): (Vec<&Relation>, Vec<&Relation>) =
        model.children.iter().partition(|relation| relation.action() != OnDelete::Nullify);
    let names = |relations: Vec<&Relation>, columns: bool| -> Vec<String> {
        relations
            .iter()
            .map(|relation| match columns {
                true => format!("`{}.{}`", relation.model.value, relation.describe_columns()),
                false => format!("`{}`", relation.model.value),
            })
            .collect()
    };
    let mut parts = Vec::new();
    if !deleted.is_empty() {
        parts.push(format!(
            "deletes the rows of {} that name its key, each with its own cascade",
            names(deleted, false).join(", ")
        ));
    }
    if !nullified.is_empty() {
        parts.push(format!("nullifies {}", names(nullified, true).join(", ")));
    }
    if !parts.is_empty() {
        text.push_str(&format!("\n\nApplying a tombstone {}", parts.join("; ")));
    }
    text
}

fn category(analysis: &Analysis, name: &str) -> String {
    let config = &analysis.loaded.config;
    let scopes: Vec<String> = config
        .outbox
        .scopes
        .values()
        .filter(|scope| scope.categories.iter().any(|c| c.value == name))
        .map(|scope| format!("`{}` (shard key `{}`)", scope.name.value, scope.shard_key.value))
        .collect();
    let writers: Vec<String> = config
        .models
        .values()
        .filter(|model| model.outbox.as_ref().is_some_and(|c| c.value == name))
        .map(|model| format!("`{}`", model.name.value))
        .collect();
    let registered = match scopes.as_slice() {
        [] => "registered in no scope".to_owned(),
        _ => format!("registered in scope {}", scopes.join(", ")),
    };
    let written = match writers.as_slice() {
        [] => "written by no model".to_owned(),
        _ => format!("written by {}", writers.join(", ")),
    };
    format!("**outbox category `{name}`**: {registered}; {written}")
}

fn option(analysis: &Analysis, name: &str) -> String {
    let config = &analysis.loaded.config;
    let value = config.options.get(name).map_or_else(|| "not declared".to_owned(), |v| format!("= {}", v.value));
    let users: Vec<String> = config
        .models
        .values()
        .filter(|model| model.rate_limit.as_ref().is_some_and(|o| o.value == name))
        .map(|model| format!("`{}`", model.name.value))
        .collect();
    let used = match users.as_slice() {
        [] => "the rate limit of no model".to_owned(),
        _ => format!("the rate limit of {}", users.join(", ")),
    };
    format!("**option `{name}`** {value} (rows per second; a `cascade_option` row overrides it): {used}")
}
