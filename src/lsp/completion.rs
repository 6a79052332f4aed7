//! Completion: the keys of the table at the cursor (from the JSON Schema), the names a value
//! refers to (models, categories, options, sinks), the values a key takes, and the tables and
//! columns of the schema when one is known. The cursor's place is read from the text being
//! typed; the names come from the latest analysis, which may be a keystroke behind.

use std::cell::LazyCell;

use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionList, CompletionTextEdit, Documentation, MarkupContent, TextEdit,
};

use super::analysis::Analysis;
use super::documents::Lines;
use super::keys;
use super::symbols::Kind;
use super::syntax::{self, Cursor, Segment, Syntax};
use crate::schema::Table;

/// The document being edited, parsed when first needed.
type Lazy<'a> = LazyCell<Syntax, Box<dyn FnOnce() -> Syntax + 'a>>;

/// One thing to offer: what it is called, what to write, and what to say about it.
struct Candidate {
    label: String,
    kind: CompletionItemKind,
    detail: Option<String>,
    documentation: Option<String>,
    /// Written as a TOML string (else as it is: a boolean).
    string: bool,
}

impl Candidate {
    fn name(label: &str, kind: CompletionItemKind, detail: Option<String>) -> Self {
        Self { label: label.to_owned(), kind, detail, documentation: None, string: true }
    }
}

/// The most items one answer holds: a config of thousands of models would otherwise send them
/// all on every keystroke. The list then says it is incomplete, and the editor asks again as
/// more is typed.
const MAX_ITEMS: usize = 100;

/// The completion items at `offset` of `text` (the open document, as it is now): those whose
/// label holds what is typed already, its characters in order (as editors match), at most
/// [`MAX_ITEMS`].
pub(crate) fn complete(analysis: &Analysis, text: &str, offset: usize) -> CompletionList {
    let Some(cursor) = syntax::cursor(text, offset) else { return CompletionList::default() };
    // The whole document's syntax only where its other keys matter: names need none of it.
    let syntax: Lazy<'_> = LazyCell::new(Box::new(|| Syntax::parse(text)));
    let lines = Lines::new(text);
    let (start, quoted, candidates) = match &cursor {
        Cursor::Key { table, start, header } => (*start, false, key_candidates(analysis, &syntax, table, *header)),
        Cursor::Value { path, start, quoted } => (*start, *quoted, value_candidates(analysis, &syntax, path)),
    };
    let range = lines.range(text, &(start..offset));
    let typed = text[start..offset].trim_start_matches('"').to_lowercase();
    let mut matching = candidates.into_iter().filter(|candidate| holds_in_order(&candidate.label, &typed));
    let candidates: Vec<Candidate> = matching.by_ref().take(MAX_ITEMS).collect();
    let is_incomplete = matching.next().is_some();
    let items = candidates
        .into_iter()
        .enumerate()
        .map(|(index, candidate)| {
            let new_text = match (&cursor, quoted, candidate.string) {
                (Cursor::Key { .. }, _, _) => toml_key(&candidate.label),
                (_, true, _) => escaped(&candidate.label),
                (_, false, true) => crate::planner::toml_string(&candidate.label),
                (_, false, false) => candidate.label.clone(),
            };
            CompletionItem {
                label: candidate.label,
                kind: Some(candidate.kind),
                detail: candidate.detail,
                documentation: candidate.documentation.map(|text| {
                    Documentation::MarkupContent(MarkupContent { kind: lsp_types::MarkupKind::Markdown, value: text })
                }),
                sort_text: Some(format!("{index:05}")),
                text_edit: Some(CompletionTextEdit::Edit(TextEdit { range, new_text })),
                ..CompletionItem::default()
            }
        })
        .collect();
    CompletionList { is_incomplete, items }
}

/// Whether `label` holds the characters of `typed` (lowercase) in order.
fn holds_in_order(label: &str, typed: &str) -> bool {
    let mut label = label.chars().flat_map(char::to_lowercase);
    typed.chars().all(|wanted| label.any(|c| c == wanted))
}

/// A key as TOML writes it: bare when it can be, else quoted.
pub(crate) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_owned() } else { crate::planner::toml_string(name) }
}

/// The inside of a basic TOML string holding `text`.
fn escaped(text: &str) -> String {
    let quoted = crate::planner::toml_string(text);
    quoted.strip_prefix('"').and_then(|inner| inner.strip_suffix('"')).unwrap_or(&quoted).to_owned()
}

fn key_candidates(analysis: &Analysis, syntax: &Lazy<'_>, table: &[Segment], header: bool) -> Vec<Candidate> {
    let written = |key: &str| {
        !header
            && syntax.keys.iter().any(|k| {
                k.path.len() == table.len() + 1
                    && k.path.starts_with(table)
                    && k.path.last().and_then(Segment::key) == Some(key)
            })
    };
    // The keys of a scope's sink tables are its categories (`category_sinks`) or cells (`cell_sinks`).
    if let [Segment::Key(outbox), Segment::Key(scopes), Segment::Key(scope), Segment::Key(sinks)] = table
        && (outbox.as_str(), scopes.as_str()) == ("outbox", "scopes")
        && let Some(named) = analysis.loaded.config.outbox.scopes.get(scope).and_then(|s| match sinks.as_str() {
            "category_sinks" => Some(&s.categories),
            "cell_sinks" => Some(&s.cells),
            _ => None,
        })
    {
        return named
            .iter()
            .filter(|name| !written(&name.value))
            .map(|name| Candidate::name(&name.value, CompletionItemKind::ENUM_MEMBER, None))
            .collect();
    }
    let written_keys: Vec<&str> = syntax
        .keys
        .iter()
        .filter(|k| !header && k.path.len() == table.len() + 1 && k.path.starts_with(table))
        .filter_map(|k| k.path.last().and_then(Segment::key))
        .collect();
    keys::keys(table, &written_keys)
        .into_iter()
        .filter(|(key, _)| !written(key))
        .map(|(key, description)| Candidate {
            label: key.to_owned(),
            kind: CompletionItemKind::PROPERTY,
            detail: None,
            documentation: Some(description.to_owned()),
            string: false,
        })
        .collect()
}

/// The string written at `path` in the document being edited.
fn string_at<'a>(syntax: &'a Syntax, path: &[Segment]) -> Option<&'a str> {
    syntax.scalars.iter().find(|scalar| scalar.path == path).and_then(|scalar| scalar.string.as_deref())
}

fn value_candidates(analysis: &Analysis, syntax: &Lazy<'_>, path: &[Segment]) -> Vec<Candidate> {
    let config = &analysis.loaded.config;
    let keys: Vec<Option<&str>> = path.iter().map(Segment::key).collect();
    let model_table = |model: &str| {
        string_at(syntax, &[key("models"), key(model), key("table")])
            .map(str::to_owned)
            .or_else(|| config.model(model).map(|m| m.table.value.clone()))
    };
    let named = |kind: Kind, item: CompletionItemKind, detail: &dyn Fn(&str) -> Option<String>| {
        analysis.symbols.names(kind).into_iter().map(|name| Candidate::name(name, item, detail(name))).collect()
    };
    match keys.as_slice() {
        [Some("models"), Some(_), Some("children"), None, Some("model")] => {
            named(Kind::Model, CompletionItemKind::CLASS, &|name| {
                config.model(name).map(|m| format!("table {}", m.table.value))
            })
        }
        [Some("models"), Some(_), Some("outbox")] => named(Kind::Category, CompletionItemKind::ENUM_MEMBER, &|name| {
            Some(config.scope_of(name).map_or_else(|| "in no scope".to_owned(), |s| format!("scope {}", s.name.value)))
        }),
        [Some("outbox"), Some("scopes"), Some(scope), Some("categories"), None] => {
            let registered = |category: &str| {
                config.outbox.scopes.get(*scope).is_some_and(|s| s.categories.iter().any(|c| c.value == category))
            };
            let mut used: Vec<&str> = Vec::new();
            for category in config.models.values().filter_map(|model| model.outbox.as_ref()) {
                if !registered(&category.value) && !used.contains(&category.value.as_str()) {
                    used.push(&category.value);
                }
            }
            let detail = |category: &str| config.scope_of(category).map(|s| format!("also in scope {}", s.name.value));
            used.into_iter().map(|c| Candidate::name(c, CompletionItemKind::ENUM_MEMBER, detail(c))).collect()
        }
        [Some("models"), Some(_), Some("rate_limit")] => named(Kind::Option, CompletionItemKind::VARIABLE, &|name| {
            config.options.get(name).map(|value| format!("= {}", value.value))
        }),
        [Some("outbox"), Some("scopes"), Some(_), Some("sink")]
        | [Some("outbox"), Some("scopes"), Some(_), Some("category_sinks" | "cell_sinks"), Some(_)] => {
            named(Kind::Sink, CompletionItemKind::MODULE, &|_| None)
        }
        [Some("models"), Some(_), Some("table")]
        | [Some("models"), Some(_), Some("ignore_references"), None, Some("table")] => tables(analysis),
        [Some("models"), Some(model), Some("key" | "outbox_payload"), ..]
        | [Some("models"), Some(model), Some("status" | "retention"), Some("column")]
        | [Some("models"), Some(model), Some("children"), None, Some("references"), ..] => {
            columns(analysis, model_table(model).as_deref())
        }
        [Some("models"), Some(_), Some("children"), None, Some("column" | "columns"), ..] => {
            let child = string_at(syntax, &[&path[..4], &[key("model")]].concat()).map(str::to_owned);
            columns(analysis, child.as_deref().and_then(model_table).as_deref())
        }
        [Some("models"), Some(_), Some("ignore_references"), None, Some("column" | "columns"), ..] => {
            columns(analysis, string_at(syntax, &[&path[..4], &[key("table")]].concat()))
        }
        [Some("outbox"), Some("scopes"), Some(scope), Some("shard_key")] => shard_key_columns(analysis, scope),
        _ => keys::values(path)
            .into_iter()
            .map(|(value, description)| {
                let string = value.starts_with('"');
                Candidate {
                    label: value.trim_matches('"').to_owned(),
                    kind: CompletionItemKind::VALUE,
                    detail: None,
                    documentation: (!description.is_empty()).then(|| description.to_owned()),
                    string,
                }
            })
            .collect(),
    }
}

fn key(name: &str) -> Segment {
    Segment::Key(name.to_owned())
}

fn tables(analysis: &Analysis) -> Vec<Candidate> {
    let Some(schema) = &analysis.schema else { return Vec::new() };
    schema
        .tables
        .iter()
        .map(|table| {
            let detail = format!("{} columns", table.columns.len());
            Candidate::name(&table.qualified_name(), CompletionItemKind::STRUCT, Some(detail))
        })
        .collect()
}

fn columns(analysis: &Analysis, table: Option<&str>) -> Vec<Candidate> {
    let Some(table) = analysis.schema.as_ref().zip(table).and_then(|(schema, table)| schema.table(table)) else {
        return Vec::new();
    };
    table_columns(table).collect()
}

fn table_columns(table: &Table) -> impl Iterator<Item = Candidate> + '_ {
    table.columns.iter().map(move |column| {
        let null = if column.nullable { "" } else { " not null" };
        let detail = format!("{}{null} · {}", column.data_type, table.name);
        Candidate::name(&column.name, CompletionItemKind::FIELD, Some(detail))
    })
}

/// The columns of the tables of the models that write one of the scope's categories.
fn shard_key_columns(analysis: &Analysis, scope: &str) -> Vec<Candidate> {
    let config = &analysis.loaded.config;
    let Some(schema) = &analysis.schema else { return Vec::new() };
    let mut seen = Vec::new();
    let mut candidates = Vec::new();
    for model in config.models.values() {
        let in_scope =
            model.outbox.as_ref().is_some_and(|c| config.scope_of(&c.value).is_some_and(|s| s.name.value == scope));
        let Some(table) = schema.table(&model.table.value).filter(|_| in_scope) else { continue };
        for candidate in table_columns(table) {
            if !seen.contains(&candidate.label) {
                seen.push(candidate.label.clone());
                candidates.push(candidate);
            }
        }
    }
    candidates
}
