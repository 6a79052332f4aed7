//! The library's documented surface, pinned: every public item of the modules `lib.rs` does not
//! hide from the docs, read from the sources (a `pub` item at the top of a file, a `pub fn` of an
//! inherent `impl`, a `pub use`), as a snapshot. A private module's `pub` items count too: the
//! crate denies `unreachable_pub`, so each is re-exported somewhere public. A change to what
//! programs can call shows in the snapshot's diff, to be accepted on purpose (`cargo insta
//! review`), never by accident.

use std::path::{Path, PathBuf};

/// The public items of the module in `file` (path `module`) and of its documented public
/// submodules, one line each: `module kind name`.
fn surface(file: &Path, module: &str, items: &mut Vec<String>) {
    let source = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    // Tests at the end of a file are no interface.
    let code = source.split("\n#[cfg(test)]").next().unwrap_or(&source);
    let lines: Vec<&str> = code.lines().collect();
    let mut implemented: Option<String> = None;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let attributes = lines[..index].iter().rev().take_while(|l| l.trim_start().starts_with("#["));
        let hidden = attributes.clone().any(|l| l.contains("doc(hidden)") || l.contains("cfg(test)"));
        if !line.is_empty() && !line.starts_with([' ', '}', '#', '/']) {
            // `impl<T> Type<T> {`; the methods of `impl Trait for Type` are the trait's.
            implemented = (line.starts_with("impl") && !line.contains(" for ")).then(|| implemented_type(line));
        }
        if hidden {
            index += 1;
            continue;
        }
        if let Some(name) = line.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
            surface(&module_file(file, name), &format!("{module}::{name}"), items);
        } else if let Some(rest) = line.strip_prefix("pub ") {
            let (kind, name) = item(rest);
            if kind == "use" {
                let mut text = rest.to_owned();
                while !text.trim_end().ends_with(';') && index + 1 < lines.len() {
                    index += 1;
                    text.push_str(lines[index].trim());
                }
                items.push(format!("{module} {}", text.trim_end_matches(';')));
            } else if kind == "mod" && rest.trim_end().ends_with(';') {
                let child = format!("{module}::{name}");
                items.push(format!("{module} mod {name}"));
                surface(&module_file(file, &name), &child, items);
            } else {
                items.push(format!("{module} {kind} {name}"));
            }
        } else if let (Some(ty), Some(rest)) = (&implemented, line.strip_prefix("    pub ")) {
            let (kind, name) = item(rest);
            if kind == "fn" {
                items.push(format!("{module} fn {ty}::{name}"));
            }
        }
        index += 1;
    }
}

/// The type an inherent `impl` line is of, without its generic parameters.
fn implemented_type(line: &str) -> String {
    let mut rest = line.trim_start_matches("impl");
    if rest.starts_with('<') {
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|(_, c)| {
                depth += match c {
                    '<' => 1,
                    '>' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(0, |(i, _)| i + 1);
        rest = &rest[end..];
    }
    rest.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The kind and name of the item a line declares after its `pub `.
fn item(rest: &str) -> (String, String) {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (kind, name) = match words.as_slice() {
        ["async", "fn", name, ..] | ["const", "fn", name, ..] => ("fn", *name),
        [kind, name, ..] => (*kind, *name),
        _ => ("?", rest),
    };
    let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (kind.to_owned(), name)
}

/// The file of the submodule `name` declared in `parent`.
fn module_file(parent: &Path, name: &str) -> PathBuf {
    let directory = match parent.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => parent.parent().unwrap().to_path_buf(),
        _ => parent.with_extension(""),
    };
    let single = directory.join(format!("{name}.rs"));
    if single.exists() { single } else { directory.join(name).join("mod.rs") }
}

#[test]
fn the_documented_library_surface_is_pinned() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let mut items = Vec::new();
    surface(&lib, "cascade", &mut items);
    items.sort();
    items.dedup();
    // Internals stay out of it.
    for internal in ["cascade::db::sql", "cascade::render", "cascade::review", "cascade::lsp", "cascade::demo"] {
        assert!(!items.iter().any(|item| item.starts_with(&format!("{internal} "))), "{internal} is documented");
    }
    // A type defined in a private module and re-exported keeps its methods in the surface.
    assert!(items.contains(&"cascade::engine::run fn Engine::prepare".to_owned()), "{items:#?}");
    insta::assert_snapshot!("surface", items.join("\n"));
}
