//! One analysis of a config directory: every `*.toml` file under it (open buffers in place of
//! what is on disk) loaded and checked by every rule, against a schema when one is known, with
//! each file's syntax and the index of its names. The server keeps the latest per directory.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lsp_types::Url;

use super::documents::Lines;
use super::symbols::{self, Occurrence, Symbols};
use super::syntax::Syntax;
use crate::config::{self, Loaded};
use crate::diagnostic::FileId;
use crate::planner::{self, CheckedConfig};
use crate::schema::{self, Schema};

/// How long reading a live database's schema may take before the rules that need one are left
/// out (a database that does not answer would hold every analysis up).
const INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server asks for: the config in `dir`, with the open documents' texts.
pub(crate) struct Job {
    pub dir: PathBuf,
    /// Counts the changes to the config; the analysis carries it, so the server knows what it
    /// has seen.
    pub generation: u64,
    pub buffers: BTreeMap<PathBuf, String>,
    /// The URI and version of each open document, by path.
    pub open: HashMap<PathBuf, (Url, i32)>,
    /// Read a live database's schema again, rather than the one read before (after a save).
    pub refresh_schema: bool,
}

/// One file of an analysed config.
pub(crate) struct File {
    pub uri: Url,
    /// The version of the open document analysed, if the file is open.
    pub version: Option<i32>,
    pub lines: Arc<Lines>,
    pub syntax: Arc<Syntax>,
}

/// What is read from a file's text alone, kept while the text stays the same: of a config of
/// many files, an edit changes one.
struct Indexed {
    text: String,
    file: FileId,
    lines: Arc<Lines>,
    syntax: Arc<Syntax>,
    occurrences: Arc<Vec<Occurrence>>,
}

pub(crate) struct Analysis {
    pub generation: u64,
    pub loaded: Loaded,
    /// By [`FileId`].
    pub files: Vec<File>,
    /// The config, when no rule found an error in it.
    pub checked: Option<CheckedConfig>,
    pub schema: Option<Arc<Schema>>,
    pub symbols: Symbols,
}

impl Analysis {
    pub(crate) fn file_of(&self, uri: &Url) -> Option<FileId> {
        self.files.iter().position(|file| &file.uri == uri)
    }

    pub(crate) fn text(&self, file: FileId) -> &str {
        self.loaded.sources.text(file)
    }

    /// The LSP range of `span` in `file`.
    pub(crate) fn range(&self, file: FileId, span: &std::ops::Range<usize>) -> lsp_types::Range {
        self.files[file].lines.range(self.text(file), span)
    }

    pub(crate) fn location(&self, file: FileId, span: &std::ops::Range<usize>) -> lsp_types::Location {
        lsp_types::Location::new(self.files[file].uri.clone(), self.range(file, span))
    }

    pub(crate) fn offset(&self, file: FileId, position: lsp_types::Position) -> usize {
        self.files[file].lines.offset(self.text(file), position)
    }
}

/// Where the rules that need a schema get one.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaSource {
    /// A DDL file (`--schema`, or the `schema` initialization option).
    pub ddl: Option<PathBuf>,
    /// A database (`--database-url`, or the `databaseUrl` initialization option); without one
    /// the config's `[settings] database_url` is read.
    pub database_url: Option<String>,
}

/// A DDL file as read: its path, modification time and length, and its schema or why not.
struct ReadDdl {
    path: PathBuf,
    /// None when the file could not be read.
    stamp: Option<(SystemTime, u64)>,
    schema: Result<Arc<Schema>, String>,
}

/// The analyses' state between jobs: the schemas read, and each file's syntax by its text.
pub(crate) struct Analyzer {
    source: SchemaSource,
    ddl: Option<ReadDdl>,
    databases: HashMap<String, Result<Arc<Schema>, String>>,
    indexed: HashMap<PathBuf, Indexed>,
}

/// An analysis, and what the user should be told about it (a schema that could not be read).
pub(crate) struct Outcome {
    pub dir: PathBuf,
    pub analysis: Result<Analysis, String>,
    pub messages: Vec<String>,
}

impl Analyzer {
    pub(crate) fn new(source: SchemaSource) -> Self {
        Self { source, ddl: None, databases: HashMap::new(), indexed: HashMap::new() }
    }

    pub(crate) fn analyze(&mut self, job: Job) -> Outcome {
        let started = std::time::Instant::now();
        let mut messages = Vec::new();
        let analysis = self.load(&job, &mut messages);
        tracing::debug!(dir = %job.dir.display(), generation = job.generation, elapsed = ?started.elapsed(), "analysed");
        Outcome { dir: job.dir, analysis, messages }
    }

    fn load(&mut self, job: &Job, messages: &mut Vec<String>) -> Result<Analysis, String> {
        let started = std::time::Instant::now();
        let (mut loaded, paths) = config::load_overlaid(&job.dir, &job.buffers).map_err(|error| error.to_string())?;
        let read = started.elapsed();
        let schema = self.schema(&loaded, job.refresh_schema, messages);
        let checked = planner::check(&mut loaded, schema.as_deref());
        if let Some(schema) = &schema {
            planner::check_deletions(&mut loaded, schema);
        }
        tracing::debug!(?read, checked = ?started.elapsed() - read, "loaded and checked");
        self.indexed.retain(|path, _| paths.contains(path));
        let mut files = Vec::with_capacity(paths.len());
        let mut occurrences = Vec::with_capacity(paths.len());
        for (file, path) in paths.iter().enumerate() {
            let text = loaded.sources.text(file);
            let indexed = match self.indexed.get(path) {
                Some(indexed) if indexed.text == text && indexed.file == file => indexed,
                _ => {
                    let syntax = Syntax::parse(text);
                    let indexed = Indexed {
                        text: text.to_owned(),
                        file,
                        lines: Arc::new(Lines::new(text)),
                        occurrences: Arc::new(symbols::occurrences(file, &syntax)),
                        syntax: Arc::new(syntax),
                    };
                    self.indexed.entry(path.clone()).insert_entry(indexed).into_mut()
                }
            };
            let (uri, version) = match job.open.get(path) {
                Some((uri, version)) => (uri.clone(), Some(*version)),
                None => {
                    (Url::from_file_path(path).map_err(|()| format!("`{}` is no file path", path.display()))?, None)
                }
            };
            occurrences.push(indexed.occurrences.clone());
            files.push(File { uri, version, lines: indexed.lines.clone(), syntax: indexed.syntax.clone() });
        }
        let symbols = Symbols::new(occurrences);
        Ok(Analysis { generation: job.generation, loaded, files, checked, schema, symbols })
    }

    /// The schema to check against: the DDL file's (read again when it changed), else the
    /// database's (read once per URL, again after a save), else none.
    fn schema(&mut self, loaded: &Loaded, refresh: bool, messages: &mut Vec<String>) -> Option<Arc<Schema>> {
        if let Some(path) = self.source.ddl.clone() {
            return self.ddl_schema(&path, messages);
        }
        let settings_url = loaded.config.settings.database_url.as_ref().map(|url| url.value.clone());
        let url = self.source.database_url.clone().or(settings_url)?;
        if refresh {
            self.databases.remove(&url);
        }
        if !self.databases.contains_key(&url) {
            let read = read_database(&url);
            if let Err(error) = &read {
                messages.push(format!(
                    "cannot read the schema of {}: {error}; only the rules that need no database run",
                    crate::db::redact(&url)
                ));
            }
            self.databases.insert(url.clone(), read);
        }
        self.databases[&url].as_ref().ok().cloned()
    }

    fn ddl_schema(&mut self, path: &Path, messages: &mut Vec<String>) -> Option<Arc<Schema>> {
        let metadata = std::fs::metadata(path).ok();
        let stamp = metadata.map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        let current = self.ddl.as_ref().is_some_and(|read| read.path == path && read.stamp == stamp);
        if !current {
            let schema = std::fs::read_to_string(path)
                .map(|sql| Arc::new(schema::parse_ddl(&sql).schema))
                .map_err(|error| format!("cannot read the schema file `{}`: {error}", path.display()));
            if let Err(error) = &schema {
                messages.push(format!("{error}; only the rules that need no database run"));
            }
            self.ddl = Some(ReadDdl { path: path.to_owned(), stamp, schema });
        }
        self.ddl.as_ref().and_then(|read| read.schema.as_ref().ok().cloned())
    }
}

/// Reads a live database's schema, read-only, within [`INTROSPECTION_TIMEOUT`].
fn read_database(url: &str) -> Result<Arc<Schema>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        match tokio::time::timeout(INTROSPECTION_TIMEOUT, schema::introspect_url(url)).await {
            Ok(Ok(schema)) => Ok(Arc::new(schema)),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {} s", INTROSPECTION_TIMEOUT.as_secs())),
        }
    })
}
