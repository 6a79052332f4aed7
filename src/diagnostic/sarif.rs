//! Diagnostics as SARIF 2.1.0, the format GitHub code scanning (and other static-analysis
//! viewers) read: one result per diagnostic, its code the rule, every code of the registry a
//! rule of the run.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{Code, Diagnostic, Location, Report, Severity};

/// The base id every file's URI is relative to: the repository root (or the working directory).
const SOURCE_ROOT: &str = "%SRCROOT%";

/// The published schema of the format, named by `$schema`.
const SCHEMA_URI: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

impl Report<'_> {
    /// The diagnostics as a SARIF 2.1.0 log. `working_dir` is the directory the sources' relative
    /// names are relative to; file URIs are relative to the repository around it (the nearest
    /// directory holding `.git`), else to it, as code scanning expects them.
    pub fn sarif(&self, working_dir: &Path) -> String {
        let root = repository_root(working_dir);
        let rules: Vec<Value> = Code::ALL.iter().map(|&code| rule(code)).collect();
        let results: Vec<Value> = self.diagnostics.iter().map(|d| self.result(d, working_dir, &root)).collect();
        let log = json!({
            "$schema": SCHEMA_URI,
            "version": "2.1.0",
            "runs": [{
                "tool": { "driver": {
                    "name": "cascade",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }},
                "originalUriBaseIds": { SOURCE_ROOT: { "uri": directory_uri(&root) } },
                // Columns count characters, as every other form of the report does.
                "columnKind": "unicodeCodePoints",
                "results": results,
            }],
        });
        super::text::inert_json(serde_json::to_string_pretty(&log).expect("a SARIF log serialises"))
    }

    fn result(&self, diagnostic: &Diagnostic, working_dir: &Path, root: &Path) -> Value {
        // SARIF's fixes are edits of the file; a help line is advice, so it goes in the message.
        let text = match &diagnostic.help {
            Some(help) => format!("{}\nhelp: {help}", diagnostic.message),
            None => diagnostic.message.clone(),
        };
        let related: Vec<Value> = diagnostic
            .related
            .iter()
            .enumerate()
            .map(|(id, (location, label))| {
                let mut related = self.location(location, working_dir, root);
                related["id"] = json!(id);
                related["message"] = json!({ "text": label });
                related
            })
            .collect();
        let mut result = json!({
            "ruleId": diagnostic.code.as_str(),
            "ruleIndex": rule_index(diagnostic.code),
            "level": level(diagnostic.severity),
            "message": { "text": text },
            "locations": [self.location(&diagnostic.location, working_dir, root)],
        });
        if !related.is_empty() {
            result["relatedLocations"] = json!(related);
        }
        result
    }

    fn location(&self, location: &Location, working_dir: &Path, root: &Path) -> Value {
        let (start_line, start_column) = self.sources.line_column(location);
        let (end_line, end_column) = self.sources.end_line_column(location);
        let region = json!({
            "startLine": start_line,
            "startColumn": start_column,
            "endLine": end_line,
            "endColumn": end_column,
        });
        json!({ "physicalLocation": {
            "artifactLocation": artifact(self.sources.name(location.file), working_dir, root),
            "region": region,
        }})
    }
}

/// A rule of the run: a code of the registry with its description and severity.
fn rule(code: Code) -> Value {
    json!({
        "id": code.as_str(),
        "name": format!("{code:?}"),
        "shortDescription": { "text": code.description() },
        "fullDescription": { "text": code.description() },
        "defaultConfiguration": { "level": level(code.severity()) },
    })
}

fn rule_index(code: Code) -> usize {
    Code::ALL.iter().position(|&c| c == code).expect("every code is in Code::ALL")
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// Where a source is: relative to the root when it is inside it, else an absolute `file:` URI.
fn artifact(name: &str, working_dir: &Path, root: &Path) -> Value {
    let path = normalize(&working_dir.join(name));
    match path.strip_prefix(root) {
        Ok(relative) => json!({ "uri": encode_path(relative), "uriBaseId": SOURCE_ROOT }),
        Err(_) => json!({ "uri": format!("file://{}", encode_path(&path)) }),
    }
}

/// The nearest directory at or above `dir` that holds `.git` (a directory, or a file in a
/// worktree), else `dir` itself.
fn repository_root(dir: &Path) -> PathBuf {
    let dir = normalize(dir);
    dir.ancestors().find(|ancestor| ancestor.join(".git").exists()).unwrap_or(&dir).to_owned()
}

/// `path` without `.` and with each `..` taking the component before it, so that a name such
/// as `./cascades/../cascades/a.toml` compares with the root by its components.
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// A directory as a `file:` URI, ending in `/` as a base URI must.
fn directory_uri(dir: &Path) -> String {
    let path = encode_path(dir);
    let slash = if path.ends_with('/') { "" } else { "/" };
    format!("file://{path}{slash}")
}

/// A path as the path of a URI: `/`-separated, every byte outside the unreserved characters
/// percent-encoded.
fn encode_path(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => encoded.push(byte as char),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_uris_relative_to_the_root_or_absolute_outside_it() {
        let (root, working_dir) = (Path::new("/repo"), Path::new("/repo/deploy"));
        let cases = [
            ("cascades/a.toml", json!({ "uri": "deploy/cascades/a.toml", "uriBaseId": SOURCE_ROOT })),
            ("./../cascades/b c.toml", json!({ "uri": "cascades/b%20c.toml", "uriBaseId": SOURCE_ROOT })),
            ("/repo/ünï.toml", json!({ "uri": "%C3%BCn%C3%AF.toml", "uriBaseId": SOURCE_ROOT })),
            ("/etc/cascade/a#1.toml", json!({ "uri": "file:///etc/cascade/a%231.toml" })),
            ("../../elsewhere.toml", json!({ "uri": "file:///elsewhere.toml" })),
        ];
        for (name, expected) in cases {
            assert_eq!(artifact(name, working_dir, root), expected, "{name}");
        }
        assert_eq!(directory_uri(root), "file:///repo/");
        assert_eq!(directory_uri(Path::new("/")), "file:///");
    }

    #[test]
    fn the_root_is_the_nearest_directory_with_git() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(dir.path().join("a/.git"), "gitdir: elsewhere").unwrap();
        assert_eq!(repository_root(&nested), dir.path().join("a"));
        assert_eq!(repository_root(&nested.join("./")), dir.path().join("a"));
    }
}
