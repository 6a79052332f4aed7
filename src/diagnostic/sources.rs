use std::ops::Range;

use codespan_reporting::files::{Error as FilesError, Files};

use super::Location;

/// Identifies one loaded file: its 0-based position in [`Sources`], in the order added.
pub type FileId = usize;

/// The text of every loaded file, so spans can be turned into file:line:column and snippets.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

#[derive(Debug, Clone)]
struct SourceFile {
    name: String,
    text: String,
    /// The byte offset where each line starts, found once when the file is added.
    line_starts: Vec<usize>,
}

/// Where each line of `text` starts. A line ends with `\n`, `\r\n` or a lone `\r` (old Mac
/// line endings): were a lone `\r` no line break, such a file would be one line, which every
/// line:column lookup scans and every snippet prints whole.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let ends_line = |(offset, byte): &(usize, &u8)| match byte {
        b'\n' => true,
        b'\r' => bytes.get(offset + 1) != Some(&b'\n'),
        _ => false,
    };
    std::iter::once(0).chain(bytes.iter().enumerate().filter(ends_line).map(|(offset, _)| offset + 1)).collect()
}

impl Sources {
    /// Adds a file with its name and text, and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let text = text.into();
        self.files.push(SourceFile { name: name.into(), line_starts: line_starts(&text), text });
        self.files.len() - 1
    }

    /// A copy whose text at each location, and at every secret the process knows
    /// ([`crate::secret::mask`]), is `*` (the quotes of a string kept), every line and byte
    /// offset where it was: for printing snippets around values that must not be shown.
    pub(crate) fn masked<'l>(&self, locations: impl IntoIterator<Item = &'l Location>) -> Sources {
        let mut masked = self.clone();
        for file in &mut masked.files {
            file.text = crate::secret::mask(&file.text);
        }
        for location in locations {
            let Some(file) = masked.files.get_mut(location.file) else { continue };
            let Some(value) = file.text.get(location.span.clone()) else { continue };
            let inner = match value.chars().next() {
                Some(quote @ ('"' | '\'')) if value.len() >= 2 && value.ends_with(quote) => &value[1..value.len() - 1],
                _ => value,
            };
            let start = location.span.start + (value.len() - inner.len()) / 2;
            let hidden: String = inner
                .chars()
                .map(|c| if c == '\n' || c == '\r' { c.to_string() } else { "*".repeat(c.len_utf8()) })
                .collect();
            file.text.replace_range(start..start + inner.len(), &hidden);
        }
        masked
    }

    /// The ids of every file, in the order added.
    pub fn ids(&self) -> Range<FileId> {
        0..self.len()
    }

    /// How many files are loaded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The name of `file` (`<unknown>` for an id that was never added).
    pub fn name(&self, file: FileId) -> &str {
        self.files.get(file).map_or("<unknown>", |f| f.name.as_str())
    }

    /// The text of `file` (empty for an id that was never added).
    pub fn text(&self, file: FileId) -> &str {
        self.files.get(file).map_or("", |f| f.text.as_str())
    }

    /// 1-based line and column (in characters) of the start of `location`.
    pub fn line_column(&self, location: &Location) -> (usize, usize) {
        self.line_column_at(location.file, location.span.start)
    }

    /// 1-based line and column (in characters) of the end of `location`: the position just
    /// after its last character.
    pub fn end_line_column(&self, location: &Location) -> (usize, usize) {
        self.line_column_at(location.file, location.span.end)
    }

    fn line_column_at(&self, file: FileId, offset: usize) -> (usize, usize) {
        self.location(file, offset).map_or((1, 1), |l| (l.line_number, l.column_number))
    }

    /// `file:line:column`, for naming another place inside a message.
    pub fn describe(&self, location: &Location) -> String {
        let (line, column) = self.line_column(location);
        format!("{}:{line}:{column}", self.name(location.file))
    }

    fn file(&self, file: FileId) -> Result<&SourceFile, FilesError> {
        self.files.get(file).ok_or(FilesError::FileMissing)
    }
}

/// What the snippet printer reads: lines as `line_starts` finds them.
impl<'a> Files<'a> for Sources {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, file: FileId) -> Result<&'a str, FilesError> {
        Ok(&self.file(file)?.name)
    }

    fn source(&'a self, file: FileId) -> Result<&'a str, FilesError> {
        Ok(&self.file(file)?.text)
    }

    fn line_index(&'a self, file: FileId, byte_index: usize) -> Result<usize, FilesError> {
        // The first line starts at 0, so at least one start is at or before any offset.
        Ok(self.file(file)?.line_starts.partition_point(|&start| start <= byte_index) - 1)
    }

    fn line_range(&'a self, file: FileId, line_index: usize) -> Result<Range<usize>, FilesError> {
        let file = self.file(file)?;
        let last = file.line_starts.len() - 1;
        let start =
            *file.line_starts.get(line_index).ok_or(FilesError::LineTooLarge { given: line_index, max: last })?;
        let end = file.line_starts.get(line_index + 1).copied().unwrap_or(file.text.len());
        Ok(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_columns(text: &str, offsets: &[usize]) -> Vec<(usize, usize)> {
        let mut sources = Sources::default();
        let file = sources.add("f.toml", text);
        offsets.iter().map(|&offset| sources.line_column(&Location::new(file, offset..offset))).collect()
    }

    #[test]
    fn lines_end_with_lf_crlf_or_a_lone_cr() {
        let text = "a\nbb\r\ncc\rddd\r\re";
        let offsets = [0, 1, 2, 4, 5, 6, 8, 9, 11, 12, 13, 14];
        assert_eq!(
            line_columns(text, &offsets),
            [(1, 1), (1, 2), (2, 1), (2, 3), (2, 4), (3, 1), (3, 3), (4, 1), (4, 3), (4, 4), (5, 1), (6, 1)]
        );
    }

    #[test]
    fn the_end_of_a_file_is_on_its_last_line() {
        assert_eq!(line_columns("", &[0]), [(1, 1)]);
        assert_eq!(line_columns("ab", &[2]), [(1, 3)]);
        assert_eq!(line_columns("ab\r", &[3]), [(2, 1)]);
    }
}
