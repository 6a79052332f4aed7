//! Twenty stacked diamonds: `d0` has children `a0` and `b0`, both parents of `d1`, which has
//! `a1` and `b1`, and so on down to `d20` — about a million paths from the root to `d20`, 61
//! models. The plan shares each model's subtree, so every output form is as large as the
//! models, counts are exact, and the deletion leaves what the database's own
//! `ON DELETE CASCADE` would.

use crate::common;

use std::collections::BTreeMap;

use common::databases::Databases;
use common::{cascade, count, dump, json_output, on_each_database, project, texts};
use serde_json::Value;

const LEVELS: usize = 20;
/// Rows of each table.
const ROWS: usize = 6;

/// Every table: the `d` of each level, the `a` and `b` below it.
fn tables() -> Vec<String> {
    let mut tables = vec!["d0".to_owned()];
    for level in 0..LEVELS {
        tables.extend([format!("a{level}"), format!("b{level}"), format!("d{}", level + 1)]);
    }
    tables
}

fn config() -> String {
    let mut config = String::new();
    for level in 0..LEVELS {
        let next = level + 1;
        config.push_str(&format!(
            "[models.d{level}]\ntable = \"d{level}\"\nchildren = [\n  {{ model = \"a{level}\", column = \"d_id\" }},\n  \
             {{ model = \"b{level}\", column = \"d_id\" }},\n]\n\n\
             [models.a{level}]\ntable = \"a{level}\"\nchildren = [{{ model = \"d{next}\", column = \"a_id\" }}]\n\n\
             [models.b{level}]\ntable = \"b{level}\"\nchildren = [{{ model = \"d{next}\", column = \"b_id\" }}]\n\n"
        ));
    }
    config.push_str(&format!("[models.d{LEVELS}]\ntable = \"d{LEVELS}\"\n"));
    config
}

/// The schema and its rows; `on_delete` follows every foreign key (`""` or ` ON DELETE CASCADE`).
fn schema(on_delete: &str) -> String {
    let mut sql = String::from("CREATE TABLE d0 (id INTEGER PRIMARY KEY);\n");
    for level in 0..LEVELS {
        let next = level + 1;
        for side in ["a", "b"] {
            sql.push_str(&format!(
                "CREATE TABLE {side}{level} (id INTEGER PRIMARY KEY, d_id INTEGER REFERENCES d{level} (id){on_delete});\n\
                 CREATE INDEX {side}{level}_d_id ON {side}{level} (d_id);\n"
            ));
        }
        sql.push_str(&format!(
            "CREATE TABLE d{next} (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a{level} (id){on_delete}, \
             b_id INTEGER REFERENCES b{level} (id){on_delete});\n\
             CREATE INDEX d{next}_a_id ON d{next} (a_id);\nCREATE INDEX d{next}_b_id ON d{next} (b_id);\n"
        ));
    }
    for id in 1..=ROWS {
        sql.push_str(&format!("INSERT INTO d0 VALUES ({id});\n"));
    }
    for level in 0..LEVELS {
        // Rows spread over their parents, some on none: the roots' cascade reaches some rows of
        // every level by one path or by both, and leaves others.
        let parent = |id: usize, shift: usize| {
            if (id + shift).is_multiple_of(5) {
                "NULL".to_owned()
            } else {
                ((id * 5 + shift + level) % ROWS + 1).to_string()
            }
        };
        for id in 1..=ROWS {
            sql.push_str(&format!("INSERT INTO a{level} VALUES ({id}, {});\n", parent(id, 0)));
            sql.push_str(&format!("INSERT INTO b{level} VALUES ({id}, {});\n", parent(id, 1)));
        }
        for id in 1..=ROWS {
            let (a, b) = (parent(id, 2), parent(id, 3));
            sql.push_str(&format!("INSERT INTO d{} VALUES ({id}, {a}, {b});\n", level + 1));
        }
    }
    sql
}

/// Rows per table.
fn sizes(url: &str) -> BTreeMap<String, u64> {
    tables().into_iter().map(|table| (table.clone(), count(url, &format!("SELECT COUNT(*) FROM {table}")))).collect()
}

/// `counted`: whether `plan` counts the rows too (see the SQLite twin).
fn check_stacked_diamonds(databases: &Databases, counted: bool) {
    let url = databases.create(&schema(""));
    let native = databases.create(&schema(" ON DELETE CASCADE"));
    let dir = project(&[("cascades/diamonds.toml", &config())]);
    let before = sizes(&url);
    let models = tables().len();

    let mut plan_args = vec!["plan", "d0", "--database-url", &url];
    if counted {
        plan_args.extend(["--id", "1,2"]);
    }
    for format in ["text", "json", "mermaid", "dot", "html"] {
        let output = cascade(dir.path()).args(&plan_args).args(["--format", format]).output().unwrap();
        assert!(output.status.success(), "{format}: {}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).unwrap();
        // A form that expanded every path would hold a million copies of `d20`.
        assert!(text.len() < 5_000 * models, "{format}: {} bytes for {models} models", text.len());
        // Each level has two `d` nodes (by `a_id` and by `b_id`) whose children are shared.
        let nodes = 1 + 4 * LEVELS;
        // `d0` has two links; below it every `a`/`b` node has one to its `d` node, and both
        // nodes of each `d` link to the level's shared `a` and `b` nodes.
        let links = 2 + 2 * LEVELS + 4 * (LEVELS - 1);
        match format {
            "text" => {
                assert_eq!(text.lines().filter(|line| line.contains(" · step ")).count(), nodes, "{text}");
                assert_eq!(text.matches("children as under step").count(), LEVELS - 1, "{text}");
            }
            "mermaid" => {
                assert_eq!(text.lines().filter(|line| line.ends_with("\"]")).count(), nodes, "{text}");
                assert_eq!(text.lines().filter(|line| line.contains("-->")).count(), links, "{text}");
            }
            "dot" => {
                assert_eq!(text.lines().filter(|line| line.contains("[label=") && !line.contains("->")).count(), nodes);
                assert_eq!(text.lines().filter(|line| line.contains(" -> ")).count(), links, "{text}");
            }
            "html" => {
                assert_eq!(text.matches("<g class=\"node\"").count(), nodes);
                assert_eq!(text.matches("<g class=\"edge\"").count(), links);
            }
            _ => {}
        }
    }
    // `--sql` lists each step once: 81 steps, not a million.
    let sql =
        json_output(cascade(dir.path()).args(["plan", "d0", "--sql", "--format", "json", "--database-url", &url]));
    assert_eq!(sql["sql"].as_array().unwrap().len(), 1 + 4 * LEVELS);
    let plan = json_output(cascade(dir.path()).args(&plan_args).args(["--format", "json"]));
    let mut shown = 0;
    let mut references = 0;
    let mut stack = vec![&plan["tree"]];
    while let Some(node) = stack.pop() {
        shown += 1;
        assert_eq!(node["rows"].is_u64(), counted, "every node is counted: {node}");
        if let Some(step) = node.get("children_as_step") {
            references += 1;
            assert!(step.as_u64().unwrap() < node["step"].as_u64().unwrap(), "the first node shows them: {node}");
            assert_eq!(node["children"], serde_json::json!([]), "a reference repeats nothing: {node}");
        }
        stack.extend(node["children"].as_array().unwrap());
    }
    assert_eq!((shown, references), (1 + 4 * LEVELS, LEVELS - 1));

    let summary = json_output(
        cascade(dir.path())
            .args(["delete", "d0", "1", "2", "--confirm", "--format", "json"])
            .args(["--database-url", &url]),
    );
    texts(&native, "DELETE FROM d0 WHERE id IN (1, 2)");
    let after = sizes(&url);
    let mut deleted_deep = 0;
    for table in tables() {
        let deleted = before[&table] - after[&table];
        let reported = summary["deleted"].get(&table).and_then(Value::as_u64).unwrap_or(0);
        assert_eq!(reported, deleted, "{table}: reported and deleted rows");
        if counted {
            let planned = plan["totals"].get(&table).and_then(Value::as_u64).unwrap_or(0);
            assert_eq!(planned, deleted, "{table}: planned and deleted rows");
        }
        if table == format!("d{LEVELS}") {
            deleted_deep = deleted;
        }
    }
    assert!(deleted_deep > 0 && after[&format!("d{LEVELS}")] > 0, "the cascade reaches the last level and keeps some");
    let tool_tables = |url: &str| {
        let mut tables = dump(url);
        tables.retain(|name, _| !name.starts_with("cascade_"));
        tables
    };
    assert_eq!(tool_tables(&url), tool_tables(&native), "the rows ON DELETE CASCADE leaves");
}

// SQLite copies a `WITH` table's query into every query that reads it, so the counts' one
// statement grows with the paths there and refuses a million of them ("too many references"):
// on SQLite the plan is not counted.
on_each_database!(stacked_diamonds_on_sqlite(false), stacked_diamonds_on_postgres(true), |databases, counted| {
    check_stacked_diamonds(&databases, counted)
});
