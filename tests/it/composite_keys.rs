//! Composite primary keys (Chinook's `PlaylistTrack`, Pagila's `film_actor`): a bulk model may
//! have one; its tombstones carry the key as a JSON array; a table with no `id` at all is
//! archived whole; a composite-key model as a root is refused with the reason, not "0 rows".

use crate::common;

use std::collections::BTreeSet;
use std::io::Read as _;

use common::{cascade, on_each_database, project, sqlite_database, texts};

const SCHEMA: &str = "
CREATE TABLE playlist (id INTEGER PRIMARY KEY);
CREATE TABLE playlist_track (playlist_id INTEGER NOT NULL REFERENCES playlist (id), track_id INTEGER NOT NULL,
                             PRIMARY KEY (playlist_id, track_id));
CREATE TABLE playlist_tag (playlist_id INTEGER NOT NULL REFERENCES playlist (id), label TEXT NOT NULL);
CREATE INDEX playlist_tag_playlist_id_idx ON playlist_tag (playlist_id);
INSERT INTO playlist VALUES (1), (2);
INSERT INTO playlist_track VALUES (1, 3), (1, 7), (2, 3);
INSERT INTO playlist_tag VALUES (1, 'calm'), (1, 'late'), (2, 'loud');
";

const CONFIG: &str = r#"
[models.playlist]
table = "playlist"
children = [
  { model = "playlist_track", column = "playlist_id" },
  { model = "playlist_tag", column = "playlist_id" },
]

[models.playlist_track]
table = "playlist_track"
strategy = "bulk"
key = ["playlist_id", "track_id"]
outbox = "playlist_track_update"

[models.playlist_tag]
table = "playlist_tag"
strategy = "bulk"

[outbox.scopes.playlist]
shard_key = "playlist_id"
categories = ["playlist_track_update"]
"#;

fn composite_keys_end_to_end(url: &str) {
    let dir = project(&[("cascades/playlists.toml", CONFIG)]);
    cascade(dir.path()).args(["validate", "--database-url", url]).assert().success();
    let archive = dir.path().join("archive");
    cascade(dir.path())
        .args(["delete", "playlist", "1", "--confirm", "--archive", archive.to_str().unwrap(), "--database-url", url])
        .assert()
        .success();

    check_tombstones(url);
    assert_eq!(texts(url, "SELECT CAST(COUNT(*) AS TEXT) FROM playlist_track")[0][0].as_deref(), Some("1"));

    // The keyless table is archived whole.
    let file = std::fs::read_dir(&archive)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.file_name().unwrap().to_string_lossy().starts_with("playlist_tag."))
        .expect("an archive file for playlist_tag");
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(file).unwrap()).read_to_string(&mut text).unwrap();
    let labels: BTreeSet<String> = text
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["row"]["label"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(labels, ["calm", "late"].map(str::to_owned).into());

    // A composite-key model cannot be a root: refused with the reason, for plan and delete.
    for command in [vec!["plan", "playlist_track", "--id", "1,3"], vec!["delete", "playlist_track", "1,3", "--confirm"]]
    {
        cascade(dir.path()).args(&command).args(["--database-url", url]).assert().code(2).stderr(
            predicates::str::contains(
                "model `playlist_track` has a composite key (playlist_id, track_id): it cannot be the root",
            ),
        );
    }
}

/// One tombstone per deleted row, its composite key as the same JSON array on both databases.
fn check_tombstones(url: &str) {
    let tombstones: BTreeSet<(String, String)> = texts(
        url,
        "SELECT object_identifier, shard_identifier FROM cascade_outbox WHERE category = 'playlist_track_update'",
    )
    .into_iter()
    .map(|row| (row[0].clone().unwrap(), row[1].clone().unwrap()))
    .collect();
    let expected: BTreeSet<(String, String)> =
        [("[1,3]", "1"), ("[1,7]", "1")].map(|(key, shard)| (key.to_owned(), shard.to_owned())).into();
    assert_eq!(tombstones, expected);
}

/// Without --archive the rows need not leave the database for their tombstones (PostgreSQL
/// writes them in the delete itself); a composite key is spelled the same all the same.
fn composite_key_tombstones_without_archive(url: &str) {
    let dir = project(&[("cascades/playlists.toml", CONFIG)]);
    cascade(dir.path()).args(["delete", "playlist", "1", "--confirm", "--database-url", url]).assert().success();
    check_tombstones(url);
}

on_each_database!(
    composite_key_tombstones_without_archive_on_sqlite,
    composite_key_tombstones_without_archive_on_postgres,
    composite_key_tombstones_without_archive_on_mariadb,
    |databases| {
        composite_key_tombstones_without_archive(&databases.create(SCHEMA));
    }
);

on_each_database!(composite_keys_on_sqlite, composite_keys_on_postgres, composite_keys_on_mariadb, |databases| {
    composite_keys_end_to_end(&databases.create(SCHEMA));
});

/// `init` writes the composite key, the JSON Schema its first line points at, and the next
/// commands; what it writes validates.
#[test]
fn init_writes_a_composite_key_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), SCHEMA);
    let project = project(&[]);
    let output =
        cascade(project.path()).args(["init", "--database-url", &url]).assert().success().get_output().stdout.clone();
    let said = String::from_utf8_lossy(&output);
    assert!(said.contains(&format!("cascade --config cascades validate --database-url '{url}'")), "{said}");
    let written = std::fs::read_to_string(project.path().join("cascades/cascade.toml")).unwrap();
    assert!(written.starts_with("#:schema cascade.schema.json\n"), "{written}");
    let schema = std::fs::read_to_string(project.path().join("cascades/cascade.schema.json")).unwrap();
    assert_eq!(schema, cascade::config::json_schema(), "the file the #:schema line points at exists");
    assert!(written.contains(r#"key = ["playlist_id", "track_id"]"#), "{written}");
    cascade(project.path()).args(["validate", "--deny-warnings", "--database-url", &url]).assert().success();
}
