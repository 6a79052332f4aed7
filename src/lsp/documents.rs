//! The documents the editor has open, and LSP positions: a line, and a character counted in
//! UTF-16 code units within it (what every client speaks; a `é` is one unit, an emoji two).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use lsp_types::{Position, TextDocumentContentChangeEvent, Url};
use ropey::Rope;

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
        // Ranges are replaced in a rope, where finding a position and replacing text cost the
        // log of the text's length, so a change of thousands of ranges (a multi-cursor edit, a
        // formatter's) stays linear rather than copying and re-indexing the text for each.
        let mut edited: Option<Rope> = None;
        for change in changes {
            match change.range {
                Some(range) => {
                    let rope = edited.get_or_insert_with(|| Rope::from_str(&document.text));
                    replace(rope, range, &change.text);
                }
                None => {
                    edited = None;
                    document.text = change.text;
                }
            }
        }
        if let Some(rope) = edited {
            document.text = rope.into();
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

/// Replaces `range` of `rope` with `text`, the range read as [`Lines::span`] reads it.
fn replace(rope: &mut Rope, range: lsp_types::Range, text: &str) {
    let (start, end) = (char_index(rope, range.start), char_index(rope, range.end));
    rope.remove(start.min(end)..start.max(end));
    rope.insert(start.min(end), text);
}

/// The char index of `position` in `rope`, where [`Lines::offset`] puts it: a line past the end
/// is the end of the text, a character past the end of its line is the line's end (before its
/// line break), and one inside a character is that character's start.
fn char_index(rope: &Rope, position: Position) -> usize {
    let line = position.line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let start = rope.line_to_char(line);
    let text = rope.line(line);
    let line_break = text.chars_at(text.len_chars()).reversed().take_while(|c| matches!(c, '\n' | '\r')).count();
    let end = start + text.len_chars() - line_break;
    let unit = rope.char_to_utf16_cu(start) + position.character as usize;
    if unit >= rope.char_to_utf16_cu(end) { end } else { rope.utf16_cu_to_char(unit) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Random;

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

    /// The text after `changes` as read before the server kept a rope: each range found by a
    /// line index of the text as it is then, and the text copied around it.
    fn changed_by_new_line_indexes(text: &str, changes: &[TextDocumentContentChangeEvent]) -> String {
        let mut text = text.to_owned();
        for change in changes {
            match change.range {
                Some(range) => {
                    let span = Lines::new(&text).span(&text, range);
                    text.replace_range(span, &change.text);
                }
                None => text = change.text.clone(),
            }
        }
        text
    }

    /// The text of a document opened with `text` after `changes`.
    fn changed(text: &str, changes: Vec<TextDocumentContentChangeEvent>) -> String {
        let mut documents = Documents::default();
        let uri = Url::parse("file:///c/a.toml").unwrap();
        let document = Document { text: text.to_owned(), version: 1, path: "/c/a.toml".into(), config: "/c".into() };
        documents.open(uri.clone(), document);
        documents.change(&uri, 2, changes);
        documents.close(&uri).unwrap().text
    }

    /// Up to `pieces` random pieces of text: ASCII, characters of two, three and four bytes (one
    /// or two UTF-16 units), every line break, and characters that are no line break here (NEL,
    /// LINE SEPARATOR) though Unicode's line breaks would count them.
    fn random_text(random: &mut Random, pieces: u64) -> String {
        const PIECES: &[&str] =
            &["a", "bc", " ", "=", "\"", "é", "€", "😀", "𝄞", "\n", "\r", "\r\n", "\t", "\u{85}", "\u{2028}"];
        (0..random.below(pieces + 1)).map(|_| PIECES[random.below(PIECES.len() as u64) as usize]).collect()
    }

    #[test]
    fn random_changes_apply_as_with_a_new_line_index_per_range() {
        let mut random = Random::seeded(16);
        for case in 0..3_000 {
            let text = random_text(&mut random, 40);
            let changes: Vec<_> = (0..=random.below(8))
                .map(|_| {
                    // Lines and characters past the ends, inside surrogate pairs, and reversed ranges too.
                    let mut position = || Position::new(random.below(12) as u32, random.below(12) as u32);
                    let range = lsp_types::Range::new(position(), position());
                    let range = (!random.chance(5)).then_some(range);
                    TextDocumentContentChangeEvent { range, range_length: None, text: random_text(&mut random, 6) }
                })
                .collect();
            let expected = changed_by_new_line_indexes(&text, &changes);
            assert_eq!(changed(&text, changes.clone()), expected, "case {case}: {text:?} changed by {changes:?}");
        }
    }

    #[test]
    fn a_change_of_5000_ranges_into_5_mb_matches_one_pass_over_the_text() {
        let mut random = Random::seeded(5_000);
        // Lines ending in LF or CRLF, never a lone CR: a range's end then never meets a line
        // break that a later range's text completes, so the ranges do not move each other.
        const PIECES: &[&str] = &["name", " = ", "\"é\"", "😀", "€", "x", "# ", "[models.a]", "𝄞", "\t"];
        let mut text = String::with_capacity(5_100_000);
        while text.len() < 5_000_000 {
            text.extend((0..random.below(24)).map(|_| PIECES[random.below(PIECES.len() as u64) as usize]));
            text.push_str(if random.chance(30) { "\r\n" } else { "\n" });
        }
        // 5,000 disjoint spans between characters (not between a CR and its LF), in order.
        let mut cuts: Vec<usize> = (0..10_000)
            .map(|_| {
                let mut offset = random.below(text.len() as u64 + 1) as usize;
                while !text.is_char_boundary(offset) || text[..offset].ends_with('\r') {
                    offset -= 1;
                }
                offset
            })
            .collect();
        cuts.sort_unstable();
        let replacements = ["", "y", "é😀\n", "\r\n# 𝄞\r\n", "[a]\n\n"];
        let edits: Vec<(Range<usize>, &str)> = cuts
            .chunks(2)
            .map(|span| (span[0]..span[1], replacements[random.below(replacements.len() as u64) as usize]))
            .collect();
        let mut expected = String::with_capacity(text.len());
        let mut copied = 0;
        for (span, replacement) in &edits {
            expected += &text[copied..span.start];
            expected += replacement;
            copied = span.end;
        }
        expected += &text[copied..];
        // Last first, as editors send a multi-cursor edit: a range is then where it was in the
        // text as opened, whatever the ranges after it in the text did.
        let lines = Lines::new(&text);
        let changes = edits
            .iter()
            .rev()
            .map(|(span, replacement)| TextDocumentContentChangeEvent {
                range: Some(lines.range(&text, span)),
                range_length: None,
                text: (*replacement).to_owned(),
            })
            .collect();
        let result = changed(&text, changes);
        let differs = result.bytes().zip(expected.bytes()).position(|(a, b)| a != b);
        assert!(
            result == expected,
            "{} bytes, {} expected, first differing at {differs:?}",
            result.len(),
            expected.len()
        );
    }
}
