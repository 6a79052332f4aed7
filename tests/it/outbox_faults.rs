//! The drainer under faults, through the real binary on both databases: sink programs that stop
//! reading or leave helpers holding their pipes, a drainer stopped by SIGTERM mid-delivery, and a
//! slow or failing webhook whose drainer is killed with kill -9. Whatever happens, no tombstone is
//! deleted before a delivery that took it went through, and a rerun delivers every one at least
//! once.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::outbox::{Row, project_config, write_rows};
use common::running::{Running, STOPPING};
use common::{cascade, count, json_output, on_each_database, project, texts, wait_until};
use serde_json::Value;

const SCHEMA: &str = "CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL);";

/// A config whose `project` tombstones, sharded by organization, go to the sink `sink` declares
/// (the TOML of an `[outbox.sinks.hook]` table's keys).
fn config(sink: &str) -> String {
    project_config(&["project_update"], "hook", &format!("[outbox.sinks.hook]\n{sink}\n"))
}

/// A project directory whose config delivers through `sink`.
fn setup(sink: &str) -> tempfile::TempDir {
    project(&[("cascades/cascade.toml", &config(sink))])
}

/// Writes `objects` tombstones spread over organizations 1 to `shards`, with identifiers long
/// enough that 1,000 of them make a body of more than 64 KiB (what a pipe holds).
fn write_tombstones(url: &str, objects: usize, shards: usize) -> BTreeSet<String> {
    let names: Vec<String> = (0..objects).map(|n| format!("object-{n:05}-{}", "x".repeat(100))).collect();
    let shard_names: Vec<String> = (1..=shards).map(|shard| shard.to_string()).collect();
    let rows: Vec<Row<'_>> = names
        .iter()
        .enumerate()
        .map(|(n, name)| Row {
            scope: "organization",
            shard: Some(&shard_names[n % shards]),
            category: "project_update",
            object: name.clone(),
        })
        .collect();
    write_rows(url, &rows);
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

/// The recording sink received each of `objects` once; the largest body in bytes.
fn assert_each_recorded_once(dir: &Path, objects: &BTreeSet<String>) -> usize {
    let (delivered, largest) = recorded(dir);
    assert_eq!(delivered.len(), objects.len(), "one delivery of every message");
    assert_eq!(&delivered.into_iter().collect::<BTreeSet<_>>(), objects);
    largest
}

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
    let objects = write_tombstones(url, 1000, 1);
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
    let largest = assert_each_recorded_once(dir.path(), &objects);
    assert!(largest > 64 * 1024, "the body is larger than a pipe holds: {largest} bytes");
}

on_each_database!(
    a_sink_leaving_its_input_unread_fails_without_hanging_and_keeps_the_rows_on_sqlite,
    a_sink_leaving_its_input_unread_fails_without_hanging_and_keeps_the_rows_on_postgres,
    a_sink_leaving_its_input_unread_fails_without_hanging_and_keeps_the_rows_on_mariadb,
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
    let objects = write_tombstones(url, 25, 1);
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
        assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0, "{command:?}: no claim is left behind");
    }
    std::fs::write(dir.path().join("release"), "").unwrap();
    let output = drain_once(dir.path(), url);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(outbox_rows(url), 0);
    assert_each_recorded_once(dir.path(), &objects);
}

on_each_database!(
    sigterm_mid_delivery_finishes_it_and_exits_130_on_sqlite,
    sigterm_mid_delivery_finishes_it_and_exits_130_on_postgres,
    sigterm_mid_delivery_finishes_it_and_exits_130_on_mariadb,
    |databases| sigterm_mid_delivery(&databases.create(SCHEMA))
);

/// What the test's webhook does with a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// 500 at once.
    Failed,
    /// 204 at once.
    Accepted,
    /// 204 only after a minute: the drainer is killed (or gives up) long before.
    Held,
}

/// The webhook's behaviour, switched by the test, and every request it answered with what it
/// answered and the objects the body held.
#[derive(Default)]
struct HookState {
    /// Requests accepted before the hook holds every later one; `None`: the answer is `fixed`.
    accepted_before_holding: Option<usize>,
    fixed: Option<Answer>,
    requests: Vec<(Answer, Vec<String>)>,
}

#[derive(Clone, Default)]
struct Hook(Arc<Mutex<HookState>>);

impl Hook {
    fn answer_all(&self, answer: Answer) {
        let mut state = self.0.lock().unwrap();
        (state.fixed, state.accepted_before_holding) = (Some(answer), None);
    }

    fn accept_then_hold(&self, accepted: usize) {
        let mut state = self.0.lock().unwrap();
        (state.fixed, state.accepted_before_holding) = (None, Some(accepted));
    }

    fn requests(&self) -> Vec<(Answer, Vec<String>)> {
        self.0.lock().unwrap().requests.clone()
    }

    /// Every object of a request the hook accepted.
    fn accepted(&self) -> BTreeSet<String> {
        self.requests().into_iter().filter(|(answer, _)| *answer == Answer::Accepted).flat_map(|(_, o)| o).collect()
    }
}

impl wiremock::Respond for Hook {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Vec<Value> = serde_json::from_slice(&request.body).unwrap();
        let objects = body.iter().map(|m| m["object_identifier"].as_str().unwrap().to_owned()).collect();
        let mut state = self.0.lock().unwrap();
        let answer = match (state.fixed, state.accepted_before_holding) {
            (Some(answer), _) => answer,
            (None, Some(0)) => Answer::Held,
            (None, Some(left)) => {
                state.accepted_before_holding = Some(left - 1);
                Answer::Accepted
            }
            (None, None) => Answer::Failed,
        };
        // Recorded before the answer leaves: a row deleted after its delivery always finds its
        // request here.
        state.requests.push((answer, objects));
        match answer {
            Answer::Failed => wiremock::ResponseTemplate::new(500).set_body_string("index unavailable"),
            Answer::Accepted => wiremock::ResponseTemplate::new(204),
            Answer::Held => wiremock::ResponseTemplate::new(204).set_delay(std::time::Duration::from_secs(60)),
        }
    }
}

/// The objects whose tombstones are still in the outbox.
fn remaining(url: &str) -> BTreeSet<String> {
    texts(url, "SELECT object_identifier FROM cascade_outbox").into_iter().map(|row| row[0].clone().unwrap()).collect()
}

/// No tombstone is gone unless a request holding it was accepted.
fn assert_nothing_deleted_undelivered(url: &str, all: &BTreeSet<String>, hook: &Hook) {
    let left = remaining(url);
    let accepted = hook.accepted();
    let lost: Vec<&String> =
        all.iter().filter(|object| !left.contains(*object) && !accepted.contains(*object)).collect();
    assert!(lost.is_empty(), "deleted without a delivery: {lost:?}");
}

/// A failing webhook, then one that accepts two batches and holds the next while the drainer is
/// killed with kill -9, then a rerun against a working webhook: no tombstone is deleted before a
/// request holding it was accepted, and every one is delivered at least once (the held batch
/// again, once the dead drainer's claim has run out).
fn failing_webhook_and_kill(url: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(wiremock::MockServer::start());
    let hook = Hook::default();
    runtime.block_on(wiremock::Mock::given(wiremock::matchers::any()).respond_with(hook.clone()).mount(&server));
    let dir = setup(&format!("url = \"{}/tombstones\"\ntimeout = \"2s\"\nbatch_size = 5", server.uri()));
    let all = write_tombstones(url, 30, 3);

    hook.answer_all(Answer::Failed);
    let output = drain_once(dir.path(), url);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(remaining(url), all, "a failed delivery deletes nothing");
    let stats = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", url]));
    let shards = stats["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3, "{stats}");
    assert!(shards.iter().all(|s| s["last_error"] == "HTTP 500 Internal Server Error: index unavailable"), "{stats}");

    texts(url, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL");
    hook.accept_then_hold(2);
    let drainer = Running::start(dir.path(), &["outbox", "drain", "--poll", "50ms", "--database-url", url]);
    wait_until("the webhook holds a delivery", || hook.requests().iter().any(|(answer, _)| *answer == Answer::Held));
    drainer.kill();
    assert_nothing_deleted_undelivered(url, &all, &hook);
    let held: BTreeSet<String> =
        hook.requests().into_iter().filter(|(answer, _)| *answer == Answer::Held).flat_map(|(_, o)| o).collect();
    assert!(held.is_subset(&remaining(url)), "the held batch stays: {held:?}");
    assert!(remaining(url).len() >= 20, "at most the two accepted batches went");

    hook.answer_all(Answer::Accepted);
    let mut rerun = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", url]);
    wait_until("every tombstone is delivered", || {
        assert_nothing_deleted_undelivered(url, &all, &hook);
        remaining(url).is_empty()
    });
    rerun.terminate();
    assert_eq!(rerun.finish().status.code(), Some(130));
    assert_eq!(hook.accepted(), all, "every tombstone delivered at least once");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0);
}

on_each_database!(
    a_failing_webhook_and_a_killed_drainer_lose_no_tombstone_on_sqlite,
    a_failing_webhook_and_a_killed_drainer_lose_no_tombstone_on_postgres,
    a_failing_webhook_and_a_killed_drainer_lose_no_tombstone_on_mariadb,
    |databases| failing_webhook_and_kill(&databases.create(SCHEMA))
);
