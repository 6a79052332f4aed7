//! Tables that reference themselves (reply threads, hierarchies, version chains) are followed to
//! the end of each tree, as the database's own rules would: `init` keeps each self-reference's
//! action, `validate` is clean, and `delete` removes every descendant, children first, leaving
//! exactly what a native `DELETE` under `ON DELETE CASCADE` leaves (the oracle). The plan shows
//! the recursion once in every format and counts what the run deletes. A loop of rows is a clear
//! error, not a hang.

use crate::common;

use std::path::Path;

use common::databases::Databases;
use common::{cascade, json_output, on_each_database, project, texts, user_rows};

/// `init` → `validate` for the database at `url`, in a new project; the project.
fn initialised(url: &str) -> tempfile::TempDir {
    let dir = project(&[]);
    let init = cascade(dir.path()).args(["init", "--database-url", url, "--out", "cascades"]).output().unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let validate = cascade(dir.path()).args(["validate", "--database-url", url]).output().unwrap();
    assert!(validate.status.success(), "{}{}", String::from_utf8_lossy(&validate.stdout), config(dir.path()));
    dir
}

fn config(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cascades/cascade.toml")).unwrap()
}

/// Deletes `model` `id` with cascade in `url` and natively in `oracle`; the run's JSON, after
/// checking that the plan counted what the run deleted and both databases hold the same rows.
fn delete_as_the_oracle(dir: &Path, url: &str, oracle: &str, model: &str, id: &str) -> serde_json::Value {
    let plan = json_output(cascade(dir).args(["--database-url", url, "plan", model, "--id", id, "--format", "json"]));
    let run =
        json_output(cascade(dir).args(["--database-url", url, "delete", model, id, "--confirm", "--format", "json"]));
    assert_eq!(plan["totals"], run["deleted"], "plan: {plan}\nrun: {run}");
    assert_eq!(nonzero(&plan["nullify"]), nonzero(&run["nullified"]), "plan: {plan}\nrun: {run}");
    texts(oracle, &format!("DELETE FROM {model} WHERE id = {id}"));
    assert_eq!(user_rows(url), user_rows(oracle));
    run
}

/// The counts of a JSON object of counts that are not 0.
fn nonzero(counts: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    let counts = counts.as_object().cloned().unwrap_or_default();
    counts.into_iter().filter(|(_, count)| count.as_u64() != Some(0)).collect()
}

/// Shape 1: a version chain under `NO ACTION`, whose later versions belong to another document.
const REVISIONS: &str = "
    CREATE TABLE doc (id bigint PRIMARY KEY);
    CREATE TABLE revision (id bigint PRIMARY KEY, doc_id bigint NOT NULL REFERENCES doc (id) ON DELETE {action},
        previous_id bigint REFERENCES revision (id) ON DELETE {action});
    CREATE INDEX revision_doc ON revision (doc_id);
    CREATE INDEX revision_previous ON revision (previous_id);
    INSERT INTO doc VALUES (1), (2);
    INSERT INTO revision VALUES (10, 1, NULL), (11, 1, 10), (12, 2, 11), (13, 2, NULL);";

fn a_version_chain_goes_with_its_first_version(databases: &Databases) {
    let url = databases.create(&REVISIONS.replace("{action}", "NO ACTION"));
    let oracle = databases.create(&REVISIONS.replace("{action}", "CASCADE"));
    let dir = initialised(&url);
    assert!(
        config(dir.path()).contains("{ model = \"revision\", column = \"previous_id\" },"),
        "{}",
        config(dir.path())
    );
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "doc", "1");
    assert_eq!(run["deleted"]["revision"], 3, "10, 11 and 12, which belongs to doc 2: {run}");
    assert_eq!(run["nullified"], serde_json::json!({}), "{run}");
}

on_each_database!(
    a_version_chain_goes_with_its_first_version_on_sqlite,
    a_version_chain_goes_with_its_first_version_on_postgres,
    a_version_chain_goes_with_its_first_version_on_mariadb,
    |databases| a_version_chain_goes_with_its_first_version(&databases)
);

/// Shape 2: replies the schema deletes with `ON DELETE CASCADE`; `init` writes a delete, never a
/// nullify over it.
const COMMENTS: &str = "
    CREATE TABLE post (id bigint PRIMARY KEY);
    CREATE TABLE comment (id bigint PRIMARY KEY, post_id bigint NOT NULL REFERENCES post (id) ON DELETE CASCADE,
        parent_id bigint REFERENCES comment (id) ON DELETE CASCADE, body text);
    CREATE INDEX comment_post ON comment (post_id);
    CREATE INDEX comment_parent ON comment (parent_id);
    INSERT INTO post VALUES (1), (2);
    INSERT INTO comment VALUES (1, 1, NULL, 'a'), (2, 1, 1, 'b'), (3, 2, 2, 'reply on another post'),
        (4, 2, 3, 'deeper'), (5, 2, NULL, 'stays'), (6, 1, 6, 'points at itself');";

fn reply_threads_go_whole(databases: &Databases) {
    let url = databases.create(COMMENTS);
    let oracle = databases.create(COMMENTS);
    let dir = initialised(&url);
    assert!(!config(dir.path()).contains("nullify"), "{}", config(dir.path()));
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "comment", "1");
    assert_eq!(run["deleted"]["comment"], 4, "1 and its replies 2, 3 and 4: {run}");
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "post", "1");
    assert_eq!(run["deleted"]["comment"], 1, "the comment that points at itself: {run}");
}

on_each_database!(
    reply_threads_go_whole_on_sqlite,
    reply_threads_go_whole_on_postgres,
    reply_threads_go_whole_on_mariadb,
    |databases| { reply_threads_go_whole(&databases) }
);

/// Shape 3: a NOT NULL self-reference whose top rows point at themselves (`root`), beside a
/// nullable parent: neither is left out, and deleting a top row deletes its tree.
const ROOTED: &str = "
    CREATE TABLE category (id bigint PRIMARY KEY, parent_id bigint REFERENCES category (id),
        root_id bigint NOT NULL REFERENCES category (id));
    CREATE INDEX category_parent ON category (parent_id);
    CREATE INDEX category_root ON category (root_id);
    INSERT INTO category VALUES (1, NULL, 1), (2, 1, 1), (3, 2, 1), (4, NULL, 4), (5, 4, 4);";

fn self_pointing_top_rows_are_deleted_with_their_trees(databases: &Databases) {
    let url = databases.create(ROOTED);
    let oracle = databases
        .create(&ROOTED.replace("(id),", "(id) ON DELETE CASCADE,").replace("(id));", "(id) ON DELETE CASCADE);"));
    let dir = initialised(&url);
    assert!(!config(dir.path()).contains("left out"), "{}", config(dir.path()));
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "category", "2");
    assert_eq!(run["deleted"]["category"], 2, "{run}");
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "category", "1");
    assert_eq!(run["deleted"]["category"], 1, "{run}");
    assert_eq!(texts(&url, "SELECT CAST(COUNT(*) AS TEXT) FROM category")[0][0].as_deref(), Some("2"));
}

on_each_database!(
    self_pointing_top_rows_are_deleted_with_their_trees_on_sqlite,
    self_pointing_top_rows_are_deleted_with_their_trees_on_postgres,
    self_pointing_top_rows_are_deleted_with_their_trees_on_mariadb,
    |databases| self_pointing_top_rows_are_deleted_with_their_trees(&databases)
);

/// Root ids that are each other's ancestors, in one chunk, under `RESTRICT` (checked at once for
/// each row): each goes after its descendants.
fn roots_below_each_other_go_leaves_first(databases: &Databases) {
    let ddl = "CREATE TABLE node (id bigint PRIMARY KEY, parent_id bigint REFERENCES node (id) ON DELETE RESTRICT);
        CREATE INDEX node_parent ON node (parent_id);
        INSERT INTO node VALUES (1, NULL), (2, 1), (3, 2), (4, 3), (5, 1);";
    let url = databases.create(ddl);
    let dir = initialised(&url);
    let run = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "delete",
        "node",
        "4,2,1",
        "--confirm",
        "--format",
        "json",
    ]));
    assert_eq!(run["deleted"]["node"], 5, "{run}");
}

on_each_database!(
    roots_below_each_other_go_leaves_first_on_sqlite,
    roots_below_each_other_go_leaves_first_on_postgres,
    roots_below_each_other_go_leaves_first_on_mariadb,
    |databases| roots_below_each_other_go_leaves_first(&databases)
);

/// Rows of one table that reference each other in a loop (1 → 3 → 2 → 1), with a tree hanging
/// below one of them: the tree goes first, then the loop's rows together (one statement on each
/// database, so `RESTRICT` takes it too), as the database's own cascade deletes them.
const NODE_LOOP: &str =
    "CREATE TABLE node (id bigint PRIMARY KEY, parent_id bigint REFERENCES node (id) ON DELETE {action});
    CREATE INDEX node_parent ON node (parent_id);
    INSERT INTO node VALUES (1, NULL), (2, 1), (3, 2), (4, 2), (5, 4), (6, NULL);
    UPDATE node SET parent_id = 3 WHERE id = 1;";

fn a_loop_of_rows_goes_together(databases: &Databases) {
    for action in ["NO ACTION", "RESTRICT"] {
        let url = databases.create(&NODE_LOOP.replace("{action}", action));
        let oracle = databases.create(&NODE_LOOP.replace("{action}", "CASCADE"));
        let dir = initialised(&url);
        let run = delete_as_the_oracle(dir.path(), &url, &oracle, "node", "1");
        assert_eq!(run["deleted"]["node"], 5, "{action}: the loop 1, 2, 3 and the tree 4, 5 below it: {run}");
    }
}

on_each_database!(
    a_loop_of_rows_goes_together_on_sqlite,
    a_loop_of_rows_goes_together_on_postgres,
    a_loop_of_rows_goes_together_on_mariadb,
    |databases| { a_loop_of_rows_goes_together(&databases) }
);

/// The recursive step is shown once, as recursive, in every format, with its depth: the levels
/// of rows below those the plan's other steps reach (the top rows: here the root).
#[test]
fn every_plan_format_shows_the_recursion_once_with_its_depth() {
    let dir = project(&[]);
    // A chain of 5 levels below the root row 1, and a row of another tree.
    let url = common::sqlite_database(
        dir.path(),
        "CREATE TABLE node (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES node (id));
         CREATE INDEX node_parent ON node (parent_id);
         INSERT INTO node VALUES (1, NULL), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, NULL), (8, 7);",
    );
    let dir = initialised(&url);
    let plan = |format: &str| {
        let output = cascade(dir.path())
            .args(["--database-url", &url, "plan", "node", "--id", "1", "--format", format])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let text = plan("text");
    assert_eq!(text.matches("recursive").count(), 1, "{text}");
    assert!(
        text.contains(
            "node by parent_id · step 1 · delete · recursive (again under each row, to the end of the tree) · depth 5 ·"
        ),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&plan("json")).unwrap();
    let tree = &json["tree"]["children"][0];
    assert_eq!((tree["recursive"].as_bool(), tree["rows"].as_u64()), (Some(true), Some(5)), "{json}");
    assert_eq!(tree["tree_depth"], 5, "{json}");
    assert!(json["tree"].get("tree_depth").is_none(), "only a recursive step has a depth: {json}");
    assert_eq!(json["totals"]["node"], 6, "{json}");
    let mermaid = plan("mermaid");
    assert!(mermaid.contains("delete · recursive · depth 5 ·"), "{mermaid}");
    assert!(mermaid.contains("|\"parent_id, again\"|"), "{mermaid}");
    let dot = plan("dot");
    assert!(dot.contains("delete · recursive · depth 5 ·"), "{dot}");
    assert!(dot.contains("[label=\"parent_id, again\", style=dotted]"), "{dot}");
    let html = plan("html");
    assert!(html.contains("recursive: again under each row, depth 5"), "the HTML plan's box says so");
    // Without a database there is no depth to show.
    let uncounted = cascade(dir.path()).args(["plan", "node", "--format", "json"]).output().unwrap();
    let uncounted: serde_json::Value = serde_json::from_slice(&uncounted.stdout).unwrap();
    assert!(uncounted["tree"]["children"][0].get("tree_depth").is_none(), "{uncounted}");
}

/// The depth of reply threads is their longest chain below the rows the plan reaches: post 1's
/// comments are 1, 2 (a reply to 1) and 6 (which points at itself, so is below nothing), and
/// 3 and 4 reply below 2, three levels below 1.
fn a_thread_s_depth_is_its_longest_chain(databases: &Databases) {
    let url = databases.create(COMMENTS);
    let dir = initialised(&url);
    let plan = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "plan",
        "post",
        "--id",
        "1",
        "--format",
        "json",
    ]));
    let tree = &plan["tree"]["children"][0]["children"][0];
    assert_eq!((tree["rows"].as_u64(), tree["tree_depth"].as_u64()), (Some(2), Some(3)), "replies 3 and 4: {plan}");
    assert_eq!(plan["totals"]["comment"], 5, "{plan}");
}

on_each_database!(
    a_thread_s_depth_is_its_longest_chain_on_sqlite,
    a_thread_s_depth_is_its_longest_chain_on_postgres,
    a_thread_s_depth_is_its_longest_chain_on_mariadb,
    |databases| a_thread_s_depth_is_its_longest_chain(&databases)
);

/// A row the plan deletes is counted deleted only: the nullify step of a model the plan also
/// deletes counts (in the tree as in the totals) only the rows that stay, which is what the run
/// nullifies when the deletes come first.
fn a_deleted_row_is_never_counted_nullified(databases: &Databases) {
    let ddl = "CREATE TABLE project (id bigint PRIMARY KEY);
        CREATE TABLE releases (id bigint PRIMARY KEY, project_id bigint NOT NULL REFERENCES project (id));
        CREATE TABLE grp (id bigint PRIMARY KEY, project_id bigint NOT NULL REFERENCES project (id),
            first_release_id bigint REFERENCES releases (id) ON DELETE SET NULL);
        CREATE INDEX release_project ON releases (project_id);
        CREATE INDEX grp_project ON grp (project_id);
        CREATE INDEX grp_release ON grp (first_release_id);
        INSERT INTO project VALUES (1), (2);
        INSERT INTO releases VALUES (10, 1), (20, 2);
        INSERT INTO grp VALUES (1, 1, 10), (2, 1, 20), (3, 2, 10), (4, 2, NULL);";
    let url = databases.create(ddl);
    let config = r#"
[models.project]
table = "project"
children = [{ model = "grp", column = "project_id" }, { model = "release", column = "project_id" }]

[models.release]
table = "releases"
children = [{ model = "grp", column = "first_release_id", on_delete = "nullify" }]

[models.grp]
table = "grp"
strategy = "bulk"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let plan = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "plan",
        "project",
        "--id",
        "1",
        "--format",
        "json",
    ]));
    let release = &plan["tree"]["children"][1];
    assert_eq!(release["children"][0]["rows"], 1, "group 3 stays and loses its release; 1 is deleted: {plan}");
    assert_eq!((&plan["totals"]["grp"], &plan["nullify"]["grp"]), (&2.into(), &1.into()), "{plan}");
    let run = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "delete",
        "project",
        "1",
        "--confirm",
        "--format",
        "json",
    ]));
    assert_eq!((&run["deleted"]["grp"], &run["nullified"]["grp"]), (&2.into(), &1.into()), "{run}");
}

/// Shape 4 under a tree: a reply quoting another comment of the same thread loses its quote
/// when the quoted comment goes, and is itself deleted later in the run. The run reports it
/// deleted only, as the plan does, and keeps no record of it afterwards; the reply in another
/// thread keeps its row and loses its quote, counted once.
fn a_quote_nullified_inside_a_deleted_thread_counts_as_deleted(databases: &Databases) {
    const QUOTES: &str = "
        CREATE TABLE post (id bigint PRIMARY KEY);
        CREATE TABLE comment (id bigint PRIMARY KEY, post_id bigint NOT NULL REFERENCES post (id) ON DELETE CASCADE,
            parent_id bigint REFERENCES comment (id) ON DELETE CASCADE,
            quoted_id bigint REFERENCES comment (id) ON DELETE SET NULL);
        CREATE INDEX comment_post ON comment (post_id);
        CREATE INDEX comment_parent ON comment (parent_id);
        CREATE INDEX comment_quoted ON comment (quoted_id);
        INSERT INTO post VALUES (1), (2);
        INSERT INTO comment VALUES (1, 1, NULL, NULL), (2, 1, 1, NULL), (3, 1, 2, 2), (4, 1, 3, 1),
            (5, 2, NULL, 1), (6, 2, 5, 3);";
    let url = databases.create(QUOTES);
    let oracle = databases.create(QUOTES);
    let dir = initialised(&url);
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "post", "1");
    assert_eq!((&run["deleted"]["comment"], &run["nullified"]["comment"]), (&4.into(), &2.into()), "{run}");
    assert_eq!(texts(&url, "SELECT CAST(COUNT(*) AS TEXT) FROM cascade_nullified_row"), [[Some("0".to_owned())]]);
}

on_each_database!(
    a_quote_nullified_inside_a_deleted_thread_counts_as_deleted_on_sqlite,
    a_quote_nullified_inside_a_deleted_thread_counts_as_deleted_on_postgres,
    a_quote_nullified_inside_a_deleted_thread_counts_as_deleted_on_mariadb,
    |databases| a_quote_nullified_inside_a_deleted_thread_counts_as_deleted(&databases)
);

on_each_database!(
    a_deleted_row_is_never_counted_nullified_on_sqlite,
    a_deleted_row_is_never_counted_nullified_on_postgres,
    a_deleted_row_is_never_counted_nullified_on_mariadb,
    |databases| a_deleted_row_is_never_counted_nullified(&databases)
);

/// A chain `depth` rows deep, 1 at the top: as DDL that makes the rows in the database itself.
fn chain(depth: u64) -> String {
    format!(
        "CREATE TABLE node (id bigint PRIMARY KEY, parent_id bigint REFERENCES node (id));
         CREATE INDEX node_parent ON node (parent_id);
         INSERT INTO node WITH RECURSIVE level (id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM level WHERE id < {depth})
         SELECT id, NULLIF(id - 1, 0) FROM level;"
    )
}

/// kill -9 in the middle of a chain 100,000 rows deep (10,000 on PostgreSQL, whose round trips
/// make the debug build's run several minutes long; both are deeper than the levels the executor
/// keeps, so the levels above are dropped and rebuilt), then the same command again: the first
/// run leaves a shorter chain (children first: never a row without its parent), the second
/// finishes it.
fn a_chain_killed_midway_is_finished_by_running_it_again(databases: &Databases) {
    let depth: i64 = if databases.is_sqlite() { 100_000 } else { 10_000 };
    let url = databases.create(&chain(depth as u64));
    let dir = initialised(&url);
    let args = ["--database-url", url.as_str(), "delete", "node", "1", "--confirm"];
    let mut run = common::running::Running::start(dir.path(), &args);
    for _ in 0..50 {
        run.expect(common::running::CHUNK_COMMITTED);
    }
    run.kill();
    let left = texts(&url, "SELECT CAST(COUNT(*) AS TEXT), CAST(MAX(id) AS TEXT) FROM node");
    let (count, deepest): (i64, i64) =
        (left[0][0].as_deref().unwrap().parse().unwrap(), left[0][1].as_deref().unwrap().parse().unwrap());
    assert!(count < depth && count > 0, "the kill came midway: {count} rows left");
    assert_eq!(deepest, count, "the deepest rows went first, one level at a time: {count} rows up to {deepest}");
    let again = cascade(dir.path()).args(args).output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(texts(&url, "SELECT CAST(COUNT(*) AS TEXT) FROM node")[0][0].as_deref(), Some("0"));
}

on_each_database!(
    a_chain_killed_midway_is_finished_by_running_it_again_on_sqlite,
    a_chain_killed_midway_is_finished_by_running_it_again_on_postgres,
    a_chain_killed_midway_is_finished_by_running_it_again_on_mariadb,
    |databases| a_chain_killed_midway_is_finished_by_running_it_again(&databases)
);

/// A tree deeper than the levels the executor keeps, with branches off its spine, notes on
/// some rows and a second tree that stays: what cascade leaves is what following every parent
/// link in the test leaves (SQLite's own cascade stops at 1,000 levels, "too many levels of
/// trigger recursion", so it cannot be the oracle here), and the plan counts what the run deletes.
/// The levels dropped are rebuilt from the rows below them, whose parents are fewer than the
/// level's rows where a branch forks.
fn a_tree_deeper_than_the_levels_kept_goes_whole(databases: &Databases) {
    const SPINE: u64 = 2_600;
    let mut random = common::random::Random::seeded(41);
    let mut parents: Vec<(u64, Option<u64>)> = Vec::new();
    let mut next = SPINE + 1;
    for id in 1..=SPINE {
        parents.push((id, (id > 1).then(|| id - 1)));
        if random.chance(20) {
            // A branch: a short chain, forked again here and there.
            let mut parent = id;
            for _ in 0..random.below(30) + 1 {
                parents.push((next, Some(parent)));
                if random.chance(70) {
                    parent = next;
                }
                next += 1;
            }
        }
    }
    // A second tree, which stays.
    parents.extend([(next, None), (next + 1, Some(next))]);
    let notes: Vec<(u64, u64)> =
        (1..next + 2).filter(|_| random.chance(10)).enumerate().map(|(n, id)| (n as u64 + 1, id)).collect();
    let values = |rows: Vec<String>| rows.join(", ");
    let url = databases.create(&format!(
        "CREATE TABLE node (id bigint PRIMARY KEY, parent_id bigint REFERENCES node (id));
         CREATE INDEX node_parent ON node (parent_id);
         CREATE TABLE note (id bigint PRIMARY KEY, node_id bigint NOT NULL REFERENCES node (id));
         CREATE INDEX note_node ON note (node_id);
         INSERT INTO node VALUES {};
         INSERT INTO note VALUES {};",
        values(
            parents
                .iter()
                .map(|(id, parent)| format!("({id}, {})", parent.map_or("NULL".into(), |p| p.to_string())))
                .collect()
        ),
        values(notes.iter().map(|(id, node)| format!("({id}, {node})")).collect()),
    ));
    // The oracle: the rows below node 1, by following each parent link.
    let mut gone = std::collections::BTreeSet::from([1]);
    for (id, parent) in &parents {
        // Children come after their parents in `parents`.
        if parent.is_some_and(|parent| gone.contains(&parent)) {
            gone.insert(*id);
        }
    }
    let dir = initialised(&url);
    let plan = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "plan",
        "node",
        "--id",
        "1",
        "--format",
        "json",
    ]));
    let run = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "delete",
        "node",
        "1",
        "--confirm",
        "--format",
        "json",
    ]));
    assert_eq!(plan["totals"], run["deleted"], "plan: {plan}\nrun: {run}");
    let ids = |sql: &str| -> Vec<u64> {
        texts(&url, sql).into_iter().map(|row| row[0].as_deref().unwrap().parse().unwrap()).collect()
    };
    let kept_nodes: Vec<u64> = parents.iter().map(|(id, _)| *id).filter(|id| !gone.contains(id)).collect();
    let kept_notes: Vec<u64> = notes.iter().filter(|(_, node)| !gone.contains(node)).map(|(id, _)| *id).collect();
    assert_eq!(ids("SELECT CAST(id AS TEXT) FROM node ORDER BY id"), kept_nodes);
    assert_eq!(ids("SELECT CAST(id AS TEXT) FROM note ORDER BY id"), kept_notes);
    assert_eq!(run["deleted"]["node"], gone.len(), "{run}");
}

on_each_database!(
    a_tree_deeper_than_the_levels_kept_goes_whole_on_sqlite,
    a_tree_deeper_than_the_levels_kept_goes_whole_on_postgres,
    a_tree_deeper_than_the_levels_kept_goes_whole_on_mariadb,
    |databases| a_tree_deeper_than_the_levels_kept_goes_whole(&databases)
);

/// A loop of rows longer than the levels the executor keeps never repeats on its path: the walk
/// up from the levels it drops finds it, and the deletion stops with the loop error, having
/// deleted nothing, instead of going round for ever.
fn a_loop_longer_than_the_levels_kept_is_refused(databases: &Databases) {
    let url = databases.create(&format!("{}\nUPDATE node SET parent_id = 3000 WHERE id = 1;", chain(3_000)));
    let dir = initialised(&url);
    let run = cascade(dir.path()).args(["--database-url", &url, "delete", "node", "2", "--confirm"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("rows reference each other in a loop"), "{stderr}");
    assert_eq!(texts(&url, "SELECT CAST(COUNT(*) AS TEXT) FROM node")[0][0].as_deref(), Some("3000"));
}

on_each_database!(
    a_loop_longer_than_the_levels_kept_is_refused_on_sqlite,
    a_loop_longer_than_the_levels_kept_is_refused_on_postgres,
    a_loop_longer_than_the_levels_kept_is_refused_on_mariadb,
    |databases| a_loop_longer_than_the_levels_kept_is_refused(&databases)
);

/// A delete cycle through two tables: a store's manager is a staff member of another store.
/// `init` writes both keys as delete relations (the one closing the cycle commented), and deleting
/// a store deletes the stores its staff manage, their staff, and so on, as the database would.
const STORES: &str = "
    CREATE TABLE store (id bigint PRIMARY KEY);
    CREATE TABLE staff (id bigint PRIMARY KEY, store_id bigint NOT NULL REFERENCES store (id) ON DELETE {action});
    CREATE TABLE rental (id bigint PRIMARY KEY, staff_id bigint NOT NULL REFERENCES staff (id) ON DELETE {action});
    ALTER TABLE store ADD COLUMN manager_staff_id bigint REFERENCES staff (id) ON DELETE {action};
    CREATE INDEX staff_store ON staff (store_id);
    CREATE INDEX rental_staff ON rental (staff_id);
    CREATE INDEX store_manager ON store (manager_staff_id);
    INSERT INTO store (id) VALUES (1), (2), (3), (4);
    INSERT INTO staff VALUES (10, 1), (11, 1), (20, 2), (30, 3), (40, 4);
    INSERT INTO rental VALUES (100, 10), (101, 11), (200, 20), (300, 30), (400, 40);
    UPDATE store SET manager_staff_id = 10 WHERE id = 2;
    UPDATE store SET manager_staff_id = 20 WHERE id = 3;";

fn a_cycle_of_tables_is_followed_to_its_end(databases: &Databases) {
    let url = databases.create(&STORES.replace("{action}", "NO ACTION"));
    let oracle = databases.create(&STORES.replace("{action}", "CASCADE"));
    let dir = initialised(&url);
    assert!(config(dir.path()).contains("# closes the cycle"), "{}", config(dir.path()));
    let text = cascade(dir.path()).args(["--database-url", &url, "plan", "store", "--id", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("store by manager_staff_id · step 2 · delete · recursive"), "{text}");
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "store", "1");
    assert_eq!(
        (&run["deleted"]["store"], &run["deleted"]["staff"], &run["deleted"]["rental"]),
        (&serde_json::json!(3), &serde_json::json!(4), &serde_json::json!(4)),
        "stores 1, 2 and 3 with their staff and rentals: {run}"
    );
    assert_eq!(texts(&url, "SELECT CAST(id AS TEXT) FROM store")[0][0].as_deref(), Some("4"));
}

on_each_database!(
    a_cycle_of_tables_is_followed_to_its_end_on_sqlite,
    a_cycle_of_tables_is_followed_to_its_end_on_postgres,
    a_cycle_of_tables_is_followed_to_its_end_on_mariadb,
    |databases| a_cycle_of_tables_is_followed_to_its_end(&databases)
);

/// Store 1's manager works at store 1: a loop of rows through two tables goes together, in one
/// statement on PostgreSQL and with the checks deferred to the commit on SQLite, after every
/// other row below it.
fn a_loop_through_a_cycle_of_tables_goes_together(databases: &Databases) {
    let looped = |action: &str| {
        format!("{}\nUPDATE store SET manager_staff_id = 11 WHERE id = 1;", STORES.replace("{action}", action))
    };
    let url = databases.create(&looped("NO ACTION"));
    let oracle = databases.create(&looped("CASCADE"));
    let dir = initialised(&url);
    let run = delete_as_the_oracle(dir.path(), &url, &oracle, "store", "1");
    assert_eq!(run["deleted"]["store"], 3, "{run}");
}

on_each_database!(
    a_loop_through_a_cycle_of_tables_goes_together_on_sqlite,
    a_loop_through_a_cycle_of_tables_goes_together_on_postgres,
    a_loop_through_a_cycle_of_tables_goes_together_on_mariadb,
    |databases| a_loop_through_a_cycle_of_tables_goes_together(&databases)
);

/// The rows of a loop go with their tombstones and archive lines, one of each per row, like any
/// chunk's.
fn a_loop_of_rows_leaves_a_tombstone_and_an_archive_line_per_row(databases: &Databases) {
    let url = databases.create(&NODE_LOOP.replace("{action}", "NO ACTION"));
    let config = "[models.node]\ntable = \"node\"\noutbox = \"node_deleted\"\n\
                  children = [{ model = \"node\", column = \"parent_id\" }]\n\n\
                  [outbox.scopes.nodes]\nshard_key = \"id\"\ncategories = [\"node_deleted\"]\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let archive = dir.path().join("archive");
    let run =
        json_output(cascade(dir.path()).args(["--database-url", &url, "delete", "node", "1", "--confirm"]).args([
            "--format".as_ref(),
            "json".as_ref(),
            "--archive".as_ref(),
            archive.as_os_str(),
        ]));
    assert_eq!(run["deleted"]["node"], 5, "{run}");
    let tombstones = texts(&url, "SELECT object_identifier FROM cascade_outbox ORDER BY object_identifier");
    let tombstones: Vec<&str> = tombstones.iter().filter_map(|row| row[0].as_deref()).collect();
    assert_eq!(tombstones, vec!["1", "2", "3", "4", "5"]);
    let files: Vec<_> = std::fs::read_dir(&archive).unwrap().map(|entry| entry.unwrap().path()).collect();
    let zcat = std::process::Command::new("zcat").args(&files).output().unwrap();
    assert!(zcat.status.success(), "{}", String::from_utf8_lossy(&zcat.stderr));
    let lines = String::from_utf8(zcat.stdout).unwrap();
    let mut archived: Vec<i64> = lines
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["row"]["id"].as_i64().unwrap())
        .collect();
    archived.sort_unstable();
    assert_eq!(archived, vec![1, 2, 3, 4, 5]);
}

on_each_database!(
    a_loop_of_rows_leaves_a_tombstone_and_an_archive_line_per_row_on_sqlite,
    a_loop_of_rows_leaves_a_tombstone_and_an_archive_line_per_row_on_postgres,
    a_loop_of_rows_leaves_a_tombstone_and_an_archive_line_per_row_on_mariadb,
    |databases| a_loop_of_rows_leaves_a_tombstone_and_an_archive_line_per_row(&databases)
);
