//! Diagnostics: every problem found in a config (or later, a schema) is one of these, with a
//! stable code, a severity, a message, the place it came from and an optional help line.

mod code;
mod excerpt;
pub(crate) mod github_escape;
mod report;
mod sarif;
mod sources;
pub mod text;

use std::ops::Range;

pub(crate) use code::with_rules;
pub use code::{Code, Severity};
pub use report::{Format, PlacedDiagnostic, Report};
pub(crate) use sources::line_starts;
pub use sources::{FileId, Sources};

/// A byte range in one of the loaded source files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file the range is in.
    pub file: FileId,
    /// Byte offsets of the start and end in the file's text.
    pub span: Range<usize>,
}

impl Location {
    /// The byte range `span` of `file`.
    pub fn new(file: FileId, span: Range<usize>) -> Self {
        Self { file, span }
    }
}

/// One problem, pointing at where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// What kind of problem this is.
    pub code: Code,
    /// How serious it is: the code's severity.
    pub severity: Severity,
    /// One line saying what is wrong.
    pub message: String,
    /// Where the problem is.
    pub location: Location,
    /// Short text shown under the offending source in human output.
    pub label: String,
    /// Other places that take part in the problem (the first declaration, the rest of a cycle).
    pub related: Vec<(Location, String)>,
    /// A line suggesting a fix, if there is one.
    pub help: Option<String>,
    /// The changes that fix the problem mechanically, for tools that edit the config (the
    /// language server's code actions); the help says the same in words.
    pub fixes: Vec<Fix>,
}

/// A mechanical change that resolves a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// Register the outbox category `category` in a scope (its `categories`).
    RegisterCategory {
        /// The category no scope registers.
        category: String,
    },
    /// Run `statement` on the database: the `CREATE INDEX` a relation lacks.
    CreateIndex {
        /// The SQL statement, ending with `;`.
        statement: String,
    },
    /// Add `entry`, an inline TOML table, to the array `key` of model `model` (`children` or
    /// `ignore_references`), creating the key when the model has none.
    AddToModel {
        /// The model to change.
        model: String,
        /// The model's key that holds the array.
        key: &'static str,
        /// The item to add, as TOML: `{ table = "t", column = "c", reason = "..." }`.
        entry: String,
    },
}

impl Diagnostic {
    /// A diagnostic of `code`'s severity at `location`, with no label, related places or help.
    pub fn new(code: Code, location: Location, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: code.severity(),
            message: message.into(),
            location,
            label: String::new(),
            related: Vec::new(),
            help: None,
            fixes: Vec::new(),
        }
    }

    /// Sets the text shown under the offending source.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds another place that takes part in the problem, with its label.
    pub fn related(mut self, location: Location, label: impl Into<String>) -> Self {
        self.related.push((location, label.into()));
        self
    }

    /// Sets the help line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a mechanical fix.
    pub fn fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    /// Whether this is an error (not a warning or a note).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// "did you mean `x`?" for a misspelt name, when one of the candidates is close enough.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| format!("did you mean `{candidate}`?"))
}
