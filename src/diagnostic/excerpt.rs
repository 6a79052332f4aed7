//! What a human diagnostic shows of its files: the lines its labels touch, a long line cut to
//! windows around the labels' ends (`…` where text is left out), hidden characters escaped. A
//! 100 kB config on one line thus prints a few hundred characters per diagnostic, not the whole
//! line each time; the snippet printer is told the file's own line and column numbers.

use std::collections::BTreeMap;
use std::ops::Range;

use codespan_reporting::files::{Error as FilesError, Files};

use super::text::{escaped, is_hidden, shown};
use super::{FileId, Location, Sources};

/// Characters kept on either side of a label's start or end on a long line.
const CONTEXT: usize = 120;
/// A line of up to this many characters is shown whole.
const MAX_WHOLE_LINE: usize = 2 * CONTEXT + 60;
/// Stands for the text left out of a long line.
const CUT: &str = "…";

/// One diagnostic's view of the sources, for the snippet printer.
pub(super) struct Excerpt<'a> {
    sources: &'a Sources,
    files: BTreeMap<FileId, ExcerptFile>,
}

/// The lines shown of one file, one after the other, each with its line ending.
#[derive(Default)]
struct ExcerptFile {
    text: String,
    /// By the line's index in the file.
    lines: BTreeMap<usize, ShownLine>,
}

struct ShownLine {
    /// Where the line is in the excerpt's text, its ending included.
    range: Range<usize>,
    /// Where its text ends in the excerpt's text (its ending starts).
    shown_end: usize,
    /// Where its text ends in the file, and how many characters it has there.
    original_end: usize,
    characters: usize,
    /// The runs of the file's line that are shown, in order.
    pieces: Vec<Piece>,
}

/// A run of a line as the file has it and as the excerpt shows it.
struct Piece {
    /// Where each of its characters starts, then where it ends: a byte of the file, and a byte
    /// of the excerpt's text.
    starts: Vec<(usize, usize)>,
    /// Its 0-based column (in characters) in the file's line.
    column: usize,
}

impl<'a> Excerpt<'a> {
    /// The lines of `sources` that `locations` touch (every line of a multi-line one, and one
    /// between two of them).
    pub(super) fn new<'l>(sources: &'a Sources, locations: impl IntoIterator<Item = &'l Location>) -> Self {
        // For each file, each line to show with the offsets the labels start or end at.
        let mut wanted: BTreeMap<FileId, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
        for location in locations {
            let line = |offset| sources.line_index(location.file, offset);
            let (Ok(first), Ok(last)) = (line(location.span.start), line(location.span.end)) else { continue };
            let lines = wanted.entry(location.file).or_default();
            for line in first..=last {
                lines.entry(line).or_default();
            }
            lines.entry(first).or_default().push(location.span.start);
            lines.entry(last).or_default().push(location.span.end);
        }
        // The printer shows the line between two shown lines rather than a break.
        for lines in wanted.values_mut() {
            let between: Vec<usize> =
                lines.keys().zip(lines.keys().skip(1)).filter(|&(a, b)| *b == a + 2).map(|(a, _)| a + 1).collect();
            for line in between {
                lines.entry(line).or_default();
            }
        }
        let files = wanted
            .into_iter()
            .map(|(file, lines)| {
                let mut excerpt = ExcerptFile::default();
                for (line, points) in lines {
                    if let Ok(range) = sources.line_range(file, line) {
                        excerpt.push(line, sources.text(file), range, &points);
                    }
                }
                (file, excerpt)
            })
            .collect();
        Excerpt { sources, files }
    }

    /// `location`'s span in the excerpt's text.
    pub(super) fn span(&self, location: &Location) -> Range<usize> {
        let at = |offset| {
            let line = self.sources.line_index(location.file, offset).ok()?;
            Some(self.files.get(&location.file)?.lines.get(&line)?.position(offset))
        };
        let start = at(location.span.start).unwrap_or(0);
        start..at(location.span.end).unwrap_or(start).max(start)
    }

    fn file(&self, file: FileId) -> Result<&ExcerptFile, FilesError> {
        self.files.get(&file).ok_or(FilesError::FileMissing)
    }
}

impl ExcerptFile {
    /// Adds line `line`, at `range` of `text`, cut around `points` when it is long.
    fn push(&mut self, line: usize, text: &str, range: Range<usize>, points: &[usize]) {
        let full = &text[range.clone()];
        let content = full.trim_end_matches(['\n', '\r']);
        let chars: Vec<(usize, char)> = content.char_indices().collect();
        let windows = if chars.len() <= MAX_WHOLE_LINE {
            std::iter::once(0..chars.len()).collect()
        } else {
            let index = |point: usize| chars.partition_point(|&(offset, _)| range.start + offset < point);
            let around = points.iter().map(|&point| index(point));
            let mut windows: Vec<Range<usize>> =
                around.map(|at| at.saturating_sub(CONTEXT)..(at + CONTEXT).min(chars.len())).collect();
            if windows.is_empty() {
                windows.push(0..2 * CONTEXT);
            }
            merged(windows)
        };
        let byte = |index: usize| range.start + chars.get(index).map_or(content.len(), |&(offset, _)| offset);
        let start = self.text.len();
        let (mut pieces, mut shown_until) = (Vec::new(), 0);
        for window in windows {
            if window.start > shown_until {
                self.text.push_str(CUT);
            }
            let mut starts = Vec::with_capacity(window.len() + 1);
            for index in window.clone() {
                starts.push((byte(index), self.text.len()));
                push_char(&mut self.text, &chars, index);
            }
            starts.push((byte(window.end), self.text.len()));
            pieces.push(Piece { starts, column: window.start });
            shown_until = window.end;
        }
        if shown_until < chars.len() {
            self.text.push_str(CUT);
        }
        let shown_end = self.text.len();
        self.text.push_str(&full[content.len()..]);
        self.lines.insert(
            line,
            ShownLine {
                range: start..self.text.len(),
                shown_end,
                original_end: range.start + content.len(),
                characters: chars.len(),
                pieces,
            },
        );
    }
}

/// Appends character `index` of `chars` (a line) as the excerpt shows it: a tab as it is (the
/// printer lines it up), another hidden character escaped, and a `[` after `##` escaped.
fn push_char(text: &mut String, chars: &[(usize, char)], index: usize) {
    let c = chars[index].1;
    let opens_command = c == '[' && index >= 2 && chars[index - 2].1 == '#' && chars[index - 1].1 == '#';
    if c != '\t' && is_hidden(c) || opens_command {
        text.push_str(&escaped(c));
    } else {
        text.push(c);
    }
}

impl ShownLine {
    /// Where the file's byte `offset`, on this line, is in the excerpt's text.
    fn position(&self, offset: usize) -> usize {
        if offset >= self.original_end {
            return (self.shown_end + (offset - self.original_end)).min(self.range.end);
        }
        let starts = self.pieces.iter().flat_map(|piece| &piece.starts);
        starts.take_while(|&&(original, _)| original <= offset).last().map_or(self.range.start, |&(_, shown)| shown)
    }

    /// The file's 0-based column of the excerpt's byte `shown` on this line.
    fn column(&self, shown: usize) -> usize {
        if shown >= self.shown_end {
            return self.characters + (shown - self.shown_end);
        }
        let Some(piece) = self.pieces.iter().rev().find(|piece| piece.starts[0].1 <= shown) else { return 0 };
        piece.column + piece.starts.iter().skip(1).take_while(|&&(_, start)| start <= shown).count()
    }
}

/// What the snippet printer reads: the shown lines, numbered and placed as in the file.
impl<'a> Files<'a> for Excerpt<'_> {
    type FileId = FileId;
    type Name = std::borrow::Cow<'a, str>;
    type Source = &'a str;

    fn name(&'a self, file: FileId) -> Result<Self::Name, FilesError> {
        Ok(shown(self.sources.name(file)))
    }

    fn source(&'a self, file: FileId) -> Result<&'a str, FilesError> {
        Ok(&self.file(file)?.text)
    }

    fn line_index(&'a self, file: FileId, byte_index: usize) -> Result<usize, FilesError> {
        let lines = &self.file(file)?.lines;
        let found = lines.iter().find(|(_, line)| byte_index < line.range.end).or(lines.last_key_value());
        found.map(|(&index, _)| index).ok_or(FilesError::FileMissing)
    }

    fn line_range(&'a self, file: FileId, line_index: usize) -> Result<Range<usize>, FilesError> {
        let lines = &self.file(file)?.lines;
        let max = lines.last_key_value().map_or(0, |(&index, _)| index);
        lines.get(&line_index).map(|line| line.range.clone()).ok_or(FilesError::LineTooLarge { given: line_index, max })
    }

    fn column_number(&'a self, file: FileId, line_index: usize, byte_index: usize) -> Result<usize, FilesError> {
        let line = self.file(file)?.lines.get(&line_index);
        let line = line.ok_or(FilesError::LineTooLarge { given: line_index, max: line_index })?;
        Ok(line.column(byte_index) + 1)
    }
}

/// Overlapping or touching windows as one.
fn merged(mut windows: Vec<Range<usize>>) -> Vec<Range<usize>> {
    windows.sort_by_key(|window| window.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for window in windows {
        match merged.last_mut() {
            Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
            _ => merged.push(window),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::{Code, Diagnostic, Location, Report, Sources};

    /// The locus, source and caret lines of one diagnostic on `text`, labelled at `label`.
    fn snippet(text: &str, label: std::ops::Range<usize>) -> Vec<String> {
        let mut sources = Sources::default();
        let file = sources.add("c.toml", text);
        let diagnostic = Diagnostic::new(Code::InvalidValue, Location::new(file, label), "bad").label("here");
        let human = Report { sources: &sources, diagnostics: &[diagnostic] }.human(false);
        human.lines().skip(1).take(4).filter(|line| line.trim() != "│").map(str::to_owned).collect()
    }

    #[test]
    fn a_long_line_is_cut_around_the_label_with_the_file_s_column() {
        let text = format!("{}TARGET{}\n", "a".repeat(1000), "z".repeat(1000));
        let lines = snippet(&text, 1000..1006);
        assert_eq!(lines[0], "  ┌─ c.toml:1:1001");
        assert_eq!(lines[1], format!("1 │ …{}TARGET{}…", "a".repeat(120), "z".repeat(120)));
        assert_eq!(lines[2], format!("  │ {}^^^^^^ here", " ".repeat(121)));
    }

    #[test]
    fn escapes_keep_the_caret_under_the_label() {
        let text = "x = \"\u{1b}##[y\" # b = 1\n";
        let at = text.find('b').unwrap();
        let lines = snippet(text, at..at + 1);
        assert_eq!(lines[0], "  ┌─ c.toml:1:15");
        assert_eq!(lines[1], "1 │ x = \"\\u{1b}##\\u{5b}y\" # b = 1");
        assert_eq!(lines[2], format!("  │ {}^ here", " ".repeat(lines[1].rfind('b').unwrap() - "1 │ ".len())));
    }
}
