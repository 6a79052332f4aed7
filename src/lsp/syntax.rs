//! One config file as written: every key and value with its path from the file's root and its
//! span, read from the events of `toml_parser`, the parser the config reader's spanned tables
//! (`toml::de::DeTable`) are built from. The tables keep one place per key; the events keep each
//! place a key is written (`org` in both `[models.org]` and `[models.org.status]`), which a
//! rename must change, and what comes before a syntax error reads as in a complete file, which
//! is what completion needs while a value is half typed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use toml_parser::decoder::Encoding;
use toml_parser::parser::{Event, EventKind, RecursionGuard};
use toml_parser::{Source, Span};

/// How deep arrays and inline tables may nest before the parser stops descending, as the config
/// reader's parser does: garbage such as a long run of `[` costs nothing more.
const MAX_DEPTH: u32 = 80;

/// One step of a path into a config file: a key, or an item of an array.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

impl Segment {
    pub(crate) fn key(&self) -> Option<&str> {
        match self {
            Segment::Key(key) => Some(key),
            Segment::Index(_) => None,
        }
    }
}

/// How a key or string is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quote {
    /// A bare key, or a value that is no string.
    Bare,
    /// `"..."`
    Basic,
    /// `'...'`
    Literal,
    /// `"""..."""` or `'''...'''`
    Multiline,
}

impl Quote {
    fn of(encoding: Option<Encoding>) -> Self {
        match encoding {
            None => Quote::Bare,
            Some(Encoding::BasicString) => Quote::Basic,
            Some(Encoding::LiteralString) => Quote::Literal,
            Some(Encoding::MlBasicString | Encoding::MlLiteralString) => Quote::Multiline,
        }
    }
}

/// A key as written, named by its whole path (which ends with it).
#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub path: Vec<Segment>,
    pub span: Range<usize>,
    pub quote: Quote,
}

/// A value that is no array or table; `string` is its text when it is a string.
#[derive(Debug, Clone)]
pub(crate) struct Scalar {
    pub path: Vec<Segment>,
    pub span: Range<usize>,
    pub string: Option<String>,
    pub quote: Quote,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContainerKind {
    /// A table under a `[header]` or `[[header]]`.
    Header,
    /// `{ ... }`
    Inline,
    /// `[ ... ]` as a value.
    Array,
}

/// A table or array as written: where it opens and closes, and where each of its items (an
/// array's values, a table's key-value pairs) is.
#[derive(Debug, Clone)]
pub(crate) struct Container {
    pub path: Vec<Segment>,
    pub kind: ContainerKind,
    /// The `[` or `{`, or the whole header.
    pub open: Range<usize>,
    /// The offset of the closing `]` or `}`; none for a header's table or when it is missing.
    pub close: Option<usize>,
    pub items: Vec<Range<usize>>,
    /// Whether a comma follows the last item.
    pub trailing_comma: bool,
}

/// Everything written in one file.
#[derive(Debug, Default)]
pub(crate) struct Syntax {
    pub keys: Vec<Key>,
    pub scalars: Vec<Scalar>,
    pub containers: Vec<Container>,
}

impl Syntax {
    pub(crate) fn parse(text: &str) -> Self {
        let events = events(text);
        let mut walker = Walker::new(text);
        for event in &events {
            walker.event(event);
        }
        walker.syntax
    }

    /// The table or array written at `path` (TOML writes each once).
    pub(crate) fn container_at(&self, path: &[Segment]) -> Option<&Container> {
        self.containers.iter().find(|container| container.path == path)
    }

    /// The key or string value whose token holds `offset` (its end included, where the cursor
    /// stands after typing it).
    pub(crate) fn at(&self, offset: usize) -> Option<Token<'_>> {
        let holds = |span: &Range<usize>| span.start <= offset && offset <= span.end;
        if let Some(key) = self.keys.iter().find(|key| holds(&key.span)) {
            return Some(Token::Key(key));
        }
        self.scalars.iter().find(|scalar| holds(&scalar.span)).map(Token::Scalar)
    }
}

/// A key or a value under the cursor.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Token<'a> {
    Key(&'a Key),
    Scalar(&'a Scalar),
}

impl Token<'_> {
    pub(crate) fn path(&self) -> &[Segment] {
        match self {
            Token::Key(key) => &key.path,
            Token::Scalar(scalar) => &scalar.path,
        }
    }

    pub(crate) fn span(&self) -> &Range<usize> {
        match self {
            Token::Key(key) => &key.span,
            Token::Scalar(scalar) => &scalar.span,
        }
    }
}

fn events(text: &str) -> Vec<Event> {
    let source = Source::new(text);
    let tokens = source.lex().into_vec();
    let mut events: Vec<Event> = Vec::with_capacity(tokens.len());
    let mut guard = RecursionGuard::new(&mut events, MAX_DEPTH);
    toml_parser::parser::parse_document(&tokens, &mut guard, &mut ());
    events
}

fn range(span: Span) -> Range<usize> {
    span.start()..span.end()
}

/// The text of a key or string token; a string that is not closed reads up to where it stops.
fn decode(text: &str, event: &Event, key: bool) -> String {
    let span = event.span();
    let raw = toml_parser::Raw::new_unchecked(&text[range(span)], event.encoding(), span);
    let mut decoded = Cow::Borrowed("");
    if key {
        raw.decode_key(&mut decoded, &mut ());
    } else {
        let _ = raw.decode_scalar(&mut decoded, &mut ());
    }
    decoded.into_owned()
}

/// An array or inline table being read, innermost last.
enum Frame {
    Array { container: usize, count: usize },
    Inline { container: usize, keys: Vec<Segment> },
}

struct Walker<'a> {
    text: &'a str,
    syntax: Syntax,
    /// The path of the current `[header]`'s table, and its container.
    table: Vec<Segment>,
    table_container: Option<usize>,
    /// The keys of a header being read, and whether it is an array of tables.
    header: Option<(Vec<Segment>, bool, usize)>,
    /// The keys of a key-value pair being read at the table's level.
    keys: Vec<Segment>,
    /// Where the key-value pair being read starts.
    entry_start: Option<usize>,
    stack: Vec<Frame>,
    /// How many `[[path]]` tables each path has had.
    array_tables: HashMap<Vec<Segment>, usize>,
    /// The last event that is neither whitespace nor a comment nor made up at the end of the
    /// text, and whether a line ended after it.
    last: Option<(EventKind, Range<usize>)>,
    newline_after_last: bool,
}

impl<'a> Walker<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            syntax: Syntax::default(),
            table: Vec::new(),
            table_container: None,
            header: None,
            keys: Vec::new(),
            entry_start: None,
            stack: Vec::new(),
            array_tables: HashMap::new(),
            last: None,
            newline_after_last: false,
        }
    }

    fn container(&mut self, path: Vec<Segment>, kind: ContainerKind, open: Range<usize>) -> usize {
        self.syntax.containers.push(Container {
            path,
            kind,
            open,
            close: None,
            items: Vec::new(),
            trailing_comma: false,
        });
        self.syntax.containers.len() - 1
    }

    fn event(&mut self, event: &Event) {
        let span = range(event.span());
        match event.kind() {
            EventKind::Whitespace | EventKind::Comment => return,
            EventKind::Newline => {
                self.newline_after_last = true;
                if self.stack.is_empty() && self.header.is_none() {
                    // A key without `=` ends with its line.
                    self.keys.clear();
                    self.entry_start = None;
                }
                return;
            }
            // What the parser makes up to recover (a missing value, a missing `]`) is not written.
            _ if span.is_empty() => {}
            kind => {
                self.last = Some((kind, span.clone()));
                self.newline_after_last = false;
            }
        }
        match event.kind() {
            EventKind::StdTableOpen | EventKind::ArrayTableOpen => {
                self.stack.clear();
                self.keys.clear();
                self.header = Some((Vec::new(), event.kind() == EventKind::ArrayTableOpen, span.start));
            }
            EventKind::StdTableClose | EventKind::ArrayTableClose => self.close_header(span.end),
            EventKind::SimpleKey => self.key(event, span),
            EventKind::Scalar => {
                let path = self.value_path(span.start);
                let string = event.encoding().map(|_| decode(self.text, event, false));
                self.syntax.scalars.push(Scalar {
                    path,
                    span: span.clone(),
                    string,
                    quote: Quote::of(event.encoding()),
                });
                self.value_end(span.end);
            }
            EventKind::ArrayOpen | EventKind::InlineTableOpen => {
                let path = self.value_path(span.start);
                if event.kind() == EventKind::ArrayOpen {
                    let container = self.container(path, ContainerKind::Array, span);
                    self.stack.push(Frame::Array { container, count: 0 });
                } else {
                    let container = self.container(path, ContainerKind::Inline, span);
                    self.stack.push(Frame::Inline { container, keys: Vec::new() });
                }
            }
            EventKind::ArrayClose | EventKind::InlineTableClose => {
                if let Some(Frame::Array { container, .. } | Frame::Inline { container, .. }) = self.stack.pop() {
                    if !span.is_empty() {
                        self.syntax.containers[container].close = Some(span.start);
                    }
                    self.value_end(span.end);
                }
            }
            EventKind::ValueSep => {
                if let Some(Frame::Array { container, .. } | Frame::Inline { container, .. }) = self.stack.last() {
                    self.syntax.containers[*container].trailing_comma = true;
                }
            }
            _ => {}
        }
    }

    fn close_header(&mut self, end: usize) {
        let Some((mut path, array, start)) = self.header.take() else { return };
        if array {
            let count = self.array_tables.entry(path.clone()).or_default();
            path.push(Segment::Index(*count));
            *count += 1;
        }
        self.table = path.clone();
        self.table_container = Some(self.container(path, ContainerKind::Header, start..end));
    }

    fn key(&mut self, event: &Event, span: Range<usize>) {
        let segment = Segment::Key(decode(self.text, event, true));
        let quote = Quote::of(event.encoding());
        let path = if let Some((keys, _, _)) = &mut self.header {
            keys.push(segment);
            keys.clone()
        } else {
            match self.stack.last_mut() {
                Some(Frame::Inline { container, keys }) => {
                    if keys.is_empty() {
                        self.syntax.containers[*container].items.push(span.start..span.end);
                        self.syntax.containers[*container].trailing_comma = false;
                    }
                    keys.push(segment);
                    [self.syntax.containers[*container].path.as_slice(), keys].concat()
                }
                Some(Frame::Array { .. }) => return,
                None => {
                    self.entry_start.get_or_insert(span.start);
                    self.keys.push(segment);
                    [self.table.as_slice(), &self.keys].concat()
                }
            }
        };
        self.syntax.keys.push(Key { path, span, quote });
    }

    /// The path of a value starting at `start`, taking the keys written before it.
    fn value_path(&mut self, start: usize) -> Vec<Segment> {
        match self.stack.last_mut() {
            Some(Frame::Array { container, count }) => {
                let array = &mut self.syntax.containers[*container];
                array.items.push(start..start);
                array.trailing_comma = false;
                let path = [array.path.as_slice(), &[Segment::Index(*count)]].concat();
                *count += 1;
                path
            }
            Some(Frame::Inline { container, keys }) => {
                [self.syntax.containers[*container].path.as_slice(), &std::mem::take(keys)].concat()
            }
            None => {
                let start = self.entry_start.take().unwrap_or(start);
                if let Some(table) = self.table_container {
                    self.syntax.containers[table].items.push(start..start);
                }
                [self.table.as_slice(), &std::mem::take(&mut self.keys)].concat()
            }
        }
    }

    /// A value ending at `end` ends the item it is of.
    fn value_end(&mut self, end: usize) {
        let container = match self.stack.last() {
            Some(Frame::Array { container, .. } | Frame::Inline { container, .. }) => Some(*container),
            None => self.table_container,
        };
        if let Some(item) = container.and_then(|container| self.syntax.containers[container].items.last_mut()) {
            item.end = end;
        }
    }

    /// The path of a value about to be written (its keys read, or the next item of an array).
    fn next_value_path(&self) -> Option<Vec<Segment>> {
        match self.stack.last() {
            Some(Frame::Array { container, count }) => {
                Some([self.syntax.containers[*container].path.as_slice(), &[Segment::Index(*count)]].concat())
            }
            Some(Frame::Inline { container, keys }) => {
                Some([self.syntax.containers[*container].path.as_slice(), keys].concat())
            }
            None if self.header.is_none() => Some([self.table.as_slice(), &self.keys].concat()),
            None => None,
        }
    }

    /// The table whose key is being written: the keys written so far but the last `skip`.
    fn key_table(&self, skip: usize) -> Vec<Segment> {
        let written = |keys: &[Segment]| keys[..keys.len().saturating_sub(skip)].to_vec();
        if let Some((keys, _, _)) = &self.header {
            return written(keys);
        }
        match self.stack.last() {
            Some(Frame::Inline { container, keys }) => {
                [self.syntax.containers[*container].path.as_slice(), &written(keys)].concat()
            }
            _ => [self.table.as_slice(), &written(&self.keys)].concat(),
        }
    }
}

/// What is being written at the cursor, read from the text before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cursor {
    /// A key of the table at `table` (in a `[header]` when `header`), typed from `start`.
    Key { table: Vec<Segment>, start: usize, header: bool },
    /// The value at `path`: inside a string whose text starts at `start` (`quoted`), or, not
    /// `quoted`, a bare word from `start` (nothing yet when it is the cursor).
    Value { path: Vec<Segment>, start: usize, quoted: bool },
}

/// What is being written at `offset` of `text`, if it is a key or a value.
pub(crate) fn cursor(text: &str, offset: usize) -> Option<Cursor> {
    let before = text.get(..offset)?;
    let events = events(before);
    let mut walker = Walker::new(before);
    // What the parser makes up at the end (a missing value, closing what is open) would take
    // the keys being written.
    let written = events.iter().rposition(|event| !event.span().is_empty()).map_or(0, |last| last + 1);
    if events[..written].last().is_some_and(|event| event.kind() == EventKind::Comment) {
        return None;
    }
    for event in &events[..written] {
        walker.event(event);
    }
    let ends_here = |span: &Range<usize>| span.end == offset;
    let Some((kind, span)) = walker.last.clone() else {
        return Some(Cursor::Key { table: Vec::new(), start: offset, header: false });
    };
    let in_array = matches!(walker.stack.last(), Some(Frame::Array { .. }));
    let in_inline = matches!(walker.stack.last(), Some(Frame::Inline { .. }));
    let value = |start: usize| walker.next_value_path().map(|path| Cursor::Value { path, start, quoted: false });
    match kind {
        EventKind::Scalar if ends_here(&span) && !walker.newline_after_last => {
            let scalar = walker.syntax.scalars.last()?;
            let raw = &before[span.clone()];
            match scalar.quote {
                Quote::Basic | Quote::Literal if !is_closed(raw) => {
                    Some(Cursor::Value { path: scalar.path.clone(), start: span.start + 1, quoted: true })
                }
                Quote::Bare if !raw.is_empty() => {
                    Some(Cursor::Value { path: scalar.path.clone(), start: span.start, quoted: false })
                }
                _ => None,
            }
        }
        EventKind::KeyValSep if !walker.newline_after_last => value(offset),
        EventKind::ArrayOpen | EventKind::ValueSep if in_array => value(offset),
        EventKind::InlineTableOpen | EventKind::ValueSep if in_inline => {
            Some(Cursor::Key { table: walker.key_table(0), start: offset, header: false })
        }
        EventKind::SimpleKey if ends_here(&span) && !walker.newline_after_last => {
            Some(Cursor::Key { table: walker.key_table(1), start: span.start, header: walker.header.is_some() })
        }
        EventKind::KeySep | EventKind::StdTableOpen | EventKind::ArrayTableOpen if ends_here(&span) => {
            Some(Cursor::Key { table: walker.key_table(0), start: offset, header: walker.header.is_some() })
        }
        _ if walker.newline_after_last && walker.stack.is_empty() && walker.header.is_none() => {
            let line_start = before.rfind(['\n', '\r']).map_or(0, |newline| newline + 1);
            before[line_start..].trim().is_empty().then(|| Cursor::Key {
                table: walker.table.clone(),
                start: offset,
                header: false,
            })
        }
        _ => None,
    }
}

/// Whether a one-line string token has its closing quote (not one escaped by a backslash).
fn is_closed(raw: &str) -> bool {
    let Some(quote) = raw.chars().next() else { return false };
    if raw.len() < 2 || !raw.ends_with(quote) {
        return false;
    }
    let backslashes = raw[1..raw.len() - 1].chars().rev().take_while(|c| *c == '\\').count();
    quote == '\'' || backslashes % 2 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<Segment> {
        text.split('.')
            .filter(|part| !part.is_empty())
            .map(|part| part.parse().map_or_else(|_| Segment::Key(part.to_owned()), Segment::Index))
            .collect()
    }

    fn key_paths(syntax: &Syntax, text: &str) -> Vec<(Vec<Segment>, String)> {
        syntax.keys.iter().map(|key| (key.path.clone(), text[key.span.clone()].to_owned())).collect()
    }

    const CONFIG: &str = r#"[models.org]
table = "org"
children = [
  { model = "proj", column = "org_id" },
  { model = 'team', columns = ["a", "b"] },
]

[models.org.status]
column = "s"

[[models.proj.children]]
model = "x"

[[models.proj.children]]
"model" = "y"
"#;

    #[test]
    fn every_key_is_named_by_its_whole_path_in_every_place_it_is_written() {
        let syntax = Syntax::parse(CONFIG);
        let keys = key_paths(&syntax, CONFIG);
        let expected: Vec<(Vec<Segment>, String)> = [
            ("models", "models"),
            ("models.org", "org"),
            ("models.org.table", "table"),
            ("models.org.children", "children"),
            ("models.org.children.0.model", "model"),
            ("models.org.children.0.column", "column"),
            ("models.org.children.1.model", "model"),
            ("models.org.children.1.columns", "columns"),
            ("models", "models"),
            ("models.org", "org"),
            ("models.org.status", "status"),
            ("models.org.status.column", "column"),
            ("models", "models"),
            ("models.proj", "proj"),
            ("models.proj.children", "children"),
            ("models.proj.children.0.model", "model"),
            ("models", "models"),
            ("models.proj", "proj"),
            ("models.proj.children", "children"),
            ("models.proj.children.1.model", "\"model\""),
        ]
        .iter()
        .map(|(p, text)| (path(p), (*text).to_owned()))
        .collect();
        assert_eq!(keys, expected);
        let strings: Vec<(Vec<Segment>, Option<String>)> =
            syntax.scalars.iter().map(|s| (s.path.clone(), s.string.clone())).collect();
        assert_eq!(strings[3], (path("models.org.children.1.model"), Some("team".to_owned())));
        assert_eq!(strings[4], (path("models.org.children.1.columns.0"), Some("a".to_owned())));
        assert_eq!(strings.last().unwrap(), &(path("models.proj.children.1.model"), Some("y".to_owned())));
    }

    #[test]
    fn containers_know_their_items_and_closing_bracket() {
        let syntax = Syntax::parse(CONFIG);
        let children = syntax.container_at(&path("models.org.children")).unwrap();
        let items: Vec<&str> = children.items.iter().map(|item| &CONFIG[item.clone()]).collect();
        assert_eq!(
            items,
            ["{ model = \"proj\", column = \"org_id\" }", "{ model = 'team', columns = [\"a\", \"b\"] }"]
        );
        assert!(children.trailing_comma);
        assert_eq!(&CONFIG[children.close.unwrap()..][..1], "]");
        let table = syntax.container_at(&path("models.org")).unwrap();
        assert_eq!(&CONFIG[table.open.clone()], "[models.org]");
        let entries: Vec<&str> = table.items.iter().map(|item| &CONFIG[item.clone()]).collect();
        assert_eq!(entries[0], "table = \"org\"");
        assert!(entries[1].starts_with("children = [") && entries[1].ends_with(']'));
    }

    fn cursor_at(text: &str) -> Option<Cursor> {
        let offset = text.find('|').unwrap();
        cursor(&text.replace('|', ""), offset)
    }

    #[test]
    fn the_cursor_is_in_a_value_or_a_key_even_in_an_unfinished_file() {
        let value = |p: &str, start: usize, quoted: bool| Some(Cursor::Value { path: path(p), start, quoted });
        let key = |p: &str, start: usize, header: bool| Some(Cursor::Key { table: path(p), start, header });
        assert_eq!(
            cursor_at("[models.a]\nchildren = [\n  { model = \"pr|"),
            value("models.a.children.0.model", 37, true)
        );
        assert_eq!(
            cursor_at("[models.a]\nchildren = [{ model = \"|\" }]\n"),
            value("models.a.children.0.model", 34, true)
        );
        assert_eq!(cursor_at("[models.a]\nstrategy = bu|"), value("models.a.strategy", 22, false));
        assert_eq!(cursor_at("[models.a]\nstrategy = |\n[models.b]\n"), value("models.a.strategy", 22, false));
        assert_eq!(cursor_at("[s.x]\ncategories = [\"a\", |"), value("s.x.categories.1", 25, false));
        assert_eq!(cursor_at("[s.x]\ncategories = [\"a\", \"b|\"]"), value("s.x.categories.1", 26, true));
        assert_eq!(cursor_at("[models.a]\nchu|"), key("models.a", 11, false));
        assert_eq!(cursor_at("[models.a]\ntable = \"a\"\n|"), key("models.a", 23, false));
        assert_eq!(cursor_at("[models.a]\nchildren = [{ model = \"b\", |"), key("models.a.children.0", 38, false));
        assert_eq!(cursor_at("[models.a]\nstatus.co|"), key("models.a.status", 18, false));
        assert_eq!(cursor_at("[outbox.sc|"), key("outbox", 8, true));
        assert_eq!(cursor_at("|"), key("", 0, false));
        assert_eq!(cursor_at("[models.a]\ntable = \"a\" |"), None);
        assert_eq!(cursor_at("[models.a]\ntable = \"a\"|"), None);
        assert_eq!(cursor_at("# a comment|"), None);
        assert_eq!(cursor_at("x = \"a\\\"|"), value("x", 5, true));
    }

    #[test]
    fn garbage_is_read_without_a_panic() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let alphabet: Vec<char> = "[]{}\"'=.,\n #\\abc1é\u{1F600}\r\t".chars().collect();
        for _ in 0..300 {
            let text: String = (0..200)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            let syntax = Syntax::parse(&text);
            assert!(syntax.keys.iter().all(|key| text.get(key.span.clone()).is_some()));
            for (offset, _) in text.char_indices() {
                let _ = cursor(&text, offset);
            }
        }
        let deep = "a = ".to_owned() + &"[".repeat(100_000);
        assert!(Syntax::parse(&deep).containers.len() <= MAX_DEPTH as usize + 2);
    }
}
