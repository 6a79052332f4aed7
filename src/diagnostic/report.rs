//! Writing diagnostics for people (source snippets), for machines (JSON, SARIF) and for GitHub
//! Actions (workflow commands that become annotations on the pull request).

use codespan_reporting::diagnostic::{Diagnostic as Snippet, Label, Severity as SnippetSeverity};
use codespan_reporting::term::{self, Config as TermConfig};
use serde::Serialize;

use super::excerpt::Excerpt;
use super::text::shown;
use super::{Code, Diagnostic, Severity, Sources};

/// How diagnostics are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Source snippets with labels, then a one-line summary.
    Human,
    /// One JSON document with the counts and every diagnostic.
    Json,
    /// GitHub Actions workflow commands, one per diagnostic.
    Github,
    /// A SARIF 2.1.0 log (GitHub code scanning), file URIs relative to the repository.
    Sarif,
}

/// The diagnostics of one run together with the sources they point into.
pub struct Report<'a> {
    /// The files the diagnostics point into.
    pub sources: &'a Sources,
    /// The diagnostics to write.
    pub diagnostics: &'a [Diagnostic],
}

#[derive(Serialize)]
struct JsonReport {
    errors: usize,
    warnings: usize,
    diagnostics: Vec<PlacedDiagnostic>,
}

/// A diagnostic with its place as file, line and column: an entry of the JSON form, and what
/// other reports (a plan's HTML page) show of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlacedDiagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// The code's stable name.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
    /// The file's name, as loaded.
    pub file: String,
    /// 1-based line of the start.
    pub line: usize,
    /// 1-based column (in characters) of the start.
    pub column: usize,
    /// A line suggesting a fix, if there is one.
    pub help: Option<String>,
}

impl Report<'_> {
    /// How many diagnostics are errors.
    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    /// How many diagnostics are warnings.
    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == severity).count()
    }

    /// The diagnostics written in `format`; `color` adds ANSI colors to human output.
    pub fn render(&self, format: Format, color: bool) -> String {
        match format {
            Format::Human => self.human(color),
            Format::Json => self.json(),
            Format::Github => self.github(),
            // Source names are relative to the working directory they were loaded from.
            Format::Sarif => self.sarif(&std::env::current_dir().unwrap_or_default()),
        }
    }

    /// Source snippets with labels, then a one-line summary. The output goes to terminals and CI
    /// logs: a literal secret (`literal-secret`) and every secret the process knows (a
    /// `[settings] database_url` password) are shown as `*`s in every snippet, a long line only
    /// around its labels, and what a name may hide is escaped (see [`super::text`]).
    pub fn human(&self, color: bool) -> String {
        let config = TermConfig::default();
        let secrets: Vec<&super::Location> =
            self.diagnostics.iter().filter(|d| d.code == Code::LiteralSecret).map(|d| &d.location).collect();
        let masked = self.sources.masked(secrets);
        let sources = &masked;
        let mut out = Vec::new();
        for diagnostic in self.diagnostics {
            let related = diagnostic.related.iter().map(|(location, _)| location);
            let excerpt = Excerpt::new(sources, std::iter::once(&diagnostic.location).chain(related));
            let snippet = self.snippet(diagnostic, &excerpt);
            let written = if color {
                let mut writer = term::termcolor::Ansi::new(&mut out);
                term::emit_to_write_style(&mut writer, &config, &excerpt, &snippet)
            } else {
                term::emit_to_io_write(&mut out, &config, &excerpt, &snippet)
            };
            // Spans always come from the same sources, so rendering cannot fail on a lookup.
            written.expect("diagnostic spans point into loaded sources");
        }
        let mut text = String::from_utf8_lossy(&out).into_owned();
        text.push_str(&self.summary());
        text.push('\n');
        text
    }

    fn summary(&self) -> String {
        let notes = match self.count(Severity::Note) {
            0 => String::new(),
            notes => format!(" ({})", plural(notes, "note")),
        };
        match (self.errors(), self.warnings()) {
            (0, 0) => format!("ok: no problems found{notes}"),
            (errors, warnings) => format!("{} and {}{notes}", plural(errors, "error"), plural(warnings, "warning")),
        }
    }

    /// `diagnostic` for the snippet printer, its spans in `excerpt`.
    fn snippet(&self, diagnostic: &Diagnostic, excerpt: &Excerpt<'_>) -> Snippet<usize> {
        let severity = match diagnostic.severity {
            Severity::Error => SnippetSeverity::Error,
            Severity::Warning => SnippetSeverity::Warning,
            Severity::Note => SnippetSeverity::Note,
        };
        let location = &diagnostic.location;
        let mut labels =
            vec![Label::primary(location.file, excerpt.span(location)).with_message(shown(&diagnostic.label))];
        labels.extend(diagnostic.related.iter().map(|(location, label)| {
            Label::secondary(location.file, excerpt.span(location)).with_message(shown(label))
        }));
        let notes = diagnostic.help.iter().map(|help| format!("help: {}", shown(help))).collect();
        Snippet::new(severity)
            .with_code(diagnostic.code.as_str())
            .with_message(shown(&diagnostic.message))
            .with_labels(labels)
            .with_notes(notes)
    }

    /// Every diagnostic with its place, in order.
    pub fn placed(&self) -> Vec<PlacedDiagnostic> {
        self.diagnostics
            .iter()
            .map(|d| {
                let (line, column) = self.sources.line_column(&d.location);
                PlacedDiagnostic {
                    severity: d.severity,
                    code: d.code.as_str(),
                    message: d.message.clone(),
                    file: self.sources.name(d.location.file).to_owned(),
                    line,
                    column,
                    help: d.help.clone(),
                }
            })
            .collect()
    }

    /// The stable JSON shape the README documents.
    pub fn json(&self) -> String {
        let report = JsonReport { errors: self.errors(), warnings: self.warnings(), diagnostics: self.placed() };
        super::text::inert_json(serde_json::to_string_pretty(&report).expect("report serialises"))
    }

    /// One `::error file=F,line=L,col=C,title=CODE::message` workflow command per diagnostic; the
    /// help, if any, follows the message on its own line of the annotation.
    pub fn github(&self) -> String {
        self.diagnostics
            .iter()
            .map(|d| {
                let (line, column) = self.sources.line_column(&d.location);
                let command = match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "notice",
                };
                let text = match &d.help {
                    Some(help) => format!("{}\nhelp: {}", shown(&d.message), shown(help)),
                    None => shown(&d.message).into_owned(),
                };
                format!(
                    "::{command} file={},line={line},col={column},title={}::{}\n",
                    super::github_escape::property(&shown(self.sources.name(d.location.file))),
                    super::github_escape::property(d.code.as_str()),
                    super::github_escape::data(&text),
                )
            })
            .collect()
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}
