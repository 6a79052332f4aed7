//! A review as people and machines read it: a terminal report, a markdown pull-request comment,
//! JSON, and GitHub workflow annotations.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{Change, Counted, Review, Severity};
use crate::diagnostic::github_escape::{data as escape_data, property as escape_property};

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

    fn human(&self, counts: Option<&CountedRoots<'_>>) -> String {
        let mut out = format!("{}\n", self.summary());
        for change in &self.changes {
            let _ = write!(out, "\n{:<11} {}", change.severity.as_str(), title(change));
            if let Some(values) = before_after(change) {
                let _ = write!(out, ": {values}");
            }
            let _ = writeln!(out, "\n            {}", change.reason);
            let mut context = Vec::new();
            if let Some(place) = &change.location {
                let side = if place.side == "base" { " (base)" } else { "" };
                context.push(format!("{}:{}:{}{side}", place.file, place.line, place.column));
            }
            if !change.roots.is_empty() {
                context.push(format!("reaches {}", list(&change.roots, 8)));
            }
            if !context.is_empty() {
                let _ = writeln!(out, "            {}", context.join(" · "));
            }
        }
        let roots = self.by_root();
        if !roots.is_empty() {
            let _ = writeln!(out, "\nroots whose deletions change:");
            let width = roots.keys().map(|root| root.chars().count()).max().unwrap_or(0);
            for (root, [destructive, attention, safe]) in &roots {
                let _ =
                    writeln!(out, "  {root:<width$}  {destructive} destructive, {attention} attention, {safe} safe");
            }
        }
        if let Some(counted) = counts {
            let _ = writeln!(out, "\nrows for {} {}:", counted.model, counted.ids.join(", "));
            let table = count_rows(counted.counts);
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
                let _ = writeln!(out, "  not found (nothing to delete): {}", counted.counts.not_found().join(", "));
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
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {place} |",
                    badge(change.severity),
                    cell(&title(change)),
                    cell(&before_after(change).unwrap_or_default()),
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
        let mut text = serde_json::to_string_pretty(&json).expect("a review serialises");
        text.push('\n');
        text
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
                    properties.push(format!("file={}", escape_property(&place.file)));
                    properties.push(format!("line={}", place.line));
                    properties.push(format!("col={}", place.column));
                }
                let kind = serde_json::to_value(change.kind).ok().and_then(|v| v.as_str().map(str::to_owned));
                properties.push(format!(
                    "title={}",
                    escape_property(&format!("{} ({})", change.severity.as_str(), kind.unwrap_or_default()))
                ));
                let mut text = title(change);
                if let Some(values) = before_after(change) {
                    let _ = write!(text, ": {values}");
                }
                let _ = write!(text, "\n{}", change.reason);
                if !change.roots.is_empty() {
                    let _ = write!(text, "\nreaches {}", list(&change.roots, 8));
                }
                format!("::{command} {}::{}\n", properties.join(","), escape_data(&text))
            })
            .collect()
    }
}

/// What a change is about: the relation, else the model, else the kind.
pub(super) fn title(change: &Change) -> String {
    let kind = serde_json::to_value(change.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let kind = kind.replace('_', " ");
    match change.relation.as_ref().or(change.model.as_ref()).or(change.subject.as_ref()) {
        Some(about) => format!("{kind}: {about}"),
        None => kind,
    }
}

/// `before → after`, when either is known.
pub(super) fn before_after(change: &Change) -> Option<String> {
    if change.before.is_null() && change.after.is_null() {
        return None;
    }
    Some(format!("{} → {}", value_text(&change.before), value_text(&change.after)))
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

/// Text for a markdown table cell: no line breaks, pipes or HTML. HTML is escaped outside the
/// text's code spans only: inside one, GitHub shows `&lt;` as written, and nothing is HTML.
fn cell(text: &str) -> String {
    let text = text.replace(['\r', '\n'], " ");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find('`') {
        // A backslash makes the backtick after it literal, as markdown reads it.
        if rest[..start].ends_with('\\') {
            out += &outside_code(&rest[..=start]);
            rest = &rest[start + 1..];
            continue;
        }
        let fence = backtick_run(&rest[start..]);
        let after = &rest[start + fence.len()..];
        match closing_run(after, fence.len()) {
            Some(end) => {
                out += &outside_code(&rest[..start]);
                out += fence;
                out += &after[..end].replace('|', "\\|");
                out += fence;
                rest = &after[end + fence.len()..];
            }
            // An unclosed run is literal backticks.
            None => {
                out += &outside_code(&rest[..start + fence.len()]);
                rest = after;
            }
        }
    }
    out + &outside_code(rest)
}

fn outside_code(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('|', "\\|")
}

/// The backticks `text` starts with.
fn backtick_run(text: &str) -> &str {
    &text[..text.len() - text.trim_start_matches('`').len()]
}

/// Where in `text` a run of exactly `length` backticks starts (which closes a code span).
fn closing_run(text: &str, length: usize) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find('`') {
        let at = from + at;
        let run = backtick_run(&text[at..]).len();
        if run == length {
            return Some(at);
        }
        from = at + run;
    }
    None
}

/// `text` as inline code in markdown, whatever backticks it holds.
fn code(text: &str) -> String {
    let text = text.replace(['\r', '\n'], " ").replace('|', "\\|");
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_escapes_html_outside_its_code_spans_only() {
        assert_eq!(super::cell("`<a>` & <b>"), "`<a>` &amp; &lt;b&gt;");
        assert_eq!(super::cell("``a ` <b>`` `x|y`\nz"), "``a ` <b>`` `x\\|y` z");
        assert_eq!(super::cell("a ` <b>"), "a ` &lt;b&gt;");
        assert_eq!(super::cell("\\`<b>`"), "\\`&lt;b&gt;`");
    }
}
