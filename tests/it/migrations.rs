//! The tool's own tables are versioned: an empty database and a database made by 0.1.0 (whose
//! scripts created the tables without any version) both reach the newest version, keep their
//! rows, and running the migrations again changes nothing. A database from a newer release is
//! refused rather than written to.

use crate::common;

use cascade::db::Statement;
use cascade::db::{Access, Database, DbError, SCHEMA_VERSION_TABLE, migrate, schema_version};
use common::{block_on, on_each_database, postgres_database};

/// The tables 0.1.0 created on first use: its scripts became migration 1 unchanged (applied
/// migrations are never edited), so they stand for that release here.
const RELEASE_0_1_SQLITE: &str = include_str!("../../schemas/migrations/sqlite/0001_tables.sql");
const RELEASE_0_1_POSTGRES: &str = include_str!("../../schemas/migrations/postgres/0001_tables.sql");

const TOOL_TABLES: &[&str] = &[
    "cascade_scheduled_deletion",
    "cascade_outbox",
    "cascade_outbox_delivered",
    "cascade_option",
    "cascade_run",
    "cascade_checkpoint",
];

/// A few rows such as a 0.1.0 user leaves behind.
const RELEASE_0_1_ROWS: &str = "
    INSERT INTO cascade_option (name, value) VALUES ('deletions.org.rows_per_second', 250);
    INSERT INTO cascade_scheduled_deletion (guid, model, object_id, date_scheduled)
        VALUES ('g1', 'organization', '7', CURRENT_TIMESTAMP);
    INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome)
        VALUES ('ops', 'cascade delete organization 1 --confirm', 'organization', '[\"1\"]', 'succeeded');";

fn statement(sql: &str) -> Statement {
    Statement { sql: sql.to_owned(), params: Vec::new() }
}

async fn count(database: &Database, sql: &str) -> u64 {
    database.fetch_count(&statement(sql)).await.unwrap()
}

/// The versions recorded, oldest first.
async fn versions(database: &Database) -> Vec<String> {
    let rows = database
        .fetch_texts(&statement(
            "SELECT CAST(version AS TEXT) FROM cascade_schema_version ORDER BY cascade_schema_version.version",
        ))
        .await
        .unwrap();
    rows.into_iter().map(|row| row[0].clone().unwrap()).collect()
}

async fn from_empty(url: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    assert_eq!(schema_version(&database).await.unwrap(), 0, "an empty database has no version");
    let newest = migrate(&database).await.unwrap();
    assert!(newest >= 1);
    assert_eq!(schema_version(&database).await.unwrap(), newest);
    for table in TOOL_TABLES.iter().chain([&SCHEMA_VERSION_TABLE]) {
        assert!(database.table_exists(table).await.unwrap(), "{table} exists after migrating");
    }
    let expected: Vec<String> = (1..=newest).map(|v| v.to_string()).collect();
    assert_eq!(versions(&database).await, expected, "one row per migration");
    assert_eq!(migrate(&database).await.unwrap(), newest, "migrating again is a no-op");
    assert_eq!(versions(&database).await, expected, "no migration ran twice");
    database.close().await;
}

async fn from_release_0_1(url: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    assert_eq!(schema_version(&database).await.unwrap(), 0, "0.1.0 recorded no version");
    let newest = migrate(&database).await.unwrap();
    assert_eq!(schema_version(&database).await.unwrap(), newest);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_option WHERE value = 250").await, 1);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE guid = 'g1'").await, 1);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'succeeded'").await, 1);
    database.close().await;
}

async fn newer_release_is_refused(url: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    let newest = migrate(&database).await.unwrap();
    let mut transaction = database.begin_write().await.unwrap();
    transaction
        .execute(&statement(&format!("INSERT INTO cascade_schema_version (version) VALUES ({})", newest + 1)))
        .await
        .unwrap();
    transaction.commit().await.unwrap();
    database.close().await;
    // Another process: one that migrated remembers it and does not look again.
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    match migrate(&database).await {
        Err(DbError::NewerTables { found, known }) => assert_eq!((found, known), (newest + 1, newest)),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let refusal = migrate(&database).await.unwrap_err().to_string();
    assert!(refusal.contains("upgrade cascade"), "{refusal}");
    database.close().await;
}

/// A database one of whose applied migrations another build's script made (its recorded checksum
/// differs) is refused, naming the migration, by the next process that migrates.
async fn edited_migration_is_refused(url: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    migrate(&database).await.unwrap();
    let recorded = database
        .fetch_texts(&statement("SELECT checksum FROM cascade_schema_version WHERE version = 2"))
        .await
        .unwrap();
    let migration_2 = format!(
        "{}/schemas/migrations/{}/0002_claim_tokens_and_run_heartbeats.sql",
        env!("CARGO_MANIFEST_DIR"),
        if url.starts_with("sqlite") { "sqlite" } else { "postgres" }
    );
    let expected = cascade::db::checksum(&std::fs::read_to_string(migration_2).unwrap());
    assert_eq!(recorded, [[Some(expected.clone())]], "each applied migration's checksum is recorded");
    let edited = "UPDATE cascade_schema_version SET checksum = 'edited' WHERE version = 2";
    let mut transaction = database.begin_write().await.unwrap();
    transaction.execute(&statement(edited)).await.unwrap();
    transaction.commit().await.unwrap();
    database.close().await;
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    match migrate(&database).await {
        Err(DbError::EditedMigration { version, found, expected: wanted }) => {
            assert_eq!((version, found.as_str(), wanted), (2, "edited", expected))
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let refusal = migrate(&database).await.unwrap_err().to_string();
    assert!(refusal.contains("migration 2 of the tool's tables") && refusal.contains("another build"), "{refusal}");
    database.close().await;
}

on_each_database!(
    a_sqlite_database_migrated_by_an_edited_migration_is_refused,
    a_postgres_database_migrated_by_an_edited_migration_is_refused,
    |databases| {
        block_on(edited_migration_is_refused(&databases.create("")));
    }
);

/// Every shipped migration keeps the checksum pinned in `schemas/migrations/CHECKSUMS`: an edited
/// one fails here (a database it migrated would refuse the edited build), and a new one needs
/// its line, which the failure prints.
#[test]
fn shipped_migrations_keep_their_checksums() {
    let root = format!("{}/schemas/migrations", env!("CARGO_MANIFEST_DIR"));
    let pinned_text = std::fs::read_to_string(format!("{root}/CHECKSUMS")).unwrap();
    let pinned: std::collections::BTreeMap<&str, &str> = pinned_text
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| line.split_once(' ').expect("a file and its checksum"))
        .collect();
    let mut shipped = std::collections::BTreeMap::new();
    for dialect in ["mysql", "postgres", "sqlite"] {
        for entry in std::fs::read_dir(format!("{root}/{dialect}")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let script = std::fs::read_to_string(format!("{root}/{dialect}/{name}")).unwrap();
            shipped.insert(format!("{dialect}/{name}"), cascade::db::checksum(&script));
        }
    }
    for (file, checksum) in &shipped {
        match pinned.get(file.as_str()) {
            Some(pinned) => assert_eq!(
                pinned, checksum,
                "{file} was edited after it shipped: put the change in a new migration instead"
            ),
            None => panic!("{file} is new: add its line to schemas/migrations/CHECKSUMS:\n{file} {checksum}"),
        }
    }
    let gone: Vec<&&str> = pinned.keys().filter(|file| !shipped.contains_key(**file)).collect();
    assert!(gone.is_empty(), "shipped migrations were removed: {gone:?}");
}

on_each_database!(
    an_empty_sqlite_database_reaches_the_newest_version,
    an_empty_postgres_database_reaches_the_newest_version,
    |databases| {
        block_on(from_empty(&databases.create("")));
    }
);

on_each_database!(
    a_sqlite_database_made_by_0_1_upgrades_and_keeps_its_rows(RELEASE_0_1_SQLITE),
    a_postgres_database_made_by_0_1_upgrades_and_keeps_its_rows(RELEASE_0_1_POSTGRES),
    |databases, release_0_1| {
        block_on(from_release_0_1(&databases.create(&format!("{release_0_1}{RELEASE_0_1_ROWS}"))));
    }
);

on_each_database!(
    a_sqlite_database_from_a_newer_release_is_refused,
    a_postgres_database_from_a_newer_release_is_refused,
    |databases| {
        block_on(newer_release_is_refused(&databases.create("")));
    }
);

#[test]
fn two_processes_migrating_at_once_both_succeed_on_postgres() {
    let Some(url) = postgres_database("") else { return };
    block_on(async {
        let (a, b) = (
            Database::connect(&url, Access::ReadWrite).await.unwrap(),
            Database::connect(&url, Access::ReadWrite).await.unwrap(),
        );
        let (first, second) = tokio::join!(migrate(&a), migrate(&b));
        assert_eq!(first.unwrap(), second.unwrap());
        let expected: Vec<String> = (1..=schema_version(&a).await.unwrap()).map(|v| v.to_string()).collect();
        assert_eq!(versions(&a).await, expected);
    });
}

/// Root statuses an earlier version kept as checkpoints named `status-before-deletion:TABLE:KEY`
/// move to `cascade_root_status` (a key may hold `:`), and other checkpoints stay.
async fn root_statuses_move_out_of_the_checkpoints(url: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    let kept = "INSERT INTO cascade_checkpoint (name, position) VALUES
        ('status-before-deletion:organization:7', '2'),
        ('status-before-deletion:org:a:b', '\"active\"'),
        ('orphans:event.project_id', '41')";
    database.execute(&statement(kept)).await.unwrap();
    migrate(&database).await.unwrap();
    let statuses = database
        .fetch_texts(&statement("SELECT root_table, root_key, status FROM cascade_root_status ORDER BY root_table"))
        .await
        .unwrap();
    let text = |values: [&str; 3]| values.map(|value| Some(value.to_owned())).to_vec();
    assert_eq!(statuses, vec![text(["org", "a:b", "\"active\""]), text(["organization", "7", "2"])]);
    let names = database.fetch_texts(&statement("SELECT name FROM cascade_checkpoint")).await.unwrap();
    assert_eq!(names, vec![vec![Some("orphans:event.project_id".to_owned())]]);
    database.close().await;
}

on_each_database!(
    root_statuses_move_out_of_the_checkpoints_on_sqlite(RELEASE_0_1_SQLITE),
    root_statuses_move_out_of_the_checkpoints_on_postgres(RELEASE_0_1_POSTGRES),
    |databases, release_0_1| {
        block_on(root_statuses_move_out_of_the_checkpoints(&databases.create(release_0_1)));
    }
);

/// The tables as migration `version` left them, recorded as such.
fn at_version(dialect: &str, version: i64) -> String {
    let scripts: Vec<String> = (1..=version)
        .map(|version| {
            let dir = format!("{}/schemas/migrations/{dialect}", env!("CARGO_MANIFEST_DIR"));
            let name = std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().into_string().unwrap())
                .find(|name| name.starts_with(&format!("{version:04}_")))
                .unwrap();
            std::fs::read_to_string(format!("{dir}/{name}")).unwrap()
        })
        .collect();
    let versions: Vec<String> = (1..=version).map(|version| format!("({version})")).collect();
    format!(
        "{}\nCREATE TABLE cascade_schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
        INSERT INTO cascade_schema_version (version) VALUES {};",
        scripts.join("\n"),
        versions.join(", ")
    )
}

/// A failing shard, a claimed one and waiting rows, as a drainer of the release before cells
/// leaves them; `utc` ends a timestamp literal (PostgreSQL reads one without an offset in the
/// session's time zone).
fn shards_at_version_7(utc: &str) -> String {
    format!(
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier)
            VALUES ('organization', '7', 'project_update', 'project', '42');
        INSERT INTO cascade_outbox_shard (scope, shard_identifier, claim_token, claim_expires_at, attempts,
            next_attempt_at, last_attempt_at, last_error)
        VALUES ('organization', '7', NULL, NULL, 3, '2030-01-01 00:00:08{utc}', '2030-01-01 00:00:00{utc}', 'unavailable'),
            ('organization', '8', 'token', '2030-01-01 00:10:00{utc}', 0, NULL, NULL, NULL);"
    )
}

/// Migration 8 keeps every shard's state, for the cell `''`, with a failing shard failing since
/// its last attempt; a second cell of a shard is a row of its own.
async fn shard_states_gain_a_cell(url: &str, failing_since: &str) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    assert_eq!(schema_version(&database).await.unwrap(), 7);
    migrate(&database).await.unwrap();
    let states = database
        .fetch_texts(&statement(&format!(
            "SELECT shard_identifier, cell, CAST(attempts AS TEXT), {failing_since}, last_error, claim_token \
             FROM cascade_outbox_shard ORDER BY shard_identifier"
        )))
        .await
        .unwrap();
    let text = |values: [Option<&str>; 6]| values.map(|value| value.map(str::to_owned)).to_vec();
    assert_eq!(
        states,
        vec![
            text([Some("7"), Some(""), Some("3"), Some("2030-01-01 00:00:00"), Some("unavailable"), None]),
            text([Some("8"), Some(""), Some("0"), None, None, Some("token")]),
        ]
    );
    let second_cell =
        "INSERT INTO cascade_outbox_shard (scope, shard_identifier, cell) VALUES ('organization', '7', 'de')";
    database.execute(&statement(second_cell)).await.unwrap();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_outbox_shard WHERE shard_identifier = '7'").await, 2);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_outbox").await, 1);
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_outbox_delivered").await, 0);
    database.close().await;
}

on_each_database!(
    sqlite_shard_states_gain_a_cell_and_keep_their_failures("sqlite", "", "failing_since"),
    postgres_shard_states_gain_a_cell_and_keep_their_failures(
        "postgres",
        "+00",
        "to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
    ),
    |databases, dialect, utc, failing_since| {
        let ddl = format!("{}\n{}", at_version(dialect, 7), shards_at_version_7(utc));
        block_on(shard_states_gain_a_cell(&databases.create(&ddl), failing_since));
    }
);

/// Outbox rows as the release before migration 9 leaves them: two scopes, a model-less row with
/// an object whose text is not an integer's (`043`), a
/// row scheduled later than it was added, a cell's delivery record, and a highest id (4) whose
/// row was delivered, so the sequence is ahead of the rows.
fn outbox_at_version_8(utc: &str) -> String {
    format!(
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier, payload,
            scheduled_for, scheduled_from, date_added)
        VALUES ('organization', '7', 'project_update', 'project', '42', '{{\"slug\": \"a\"}}',
                '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}'),
            ('organization', NULL, 'project_update', '', '043', NULL,
                '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}'),
            ('control', '9', 'user_update', 'user', '5', NULL,
                '2030-01-02 00:00:00{utc}', '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}'),
            ('control', '9', 'user_update', 'user', '6', NULL,
                '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}', '2030-01-01 00:00:00{utc}');
        DELETE FROM cascade_outbox WHERE id = 4;
        INSERT INTO cascade_outbox_delivered (outbox_id, cell) VALUES (3, 'us');"
    )
}

/// The view's rows as `cascade_outbox` showed them, with times as UTC text (`time` formats one).
async fn outbox_rows(database: &Database, time: &str) -> Vec<Vec<Option<String>>> {
    let (scheduled_for, date_added) = (time.replace("{}", "scheduled_for"), time.replace("{}", "date_added"));
    let sql = format!(
        "SELECT CAST(id AS TEXT), scope, shard_identifier, category, model, object_identifier, payload, \
         {scheduled_for}, {date_added} FROM cascade_outbox ORDER BY id"
    );
    database.fetch_texts(&statement(&sql)).await.unwrap()
}

/// Migration 9 moves the rows into `cascade_outbox_entry` with codes for their names and keeps
/// them readable, and writable, through the `cascade_outbox` view: every row keeps its id and
/// values, a cell's records still point at their rows, and the next row's id is above every id
/// ever used. On SQLite (`integers`: the query counting identifiers stored as integers) an
/// identifier whose text is an integer's is stored as that integer.
async fn outbox_rows_move_to_coded_entries(url: &str, time: &str, integers: Option<&str>) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    assert_eq!(schema_version(&database).await.unwrap(), 8);
    let before = outbox_rows(&database, time).await;
    assert_eq!(before.len(), 3);
    migrate(&database).await.unwrap();
    assert_eq!(outbox_rows(&database, time).await, before, "the view shows the rows as they were");
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_outbox_entry").await, 3);
    assert_eq!(
        count(&database, "SELECT COUNT(*) FROM cascade_outbox_name").await,
        7,
        "each name once: organization, control, project_update, user_update, project, user, ''"
    );
    assert_eq!(
        count(&database, "SELECT COUNT(*) FROM cascade_outbox_entry WHERE scheduled_for IS NULL").await,
        2,
        "a time equal to date_added is not stored again"
    );
    assert_eq!(
        count(
            &database,
            "SELECT COUNT(*) FROM cascade_outbox_delivered d JOIN cascade_outbox_entry e ON e.id = d.outbox_id"
        )
        .await,
        1
    );
    if let Some(integers) = integers {
        assert_eq!(count(&database, integers).await, 4, "shards 7 and 9, objects 42 and 5; not 043");
    }
    let insert = "INSERT INTO cascade_outbox (scope, shard_identifier, category, object_identifier)
        VALUES ('organization', '7', 'organization_update', '7')";
    database.execute(&statement(insert)).await.unwrap();
    if let Some(integers) = integers {
        assert_eq!(count(&database, integers).await, 6, "the view stores a new row's identifiers the same way");
    }
    let added = database
        .fetch_texts(&statement(
            "SELECT CAST(id AS TEXT), model FROM cascade_outbox WHERE category = 'organization_update'",
        ))
        .await
        .unwrap();
    assert_eq!(added, vec![vec![Some("5".to_owned()), Some(String::new())]], "id 4 is never used again");
    database.execute(&statement("DELETE FROM cascade_outbox WHERE id = 5")).await.unwrap();
    assert_eq!(count(&database, "SELECT COUNT(*) FROM cascade_outbox_entry").await, 3, "the view deletes its rows");
    database.close().await;
}

on_each_database!(
    sqlite_outbox_rows_move_to_coded_entries(
        "sqlite",
        "",
        "{}",
        Some(
            "SELECT (SELECT COUNT(*) FROM cascade_outbox_entry WHERE typeof(shard_identifier) = 'integer') \
             + (SELECT COUNT(*) FROM cascade_outbox_entry WHERE typeof(object_identifier) = 'integer')"
        )
    ),
    postgres_outbox_rows_move_to_coded_entries(
        "postgres",
        "+00",
        "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')",
        None
    ),
    |databases, dialect, utc, time, integers| {
        let ddl = format!("{}\n{}", at_version(dialect, 8), outbox_at_version_8(utc));
        block_on(outbox_rows_move_to_coded_entries(&databases.create(&ddl), time, integers));
    }
);

/// A tombstone as an application (or a worker of the release before) writes it into the table
/// `cascade_outbox` while another process upgrades the tool's tables.
fn application_tombstone(object: &str) -> Statement {
    statement(&format!(
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier) \
         VALUES ('organization', '1', 'project_update', 'project', '{object}')"
    ))
}

/// Migration 9 moves the outbox's rows into a new table and drops the old one. Tombstones other
/// sessions commit meanwhile must not be dropped with it: a writer commits tombstones before,
/// during and after the migration, and (on PostgreSQL) one transaction holds a tombstone open
/// until the migration waits for it. Every tombstone whose commit succeeded is there afterwards
/// (a writer may be made to wait, or fail, but never lose a row).
async fn concurrent_tombstones_survive_the_migration(url: String, hold_one_open: bool) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let application = Database::connect(&url, Access::ReadWrite).await.unwrap();
    assert_eq!(schema_version(&application).await.unwrap(), 8);
    let held = if hold_one_open {
        let mut transaction = application.begin_write().await.unwrap();
        transaction.execute(&application_tombstone("held")).await.unwrap();
        Some(transaction)
    } else {
        None
    };
    let migrated = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let (url, migrated) = (url.clone(), migrated.clone());
        async move {
            let database = Database::connect(&url, Access::ReadWrite).await.unwrap();
            let (mut committed, mut after) = (Vec::new(), 0);
            for index in 0..200_000 {
                let object = format!("w{index}");
                let done_before = migrated.load(Ordering::SeqCst);
                if database.execute(&application_tombstone(&object)).await.is_ok() {
                    committed.push(object);
                    after += usize::from(done_before);
                }
                if after >= 20 {
                    break;
                }
            }
            assert!(after >= 20, "tombstones are written after the migration too");
            committed
        }
    });
    let migration = tokio::spawn({
        let url = url.clone();
        async move { migrate(&Database::connect(&url, Access::ReadWrite).await.unwrap()).await }
    });
    if let Some(transaction) = held {
        // The signal: a session other than the writer's waits for a lock (the migration, for the
        // open transaction's).
        let waiting = "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                       AND query NOT LIKE 'INSERT INTO cascade_outbox %'";
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while count(&application, waiting).await == 0 {
            assert!(std::time::Instant::now() < deadline, "the migration never waited for the open transaction");
            tokio::task::yield_now().await;
        }
        transaction.commit().await.unwrap();
    }
    migration.await.unwrap().unwrap();
    migrated.store(true, Ordering::SeqCst);
    let mut committed = writer.await.unwrap();
    if hold_one_open {
        committed.push("held".to_owned());
    }
    let kept: std::collections::BTreeSet<String> = application
        .fetch_texts(&statement("SELECT object_identifier FROM cascade_outbox WHERE category = 'project_update'"))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|row| row[0].clone())
        .collect();
    let lost: Vec<&String> = committed.iter().filter(|object| !kept.contains(*object)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} committed tombstones lost, e.g. {:?}",
        lost.len(),
        committed.len(),
        &lost[..lost.len().min(5)]
    );
    application.close().await;
}

on_each_database!(
    sqlite_tombstones_written_during_the_outbox_migration_are_kept("sqlite", false),
    postgres_tombstones_written_during_the_outbox_migration_are_kept("postgres", true),
    |databases, dialect, hold_one_open| {
        let url = databases.create(&at_version(dialect, 8));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(concurrent_tombstones_survive_the_migration(url, hold_one_open));
    }
);
