//! Reading the raw, spanned TOML tree into typed values. Every problem becomes a diagnostic and
//! reading goes on, so one run reports everything that is wrong.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::located::Located;
use crate::diagnostic::text::{escaped, is_hidden, shown};
use crate::diagnostic::{Code, Diagnostic, FileId, Location, did_you_mean};

pub(crate) type Diagnostics = Vec<Diagnostic>;

/// A raw TOML value, the file it came from and the key it was written under (for messages).
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    pub file: FileId,
    pub key: &'a str,
    pub value: &'a Spanned<DeValue<'a>>,
    /// Whether this is one item of the array under `key`.
    pub item: bool,
}

impl<'a> Node<'a> {
    pub(super) fn location(&self) -> Location {
        Location::new(self.file, self.value.span())
    }

    fn located<T>(&self, value: T) -> Located<T> {
        Located::new(value, self.location())
    }

    fn wrong_type(&self, expected: &str, d: &mut Diagnostics) {
        let found = match self.value.get_ref() {
            DeValue::String(_) => "a string",
            DeValue::Integer(_) => "an integer",
            DeValue::Float(_) => "a float",
            DeValue::Boolean(_) => "a boolean",
            DeValue::Datetime(_) => "a datetime",
            DeValue::Array(_) => "an array",
            DeValue::Table(_) => "a table",
        };
        d.push(
            Diagnostic::new(
                Code::InvalidType,
                self.location(),
                format!("`{}` must be {expected}, found {found}", self.key),
            )
            .label(format!("expected {expected}")),
        );
    }

    pub(super) fn invalid(&self, message: impl Into<String>, label: impl Into<String>, d: &mut Diagnostics) {
        d.push(Diagnostic::new(Code::InvalidValue, self.location(), message).label(label));
    }

    pub(super) fn string(&self, d: &mut Diagnostics) -> Option<Located<String>> {
        match self.value.get_ref() {
            DeValue::String(s) => Some(self.located(s.to_string())),
            _ => {
                self.wrong_type("a string", d);
                None
            }
        }
    }

    pub(super) fn integer(&self, d: &mut Diagnostics) -> Option<Located<i64>> {
        match self.value.get_ref() {
            DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(value) => Some(self.located(value)),
                Err(_) => {
                    self.invalid(format!("`{}` is out of range", self.key), "too large", d);
                    None
                }
            },
            _ => {
                self.wrong_type("an integer", d);
                None
            }
        }
    }

    pub(super) fn unsigned(&self, d: &mut Diagnostics) -> Option<Located<u64>> {
        let value = self.integer(d)?;
        match u64::try_from(value.value) {
            Ok(unsigned) => Some(self.located(unsigned)),
            Err(_) => {
                self.invalid(format!("`{}` must not be negative", self.key), "negative", d);
                None
            }
        }
    }

    /// A whole number of at least 1 (a count or a time that 0 would make meaningless).
    pub(super) fn positive(&self, d: &mut Diagnostics) -> Option<Located<u64>> {
        let value = self.unsigned(d)?;
        if value.value == 0 {
            self.invalid(format!("`{}` must be at least 1", self.key), "zero", d);
            return None;
        }
        Some(value)
    }

    /// A non-negative number, integer or float.
    pub(super) fn number(&self, d: &mut Diagnostics) -> Option<Located<f64>> {
        let number = match self.value.get_ref() {
            DeValue::Integer(_) => self.integer(d)?.value as f64,
            DeValue::Float(f) => match f.as_str().parse::<f64>() {
                Ok(value) if value.is_finite() => value,
                _ => {
                    self.invalid(format!("`{}` must be a finite number", self.key), "not finite", d);
                    return None;
                }
            },
            _ => {
                self.wrong_type("a number", d);
                return None;
            }
        };
        if number < 0.0 {
            self.invalid(format!("`{}` must not be negative", self.key), "negative", d);
            return None;
        }
        Some(self.located(number))
    }

    pub(super) fn boolean(&self, d: &mut Diagnostics) -> Option<Located<bool>> {
        match self.value.get_ref() {
            DeValue::Boolean(b) => Some(self.located(*b)),
            _ => {
                self.wrong_type("a boolean", d);
                None
            }
        }
    }

    /// A name from a fixed set, such as a strategy.
    pub(super) fn keyword<T>(
        &self,
        names: &[&str],
        parse: impl Fn(&str) -> Option<T>,
        d: &mut Diagnostics,
    ) -> Option<Located<T>> {
        let text = self.string(d)?;
        match parse(&text.value) {
            Some(value) => Some(self.located(value)),
            None => {
                let expected = names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(" or ");
                let mut diagnostic = Diagnostic::new(
                    Code::InvalidValue,
                    self.location(),
                    format!("`{}` must be {expected}, found \"{}\"", self.key, text.value),
                )
                .label(format!("expected {expected}"));
                if let Some(help) = did_you_mean(&text.value, names.iter().copied()) {
                    diagnostic = diagnostic.help(help);
                }
                d.push(diagnostic);
                None
            }
        }
    }

    /// A table or column name, optionally `schema.`-qualified. Names are always quoted in SQL;
    /// refusing empty parts, quotes and control characters keeps that quoting trivially sound.
    pub(super) fn identifier(&self, d: &mut Diagnostics) -> Option<Located<String>> {
        let name = self.string(d)?;
        let parts: Vec<&str> = name.value.split('.').collect();
        if parts.len() <= 2 && parts.iter().all(|part| is_identifier(part)) {
            Some(name)
        } else {
            self.invalid(
                format!("`{}` must be a SQL identifier, found \"{}\"", self.key, name.value),
                "a name, or `schema.name`, without quotes or control characters",
                d,
            );
            None
        }
    }

    /// A string that names a `noun` (a model, a category, a sink...), checked as a name.
    pub(super) fn name(&self, noun: &str, d: &mut Diagnostics) -> Option<Located<String>> {
        let name = self.string(d)?;
        check_name(&name, noun, d);
        Some(name)
    }

    pub(super) fn array(&self, d: &mut Diagnostics) -> Option<Vec<Node<'a>>> {
        match self.value.get_ref() {
            DeValue::Array(items) => {
                Some(items.iter().map(|value| Node { file: self.file, key: self.key, value, item: true }).collect())
            }
            _ => {
                self.wrong_type("an array", d);
                None
            }
        }
    }

    /// An array whose items are each read by `item`; bad items are reported and left out.
    pub(super) fn array_of<T>(
        &self,
        d: &mut Diagnostics,
        item: impl Fn(&Node<'a>, &mut Diagnostics) -> Option<T>,
    ) -> Vec<T> {
        self.array(d).unwrap_or_default().iter().filter_map(|node| item(node, d)).collect()
    }

    /// The table under this key; messages about its keys call it `described` (or by its key).
    pub(super) fn table(&self, d: &mut Diagnostics) -> Option<Fields<'a>> {
        let described = if self.item { format!("a `{}` entry", self.key) } else { format!("`{}`", self.key) };
        self.table_described(described, d)
    }

    pub(super) fn table_described(&self, described: String, d: &mut Diagnostics) -> Option<Fields<'a>> {
        match self.value.get_ref() {
            DeValue::Table(table) => Some(Fields::new(self.location(), described, [(self.file, table)])),
            _ => {
                self.wrong_type("a table", d);
                None
            }
        }
    }
}

/// A name that quoting keeps sound and that reads the same in every message: not empty, not
/// only spaces, and without quotes, backticks, control characters, line or paragraph
/// separators, or the bidirectional controls that make text display differently from what it is.
pub(crate) fn is_identifier(name: &str) -> bool {
    !name.trim().is_empty() && !name.chars().any(|c| is_hidden(c) || c == '"' || c == '`')
}

/// Reports `name`, of a `noun`, when it holds a hidden character (`invalid-name`). The name is
/// kept: it is reported once here, and every message that repeats it shows it escaped.
pub(super) fn check_name(name: &Located<String>, noun: &str, d: &mut Diagnostics) {
    let Some(hidden) = name.value.chars().find(|&c| is_hidden(c)) else { return };
    d.push(
        Diagnostic::new(
            Code::InvalidName,
            name.location.clone(),
            format!("the {noun} name `{}` holds the character `{}`", shown(&name.value), escaped(hidden)),
        )
        .label("a control character in a name")
        .help("names are identifiers: remove the character (a TOML escape such as `\\n` or `\\u001B` writes one)"),
    );
}

struct Field<'a> {
    key: &'a Spanned<std::borrow::Cow<'a, str>>,
    node: Node<'a>,
}

impl Field<'_> {
    fn key_location(&self) -> Location {
        Location::new(self.node.file, self.key.span())
    }
}

/// The keys of one table, possibly gathered from several files (`[settings]` in two files is one
/// table). Keys are taken one by one; whatever is left at `finish` is an unknown key.
pub(crate) struct Fields<'a> {
    owner: Location,
    /// How messages name this table: "model `x`", "[settings]".
    described: String,
    entries: Vec<Field<'a>>,
    known: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(
        owner: Location,
        described: String,
        tables: impl IntoIterator<Item = (FileId, &'a DeTable<'a>)>,
    ) -> Self {
        let entries = tables
            .into_iter()
            .flat_map(|(file, table)| {
                table
                    .iter()
                    .map(move |(key, value)| Field { key, node: Node { file, key: key.get_ref(), value, item: false } })
            })
            .collect();
        Self { owner, described, entries, known: Vec::new() }
    }

    /// Like `new`, but a key written in more than one table is a `duplicate-declaration` of a
    /// `noun` (model, scope, ...) naming both places; the first one is kept.
    pub(super) fn merged(
        owner: Location,
        described: &str,
        noun: &str,
        tables: impl IntoIterator<Item = (FileId, &'a DeTable<'a>)>,
        describe: impl Fn(&Location) -> String,
        d: &mut Diagnostics,
    ) -> Self {
        let mut fields = Self::new(owner, described.to_owned(), tables);
        let mut seen: indexmap::IndexMap<&str, Location> = indexmap::IndexMap::new();
        fields.entries.retain(|field| {
            let location = field.key_location();
            match seen.get(field.key.get_ref().as_ref()) {
                Some(first) => {
                    d.push(
                        Diagnostic::new(
                            Code::DuplicateDeclaration,
                            location,
                            format!(
                                "{noun} `{}` is declared twice (first at {})",
                                field.key.get_ref(),
                                describe(first)
                            ),
                        )
                        .label("declared again here")
                        .related(first.clone(), "first declared here")
                        .help(format!("keep one declaration of the {noun}")),
                    );
                    false
                }
                None => {
                    seen.insert(field.key.get_ref(), location);
                    true
                }
            }
        });
        fields
    }

    /// Whether the table has `key`, leaving it to be taken.
    pub(super) fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|f| f.key.get_ref() == key)
    }

    /// How messages name this table from now on.
    pub(super) fn describe_as(&mut self, described: String) {
        self.described = described;
    }

    /// Reports that the table has none of `keys`, one of which it needs.
    pub(super) fn missing_one_of(&self, keys: &[&str], d: &mut Diagnostics) {
        let names: Vec<String> = keys.iter().map(|key| format!("`{key}`")).collect();
        d.push(
            Diagnostic::new(
                Code::MissingKey,
                self.owner.clone(),
                format!("{} has no {}", self.described, names.join(" or ")),
            )
            .label(format!("{} is required here", names.join(" or "))),
        );
    }

    /// Takes `key` if present; either way `key` becomes a known key of this table.
    pub(super) fn optional(&mut self, key: &'static str) -> Option<Node<'a>> {
        self.known.push(key);
        let index = self.entries.iter().position(|f| f.key.get_ref() == key)?;
        Some(self.entries.remove(index).node)
    }

    pub(super) fn required(&mut self, key: &'static str, d: &mut Diagnostics) -> Option<Node<'a>> {
        let node = self.optional(key);
        if node.is_none() {
            d.push(
                Diagnostic::new(Code::MissingKey, self.owner.clone(), format!("{} has no `{key}`", self.described))
                    .label(format!("`{key}` is required here")),
            );
        }
        node
    }

    /// Takes every remaining entry, each key a name of a `noun` (models, scopes), checked as one.
    pub(super) fn take_names(&mut self, noun: &str, d: &mut Diagnostics) -> Vec<(Located<String>, Node<'a>)> {
        let entries = self.take_all();
        for (name, _) in &entries {
            check_name(name, noun, d);
        }
        entries
    }

    /// Takes every remaining entry, for tables keyed by user-chosen keys (headers, properties).
    pub(super) fn take_all(&mut self) -> Vec<(Located<String>, Node<'a>)> {
        self.entries
            .drain(..)
            .map(|field| (Located::new(field.key.get_ref().to_string(), field.key_location()), field.node))
            .collect()
    }

    /// Reports every key that was not taken as `unknown-key`, with the nearest known key.
    pub(super) fn finish(self, d: &mut Diagnostics) {
        for field in self.entries {
            let key = field.key.get_ref();
            let mut diagnostic = Diagnostic::new(
                Code::UnknownKey,
                field.key_location(),
                format!("unknown key `{key}` in {}", self.described),
            )
            .label("unknown key");
            diagnostic = match did_you_mean(key, self.known.iter().copied()) {
                Some(help) => diagnostic.help(help),
                None => diagnostic.help(format!("expected one of: {}", self.known.join(", "))),
            };
            d.push(diagnostic);
        }
    }
}
