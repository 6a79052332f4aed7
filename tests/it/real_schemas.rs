//! What real application schemas have and our own rarely did: `ON DELETE SET NULL` keys,
//! composite foreign keys (under a composite-key parent that is itself a per_row child), keys to
//! unique columns that are not the parent's key, self-references, and foreign keys nobody
//! declared. Each goes `init` → `validate` → `plan` → `delete` with no hand edits, and `validate`
//! says what `delete` would refuse.

use crate::common;

use serde_json::Value;

use common::{cascade, count, json_output, on_each_database, project, texts};

/// `init` into `dir/cascades` from `url`; the config it wrote.
fn init(dir: &std::path::Path, url: &str) -> String {
    let output = cascade(dir).args(["init", "--database-url", url]).output().expect("run init");
    assert!(output.status.success(), "init: {}", String::from_utf8_lossy(&output.stderr));
    std::fs::read_to_string(dir.join("cascades/cascade.toml")).expect("init wrote cascades/cascade.toml")
}

/// `validate --database-url` must be clean (no errors).
fn validate_clean(dir: &std::path::Path, url: &str) -> Value {
    let output =
        cascade(dir).args(["validate", "--format", "json", "--database-url", url]).output().expect("run validate");
    let report: Value = serde_json::from_slice(&output.stdout).expect("validate's JSON");
    assert!(output.status.success(), "validate is not clean: {report:#}");
    report
}

/// `plan MODEL --id ID` and then `delete MODEL ID --confirm`, both as JSON: what the plan counted
/// is what the run did.
fn plan_then_delete(dir: &std::path::Path, url: &str, model: &str, id: &str) -> Value {
    let plan = json_output(cascade(dir).args(["plan", model, "--id", id, "--format", "json", "--database-url", url]));
    let run =
        json_output(cascade(dir).args(["delete", model, id, "--confirm", "--format", "json", "--database-url", url]));
    assert_eq!(plan["totals"], run["deleted"], "plan counted {plan:#} and the run deleted {run:#}");
    assert_eq!(plan["nullify"], run["nullified"], "plan counted {plan:#} and the run nullified {run:#}");
    run
}

on_each_database!(
    set_null_keys_are_nullified_on_sqlite("INTEGER"),
    set_null_keys_are_nullified_on_postgres("bigint"),
    |databases, int| {
        let url = databases.create(&format!(
            "CREATE TABLE account (id {int} PRIMARY KEY);
         CREATE TABLE invoice (id {int} PRIMARY KEY,
             account_id {int} CONSTRAINT invoice_account_fkey REFERENCES account (id) ON DELETE SET NULL);
         CREATE INDEX invoice_account ON invoice (account_id);
         CREATE TABLE invoice_line (id {int} PRIMARY KEY, invoice_id {int} NOT NULL REFERENCES invoice (id));
         CREATE INDEX invoice_line_invoice ON invoice_line (invoice_id);
         INSERT INTO account VALUES (1), (2);
         INSERT INTO invoice VALUES (10, 1), (11, 1), (12, 2);
         INSERT INTO invoice_line VALUES (100, 10), (101, 11), (102, 12);"
        ));
        let dir = tempfile::tempdir().unwrap();
        let config = init(dir.path(), &url);
        assert!(config.contains(r#"{ model = "invoice", column = "account_id", on_delete = "nullify" },"#), "{config}");
        validate_clean(dir.path(), &url);
        let run = plan_then_delete(dir.path(), &url, "account", "1");
        assert_eq!(run["nullified"]["invoice"], 2);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM invoice WHERE account_id IS NULL"), 2, "the invoices stay");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM invoice_line"), 3, "and so do their lines");

        // A delete relation over that key deletes what the database would keep: a warning naming it.
        let edited = config.replace(r#", on_delete = "nullify" },  # ON DELETE SET NULL"#, " },");
        std::fs::write(dir.path().join("cascades/cascade.toml"), edited).unwrap();
        let report = validate_clean(dir.path(), &url);
        let warning = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "deletes-kept-rows")
            .unwrap_or_else(|| panic!("no deletes-kept-rows warning: {report:#}"));
        let named =
            if databases.is_sqlite() { "`invoice(account_id) -> account(id)`" } else { "`invoice_account_fkey`" };
        assert!(warning["message"].as_str().unwrap().contains(named), "{warning:#}");
    }
);

on_each_database!(
    composite_keys_delete_through_init_on_sqlite("INTEGER"),
    composite_keys_delete_through_init_on_postgres("bigint"),
    |databases, int| {
        // project → node (keyed by (node_id, version), per_row: it has children) → edge by both
        // columns → edge_note; and label → node by a unique pair that is not node's key.
        let url = databases.create(&format!(
            "CREATE TABLE project (id {int} PRIMARY KEY);
         CREATE TABLE node (node_id {int} NOT NULL, version {int} NOT NULL,
             project_id {int} NOT NULL REFERENCES project (id), slug text NOT NULL, lang text NOT NULL,
             PRIMARY KEY (node_id, version), UNIQUE (slug, lang));
         CREATE INDEX node_project ON node (project_id);
         CREATE TABLE edge (id {int} PRIMARY KEY, node_id {int} NOT NULL, version {int} NOT NULL,
             FOREIGN KEY (node_id, version) REFERENCES node (node_id, version));
         CREATE INDEX edge_node ON edge (node_id, version);
         CREATE TABLE edge_note (id {int} PRIMARY KEY, edge_id {int} NOT NULL REFERENCES edge (id));
         CREATE INDEX edge_note_edge ON edge_note (edge_id);
         CREATE TABLE label (id {int} PRIMARY KEY, slug text, lang text,
             FOREIGN KEY (slug, lang) REFERENCES node (slug, lang));
         CREATE INDEX label_node ON label (slug, lang);
         INSERT INTO project VALUES (1), (2);
         INSERT INTO node VALUES (1, 1, 1, 'a', 'en'), (1, 2, 1, 'a', 'de'), (2, 1, 2, 'b', 'en');
         INSERT INTO edge VALUES (10, 1, 1), (11, 1, 2), (12, 2, 1);
         INSERT INTO edge_note VALUES (100, 10), (101, 11), (102, 12);
         INSERT INTO label VALUES (1000, 'a', 'en'), (1001, 'a', 'de'), (1002, 'b', 'en'), (1003, NULL, NULL);"
        ));
        let dir = tempfile::tempdir().unwrap();
        let config = init(dir.path(), &url);
        assert!(config.contains(r#"{ model = "edge", columns = ["node_id", "version"] },"#), "{config}");
        assert!(
            config.contains(r#"{ model = "label", columns = ["slug", "lang"], references = ["slug", "lang"] },"#),
            "{config}"
        );
        // Tombstones of the per_row composite-key model carry its key as a JSON array.
        let with_outbox = config.replace(
            "[models.node]\ntable = \"node\"\n",
            "[models.node]\ntable = \"node\"\noutbox = \"node_deleted\"\n",
        ) + "\n[outbox.scopes.project]\nshard_key = \"project_id\"\ncategories = [\"node_deleted\"]\n";
        assert!(with_outbox.contains("outbox = \"node_deleted\""), "{config}");
        std::fs::write(dir.path().join("cascades/cascade.toml"), &with_outbox).unwrap();
        validate_clean(dir.path(), &url);
        let archive = dir.path().join("archive");
        let plan = json_output(cascade(dir.path()).args([
            "plan",
            "project",
            "--id",
            "1",
            "--format",
            "json",
            "--database-url",
            &url,
        ]));
        let run = json_output(
            cascade(dir.path())
                .args(["delete", "project", "1", "--confirm", "--format", "json", "--archive"])
                .arg(&archive)
                .args(["--database-url", &url]),
        );
        assert_eq!(plan["totals"], run["deleted"], "plan counted {plan:#} and the run deleted {run:#}");
        let tombstones: Vec<(String, String)> = texts(
            &url,
            "SELECT object_identifier, shard_identifier FROM cascade_outbox WHERE category = 'node_deleted' ORDER BY 1",
        )
        .into_iter()
        .map(|row| (row[0].clone().unwrap(), row[1].clone().unwrap()))
        .collect();
        assert_eq!(tombstones, [("[1,1]".to_owned(), "1".to_owned()), ("[1,2]".to_owned(), "1".to_owned())]);
        let archived = common::archive_lines(&archive, &[]);
        assert_eq!(
            (archived["node"].len(), archived["edge"].len(), archived["label"].len()),
            (2, 2, 2),
            "{archived:?}"
        );
        assert_eq!(
            (&run["deleted"]["node"], &run["deleted"]["edge"], &run["deleted"]["edge_note"], &run["deleted"]["label"]),
            (&Value::from(2), &Value::from(2), &Value::from(2), &Value::from(2))
        );
        let left = |table: &str, column: &str| -> Vec<String> {
            texts(&url, &format!("SELECT CAST({column} AS TEXT) FROM {table} ORDER BY 1"))
                .into_iter()
                .map(|row| row[0].clone().unwrap())
                .collect()
        };
        assert_eq!(left("node", "node_id"), ["2"]);
        assert_eq!(left("edge", "id"), ["12"]);
        assert_eq!(left("edge_note", "id"), ["102"]);
        assert_eq!(left("label", "id"), ["1002", "1003"]);
    }
);

on_each_database!(
    keys_to_unique_columns_are_relations_on_sqlite("INTEGER"),
    keys_to_unique_columns_are_relations_on_postgres("bigint"),
    |databases, int| {
        let url = databases.create(&format!(
            "CREATE TABLE login (id {int} PRIMARY KEY, login_id text NOT NULL UNIQUE);
         CREATE TABLE session (id {int} PRIMARY KEY, login_session_id text REFERENCES login (login_id));
         CREATE INDEX session_login ON session (login_session_id);
         INSERT INTO login VALUES (1, 'ada'), (2, 'bob');
         INSERT INTO session VALUES (10, 'ada'), (11, 'ada'), (12, 'bob');"
        ));
        let dir = tempfile::tempdir().unwrap();
        let config = init(dir.path(), &url);
        assert!(
            config.contains(r#"{ model = "session", column = "login_session_id", references = "login_id" },"#),
            "{config}"
        );
        validate_clean(dir.path(), &url);
        let run = plan_then_delete(dir.path(), &url, "login", "1");
        assert_eq!(run["deleted"]["session"], 2);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM session"), 1);
    }
);

on_each_database!(
    a_self_reference_is_followed_to_its_leaves_as_planned_on_sqlite("INTEGER"),
    a_self_reference_is_followed_to_its_leaves_as_planned_on_postgres("bigint"),
    |databases, int| {
        let url = databases.create(&format!(
            "CREATE TABLE plans (id {int} PRIMARY KEY, parent_id {int} REFERENCES plans (id));
         CREATE INDEX plans_parent ON plans (parent_id);
         INSERT INTO plans VALUES (1, NULL), (2, 1), (3, 2);"
        ));
        let dir = tempfile::tempdir().unwrap();
        let config = init(dir.path(), &url);
        assert!(config.contains(r#"{ model = "plans", column = "parent_id" },  # a tree"#), "{config}");
        validate_clean(dir.path(), &url);
        let run = plan_then_delete(dir.path(), &url, "plans", "1");
        assert_eq!(run["deleted"]["plans"], 3, "plan 1 and the plans below it, as the foreign key says");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM plans"), 0);
    }
);

on_each_database!(
    validate_refuses_what_delete_refuses_on_sqlite("INTEGER"),
    validate_refuses_what_delete_refuses_on_postgres("bigint"),
    |databases, int| {
        // `audit` references `account` and no relation declares it; `require_all_references` is not
        // set, yet a deletion of an account would be refused: so is the config.
        let url = databases.create(&format!(
            "CREATE TABLE account (id {int} PRIMARY KEY);
         CREATE TABLE audit (id {int} PRIMARY KEY, account_id {int} NOT NULL REFERENCES account (id));
         CREATE INDEX audit_account ON audit (account_id);
         CREATE TABLE share (id {int} PRIMARY KEY, account_id {int} NOT NULL, node {int} NOT NULL,
             FOREIGN KEY (account_id) REFERENCES account (id));
         INSERT INTO account VALUES (1);"
        ));
        let config = "[models.account]\ntable = \"account\"\n";
        let dir = project(&[("cascades/cascade.toml", config)]);
        let validate =
            cascade(dir.path()).args(["validate", "--format", "json", "--database-url", &url]).output().unwrap();
        assert_eq!(validate.status.code(), Some(1), "{}", String::from_utf8_lossy(&validate.stdout));
        let report: Value = serde_json::from_slice(&validate.stdout).unwrap();
        let found: Vec<(&str, &str)> = (report["diagnostics"].as_array().unwrap().iter())
            .filter(|d| d["code"] == "unregistered-reference")
            .map(|d| (d["message"].as_str().unwrap(), d["help"].as_str().unwrap()))
            .collect();
        assert_eq!(found.len(), 2, "{report:#}");
        let delete =
            cascade(dir.path()).args(["delete", "account", "1", "--confirm", "--database-url", &url]).output().unwrap();
        assert_eq!(delete.status.code(), Some(1));
        let refused = String::from_utf8_lossy(&delete.stdout).to_string() + &String::from_utf8_lossy(&delete.stderr);
        for (message, help) in &found {
            assert!(
                refused.contains(message) && refused.contains(help),
                "delete did not refuse with {message}: {refused}"
            );
        }
        assert_eq!(count(&url, "SELECT COUNT(*) FROM account"), 1, "nothing is deleted");

        // The relations its help suggests are what makes both pass.
        let fixed = format!(
            "{config}children = [\n  {{ model = \"audit\", column = \"account_id\" }},\n  {{ model = \"share\", column = \"account_id\" }},\n]\n\n\
         [models.audit]\ntable = \"audit\"\nstrategy = \"bulk\"\n\n[models.share]\ntable = \"share\"\nstrategy = \"bulk\"\n"
        );
        std::fs::write(dir.path().join("cascades/cascade.toml"), fixed).unwrap();
        validate_clean(dir.path(), &url);
        plan_then_delete(dir.path(), &url, "account", "1");
    }
);

/// An `ignore_references` entry over a composite key passes `validate` and `delete` alike.
#[test]
fn an_ignored_composite_reference_is_ignored_by_delete_too_on_postgres() {
    let Some(url) = common::postgres_database(
        "CREATE TABLE node (node_id bigint, version bigint, PRIMARY KEY (node_id, version));
         CREATE TABLE mirror (id bigint PRIMARY KEY, node_id bigint, version bigint,
             FOREIGN KEY (node_id, version) REFERENCES node (node_id, version));
         CREATE INDEX mirror_node ON mirror (node_id, version);
         CREATE TABLE project (id bigint PRIMARY KEY);
         CREATE TABLE task (id bigint PRIMARY KEY, project_id bigint NOT NULL REFERENCES project (id),
             node_id bigint, version bigint, FOREIGN KEY (node_id, version) REFERENCES node (node_id, version));
         CREATE INDEX task_project ON task (project_id);
         INSERT INTO project VALUES (1);
         INSERT INTO node VALUES (1, 1);
         INSERT INTO task VALUES (10, 1, 1, 1);",
    ) else {
        return;
    };
    let config = "[models.project]\ntable = \"project\"\nchildren = [{ model = \"task\", column = \"project_id\" }]\n\n\
                  [models.task]\ntable = \"task\"\nstrategy = \"bulk\"\n\n\
                  [models.node]\ntable = \"node\"\nkey = [\"node_id\", \"version\"]\n\
                  ignore_references = [\n  { table = \"mirror\", columns = [\"node_id\", \"version\"], reason = \"mirrors are rebuilt\" },\n  \
                  { table = \"task\", columns = [\"node_id\", \"version\"], reason = \"tasks go with their project\" },\n]\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    validate_clean(dir.path(), &url);
    plan_then_delete(dir.path(), &url, "project", "1");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM task"), 0);
}
