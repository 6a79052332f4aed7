//! The archive: every deleted row as one JSON line, in a gzip file per model and run
//! (`DIR/MODEL.RUN.jsonl.gz`), written and synced to disk before the chunk that deletes the rows
//! commits. Each chunk is a complete gzip member, so a run killed while writing one leaves every
//! earlier chunk readable, and the next run writes files of its own. A chunk interrupted before
//! its commit is archived again by the run that deletes it: at least once, never lost.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

pub struct Archive {
    dir: PathBuf,
    run: i64,
    files: HashMap<String, File>,
}

/// An archive problem, naming the path.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the archive `{}`: {reason}", path.display())]
pub struct ArchiveError {
    /// The archive directory or file that could not be written.
    pub path: PathBuf,
    /// The underlying I/O error.
    pub reason: std::io::Error,
}

impl Archive {
    /// Opens (creating) the archive directory; fails early when it cannot be written.
    pub fn open(dir: &Path, run: i64) -> Result<Self, ArchiveError> {
        let failed = |reason| ArchiveError { path: dir.to_owned(), reason };
        std::fs::create_dir_all(dir).map_err(failed)?;
        let probe = dir.join(".cascade-archive-probe");
        File::create(&probe).and_then(|_| std::fs::remove_file(&probe)).map_err(failed)?;
        Ok(Self { dir: dir.to_owned(), run, files: HashMap::new() })
    }

    /// The file of a model in a run: `DIR/MODEL.RUN.jsonl.gz`.
    pub fn path(dir: &Path, model: &str, run: i64) -> PathBuf {
        let safe: String =
            model.chars().map(|c| if c.is_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        dir.join(format!("{safe}.{run}.jsonl.gz"))
    }

    /// Appends the rows (JSON objects) of a chunk as one gzip member and makes them durable.
    pub fn write(&mut self, model: &str, rows: &[String]) -> Result<(), ArchiveError> {
        if rows.is_empty() {
            return Ok(());
        }
        let path = Self::path(&self.dir, model, self.run);
        let failed = |reason| ArchiveError { path: path.clone(), reason };
        if !self.files.contains_key(model) {
            let file = OpenOptions::new().create(true).append(true).open(&path).map_err(failed)?;
            self.files.insert(model.to_owned(), file);
        }
        let mut member = GzEncoder::new(Vec::new(), Compression::default());
        for row in rows {
            member.write_all(row.as_bytes()).and_then(|()| member.write_all(b"\n")).map_err(failed)?;
        }
        let bytes = member.finish().map_err(failed)?;
        let file = self.files.get_mut(model).expect("opened above");
        file.write_all(&bytes).and_then(|()| file.sync_data()).map_err(failed)
    }
}
