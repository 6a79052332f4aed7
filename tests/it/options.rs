//! `cascade option set | unset | list`: runtime values of `[options]` stored in the database,
//! listed for people and as JSON, and removed again.

use crate::common;

use common::{cascade, project, sqlite_database};
use serde_json::Value;

#[test]
fn an_option_is_set_listed_and_unset() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), "CREATE TABLE t (id INTEGER PRIMARY KEY);");
    let config = project(&[(
        "cascades/t.toml",
        "[options]\n\"deletions.t.rows_per_second\" = 500\n\n[models.t]\ntable = \"t\"\nrate_limit = \"deletions.t.rows_per_second\"\n",
    )]);
    let list = || -> Value {
        let output = cascade(config.path())
            .args(["option", "list", "--format", "json", "--database-url", &url])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    assert_eq!(list(), serde_json::json!({ "deletions.t.rows_per_second": { "config": 500.0, "runtime": null } }));

    cascade(config.path())
        .args(["option", "set", "deletions.t.rows_per_second", "20", "--database-url", &url])
        .assert()
        .success();
    assert_eq!(list()["deletions.t.rows_per_second"]["runtime"], 20.0);

    cascade(config.path())
        .args(["option", "unset", "deletions.t.rows_per_second", "--database-url", &url])
        .assert()
        .success()
        .stdout("deletions.t.rows_per_second = 500 (the config's value again)\n");
    assert_eq!(list()["deletions.t.rows_per_second"]["runtime"], Value::Null);

    cascade(config.path())
        .args(["option", "unset", "deletions.t.rows_per_secnd", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not declared in [options] (did you mean `deletions.t.rows_per_second`?)"));
}
