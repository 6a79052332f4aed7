//! Go to definition, find references and rename, for models, outbox categories, scopes, options
//! and sinks, across every file of the config.

use std::collections::HashMap;

use lsp_types::{Location, PrepareRenameResponse, TextEdit, Url, WorkspaceEdit};

use super::analysis::Analysis;
use super::completion::toml_key;
use super::symbols::{Kind, Occurrence};
use super::syntax::Quote;
use crate::diagnostic::FileId;

/// Where the name at the cursor is declared: a model's, scope's, option's or sink's key, or
/// the scopes' `categories` entries that register a category.
pub(crate) fn definition(analysis: &Analysis, file: FileId, offset: usize) -> Vec<Location> {
    let Some(name) = analysis.symbols.at(file, offset) else { return Vec::new() };
    let declarations: Vec<&Occurrence> = analysis.symbols.of(name.kind, &name.name).filter(|o| o.declares).collect();
    // A model's key is written again in the headers of its sub-tables (`[models.a.status]`): the
    // first is its declaration.
    let first_only = matches!(name.kind, Kind::Model | Kind::Scope | Kind::Option | Kind::Sink);
    let count = if first_only { declarations.len().min(1) } else { declarations.len() };
    declarations[..count].iter().map(|o| analysis.location(o.file, &o.span)).collect()
}

pub(crate) fn references(analysis: &Analysis, file: FileId, offset: usize, declarations: bool) -> Vec<Location> {
    let Some(name) = analysis.symbols.at(file, offset) else { return Vec::new() };
    analysis
        .symbols
        .of(name.kind, &name.name)
        .filter(|o| declarations || !o.declares)
        .map(|o| analysis.location(o.file, &o.span))
        .collect()
}

/// The name at the cursor, when it can be renamed: its text inside the quotes.
pub(crate) fn prepare_rename(analysis: &Analysis, file: FileId, offset: usize) -> Option<PrepareRenameResponse> {
    let name = analysis.symbols.at(file, offset)?;
    let span = name.name_span()?;
    Some(PrepareRenameResponse::RangeWithPlaceholder {
        range: analysis.range(file, &span),
        placeholder: name.name.clone(),
    })
}

/// Why a rename is refused.
#[derive(Debug)]
pub(crate) struct Refused(pub String);

/// Every place the name at the cursor is written, rewritten to `new_name` (quoted as each place
/// needs it).
pub(crate) fn rename(
    analysis: &Analysis,
    file: FileId,
    offset: usize,
    new_name: &str,
) -> Result<Option<WorkspaceEdit>, Refused> {
    let Some(name) = analysis.symbols.at(file, offset) else { return Ok(None) };
    let noun = name.kind.noun();
    if new_name.trim().is_empty() || new_name.chars().any(char::is_control) {
        return Err(Refused(format!("a {noun} name needs a visible character and no control characters")));
    }
    if new_name != name.name && analysis.symbols.of(name.kind, new_name).next().is_some() {
        return Err(Refused(format!("{noun} `{new_name}` exists already: renaming `{}` would merge them", name.name)));
    }
    let mut changes: HashMap<Url, Vec<TextEdit>> = HashMap::new();
    for place in analysis.symbols.of(name.kind, &name.name) {
        if place.quote == Quote::Multiline {
            return Err(Refused(format!("`{}` is written as a multi-line string: rename it by hand", name.name)));
        }
        let edit = TextEdit { range: analysis.range(place.file, &place.span), new_text: token(new_name, place) };
        changes.entry(analysis.files[place.file].uri.clone()).or_default().push(edit);
    }
    Ok(Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }))
}

/// `name` written where `place` is: a key bare when it can be, else quoted as it was
/// (`'literal'` when `name` allows, else `"basic"`).
fn token(name: &str, place: &Occurrence) -> String {
    match place.quote {
        Quote::Bare => toml_key(name),
        Quote::Literal if !name.contains('\'') => format!("'{name}'"),
        _ => crate::planner::toml_string(name),
    }
}
