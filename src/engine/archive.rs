//! The archive: every deleted row as one JSON line, in a gzip file per model, written and
//! flushed to disk before the chunk that deletes the rows commits. A chunk retried after a crash
//! appends its rows again (gzip members concatenate), so the archive is at-least-once.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

pub struct Archive {
    dir: PathBuf,
    files: HashMap<String, GzEncoder<File>>,
}

impl Archive {
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self { dir: dir.to_owned(), files: HashMap::new() })
    }

    /// The file of a model: `DIR/MODEL.jsonl.gz`.
    pub fn path(dir: &Path, model: &str) -> PathBuf {
        let safe: String =
            model.chars().map(|c| if c.is_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        dir.join(format!("{safe}.jsonl.gz"))
    }

    /// Appends the rows (JSON objects) of a chunk and makes them durable.
    pub fn write(&mut self, model: &str, rows: &[String]) -> std::io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        if !self.files.contains_key(model) {
            let file = OpenOptions::new().create(true).append(true).open(Self::path(&self.dir, model))?;
            self.files.insert(model.to_owned(), GzEncoder::new(file, Compression::default()));
        }
        let encoder = self.files.get_mut(model).expect("inserted above");
        for row in rows {
            encoder.write_all(row.as_bytes())?;
            encoder.write_all(b"\n")?;
        }
        encoder.flush()?;
        encoder.get_ref().sync_data()
    }

    /// Ends every gzip member properly.
    pub fn finish(self) -> std::io::Result<()> {
        for (_, encoder) in self.files {
            encoder.finish()?.sync_all()?;
        }
        Ok(())
    }
}
