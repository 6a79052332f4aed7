//! The names a config declares and uses, across its files: models, outbox categories, scopes,
//! options and sinks, each place written, from the files' syntax. Definition, references,
//! rename and the names completion offers all read this one index.

use std::ops::Range;
use std::sync::Arc;

use super::syntax::{Quote, Segment, Syntax};
use crate::diagnostic::FileId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Model,
    Category,
    Scope,
    Option,
    Sink,
}

impl Kind {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Model => "model",
            Kind::Category => "outbox category",
            Kind::Scope => "scope",
            Kind::Option => "option",
            Kind::Sink => "sink",
        }
    }
}

/// One place a name is written: declared (a model's key, a category in a scope's
/// `categories`) or used (a relation's `model`, a model's `outbox`).
#[derive(Debug, Clone)]
pub(crate) struct Occurrence {
    pub kind: Kind,
    pub name: String,
    pub file: FileId,
    /// The key or string token, quotes included.
    pub span: Range<usize>,
    pub quote: Quote,
    pub declares: bool,
}

impl Occurrence {
    /// The name's text inside the token's quotes.
    pub(crate) fn name_span(&self) -> Option<Range<usize>> {
        match self.quote {
            Quote::Bare => Some(self.span.clone()),
            Quote::Basic | Quote::Literal if self.span.len() >= 2 => Some(self.span.start + 1..self.span.end - 1),
            _ => None,
        }
    }
}

/// What a key (`key`) or string value at `path` names, and whether it declares it.
fn role(path: &[Segment], key: bool) -> Option<(Kind, bool)> {
    let keys: Vec<Option<&str>> = path.iter().map(Segment::key).collect();
    let role = match (key, keys.as_slice()) {
        (true, [Some("models"), Some(_)]) => (Kind::Model, true),
        (false, [Some("models"), Some(_), Some("children"), None, Some("model")]) => (Kind::Model, false),
        (false, [Some("models"), Some(_), Some("outbox")]) => (Kind::Category, false),
        (false, [Some("outbox"), Some("scopes"), Some(_), Some("categories"), None]) => (Kind::Category, true),
        (true, [Some("outbox"), Some("scopes"), Some(_), Some("category_sinks"), Some(_)]) => (Kind::Category, false),
        (true, [Some("outbox"), Some("scopes"), Some(_)]) => (Kind::Scope, true),
        (false, [Some("outbox"), Some("scopes"), Some(_), Some("sink")]) => (Kind::Sink, false),
        (false, [Some("outbox"), Some("scopes"), Some(_), Some("category_sinks" | "cell_sinks"), Some(_)]) => {
            (Kind::Sink, false)
        }
        (true, [Some("outbox"), Some("sinks"), Some(_)]) => (Kind::Sink, true),
        (true, [Some("options"), Some(_)]) => (Kind::Option, true),
        (false, [Some("models"), Some(_), Some("rate_limit")]) => (Kind::Option, false),
        _ => return None,
    };
    Some(role)
}

/// Every place a name is written in one file, in the order written.
pub(crate) fn occurrences(file: FileId, syntax: &Syntax) -> Vec<Occurrence> {
    let mut occurrences = Vec::new();
    for key in &syntax.keys {
        if let (Some((kind, declares)), Some(Segment::Key(name))) = (role(&key.path, true), key.path.last()) {
            let name = name.clone();
            let (span, quote) = (key.span.clone(), key.quote);
            occurrences.push(Occurrence { kind, name, file, span, quote, declares });
        }
    }
    for scalar in &syntax.scalars {
        if let (Some((kind, declares)), Some(name)) = (role(&scalar.path, false), &scalar.string) {
            let (span, quote) = (scalar.span.clone(), scalar.quote);
            occurrences.push(Occurrence { kind, name: name.clone(), file, span, quote, declares });
        }
    }
    occurrences
}

/// The index of a config: each file's occurrences (shared with the analyses before, for the
/// files that did not change).
#[derive(Debug, Default)]
pub(crate) struct Symbols {
    files: Vec<Arc<Vec<Occurrence>>>,
}

impl Symbols {
    /// The index of every file's occurrences, by [`FileId`].
    pub(crate) fn new(files: Vec<Arc<Vec<Occurrence>>>) -> Self {
        Self { files }
    }

    /// The name written at `offset` of `file` (its token's end included).
    pub(crate) fn at(&self, file: FileId, offset: usize) -> Option<&Occurrence> {
        self.files.get(file)?.iter().find(|occurrence| occurrence.span.start <= offset && offset <= occurrence.span.end)
    }

    fn all(&self) -> impl Iterator<Item = &Occurrence> {
        self.files.iter().flat_map(|file| file.iter())
    }

    /// Every place `name` of `kind` is written, in file order.
    pub(crate) fn of<'a>(&'a self, kind: Kind, name: &'a str) -> impl Iterator<Item = &'a Occurrence> + 'a {
        self.all().filter(move |occurrence| occurrence.kind == kind && occurrence.name == name)
    }

    /// The names of `kind`, each once: those declared first, then those only used, each in the
    /// order first written.
    pub(crate) fn names(&self, kind: Kind) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        let mut names: Vec<&str> = Vec::new();
        for declared in [true, false] {
            for occurrence in self.all().filter(|o| o.kind == kind && o.declares == declared) {
                if seen.insert(occurrence.name.as_str()) {
                    names.push(&occurrence.name);
                }
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_and_uses_of_every_kind_are_indexed() {
        let text = r#"[options]
"org.rows" = 5

[models.org]
table = "org"
rate_limit = "org.rows"
outbox = "org_update"
children = [{ model = "proj", column = "org_id" }]

[models.proj]
table = "proj"

[outbox.scopes.org]
shard_key = "id"
categories = ["org_update"]
sink = "hook"
category_sinks = { org_update = "hook" }

[outbox.scopes.region]
shard_key = "id"
cells = ["us"]
cell_sinks = { us = "hook" }

[outbox.sinks.hook]
url = "https://example.com"
"#;
        let syntax = Syntax::parse(text);
        let symbols = Symbols::new(vec![Arc::new(occurrences(0, &syntax))]);
        let written: Vec<(Kind, &str, bool, &str)> =
            symbols.all().map(|o| (o.kind, o.name.as_str(), o.declares, &text[o.span.clone()])).collect();
        assert_eq!(
            written,
            [
                (Kind::Option, "org.rows", true, "\"org.rows\""),
                (Kind::Model, "org", true, "org"),
                (Kind::Model, "proj", true, "proj"),
                (Kind::Scope, "org", true, "org"),
                (Kind::Category, "org_update", false, "org_update"),
                (Kind::Scope, "region", true, "region"),
                (Kind::Sink, "hook", true, "hook"),
                (Kind::Option, "org.rows", false, "\"org.rows\""),
                (Kind::Category, "org_update", false, "\"org_update\""),
                (Kind::Model, "proj", false, "\"proj\""),
                (Kind::Category, "org_update", true, "\"org_update\""),
                (Kind::Sink, "hook", false, "\"hook\""),
                (Kind::Sink, "hook", false, "\"hook\""),
                (Kind::Sink, "hook", false, "\"hook\""),
            ]
        );
        assert_eq!(symbols.names(Kind::Category), ["org_update"]);
        let at = symbols.at(0, text.find("\"proj\"").unwrap() + 2).unwrap();
        assert_eq!((at.kind, at.name.as_str(), &text[at.name_span().unwrap()]), (Kind::Model, "proj", "proj"));
    }
}
