use codespan_reporting::files::{Files, SimpleFiles};

use super::Location;

/// Identifies one loaded file: its 0-based position in [`Sources`], in the order added.
pub type FileId = usize;

/// The text of every loaded file, so spans can be turned into file:line:column and snippets.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: SimpleFiles<String, String>,
    count: usize,
}

impl Sources {
    /// Adds a file with its name and text, and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.count += 1;
        self.files.add(name.into(), text.into())
    }

    /// The ids of every file, in the order added.
    pub fn ids(&self) -> std::ops::Range<FileId> {
        0..self.len()
    }

    /// How many files are loaded.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no file is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of `file` (`<unknown>` for an id that was never added).
    pub fn name(&self, file: FileId) -> &str {
        self.files.get(file).map(|f| f.name().as_str()).unwrap_or("<unknown>")
    }

    /// The text of `file` (empty for an id that was never added).
    pub fn text(&self, file: FileId) -> &str {
        self.files.get(file).map(|f| f.source().as_str()).unwrap_or("")
    }

    /// 1-based line and column (in characters) of the start of `location`.
    pub fn line_column(&self, location: &Location) -> (usize, usize) {
        self.files
            .location(location.file, location.span.start)
            .map(|l| (l.line_number, l.column_number))
            .unwrap_or((1, 1))
    }

    /// `file:line:column`, for naming another place inside a message.
    pub fn describe(&self, location: &Location) -> String {
        let (line, column) = self.line_column(location);
        format!("{}:{line}:{column}", self.name(location.file))
    }

    pub(crate) fn files(&self) -> &SimpleFiles<String, String> {
        &self.files
    }
}
