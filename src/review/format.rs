//! A review as people and machines read it: a terminal report, a markdown pull-request comment,
//! JSON, and GitHub workflow annotations.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::markdown::{cell, code};
use super::{Change, Counted, Review, Severity};
use crate::diagnostic::github_escape::{data as escape_data, property as escape_property};
use crate::diagnostic::text::shown;

/// The hidden marker that finds a review's pull-request comment again, so it is updated rather
/// than posted twice.
pub const MARKER: &str = "<!-- cascade-diff -->";

/// How `cascade diff` prints a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    /// For a terminal.
    Human,
    /// A pull-request comment (starts with [`MARKER`]).
    Markdown,
    /// `{"changes": [...], "counts": {...}}`.
    Json,
    /// GitHub Actions workflow annotations, one per change.
    Github,
}

/// What the counts were taken of, for the reports' headings.
#[derive(Debug, Clone)]
pub struct CountedRoots<'a> {
    /// The root model.
    pub model: &'a str,
    /// Its ids.
    pub ids: &'a [String],
    /// Both sides' counts.
    pub counts: &'a Counted,
}

impl Review {
    /// The review in `format`; `counts` when a database counted both sides.
    pub fn render(&self, format: DiffFormat, counts: Option<&CountedRoots<'_>>) -> String {
        match format {
            DiffFormat::Human => self.human(counts),
            DiffFormat::Markdown => self.markdown(counts),
            DiffFormat::Json => self.json(counts),
            DiffFormat::Github => self.github(),
        }
    }

    pub(super) fn summary(&self) -> String {
        if self.changes.is_empty() {
            return "no change to deletions".to_owned();
        }
        let counts: Vec<String> = [Severity::Destructive, Severity::Attention, Severity::Safe]
            .into_iter()
            .map(|severity| format!("{} {}", self.count(severity), severity.as_str()))
            .collect();
        let noun = if self.changes.len() == 1 { "change" } else { "changes" };
        format!("{} {noun} to deletions: {}", self.changes.len(), counts.join(", "))
    }

    /// For a terminal or a CI log: every name [`shown`], so none can print a control character
    /// or start a workflow command.
    fn human(&self, counts: Option<&CountedRoots<'_>>) -> String {
        let mut out = format!("{}\n", self.summary());
        for change in &self.changes {
            let _ = write!(out, "\n{:<11} {}", change.severity.as_str(), shown(&title(change)));
            if let Some(values) = before_after(change) {
                let _ = write!(out, ": {}", shown(&values));
            }
            let _ = writeln!(out, "\n            {}", shown(&change.reason));
            let mut context = Vec::new();
            if let Some(place) = &change.location {
                let side = if place.side == "base" { " (base)" } else { "" };
                context.push(format!("{}:{}:{}{side}", shown(&place.file), place.line, place.column));
            }
            if !change.roots.is_empty() {
                context.push(format!("reaches {}", shown(&list(&change.roots, 8))));
            }
            if !context.is_empty() {
                let _ = writeln!(out, "            {}", context.join(" · "));
            }
        }
        let roots = self.by_root();
        if !roots.is_empty() {
            let _ = writeln!(out, "\nroots whose deletions change:");
            let roots: Vec<(String, &[usize; 3])> =
                roots.iter().map(|(root, counts)| (shown(root).into_owned(), counts)).collect();
            let width = roots.iter().map(|(root, _)| root.chars().count()).max().unwrap_or(0);
            for (root, [destructive, attention, safe]) in roots {
                let _ =
                    writeln!(out, "  {root:<width$}  {destructive} destructive, {attention} attention, {safe} safe");
            }
        }
        if let Some(counted) = counts {
            let _ = writeln!(out, "\nrows for {} {}:", shown(counted.model), shown(&counted.ids.join(", ")));
            let mut table = count_rows(counted.counts);
            for row in &mut table {
                row.model = shown(&row.model).into_owned();
            }
            let width = table.iter().map(|row| row.model.chars().count()).max().unwrap_or(5).max(5);
            let _ =
                writeln!(out, "  {:<width$}  {:>20}  {:>20}", "model", "deleted base → head", "nullified base → head");
            for row in table {
                let _ = writeln!(
                    out,
                    "  {:<width$}  {:>20}  {:>20}",
                    row.model,
                    format!("{} → {}", row.deleted.0, row.deleted.1),
                    format!("{} → {}", row.nullified.0, row.nullified.1),
                );
            }
            if !counted.counts.not_found().is_empty() {
                let _ =
                    writeln!(out, "  not found (nothing to delete): {}", shown(&counted.counts.not_found().join(", ")));
            }
        }
        out
    }

    fn markdown(&self, counts: Option<&CountedRoots<'_>>) -> String {
        let mut out = format!("{MARKER}\n### cascade diff: {}\n", self.summary());
        let roots = self.by_root();
        if !roots.is_empty() {
            out.push_str("\n| root model | destructive | attention | safe |\n|---|---:|---:|---:|\n");
            for (root, [destructive, attention, safe]) in &roots {
                let _ = writeln!(out, "| {} | {destructive} | {attention} | {safe} |", code(root));
            }
        }
        if !self.changes.is_empty() {
            out.push_str("\n| severity | change | before → after | why | where |\n|---|---|---|---|---|\n");
            for change in &self.changes {
                let place = change.location.as_ref().map_or(String::new(), |place| {
                    let side = if place.side == "base" { " (base)" } else { "" };
                    format!("{}{side}", code(&format!("{}:{}:{}", place.file, place.line, place.column)))
                });
                let title = match about(change) {
                    Some(about) => format!("{}: {}", kind_text(change), code(about)),
                    None => kind_text(change),
                };
                let values = values(change)
                    .map_or(String::new(), |(before, after)| format!("{} → {}", code(&before), code(&after)));
                let _ = writeln!(
                    out,
                    "| {} | {title} | {values} | {} | {place} |",
                    badge(change.severity),
                    cell(&change.reason),
                );
            }
        }
        if let Some(counted) = counts {
            let _ = writeln!(
                out,
                "\nRows for {} {} (counted in the database, read only):\n\n| model | deleted (base → head) | \
                 nullified (base → head) |\n|---|---:|---:|",
                code(counted.model),
                cell(&counted.ids.join(", "))
            );
            for row in count_rows(counted.counts) {
                let marker =
                    if row.deleted.0 != row.deleted.1 || row.nullified.0 != row.nullified.1 { " ⚠" } else { "" };
                let _ = writeln!(
                    out,
                    "| {}{marker} | {} → {} | {} → {} |",
                    code(&row.model),
                    row.deleted.0,
                    row.deleted.1,
                    row.nullified.0,
                    row.nullified.1
                );
            }
            if !counted.counts.not_found().is_empty() {
                let _ =
                    writeln!(out, "\nNot found (nothing to delete): {}", cell(&counted.counts.not_found().join(", ")));
            }
        }
        out
    }

    fn json(&self, counts: Option<&CountedRoots<'_>>) -> String {
        #[derive(Serialize)]
        struct Json<'a> {
            summary: Summary,
            changes: &'a [Change],
            #[serde(skip_serializing_if = "Option::is_none")]
            counts: Option<&'a Counted>,
        }
        #[derive(Serialize)]
        struct Summary {
            destructive: usize,
            attention: usize,
            safe: usize,
        }
        let json = Json {
            summary: Summary {
                destructive: self.count(Severity::Destructive),
                attention: self.count(Severity::Attention),
                safe: self.count(Severity::Safe),
            },
            changes: &self.changes,
            counts: counts.map(|counted| counted.counts),
        };
        crate::diagnostic::text::inert_json(serde_json::to_string_pretty(&json).expect("a review serialises"))
    }

    /// One annotation per change: destructive as an error, attention as a warning, safe as a
    /// notice, on the head's line where the head has it.
    fn github(&self) -> String {
        self.changes
            .iter()
            .map(|change| {
                let command = match change.severity {
                    Severity::Destructive => "error",
                    Severity::Attention => "warning",
                    Severity::Safe => "notice",
                };
                let mut properties = Vec::new();
                if let Some(place) = change.location.as_ref().filter(|place| place.side == "head") {
                    properties.push(format!("file={}", escape_property(&shown(&place.file))));
                    properties.push(format!("line={}", place.line));
                    properties.push(format!("col={}", place.column));
                }
                let kind = serde_json::to_value(change.kind).ok().and_then(|v| v.as_str().map(str::to_owned));
                properties.push(format!(
                    "title={}",
                    escape_property(&format!("{} ({})", change.severity.as_str(), kind.unwrap_or_default()))
                ));
                let mut text = shown(&title(change)).into_owned();
                if let Some(values) = before_after(change) {
                    let _ = write!(text, ": {}", shown(&values));
                }
                let _ = write!(text, "\n{}", shown(&change.reason));
                if !change.roots.is_empty() {
                    let _ = write!(text, "\nreaches {}", shown(&list(&change.roots, 8)));
                }
                format!("::{command} {}::{}\n", properties.join(","), escape_data(&text))
            })
            .collect()
    }
}

/// What a change is: its kind, then what it is about.
pub(super) fn title(change: &Change) -> String {
    match about(change) {
        Some(about) => format!("{}: {about}", kind_text(change)),
        None => kind_text(change),
    }
}

/// The kind in words (`on delete changed`).
fn kind_text(change: &Change) -> String {
    let kind = serde_json::to_value(change.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    kind.replace('_', " ")
}

/// What a change is about: the relation, else the model, else the subject.
fn about(change: &Change) -> Option<&String> {
    change.relation.as_ref().or(change.model.as_ref()).or(change.subject.as_ref())
}

/// `before → after`, when either is known.
pub(super) fn before_after(change: &Change) -> Option<String> {
    values(change).map(|(before, after)| format!("{before} → {after}"))
}

/// The values before and after, when either is known.
fn values(change: &Change) -> Option<(String, String)> {
    if change.before.is_null() && change.after.is_null() {
        return None;
    }
    Some((value_text(&change.before), value_text(&change.after)))
}

pub(super) fn value_text(value: &Value) -> String {
    match value {
        Value::Null => "(none)".to_owned(),
        Value::String(text) => text.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(value_text).collect::<Vec<_>>().join(", ")),
        Value::Object(fields) => {
            let fields: Vec<String> =
                fields.iter().map(|(name, value)| format!("{name}={}", value_text(value))).collect();
            format!("{{{}}}", fields.join(" "))
        }
        other => other.to_string(),
    }
}

/// The first `most` names, and how many more.
fn list(names: &[String], most: usize) -> String {
    let shown: Vec<&str> = names.iter().take(most).map(String::as_str).collect();
    match names.len().saturating_sub(most) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

fn badge(severity: Severity) -> &'static str {
    match severity {
        Severity::Destructive => "🔴 **destructive**",
        Severity::Attention => "🟠 attention",
        Severity::Safe => "🟢 safe",
    }
}

pub(super) struct CountRow {
    pub(super) model: String,
    pub(super) deleted: (u64, u64),
    pub(super) nullified: (u64, u64),
}

pub(super) fn count_rows(counts: &Counted) -> Vec<CountRow> {
    counts
        .models()
        .into_iter()
        .map(|model| {
            let of = |map: &indexmap::IndexMap<String, u64>| map.get(model).copied().unwrap_or(0);
            CountRow {
                model: model.to_owned(),
                deleted: (of(&counts.base.deleted), of(&counts.head.deleted)),
                nullified: (of(&counts.base.nullified), of(&counts.head.nullified)),
            }
        })
        .collect()
}
