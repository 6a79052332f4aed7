//! Loading a config: every `*.toml` file under a directory (or one file) is parsed with spans,
//! then read into one typed [`Config`]. Both phases collect diagnostics instead of stopping.

mod extract;
mod located;
mod outbox;
mod read;
mod remote;
mod schema;
mod types;
mod users;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use toml::de::DeTable;

pub use located::Located;
pub use outbox::*;
pub(crate) use read::is_identifier;
pub use remote::{Remote, RemoteModel};
pub use schema::json_schema;
pub use types::*;
pub use users::{UserNotAllowed, check_allowed_user};

use crate::diagnostic::{Code, Diagnostic, FileId, Location, Sources};

/// A loaded config with the sources its locations point into and every problem found so far.
pub struct Loaded {
    /// The config read from every file, merged.
    pub config: Config,
    /// The loaded files' names and text.
    pub sources: Sources,
    /// Every problem found while parsing and reading, in the order found.
    pub diagnostics: Vec<Diagnostic>,
}

/// Problems that stop loading before any config could be read: exit code 2 territory.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The given config path does not exist.
    #[error("config path `{0}` does not exist")]
    NotFound(PathBuf),
    /// The given directory holds no `*.toml` file.
    #[error("no *.toml files under `{0}`")]
    NoFiles(PathBuf),
    /// A config file or directory could not be read.
    #[error("cannot read `{path}`: {reason}")]
    Io {
        /// The file or directory that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        reason: std::io::Error,
    },
}

/// Loads `path`: one TOML file, or every `*.toml` file below a directory, in path order.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let (mut sources, mut not_utf8) = (Sources::default(), Vec::new());
    read_files(&config_files(path)?, &mut sources, &mut not_utf8)?;
    let mut loaded = load_sources(sources);
    loaded.diagnostics.extend(not_utf8);
    Ok(loaded)
}

/// Loads `dir` as it would be with `file` holding `text`: the directory's `*.toml` files (none
/// when it does not exist yet), with `file` in place of the one at that path or added in path
/// order. `cascade init` checks the config it would write this way before writing it.
pub fn load_with(dir: &Path, file: &Path, text: String) -> Result<Loaded, LoadError> {
    load_overlaid(dir, &BTreeMap::from([(file.to_owned(), text)])).map(|(loaded, _)| loaded)
}

/// Loads `path` as [`load`] does, but each file of `buffers` is read from there instead of from
/// disk, and added in path order when it is not on disk (yet): an editor's open buffers over the
/// files it saved. `path` need not exist, nor hold any file, when `buffers` has some. Returns the
/// path of each file too, by [`FileId`].
pub fn load_overlaid(path: &Path, buffers: &BTreeMap<PathBuf, String>) -> Result<(Loaded, Vec<PathBuf>), LoadError> {
    let mut files = match config_files(path) {
        Ok(files) => files,
        Err(LoadError::NotFound(_) | LoadError::NoFiles(_)) if !buffers.is_empty() => Vec::new(),
        Err(error) => return Err(error),
    };
    files.extend(buffers.keys().cloned());
    // Path order is the order a walk of the directory yields, names sorted in each directory.
    files.sort();
    files.dedup();
    let (mut sources, mut not_utf8) = (Sources::default(), Vec::new());
    for file in &files {
        match buffers.get(file) {
            Some(text) => {
                sources.add(file.display().to_string(), text.clone());
            }
            None => read_files(std::slice::from_ref(file), &mut sources, &mut not_utf8)?,
        }
    }
    let mut loaded = load_sources(sources);
    loaded.diagnostics.extend(not_utf8);
    Ok((loaded, files))
}

/// Adds `files` to `sources`, with a diagnostic in `not_utf8` for each that is not UTF-8.
fn read_files(files: &[PathBuf], sources: &mut Sources, not_utf8: &mut Vec<Diagnostic>) -> Result<(), LoadError> {
    for file in files {
        let bytes = std::fs::read(file).map_err(|source| LoadError::Io { path: file.clone(), reason: source })?;
        let name = file.display().to_string();
        match String::from_utf8(bytes) {
            Ok(text) => {
                sources.add(name, text);
            }
            Err(error) => {
                // The invalid bytes become U+FFFD, so the rest of the file is still checked; the
                // text before the first is unchanged, so its offset is the same in both.
                let offset = error.utf8_error().valid_up_to();
                let byte = error.as_bytes()[offset];
                let id = sources.add(name, String::from_utf8_lossy(error.as_bytes()).into_owned());
                let location = Location::new(id, offset..offset + char::REPLACEMENT_CHARACTER.len_utf8());
                not_utf8.push(
                    Diagnostic::new(Code::InvalidUtf8, location, format!("byte 0x{byte:02X} is not valid UTF-8"))
                        .label("not UTF-8")
                        .help("a TOML file is UTF-8: save it as UTF-8 (it may be in Latin-1 or UTF-16)"),
                );
            }
        }
    }
    Ok(())
}

/// Parses and reads files that are already in memory (every file in `sources`).
pub fn load_sources(sources: Sources) -> Loaded {
    let mut line_endings = Vec::new();
    let texts: Vec<Cow<str>> = sources
        .ids()
        .map(|file| {
            let (text, diagnostic) = lone_carriage_returns_as_newlines(file, sources.text(file));
            line_endings.extend(diagnostic);
            text
        })
        .collect();
    let mut diagnostics = Vec::new();
    let parsed: Vec<_> = sources
        .ids()
        .zip(&texts)
        .map(|(file, text)| {
            let (table, errors) = DeTable::parse_recoverable(text.as_ref());
            diagnostics.extend(errors.iter().map(|error| {
                let span = error.span().unwrap_or(0..0);
                Diagnostic::new(Code::TomlSyntax, Location::new(file, span), error.message().trim_end())
                    .label("invalid TOML")
            }));
            (file, table)
        })
        .collect();
    let files: Vec<_> = parsed.iter().map(|(file, table)| (*file, table)).collect();
    let syntax_errors = diagnostics.len();
    let mut read = Vec::new();
    let config = extract::config(&files, &sources, &mut read);
    drop(parsed);
    let syntax_lines: HashSet<(FileId, usize)> =
        diagnostics[..syntax_errors].iter().map(|d| (d.location.file, sources.line_column(&d.location).0)).collect();
    read.retain(|d| !is_recovery_artifact(d, &syntax_lines, &sources));
    diagnostics.extend(read);
    diagnostics.extend(line_endings);
    Loaded { config, sources, diagnostics }
}

/// TOML ends lines with LF or CRLF only, and its parser reports every lone CR (old Mac line
/// endings) as an error of its own: thousands for one file. Instead, one diagnostic at the first
/// says it, and the file is parsed with LF in their place, so the rest is checked as usual (the
/// same length, so every span stays true). The text is borrowed when it has no lone CR.
fn lone_carriage_returns_as_newlines(file: FileId, text: &str) -> (Cow<'_, str>, Option<Diagnostic>) {
    let is_lone = |offset: usize| !text[offset + 1..].starts_with('\n');
    let mut lone = text.match_indices('\r').map(|(offset, _)| offset).filter(|&offset| is_lone(offset));
    let Some(first) = lone.next() else {
        return (Cow::Borrowed(text), None);
    };
    let lines = 1 + lone.count();
    let text = text.char_indices().map(|(offset, ch)| if ch == '\r' && is_lone(offset) { '\n' } else { ch }).collect();
    let ends = if lines == 1 { "1 line ends".to_owned() } else { format!("{lines} lines end") };
    let diagnostic = Diagnostic::new(
        Code::TomlSyntax,
        Location::new(file, first..first),
        "a line ends with a carriage return alone: TOML lines end with LF or CRLF",
    )
    .label("carriage return without a newline")
    .help(format!("{ends} this way (old Mac line endings): save the file with LF line endings"));
    (Cow::Owned(text), Some(diagnostic))
}

/// The parser recovers from a syntax error with a placeholder value; complaining about that
/// value's type would only repeat the syntax error, less clearly. Likewise the keys under a table
/// header with a syntax error land in another table, where they are unknown keys only because
/// the header broke.
fn is_recovery_artifact(diagnostic: &Diagnostic, syntax_lines: &HashSet<(FileId, usize)>, sources: &Sources) -> bool {
    let location = &diagnostic.location;
    if diagnostic.code == Code::UnknownKey {
        let before = &sources.text(location.file)[..location.span.start];
        let header = before.lines().enumerate().filter(|(_, line)| line.trim_start().starts_with('[')).last();
        return header.is_some_and(|(index, _)| syntax_lines.contains(&(location.file, index + 1)));
    }
    let about_a_value = matches!(diagnostic.code, Code::InvalidType | Code::InvalidValue | Code::MissingKey);
    let line = sources.line_column(location).0;
    about_a_value
        && (location.span.is_empty() || syntax_lines.contains(&(location.file, line)))
        && syntax_lines.iter().any(|(file, _)| *file == location.file)
}

fn config_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    if !path.exists() {
        return Err(LoadError::NotFound(path.to_owned()));
    }
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
        let entry = entry
            .map_err(|error| LoadError::Io { path: error.path().unwrap_or(path).to_owned(), reason: error.into() })?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|ext| ext == "toml") {
            files.push(entry.into_path());
        }
    }
    if files.is_empty() {
        return Err(LoadError::NoFiles(path.to_owned()));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    #[test]
    fn the_keys_under_a_broken_table_header_are_not_also_unknown() {
        let config = "[models.org\ntable = \"org\"\n\n[models.team]\ntable = \"team\"\nstray = 1\n";
        let codes = fixture::codes(config);
        assert!(codes.contains(&(Code::TomlSyntax, 1)), "{codes:?}");
        assert!(!codes.contains(&(Code::UnknownKey, 2)), "{codes:?}");
        // A real unknown key under a header that parsed is still reported.
        assert!(codes.contains(&(Code::UnknownKey, 6)), "{codes:?}");
    }

    #[test]
    fn every_syntax_error_is_reported_not_only_the_first() {
        let config = "[models.a]\ntable = \"a\nkey = \n\n[models.b]\ntable = = \"b\"\n";
        let codes = fixture::codes(config);
        let lines: Vec<usize> =
            codes.iter().filter(|(code, _)| *code == Code::TomlSyntax).map(|(_, line)| *line).collect();
        assert!(lines.contains(&2) && lines.contains(&6), "syntax errors at {lines:?}");
        insta::assert_snapshot!(fixture::human(config));
    }

    #[test]
    fn unknown_keys_at_every_level_suggest_the_nearest_key() {
        let config = r#"
[setings]
bulk_chunk_size = 10

[models.a]
table = "a"
chunk_sise = 10
status = { column = "status", procede = [1], in_progress = 2 }
children = [{ model = "a", colum = "parent_id" }]

[outbox.scopes.x]
shard_key = "id"
categories = ["c"]
category = "d"
"#;
        assert_eq!(
            fixture::codes(config),
            vec![
                (Code::UnknownKey, 2),
                (Code::UnknownKey, 7),
                (Code::MissingKey, 8),
                (Code::UnknownKey, 8),
                (Code::MissingKey, 9),
                (Code::UnknownKey, 9),
                (Code::UnknownKey, 14),
            ]
        );
        insta::assert_snapshot!(fixture::human(config));
    }

    #[test]
    fn wrong_types_and_values_are_reported_at_the_value() {
        let config = r#"
[settings]
per_row_chunk_size = "100"

[options]
"x.rows_per_second" = -1

[models.a]
table = "public.x.y"
strategy = "bulky"
require_all_references = "yes"
children = "b"
"#;
        assert_eq!(
            fixture::codes(config),
            vec![
                (Code::InvalidType, 3),
                (Code::InvalidValue, 6),
                (Code::InvalidValue, 9),
                (Code::InvalidValue, 10),
                (Code::InvalidType, 11),
                (Code::InvalidType, 12),
            ]
        );
        insta::assert_snapshot!(fixture::human(config));
    }

    /// The reader and the JSON Schema (from the config types) must know the same keys in every
    /// table, so that what editors complete is exactly what `validate` accepts.
    #[test]
    fn the_reader_and_the_json_schema_know_the_same_keys() {
        let schema: serde_json::Value = serde_json::from_str(&crate::config::json_schema()).unwrap();
        let properties = |object: &serde_json::Value| -> Vec<String> {
            let mut keys: Vec<String> = object["properties"].as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        // Each line with an unknown key, and the schema object of the table it is in.
        let config = r#"zzz = 1
[settings]
zzz = 1
[models.a]
table = "a"
status = { column = "s", proceed = [1], in_progress = 2, zzz = 1 }
children = [{ model = "a", column = "b", zzz = 1 }]
ignore_references = [{ table = "t", column = "c", reason = "r", zzz = 1 }]
zzz = 1
[outbox]
zzz = 1
[outbox.scopes.s]
shard_key = "k"
zzz = 1
[models.r]
table = "r"
retention = { keep = "1d", column = "c", zzz = 1 }
[models.o]
remote = { category = "c", zzz = 1 }
zzz = 1
"#;
        let tables = [
            (1, &schema),
            (3, &schema["definitions"]["Settings"]),
            (6, &schema["definitions"]["StatusCheck"]),
            (7, &schema["definitions"]["Relation"]),
            (8, &schema["definitions"]["IgnoredReference"]),
            (9, &schema["definitions"]["Model"]),
            (11, &schema["definitions"]["Outbox"]),
            (14, &schema["definitions"]["Scope"]),
            (17, &schema["definitions"]["Retention"]),
            (19, &schema["definitions"]["Remote"]),
            (20, &schema["definitions"]["RemoteModel"]),
        ];
        let (diagnostics, sources) = fixture::check_files(&[("cascade.toml", config)]);
        for (line, object) in tables {
            let diagnostic = diagnostics
                .iter()
                .find(|d| d.code == Code::UnknownKey && sources.line_column(&d.location).0 == line)
                .unwrap_or_else(|| panic!("no unknown-key on line {line}: {diagnostics:?}"));
            let help = diagnostic.help.as_deref().unwrap();
            let mut read: Vec<String> =
                help.trim_start_matches("expected one of: ").split(", ").map(str::to_owned).collect();
            read.sort();
            assert_eq!(read, properties(object), "line {line}");
        }
    }

    #[test]
    fn durations_that_do_not_parse_are_invalid_values() {
        let config = r#"
[settings]
retention_interval = "daily"

[models.page_view]
table = "page_view"
retention = { keep = "ninety days", column = "entered_at" }

[models.login]
table = "login"
retention = { keep = "0d", column = "at" }
"#;
        assert_eq!(
            fixture::codes(config),
            vec![(Code::InvalidValue, 3), (Code::InvalidValue, 7), (Code::InvalidValue, 11)]
        );
        insta::assert_snapshot!(fixture::human(config));
    }

    #[test]
    fn crlf_line_endings_are_tomls_own() {
        assert_eq!(fixture::codes("[models.a]\r\ntable = \"a\"\r\nchunk_sise = 1\r\n"), vec![(Code::UnknownKey, 3)]);
    }

    #[test]
    fn names_that_hide_what_they_are_are_refused() {
        for name in ["   ", "a\u{202e}b", "line\u{2028}break", "left\u{2066}to", "quo\"te", "back`tick", "new\nline"] {
            let config = format!("[models.a]\ntable = {}\n", toml::Value::from(name));
            assert_eq!(fixture::codes(&config), vec![(Code::InvalidValue, 2)], "{name:?}");
        }
        assert_eq!(fixture::codes("[models.a]\ntable = \"Odd Name\"\n"), vec![]);
    }

    #[test]
    fn a_model_declared_in_two_files_names_both_places() {
        let a = "[models.project]\ntable = \"project\"\n";
        let b = "# another team's file\n[models.project]\ntable = \"projects\"\n";
        let (diagnostics, sources) = fixture::check_files(&[("a.toml", a), ("b.toml", b)]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::DuplicateDeclaration);
        assert_eq!(sources.describe(&diagnostics[0].location), "b.toml:2:9");
        assert!(diagnostics[0].message.contains("a.toml:1:9"), "{}", diagnostics[0].message);
    }

    #[test]
    fn open_buffers_take_the_place_of_the_files_on_disk_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a.toml"), dir.path().join("sub/b.toml"), dir.path().join("c.toml"));
        std::fs::write(&a, "[models.a]\ntable = \"a\"\n").unwrap();
        std::fs::write(&c, "[models.c]\ntable = \"on disk\"\n").unwrap();
        let buffers = std::collections::BTreeMap::from([
            (c.clone(), "[models.c]\ntable = \"in the editor\"\n".to_owned()),
            (b.clone(), "[models.b]\ntable = \"b\"\n".to_owned()),
        ]);
        let (loaded, paths) = super::load_overlaid(dir.path(), &buffers).unwrap();
        assert_eq!(paths, [a, c, b]);
        let tables: Vec<&str> = loaded.config.models.values().map(|model| model.table.value.as_str()).collect();
        assert_eq!(tables, ["a", "in the editor", "b"]);
        assert_eq!(loaded.sources.name(1), dir.path().join("c.toml").display().to_string());
    }

    #[test]
    fn settings_and_options_merge_across_files_but_not_twice() {
        let a = "[settings]\nbulk_chunk_size = 10\n[options]\n\"o\" = 1\n";
        let b = "[settings]\nper_row_chunk_size = 10\n[options]\n\"o\" = 2\n";
        let (diagnostics, _) = fixture::check_files(&[("a.toml", a), ("b.toml", b)]);
        let codes: Vec<Code> = diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::DuplicateDeclaration]);
        assert!(diagnostics[0].message.starts_with("option `o`"));
    }
}
