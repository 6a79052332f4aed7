//! Code actions: the diagnostics' fixes as edits of the config. An unregistered category goes
//! into a scope's `categories`; a missing index's `CREATE INDEX` becomes a comment above the
//! relation, or is copied; an undeclared reference becomes an `ignore_references` entry (or a
//! child relation, when its model exists).

use std::collections::HashMap;
use std::ops::Range;

use lsp_types::{CodeAction, CodeActionKind, CodeActionOrCommand, Command, TextEdit, Url, WorkspaceEdit};

use super::analysis::Analysis;
use super::completion::toml_key;
use super::diagnostics::to_lsp;
use super::symbols::Kind;
use super::syntax::{Container, ContainerKind, Segment};
use crate::diagnostic::{Diagnostic, FileId, Fix};

/// The command that copies a text: editors that know it (the README shows Neovim's) put its
/// argument on the clipboard; the server answers it by showing the text, to copy by hand.
pub(crate) const COPY: &str = "cascade.copy";

/// The fixes of the diagnostics in `file` that `range` touches.
pub(crate) fn code_actions(analysis: &Analysis, file: FileId, range: Range<usize>) -> Vec<CodeActionOrCommand> {
    let touches = |d: &&Diagnostic| {
        d.location.file == file && d.location.span.start <= range.end && range.start <= d.location.span.end
    };
    let mut actions = Vec::new();
    for diagnostic in analysis.loaded.diagnostics.iter().filter(touches) {
        for fix in &diagnostic.fixes {
            for (title, change) in fixes(analysis, diagnostic, fix) {
                let (edit, command) = match change {
                    Change::Edits(edits) => (Some(workspace_edit(analysis, edits)), None),
                    Change::Copy(text) => (
                        None,
                        Some(Command {
                            title: title.clone(),
                            command: COPY.to_owned(),
                            arguments: Some(vec![text.into()]),
                        }),
                    ),
                };
                actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title,
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![to_lsp(analysis, diagnostic)]),
                    edit,
                    command,
                    ..CodeAction::default()
                }));
            }
        }
    }
    actions
}

/// What an action does: edit files, or hand a text to copy.
enum Change {
    Edits(Vec<(FileId, Range<usize>, String)>),
    Copy(String),
}

fn fixes(analysis: &Analysis, diagnostic: &Diagnostic, fix: &Fix) -> Vec<(String, Change)> {
    match fix {
        Fix::RegisterCategory { category } => analysis
            .loaded
            .config
            .outbox
            .scopes
            .keys()
            .filter_map(|scope| {
                let path = [key("outbox"), key("scopes"), key(scope)];
                let edit = add_to_list(analysis, Kind::Scope, scope, &path, "categories", &string(category))?;
                Some((format!("Register `{category}` in scope `{scope}`"), Change::Edits(vec![edit])))
            })
            .collect(),
        Fix::CreateIndex { statement } => {
            let file = diagnostic.location.file;
            let text = analysis.text(file);
            let line_start = text[..diagnostic.location.span.start].rfind(['\n', '\r']).map_or(0, |end| end + 1);
            let indent: String = text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            let comment = format!("{indent}# {statement}{}", line_ending(text));
            vec![
                (
                    format!("Add `{statement}` as a comment"),
                    Change::Edits(vec![(file, line_start..line_start, comment)]),
                ),
                (format!("Copy `{statement}`"), Change::Copy(statement.clone())),
            ]
        }
        Fix::AddToModel { model, key: list, entry } => {
            let path = [key("models"), key(model)];
            add_to_list(analysis, Kind::Model, model, &path, list, entry)
                .map(|edit| (format!("Add `{entry}` to `{list}` of model `{model}`"), Change::Edits(vec![edit])))
                .into_iter()
                .collect()
        }
    }
}

fn key(name: &str) -> Segment {
    Segment::Key(name.to_owned())
}

fn string(text: &str) -> String {
    crate::planner::toml_string(text)
}

fn line_ending(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// The edit that adds `item` to the list `list` of the table at `table` (declared as `name` of
/// `kind`): after the list's last item, or as a new key of the table.
fn add_to_list(
    analysis: &Analysis,
    kind: Kind,
    name: &str,
    table: &[Segment],
    list: &str,
    item: &str,
) -> Option<(FileId, Range<usize>, String)> {
    let file = analysis.symbols.of(kind, name).find(|o| o.declares)?.file;
    let text = analysis.text(file);
    let syntax = &analysis.files[file].syntax;
    let list_path = [table, &[key(list)]].concat();
    if let Some(array) = syntax.container_at(&list_path) {
        let (span, insert) = append_item(text, array, item)?;
        return Some((file, span, insert));
    }
    let (span, insert) = add_key(text, syntax.container_at(table)?, &toml_key(list), &format!("[{item}]"))?;
    Some((file, span, insert))
}

/// Inserts `item` after an array's last item, in its layout: on one line, or on a line of its
/// own as indented as the last item, with a trailing comma when the items have them.
fn append_item(text: &str, array: &Container, item: &str) -> Option<(Range<usize>, String)> {
    if array.kind != ContainerKind::Array {
        return None;
    }
    let close = array.close?;
    let Some(last) = array.items.last() else {
        return Some((array.open.end..close, item.to_owned()));
    };
    if !text[array.open.end..close].contains(['\n', '\r']) {
        return Some((last.end..last.end, format!(", {item}")));
    }
    let line_start = text[..last.start].rfind(['\n', '\r']).map_or(0, |end| end + 1);
    let indent = &text[line_start..last.start];
    let newline = line_ending(text);
    if array.trailing_comma {
        let comma = last.end + text[last.end..close].find(',')? + 1;
        Some((comma..comma, format!("{newline}{indent}{item},")))
    } else {
        Some((last.end..last.end, format!(",{newline}{indent}{item}")))
    }
}

/// Inserts `key = value` into a table: on a new line after its last entry (or its header), or
/// after the last entry of an inline table.
fn add_key(text: &str, table: &Container, key: &str, value: &str) -> Option<(Range<usize>, String)> {
    match table.kind {
        ContainerKind::Header => {
            let after = table.items.last().map_or(table.open.end, |entry| entry.end);
            let line_end = text[after..].find(['\n', '\r']).map_or(text.len(), |end| after + end);
            Some((line_end..line_end, format!("{}{key} = {value}", line_ending(text))))
        }
        ContainerKind::Inline => {
            let close = table.close?;
            match table.items.last() {
                Some(last) => Some((last.end..last.end, format!(", {key} = {value}"))),
                None => Some((table.open.end..close, format!(" {key} = {value} "))),
            }
        }
        ContainerKind::Array => None,
    }
}

fn workspace_edit(analysis: &Analysis, edits: Vec<(FileId, Range<usize>, String)>) -> WorkspaceEdit {
    let mut changes: HashMap<Url, Vec<TextEdit>> = HashMap::new();
    for (file, span, new_text) in edits {
        let edit = TextEdit { range: analysis.range(file, &span), new_text };
        changes.entry(analysis.files[file].uri.clone()).or_default().push(edit);
    }
    WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::syntax::Syntax;

    fn edited(text: &str, path: &[&str], edit: impl Fn(&str, &Container) -> Option<(Range<usize>, String)>) -> String {
        let syntax = Syntax::parse(text);
        let path: Vec<Segment> = path.iter().map(|k| key(k)).collect();
        let (span, insert) = edit(text, syntax.container_at(&path).unwrap()).unwrap();
        let mut text = text.to_owned();
        text.replace_range(span, &insert);
        text
    }

    #[test]
    fn items_go_after_the_last_in_the_lists_layout() {
        let append = |text: &str| edited(text, &["s", "c"], |text, array| append_item(text, array, "\"z\""));
        assert_eq!(append("[s]\nc = []\n"), "[s]\nc = [\"z\"]\n");
        assert_eq!(append("[s]\nc = [\"a\", \"b\"] # x\n"), "[s]\nc = [\"a\", \"b\", \"z\"] # x\n");
        assert_eq!(append("[s]\nc = [\n  \"a\",\n  \"b\",\n]\n"), "[s]\nc = [\n  \"a\",\n  \"b\",\n  \"z\",\n]\n");
        assert_eq!(append("[s]\nc = [\n    \"a\"\n]\n"), "[s]\nc = [\n    \"a\",\n    \"z\"\n]\n");
        assert_eq!(append("[s]\r\nc = [\r\n  \"a\",\r\n]\r\n"), "[s]\r\nc = [\r\n  \"a\",\r\n  \"z\",\r\n]\r\n");
    }

    #[test]
    fn keys_go_after_the_last_entry_of_the_table() {
        let add = |text: &str, path: &[&str]| edited(text, path, |text, table| add_key(text, table, "k", "[1]"));
        assert_eq!(
            add("[m.a]\nt = \"a\" # note\n\n[m.b]\n", &["m", "a"]),
            "[m.a]\nt = \"a\" # note\nk = [1]\n\n[m.b]\n"
        );
        assert_eq!(add("[m.a]", &["m", "a"]), "[m.a]\nk = [1]");
        assert_eq!(add("[m]\na = { t = \"a\" }\n", &["m", "a"]), "[m]\na = { t = \"a\", k = [1] }\n");
        assert_eq!(add("[m]\na = {}\n", &["m", "a"]), "[m]\na = { k = [1] }\n");
    }
}
