//! The drainer under faults, through the real binary on both databases: sink programs that stop
//! reading or leave helpers holding their pipes, a drainer stopped by SIGTERM mid-delivery, and a
//! slow or failing webhook whose drainer is killed with kill -9. Whatever happens, no tombstone is
//! deleted before a delivery that took it went through, and a rerun delivers every one at least
//! once.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::running::{Running, STOPPING};
use common::{cascade, count, create_tool_tables, json_output, on_each_database, project, texts, wait_until};
use serde_json::Value;

const SCHEMA: &str = "CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL);";

/// A config whose `project` tombstones, sharded by organization, go to the sink `sink` declares
/// (the TOML of an `[outbox.sinks.hook]` table's keys).
fn config(sink: &str) -> String {
    format!(
        r#"
[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "org_id"
categories = ["project_update"]
sink = "hook"

[outbox.sinks.hook]
{sink}
"#
    )
}

/// A project directory whose config delivers through `sink`.
fn setup(sink: &str) -> tempfile::TempDir {
    project(&[("cascades/cascade.toml", &config(sink))])
}

/// Writes `objects` tombstones of organization 1 with identifiers long enough that 1,000 of them
/// make a body of more than 64 KiB (what a pipe holds).
fn write_tombstones(url: &str, objects: usize) -> BTreeSet<String> {
    create_tool_tables(url);
    let names: Vec<String> = (0..objects).map(|n| format!("object-{n:05}-{}", "x".repeat(100))).collect();
    for chunk in names.chunks(500) {
        let values: Vec<String> =
            chunk.iter().map(|name| format!("('organization', '1', 'project_update', 'project', '{name}')")).collect();
        texts(
            url,
            &format!(
                "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier) VALUES {}",
                values.join(", ")
            ),
        );
    }
    names.into_iter().collect()
}

fn outbox_rows(url: &str) -> u64 {
    count(url, "SELECT COUNT(*) FROM cascade_outbox")
}

fn drain_once(dir: &Path, url: &str) -> std::process::Output {
    cascade(dir).args(["outbox", "drain", "--once", "--database-url", url]).output().unwrap()
}

/// The shard's state and last error, as `outbox stats` shows them.
fn shard_failure(dir: &Path, url: &str) -> (String, String) {
    let stats = json_output(cascade(dir).args(["outbox", "stats", "--format", "json", "--database-url", url]));
    let shard = &stats["shards"][0];
    (shard["state"].as_str().unwrap().to_owned(), shard["last_error"].as_str().unwrap_or_default().to_owned())
}

/// Kills a helper process a sink left running (its pid in `file`), and waits until it is gone.
fn kill_helper(file: &Path) {
    let pid: i32 = std::fs::read_to_string(file).unwrap().trim().parse().unwrap();
    // SAFETY: signals the helper the test's own sink started; it is still running (asserted by
    // the caller), so its pid was not reused.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Whether the process `file` names still runs.
fn alive(file: &Path) -> bool {
    let pid: i32 = std::fs::read_to_string(file).unwrap().trim().parse().unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// A recording sink: appends its input (one JSON array) to `delivered.jsonl` beside it.
const RECORDER: &str = r#"cat >> "$0.jsonl" && echo >> "$0.jsonl""#;

/// Every object the recording sink at `dir/delivered` received, and the largest body in bytes.
fn recorded(dir: &Path) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(dir.join("delivered.jsonl")).unwrap_or_default();
    let mut objects = Vec::new();
    let mut largest = 0;
    for line in text.lines() {
        largest = largest.max(line.len());
        let body: Vec<Value> = serde_json::from_str(line).unwrap();
        objects.extend(body.iter().map(|m| m["object_identifier"].as_str().unwrap().to_owned()));
    }
    (objects, largest)
}

/// A command sink run as `sh -c SCRIPT PATH`: `$0` is a file in the project directory.
fn shell_sink(dir: &Path, script: &str, timeout: &str) -> String {
    let script = script.replace('\\', "\\\\").replace('"', "\\\"");
    let zero = dir.join("delivered").display().to_string();
    format!("command = [\"sh\", \"-c\", \"{script}\", \"{zero}\"]\nbatch_size = 2000\ntimeout = \"{timeout}\"")
}

fn use_sink(dir: &Path, sink: &str) {
    std::fs::write(dir.join("cascades/cascade.toml"), config(sink)).unwrap();
}

/// Sinks whose program leaves its input unread, with a body larger than a pipe holds: a helper
/// that keeps stdin open after the program exited 0, a program that exits 0 without reading, a
/// program that never exits. None hangs the drainer (the first two fail at once, the third at its
/// timeout, its process group killed), none counts as a delivery, and every row stays until a
/// sink that reads it all succeeds. A helper that holds only stderr does not hold a delivery up.
fn unread_input(url: &str) {
    let dir = setup("");
    let objects = write_tombstones(url, 1000);
    let pid = dir.path().join("helper.pid").display().to_string();
    let cases = [
        // `exec 3<&0` keeps stdin for the helper (a background job's stdin is /dev/null otherwise).
        (
            format!("exec 3<&0; sleep 1000 <&3 & echo $! > {pid}; exit 0"),
            "30s",
            "`sh` exited with status 0 before reading its whole input",
        ),
        ("head -c 100 > /dev/null".to_owned(), "30s", "`sh` exited with status 0 before reading its whole input"),
        (format!("echo $$ > {pid}; sleep 1000"), "1s", "`sh` timed out after 1s"),
    ];
    for (attempt, (script, timeout, error)) in cases.iter().enumerate() {
        use_sink(dir.path(), &shell_sink(dir.path(), script, timeout));
        if attempt > 0 {
            // The shard's backoff from the attempt before is over.
            texts(url, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL");
        }
        let output = drain_once(dir.path(), url);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{script}: {stderr}");
        assert!(stderr.contains("outbox delivery failed"), "{script}: {stderr}");
        assert_eq!(outbox_rows(url), 1000, "{script}: nothing was deleted");
        assert_eq!(shard_failure(dir.path(), url), ("backing_off".to_owned(), (*error).to_owned()), "{script}");
        let helper = dir.path().join("helper.pid");
        if helper.exists() {
            if *timeout == "1s" {
                wait_until("the timed-out sink's process group is killed", || !alive(&helper));
            } else {
                assert!(alive(&helper), "a helper of a sink that exited is its own business");
                kill_helper(&helper);
            }
            std::fs::remove_file(&helper).unwrap();
        }
    }
    assert_eq!(count(url, "SELECT MAX(attempts) FROM cascade_outbox_shard"), 3);

    // A helper holding stderr (not stdin) after the program read everything: delivered.
    let script = format!("sleep 1000 & echo $! > {pid}; {RECORDER}");
    use_sink(dir.path(), &shell_sink(dir.path(), &script, "30s"));
    texts(url, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL");
    let output = drain_once(dir.path(), url);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(outbox_rows(url), 0);
    let helper = dir.path().join("helper.pid");
    assert!(alive(&helper), "the helper still holds stderr");
    kill_helper(&helper);
    let (delivered, largest) = recorded(dir.path());
    assert!(largest > 64 * 1024, "the body is larger than a pipe holds: {largest} bytes");
    assert_eq!(delivered.len(), 1000, "one delivery of every message");
    assert_eq!(delivered.into_iter().collect::<BTreeSet<_>>(), objects);
}

on_each_database!(
    a_sink_leaving_its_input_unread_fails_without_hanging_and_keeps_the_rows_on_sqlite,
    a_sink_leaving_its_input_unread_fails_without_hanging_and_keeps_the_rows_on_postgres,
    |databases| unread_input(&databases.create(SCHEMA))
);

/// A sink that blocks until `release` exists, after writing `started`; then records its input.
fn blocking_sink(dir: &Path) -> String {
    let started = dir.join("started").display().to_string();
    let release = dir.join("release").display().to_string();
    let script = format!(
        "body=$(cat); touch {started}; while [ ! -e {release} ]; do sleep 0.05; done; printf '%s\\n' \"$body\" >> \"$0.jsonl\""
    );
    shell_sink(dir, &script, "30s").replace("batch_size = 2000", "batch_size = 10")
}

/// SIGTERM while a delivery runs, to `outbox drain` and to `worker --drain`: the delivery
/// finishes, its rows are deleted, the rest stay for the next run, the claim is released and the
/// process exits 130.
fn sigterm_mid_delivery(url: &str) {
    let dir = setup("");
    use_sink(dir.path(), &blocking_sink(dir.path()));
    let objects = write_tombstones(url, 25);
    for command in [&["outbox", "drain"][..], &["worker", "--drain", "--poll", "50ms"]] {
        let _ = std::fs::remove_file(dir.path().join("started"));
        let _ = std::fs::remove_file(dir.path().join("release"));
        let before = outbox_rows(url);
        let mut running = Running::start(dir.path(), &[command, &["--database-url", url]].concat());
        wait_until("the sink has a delivery", || dir.path().join("started").exists());
        running.terminate();
        running.expect(STOPPING);
        assert_eq!(outbox_rows(url), before, "{command:?}: the delivery is not done yet");
        std::fs::write(dir.path().join("release"), "").unwrap();
        let finished = running.finish();
        assert_eq!(finished.status.code(), Some(130), "{command:?}: {}", finished.stderr);
        assert_eq!(outbox_rows(url), before - 10, "{command:?}: the finished delivery's rows go, no more");
        assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox_shard WHERE claim_token IS NOT NULL"), 0);
    }
    std::fs::write(dir.path().join("release"), "").unwrap();
    let output = drain_once(dir.path(), url);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(outbox_rows(url), 0);
    let (delivered, _) = recorded(dir.path());
    assert_eq!(delivered.len(), 25, "each delivered once");
    assert_eq!(delivered.into_iter().collect::<BTreeSet<_>>(), objects);
}

on_each_database!(
    sigterm_mid_delivery_finishes_it_and_exits_130_on_sqlite,
    sigterm_mid_delivery_finishes_it_and_exits_130_on_postgres,
    |databases| sigterm_mid_delivery(&databases.create(SCHEMA))
);
