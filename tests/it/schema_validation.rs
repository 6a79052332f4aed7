//! Schema-aware validation and `cascade init` against real SQLite and PostgreSQL databases and
//! DDL files.

use crate::common;

use common::{block_on, cascade, on_each_database, postgres_database, project, repository, sqlite_database};
use serde_json::Value;

/// A `group` table referenced by 26 tables, each with an index on its reference.
fn group_schema() -> String {
    let mut ddl = String::from("CREATE TABLE \"group\" (id INTEGER PRIMARY KEY, title TEXT);\n");
    for i in 1..=26 {
        ddl.push_str(&format!(
            "CREATE TABLE child_{i:02} (id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL REFERENCES \"group\" (id));\n\
             CREATE INDEX child_{i:02}_group_id_idx ON child_{i:02} (group_id);\n"
        ));
    }
    ddl
}

/// The config of `group_schema`, declaring every child except `missing`.
fn group_config(missing: &[usize]) -> String {
    let mut config = String::from("[models.group]\ntable = \"group\"\nrequire_all_references = true\nchildren = [\n");
    for i in (1..=26).filter(|i| !missing.contains(i)) {
        config.push_str(&format!("  {{ model = \"child_{i:02}\", column = \"group_id\" }},\n"));
    }
    config.push_str("]\n");
    for i in 1..=26 {
        config.push_str(&format!("\n[models.child_{i:02}]\ntable = \"child_{i:02}\"\nstrategy = \"bulk\"\n"));
    }
    config
}

/// Runs `validate --format json` with `args` and returns (exit code, report).
fn validate_json(dir: &std::path::Path, args: &[&str]) -> (i32, Value) {
    let output = cascade(dir).args(["validate", "--format", "json"]).args(args).output().unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!("not JSON: {}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (output.status.code().unwrap(), report)
}

fn messages(report: &Value) -> Vec<String> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{}: {}", d["code"].as_str().unwrap(), d["message"].as_str().unwrap()))
        .collect()
}

/// The 26-reference check with `schema_args` pointing at the schema: clean when all are
/// declared, and exactly the two undeclared tables named when two are not.
fn check_group_references(schema_args: &[&str]) {
    let complete = project(&[("cascades/group.toml", &group_config(&[]))]);
    let (code, report) = validate_json(complete.path(), schema_args);
    assert_eq!((code, messages(&report)), (0, vec![]));

    let incomplete = project(&[("cascades/group.toml", &group_config(&[7, 19]))]);
    let (code, report) = validate_json(incomplete.path(), schema_args);
    assert_eq!(code, 1);
    assert_eq!(
        messages(&report),
        [
            "unregistered-reference: table `child_07` references `group` by `group_id`, but model `group` declares no relation for it",
            "unregistered-reference: table `child_19` references `group` by `group_id`, but model `group` declares no relation for it",
        ]
    );
}

#[test]
fn group_references_against_a_ddl_file() {
    let dir = project(&[("db/schema.sql", &group_schema())]);
    let path = dir.path().join("db/schema.sql");
    check_group_references(&["--schema", path.to_str().unwrap()]);
}

on_each_database!(group_references_against_live_sqlite, group_references_against_live_postgres, |databases| {
    let url = databases.create(&group_schema());
    check_group_references(&["--database-url", &url]);
});

#[test]
fn the_demo_config_matches_the_demo_schema_everywhere() {
    let ddl = std::fs::read_to_string(repository().join("schemas/demo.sql")).unwrap();
    cascade(repository())
        .args(["validate", "--schema", "schemas/demo.sql", "--deny-warnings"])
        .assert()
        .success()
        .stdout("ok: no problems found\n");
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_database(dir.path(), &ddl);
    cascade(repository()).args(["validate", "--deny-warnings", "--database-url", &sqlite]).assert().success();
    if let Some(postgres) = postgres_database(&ddl) {
        cascade(repository()).args(["validate", "--deny-warnings", "--database-url", &postgres]).assert().success();
    }
}

/// Tables, columns, keys and leading index columns, without names that differ by source.
fn outline(schema: &cascade::schema::Schema) -> Vec<String> {
    schema
        .tables
        .iter()
        .map(|table| {
            let columns: Vec<String> =
                table.columns.iter().map(|c| format!("{}{}", c.name, if c.nullable { "?" } else { "" })).collect();
            let keys: Vec<String> = table
                .foreign_keys
                .iter()
                .map(|k| format!("{}->{}:{:?}", k.columns.join("+"), k.referenced_table, k.on_delete))
                .collect();
            // Sources differ on whether the primary key is listed as an index; what matters is
            // which columns an index (or the key) leads with.
            let leading: Vec<&str> = table
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .filter(|c| table.has_index_leading_with(&[c.to_string()]))
                .collect();
            format!(
                "{} [{}] pk({}) fk[{}] idx[{}]",
                table.name,
                columns.join(" "),
                table.primary_key.join("+"),
                keys.join(" "),
                leading.join(" ")
            )
        })
        .collect()
}

const SMALL_SCHEMA: &str = "
CREATE TABLE artist (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE album (id INTEGER PRIMARY KEY, artist_id INTEGER NOT NULL REFERENCES artist (id) ON DELETE CASCADE, title TEXT);
CREATE INDEX album_artist_id_idx ON album (artist_id);
CREATE TABLE track (id INTEGER PRIMARY KEY, album_id INTEGER REFERENCES album (id) ON DELETE SET NULL, code TEXT UNIQUE);
CREATE TABLE tag (track_id INTEGER NOT NULL REFERENCES track (id), label TEXT NOT NULL, PRIMARY KEY (track_id, label));
";

#[test]
fn sqlite_postgres_and_ddl_read_the_same_schema() {
    let from_ddl = outline(&cascade::schema::parse_ddl(SMALL_SCHEMA).schema);
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = sqlite_database(dir.path(), SMALL_SCHEMA);
    let mut from_sqlite = outline(&block_on(cascade::schema::introspect_url(&sqlite_url)).unwrap());
    let mut sorted_ddl = from_ddl.clone();
    sorted_ddl.sort();
    from_sqlite.sort();
    assert_eq!(from_sqlite, sorted_ddl);
    insta::assert_snapshot!(from_ddl.join("\n"));
    if let Some(postgres_url) = postgres_database(SMALL_SCHEMA) {
        let mut from_postgres = outline(&block_on(cascade::schema::introspect_url(&postgres_url)).unwrap());
        from_postgres.sort();
        assert_eq!(from_postgres, sorted_ddl);
    }
}

const PARTITIONED: &str = "
CREATE TABLE customer (customer_id integer PRIMARY KEY);
CREATE TABLE payment (payment_id integer NOT NULL, customer_id integer NOT NULL, payment_date date NOT NULL)
    PARTITION BY RANGE (payment_date);
CREATE TABLE payment_p2022_01 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2022-02-01');
CREATE TABLE payment_p2022_02 PARTITION OF payment FOR VALUES FROM ('2022-02-01') TO ('2022-03-01');
ALTER TABLE payment_p2022_01 ADD CONSTRAINT p1_customer FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
ALTER TABLE payment_p2022_02 ADD CONSTRAINT p2_customer FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
CREATE INDEX p1_customer_idx ON payment_p2022_01 (customer_id);
CREATE INDEX p2_customer_idx ON payment_p2022_02 (customer_id);
";

#[test]
fn a_partitioned_table_is_one_table_with_its_partitions_keys() {
    let Some(url) = postgres_database(PARTITIONED) else {
        return;
    };
    let schema = block_on(cascade::schema::introspect_url(&url)).unwrap();
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["customer", "payment"]);
    let payment = schema.table("payment").unwrap();
    assert!(payment.partitioned && !schema.table("customer").unwrap().partitioned);
    assert_eq!(payment.foreign_keys.len(), 1, "{:?}", payment.foreign_keys);
    assert_eq!(payment.foreign_keys[0].referenced_table, "customer");
    assert!(payment.has_index_leading_with(&["customer_id".to_owned()]));

    let config = "[models.customer]\ntable = \"customer\"\nkey = \"customer_id\"\nrequire_all_references = true\n\
                  children = [{ model = \"payment\", column = \"customer_id\" }]\n\n\
                  [models.payment]\ntable = \"payment\"\nstrategy = \"bulk\"\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let (code, report) = validate_json(dir.path(), &["--database-url", &url]);
    assert_eq!((code, messages(&report)), (0, vec![]));
}

/// `init` writes a config that validates against the same database with no error (cycles
/// included: they are followed), and never overwrites without --force.
fn init_then_validate(url: &str) -> String {
    let dir = project(&[]);
    cascade(dir.path()).args(["init", "--database-url", url]).assert().success();
    let (code, report) = validate_json(dir.path(), &["--database-url", url]);
    let errors: Vec<&str> = (report["diagnostics"].as_array().unwrap().iter())
        .filter(|d| d["severity"] == "error")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!((code, errors), (0, Vec::<&str>::new()), "{report}");
    cascade(dir.path())
        .args(["init", "--database-url", url])
        .assert()
        .code(2)
        .stderr("error: `cascades/cascade.toml` already exists: pass --force to overwrite it\n");
    cascade(dir.path()).args(["init", "--database-url", url, "--force"]).assert().success();
    std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap()
}

const CYCLIC: &str = "
CREATE TABLE store (store_id INTEGER PRIMARY KEY, manager_staff_id INTEGER NOT NULL);
CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL REFERENCES store (store_id),
                    reports_to INTEGER REFERENCES staff (staff_id));
CREATE TABLE rental (rental_id INTEGER PRIMARY KEY, staff_id INTEGER NOT NULL REFERENCES staff (staff_id));
";

on_each_database!(
    init_then_validate_on_sqlite(CYCLIC.to_owned(), "{ model = \"staff\", column = \"reports_to\" },  # a tree"),
    init_then_validate_on_postgres(
        format!("{CYCLIC}\nALTER TABLE store ADD FOREIGN KEY (manager_staff_id) REFERENCES staff (staff_id);"),
        "{ model = \"staff\", column = \"store_id\" },  # closes the cycle staff → store → staff"
    ),
    |databases, ddl, expected| {
        let config = init_then_validate(&databases.create(&ddl));
        assert!(config.contains(expected), "{config}");
    }
);

#[test]
fn a_missing_database_is_a_usage_error_and_is_not_created() {
    let dir = project(&[("cascades/a.toml", "[models.a]\ntable = \"a\"\n")]);
    let output = cascade(dir.path())
        .args(["validate", "--database-url", "sqlite://missing.db"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr, "error: no SQLite database at `missing.db` (it is never created: check the path)\n");
    assert!(!dir.path().join("missing.db").exists());
    cascade(dir.path())
        .args(["validate", "--schema", "nope.sql"])
        .assert()
        .code(2)
        .stderr(predicates::str::starts_with("error: cannot read `nope.sql`"));
}

const INDEX_KINDS: &str = "
CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT, org_id INTEGER);
CREATE UNIQUE INDEX person_pair ON person (email, org_id);
CREATE UNIQUE INDEX person_org_some ON person (org_id) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX person_email_lower ON person (lower(email));
CREATE INDEX person_org_then_lower ON person (org_id, lower(email));
";

/// Which indexes are partial or have expressions (what decides whether a unique index keeps
/// duplicates out of the whole table) reads the same from DDL, SQLite and PostgreSQL.
#[test]
fn partial_and_expression_indexes_read_the_same_everywhere() {
    let kinds = |schema: &cascade::schema::Schema| -> Vec<String> {
        let mut kinds: Vec<String> = schema.tables[0]
            .indexes
            .iter()
            .filter(|index| {
                index.name.as_deref().is_some_and(|name| name.starts_with("person_") && !name.ends_with("_pkey"))
            })
            .map(|index| {
                format!(
                    "{} ({}) unique={} partial={} expression={} invalid={}",
                    index.name.as_deref().unwrap(),
                    index.columns.join(", "),
                    index.unique,
                    index.partial,
                    index.expression,
                    index.invalid
                )
            })
            .collect();
        kinds.sort();
        kinds
    };
    let expected = [
        "person_email_lower () unique=true partial=false expression=true invalid=false",
        "person_org_some (org_id) unique=true partial=true expression=false invalid=false",
        "person_org_then_lower (org_id) unique=false partial=false expression=true invalid=false",
        "person_pair (email, org_id) unique=true partial=false expression=false invalid=false",
    ];
    assert_eq!(kinds(&cascade::schema::parse_ddl(INDEX_KINDS).schema), expected, "DDL");
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = sqlite_database(dir.path(), INDEX_KINDS);
    assert_eq!(kinds(&block_on(cascade::schema::introspect_url(&sqlite_url)).unwrap()), expected, "SQLite");
    if let Some(postgres_url) = postgres_database(INDEX_KINDS) {
        assert_eq!(kinds(&block_on(cascade::schema::introspect_url(&postgres_url)).unwrap()), expected, "PostgreSQL");
    }
}

const UNCOMPARABLE: &str = "
CREATE TABLE account (id bigint PRIMARY KEY, guid uuid UNIQUE);
CREATE TABLE session (id bigint PRIMARY KEY, account_guid uuid);
CREATE TABLE note (id bigint PRIMARY KEY, account_ref text);
CREATE INDEX session_account ON session (account_guid);
CREATE INDEX note_account ON note (account_ref);
INSERT INTO account VALUES (1, '00000000-0000-0000-0000-000000000001');
INSERT INTO note VALUES (1, '1');
";

const UNCOMPARABLE_CONFIG: &str = r#"[models.account]
table = "account"
children = [{ model = "session", column = "account_guid" }, { model = "note", column = "account_ref" }]

[models.session]
table = "session"

[models.note]
table = "note"
"#;

/// `relation-type-mismatch` suggests only a change the server accepts: no `ALTER ... USING`
/// for a `uuid` column under a `bigint` key (PostgreSQL has no cast between them), and for a
/// `text` one the `ALTER` it suggests runs.
#[test]
fn relation_type_mismatch_suggests_only_what_postgres_accepts() {
    let Some(url) = postgres_database(UNCOMPARABLE) else { return };
    let dir = project(&[("cascades/account.toml", UNCOMPARABLE_CONFIG)]);
    let (code, report) = validate_json(dir.path(), &["--database-url", &url]);
    assert_eq!(code, 1, "{report}");
    let help = |column: &str| -> String {
        let found = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "relation-type-mismatch" && d["message"].as_str().unwrap().contains(column));
        found.unwrap_or_else(|| panic!("no mismatch on {column}: {report}"))["help"].as_str().unwrap().to_owned()
    };
    let uuid_help = help("session.account_guid");
    assert!(!uuid_help.contains("ALTER TABLE"), "PostgreSQL cannot cast uuid to bigint: {uuid_help}");
    assert!(uuid_help.contains("guid"), "the parent's uuid column is the key to reference: {uuid_help}");

    let text_help = help("note.account_ref");
    let alter = &text_help[text_help.find("ALTER TABLE").unwrap_or_else(|| panic!("no ALTER: {text_help}"))..];
    common::texts(&url, alter);
    assert_eq!(common::texts(&url, "SELECT account_ref::text FROM note"), vec![vec![Some("1".to_owned())]]);
    let (_, report) = validate_json(dir.path(), &["--database-url", &url]);
    assert!(!messages(&report).iter().any(|m| m.contains("note.account_ref")), "{report}");
}

const PARTIAL_INDEXES: &str = "
CREATE TABLE project (id INTEGER PRIMARY KEY);
CREATE TABLE event (id INTEGER PRIMARY KEY, project_id INTEGER, deleted_at TEXT);
CREATE TABLE tag (id INTEGER PRIMARY KEY, project_id INTEGER);
CREATE INDEX event_live_project ON event (project_id) WHERE deleted_at IS NULL;
CREATE INDEX tag_project ON tag (project_id) WHERE project_id IS NOT NULL;
";

const PARTIAL_INDEXES_CONFIG: &str = r#"[models.project]
table = "project"
children = [{ model = "event", column = "project_id" }, { model = "tag", column = "project_id" }]

[models.event]
table = "event"
strategy = "bulk"

[models.tag]
table = "tag"
strategy = "bulk"
"#;

/// A partial index serves the deletion's lookup by its column (`project_id = ANY($1)`) only
/// when the lookup implies its predicate: `WHERE project_id IS NOT NULL` does,
/// `WHERE deleted_at IS NULL` (rows the lookup also finds are not in it) does not.
fn check_partial_indexes(schema_args: &[&str]) {
    let dir = project(&[("cascades/project.toml", PARTIAL_INDEXES_CONFIG)]);
    check_partial_indexes_in(dir.path(), schema_args);
}

fn check_partial_indexes_in(dir: &std::path::Path, schema_args: &[&str]) {
    let (_, report) = validate_json(dir, schema_args);
    let unindexed: Vec<String> =
        messages(&report).into_iter().filter(|message| message.starts_with("unindexed-relation")).collect();
    assert_eq!(
        unindexed,
        [
            "unindexed-relation: no index of `event` leads with `project_id`: every chunk of `project` would scan the table"
        ],
        "{report}"
    );
}

on_each_database!(
    partial_indexes_serve_a_lookup_that_implies_them_on_sqlite,
    partial_indexes_serve_a_lookup_that_implies_them_on_postgres,
    |databases| {
        let url = databases.create(PARTIAL_INDEXES);
        check_partial_indexes(&["--database-url", &url]);
        if !databases.is_sqlite() {
            // The server agrees: with table scans off (the tables are empty), the lookup reads
            // the IS NOT NULL index.
            let plan = common::texts(
                &format!("{url}{}options=-c%20enable_seqscan%3Doff", if url.contains('?') { '&' } else { '?' }),
                "EXPLAIN SELECT id FROM tag WHERE project_id = ANY('{1,2}'::int8[])",
            );
            let plan: Vec<String> = plan.into_iter().flatten().flatten().collect();
            assert!(plan.iter().any(|line| line.contains("tag_project")), "{plan:?}");
        }
    }
);

#[test]
fn partial_indexes_serve_a_lookup_that_implies_them_in_ddl() {
    let dir = project(&[("cascades/project.toml", PARTIAL_INDEXES_CONFIG), ("schema.sql", PARTIAL_INDEXES)]);
    check_partial_indexes_in(dir.path(), &["--schema", "schema.sql"]);
}

/// What a partial index's predicate asks reads the same from DDL, SQLite and PostgreSQL.
#[test]
fn partial_index_predicates_read_the_same_everywhere() {
    let predicates = |schema: &cascade::schema::Schema| -> Vec<(String, Vec<String>)> {
        let mut found: Vec<(String, Vec<String>)> = schema
            .tables
            .iter()
            .flat_map(|table| &table.indexes)
            .filter(|index| index.partial)
            .map(|index| (index.name.clone().unwrap(), index.not_null_predicate.clone()))
            .collect();
        found.sort();
        found
    };
    let expected =
        vec![("event_live_project".to_owned(), vec![]), ("tag_project".to_owned(), vec!["project_id".to_owned()])];
    assert_eq!(predicates(&cascade::schema::parse_ddl(PARTIAL_INDEXES).schema), expected, "DDL");
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = sqlite_database(dir.path(), PARTIAL_INDEXES);
    assert_eq!(predicates(&block_on(cascade::schema::introspect_url(&sqlite_url)).unwrap()), expected, "SQLite");
    if let Some(postgres_url) = postgres_database(PARTIAL_INDEXES) {
        let schema = block_on(cascade::schema::introspect_url(&postgres_url)).unwrap();
        assert_eq!(predicates(&schema), expected, "PostgreSQL");
    }
}

/// `init` into a directory whose other files already declare its models refuses, naming the
/// clash and --out, and writes nothing; into a place of its own it works, and validates.
#[test]
fn init_beside_a_config_declaring_the_same_models_refuses() {
    let ddl = "CREATE TABLE artist (id INTEGER PRIMARY KEY);
               CREATE TABLE album (id INTEGER PRIMARY KEY, artist_id INTEGER REFERENCES artist (id));
               CREATE INDEX album_artist ON album (artist_id);";
    let dir = project(&[("cascades/music.toml", "[models.artist]\ntable = \"artist\"\n")]);
    let url = sqlite_database(dir.path(), ddl);
    let output = cascade(dir.path()).args(["init", "--database-url", &url]).assert().code(2).get_output().clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("model `artist`") && stderr.contains("cascades/music.toml:1"), "{stderr}");
    assert!(stderr.contains("--out"), "{stderr}");
    assert!(!dir.path().join("cascades/cascade.toml").exists(), "nothing is written");
    assert!(!dir.path().join("cascades/cascade.schema.json").exists(), "nothing is written");

    cascade(dir.path()).args(["init", "--database-url", &url, "--out", "generated"]).assert().success();
    let (code, report) = validate_json(dir.path(), &["--config", "generated", "--database-url", &url]);
    assert_eq!(code, 0, "{report}");
}
