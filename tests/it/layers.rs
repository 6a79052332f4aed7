//! The library's modules form layers and may only use the layers below them (and themselves):
//! `secret` at the very bottom, `db`, `diagnostic`, `telemetry` and `user` on it, `config` and `schema` on them, then `planner` and
//! `audit`, `engine`, `outbox` and `lsp`, `render`, `scheduler`, `cleanup` and `partitions`, and the demo and the worker service on
//! top. The command line lives in the binary and holds no SQL and no loop over chunks. This test reads the
//! sources, so a new upward `use` fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each library module's layer; a module may use only modules of a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("secret", 0),
    ("db", 1),
    ("diagnostic", 1),
    ("stop", 1),
    ("telemetry", 1),
    ("user", 1),
    ("config", 2),
    ("schema", 2),
    ("planner", 3),
    ("audit", 3),
    ("engine", 4),
    ("outbox", 4),
    ("lsp", 4),
    ("render", 5),
    ("scheduler", 5),
    ("cleanup", 5),
    ("partitions", 5),
    ("demo", 6),
    ("inbox", 6),
    ("service", 7),
    ("review", 6),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == module).map(|(_, layer)| *layer)
}

/// The top-level modules a source text uses through `crate::`, outside its `#[cfg(test)]` part
/// (tests may reach for fixtures anywhere).
fn used_modules(source: &str) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut used = BTreeSet::new();
    for (index, _) in code.match_indices("crate::") {
        if code[..index].ends_with('$') {
            continue;
        }
        let rest = &code[index + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            used.extend(inner.split(',').filter_map(first_segment));
        } else {
            used.extend(first_segment(rest));
        }
    }
    used
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// Every `(file, module used)` that breaks the layering; `module_of` names each file's module.
fn violations(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, source) in files {
        let Some(own) = module_of(path) else { continue };
        let own_layer = layer(&own).unwrap_or_else(|| panic!("{path}: module `{own}` has no layer in LAYERS"));
        for used in used_modules(source) {
            if used == own {
                continue;
            }
            match layer(&used) {
                Some(used_layer) if used_layer < own_layer => {}
                _ => found.push(format!("{path}: `{own}` uses `{used}`, which is not below it")),
            }
        }
    }
    found
}

/// `src/engine/run.rs` → `engine`, `src/demo.rs` → `demo`; the crate roots have none.
fn module_of(path: &str) -> Option<String> {
    let relative = path.strip_prefix("src/")?;
    let first = relative.split('/').next()?;
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(module, "lib" | "main" | "cli")).then(|| module.to_owned())
}

fn sources_under(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string();
                files.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn library_sources() -> Vec<(String, String)> {
    sources_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn every_library_module_uses_only_the_layers_below_it() {
    let files = library_sources();
    assert!(files.len() > 40, "the sources were found");
    let found = violations(&files);
    assert!(found.is_empty(), "upward or sideways imports:\n{}", found.join("\n"));
}

#[test]
fn an_upward_import_is_caught() {
    let db_using_planner = ("src/db/sql.rs".to_owned(), "use crate::planner::PlanNode;\n".to_owned());
    let config_using_schema = ("src/config/mod.rs".to_owned(), "use crate::{diagnostic::Code, schema};\n".to_owned());
    let fixture_in_tests = ("src/config/read.rs".to_owned(), "#[cfg(test)]\nuse crate::planner::fixture;\n".to_owned());
    let found = violations(&[db_using_planner, config_using_schema, fixture_in_tests]);
    assert_eq!(
        found,
        [
            "src/db/sql.rs: `db` uses `planner`, which is not below it",
            "src/config/mod.rs: `config` uses `schema`, which is not below it",
        ]
    );
}

#[test]
fn every_module_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines().filter_map(|line| line.trim().strip_prefix("pub mod ")) {
        let module = line.trim_end_matches(';');
        assert!(layer(module).is_some(), "module `{module}` needs a layer in LAYERS (and in docs/ARCHITECTURE.md)");
    }
}

#[test]
fn the_command_line_holds_no_sql_and_no_chunk_loop() {
    let cli = sources_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli"));
    assert!(!cli.is_empty());
    for (path, source) in &cli {
        for sql in ["SELECT ", "DELETE FROM", "INSERT INTO", "UPDATE ", "sqlx::"] {
            assert!(!source.contains(sql), "{path} holds SQL (`{sql}`): it belongs in the library");
        }
        assert!(!source.contains(".chunk()"), "{path} drives chunks: use Engine::run_to_end");
    }
}
