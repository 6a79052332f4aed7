//! Deletions across databases through Kafka: the sender's Kafka sink writes to librdkafka's mock
//! cluster (a real Kafka-protocol broker inside the test process) and the receiver's `cascade
//! inbox consume` reads the topic in a consumer group, commits offsets only after the inbox's
//! transaction, and loses nothing to a kill -9 or brokers that go away.

use crate::common;
use crate::inbox::{RECEIVER_CONFIG, WayIn, deletes_what_one_database_would, receiver_ddl, sender_config};

use common::kafka::{Cluster, committed};
use common::running::Running;
use common::{cascade, count, on_each_database, project, sqlite_database, texts};

on_each_database!(
    tombstones_through_kafka_delete_what_one_database_would_from_sqlite_to_postgres,
    tombstones_through_kafka_delete_what_one_database_would_from_postgres_to_postgres,
    |databases| {
        let Some(server) = common::databases::postgres_server() else { return };
        let cluster = Cluster::start(1);
        let make_topic = |topic: &str| cluster.topic(topic, 3);
        let receiver = |ddl: &str| common::databases::postgres_database_on(&server, ddl);
        deletes_what_one_database_would(&databases, WayIn::Kafka(&cluster.bootstrap, &make_topic), receiver);
    }
);

const TOPIC: &str = "cascade.control.organization_deleted";

/// A sending SQLite database in `dir` with organizations 1 to `organizations`, and its project,
/// whose Kafka sink writes to [`TOPIC`] (made with `partitions`) in deliveries of `batch_size`.
fn kafka_sender(
    dir: &std::path::Path,
    cluster: &Cluster,
    organizations: u64,
    (partitions, batch_size): (i32, u32),
) -> (String, tempfile::TempDir) {
    let rows: Vec<String> = (1..=organizations).map(|id| format!("({id})")).collect();
    let schema = format!(
        "CREATE TABLE organization (id INTEGER PRIMARY KEY);\nINSERT INTO organization VALUES {};",
        rows.join(", ")
    );
    let sender = sqlite_database(dir, &schema);
    cluster.topic(TOPIC, partitions);
    let sink = format!("batch_size = {batch_size}\n[outbox.sinks.receiver.kafka]\nbrokers = \"{}\"", cluster.bootstrap);
    (sender, project(&[("cascades/cascade.toml", &sender_config(&sink))]))
}

/// 60 tombstones on a topic of three partitions, read while every broker goes away and comes
/// back: each tombstone is taken once, and the group's offsets are committed to the end. A consumer of another group, into another inbox, killed with -9 mid-stream has
/// committed no offset past what its inbox holds, and a rerun takes the rest.
#[test]
fn lost_brokers_and_a_killed_consumer_lose_no_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let organizations = 60;
    let cluster = Cluster::start(1);
    let (sender, sender_dir) = kafka_sender(dir.path(), &cluster, organizations, (3, 7));
    let receiver_dir = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let ids: Vec<String> = (1..=organizations).map(|id| id.to_string()).collect();
    let mut delete = cascade(sender_dir.path());
    delete.args(["delete", "organization"]).args(&ids).args(["--confirm", "--database-url", &sender]);
    delete.assert().success();
    cascade(sender_dir.path()).args(["outbox", "drain", "--once", "--database-url", &sender]).assert().success();
    assert_eq!(count(&sender, "SELECT COUNT(*) FROM cascade_outbox"), 0);

    let consumer = |group: &str, url: &str| {
        let args = [
            "inbox",
            "consume",
            "--brokers",
            &cluster.bootstrap,
            "--topic",
            TOPIC,
            "--group",
            group,
            "--source",
            "control",
            "--batch-size",
            "4",
            "--database-url",
            url,
        ];
        Running::start(receiver_dir.path(), &args)
    };
    let inbox = |url: &str| count(url, "SELECT COUNT(*) FROM cascade_inbox");
    let keys = |url: &str| -> Vec<String> {
        let rows = texts(url, "SELECT object_key FROM cascade_inbox ORDER BY CAST(object_key AS INTEGER)");
        rows.into_iter().map(|row| row[0].clone().unwrap()).collect()
    };

    let receiver = sqlite_database(dir.path(), &receiver_ddl(false));
    let mut first = consumer("receivers", &receiver);
    first.expect("batch taken");
    cluster.set_up(false);
    cluster.set_up(true);
    common::wait_until("every tombstone is taken", || inbox(&receiver) == organizations);
    first.terminate();
    assert!(first.finish().status.success());
    assert_eq!(keys(&receiver), ids, "each organization's tombstone, once");
    assert_eq!(committed(&cluster.bootstrap, "receivers", TOPIC, 3), organizations as i64, "every offset committed");
    cascade(receiver_dir.path()).args(["worker", "--once", "--database-url", &receiver]).assert().success();
    assert_eq!(count(&receiver, "SELECT COUNT(*) FROM cascade_inbox WHERE applied_at IS NULL"), 0);

    let crashed = sqlite_database(dir.path(), &receiver_ddl(false));
    let mut killed = consumer("crashing", &crashed);
    killed.expect("batch taken");
    killed.expect("batch taken");
    killed.kill();
    let committed = committed(&cluster.bootstrap, "crashing", TOPIC, 3);
    assert!(committed >= 8 && committed <= inbox(&crashed) as i64, "{committed} committed, {} taken", inbox(&crashed));
    let mut rerun = cascade(receiver_dir.path());
    rerun.args(["inbox", "consume", "--once", "--brokers", &cluster.bootstrap, "--topic", TOPIC]);
    rerun.args(["--group", "crashing-rerun", "--source", "control", "--database-url", &crashed]);
    rerun.assert().success();
    assert_eq!(keys(&crashed), ids, "each organization's tombstone, once");
}

/// Two consumers of one group share the topic's partitions; when one leaves, the group rebalances
/// and the other reads the partitions it had, from the offsets it committed: every tombstone
/// written before, between and after is taken exactly once into the shared inbox.
#[test]
fn a_rebalance_loses_no_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let organizations = 90;
    let cluster = Cluster::start(1);
    let (sender, sender_dir) = kafka_sender(dir.path(), &cluster, organizations, (4, 5));
    let receiver_dir = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let send = |ids: std::ops::RangeInclusive<i64>| {
        let ids: Vec<String> = ids.map(|id| id.to_string()).collect();
        let mut delete = cascade(sender_dir.path());
        delete.args(["delete", "organization"]).args(&ids).args(["--confirm", "--database-url", &sender]);
        delete.assert().success();
        cascade(sender_dir.path()).args(["outbox", "drain", "--once", "--database-url", &sender]).assert().success();
    };
    let receiver = sqlite_database(dir.path(), &receiver_ddl(false));
    let consumer = || {
        let args = [
            "inbox",
            "consume",
            "--brokers",
            &cluster.bootstrap,
            "--topic",
            TOPIC,
            "--group",
            "receivers",
            "--source",
            "control",
            "--batch-size",
            "3",
            "--database-url",
            &receiver,
            "--property",
            "heartbeat.interval.ms=100",
            "--property",
            "session.timeout.ms=6000",
        ];
        Running::start(receiver_dir.path(), &args)
    };
    let inbox = || count(&receiver, "SELECT COUNT(*) FROM cascade_inbox");

    send(1..=30);
    let mut first = consumer();
    first.expect("batch taken");
    let mut second = consumer();
    second.expect("partitions assigned");
    send(31..=60);
    second.expect("batch taken");
    common::wait_until("the first 60 tombstones are taken", || inbox() == 60);
    first.terminate();
    assert!(first.finish().status.success());
    send(61..=90);
    common::wait_until("every tombstone is taken", || inbox() == organizations);
    second.terminate();
    assert!(second.finish().status.success());
    let keys = texts(&receiver, "SELECT object_key FROM cascade_inbox ORDER BY CAST(object_key AS INTEGER)");
    let ids: Vec<Option<String>> = (1..=organizations).map(|id| Some(id.to_string())).collect();
    assert_eq!(keys.into_iter().map(|row| row[0].clone()).collect::<Vec<_>>(), ids, "each tombstone, once");
    assert_eq!(committed(&cluster.bootstrap, "receivers", TOPIC, 4), organizations as i64, "every offset committed");
}

/// `--once` ends when there is nothing to read: a topic nobody wrote, or no partition left for
/// this member of the group.
#[test]
fn once_ends_on_a_topic_with_nothing_to_read() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(1);
    let receiver_dir = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let receiver = sqlite_database(dir.path(), &receiver_ddl(false));
    let mut once = cascade(receiver_dir.path());
    once.args(["inbox", "consume", "--once", "--brokers", &cluster.bootstrap, "--topic", "nobody.wrote.this"]);
    once.args(["--source", "control", "--database-url", &receiver]).timeout(std::time::Duration::from_secs(60));
    once.assert().success().stdout(predicates::str::contains("took 0 batches (0 new of 0 tombstones)"));

    // One partition, held by a running member of the group: a `--once` member ends whichever of
    // the two the group gives it.
    cluster.topic(TOPIC, 1);
    let group =
        ["--group", "receivers", "--property", "heartbeat.interval.ms=100", "--property", "session.timeout.ms=6000"];
    let consume = ["inbox", "consume", "--brokers", &cluster.bootstrap, "--topic", TOPIC, "--source", "control"];
    let running_args: Vec<&str> = consume.iter().chain(&group).chain(&["--database-url", &receiver]).copied().collect();
    let mut running = Running::start(receiver_dir.path(), &running_args);
    running.expect("partitions assigned");
    let mut once = cascade(receiver_dir.path());
    once.args(consume).args(group).args(["--once", "--database-url", &receiver]);
    once.timeout(std::time::Duration::from_secs(60)).assert().success();
    running.terminate();
    assert!(running.finish().status.success());
}
