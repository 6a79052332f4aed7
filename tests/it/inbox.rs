//! Deletions that cross databases: a sender's tombstones delivered by its command sink to
//! `cascade inbox receive` or by its webhook sink to `cascade inbox serve`, applied by the
//! receiver's worker to a remote model's children, and compared with one database holding both
//! sides under foreign keys with the same actions.

use crate::common;

use std::path::Path;

use common::databases::Databases;
use common::random::Random;
use common::running::Running;
use common::{cascade, count, json_output, on_each_database, project, sqlite_database, texts};

/// The receiving side: members of organizations (deleted, with their notes) and invitations
/// (kept, their organization set to NULL). `REFERENCES` only in the oracle, where the
/// organizations are a table too.
pub(crate) fn receiver_ddl(with_organizations: bool) -> String {
    let references = |action: &str| {
        if with_organizations { format!(" REFERENCES organization (id) ON DELETE {action}") } else { String::new() }
    };
    format!(
        "CREATE TABLE member (id INTEGER PRIMARY KEY, organization_id INTEGER NOT NULL{});
         CREATE INDEX member_organization ON member (organization_id);
         CREATE TABLE member_note (id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL REFERENCES member (id) ON DELETE CASCADE);
         CREATE INDEX member_note_member ON member_note (member_id);
         CREATE TABLE invite (id INTEGER PRIMARY KEY, organization_id INTEGER{});
         CREATE INDEX invite_organization ON invite (organization_id);\n",
        references("CASCADE"),
        references("SET NULL"),
    )
}

pub(crate) const RECEIVER_CONFIG: &str = r#"
[models.organization]
remote = { category = "organization_deleted" }
children = [
  { model = "member", column = "organization_id" },
  { model = "invite", column = "organization_id", on_delete = "nullify" },
]

[models.member]
table = "member"
children = [{ model = "member_note", column = "member_id" }]

[models.member_note]
table = "member_note"
strategy = "bulk"

[models.invite]
table = "invite"
"#;

/// How the sender's tombstones reach the receiver.
#[derive(Clone, Copy)]
pub(crate) enum WayIn<'a> {
    /// The command sink runs this build's `cascade inbox receive`.
    Command,
    /// The webhook sink POSTs to a running `cascade inbox serve`.
    Webhook,
    /// The Kafka sink writes to the mock cluster at this bootstrap address, on the topic
    /// [`kafka_topic`] names for the seed (made beforehand by `make_topic`), read back by
    /// `cascade inbox consume`.
    #[cfg_attr(not(feature = "kafka"), allow(dead_code))]
    Kafka(&'a str, &'a dyn Fn(&str)),
}

/// The topic of the seed's tombstones on the Kafka sink.
pub(crate) fn kafka_topic(seed: u64) -> String {
    format!("seed{seed}.control.organization_deleted")
}

/// The token the receiver's `inbox serve` wants, and the variable the sender reads it from.
pub(crate) const TOKEN: &str = "inbox-token-7f3a9c";
pub(crate) const SENDER_AUTHORIZATION: (&str, &str) = ("RECEIVER_AUTHORIZATION", "Bearer inbox-token-7f3a9c");

/// The sender's config: its organizations write `organization_deleted` tombstones, delivered by
/// the sink `sink` (the body of `[outbox.sinks.receiver]`).
pub(crate) fn sender_config(sink: &str) -> String {
    format!(
        r#"
[models.organization]
table = "organization"
outbox = "organization_deleted"

[outbox.scopes.control]
shard_key = "id"
categories = ["organization_deleted"]
sink = "receiver"

[outbox.sinks.receiver]
{sink}
"#
    )
}

/// A command sink running `cascade inbox receive` on the receiver.
pub(crate) fn command_sink(receiver_dir: &Path, receiver_url: &str) -> String {
    format!(
        r#"command = ["{bin}", "inbox", "receive", "--source", "control", "--config", "{config}", "--database-url", "{receiver_url}"]"#,
        bin = env!("CARGO_BIN_EXE_cascade"),
        config = receiver_dir.join("cascades").display(),
    )
}

/// A webhook sink POSTing to the inbox server at `inbox` (its `/inbox` URL) as source `control`.
pub(crate) fn webhook_sink(inbox: &str) -> String {
    format!("url = \"{inbox}/control\"\nheaders = {{ Authorization = \"env:{}\" }}", SENDER_AUTHORIZATION.0)
}

/// Starts `cascade inbox serve` on the receiver; its `/inbox` URL once it listens.
fn start_server(receiver_dir: &Path, receiver_url: &str) -> (Running, String) {
    let args = ["inbox", "serve", "--addr", "127.0.0.1:0", "--database-url", receiver_url];
    let mut server = Running::start_with(receiver_dir, &args, &[("CASCADE_INBOX_TOKEN", TOKEN)]);
    let listening = server.expect(cascade::inbox::LISTENING);
    let url = listening.fields["url"].as_str().expect("the URL it listens on").to_owned();
    (server, url)
}

/// Seeded rows: `organizations` organizations with members, notes and invitations (some
/// invitations naming no organization), as `INSERT`s for the receiver and the oracle.
pub(crate) fn rows(random: &mut Random, organizations: u64) -> String {
    let mut sql = String::new();
    let (mut member, mut note, mut invite) = (0, 0, 0);
    for organization in 1..=organizations {
        for _ in 0..random.below(4) {
            member += 1;
            sql += &format!("INSERT INTO member VALUES ({member}, {organization});\n");
            for _ in 0..random.below(3) {
                note += 1;
                sql += &format!("INSERT INTO member_note VALUES ({note}, {member});\n");
            }
        }
        for _ in 0..random.below(3) {
            invite += 1;
            let named = if random.chance(80) { organization.to_string() } else { "NULL".to_owned() };
            sql += &format!("INSERT INTO invite VALUES ({invite}, {named});\n");
        }
    }
    sql
}

/// Deletes a seeded subset of the sender's organizations, drains its outbox into the receiver,
/// runs the receiver's worker once, and compares the receiver's rows with the oracle's after
/// the same organizations are deleted there.
pub(crate) fn deletes_what_one_database_would(
    senders: &Databases,
    way_in: WayIn<'_>,
    receiver_url: impl Fn(&str) -> String,
) {
    for seed in 1..=3 {
        let mut random = Random::seeded(seed);
        let organizations = 12;
        let data = rows(&mut random, organizations);
        let receiver = receiver_url(&format!("{}{data}", receiver_ddl(false)));
        let oracle_ddl = format!("CREATE TABLE organization (id INTEGER PRIMARY KEY);\n{}", receiver_ddl(true));
        let organization_rows: Vec<String> = (1..=organizations).map(|id| format!("({id})")).collect();
        let oracle = receiver_url(&format!(
            "{oracle_ddl}INSERT INTO organization VALUES {};\n{data}",
            organization_rows.join(", ")
        ));
        let sender_url = senders.create(&format!(
            "CREATE TABLE organization (id INTEGER PRIMARY KEY);\nINSERT INTO organization VALUES {};",
            organization_rows.join(", ")
        ));

        let before = common::user_rows(&receiver);
        let receiver_dir = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
        let server = match way_in {
            WayIn::Webhook => Some(start_server(receiver_dir.path(), &receiver)),
            _ => None,
        };
        let sink = match (way_in, &server) {
            (_, Some((_, inbox))) => webhook_sink(inbox),
            (WayIn::Kafka(bootstrap, make_topic), _) => {
                make_topic(&kafka_topic(seed));
                let topic = format!("seed{seed}.{{scope}}.{{category}}");
                format!("[outbox.sinks.receiver.kafka]\nbrokers = \"{bootstrap}\"\ntopic = \"{topic}\"")
            }
            _ => command_sink(receiver_dir.path(), &receiver),
        };
        let sender_dir = project(&[("cascades/cascade.toml", &sender_config(&sink))]);
        let deleted: Vec<String> = (1..=organizations).filter(|_| random.chance(40)).map(|id| id.to_string()).collect();
        let deleted = if deleted.is_empty() { vec!["1".to_owned()] } else { deleted };
        let mut delete = cascade(sender_dir.path());
        delete.args(["delete", "organization"]).args(&deleted).args(["--confirm", "--database-url", &sender_url]);
        delete.assert().success();
        cascade(sender_dir.path())
            .args(["outbox", "drain", "--once", "--database-url", &sender_url])
            .env(SENDER_AUTHORIZATION.0, SENDER_AUTHORIZATION.1)
            .assert()
            .success();
        if let Some((mut server, _)) = server {
            server.terminate();
            let finished = server.finish();
            assert!(finished.status.success(), "seed {seed}: {}", finished.stderr);
            assert!(finished.stdout.contains(&format!("{} new", deleted.len())), "{}", finished.stdout);
            assert!(!finished.stderr.contains(TOKEN), "the token is never printed");
        }
        if let WayIn::Kafka(bootstrap, _) = way_in {
            let mut consume = cascade(receiver_dir.path());
            consume.args(["inbox", "consume", "--once", "--brokers", bootstrap, "--topic", &kafka_topic(seed)]);
            consume.args(["--group", &format!("receiver-{seed}"), "--source", "control", "--database-url", &receiver]);
            let output = consume.output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "seed {seed}: {}", String::from_utf8_lossy(&output.stderr));
            assert!(stdout.contains(&format!("({} new of", deleted.len())), "seed {seed}: {stdout}");
        }
        assert_eq!(
            count(&sender_url, "SELECT COUNT(*) FROM cascade_outbox"),
            0,
            "seed {seed}: every tombstone delivered"
        );
        let pending = "SELECT COUNT(*) FROM cascade_inbox WHERE applied_at IS NULL";
        assert_eq!(count(&receiver, pending), deleted.len() as u64, "seed {seed}: one tombstone per organization");

        cascade(receiver_dir.path()).args(["worker", "--once", "--database-url", &receiver]).assert().success();
        texts(&oracle, &format!("DELETE FROM organization WHERE id IN ({})", deleted.join(", ")));
        assert_eq!(count(&receiver, pending), 0, "seed {seed}: every tombstone applied");
        let mut expected = common::user_rows(&oracle);
        expected.remove("organization");
        assert_ne!(expected, before, "seed {seed}: the deletion reaches some rows");
        assert_eq!(common::user_rows(&receiver), expected, "seed {seed}: deleted {deleted:?}");
    }
}

on_each_database!(
    tombstones_delete_what_one_database_would_from_sqlite_to_postgres,
    tombstones_delete_what_one_database_would_from_postgres_to_postgres,
    |databases| {
        let Some(server) = common::databases::postgres_server() else { return };
        let receiver = |ddl: &str| common::databases::postgres_database_on(&server, ddl);
        deletes_what_one_database_would(&databases, WayIn::Command, receiver);
    }
);

/// Sender and receiver both on MariaDB.
#[test]
fn tombstones_delete_what_one_database_would_from_mariadb_to_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    deletes_what_one_database_would(&databases, WayIn::Command, |ddl| databases.create(ddl));
}

/// From SQLite, through a webhook, to MariaDB.
#[test]
fn tombstones_through_a_webhook_delete_what_one_database_would_from_sqlite_to_mariadb() {
    let Some(receivers) = Databases::mysql() else { return };
    deletes_what_one_database_would(&Databases::sqlite(), WayIn::Webhook, |ddl| receivers.create(ddl));
}

on_each_database!(
    tombstones_through_a_webhook_delete_what_one_database_would_from_sqlite_to_postgres,
    tombstones_through_a_webhook_delete_what_one_database_would_from_postgres_to_postgres,
    |databases| {
        let Some(server) = common::databases::postgres_server() else { return };
        let receiver = |ddl: &str| common::databases::postgres_database_on(&server, ddl);
        deletes_what_one_database_would(&databases, WayIn::Webhook, receiver);
    }
);

/// One delivery as the command sink sends it: `(idempotency key, category, object)` each.
pub(crate) fn delivery(messages: &[(&str, &str, &str)]) -> String {
    let messages: Vec<serde_json::Value> = messages
        .iter()
        .map(|(key, category, object)| {
            serde_json::json!({
                "idempotency_key": key, "id": 1, "scope": "control", "shard_identifier": null,
                "category": category, "model": "organization", "object_identifier": object,
                "payload": null, "date_added": "2026-12-07 09:00:00.000",
            })
        })
        .collect();
    serde_json::Value::from(messages).to_string()
}

/// A message delivered again is taken once; a body that is not a delivery is refused whole,
/// with where it went wrong, and nothing is taken.
fn a_delivery_is_taken_once_and_a_bad_one_not_at_all(url: &str) {
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let receive = |body: &str| {
        let mut command = cascade(config.path());
        command.args(["inbox", "receive", "--source", "control", "--database-url", url]).write_stdin(body.to_owned());
        command.assert()
    };
    let first = delivery(&[("a/1/1", "organization_deleted", "1"), ("a/2/2", "organization_deleted", "2")]);
    receive(&first).success().stdout("received 2 tombstones from `control`: 2 new, 0 received before\n");
    let again = delivery(&[("a/2/2", "organization_deleted", "2"), ("a/3/3", "organization_deleted", "3")]);
    receive(&again).success().stdout("received 2 tombstones from `control`: 1 new, 1 received before\n");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_inbox"), 3);

    let broken = format!("{}, {{\"idempotency_key\": \"a/4/4\"}}]", first.trim_end_matches(']'));
    receive(&broken).code(2).stderr(predicates::str::contains(
        "cannot read the delivered messages: missing field `category` at line 1 column",
    ));
    let empty = delivery(&[("a/5/5", "organization_deleted", "5"), ("a/6/6", "organization_deleted", "")]);
    receive(&empty)
        .code(2)
        .stderr(predicates::str::contains("message 2 of the delivery has an empty `object_identifier`"));
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_inbox"), 3, "nothing of a refused delivery is taken");
}

on_each_database!(
    a_delivery_is_taken_once_and_a_bad_one_not_at_all_on_sqlite,
    a_delivery_is_taken_once_and_a_bad_one_not_at_all_on_postgres,
    a_delivery_is_taken_once_and_a_bad_one_not_at_all_on_mariadb,
    |databases| a_delivery_is_taken_once_and_a_bad_one_not_at_all(&databases.create(&receiver_ddl(false)))
);

/// A tombstone whose children cannot be deleted fails, is tried again on the next run, and is
/// parked after `max_attempts`; the others are applied meanwhile, and one of a category no
/// remote model reads waits. `inbox stats` shows each.
#[test]
fn a_failing_tombstone_is_parked_and_the_others_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let ddl = format!(
        "{}CREATE TABLE team (id INTEGER PRIMARY KEY, organization_id INTEGER NOT NULL);
         CREATE INDEX team_organization ON team (organization_id);
         CREATE TRIGGER keep_teams BEFORE DELETE ON team BEGIN SELECT RAISE(ABORT, 'teams are kept'); END;
         INSERT INTO member VALUES (1, 1), (2, 2);
         INSERT INTO team VALUES (1, 7);",
        receiver_ddl(false)
    );
    let url = sqlite_database(dir.path(), &ddl);
    let config = format!(
        "[settings]\nmax_attempts = 2\nretry_delay_seconds = 0\n{RECEIVER_CONFIG}\n[models.group]\nremote = {{ category = \"group_deleted\" }}\n\
         children = [{{ model = \"team\", column = \"organization_id\" }}]\n\n[models.team]\ntable = \"team\"\n"
    );
    let config = project(&[("cascades/cascade.toml", &config)]);
    let body = delivery(&[
        ("a/1/1", "organization_deleted", "1"),
        ("b/7/1", "group_deleted", "7"),
        ("c/9/1", "project_deleted", "9"),
    ]);
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]).write_stdin(body);
    receive.assert().success();

    let apply = || {
        let mut command = cascade(config.path());
        command.args(["inbox", "apply", "--format", "json", "--database-url", &url]);
        command
    };
    let first = apply().output().unwrap();
    assert_eq!(first.status.code(), Some(1), "a failed tombstone fails the run");
    let first: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!((first["applied"].as_u64(), first["failed"].as_u64()), (Some(1), Some(1)), "{first}");
    assert!(first["errors"][0].as_str().unwrap().contains("teams are kept"), "{first}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member"), 1, "organization 1's member is deleted");
    apply().assert().code(1);
    apply().assert().success();
    assert_eq!(count(&url, "SELECT COUNT(*) FROM team"), 1, "the refused row is kept");

    let stats =
        json_output(cascade(config.path()).args(["inbox", "stats", "--format", "json", "--database-url", &url]));
    let of = |category: &str| stats.as_array().unwrap().iter().find(|c| c["category"] == category).unwrap().clone();
    let counts = |c: serde_json::Value| {
        (c["remote_model"].clone(), c["pending"].clone(), c["applied"].clone(), c["parked"].clone())
    };
    assert_eq!(counts(of("organization_deleted")), ("organization".into(), 0.into(), 1.into(), 0.into()));
    assert_eq!(counts(of("group_deleted")), ("group".into(), 0.into(), 0.into(), 1.into()));
    assert_eq!(counts(of("project_deleted")), (serde_json::Value::Null, 1.into(), 0.into(), 0.into()));
    let parked =
        texts(&url, "SELECT last_error, CAST(attempts AS TEXT) FROM cascade_inbox WHERE parked_at IS NOT NULL");
    assert!(parked[0][0].as_deref().unwrap().contains("teams are kept"), "{parked:?}");
    assert_eq!(parked[0][1].as_deref(), Some("2"));
}

/// A tombstone whose worker stopped while applying it, on its last attempt, is parked by the
/// next worker (its claim lapsed) instead of being taken again and again.
#[test]
fn a_tombstone_whose_worker_kept_stopping_is_parked() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{}INSERT INTO member VALUES (1, 1);", receiver_ddl(false)));
    let config = project(&[("cascades/cascade.toml", &format!("[settings]\nmax_attempts = 3\n{RECEIVER_CONFIG}"))]);
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
    receive.write_stdin(delivery(&[("a/1/1", "organization_deleted", "1")])).assert().success();
    // As a worker killed on its third attempt leaves it: claimed, its claim lapsed.
    texts(
        &url,
        "UPDATE cascade_inbox SET attempts = 3, claim_token = 'gone', claim_expires_at = '2000-01-01 00:00:00'",
    );
    let mut apply = cascade(config.path());
    apply.args(["inbox", "apply", "--database-url", &url]);
    apply
        .assert()
        .code(1)
        .stdout(predicates::str::contains("1 parked: their worker stopped while applying them, on every attempt"));
    let parked = texts(&url, "SELECT last_error FROM cascade_inbox WHERE parked_at IS NOT NULL");
    assert_eq!(parked, [[Some("its worker stopped while applying it, on every attempt".to_owned())]]);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member"), 1, "a parked tombstone deletes nothing");
}

/// `inbox serve` takes a delivery only with the bearer token, answers 200 once it is committed
/// (a redelivered message taken once), refuses a bad body whole, says where deliveries go, and
/// stops on SIGTERM with what it took; without a token it does not start.
#[test]
fn the_inbox_server_takes_only_authorized_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &receiver_ddl(false));
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    cascade(config.path())
        .args(["inbox", "serve", "--addr", "127.0.0.1:0", "--database-url", &url])
        .env_remove("CASCADE_INBOX_TOKEN")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("set CASCADE_INBOX_TOKEN to the token senders send"));

    let (mut server, inbox) = start_server(config.path(), &url);
    let base = inbox.trim_end_matches("/inbox").to_owned();
    let client = reqwest::Client::new();
    let send = |path: &str, authorization: Option<&str>, body: String| {
        let mut request = client.post(format!("{base}{path}")).body(body);
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        common::block_on(async {
            let response = request.send().await.expect("the server answers");
            let status = response.status().as_u16();
            let challenge = response.headers().get("www-authenticate").map(|value| value.to_str().unwrap().to_owned());
            (status, challenge, response.text().await.unwrap())
        })
    };
    let health = common::block_on(async { client.get(format!("{base}/health")).send().await.unwrap().status() });
    assert_eq!(health.as_u16(), 200);

    let first = delivery(&[("a/1/1", "organization_deleted", "1"), ("a/2/2", "organization_deleted", "2")]);
    let bearer = format!("Bearer {TOKEN}");
    for authorization in [None, Some("Bearer wrong-token"), Some(TOKEN), Some(&format!("Basic {TOKEN}"))] {
        let (status, challenge, _) = send("/inbox/control", authorization, first.clone());
        assert_eq!((status, challenge.as_deref()), (401, Some("Bearer")), "{authorization:?}");
    }
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_inbox"), 0, "nothing is taken without the token");

    let (status, _, body) = send("/inbox/control", Some(&bearer), first.clone());
    assert_eq!((status, body.as_str()), (200, r#"{"messages":2,"new":2}"#));
    let again = delivery(&[("a/2/2", "organization_deleted", "2"), ("a/3/3", "organization_deleted", "3")]);
    let (status, _, body) = send("/inbox/control", Some(&bearer), again);
    assert_eq!((status, body.as_str()), (200, r#"{"messages":2,"new":1}"#));
    let (status, _, body) = send("/inbox/cell-2", Some(&bearer), first.clone());
    assert_eq!((status, body.as_str()), (200, r#"{"messages":2,"new":2}"#), "another source's keys are its own");
    let sources =
        texts(&url, "SELECT source, CAST(COUNT(*) AS TEXT) FROM cascade_inbox GROUP BY source ORDER BY source");
    let sources: Vec<Vec<String>> =
        sources.into_iter().map(|row| row.into_iter().map(Option::unwrap).collect()).collect();
    assert_eq!(sources, [["cell-2", "2"], ["control", "3"]]);

    let broken = format!("{}, {{\"idempotency_key\": \"a/4/4\"}}]", first.trim_end_matches(']'));
    let (status, _, body) = send("/inbox/control", Some(&bearer), broken);
    assert_eq!(status, 400);
    assert!(body.contains("missing field `category`"), "{body}");
    let (status, _, body) = send("/inbox", Some(&bearer), first.clone());
    assert_eq!(status, 404);
    assert!(body.contains("POST to /inbox/SOURCE, or start the server with --source"), "{body}");
    let (status, _, _) = send("/elsewhere", Some(&bearer), first);
    assert_eq!(status, 404);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_inbox"), 5, "refused deliveries take nothing");

    server.terminate();
    let finished = server.finish();
    assert!(finished.status.success(), "{}", finished.stderr);
    assert_eq!(finished.stdout.lines().last(), Some("took 3 deliveries (5 new of 6 tombstones)"));
    assert!(!finished.stderr.contains(TOKEN) && !finished.stdout.contains(TOKEN), "the token is never printed");
}

/// A child row written after its parent's tombstone was applied is deleted (or nullified) by the
/// next run's sweep while the tombstone is kept; past `inbox_retention` the tombstone is removed
/// and its key no longer looked for.
fn sweeps_late_children(databases: &Databases) {
    let url = databases.create(&format!("{}INSERT INTO member VALUES (1, 1), (2, 2);", receiver_ddl(false)));
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
    receive.write_stdin(delivery(&[("a/1/1", "organization_deleted", "1")])).assert().success();
    let apply = || {
        let mut command = cascade(config.path());
        command.args(["inbox", "apply", "--format", "json", "--database-url", &url]);
        json_output(&mut command)
    };
    let first = apply();
    assert_eq!((first["applied"].as_u64(), first["late_rows"].as_u64()), (Some(1), Some(0)), "{first}");
    let members = || texts(&url, "SELECT CAST(id AS TEXT) FROM member ORDER BY member.id");
    assert_eq!(members(), [[Some("2".to_owned())]]);

    // Written by the application after organization 1's tombstone was applied.
    texts(&url, "INSERT INTO member VALUES (10, 1), (11, 2)");
    texts(&url, "INSERT INTO member_note VALUES (1, 10)");
    texts(&url, "INSERT INTO invite VALUES (1, 1), (2, 2)");
    // `orphans` reports them before the sweep runs, and leaves them to it.
    let orphans = |args: &[&str]| {
        let mut command = cascade(config.path());
        command.args(["orphans", "--format", "json", "--database-url", &url]).args(args);
        json_output(&mut command)
    };
    let report = orphans(&["--sample", "5", "--model", "organization"]);
    let late: Vec<(String, String, u64, serde_json::Value)> = report["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|relation| {
            let name = |field: &str| relation[field].as_str().unwrap_or_default().to_owned();
            (name("child"), name("remote_category"), relation["orphans"].as_u64().unwrap(), relation["sample"].clone())
        })
        .collect();
    let category = "organization_deleted".to_owned();
    assert_eq!(
        late,
        [
            ("member".to_owned(), category.clone(), 1, serde_json::json!(["10"])),
            ("invite".to_owned(), category, 1, serde_json::json!(["1"])),
        ],
        "{report}"
    );
    assert_eq!(report["total"].as_u64(), Some(2), "{report}");
    let dry_run = orphans(&["--delete", "--model", "organization"]);
    let left: Vec<(&str, u64)> = dry_run["delete"]["left_alone"]
        .as_array()
        .unwrap()
        .iter()
        .map(|left| (left["child"].as_str().unwrap(), left["orphans"].as_u64().unwrap()))
        .collect();
    assert_eq!(left, [("member", 1), ("invite", 1)], "{dry_run}");
    assert!(dry_run["delete"]["left_alone"][0]["reason"].as_str().unwrap().contains("sweep"), "{dry_run}");
    let mut human = cascade(config.path());
    human.args(["orphans", "--database-url", &url, "--model", "organization"]);
    let output = human.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && text.contains("organization") && text.contains("total: 2 orphans"), "{text}");
    let second = apply();
    assert_eq!((second["applied"].as_u64(), second["late_rows"].as_u64()), (Some(0), Some(3)), "{second}");
    assert_eq!(second["deleted"], serde_json::json!({ "member": 1, "member_note": 1 }), "{second}");
    assert_eq!(members(), [[Some("2".to_owned())], [Some("11".to_owned())]]);
    let invites = texts(&url, "SELECT CAST(id AS TEXT), CAST(organization_id AS TEXT) FROM invite ORDER BY invite.id");
    assert_eq!(invites, [[Some("1".to_owned()), None], [Some("2".to_owned()), Some("2".to_owned())]]);
    let third = apply();
    assert_eq!((third["late_rows"].as_u64(), third["purged"].as_u64()), (Some(0), Some(0)), "a sweep finds each once");
    assert_eq!(orphans(&[])["total"].as_u64(), Some(0), "no orphan left");

    // Applied long ago: past the default retention of seven days.
    texts(&url, "UPDATE cascade_inbox SET applied_at = '2000-01-01 00:00:00'");
    texts(&url, "INSERT INTO member VALUES (12, 1)");
    let mut command = cascade(config.path());
    command.args(["inbox", "apply", "--database-url", &url]);
    command
        .assert()
        .success()
        .stdout(predicates::str::contains("1 applied tombstone past the retention window removed"));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_inbox"), 0);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member WHERE id = 12"), 1, "no key is looked for after the window");
}

/// A tombstone that cannot be applied (a key PostgreSQL cannot compare with an integer column)
/// fails alone: its claim is applied in halves until it is by itself, and the others are applied.
#[test]
fn one_bad_tombstone_fails_alone() {
    let Some(databases) = Databases::postgres() else { return };
    let members: Vec<String> = (1..=6).map(|id| format!("({id}, {id})")).collect();
    let url = databases.create(&format!("{}INSERT INTO member VALUES {};", receiver_ddl(false), members.join(", ")));
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let keys = ["1", "2", "not a number", "4", "5", "6"];
    let names: Vec<String> = (1..=keys.len()).map(|n| format!("a/{n}/{n}")).collect();
    let messages: Vec<(&str, &str, &str)> =
        names.iter().zip(keys).map(|(name, key)| (name.as_str(), "organization_deleted", key)).collect();
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
    receive.write_stdin(delivery(&messages)).assert().success();
    let output =
        cascade(config.path()).args(["inbox", "apply", "--format", "json", "--database-url", &url]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((report["applied"].as_u64(), report["failed"].as_u64()), (Some(5), Some(1)), "{report}");
    let errors = report["errors"].to_string();
    assert!(errors.contains("key `not a number`"), "{report}");
    assert_eq!(texts(&url, "SELECT CAST(id AS TEXT) FROM member"), [[Some("3".to_owned())]]);
    let failed = "SELECT object_key, CAST(attempts AS TEXT) FROM cascade_inbox WHERE applied_at IS NULL";
    assert_eq!(texts(&url, failed), [[Some("not a number".to_owned()), Some("1".to_owned())]]);
}

on_each_database!(
    late_children_are_swept_on_sqlite,
    late_children_are_swept_on_postgres,
    late_children_are_swept_on_mariadb,
    |databases| { sweeps_late_children(&databases) }
);

/// An application that spends its budget stops between batches: the tombstones whose children
/// are all gone are applied, the others released without an attempt counted and taken again,
/// at once by `inbox apply` while runs make progress.
#[test]
fn a_run_that_spends_its_budget_applies_what_it_finished_and_defers_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ddl = format!(
        "{}INSERT INTO member VALUES (1, 1), (2, 1), (3, 1), (4, 2), (5, 3);
         INSERT INTO invite VALUES (1, 1), (2, 1), (3, 3);",
        receiver_ddl(false)
    );
    let url = sqlite_database(dir.path(), &ddl);
    // One attempt each: a deferral that counted as one would park organization 1.
    let settings = "[settings]\nmax_attempts = 1\ninbox_budget_rows = 1\n";
    let config = project(&[("cascades/cascade.toml", &format!("{settings}{RECEIVER_CONFIG}"))]);
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
    let body = delivery(&[("a/1/1", "organization_deleted", "1"), ("a/2/2", "organization_deleted", "2")]);
    receive.write_stdin(body).assert().success();

    // The members' batch spends the first run's budget: organization 2 has nothing else and is
    // applied, organization 1 still has invitations and is deferred; the next run nullifies them.
    let mut apply = cascade(config.path());
    apply.args(["inbox", "apply", "--format", "json", "--database-url", &url]);
    let report = json_output(&mut apply);
    assert_eq!((report["applied"].as_u64(), report["deferred"].as_u64()), (Some(2), Some(1)), "{report}");
    assert_eq!(report["deleted"], serde_json::json!({ "member_note": 0, "member": 4 }), "{report}");
    assert_eq!(report["nullified"], serde_json::json!({ "invite": 2 }), "{report}");
    let state = "SELECT object_key || ':' || CAST(attempts AS TEXT) || ':' || \
                 CASE WHEN applied_at IS NULL THEN 'pending' ELSE 'applied' END FROM cascade_inbox ORDER BY cascade_inbox.id";
    let states: Vec<String> = texts(&url, state).into_iter().map(|row| row[0].clone().unwrap()).collect();
    assert_eq!(states, ["1:1:applied", "2:1:applied"], "the deferral gave its attempt back");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member"), 1, "organization 3's member is kept");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM invite WHERE organization_id = 3"), 1, "another's kept");
}

/// The sweep reads every kept tombstone, however many pages they take (ids past 999 included).
#[test]
fn the_sweep_reads_every_kept_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &receiver_ddl(false));
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let organizations = 1_200;
    let keys: Vec<(String, String)> = (1..=organizations).map(|id| (format!("a/{id}"), id.to_string())).collect();
    let messages: Vec<(&str, &str, &str)> =
        keys.iter().map(|(key, id)| (key.as_str(), "organization_deleted", id.as_str())).collect();
    let mut receive = cascade(config.path());
    receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
    receive.write_stdin(delivery(&messages)).assert().success();
    let apply = || {
        let mut command = cascade(config.path());
        command.args(["inbox", "apply", "--format", "json", "--database-url", &url]);
        json_output(&mut command)
    };
    assert_eq!(apply()["applied"].as_u64(), Some(organizations));
    // A member of every organization, written after its tombstone was applied.
    let members: Vec<String> = (1..=organizations).map(|id| format!("({id}, {id})")).collect();
    texts(&url, &format!("INSERT INTO member VALUES {}", members.join(", ")));
    let swept = apply();
    assert_eq!(swept["late_rows"].as_u64(), Some(organizations), "{swept}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member"), 0);
}

/// Settings that 0 would make meaningless are refused where they are written.
#[test]
fn settings_of_zero_that_would_never_finish_are_refused() {
    for key in ["max_attempts", "lease_seconds", "run_lease_seconds", "inbox_budget_rows"] {
        let config = project(&[("cascades/cascade.toml", &format!("[settings]\n{key} = 0\n{RECEIVER_CONFIG}"))]);
        cascade(config.path())
            .arg("validate")
            .assert()
            .code(1)
            .stdout(predicates::str::contains(format!("`{key}` must be at least 1")))
            .stdout(predicates::str::contains("cascade.toml:2:"));
    }
}

/// `validate --peer DIR` checks each remote model against the sender's config: the end-to-end
/// configs agree; a category never sent, sent from a scope without a sink, keyed by another
/// column or written by two models is an error at the remote model's line.
#[test]
fn validate_with_the_peer_checks_both_sides_agree() {
    let receiver = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let sender = project(&[("cascades/cascade.toml", &sender_config(&webhook_sink("http://control.internal/inbox")))]);
    let peer = sender.path().join("cascades");
    cascade(receiver.path()).args(["validate", "--peer"]).arg(&peer).assert().success();

    let receiver_config = format!(
        "{RECEIVER_CONFIG}
[models.project]
remote = {{ category = \"project_deleted\" }}
key = \"uuid\"
children = [{{ model = \"invite\", column = \"project_id\", on_delete = \"nullify\" }}]

[models.team]
remote = {{ category = \"team_gone\" }}
children = [{{ model = \"invite\", column = \"team_id\", on_delete = \"nullify\" }}]

[models.user]
remote = {{ category = \"user_deleted\" }}
children = [{{ model = \"member\", column = \"user_id\" }}]
"
    );
    let sender_config = r#"
[models.organization]
table = "organization"
outbox = "organization_deleted"

[models.project]
table = "project"
outbox = "project_deleted"

[models.team]
table = "team"
outbox = "team_deleted"

[models.user]
table = "user"
outbox = "user_deleted"

[models.account]
table = "account"
outbox = "user_deleted"

[outbox.scopes.control]
shard_key = "id"
categories = ["organization_deleted", "team_deleted", "user_deleted"]

[outbox.scopes.projects]
shard_key = "id"
categories = ["project_deleted"]
sink = "hook"

[outbox.sinks.hook]
url = "http://control.internal/inbox/sender"
"#;
    let receiver = project(&[("cascades/cascade.toml", &receiver_config)]);
    let sender = project(&[("cascades/cascade.toml", sender_config)]);
    let mut validate = cascade(receiver.path());
    validate.args(["validate", "--format", "json", "--peer"]).arg(sender.path().join("cascades"));
    let output = validate.assert().code(1).get_output().stdout.clone();
    let report: serde_json::Value = serde_json::from_slice(&output).unwrap();
    let found: Vec<(String, u64, String)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let codes: Vec<(&str, u64)> = found.iter().map(|(code, line, _)| (code.as_str(), *line)).collect();
    assert_eq!(
        codes,
        [
            ("peer-category-unsent", 3),
            ("peer-category-mismatch", 22),
            ("peer-category-unsent", 26),
            ("peer-category-unsent", 30),
            ("peer-category-mismatch", 30),
        ],
        "{found:#?}"
    );
    assert!(found[0].2.contains("scope `control` has no sink for category `organization_deleted`"), "{found:#?}");
    assert!(found[1].2.contains("reads its keys as `uuid`, but the peer's `project` sends `id`"), "{found:#?}");
    assert!(found[2].2.contains("writes category `team_gone`"), "{found:#?}");
    assert!(found[3].2.contains("scope `control` has no sink for category `user_deleted`"), "{found:#?}");
    assert!(found[4].2.contains("from models `user` and `account`"), "{found:#?}");

    let broken = project(&[("cascades/cascade.toml", "[models.organization\n")]);
    let mut validate = cascade(receiver.path());
    validate.args(["validate", "--peer"]).arg(broken.path().join("cascades"));
    validate.assert().code(2).stderr(predicates::str::contains("has 1 error: run `cascade validate --config"));
}

/// `plan MODEL --inbox` counts what the pending tombstones would do, changing nothing; applying
/// them then does exactly that (seeded rows, on each database).
fn previews_what_applying_does(databases: &Databases) {
    for seed in 1..=3 {
        let mut random = Random::seeded(seed);
        let url = databases.create(&format!("{}{}", receiver_ddl(false), rows(&mut random, 10)));
        let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
        let deleted: Vec<String> = (1..=10).filter(|_| random.chance(50)).map(|id| id.to_string()).collect();
        let messages: Vec<(String, &str, &str)> =
            deleted.iter().map(|id| (format!("a/{id}"), "organization_deleted", id.as_str())).collect();
        let messages: Vec<(&str, &str, &str)> = messages.iter().map(|(k, c, o)| (k.as_str(), *c, *o)).collect();
        let mut receive = cascade(config.path());
        receive.args(["inbox", "receive", "--source", "control", "--database-url", &url]);
        receive.write_stdin(delivery(&messages)).assert().success();
        let before = common::user_rows(&url);

        let mut plan = cascade(config.path());
        plan.args(["plan", "organization", "--inbox", "--format", "json", "--database-url", &url]);
        let preview = json_output(&mut plan);
        assert_eq!(common::user_rows(&url), before, "seed {seed}: a preview changes nothing");
        assert_eq!(preview["pending"].as_u64(), Some(deleted.len() as u64), "seed {seed}: {preview}");
        let mut apply = cascade(config.path());
        apply.args(["inbox", "apply", "--format", "json", "--database-url", &url]);
        let applied = json_output(&mut apply);
        let total = |key: &str| {
            let mut total = serde_json::Map::new();
            for relation in preview["relations"].as_array().unwrap() {
                for (model, rows) in relation[key].as_object().unwrap() {
                    let sum =
                        total.get(model).and_then(serde_json::Value::as_u64).unwrap_or(0) + rows.as_u64().unwrap();
                    total.insert(model.clone(), sum.into());
                }
            }
            total.retain(|_, rows| rows.as_u64() != Some(0));
            serde_json::Value::Object(total)
        };
        let nonzero = |value: &serde_json::Value| {
            let mut map = value.as_object().unwrap().clone();
            map.retain(|_, rows| rows.as_u64() != Some(0));
            serde_json::Value::Object(map)
        };
        assert_eq!(total("deleted"), nonzero(&applied["deleted"]), "seed {seed}: {preview} {applied}");
        assert_eq!(total("nullified"), nonzero(&applied["nullified"]), "seed {seed}: {preview} {applied}");
    }
    // Not a remote model, or a format the preview has not.
    let config = project(&[("cascades/cascade.toml", RECEIVER_CONFIG)]);
    let url = databases.create(&receiver_ddl(false));
    let mut plan = cascade(config.path());
    plan.args(["plan", "member", "--inbox", "--database-url", &url]);
    plan.assert().code(2).stderr(predicates::str::contains("`member` is not a remote model"));
    let mut plan = cascade(config.path());
    plan.args(["plan", "organization", "--inbox", "--format", "mermaid", "--database-url", &url]);
    plan.assert().code(2).stderr(predicates::str::contains("--inbox shows text or json, not mermaid"));
    let mut plan = cascade(config.path());
    plan.args(["plan", "organization", "--inbox", "--database-url", &url]);
    plan.assert().success().stdout(predicates::str::starts_with(
        "remote model `organization` (category `organization_deleted`): 0 pending tombstones\n",
    ));
}

on_each_database!(
    the_inbox_preview_counts_what_applying_does_on_sqlite,
    the_inbox_preview_counts_what_applying_does_on_postgres,
    the_inbox_preview_counts_what_applying_does_on_mariadb,
    |databases| { previews_what_applying_does(&databases) }
);

/// The middle database of a chain: [`RECEIVER_CONFIG`] whose members write `member_deleted`
/// tombstones, delivered by a command sink to the last database's `inbox receive`.
fn middle_config(last_dir: &Path, last_url: &str) -> String {
    let receiver = RECEIVER_CONFIG.replace(
        "[models.member]\ntable = \"member\"",
        "[models.member]\ntable = \"member\"\noutbox = \"member_deleted\"",
    );
    format!(
        "{receiver}
[outbox.scopes.members]
shard_key = \"organization_id\"
categories = [\"member_deleted\"]
sink = \"last\"

[outbox.sinks.last]
command = [\"{bin}\", \"inbox\", \"receive\", \"--source\", \"middle\", \"--config\", \"{config}\", \"--database-url\", \"{last_url}\"]
",
        bin = env!("CARGO_BIN_EXE_cascade"),
        config = last_dir.join("cascades").display(),
    )
}

/// The last database of a chain: badges of members, which live in the middle database.
const LAST_CONFIG: &str = r#"
[models.member]
remote = { category = "member_deleted" }
children = [{ model = "member_badge", column = "member_id" }]

[models.member_badge]
table = "member_badge"
"#;

/// A → B → C: organizations deleted in A delete B's members (and their notes, and nullify
/// invitations), whose own tombstones delete C's badges of those members; the three databases
/// end as one database with the same foreign keys would.
fn chain(first: &Databases, rest: impl Fn(&str) -> String) {
    for seed in 1..=2 {
        let mut random = Random::seeded(seed);
        let organizations = 8;
        let data = rows(&mut random, organizations);
        let members = data.lines().filter(|line| line.starts_with("INSERT INTO member VALUES")).count() as u64;
        let badges: String = (1..=members)
            .filter(|_| random.chance(70))
            .map(|m| format!("INSERT INTO member_badge VALUES ({m}, {m});\n"))
            .collect();
        let badge_ddl = |references: &str| {
            format!(
                "CREATE TABLE member_badge (id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL{references});
                     CREATE INDEX member_badge_member ON member_badge (member_id);\n"
            )
        };
        let organization_rows: Vec<String> = (1..=organizations).map(|id| format!("({id})")).collect();
        let organizations_sql = format!(
            "CREATE TABLE organization (id INTEGER PRIMARY KEY);\nINSERT INTO organization VALUES {};\n",
            organization_rows.join(", ")
        );
        let last = rest(&format!("{}{badges}", badge_ddl("")));
        let middle = rest(&format!("{}{data}", receiver_ddl(false)));
        let oracle = rest(&format!(
            "{organizations_sql}{}{}{data}{badges}",
            receiver_ddl(true),
            badge_ddl(" REFERENCES member (id) ON DELETE CASCADE")
        ));
        let first_url = first.create(&organizations_sql);
        let last_before = common::user_rows(&last);

        let last_dir = project(&[("cascades/cascade.toml", LAST_CONFIG)]);
        let middle_dir = project(&[("cascades/cascade.toml", &middle_config(last_dir.path(), &last))]);
        let first_dir =
            project(&[("cascades/cascade.toml", &sender_config(&command_sink(middle_dir.path(), &middle)))]);
        for (dir, peer) in [(&middle_dir, &first_dir), (&last_dir, &middle_dir)] {
            cascade(dir.path()).args(["validate", "--peer"]).arg(peer.path().join("cascades")).assert().success();
        }
        let deleted: Vec<String> = (1..=organizations).filter(|_| random.chance(50)).map(|id| id.to_string()).collect();
        let deleted = if deleted.is_empty() { vec!["2".to_owned()] } else { deleted };
        let mut delete = cascade(first_dir.path());
        delete.args(["delete", "organization"]).args(&deleted).args(["--confirm", "--database-url", &first_url]);
        delete.assert().success();
        cascade(first_dir.path()).args(["outbox", "drain", "--once", "--database-url", &first_url]).assert().success();
        // The middle applies, then delivers its own tombstones; the last applies those.
        cascade(middle_dir.path()).args(["worker", "--once", "--drain", "--database-url", &middle]).assert().success();
        cascade(last_dir.path()).args(["worker", "--once", "--database-url", &last]).assert().success();

        texts(&oracle, &format!("DELETE FROM organization WHERE id IN ({})", deleted.join(", ")));
        let expected = common::user_rows(&oracle);
        let mut got = common::user_rows(&middle);
        got.extend(common::user_rows(&last));
        let mut expected_without_organizations = expected.clone();
        expected_without_organizations.remove("organization");
        assert_eq!(got, expected_without_organizations, "seed {seed}: deleted {deleted:?}");
        assert!(
            count(&last, "SELECT COUNT(*) FROM cascade_inbox WHERE applied_at IS NOT NULL") > 0,
            "seed {seed}: the chain reached C"
        );
        assert_ne!(common::user_rows(&last), last_before, "seed {seed}: badges in C are deleted");
    }
}

on_each_database!(
    a_chain_of_three_databases_deletes_what_one_would_from_sqlite,
    a_chain_of_three_databases_deletes_what_one_would_from_postgres,
    |databases| {
        let Some(server) = common::databases::postgres_server() else { return };
        chain(&databases, |ddl| common::databases::postgres_database_on(&server, ddl));
    }
);

#[test]
fn a_chain_of_three_databases_deletes_what_one_would_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    chain(&databases, |ddl| databases.create(ddl));
}
