//! The README's figures for Chinook, a public sample database (vendored with its MIT licence in
//! `tests/fixtures/chinook/`), built afresh on every run: the config `cascade init` writes
//! validates clean, `plan artist --id 90` counts what hand-written queries count, and
//! `delete artist 90` deletes exactly those rows and leaves every other row as it was, on
//! SQLite and on PostgreSQL.

use crate::common;

use std::collections::BTreeMap;

use common::{cascade, count, on_each_database};
use serde_json::Value;

const CHINOOK_SQLITE: &str = include_str!("../fixtures/chinook/Chinook_Sqlite.sql");
const CHINOOK_POSTGRES: &str = include_str!("../fixtures/chinook/Chinook_PostgreSql.sql");

/// Deleting artist 90, by model, as the README gives it (891 rows).
const ARTIST_90: [(&str, u64); 5] =
    [("artist", 1), ("album", 21), ("track", 213), ("invoice_line", 140), ("playlist_track", 516)];

/// A snake_case name of the PostgreSQL edition as the SQLite edition spells it
/// (`invoice_line` → `InvoiceLine`, `artist_id` → `ArtistId`).
fn pascal_case(name: &str) -> String {
    name.split('_').map(|word| word[..1].to_uppercase() + &word[1..]).collect()
}

/// The rows that deleting artist 90 must take, counted by hand: the artist, its albums, their
/// tracks, and the invoice lines and playlist entries of those tracks.
fn counted_by_hand(url: &str, name: fn(&str) -> String) -> BTreeMap<String, u64> {
    let [artist, album, track, invoice_line, playlist_track, artist_id, album_id, track_id] =
        ["artist", "album", "track", "invoice_line", "playlist_track", "artist_id", "album_id", "track_id"].map(name);
    let albums = format!("SELECT {album_id} FROM {album} WHERE {artist_id} = 90");
    let tracks = format!("SELECT {track_id} FROM {track} WHERE {album_id} IN ({albums})");
    [
        ("artist", format!("SELECT COUNT(*) FROM {artist} WHERE {artist_id} = 90")),
        ("album", format!("SELECT COUNT(*) FROM {album} WHERE {artist_id} = 90")),
        ("track", format!("SELECT COUNT(*) FROM {track} WHERE {album_id} IN ({albums})")),
        ("invoice_line", format!("SELECT COUNT(*) FROM {invoice_line} WHERE {track_id} IN ({tracks})")),
        ("playlist_track", format!("SELECT COUNT(*) FROM {playlist_track} WHERE {track_id} IN ({tracks})")),
    ]
    .into_iter()
    .map(|(model, sql)| (model.to_owned(), count(url, &sql)))
    .collect()
}

/// Runs `cascade ARGS --database-url URL` in `dir`; its JSON output.
fn json(dir: &std::path::Path, url: &str, args: &[&str]) -> Value {
    common::json_output(cascade(dir).args(args).args(["--database-url", url]))
}

/// `init`, `validate`, `plan` and `delete` on a fresh Chinook database whose tables and columns
/// are spelt by `name`.
fn readme_figures_hold(url: &str, name: fn(&str) -> String) {
    let expected: BTreeMap<String, u64> = ARTIST_90.iter().map(|(model, rows)| ((*model).to_owned(), *rows)).collect();
    assert_eq!(counted_by_hand(url, name), expected, "the README's figures, counted by hand");

    let dir = tempfile::tempdir().unwrap();
    cascade(dir.path()).args(["init", "--database-url", url]).assert().success();
    let report = json(dir.path(), url, &["validate", "--format", "json"]);
    assert_eq!(report["diagnostics"], serde_json::json!([]), "the config init wrote validates clean");

    let plan = json(dir.path(), url, &["plan", "artist", "--id", "90", "--format", "json"]);
    assert_eq!(plan["totals"], serde_json::json!(expected), "plan artist --id 90");

    let before = common::dump(url);
    let summary = json(dir.path(), url, &["delete", "artist", "90", "--confirm", "--format", "json"]);
    assert_eq!(summary["deleted"], serde_json::json!(expected), "delete artist 90");
    assert_eq!(expected.values().sum::<u64>(), 891);
    assert!(counted_by_hand(url, name).values().all(|rows| *rows == 0), "nothing of artist 90 is left");
    let after = common::dump(url);
    for (table, rows) in &before {
        match ARTIST_90.iter().find(|(model, _)| name(model) == *table) {
            Some((_, deleted)) => {
                assert_eq!(after[table].len(), rows.len() - *deleted as usize, "rows left in {table}")
            }
            None => assert!(after[table] == *rows, "{table} changed"),
        }
    }
}

/// The SQLite script in one transaction: alone it commits each of its 15,000 inserts.
fn chinook_sqlite() -> String {
    format!("BEGIN;\n{CHINOOK_SQLITE}\nCOMMIT;")
}

/// The PostgreSQL script creates a database `chinook` and connects to it (psql's `\c`): only
/// what follows is applied, to a test database.
fn chinook_postgres() -> String {
    let (_, schema_and_data) = CHINOOK_POSTGRES.split_once("\\c chinook;").expect("the script connects to chinook");
    schema_and_data.to_owned()
}

on_each_database!(
    the_readme_figures_hold_on_sqlite(chinook_sqlite(), pascal_case),
    the_readme_figures_hold_on_postgres(chinook_postgres(), str::to_owned),
    |databases, chinook, name| {
        let url = databases.create(&chinook);
        readme_figures_hold(&url, name);
        if databases.is_sqlite() {
            assert_eq!(common::texts(&url, "PRAGMA foreign_key_check"), Vec::<Vec<Option<String>>>::new());
        }
    }
);
