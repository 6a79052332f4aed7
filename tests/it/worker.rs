//! Scheduled deletions and the worker: exactly-once with several worker processes, lease
//! recovery after kill -9, retries until failed, and the scheduling commands.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use cascade::db::Statement;
use cascade::db::{Access, Database};
use common::databases::Databases;
use common::running::{CHUNK_COMMITTED, Running, STOPPING};
use common::{
    block_on, cascade, count, on_each_database, postgres_database, project, schedule_now, sqlite_database, texts,
    wait_until,
};
use serde_json::Value;

const SCHEMA: &str = "
CREATE TABLE item (id INTEGER PRIMARY KEY, status INTEGER NOT NULL);
CREATE TABLE part (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES item (id));
CREATE INDEX part_item_id_idx ON part (item_id);
";

/// `items` items with `parts` parts each.
fn rows(items: u32, parts: u32) -> String {
    let mut sql = String::new();
    for item in 1..=items {
        sql.push_str(&format!("INSERT INTO item VALUES ({item}, 0);\n"));
        let values: Vec<String> = (0..parts).map(|p| format!("({}, {item})", item * 10_000 + p)).collect();
        if !values.is_empty() {
            sql.push_str(&format!("INSERT INTO part VALUES {};\n", values.join(", ")));
        }
    }
    sql
}

/// With a `rate`, parts go 20 at a time at that many rows a second (fixed chunks: adaptive sizes
/// would delete an item's parts in its own transaction), so a deletion takes a while.
fn config(settings: &str, rate: Option<u32>) -> String {
    let rate_limit = rate.map(|_| "rate_limit = \"rows_per_second\"\n").unwrap_or_default();
    let settings = if rate.is_some() { format!("{settings}\nadaptive = false") } else { settings.to_owned() };
    let options = rate.map(|r| format!("[options]\n\"rows_per_second\" = {r}\n\n")).unwrap_or_default();
    format!(
        "[settings]\n{settings}\n{options}[models.item]\ntable = \"item\"\n\
         status = {{ column = \"status\", proceed = [0], in_progress = 1 }}\n\
         children = [{{ model = \"part\", column = \"item_id\" }}]\n\n\
         [models.part]\ntable = \"part\"\nstrategy = \"bulk\"\nchunk_size = 20\n{rate_limit}"
    )
}

fn spawn_worker(dir: &Path, url: &str, args: &[&str]) -> Running {
    Running::start(dir, &[&["worker", "--database-url", url], args].concat())
}

/// Four worker processes (two lanes each) share 200 due deletions: each runs exactly once.
fn exactly_once(url: &str) {
    let dir = project(&[("cascades/items.toml", &config("", None))]);
    schedule_now(url, "item", 1..=200);
    let workers: Vec<Running> =
        (0..4).map(|_| spawn_worker(dir.path(), url, &["--once", "--concurrency", "2", "--poll", "100ms"])).collect();
    for mut worker in workers {
        let finished = worker.finish();
        assert!(finished.status.success(), "{}", finished.stderr);
    }
    let runs = texts(url, "SELECT root_ids, outcome FROM cascade_run");
    assert_eq!(runs.len(), 200, "one run per deletion");
    let mut roots: Vec<u32> = runs
        .iter()
        .map(|row| {
            assert_eq!(row[1].as_deref(), Some("succeeded"));
            let ids: Vec<String> = serde_json::from_str(row[0].as_deref().unwrap()).unwrap();
            ids[0].parse().unwrap()
        })
        .collect();
    roots.sort_unstable();
    assert_eq!(roots, (1..=200).collect::<Vec<_>>(), "every deletion ran, none twice");
    assert_eq!(count(url, "SELECT COUNT(*) FROM item WHERE id <= 200"), 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM part"), 5 * 10);
    assert_eq!(
        count(url, "SELECT COUNT(*) FROM part p WHERE NOT EXISTS (SELECT 1 FROM item i WHERE i.id = p.item_id)"),
        0
    );
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_scheduled_deletion"), 0);
}

on_each_database!(
    four_workers_run_each_deletion_exactly_once_on_sqlite,
    four_workers_run_each_deletion_exactly_once_on_postgres,
    |databases| {
        exactly_once(&databases.create(&format!("{SCHEMA}{}", rows(210, 5))));
    }
);

/// A worker killed with kill -9 in the middle of a deletion leaves its claim; once the lease
/// has passed, another worker releases it and finishes the deletion.
fn lease_recovery(url: &str) {
    let dir = project(&[("cascades/items.toml", &config("lease_seconds = 2\nrun_lease_seconds = 1", Some(40)))]);
    schedule_now(url, "item", [1]);
    let mut first = spawn_worker(dir.path(), url, &["--once", "--lease", "2s"]);
    first.expect(CHUNK_COMMITTED);
    first.kill();
    let left = count(url, "SELECT COUNT(*) FROM part WHERE item_id = 1");
    assert!(left > 0, "the worker was killed mid-deletion");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE in_progress"), 1, "its claim stays");
    // `scheduled` shows it as interrupted once its heartbeats have stopped for two periods.
    wait_until("the claim is shown as interrupted", || {
        let output =
            cascade(dir.path()).args(["scheduled", "--format", "json", "--database-url", url]).output().unwrap();
        let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(listed[0]["state"] == "interrupted" || listed[0]["state"] == "in_progress", "{listed}");
        listed[0]["state"] == "interrupted"
    });

    // Before the lease has passed, nobody takes the claim over (checked when the worker was done
    // before it passed: a loaded machine may take longer).
    let claimed = "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE in_progress";
    // Workers with a lease of 2 s leave it alone until 2 s have passed since the last
    // heartbeat of the killed worker; then one takes it over and finishes the deletion.
    let lease_passed = last_heartbeat(url) + Duration::from_secs(2);
    cascade(dir.path()).args(["worker", "--once", "--lease", "1h", "--database-url", url]).assert().success();
    if SystemTime::now() < lease_passed {
        assert_eq!(count(url, claimed), 1);
    }
    wait_until("a worker takes the claim over", || {
        let output =
            cascade(dir.path()).args(["worker", "--once", "--lease", "2s", "--database-url", url]).output().unwrap();
        let ended = SystemTime::now();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        if stdout.contains("1 succeeded") {
            assert!(ended > lease_passed, "taken over before the lease had passed");
            return true;
        }
        assert!(stdout.contains("0 succeeded"), "{stdout}");
        assert_eq!(count(url, claimed), 1, "the claim stays until the lease has passed");
        false
    });
    assert_eq!(count(url, "SELECT COUNT(*) FROM part WHERE item_id = 1"), 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM item WHERE id = 1"), 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_scheduled_deletion"), 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'succeeded'"), 1);
}

/// When the only scheduled deletion's claim was last heartbeated.
fn last_heartbeat(url: &str) -> SystemTime {
    let column = if url.starts_with("sqlite:") {
        "heartbeat"
    } else if url.starts_with("mysql:") {
        "LEFT(DATE_FORMAT(heartbeat, '%Y-%m-%d %H:%i:%s.%f'), 23)"
    } else {
        "to_char(heartbeat AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')"
    };
    let rows = texts(url, &format!("SELECT {column} FROM cascade_scheduled_deletion"));
    humantime::parse_rfc3339_weak(rows[0][0].as_deref().unwrap()).unwrap()
}

on_each_database!(
    a_killed_worker_is_recovered_after_the_lease_on_sqlite,
    a_killed_worker_is_recovered_after_the_lease_on_postgres,
    |databases| {
        lease_recovery(&databases.create(&format!("{SCHEMA}{}", rows(2, 400))));
    }
);

#[test]
fn four_workers_run_each_deletion_exactly_once_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    exactly_once(&databases.create(&format!("{SCHEMA}{}", rows(210, 5))));
}

#[test]
fn a_killed_worker_is_recovered_after_the_lease_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    lease_recovery(&databases.create(&format!("{SCHEMA}{}", rows(2, 400))));
}

/// A deletion a trigger refuses fails the same way every time: it is kept as failed at once,
/// with its error, instead of being retried.
fn permanent_failure_is_not_retried(url: &str, trigger: &str) {
    texts(url, trigger);
    let dir = project(&[("cascades/items.toml", &config("max_attempts = 3\nretry_delay_seconds = 0", None))]);
    schedule_now(url, "item", [1]);
    cascade(dir.path())
        .args(["worker", "--once", "--database-url", url])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("0 succeeded, 0 cancelled, 1 failed"));
    let output = cascade(dir.path()).args(["scheduled", "--format", "json", "--database-url", url]).output().unwrap();
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed[0]["state"], "failed");
    assert!(listed[0]["last_error"].as_str().unwrap().contains("refused by trigger"), "{listed}");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'failed'"), 1, "one attempt only");
    assert_eq!(count(url, "SELECT COUNT(*) FROM item WHERE id = 1"), 1, "nothing of the item was lost");
}

on_each_database!(
    a_permanent_failure_is_kept_as_failed_at_once_on_sqlite(
        "",
        "CREATE TRIGGER refuse BEFORE DELETE ON part BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
    ),
    a_permanent_failure_is_kept_as_failed_at_once_on_postgres(
        "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by trigger'; END $$ LANGUAGE plpgsql;",
        "CREATE TRIGGER refuse BEFORE DELETE ON part FOR EACH ROW EXECUTE FUNCTION refuse()"
    ),
    |databases, function, trigger| {
        let url = databases.create(&format!("{SCHEMA}{}{function}", rows(1, 3)));
        permanent_failure_is_not_retried(&url, trigger);
    }
);

fn terminate(mut worker: Running) {
    worker.terminate();
    worker.finish();
}

/// A chunk and its rate-limit wait (4 s) take longer than the lease (2 s): the heartbeat runs
/// on a timer of its own, so a second worker polling meanwhile never takes the claim over, and
/// the deletion runs once. With `first_lease` longer than the second worker's, the claim lives by
/// its own worker's lease (heartbeats every 30 s at most), not by the second worker's 2 s.
fn a_live_claim_is_never_taken_over(url: &str, first_lease: &str) {
    let dir = project(&[("cascades/items.toml", &config("", Some(5)))]);
    schedule_now(url, "item", [1]);
    let mut first = spawn_worker(dir.path(), url, &["--lease", first_lease, "--poll", "100ms"]);
    first.expect(CHUNK_COMMITTED);
    let second = spawn_worker(dir.path(), url, &["--lease", "2s", "--poll", "100ms"]);
    wait_until("the deletion is done", || count(url, "SELECT COUNT(*) FROM cascade_scheduled_deletion") == 0);
    terminate(first);
    terminate(second);
    let runs = texts(url, "SELECT outcome FROM cascade_run");
    assert_eq!(runs, vec![vec![Some("succeeded".to_owned())]], "one run, never two");
    assert_eq!(count(url, "SELECT COUNT(*) FROM part WHERE item_id = 1"), 0);
}

on_each_database!(
    a_live_claim_is_never_taken_over_on_sqlite,
    a_live_claim_is_never_taken_over_on_postgres,
    a_live_claim_is_never_taken_over_on_mariadb,
    |databases| {
        a_live_claim_is_never_taken_over(&databases.create(&format!("{SCHEMA}{}", rows(1, 60))), "2s");
    }
);

on_each_database!(
    a_claim_lives_by_its_own_workers_lease_on_sqlite,
    a_claim_lives_by_its_own_workers_lease_on_postgres,
    a_claim_lives_by_its_own_workers_lease_on_mariadb,
    |databases| {
        a_live_claim_is_never_taken_over(&databases.create(&format!("{SCHEMA}{}", rows(1, 60))), "10min");
    }
);

/// A worker whose claim went to another worker (here: the claim's token changed under it, as
/// when its lease ran out and the row was claimed again) stops before its next chunk and leaves
/// the row to its new owner.
fn a_lost_claim_stops_the_deletion(url: &str) {
    let dir = project(&[("cascades/items.toml", &config("", Some(5)))]);
    schedule_now(url, "item", [1]);
    let mut worker = spawn_worker(dir.path(), url, &["--lease", "2s", "--poll", "100ms"]);
    worker.expect(CHUNK_COMMITTED);
    texts(url, "UPDATE cascade_scheduled_deletion SET claim_token = 'another-worker'");
    let interrupted = "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'interrupted'";
    wait_until("the worker stops", || count(url, interrupted) == 1);
    terminate(worker);
    assert!(count(url, "SELECT COUNT(*) FROM part WHERE item_id = 1") > 0, "it stopped before finishing");
    assert_eq!(
        count(
            url,
            "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE in_progress AND claim_token = 'another-worker'"
        ),
        1,
        "the new owner's claim is untouched"
    );
}

on_each_database!(
    a_lost_claim_stops_the_deletion_on_sqlite,
    a_lost_claim_stops_the_deletion_on_postgres,
    a_lost_claim_stops_the_deletion_on_mariadb,
    |databases| {
        a_lost_claim_stops_the_deletion(&databases.create(&format!("{SCHEMA}{}", rows(1, 60))));
    }
);

/// A lock held by another session makes the delete time out (`lock_timeout`): a transient
/// failure, retried until the lock is gone, then the deletion succeeds.
#[test]
fn a_transient_failure_is_retried_until_it_succeeds_on_postgres() {
    let Some(url) = postgres_database(&format!("{SCHEMA}{}", rows(1, 3))) else { return };
    let dir = project(&[("cascades/items.toml", &config("max_attempts = 50\nretry_delay_seconds = 0", None))]);
    schedule_now(&url, "item", [1]);
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder_url = url.clone();
    let holder = std::thread::spawn(move || {
        block_on(async {
            let database = Database::connect(&holder_url, Access::ReadWrite).await.unwrap();
            let mut transaction = database.begin_write().await.unwrap();
            let lock = Statement { sql: "LOCK TABLE part IN ACCESS EXCLUSIVE MODE".to_owned(), params: Vec::new() };
            transaction.execute(&lock).await.unwrap();
            locked_tx.send(()).unwrap();
            // Hold the lock until the worker has failed on it at least once.
            let failed = Statement {
                sql: "SELECT CAST(COUNT(*) AS TEXT) FROM cascade_scheduled_deletion WHERE last_error IS NOT NULL"
                    .to_owned(),
                params: Vec::new(),
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            while database.fetch_texts(&failed).await.unwrap()[0][0].as_deref() != Some("1") {
                assert!(Instant::now() < deadline, "the worker never failed on the lock");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            transaction.rollback().await.unwrap();
            database.close().await;
        });
    });
    locked_rx.recv().unwrap();
    let with_timeout = format!("{url}&options=-c%20lock_timeout%3D300");
    let output = cascade(dir.path()).args(["worker", "--once", "--database-url", &with_timeout]).output().unwrap();
    holder.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // It succeeded in the end, but attempts failed on the way: cron hears about them.
    assert!(output.status.code() == Some(1) && stdout.contains("1 succeeded"), "{stdout}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM item WHERE id = 1"), 0, "deleted once the lock was gone");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_scheduled_deletion"), 0);
    assert!(
        count(&url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'failed'") >= 1,
        "it failed on the lock first"
    );
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'succeeded'"), 1);
}

#[test]
fn rescheduling_keeps_the_guid_and_cancel_refuses_a_running_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows(2, 1)));
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    let run = |args: &[&str]| {
        let output = cascade(config_dir.path()).args(args).args(["--database-url", &url]).output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let guid = |text: &str| text.rsplit("guid ").next().unwrap().trim_end_matches([')', '\n']).to_owned();
    let (code, first, _) = run(&["schedule", "item", "1", "--actor", "alice", "--data", "{\"ticket\": 7}"]);
    assert_eq!(code, Some(0));
    let (_, again, _) = run(&["schedule", "item", "1", "--in", "2h"]);
    assert_eq!(guid(&first), guid(&again), "rescheduling keeps the guid");
    let (_, listed, _) = run(&["scheduled", "--format", "json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    for key in ["guid", "model", "object_id", "date_scheduled", "attempts", "last_error"] {
        assert!(listed[0].get(key).is_some(), "`scheduled` lacks {key}");
    }
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let (code, _, stderr) = run(&["schedule", "item", "2", "--data", "not json"]);
    assert_eq!(code, Some(2), "{stderr}");

    run(&["schedule", "item", "2", "--in", "0s"]);
    texts(&url, "UPDATE cascade_scheduled_deletion SET in_progress = TRUE WHERE object_id = '2'");
    let (code, _, stderr) = run(&["cancel", "item", "2"]);
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "error: the deletion of item 2 is in progress: it cannot be cancelled now\n");
    let (code, stdout, _) = run(&["cancel", "item", "1"]);
    assert_eq!((code, stdout.starts_with("cancelled the deletion of item 1")), (Some(0), true));
    let (code, _, stderr) = run(&["cancel", "item", "1"]);
    assert_eq!((code, stderr.as_str()), (Some(1), "error: no deletion of item 1 is scheduled\n"));
}

/// Dates beyond year 9999 and durations that overflow are refused with a message, never a panic.
#[test]
fn schedule_refuses_dates_it_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows(1, 1)));
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    for when in [["--in", "8000y"], ["--in", "18446744073709551615s"], ["--at", "1960-01-01T00:00:00Z"]] {
        let output = cascade(config_dir.path())
            .args(["schedule", "item", "1"])
            .args(when)
            .args(["--database-url", &url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{when:?}: {stderr}");
        assert!(stderr.contains("9999-12-31"), "{when:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{when:?}: {stderr}");
    }
    cascade(config_dir.path())
        .args(["schedule", "item", "1", "--at", "9999-12-31T00:00:00Z", "--database-url", &url])
        .assert()
        .success();
}

/// An id that cannot be a key of the root table, or a mistyped model, is refused when it is
/// scheduled or cancelled, not five failed attempts later.
#[test]
fn schedule_and_cancel_check_the_model_and_the_id_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows(1, 1)));
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    cascade(config_dir.path())
        .args(["schedule", "item", "abc", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("id `abc` is not an integer, but the key of `item` is"));
    cascade(config_dir.path())
        .args(["cancel", "itme", "1", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown model `itme`"));
    let tables = "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'cascade_scheduled_deletion'";
    assert_eq!(count(&url, tables), 0, "refused before anything was written");
}

/// A scheduled deletion whose root row no longer exists is dropped and reported as not found,
/// not counted as a success.
#[test]
fn a_missing_root_is_reported_as_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows(1, 1)));
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    schedule_now(&url, "item", [5]);
    cascade(config_dir.path())
        .args(["worker", "--once", "--database-url", &url])
        .assert()
        .success()
        .stdout(predicates::str::contains("0 succeeded, 0 cancelled, 0 failed, 0 interrupted, 1 not found"));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_scheduled_deletion"), 0);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'not_found'"), 1);
}

/// `worker --once` runs what is due and says what waits: how many deletions are scheduled for
/// later and when the first of them is due.
fn once_says_what_is_scheduled_for_later(url: &str) {
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    let schedule = |id: &str, delay: &str| {
        let mut command = cascade(config_dir.path());
        command.args(["schedule", "item", id, "--in", delay, "--database-url", url]).assert().success();
    };
    let before = SystemTime::now();
    schedule("1", "0s");
    schedule("2", "2h");
    schedule("3", "30d");
    let output = cascade(config_dir.path()).args(["worker", "--once", "--database-url", url]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && stdout.contains("worker done: 1 succeeded"), "{stdout}");
    let line = stdout.lines().find(|line| line.contains("scheduled for later")).unwrap_or_else(|| panic!("{stdout}"));
    let due = line
        .strip_prefix("2 deletions scheduled for later, the first due at ")
        .and_then(|rest| rest.strip_suffix(" UTC"))
        .unwrap_or_else(|| panic!("{line}"));
    let due = humantime::parse_rfc3339_weak(due.split('.').next().unwrap()).unwrap_or_else(|e| panic!("{due}: {e}"));
    let two_hours = before + Duration::from_secs(7200);
    assert!(due + Duration::from_secs(1) >= two_hours && due <= two_hours + Duration::from_secs(60), "{line}");

    // Nothing waiting: nothing said.
    schedule("2", "0s");
    schedule("3", "0s");
    let mut command = cascade(config_dir.path());
    let output = command.args(["worker", "--once", "--database-url", url]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("worker done: 2 succeeded") && !stdout.contains("later"), "{stdout}");
}

on_each_database!(
    once_says_what_is_scheduled_for_later_on_sqlite,
    once_says_what_is_scheduled_for_later_on_postgres,
    once_says_what_is_scheduled_for_later_on_mariadb,
    |databases| once_says_what_is_scheduled_for_later(&databases.create(&format!("{SCHEMA}{}", rows(3, 2))))
);

/// SIGTERM in the middle of a deletion: the worker finishes the chunk, records the run
/// interrupted, releases the claim and exits 130, as every command a signal stops does.
fn sigterm_exits_130(url: &str) {
    let dir = project(&[("cascades/items.toml", &config("", Some(5)))]);
    schedule_now(url, "item", [1]);
    let mut worker = spawn_worker(dir.path(), url, &["--poll", "100ms"]);
    worker.expect(CHUNK_COMMITTED);
    worker.terminate();
    worker.expect(STOPPING);
    let finished = worker.finish();
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);
    assert!(finished.stdout.contains("1 interrupted"), "{}", finished.stdout);
    assert_eq!(texts(url, "SELECT outcome FROM cascade_run"), vec![vec![Some("interrupted".to_owned())]]);
    assert!(count(url, "SELECT COUNT(*) FROM part WHERE item_id = 1") > 0, "it stopped before finishing");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE in_progress"), 0, "claim released");
}

on_each_database!(
    a_worker_stopped_by_sigterm_mid_deletion_exits_130_on_sqlite,
    a_worker_stopped_by_sigterm_mid_deletion_exits_130_on_postgres,
    a_worker_stopped_by_sigterm_mid_deletion_exits_130_on_mariadb,
    |databases| sigterm_exits_130(&databases.create(&format!("{SCHEMA}{}", rows(1, 60))))
);

/// What the worker logs when it reads a changed schema again.
const SCHEMA_READ_AGAIN: &str = "the database's schema changed: read it again and checked the config against it";

/// A running worker reads the schema again when DDL changes it, before its next claim: a table
/// that references nothing of the config is read and the next deletion runs; a foreign key into
/// a `require_all_references` model's table that the config does not declare stops the worker
/// before it claims the next deletion, as the same worker started now would refuse to start.
/// Without the new read, the database's own `ON DELETE CASCADE` would have taken the new
/// table's row with the item, unplanned.
fn schema_changes_are_read_again(url: &str) {
    let config = config("", None).replace("[models.item]\n", "[models.item]\nrequire_all_references = true\n");
    let dir = project(&[("cascades/items.toml", &config)]);
    schedule_now(url, "item", [1]);
    let mut worker = spawn_worker(dir.path(), url, &["--poll", "50ms"]);
    wait_until("item 1 is deleted", || count(url, "SELECT COUNT(*) FROM item WHERE id = 1") == 0);

    texts(url, "CREATE TABLE audit_note (id INTEGER PRIMARY KEY, body TEXT)");
    schedule_now(url, "item", [2]);
    worker.expect(SCHEMA_READ_AGAIN);
    wait_until("item 2 is deleted", || count(url, "SELECT COUNT(*) FROM item WHERE id = 2") == 0);
    assert_eq!(count(url, "SELECT COUNT(*) FROM part WHERE item_id IN (1, 2)"), 0);

    texts(url, "CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item (id) ON DELETE CASCADE)");
    texts(url, "INSERT INTO note VALUES (1, 3)");
    schedule_now(url, "item", [3]);
    wait_until("the worker stops", || worker.ended());
    let finished = worker.finish();
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert!(finished.stderr.contains("the database's schema changed while the worker ran"), "{}", finished.stderr);
    assert!(finished.stderr.contains("note"), "the diagnostic names the new foreign key: {}", finished.stderr);
    assert_eq!(count(url, "SELECT COUNT(*) FROM item WHERE id = 3"), 1, "item 3 is kept");
    assert_eq!(count(url, "SELECT COUNT(*) FROM part WHERE item_id = 3"), 5, "its parts are kept");
    assert_eq!(count(url, "SELECT COUNT(*) FROM note"), 1, "the new table's row is kept");
    let pending = "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE object_id = '3' AND NOT in_progress";
    assert_eq!(count(url, pending), 1, "the deletion waits, unclaimed");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_run"), 2, "no run was started for item 3");
}

on_each_database!(
    a_worker_reads_a_changed_schema_again_on_sqlite,
    a_worker_reads_a_changed_schema_again_on_postgres,
    a_worker_reads_a_changed_schema_again_on_mariadb,
    |databases| schema_changes_are_read_again(&databases.create(&format!("{SCHEMA}{}", rows(3, 5))))
);

/// A tool's row that holds what no cascade writes (edited by hand: SQLite keeps any text in an
/// integer column) is an error naming the column, never read as a default.
#[test]
fn a_tool_row_that_cannot_be_read_is_an_error_naming_its_column() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows(1, 1)));
    let config_dir = project(&[("cascades/items.toml", &config("", None))]);
    schedule_now(&url, "item", [1]);
    texts(&url, "UPDATE cascade_scheduled_deletion SET attempts = 'many'");
    cascade(config_dir.path()).args(["scheduled", "--database-url", &url]).assert().code(2).stderr(
        predicates::str::contains(
            "cannot read column `attempts` of the tool's tables: holds `many`, which does not read as u64",
        ),
    );
    texts(&url, "UPDATE cascade_scheduled_deletion SET attempts = 0");
    cascade(config_dir.path()).args(["worker", "--once", "--database-url", &url]).assert().success();
    texts(&url, "UPDATE cascade_run SET resumes = 'the last one'");
    cascade(config_dir.path())
        .args(["runs", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot read column `resumes` of the tool's tables: holds `the last one`"));
}

/// `runs` lists the newest runs first by their number, and a new run resumes the latest
/// interrupted run of its roots, past run 9 too: the query reads each id as text under the
/// column's own name, and orders by the column.
fn runs_are_ordered_by_number(url: &str) {
    common::create_tool_tables(url);
    let dir = project(&[("cascades/items.toml", &config("", None))]);
    for _ in 0..11 {
        texts(
            url,
            "INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome) \
             VALUES ('test', 'delete', 'item', '[\"1\"]', 'interrupted')",
        );
    }
    cascade(dir.path()).args(["delete", "item", "1", "--confirm", "--database-url", url]).assert().success();
    let listed = common::json_output(cascade(dir.path()).args([
        "runs",
        "--limit",
        "3",
        "--format",
        "json",
        "--database-url",
        url,
    ]));
    let ids: Vec<i64> = listed.as_array().unwrap().iter().map(|run| run["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [12, 11, 10]);
    assert_eq!(listed[0]["resumes"], 11, "{listed}");
}

on_each_database!(
    runs_are_ordered_by_number_on_sqlite,
    runs_are_ordered_by_number_on_postgres,
    runs_are_ordered_by_number_on_mariadb,
    |databases| { runs_are_ordered_by_number(&databases.create(&format!("{SCHEMA}{}", rows(1, 2)))) }
);
