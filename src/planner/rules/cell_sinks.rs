//! `cell-sinks`: a scope that fans out to `cells` delivers every message to each cell through
//! that cell's sink, so `cells` and `cell_sinks` must match one to one: a cell without a sink
//! would never hear of anything (and its rows would never go), a sink for a cell the scope does
//! not have receives nothing, a cell named twice is ambiguous, `cell_sinks` without `cells` fans
//! out to nobody, and a `sink` or `category_sinks` beside `cells` would never be used. TOML keys
//! carry no location, so an entry of `cell_sinks` is pointed at by its value.

use std::collections::HashMap;

use crate::config::Scope;
use crate::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for scope in context.config.outbox.scopes.values() {
        let name = &scope.name.value;
        if !scope.has_cells() {
            if let Some((cell, sink)) = scope.cell_sinks.first() {
                diagnostics.push(
                    Diagnostic::new(
                        Code::CellSinks,
                        sink.location.clone(),
                        format!("scope `{name}` has `cell_sinks` but no `cells`, so cell `{cell}` is never delivered to"),
                    )
                    .label("no such cell")
                    .help(format!("declare the cells: `cells = [\"{cell}\", ...]`, or remove `cell_sinks`")),
                );
            }
            continue;
        }
        check_cells(scope, diagnostics);
        let unused = scope.sink.iter().chain(scope.category_sinks.values()).next();
        if let Some(sink) = unused {
            diagnostics.push(
                Diagnostic::new(
                    Code::CellSinks,
                    sink.location.clone(),
                    format!(
                        "scope `{name}` fans out to cells, which deliver through `cell_sinks`, so sink `{}` here is \
                         never used",
                        sink.value
                    ),
                )
                .label("never used beside `cells`")
                .help("remove `sink` and `category_sinks` from the scope; give each cell its sink in `cell_sinks`"),
            );
        }
    }
}

/// Every cell named once, each with a sink, and no sink for another cell.
fn check_cells(scope: &Scope, diagnostics: &mut Vec<Diagnostic>) {
    let name = &scope.name.value;
    let mut seen = HashMap::new();
    for cell in &scope.cells {
        if let Some(first) = seen.insert(cell.value.as_str(), cell) {
            diagnostics.push(
                Diagnostic::new(
                    Code::CellSinks,
                    cell.location.clone(),
                    format!("scope `{name}` names cell `{}` twice", cell.value),
                )
                .label("named again")
                .related(first.location.clone(), "first named here")
                .help("name each cell once"),
            );
        } else if !scope.cell_sinks.contains_key(&cell.value) {
            diagnostics.push(
                Diagnostic::new(
                    Code::CellSinks,
                    cell.location.clone(),
                    format!("cell `{}` of scope `{name}` has no sink in `cell_sinks`", cell.value),
                )
                .label("no sink for this cell")
                .help(format!(
                    "add `{} = \"SINK\"` to the scope's `cell_sinks`, naming a sink under [outbox.sinks]",
                    cell.value
                )),
            );
        }
    }
    for (cell, sink) in scope.cell_sinks.iter().filter(|(cell, _)| !seen.contains_key(cell.as_str())) {
        let help = did_you_mean(cell, scope.cells.iter().map(|c| c.value.as_str()))
            .unwrap_or_else(|| format!("add \"{cell}\" to the scope's `cells`, or remove this entry"));
        diagnostics.push(
            Diagnostic::new(
                Code::CellSinks,
                sink.location.clone(),
                format!("`cell_sinks` of scope `{name}` gives a sink to `{cell}`, which is not one of its `cells`"),
            )
            .label(format!("`{cell}` is not a cell of `{name}`"))
            .help(help),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const SINKS: &str = r#"
[outbox.sinks.us_hook]
url = "https://us.internal/forget"

[outbox.sinks.de_hook]
url = "https://de.internal/forget"
"#;

    #[test]
    fn one_sink_per_cell_is_clean() {
        let config = format!(
            r#"{SINKS}
[outbox.scopes.control]
shard_key = "id"
categories = ["user_update"]
cells = ["us", "de"]
cell_sinks = {{ us = "us_hook", de = "de_hook" }}
"#
        );
        assert_eq!(fixture::codes(&config), vec![]);
    }

    #[test]
    fn names_the_cell_without_a_sink_the_stray_sink_the_repeated_cell_and_the_unused_sink() {
        let config = format!(
            r#"{SINKS}
[outbox.scopes.control]
shard_key = "id"
categories = ["user_update"]
cells = ["us", "de", "us", "jp"]
cell_sinks = {{ us = "us_hook", de = "de_hook", eu = "de_hook" }}
sink = "us_hook"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["team_update"]
cell_sinks = {{ us = "us_hook" }}
"#
        );
        assert_eq!(
            fixture::codes(&config),
            vec![
                (Code::CellSinks, 11),
                (Code::CellSinks, 11),
                (Code::CellSinks, 12),
                (Code::CellSinks, 13),
                (Code::UndeliveredCategory, 15),
                (Code::CellSinks, 18)
            ]
        );
        insta::assert_snapshot!(fixture::human(&config));
    }
}
