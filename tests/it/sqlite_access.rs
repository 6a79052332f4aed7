//! SQLite specifics: files the tool may only read, files another process is writing, and key
//! columns declared without a type.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{block_on, cascade, project, sqlite_database};
use sqlx::{Connection, Executor};

const DDL: &str = "CREATE TABLE author (id INTEGER PRIMARY KEY);\n\
                   CREATE TABLE book (id INTEGER PRIMARY KEY, author_id INTEGER NOT NULL REFERENCES author(id));\n\
                   CREATE INDEX book_author ON book(author_id);\n\
                   INSERT INTO author VALUES (1), (2);\n\
                   INSERT INTO book VALUES (1, 1), (2, 1), (3, 2);\n";

const CONFIG: &str = "[settings]\nbusy_timeout_seconds = 1\n\n\
                      [models.author]\ntable = \"author\"\nchildren = [{ model = \"book\", column = \"author_id\" }]\n\n\
                      [models.book]\ntable = \"book\"\nstrategy = \"bulk\"\n";

/// `cascade` as a user who cannot write to `dir`: root writes anywhere, so root runs it as `nobody`.
fn cascade_without_write_access(dir: &Path) -> assert_cmd::Command {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return cascade(dir);
    }
    let binary = assert_cmd::cargo::cargo_bin("cascade");
    let mut command = assert_cmd::Command::new("runuser");
    command
        .args(["-u", "nobody", "--"])
        .arg(binary)
        .current_dir(dir)
        .env_remove("CASCADE_DATABASE_URL")
        .env("NO_COLOR", "1");
    command
}

#[test]
fn a_wal_database_in_a_read_only_directory_can_be_validated_and_planned() {
    let dir = project(&[("cascades/books.toml", CONFIG)]);
    let url = sqlite_database(dir.path(), DDL);
    block_on(async {
        let mut connection = sqlx::SqliteConnection::connect(&url).await.unwrap();
        connection.execute("PRAGMA journal_mode = WAL").await.unwrap();
        connection.close().await.unwrap();
    });
    let file = url.trim_start_matches("sqlite://");
    let before = std::fs::read(file).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path().join("cascades"), std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();

    let validated =
        cascade_without_write_access(dir.path()).args(["validate", "--database-url", &url]).output().unwrap();
    let planned = cascade_without_write_access(dir.path())
        .args(["--database-url", &url, "plan", "author", "--id", "1", "--format", "json"])
        .output()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    let stderr = String::from_utf8_lossy(&validated.stderr);
    assert!(validated.status.success(), "validate failed: {stderr}");
    assert!(String::from_utf8_lossy(&validated.stdout).contains("ok: no problems found"));
    let stderr = String::from_utf8_lossy(&planned.stderr);
    assert!(planned.status.success(), "plan failed: {stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&planned.stdout).unwrap();
    assert_eq!(plan["totals"], serde_json::json!({"author": 1, "book": 2}));
    assert_eq!(std::fs::read(file).unwrap(), before, "the database file is unchanged");
}

#[test]
fn a_locked_database_names_the_setting_that_waits_longer() {
    let dir = project(&[("cascades/books.toml", CONFIG)]);
    let url = sqlite_database(dir.path(), DDL);
    block_on(async {
        let mut writer = sqlx::SqliteConnection::connect(&url).await.unwrap();
        writer.execute("BEGIN EXCLUSIVE").await.unwrap();
        let blocked = cascade(dir.path()).args(["--database-url", &url, "delete", "author", "1", "--confirm"]).output();
        writer.execute("ROLLBACK").await.unwrap();
        writer.close().await.unwrap();
        let blocked = blocked.unwrap();
        let stderr = String::from_utf8_lossy(&blocked.stderr);
        assert!(!blocked.status.success());
        assert!(stderr.contains("database is locked"), "{stderr}");
        assert!(stderr.contains("busy_timeout_seconds"), "{stderr}");
    });
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM book"), 3, "nothing was deleted");
    cascade(dir.path()).args(["--database-url", &url, "delete", "author", "1", "--confirm"]).assert().success();
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM book"), 1);
}

/// A project whose `box` and `item` tables declare no key types, with `rows` inserted; the box
/// project's directory and the database URL.
fn untyped_boxes(rows: &str) -> (tempfile::TempDir, String) {
    let ddl = format!(
        "CREATE TABLE box (id PRIMARY KEY);\n\
         CREATE TABLE item (id PRIMARY KEY, box_id NOT NULL REFERENCES box (id));\n\
         CREATE INDEX item_box ON item (box_id);\n{rows}"
    );
    let config = "[models.box]\ntable = \"box\"\nchildren = [{ model = \"item\", column = \"box_id\" }]\n\n\
                  [models.item]\ntable = \"item\"\n";
    let dir = project(&[("cascades/boxes.toml", config)]);
    let url = sqlite_database(dir.path(), &ddl);
    (dir, url)
}

/// `cascade delete box ID --confirm --format json`: its summary.
fn delete_box(dir: &tempfile::TempDir, url: &str, id: &str) -> serde_json::Value {
    common::json_output(cascade(dir.path()).args([
        "--database-url",
        url,
        "delete",
        "box",
        id,
        "--confirm",
        "--format",
        "json",
    ]))
}

/// A key column declared without a type keeps integers as integers: ids given on the command line
/// are bound as integers, so the rows are found (bound as text, they would match nothing and the
/// roots would be reported missing).
#[test]
fn keys_of_untyped_columns_are_found() {
    let (dir, url) = untyped_boxes(
        "INSERT INTO box VALUES (1), (2), ('label');\n\
         INSERT INTO item VALUES (1, 1), (2, 1), (3, 2), (4, 'label');\n",
    );
    let summary = delete_box(&dir, &url, "1");
    assert_eq!(summary["deleted"], serde_json::json!({"item": 2, "box": 1}));
    assert_eq!(summary["missing"], serde_json::json!([]));
    delete_box(&dir, &url, "label");
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM box"), 1);
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM item"), 1, "only the item of box 2 is left");
}

/// An untyped key column holding both the text `007` and the integer 7: deleting box 1 deletes
/// its item `007` and nothing else. Bound as integers because every key of the chunk reads as
/// one, `007` would be deleted as 7: the item of box 2.
#[test]
fn an_untyped_key_is_bound_as_the_database_spells_it() {
    let (dir, url) = untyped_boxes("INSERT INTO box VALUES (1), (2);\nINSERT INTO item VALUES ('007', 1), (7, 2);\n");
    let summary = delete_box(&dir, &url, "1");
    assert_eq!(summary["deleted"], serde_json::json!({"item": 1, "box": 1}));
    let left = common::texts(&url, "SELECT typeof(id), CAST(id AS TEXT), CAST(box_id AS TEXT) FROM item");
    assert_eq!(left, vec![vec![Some("integer".to_owned()), Some("7".to_owned()), Some("2".to_owned())]]);
}

/// A text that reads as an integer (`'8'`) in a column without a declared type cannot be told
/// from the integer 8 (keys travel as text): the deletion is refused before anything is written,
/// naming the column, whether it is a key (box 1's item `'8'` beside box 8's item 8, which would
/// be deleted in its place) or a reference (item 5 of box `'8'`).
#[test]
fn an_untyped_column_holding_an_integer_as_text_is_refused() {
    for (rows, root, column) in [
        ("INSERT INTO box VALUES (1), (8);\nINSERT INTO item VALUES ('8', 1), (8, 8);\n", "1", "item.id"),
        ("INSERT INTO box VALUES ('8');\nINSERT INTO item VALUES (5, '8');\n", "8", "item.box_id"),
    ] {
        let (dir, url) = untyped_boxes(rows);
        let before = common::dump(&url);
        let output =
            cascade(dir.path()).args(["--database-url", &url, "delete", "box", root, "--confirm"]).output().unwrap();
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("`{column}` has no declared type and holds the text '8'")), "{stderr}");
        let mut after = common::dump(&url);
        after.retain(|table, _| !table.starts_with("cascade_"));
        assert_eq!(after, before, "nothing changed");
    }
}
