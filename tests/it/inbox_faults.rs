//! Deletions across databases under kill -9: the receiving `inbox serve`, the sender's drainer
//! and the receiver's worker each killed at a seeded moment, then started again. Every seed
//! ends with each tombstone taken once, the receiver's rows as one database with the same
//! foreign keys would have them, and a child written late swept. The receiver is a SQLite
//! database, and for some seeds a MariaDB one.

use crate::common;
use crate::inbox::{RECEIVER_CONFIG, SENDER_AUTHORIZATION, TOKEN, receiver_ddl, rows, sender_config, webhook_sink};

use std::path::Path;

use common::databases::Databases;
use common::random::Random;
use common::running::Running;
use common::{DEADLINE, cascade, count, project, sqlite_database, texts};

/// The receiver's settings: claims and runs of a killed worker lapse after a second.
const RECEIVER_SETTINGS: &str = "[settings]\nlease_seconds = 1\nrun_lease_seconds = 1\n";

/// A port free now, for a server that is killed and started again on it.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start_server(dir: &Path, url: &str, port: u16) -> Running {
    let addr = format!("127.0.0.1:{port}");
    let args = ["inbox", "serve", "--addr", &addr, "--database-url", url];
    let mut server = Running::start_with(dir, &args, &[("CASCADE_INBOX_TOKEN", TOKEN)]);
    server.expect(cascade::inbox::LISTENING);
    server
}

/// Waits for `deliveries` more deliveries taken by `server`.
fn taken(server: &mut Running, deliveries: u64) {
    for _ in 0..deliveries {
        server.expect("delivery taken");
    }
}

/// One seeded run with the receiver and its oracle on SQLite; see the module's doc.
fn run(seed: u64) {
    run_with_receiver_on(&Databases::sqlite(), seed);
}

/// One seeded run, the receiver and its oracle made on `receivers`.
fn run_with_receiver_on(receivers: &Databases, seed: u64) {
    let mut random = Random::seeded(seed);
    let dir = tempfile::tempdir().unwrap();
    let organizations = 16;
    let data = rows(&mut random, organizations);
    let organization_rows: Vec<String> = (1..=organizations).map(|id| format!("({id})")).collect();
    let organizations_sql = format!(
        "CREATE TABLE organization (id INTEGER PRIMARY KEY);\nINSERT INTO organization VALUES {};\n",
        organization_rows.join(", ")
    );
    let receiver = receivers.create(&format!("{}{data}", receiver_ddl(false)));
    let oracle = receivers.create(&format!("{organizations_sql}{}{data}", receiver_ddl(true)));
    let sender = sqlite_database(dir.path(), &organizations_sql);
    let port = free_port();
    let receiver_config = format!("{RECEIVER_SETTINGS}{RECEIVER_CONFIG}");
    let receiver_dir = project(&[("cascades/cascade.toml", &receiver_config)]);
    let sender_dir =
        project(&[("cascades/cascade.toml", &sender_config(&webhook_sink(&format!("http://127.0.0.1:{port}/inbox"))))]);

    let deleted: Vec<String> = (1..=organizations).filter(|_| random.chance(50)).map(|id| id.to_string()).collect();
    let deleted = if deleted.is_empty() { vec!["3".to_owned()] } else { deleted };
    let mut delete = cascade(sender_dir.path());
    delete.args(["delete", "organization"]).args(&deleted).args(["--confirm", "--database-url", &sender]);
    delete.assert().success();

    // The receiver is killed after some deliveries, mid-delivery or between two, and started
    // again on the same port; the drainer is killed after some more.
    let sent = deleted.len() as u64;
    let mut server = start_server(receiver_dir.path(), &receiver, port);
    let args = ["outbox", "drain", "--poll", "50ms", "--database-url", &sender];
    let drainer = Running::start_with(sender_dir.path(), &args, &[SENDER_AUTHORIZATION]);
    let before_kill = random.below(sent);
    taken(&mut server, before_kill);
    server.kill();
    let mut server = start_server(receiver_dir.path(), &receiver, port);
    // Deliveries that failed while it was down back off; this ends the backoff.
    texts(&sender, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL");
    taken(&mut server, random.below(sent - before_kill));
    drainer.kill();
    common::wait_until("the sender's outbox is delivered", || {
        texts(&sender, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL, claim_expires_at = NULL");
        let mut drain = cascade(sender_dir.path());
        drain
            .args(["outbox", "drain", "--once", "--database-url", &sender])
            .env(SENDER_AUTHORIZATION.0, SENDER_AUTHORIZATION.1);
        drain.output().unwrap();
        count(&sender, "SELECT COUNT(*) FROM cascade_outbox") == 0
    });
    server.terminate();
    assert!(server.finish().status.success(), "seed {seed}");
    let taken_keys = texts(&receiver, "SELECT object_key FROM cascade_inbox ORDER BY LENGTH(object_key), object_key");
    let taken_keys: Vec<String> = taken_keys.into_iter().map(|row| row[0].clone().unwrap()).collect();
    let mut expected_keys = deleted.clone();
    expected_keys.sort_by_key(|key| key.parse::<u64>().unwrap());
    assert_eq!(taken_keys, expected_keys, "seed {seed}: each tombstone taken once");

    // The worker is killed at a seeded signal of its first clean-up: as it starts, after its
    // first committed chunk (or its first tombstones applied, when they had no child row), or
    // after it marked them applied; `inbox apply` finishes once the killed worker's claims have
    // lapsed.
    let mut worker = Running::start(receiver_dir.path(), &["worker", "--poll", "50ms", "--database-url", &receiver]);
    worker.expect("clean-up started");
    match random.below(3) {
        0 => {}
        1 => drop(worker.expect_one_of(&[common::running::CHUNK_COMMITTED, "tombstones applied"])),
        _ => drop(worker.expect("tombstones applied")),
    }
    worker.kill();
    let pending = "SELECT COUNT(*) FROM cascade_inbox WHERE applied_at IS NULL";
    let applied = common::poll(DEADLINE, || {
        let mut apply = cascade(receiver_dir.path());
        apply.args(["inbox", "apply", "--database-url", &receiver]).output().unwrap();
        (count(&receiver, pending) == 0).then_some(())
    });
    assert!(applied.is_some(), "seed {seed}: every tombstone is applied");
    assert_eq!(count(&receiver, "SELECT COUNT(*) FROM cascade_inbox WHERE parked_at IS NOT NULL"), 0, "seed {seed}");
    texts(&oracle, &format!("DELETE FROM organization WHERE id IN ({})", deleted.join(", ")));
    let mut expected = common::user_rows(&oracle);
    expected.remove("organization");
    assert_eq!(common::user_rows(&receiver), expected, "seed {seed}: deleted {deleted:?}");

    // A member written after its organization's tombstone was applied.
    texts(&receiver, &format!("INSERT INTO member VALUES (9999, {})", deleted[0]));
    cascade(receiver_dir.path()).args(["inbox", "apply", "--database-url", &receiver]).assert().success();
    assert_eq!(
        count(&receiver, "SELECT COUNT(*) FROM member WHERE id = 9999"),
        0,
        "seed {seed}: the late member is swept"
    );
}

#[test]
fn killed_receivers_drainers_and_workers_lose_nothing_seeds_1_to_10() {
    (1..=10).for_each(run);
}

#[test]
fn killed_receivers_drainers_and_workers_lose_nothing_seeds_11_to_20() {
    (11..=20).for_each(run);
}

#[test]
fn killed_receivers_drainers_and_workers_lose_nothing_seeds_21_to_30() {
    (21..=30).for_each(run);
}

#[test]
fn killed_receivers_drainers_and_workers_lose_nothing_with_the_receiver_on_mariadb_seeds_1_to_6() {
    let Some(receivers) = Databases::mysql() else { return };
    (1..=6).for_each(|seed| run_with_receiver_on(&receivers, seed));
}
