//! The archive: every deleted row as one JSON line `{"model", "table", "row"}`, in a gzip file
//! per model and run (`DIR/MODEL.RUN.jsonl.gz`, the model name percent-encoded so two models
//! never share a file), written and synced to disk right before the chunk that deletes the rows
//! commits (a chunk rolled back, to go again, writes nothing). Each chunk is a complete gzip member: a write that fails (a full disk) is cut back
//! to the last complete member before the error is returned, and a run killed while writing
//! one leaves every earlier chunk readable; the next run writes files of its own. A chunk
//! interrupted before its commit is archived again by the run that deletes it: at least once,
//! never lost.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

/// The archive files of one run.
pub(crate) struct Archive {
    dir: PathBuf,
    run: i64,
    files: HashMap<String, File>,
    /// The members of the open transaction, each with its model, not yet written.
    pending: Vec<(String, Vec<u8>)>,
    /// Models whose file has members written since the last [`Archive::sync`].
    unsynced: Vec<String>,
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
    pub(crate) fn open(dir: &Path, run: i64) -> Result<Self, ArchiveError> {
        let failed = |reason| ArchiveError { path: dir.to_owned(), reason };
        std::fs::create_dir_all(dir).map_err(failed)?;
        let probe = dir.join(".cascade-archive-probe");
        File::create(&probe).and_then(|_| std::fs::remove_file(&probe)).map_err(failed)?;
        Ok(Self { dir: dir.to_owned(), run, files: HashMap::new(), pending: Vec::new(), unsynced: Vec::new() })
    }

    /// Fails when the archive directory cannot be created or written, before anything is.
    pub(crate) fn check(dir: &Path) -> Result<(), ArchiveError> {
        Self::open(dir, 0).map(drop)
    }

    /// The file of a model in a run: `DIR/MODEL.RUN.jsonl.gz`, every character of the model
    /// name other than ASCII letters, digits, `_` and `-` percent-encoded (`a.b` → `a%2Eb`).
    pub(crate) fn path(dir: &Path, model: &str, run: i64) -> PathBuf {
        let mut safe = String::new();
        for byte in model.bytes() {
            if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
                safe.push(char::from(byte));
            } else {
                safe.push_str(&format!("%{byte:02X}"));
            }
        }
        dir.join(format!("{safe}.{run}.jsonl.gz"))
    }

    /// Keeps the rows (JSON objects) of a chunk of `model` (deleted from `table`) as one gzip
    /// member, for [`Archive::flush`] or [`Archive::sync`] to write.
    pub(crate) fn write(&mut self, model: &str, table: &str, rows: &[String]) -> Result<(), ArchiveError> {
        if rows.is_empty() {
            return Ok(());
        }
        let member = member(model, table, rows)
            .map_err(|reason| ArchiveError { path: Self::path(&self.dir, model, self.run), reason })?;
        self.pending.push((model.to_owned(), member));
        Ok(())
    }

    /// Forgets the members kept since the last write to the files: their transaction was rolled
    /// back, and its rows are still in the database.
    pub(crate) fn discard(&mut self) {
        self.pending.clear();
    }

    /// Appends the members kept since the last call to their files, without waiting for the
    /// disk. On failure a file is cut back to its earlier members.
    pub(crate) fn flush(&mut self) -> Result<(), ArchiveError> {
        for (model, member) in std::mem::take(&mut self.pending) {
            self.append(model, &member, |file, bytes| file.write_all(bytes))?;
        }
        Ok(())
    }

    /// Appends `member` to the file of `model` with `write`. A file that holds no member once a
    /// failed write is cut back is removed, so every archive file holds at least one.
    fn append(
        &mut self,
        model: String,
        member: &[u8],
        write: impl FnOnce(&mut File, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), ArchiveError> {
        let path = Self::path(&self.dir, &model, self.run);
        let failed = |reason| ArchiveError { path: path.clone(), reason };
        let file = match self.files.entry(model.clone()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                entry.insert(OpenOptions::new().create(true).append(true).open(&path).map_err(failed)?)
            }
        };
        if let Err(reason) = append_whole(file, member, write) {
            if file.metadata().is_ok_and(|metadata| metadata.len() == 0) {
                self.files.remove(&model);
                let _ = std::fs::remove_file(&path);
            }
            return Err(failed(reason));
        }
        if !self.unsynced.contains(&model) {
            self.unsynced.push(model);
        }
        Ok(())
    }

    /// Writes what is kept and makes every member written since the last call durable: once
    /// per chunk, right before its transaction commits.
    pub(crate) fn sync(&mut self) -> Result<(), ArchiveError> {
        self.flush()?;
        for model in std::mem::take(&mut self.unsynced) {
            let path = Self::path(&self.dir, &model, self.run);
            if let Some(file) = self.files.get(&model) {
                file.sync_data().map_err(|reason| ArchiveError { path, reason })?;
            }
        }
        Ok(())
    }
}

/// Appends `member` with `write`; when that fails part-way, cuts the file back to where it was,
/// so it holds only whole members (the rows are archived again when their chunk is retried).
fn append_whole(
    file: &mut File,
    member: &[u8],
    write: impl FnOnce(&mut File, &[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let complete = file.metadata()?.len();
    write(file, member).inspect_err(|_| {
        let _ = file.set_len(complete).and_then(|()| file.sync_data());
    })
}

/// One gzip member of JSON lines `{"model", "table", "row"}`. The lines are compressed in one
/// write: each write to the encoder zeroes its whole output buffer, which per line cost more
/// than the compression itself.
fn member(model: &str, table: &str, rows: &[String]) -> std::io::Result<Vec<u8>> {
    let (model, table) = (serde_json::Value::from(model), serde_json::Value::from(table));
    let prefix = format!("{{\"model\":{model},\"table\":{table},\"row\":");
    let mut lines = String::with_capacity(rows.iter().map(|row| prefix.len() + row.len() + 2).sum());
    for row in rows {
        lines.push_str(&prefix);
        lines.push_str(row);
        lines.push_str("}\n");
    }
    let mut member = GzEncoder::new(Vec::new(), Compression::fast());
    member.write_all(lines.as_bytes())?;
    member.finish()
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    fn read_all(path: &Path) -> String {
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_failed_write_leaves_only_whole_members() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(dir.path(), 7).unwrap();
        archive.write("task", "task", &[r#"{"id":1}"#.to_owned()]).unwrap();
        archive.sync().unwrap();
        let path = Archive::path(dir.path(), "task", 7);
        let file = archive.files.get_mut("task").unwrap();
        let second = member("task", "task", &[r#"{"id":2}"#.to_owned()]).unwrap();
        let disk_full = |file: &mut File, bytes: &[u8]| {
            file.write_all(&bytes[..bytes.len() / 2])?;
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"))
        };
        assert!(append_whole(file, &second, disk_full).is_err());
        assert_eq!(read_all(&path), "{\"model\":\"task\",\"table\":\"task\",\"row\":{\"id\":1}}\n");
        archive.write("task", "task", &[r#"{"id":3}"#.to_owned()]).unwrap();
        archive.sync().unwrap();
        assert_eq!(read_all(&path).lines().count(), 2, "later members append after the cut");
    }

    #[test]
    fn a_first_write_that_fails_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(dir.path(), 7).unwrap();
        let first = member("task", "task", &[r#"{"id":1}"#.to_owned()]).unwrap();
        let disk_full = |_: &mut File, _: &[u8]| Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"));
        assert!(archive.append("task".to_owned(), &first, disk_full).is_err());
        let path = Archive::path(dir.path(), "task", 7);
        assert!(!path.exists(), "a file without a gzip member is removed");
        let half = |file: &mut File, bytes: &[u8]| {
            file.write_all(&bytes[..bytes.len() / 2])?;
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"))
        };
        assert!(archive.append("task".to_owned(), &first, half).is_err());
        assert!(!path.exists(), "nor one cut back to nothing");
        archive.write("task", "task", &[r#"{"id":2}"#.to_owned()]).unwrap();
        archive.sync().unwrap();
        assert_eq!(read_all(&path), "{\"model\":\"task\",\"table\":\"task\",\"row\":{\"id\":2}}\n");
    }

    #[test]
    fn a_transaction_rolled_back_archives_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(dir.path(), 7).unwrap();
        archive.write("task", "task", &[r#"{"id":1}"#.to_owned()]).unwrap();
        archive.discard();
        archive.write("task", "task", &[r#"{"id":2}"#.to_owned()]).unwrap();
        archive.sync().unwrap();
        let path = Archive::path(dir.path(), "task", 7);
        assert_eq!(read_all(&path), "{\"model\":\"task\",\"table\":\"task\",\"row\":{\"id\":2}}\n");
    }

    #[test]
    fn models_with_similar_names_never_share_a_file() {
        let dir = Path::new("/archive");
        let names = ["a.b", "a_b", "a%2Eb", "a b", "über"];
        let paths: std::collections::HashSet<PathBuf> = names.iter().map(|n| Archive::path(dir, n, 1)).collect();
        assert_eq!(paths.len(), names.len());
        assert_eq!(Archive::path(dir, "a.b", 1), Path::new("/archive/a%2Eb.1.jsonl.gz"));
    }
}
