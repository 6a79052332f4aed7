//! `delete --archive` when the disk fills up, on both databases: the archive's writes are made to
//! fail by the kernel (a file size limit on the `cascade` process, as a full disk fails them), the
//! deletion stops before the chunk commits, every archive file left passes `gzip -t` (a file
//! whose first member could not be written is removed), and a rerun with room finishes the job
//! with every deleted row archived.

use crate::common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output};

use common::{create_tool_tables, dump, on_each_database, project, texts};

/// How large a file the limited runs may write: more than the journal of one SQLite chunk
/// (freed overflow pages are not journaled), less than the archive member of one large row.
const FILE_SIZE_LIMIT: u64 = 64 * 1024;

/// `doc` 1 is small; 2 and 3 hold 256 KiB of random hex each, which compresses to more than
/// the limit.
fn schema(text: &str) -> String {
    format!("CREATE TABLE doc (id INTEGER PRIMARY KEY, body {text});")
}

const CONFIG: &str = "[settings]\nadaptive = false\n\n[models.doc]\ntable = \"doc\"\nchunk_size = 1\n";

fn random_hex(seed: u64, bytes: usize) -> String {
    let mut random = common::random::Random::seeded(seed);
    (0..bytes).map(|_| char::from_digit(random.below(16) as u32, 16).unwrap()).collect()
}

/// `cascade delete doc 1 2 3 --confirm --archive DIR`, its files limited to `limit` bytes; a
/// write past the limit fails with EFBIG (SIGXFSZ ignored), as a write to a full disk fails.
fn delete(dir: &Path, url: &str, archive: &Path, limit: Option<u64>) -> Output {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("cascade"));
    command
        .current_dir(dir)
        .env_remove("CASCADE_DATABASE_URL")
        .args(["--database-url", url, "delete", "doc", "1", "2", "3", "--confirm", "--archive"])
        .arg(archive);
    if let Some(limit) = limit {
        // SAFETY: between fork and exec only async-signal-safe calls are made (setrlimit, signal).
        unsafe {
            command.pre_exec(move || {
                let size = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &size) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    command.output().expect("run cascade")
}

/// Every file in `archive`, each checked with `gzip -t`; and `zcat` of all of them, which must
/// succeed too. The lines read, as JSON.
fn whole_archive(archive: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(archive).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    for file in &files {
        let test = Command::new("gzip").arg("-t").arg(file).output().unwrap();
        assert!(test.status.success(), "gzip -t {}: {}", file.display(), String::from_utf8_lossy(&test.stderr));
    }
    if files.is_empty() {
        return Vec::new();
    }
    let zcat = Command::new("zcat").args(&files).output().unwrap();
    assert!(zcat.status.success(), "zcat: {}", String::from_utf8_lossy(&zcat.stderr));
    String::from_utf8(zcat.stdout).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn archived_ids(lines: &[serde_json::Value]) -> Vec<i64> {
    let mut ids: Vec<i64> = lines.iter().map(|line| line["row"]["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn docs(url: &str) -> Vec<Vec<Option<String>>> {
    texts(url, "SELECT CAST(id AS TEXT), body FROM doc ORDER BY id")
}

fn full_disk(url: &str) {
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let archive = dir.path().join("archive");
    create_tool_tables(url);
    texts(url, "INSERT INTO doc VALUES (1, 'small')");
    for id in [2, 3] {
        texts(url, &format!("INSERT INTO doc VALUES ({id}, '{}')", random_hex(id, 256 * 1024)));
    }
    let before = docs(url);

    // The first run archives and deletes doc 1, then its archive cannot take doc 2.
    let first = delete(dir.path(), url, &archive, Some(FILE_SIZE_LIMIT));
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(stderr.contains("rows deleted so far stay deleted"), "{stderr}");
    assert_eq!(docs(url), before[1..], "doc 1 is deleted, 2 and 3 are not");
    assert_eq!(archived_ids(&whole_archive(&archive)), [1], "cut back to its first member");

    // The next run's first chunk cannot be archived: it leaves no file at all.
    let files = std::fs::read_dir(&archive).unwrap().count();
    let second = delete(dir.path(), url, &archive, Some(FILE_SIZE_LIMIT));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_eq!(std::fs::read_dir(&archive).unwrap().count(), files, "no file without a gzip member");
    assert_eq!(docs(url), before[1..]);
    assert_eq!(archived_ids(&whole_archive(&archive)), [1]);

    // With room again, a rerun finishes: every deleted row archived, whole, once.
    let third = delete(dir.path(), url, &archive, None);
    assert!(third.status.success(), "{}", String::from_utf8_lossy(&third.stderr));
    assert!(docs(url).is_empty());
    let lines = whole_archive(&archive);
    assert_eq!(archived_ids(&lines), [1, 2, 3]);
    for line in &lines {
        let id = line["row"]["id"].as_i64().unwrap();
        let body = before.iter().find(|row| row[0].as_deref() == Some(&id.to_string())).unwrap()[1].clone();
        assert_eq!(line["row"]["body"].as_str(), body.as_deref(), "doc {id} archived whole");
    }
    let runs = dump(url).remove("cascade_run").unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
}

on_each_database!(
    a_full_disk_leaves_only_whole_archive_files_and_a_rerun_finishes_on_sqlite,
    a_full_disk_leaves_only_whole_archive_files_and_a_rerun_finishes_on_postgres,
    a_full_disk_leaves_only_whole_archive_files_and_a_rerun_finishes_on_mariadb,
    |databases| {
        let text = if databases.is_sqlite() {
            "TEXT"
        } else if databases.is_mysql() {
            // MySQL's TEXT holds 64 KiB.
            "LONGTEXT"
        } else {
            "text"
        };
        full_disk(&databases.create(&schema(text)))
    }
);
