//! `cascade partitions` on MariaDB's `RANGE` partitions: seeded random tables partitioned by
//! month (`RANGE COLUMNS` on a `datetime`, `RANGE` over `TO_DAYS` of a `date` and over
//! `UNIX_TIMESTAMP` of a `timestamp`, with or without a `MAXVALUE` partition), each pruned at a
//! random time and checked against a model computed here: exactly the partitions wholly older
//! than the cut-off go, every row of theirs archived once, the rows that referenced them through
//! a nullify relation set to NULL, and `create --ahead` adds the months after (splitting the
//! `MAXVALUE` partition or adding after the last). A prune killed between the swap and the drop
//! is finished by the next one; a table partitioned by a function that does not keep the order
//! of times is refused.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use common::databases::Databases;
use common::random::Random;
use common::running::Running;
use common::{archive_lines, cascade, count, dump, json_output, project, texts};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[models.page_view]
table = "page_view"
retention = { keep = "90d", column = "entered_at" }
children = [{ model = "click", column = "page_view_id", on_delete = "nullify" }]

[models.click]
table = "click"
strategy = "bulk"
"#;

/// How the random table is partitioned.
#[derive(Debug, Clone, Copy)]
enum Scheme {
    /// `RANGE COLUMNS (entered_at)` on a `datetime`.
    Columns,
    /// `RANGE (TO_DAYS(entered_at))` on a `date`.
    ToDays,
    /// `RANGE (UNIX_TIMESTAMP(entered_at))` on a `timestamp`.
    UnixTimestamp,
}

impl Scheme {
    fn column_type(self) -> &'static str {
        match self {
            Scheme::Columns => "datetime",
            Scheme::ToDays => "date",
            Scheme::UnixTimestamp => "timestamp",
        }
    }

    fn partition_by(self) -> &'static str {
        match self {
            Scheme::Columns => "RANGE COLUMNS (entered_at)",
            Scheme::ToDays => "RANGE (TO_DAYS(entered_at))",
            Scheme::UnixTimestamp => "RANGE (UNIX_TIMESTAMP(entered_at))",
        }
    }

    /// The `LESS THAN` value of the month starting at `date` (`YYYY-MM-DD`).
    fn bound(self, date: &str) -> String {
        match self {
            Scheme::Columns => format!("'{date}'"),
            Scheme::ToDays => format!("TO_DAYS('{date}')"),
            Scheme::UnixTimestamp => format!("UNIX_TIMESTAMP('{date}')"),
        }
    }

    /// A row's value on `day` of the month starting at `date`.
    fn value(self, date: &str, day: u64, hour: u64) -> String {
        let day = format!("{}-{day:02}", &date[..7]);
        match self {
            Scheme::ToDays => format!("'{day}'"),
            Scheme::Columns | Scheme::UnixTimestamp => format!("'{day} {hour:02}:30:00'"),
        }
    }
}

/// The month `index` months after January 2024: `(YYYY-MM-01, seconds since 1970 at its start, UTC)`.
fn month(index: u64) -> (String, u64) {
    let (year, month) = (2024 + index / 12, index % 12 + 1);
    (format!("{year}-{month:02}-01"), days_from_civil(year, month) * 86_400)
}

/// Days from 1970-01-01 to the first of `month` of `year` (Howard Hinnant's algorithm).
fn days_from_civil(year: u64, month: u64) -> u64 {
    let (year, month) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let day_of_year = (153 * month + 2) / 5;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A random month-partitioned `page_view` and its `click`s, with what the model expects.
struct Generated {
    ddl: String,
    scheme: Scheme,
    /// Partition name, the month index it starts at, and the page views in it.
    partitions: Vec<(String, u64, Vec<u64>)>,
    /// Page views after the last month, in the `MAXVALUE` partition.
    beyond: Vec<u64>,
    /// Click id → page view id.
    clicks: Vec<(u64, u64)>,
    /// The first month after the bounded ones.
    end: u64,
    has_max: bool,
}

fn generate(seed: u64) -> Generated {
    let mut random = Random::seeded(seed);
    let scheme = [Scheme::Columns, Scheme::ToDays, Scheme::UnixTimestamp][random.below(3) as usize];
    let start = random.below(12);
    let months = 3 + random.below(8);
    let has_max = random.chance(60);
    let (mut partitions, mut rows, mut next_id) = (Vec::new(), Vec::new(), 1);
    let mut definitions = Vec::new();
    for index in start..start + months {
        let (date, _) = month(index);
        let (until, _) = month(index + 1);
        let name = format!("p{}", date.replace('-', ""));
        definitions.push(format!("PARTITION {name} VALUES LESS THAN ({})", scheme.bound(&until)));
        let mut ids = Vec::new();
        for _ in 0..random.below(6) {
            rows.push(format!("({next_id}, {}, '/p')", scheme.value(&date, 1 + random.below(28), random.below(24))));
            ids.push(next_id);
            next_id += 1;
        }
        partitions.push((name, index, ids));
    }
    let end = start + months;
    let mut beyond = Vec::new();
    if has_max {
        definitions.push("PARTITION pmax VALUES LESS THAN (MAXVALUE)".to_owned());
        for _ in 0..1 + random.below(3) {
            let (date, _) = month(end + random.below(4));
            rows.push(format!("({next_id}, {}, '/later')", scheme.value(&date, 1 + random.below(28), 12)));
            beyond.push(next_id);
            next_id += 1;
        }
    }
    let clicks: Vec<(u64, u64)> =
        (1..next_id).filter(|_| random.chance(40)).enumerate().map(|(n, page)| (n as u64 + 1, page)).collect();
    let mut ddl = format!(
        "CREATE TABLE page_view (id bigint NOT NULL, entered_at {} NOT NULL, path varchar(20), \
         PRIMARY KEY (id, entered_at)) PARTITION BY {} ({});\n",
        scheme.column_type(),
        scheme.partition_by(),
        definitions.join(", ")
    );
    ddl += "CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint);\n";
    if !rows.is_empty() {
        ddl += &format!("INSERT INTO page_view VALUES {};\n", rows.join(", "));
    }
    if !clicks.is_empty() {
        let values: Vec<String> = clicks.iter().map(|(id, page)| format!("({id}, {page})")).collect();
        ddl += &format!("INSERT INTO click VALUES {};\n", values.join(", "));
    }
    Generated { ddl, scheme, partitions, beyond, clicks, end, has_max }
}

/// `--now` as RFC 3339, and the cut-off (90 days before) in seconds since 1970.
fn now_at(seconds: u64) -> (String, u64) {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
    (humantime::format_rfc3339_seconds(now).to_string(), seconds - 90 * 86_400)
}

fn partition_names(url: &str) -> Vec<String> {
    texts(
        url,
        "SELECT partition_name FROM information_schema.partitions WHERE table_schema = DATABASE() \
         AND table_name = 'page_view' ORDER BY partition_ordinal_position",
    )
    .into_iter()
    .map(|row| row[0].clone().unwrap())
    .collect()
}

fn ids(url: &str, sql: &str) -> Vec<u64> {
    texts(url, sql).into_iter().map(|row| row[0].as_deref().unwrap().parse().unwrap()).collect()
}

fn args<'a>(url: &'a str, now: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--database-url", url, "partitions"];
    args.extend_from_slice(rest);
    args.extend(["--now", now]);
    args
}

/// One random table: the listing and the dry run, the prune against the model, then create.
/// What one seed did: (its scheme, whether it had a `MAXVALUE` partition, partitions dropped,
/// partitions created).
fn check_seed(databases: &Databases, seed: u64) -> (&'static str, bool, usize, usize) {
    let generated = generate(seed);
    let url = databases.create(&generated.ddl);
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let first = generated.partitions[0].1;
    // Some time from the second month to five months after the last bounded one, at any second.
    let mut random = Random::seeded(seed * 1_000);
    let span = (generated.end + 5 - first - 1) * 30 * 86_400;
    let (now, cutoff) = now_at(month(first + 1).1 + random.below(span));
    let context = format!("seed {seed} ({:?}, max {}), now {now}", generated.scheme, generated.has_max);
    let mut dropped: Vec<&(String, u64, Vec<u64>)> =
        generated.partitions.iter().filter(|(_, index, _)| month(index + 1).1 <= cutoff).collect();
    if !generated.has_max && dropped.len() == generated.partitions.len() {
        // MariaDB keeps a table's last partition.
        dropped.pop();
    }
    let gone: BTreeSet<u64> = dropped.iter().flat_map(|(_, _, ids)| ids.iter().copied()).collect();

    let listed = json_output(cascade(config.path()).args(args(&url, &now, &["--format", "json"])));
    let marked: Vec<String> = listed["models"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|partition| partition["drop"] == true)
        .map(|partition| partition["name"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = dropped.iter().map(|(name, _, _)| name.clone()).collect();
    assert_eq!(marked, expected, "{context}: {listed:#}");
    let before = dump(&url);
    cascade(config.path()).args(args(&url, &now, &["prune"])).assert().success();
    assert_eq!(dump(&url), before, "{context}: a dry run changes nothing");

    let archive = config.path().join("archive");
    let pruned = json_output(cascade(config.path()).args(args(
        &url,
        &now,
        &["prune", "--confirm", "--archive", archive.to_str().unwrap(), "--format", "json"],
    )));
    let names: Vec<&str> =
        pruned["dropped"].as_array().unwrap().iter().map(|d| d["partition"].as_str().unwrap()).collect();
    let qualified: Vec<String> = expected.iter().map(|name| format!("page_view.{name}")).collect();
    assert_eq!(names, qualified, "{context}");
    let kept: Vec<String> = generated
        .partitions
        .iter()
        .map(|(name, _, _)| name.clone())
        .filter(|name| !expected.contains(name))
        .chain(generated.has_max.then(|| "pmax".to_owned()))
        .collect();
    assert_eq!(partition_names(&url), kept, "{context}");
    let all: BTreeSet<u64> = generated
        .partitions
        .iter()
        .flat_map(|(_, _, ids)| ids.iter().copied())
        .chain(generated.beyond.clone())
        .collect();
    let left: BTreeSet<u64> = ids(&url, "SELECT CAST(id AS TEXT) FROM page_view").into_iter().collect();
    assert_eq!(left, all.difference(&gone).copied().collect(), "{context}");
    if !gone.is_empty() {
        let lines = archive_lines(&archive, &[]);
        let archived: Vec<u64> = lines["page_view"].iter().map(|line| line["row"]["id"].as_u64().unwrap()).collect();
        assert_eq!(archived.len(), gone.len(), "{context}: each row once");
        assert_eq!(archived.into_iter().collect::<BTreeSet<u64>>(), gone, "{context}");
    }
    let clicks = texts(&url, "SELECT CAST(id AS TEXT), CAST(page_view_id AS TEXT) FROM click ORDER BY id");
    let expected_clicks: Vec<Vec<Option<String>>> = generated
        .clicks
        .iter()
        .map(|(id, page)| vec![Some(id.to_string()), (!gone.contains(page)).then(|| page.to_string())])
        .collect();
    assert_eq!(clicks, expected_clicks, "{context}: the clicks of dropped page views are set to NULL");
    assert_eq!(
        count(&url, "SELECT COUNT(*) FROM cascade_run WHERE outcome = 'succeeded'"),
        expected.len() as u64,
        "{context}"
    );
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0, "{context}");
    assert_eq!(
        count(
            &url,
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'cascade_detached%'"
        ),
        0,
        "{context}: the swap tables are dropped"
    );
    let again = json_output(cascade(config.path()).args(args(&url, &now, &["prune", "--confirm", "--format", "json"])));
    assert_eq!(again["dropped"], json!([]), "{context}");

    let created = check_create(&url, &config, &generated, expected.len(), &now, &context);
    (generated.scheme.partition_by(), generated.has_max, expected.len(), created)
}

/// `create --ahead 2` at `now`: monthly partitions from the end of the last bounded one until
/// two start after now, each one holding its month's rows; the rows of `MAXVALUE` stay. The step
/// is the width of a partition with both bounds: the oldest one left has no lower bound, so
/// nothing is created with one bounded partition left (`dropped` were dropped).
fn check_create(
    url: &str,
    config: &tempfile::TempDir,
    generated: &Generated,
    dropped: usize,
    now: &str,
    context: &str,
) -> usize {
    let now_seconds = humantime::parse_rfc3339(now).unwrap().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let bounded: Vec<u64> = generated.partitions.iter().skip(dropped).map(|(_, index, _)| *index).collect();
    let starting_after = bounded.iter().filter(|index| month(**index).1 > now_seconds).count();
    let mut expected = Vec::new();
    let mut next = generated.end;
    let mut ahead = if bounded.len() < 2 { 2 } else { starting_after };
    while ahead < 2 {
        if month(next).1 > now_seconds {
            ahead += 1;
        }
        expected.push(format!("page_view.p{}", month(next).0.replace('-', "")));
        next += 1;
    }
    let created =
        json_output(cascade(config.path()).args(args(url, now, &["create", "--ahead", "2", "--format", "json"])));
    let names: Vec<&str> =
        created["created"].as_array().unwrap().iter().map(|c| c["partition"].as_str().unwrap()).collect();
    assert_eq!(names, expected, "{context}: {created:#}");
    let beyond = ids(url, "SELECT CAST(id AS TEXT) FROM page_view WHERE path = '/later'").len();
    assert_eq!(beyond, generated.beyond.len(), "{context}: the rows of MAXVALUE stay");
    for (offset, name) in expected.iter().enumerate() {
        // A row in the middle of the month goes to its partition.
        let (date, _) = month(generated.end + offset as u64);
        let value = generated.scheme.value(&date, 15, 12);
        texts(url, &format!("INSERT INTO page_view VALUES ({}, {value}, '/new')", 100_000 + offset));
        let partition = name.trim_start_matches("page_view.");
        let there = count(url, &format!("SELECT COUNT(*) FROM page_view PARTITION ({partition}) WHERE path = '/new'"));
        assert_eq!(there, 1, "{context}: {name}");
        texts(url, "DELETE FROM page_view WHERE path = '/new'");
    }
    let again =
        json_output(cascade(config.path()).args(args(url, now, &["create", "--ahead", "2", "--format", "json"])));
    assert_eq!(again["created"], json!([]), "{context}");
    expected.len()
}

#[test]
fn mariadb_random_partitioned_tables_are_pruned_and_extended_as_the_model_says() {
    let Some(databases) = Databases::mysql() else { return };
    let seeds: Vec<_> = (1..=12).map(|seed| check_seed(&databases, seed)).collect();
    // The seeds cover every scheme, drops, and both ways of creating.
    let schemes: BTreeSet<&str> = seeds.iter().map(|(scheme, ..)| *scheme).collect();
    assert_eq!(schemes.len(), 3, "{seeds:?}");
    assert!(seeds.iter().any(|(_, _, dropped, _)| *dropped > 1), "{seeds:?}");
    assert!(seeds.iter().any(|(_, max, _, created)| *max && *created > 0), "{seeds:?}");
    assert!(seeds.iter().any(|(_, max, _, created)| !*max && *created > 0), "{seeds:?}");
}

/// Twelve months from January 2025, by `RANGE COLUMNS`, with a `MAXVALUE` partition.
const KILLED: &str = "
CREATE TABLE page_view (id bigint NOT NULL, entered_at datetime NOT NULL, path varchar(20), PRIMARY KEY (id, entered_at))
  PARTITION BY RANGE COLUMNS (entered_at) (
    PARTITION p202501 VALUES LESS THAN ('2025-02-01'), PARTITION p202502 VALUES LESS THAN ('2025-03-01'),
    PARTITION p202503 VALUES LESS THAN ('2025-04-01'), PARTITION pmax VALUES LESS THAN (MAXVALUE));
CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint);
INSERT INTO page_view VALUES (1, '2025-01-03', '/a'), (2, '2025-01-20', '/b'), (3, '2025-02-03', '/c'),
  (4, '2025-03-03', '/d'), (5, '2026-01-01', '/e');
";

#[test]
fn mariadb_a_prune_killed_between_the_swap_and_the_drop_is_finished_by_the_next() {
    let Some(databases) = Databases::mysql() else { return };
    let url = databases.create(KILLED);
    let config = project(&[("cascades/cascade.toml", &format!("[settings]\nrun_lease_seconds = 1\n{CONFIG}"))]);
    let now = "2025-09-01T00:00:00Z";
    let never = config.path().join("never-created");
    // The prune that detaches a partition decides where its rows are archived.
    let archive = config.path().join("archive");
    let archive = archive.to_str().unwrap();
    let pause = ["--pause-after-detach", never.to_str().unwrap()];
    let mut run = Running::start(
        config.path(),
        &args(&url, now, &[&["prune", "page_view", "--confirm", "--archive", archive][..], &pause].concat()),
    );
    let detached = run.expect("partition detached");
    assert_eq!(detached.fields["partition"], "page_view.p202501");
    assert!(!partition_names(&url).contains(&"p202501".to_owned()), "the partition is dropped");
    let swapped: Vec<String> = texts(
        &url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() \
         AND table_name LIKE 'cascade_detached%'",
    )
    .into_iter()
    .map(|row| row[0].clone().unwrap())
    .collect();
    assert_eq!(swapped.len(), 1, "{swapped:?}");
    assert_eq!(count(&url, &format!("SELECT COUNT(*) FROM {}", swapped[0])), 2, "its rows, not yet dropped");
    run.kill();
    common::wait_until("the killed prune's lease is over", || {
        let runs = json_output(cascade(config.path()).args(["runs", "--format", "json", "--database-url", &url]));
        runs[0]["outcome"] == "interrupted"
    });
    let report = json_output(cascade(config.path()).args(args(&url, now, &["--format", "json"])));
    assert_eq!(report["models"][0]["detached"], json!(["page_view.p202501"]));

    let pruned = json_output(cascade(config.path()).args(args(
        &url,
        now,
        &["prune", "--confirm", "--archive", archive, "--format", "json"],
    )));
    let dropped: Vec<(&str, &str, u64)> = pruned["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["partition"].as_str().unwrap(), d["detach"].as_str().unwrap(), d["rows"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        dropped,
        [
            ("page_view.p202501", "earlier", 2),
            ("page_view.p202502", "exchanged", 1),
            ("page_view.p202503", "exchanged", 1)
        ]
    );
    assert_eq!(partition_names(&url), ["pmax"]);
    assert_eq!(ids(&url, "SELECT CAST(id AS TEXT) FROM page_view"), [5]);
    let archived: BTreeSet<u64> = archive_lines(std::path::Path::new(archive), &[])["page_view"]
        .iter()
        .map(|line| line["row"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(archived, BTreeSet::from([1, 2, 3, 4]));
    assert_eq!(
        count(&url, &format!("SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '{}'", swapped[0])),
        0
    );
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0);
}

/// A table partitioned by `MONTH()` puts every January in one partition: no partition of it is
/// wholly older than a time, so retention is refused by `validate` and by the prune.
#[test]
fn mariadb_a_table_partitioned_by_a_function_out_of_time_order_is_refused() {
    let Some(databases) = Databases::mysql() else { return };
    let url = databases.create(
        "CREATE TABLE page_view (id bigint NOT NULL, entered_at datetime NOT NULL, PRIMARY KEY (id, entered_at))
           PARTITION BY RANGE (MONTH(entered_at)) (PARTITION h1 VALUES LESS THAN (7), PARTITION h2 VALUES LESS THAN (13));
         CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint);
         INSERT INTO page_view VALUES (1, '2020-01-01'), (2, '2026-12-01');",
    );
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let validate = cascade(config.path()).args(["validate", "--database-url", &url]).output().unwrap();
    let stdout = String::from_utf8_lossy(&validate.stdout);
    assert_eq!(validate.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("retention-not-partitioned") && stdout.contains("is partitioned by RANGE (month(entered_at))"),
        "{stdout}"
    );
    let refused = cascade(config.path())
        .args(["--database-url", &url, "partitions", "prune", "--confirm", "--now", "2026-12-07T00:00:00Z"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not partitioned by range on `entered_at`"), "{stderr}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM page_view"), 2);
    assert_eq!(partition_names(&url), ["h1", "h2"]);
}

/// The worker prunes by the real clock what the listing (without `--now`) says goes.
#[test]
fn mariadb_the_worker_prunes_what_the_policy_drops_today() {
    let Some(databases) = Databases::mysql() else { return };
    let today = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    // Monthly partitions from a year ago to next month, by `TO_DAYS`.
    let this_month =
        (0..).map(|index| (index, month(index).1)).take_while(|(_, start)| *start <= today).last().unwrap().0;
    let partitions: Vec<String> = (this_month - 12..=this_month + 1)
        .map(|index| {
            format!(
                "PARTITION p{} VALUES LESS THAN (TO_DAYS('{}'))",
                month(index).0.replace('-', ""),
                month(index + 1).0
            )
        })
        .collect();
    let rows: Vec<String> =
        (this_month - 12..=this_month).map(|index| format!("({index}, '{}')", month(index).0)).collect();
    let url = databases.create(&format!(
        "CREATE TABLE page_view (id bigint NOT NULL, entered_at date NOT NULL, PRIMARY KEY (id, entered_at))
           PARTITION BY RANGE (TO_DAYS(entered_at)) ({});
         CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint);
         INSERT INTO page_view VALUES {};",
        partitions.join(", "),
        rows.join(", ")
    ));
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = json_output(cascade(config.path()).args(["--database-url", &url, "partitions", "--format", "json"]));
    let (to_drop, to_keep): (Vec<&Value>, Vec<&Value>) =
        report["models"][0]["partitions"].as_array().unwrap().iter().partition(|p| p["drop"] == true);
    assert!(to_drop.len() >= 9, "{report}");
    let output = cascade(config.path()).args(["--database-url", &url, "worker", "--once"]).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains(&format!("retention: {} partition(s) dropped, 0 prune(s) failed", to_drop.len())),
        "{stdout}"
    );
    let kept: Vec<String> = to_keep.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(partition_names(&url), kept);
}

/// A range on numbers has bounds that are no times: validate says so, and the prune refuses it,
/// rather than compare bounds that read as no time and never drop a partition.
#[test]
fn mariadb_a_range_on_numbers_is_refused_for_retention() {
    let Some(databases) = Databases::mysql() else { return };
    let url = databases.create(
        "CREATE TABLE page_view (id bigint NOT NULL, entered_at int NOT NULL, PRIMARY KEY (id, entered_at))
           PARTITION BY RANGE COLUMNS (entered_at) (PARTITION p1 VALUES LESS THAN (100), PARTITION p2 VALUES LESS THAN (200));
         CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint);
         INSERT INTO page_view VALUES (1, 10), (2, 150);",
    );
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let validate = cascade(config.path()).args(["validate", "--database-url", &url]).output().unwrap();
    let stdout = String::from_utf8_lossy(&validate.stdout);
    assert_eq!(validate.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("is partitioned by RANGE (entered_at), whose values are no times"), "{stdout}");
    let refused = cascade(config.path())
        .args(["--database-url", &url, "partitions", "prune", "--confirm", "--now", "2026-12-07T00:00:00Z"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a date or time column"));
    assert_eq!(partition_names(&url), ["p1", "p2"]);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM page_view"), 2);
}
