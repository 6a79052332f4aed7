//! The documents the editor has open, and LSP positions: a line, and a character counted in
//! UTF-16 code units within it (what every client speaks; a `é` is one unit, an emoji two).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use lsp_types::{Position, TextDocumentContentChangeEvent, Url};

/// Where each line of a text starts, for converting byte offsets to positions and back. Lines
/// end as the config's sources say (`\n`, `\r\n` or a lone `\r`), which is what LSP says too.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub(crate) fn new(text: &str) -> Self {
        Self { starts: crate::diagnostic::line_starts(text) }
    }

    /// The position of byte `offset` (clamped to the text, and back to a character's start).
    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset) - 1;
        let character = text[self.starts[line]..offset].encode_utf16().count();
        Position::new(line as u32, character as u32)
    }

    pub(crate) fn range(&self, text: &str, span: &Range<usize>) -> lsp_types::Range {
        lsp_types::Range::new(self.position(text, span.start), self.position(text, span.end))
    }

    /// The byte offset of `position`. A line past the end is the end of the text; a character
    /// past the end of its line is the line's end (as LSP says), and one inside a character
    /// (between the two units of an emoji) is that character's start.
    pub(crate) fn offset(&self, text: &str, position: Position) -> usize {
        let Some(&start) = self.starts.get(position.line as usize) else { return text.len() };
        let next = self.starts.get(position.line as usize + 1).copied().unwrap_or(text.len());
        let line = text[start..next].trim_end_matches(['\n', '\r']);
        let mut units = 0;
        for (index, character) in line.char_indices() {
            units += character.len_utf16();
            if units > position.character as usize {
                return start + index;
            }
        }
        start + line.len()
    }

    /// The byte span of `range`; a range whose end comes before its start (which the protocol
    /// forbids, and a slice cannot hold) spans the text between its two positions.
    pub(crate) fn span(&self, text: &str, range: lsp_types::Range) -> Range<usize> {
        let (start, end) = (self.offset(text, range.start), self.offset(text, range.end));
        start.min(end)..start.max(end)
    }
}

/// An open document: the editor's text, which takes precedence over the file on disk.
#[derive(Debug)]
pub(crate) struct Document {
    pub text: String,
    pub version: i32,
    pub path: PathBuf,
    /// The config directory the document belongs to.
    pub config: PathBuf,
}

#[derive(Debug, Default)]
pub(crate) struct Documents {
    open: HashMap<Url, Document>,
}

impl Documents {
    pub(crate) fn open(&mut self, uri: Url, document: Document) {
        self.open.insert(uri, document);
    }

    pub(crate) fn close(&mut self, uri: &Url) -> Option<Document> {
        self.open.remove(uri)
    }

    pub(crate) fn get(&self, uri: &Url) -> Option<&Document> {
        self.open.get(uri)
    }

    /// Applies an editor's changes, in order: a range replaced, or the whole text. The
    /// document's config directory, if it is open.
    pub(crate) fn change(
        &mut self,
        uri: &Url,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Option<&Path> {
        let document = self.open.get_mut(uri)?;
        for change in changes {
            match change.range {
                Some(range) => {
                    let span = Lines::new(&document.text).span(&document.text, range);
                    document.text.replace_range(span, &change.text);
                }
                None => document.text = change.text,
            }
        }
        document.version = version;
        Some(&document.config)
    }

    /// The open documents of the config in `config`: their texts by path, and their URIs and
    /// versions.
    pub(crate) fn of_config(&self, config: &Path) -> (BTreeMap<PathBuf, String>, HashMap<PathBuf, (Url, i32)>) {
        let mut texts = BTreeMap::new();
        let mut uris = HashMap::new();
        for (uri, document) in self.open.iter().filter(|(_, document)| document.config == config) {
            texts.insert(document.path.clone(), document.text.clone());
            uris.insert(document.path.clone(), (uri.clone(), document.version));
        }
        (texts, uris)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "a = \"é😀x\"\r\nb\rc\n";
        let lines = Lines::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(lines.position(text, x), Position::new(0, 8));
        assert_eq!(lines.offset(text, Position::new(0, 8)), x);
        // Inside the emoji (between its two units): its start.
        assert_eq!(lines.offset(text, Position::new(0, 7)), text.find('😀').unwrap());
        // Past the end of a line: the line's end, before its CRLF.
        assert_eq!(lines.offset(text, Position::new(0, 99)), text.find('\r').unwrap());
        assert_eq!(lines.position(text, text.find('c').unwrap()), Position::new(2, 0));
        assert_eq!(lines.offset(text, Position::new(9, 0)), text.len());
        assert_eq!(lines.position(text, text.len()), Position::new(3, 0));
        for offset in (0..=text.len()).filter(|offset| text.is_char_boundary(*offset)) {
            let position = lines.position(text, offset);
            let back = lines.offset(text, position);
            assert!(back == offset || text[back..offset].chars().all(|c| c == '\r' || c == '\n'), "{offset}");
        }
    }

    #[test]
    fn changes_apply_in_order_at_utf16_positions() {
        let mut documents = Documents::default();
        let uri = Url::parse("file:///c/a.toml").unwrap();
        let document =
            Document { text: "x = \"😀a\"\n".to_owned(), version: 1, path: "/c/a.toml".into(), config: "/c".into() };
        documents.open(uri.clone(), document);
        let replace = |line, from, to, text: &str| TextDocumentContentChangeEvent {
            range: Some(lsp_types::Range::new(Position::new(line, from), Position::new(line, to))),
            range_length: None,
            text: text.to_owned(),
        };
        let config = documents.change(&uri, 2, vec![replace(0, 7, 8, "bc"), replace(0, 0, 1, "yy")]);
        assert_eq!(config, Some(Path::new("/c")));
        assert_eq!(documents.get(&uri).unwrap().text, "yy = \"😀bc\"\n");
        assert_eq!(documents.get(&uri).unwrap().version, 2);
        // A range ending before its start replaces what lies between its two positions.
        documents.change(&uri, 3, vec![replace(0, 2, 0, "z"), replace(0, 9, 5, "")]);
        assert_eq!(documents.get(&uri).unwrap().text, "z = \"\"\n");
    }
}
