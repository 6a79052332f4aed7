//! `init` → `validate` → `delete --confirm` on seeded random schemas, on SQLite, PostgreSQL and
//! MariaDB,
//! each deletion compared with an independent oracle: the same schema and rows in a second
//! database where every `NO ACTION`/`RESTRICT` foreign key is `ON DELETE CASCADE` (the others as
//! declared), the root deleted with one native `DELETE`. Every table must hold the same rows
//! afterwards, and the plan's counts must be the run's: its totals the rows deleted, its `nullify`
//! the rows nullified (each once, none that the run deletes).
//!
//! The schemas have every foreign-key action, composite foreign keys (to a composite primary key
//! and to a unique pair of columns), foreign keys to unique columns that are not the key,
//! diamonds (a table reached from another by several paths), and self-references of every action
//! (nullable and NOT NULL, by the key or by a unique column), whose rows form trees, some of whose
//! top rows point at themselves, and delete cycles through two and three tables (a nullable
//! `back_id` of every action to a later table that references the first), some of whose rows
//! reference each other in loops. Some leaf tables are guarded by a `BEFORE DELETE` trigger that
//! lets only the database's own `ON DELETE CASCADE` delete their rows (in both databases: the
//! oracle deletes natively, so its trigger lets it): all their foreign keys cascade, `init` leaves
//! them to the database (`on_delete = "database"`), and they are never roots. They are leaves
//! without a tree of rows: what the database deletes below a guarded row, neither the plan nor
//! the run counts (docs/DECISIONS.md).

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use common::databases::Databases;
use common::random::Random;
use common::{cascade, json_output, on_each_database, texts, user_rows};

/// How many schemas, and how many roots deleted in each.
const SCHEMAS: u64 = 50;
const ROOTS_PER_SCHEMA: usize = 9;

/// A table of a generated schema.
struct Table {
    name: String,
    /// Keyed by `(a, b)` rather than `id` (never a root: a root is named by one id).
    composite: bool,
    /// Only the database's cascade may delete its rows (never a root either, never a parent).
    guarded: bool,
    /// Each row's values, by column, as SQL literals.
    rows: Vec<BTreeMap<String, String>>,
    /// The foreign keys to other tables, and the relation of the table to itself:
    /// (columns, parent table, parent columns).
    references: Vec<(Vec<String>, String, Vec<String>)>,
}

/// A generated schema: the DDL of both databases and the rows.
struct Generated {
    /// The schema as declared (the tool's database).
    ddl: String,
    /// The same with every `NO ACTION`/`RESTRICT` key `ON DELETE CASCADE` (the oracle's).
    oracle_ddl: String,
    inserts: String,
    /// (table, id) of every row that may be a root.
    roots: Vec<(String, i64)>,
    /// How many rows close a loop of rows.
    loops: u64,
    /// How many tables are guarded by a trigger.
    guarded: usize,
}

/// A generated foreign key: (columns, parent table, parent columns, action, nullable).
type Key = (Vec<String>, String, Vec<String>, &'static str, bool);

const ACTIONS: [&str; 4] = ["NO ACTION", "RESTRICT", "CASCADE", "SET NULL"];

/// The trigger function of guarded tables on PostgreSQL: a delete passes only inside a foreign
/// key's cascade (a trigger below another trigger).
const CASCADE_ONLY: &str = "CREATE FUNCTION cascade_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'only the database deletes these rows';
    END IF;
    RETURN NULL;
END $$;
";

/// Which database a schema is generated for: their DDL differs.
#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

impl Dialect {
    fn of(databases: &Databases) -> Self {
        if databases.is_sqlite() {
            Dialect::Sqlite
        } else if databases.is_mysql() {
            Dialect::Mysql
        } else {
            Dialect::Postgres
        }
    }

    /// Whether a tree's key of `action` is nullable on this database: InnoDB refuses to delete a
    /// row that references itself by a key it checks row by row, and with its checks off it
    /// cascades to no child; cascade sets such a key to NULL first where children only the
    /// database deletes need its checks on, which a NOT NULL key refuses (docs/DECISIONS.md).
    fn tree_key_nullable(self, action: &str) -> bool {
        self == Dialect::Mysql && matches!(action, "NO ACTION" | "RESTRICT")
    }

    /// A text column's type: InnoDB keys no `text` column a foreign key can reference.
    fn text(self) -> &'static str {
        if self == Dialect::Mysql { "varchar(64)" } else { "text" }
    }
}

/// The trigger that guards `table`, whose foreign keys are `keys`. SQLite has no trigger depth: a
/// row may go once one of its parents is gone, as it is when the database cascades from it.
/// InnoDB's cascades fire no trigger: every other delete is refused.
fn guard(table: &str, keys: &[Key], dialect: Dialect) -> String {
    if dialect == Dialect::Mysql {
        return format!(
            "CREATE TRIGGER {table}_only_by_cascade BEFORE DELETE ON {table} FOR EACH ROW \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'only the database deletes these rows';\n"
        );
    }
    if dialect == Dialect::Postgres {
        return format!(
            "CREATE TRIGGER {table}_only_by_cascade BEFORE DELETE ON {table} FOR EACH STATEMENT \
             EXECUTE FUNCTION cascade_only();\n"
        );
    }
    let gone: Vec<String> = keys
        .iter()
        .map(|(own, parent, referenced, ..)| {
            let not_null: Vec<String> = own.iter().map(|column| format!("OLD.{column} IS NOT NULL")).collect();
            let matching: Vec<String> =
                own.iter().zip(referenced).map(|(column, target)| format!("{target} = OLD.{column}")).collect();
            format!(
                "({} AND NOT EXISTS (SELECT 1 FROM {parent} WHERE {}))",
                not_null.join(" AND "),
                matching.join(" AND ")
            )
        })
        .collect();
    format!(
        "CREATE TRIGGER {table}_only_by_cascade BEFORE DELETE ON {table} BEGIN \
         SELECT RAISE(ABORT, 'only the database deletes these rows') WHERE NOT ({}); END;\n",
        gone.join(" OR ")
    )
}

fn generate(random: &mut Random, dialect: Dialect) -> Generated {
    let count = 3 + random.below(5) as usize;
    let mut tables: Vec<Table> = Vec::new();
    let (mut ddl, mut oracle_ddl) = (String::new(), String::new());
    if dialect == Dialect::Postgres {
        ddl.push_str(CASCADE_ONLY);
        oracle_ddl.push_str(CASCADE_ONLY);
    }
    for index in 0..count {
        let name = format!("t{index}");
        let composite = index > 0 && random.chance(25);
        let guarded = index > 0 && random.chance(25);
        let mut columns: Vec<String> = if composite {
            vec!["a integer NOT NULL".into(), "b integer NOT NULL".into()]
        } else {
            vec![
                "id bigint PRIMARY KEY".into(),
                format!("code {} NOT NULL UNIQUE", dialect.text()),
                "x integer".into(),
                "y integer".into(),
            ]
        };
        let mut keys: Vec<Key> = Vec::new();
        let parents = if index == 0 { 0 } else { 1 + random.below(3) };
        for number in 0..parents {
            // A guarded table is a leaf: the one before a guarded pick (table 0 is never guarded).
            let parent = random.below(index as u64) as usize;
            let parent = (0..=parent).rev().find(|&p| !tables[p].guarded).expect("table 0 is never guarded");
            let action = ACTIONS[random.below(4) as usize];
            let action = if guarded { "CASCADE" } else { action };
            let nullable = action == "SET NULL" || random.chance(40);
            let null = if nullable { "" } else { " NOT NULL" };
            let target = &tables[parent];
            let (own, referenced): (Vec<String>, Vec<String>) = if target.composite {
                let own = vec![format!("p{number}_a"), format!("p{number}_b")];
                columns.push(format!("{} integer{null}", own[0]));
                columns.push(format!("{} integer{null}", own[1]));
                (own, vec!["a".into(), "b".into()])
            } else {
                match random.below(3) {
                    0 => {
                        columns.push(format!("p{number}_id bigint{null}"));
                        (vec![format!("p{number}_id")], vec!["id".into()])
                    }
                    1 => {
                        columns.push(format!("p{number}_code {}{null}", dialect.text()));
                        (vec![format!("p{number}_code")], vec!["code".into()])
                    }
                    _ => {
                        columns.push(format!("p{number}_x integer{null}"));
                        columns.push(format!("p{number}_y integer{null}"));
                        (vec![format!("p{number}_x"), format!("p{number}_y")], vec!["x".into(), "y".into()])
                    }
                }
            };
            keys.push((own, target.name.clone(), referenced, action, nullable));
        }
        // A tree of rows: (column, the column it references, action, nullable).
        let tree = (!composite && !guarded && random.chance(40)).then(|| {
            let action = ACTIONS[random.below(4) as usize];
            let nullable = action == "SET NULL" || dialect.tree_key_nullable(action) || random.chance(50);
            let (column, referenced) = if random.chance(30) { ("parent_code", "code") } else { ("parent_id", "id") };
            let kind = if column == "parent_code" { dialect.text() } else { "bigint" };
            columns.push(format!("{column} {kind}{}", if nullable { "" } else { " NOT NULL" }));
            (column, referenced, action, nullable)
        });
        let mut constraints: Vec<(String, String)> = Vec::new();
        if composite {
            constraints.push(("PRIMARY KEY (a, b)".into(), "PRIMARY KEY (a, b)".into()));
        } else {
            constraints.push(("UNIQUE (x, y)".into(), "UNIQUE (x, y)".into()));
        }
        for (number, (own, parent, referenced, action, _)) in keys.iter().enumerate() {
            let oracle_action = if matches!(*action, "NO ACTION" | "RESTRICT") { "CASCADE" } else { action };
            let head = format!(
                "CONSTRAINT {name}_fk{number} FOREIGN KEY ({}) REFERENCES {parent} ({})",
                own.join(", "),
                referenced.join(", ")
            );
            constraints.push((format!("{head} ON DELETE {action}"), format!("{head} ON DELETE {oracle_action}")));
        }
        if let Some((column, referenced, action, _)) = tree {
            let oracle_action = if matches!(action, "NO ACTION" | "RESTRICT") { "CASCADE" } else { action };
            let head = format!("CONSTRAINT {name}_parent FOREIGN KEY ({column}) REFERENCES {name} ({referenced})");
            constraints.push((format!("{head} ON DELETE {action}"), format!("{head} ON DELETE {oracle_action}")));
        }
        let body = |oracle: bool| {
            let mut parts = columns.clone();
            parts.extend(constraints.iter().map(|(own, other)| if oracle { other.clone() } else { own.clone() }));
            format!("CREATE TABLE {name} ({});\n", parts.join(", "))
        };
        ddl.push_str(&body(false));
        oracle_ddl.push_str(&body(true));
        if guarded {
            let trigger = guard(&name, &keys, dialect);
            ddl.push_str(&trigger);
            oracle_ddl.push_str(&trigger);
        }
        // Every relation column gets an index, as a real schema's would.
        let mut indexed: Vec<String> = keys.iter().map(|(own, ..)| own.join(", ")).collect();
        indexed.extend(tree.map(|(column, ..)| column.to_owned()));
        for (number, columns) in indexed.iter().enumerate() {
            let index_sql = format!("CREATE INDEX {name}_fk{number}_idx ON {name} ({columns});\n");
            ddl.push_str(&index_sql);
            oracle_ddl.push_str(&index_sql);
        }

        let mut rows = Vec::new();
        for row in 0..(2 + random.below(6) as i64) {
            let mut values = BTreeMap::new();
            if composite {
                values.insert("a".to_owned(), (row + 1).to_string());
                values.insert("b".to_owned(), ((row * 7) % 5).to_string());
            } else {
                let id = (index as i64 + 1) * 1000 + row;
                values.insert("id".to_owned(), id.to_string());
                values.insert("code".to_owned(), format!("'c{id}'"));
                values.insert("x".to_owned(), id.to_string());
                values.insert("y".to_owned(), (row % 3).to_string());
            }
            for (own, parent, referenced, _, nullable) in &keys {
                let parent = tables.iter().find(|table| &table.name == parent).expect("a parent table");
                let picked = (!(*nullable && random.chance(20)))
                    .then(|| &parent.rows[random.below(parent.rows.len() as u64) as usize]);
                for (column, target) in own.iter().zip(referenced) {
                    let value = picked.map_or_else(|| "NULL".to_owned(), |row| row[target].clone());
                    values.insert(column.clone(), value);
                }
            }
            if let Some((column, referenced, _, nullable)) = tree {
                // Below an earlier row, else a top row: NULL, or pointing at itself (always, where
                // the column is NOT NULL).
                let value = if !rows.is_empty() && random.chance(65) {
                    let earlier: &BTreeMap<String, String> = &rows[random.below(rows.len() as u64) as usize];
                    earlier[referenced].clone()
                } else if nullable && !random.chance(25) {
                    "NULL".to_owned()
                } else {
                    values[referenced].clone()
                };
                values.insert(column.to_owned(), value);
            }
            rows.push(values);
        }
        let mut references: Vec<(Vec<String>, String, Vec<String>)> = keys
            .iter()
            .map(|(own, parent, referenced, ..)| (own.clone(), parent.clone(), referenced.clone()))
            .collect();
        references.extend(
            tree.map(|(column, referenced, ..)| (vec![column.to_owned()], name.clone(), vec![referenced.to_owned()])),
        );
        tables.push(Table { name, composite, guarded, rows, references });
    }
    let mut inserts = String::new();
    let mut roots = Vec::new();
    for table in &tables {
        for row in &table.rows {
            let columns: Vec<&str> = row.keys().map(String::as_str).collect();
            let values: Vec<&str> = row.values().map(String::as_str).collect();
            let _ = writeln!(
                inserts,
                "INSERT INTO {} ({}) VALUES ({});",
                table.name,
                columns.join(", "),
                values.join(", ")
            );
            if !table.composite && !table.guarded {
                roots.push((table.name.clone(), row["id"].parse().expect("an id")));
            }
        }
    }
    // After the inserts: a back reference's value is set once every row is in.
    let (cycles, back_values, loops) = close_cycles(random, &mut tables, dialect);
    ddl.push_str(&cycles.0);
    oracle_ddl.push_str(&cycles.1);
    inserts.push_str(&back_values);
    let guarded = tables.iter().filter(|table| table.guarded).count();
    Generated { ddl, oracle_ddl, inserts, roots, loops, guarded }
}

/// Closes delete cycles through two or three tables: a table gets a nullable `back_id` to a later
/// table that references it (directly, or through one more table), of a random action, added by
/// `ALTER TABLE` (both databases take it). Its values are set once every row is in; about half of
/// those that would close a loop of rows (point at a row that references the row itself, through
/// any foreign key) are kept. The DDL of both databases, and the updates.
fn close_cycles(random: &mut Random, tables: &mut [Table], dialect: Dialect) -> ((String, String), String, u64) {
    let (mut ddl, mut oracle_ddl, mut updates, mut loops) = (String::new(), String::new(), String::new(), 0);
    let references_table = |table: &Table, parent: &str| {
        table.references.iter().any(|(_, other, _)| other == parent && table.name != parent)
    };
    for index in 0..tables.len() {
        // A guarded table is a leaf: never a child of a cycle's back reference, never its parent.
        if tables[index].composite || tables[index].guarded || !random.chance(35) {
            continue;
        }
        let name = tables[index].name.clone();
        // Later tables with an id that reach this one in one or two steps.
        let later: Vec<usize> = (index + 1..tables.len())
            .filter(|later| !tables[*later].composite && !tables[*later].guarded)
            .filter(|later| {
                references_table(&tables[*later], &name)
                    || tables[*later].references.iter().any(|(_, middle, _)| {
                        tables.iter().any(|table| table.name == *middle && references_table(table, &name))
                    })
            })
            .collect();
        if later.is_empty() {
            continue;
        }
        let target = later[random.below(later.len() as u64) as usize];
        let target_name = tables[target].name.clone();
        let action = ACTIONS[random.below(4) as usize];
        let oracle_action = if matches!(action, "NO ACTION" | "RESTRICT") { "CASCADE" } else { action };
        let column = |action: &str| match dialect {
            // MariaDB takes a foreign key added with its column only as a constraint of its own.
            Dialect::Mysql => format!(
                "ALTER TABLE {name} ADD COLUMN back_id bigint, ADD CONSTRAINT {name}_back FOREIGN KEY (back_id) \
                 REFERENCES {target_name} (id) ON DELETE {action};\n"
            ),
            _ => format!(
                "ALTER TABLE {name} ADD COLUMN back_id bigint REFERENCES {target_name} (id) ON DELETE {action};\n"
            ),
        };
        let index_sql = format!("CREATE INDEX {name}_back_idx ON {name} (back_id);\n");
        ddl.push_str(&(column(action) + &index_sql));
        oracle_ddl.push_str(&(column(oracle_action) + &index_sql));
        tables[index].references.push((vec!["back_id".into()], target_name.clone(), vec!["id".into()]));
        for row in 0..tables[index].rows.len() {
            if !random.chance(60) {
                continue;
            }
            let picked = random.below(tables[target].rows.len() as u64) as usize;
            // Some rows close a loop of rows through the tables: they go together.
            if reaches(tables, (target, picked), (index, row)) {
                if !random.chance(50) {
                    continue;
                }
                loops += 1;
            }
            let id = tables[target].rows[picked]["id"].clone();
            tables[index].rows[row].insert("back_id".into(), id.clone());
            let own = &tables[index].rows[row]["id"];
            let _ = writeln!(updates, "UPDATE {name} SET back_id = {id} WHERE id = {own};");
        }
    }
    ((ddl, oracle_ddl), updates, loops)
}

/// Whether the row `from` (table, row) references `to`, through any chain of foreign keys.
fn reaches(tables: &[Table], from: (usize, usize), to: (usize, usize)) -> bool {
    let mut stack = vec![from];
    let mut seen = std::collections::HashSet::new();
    while let Some((table, row)) = stack.pop() {
        if (table, row) == to {
            return true;
        }
        if !seen.insert((table, row)) {
            continue;
        }
        let values = &tables[table].rows[row];
        for (own, parent, referenced) in &tables[table].references {
            let Some(parent) = tables.iter().position(|t| t.name == *parent) else { continue };
            let wanted: Vec<Option<&String>> = own.iter().map(|column| values.get(column)).collect();
            if wanted.iter().any(|value| value.is_none_or(|value| value == "NULL")) {
                continue;
            }
            for (candidate, parent_row) in tables[parent].rows.iter().enumerate() {
                if referenced.iter().zip(&wanted).all(|(column, value)| parent_row.get(column) == *value) {
                    stack.push((parent, candidate));
                }
            }
        }
    }
    false
}

/// The rows each model loses (a plan's `totals`, a run's `deleted`), without the zeros.
fn deleted_rows(report: &serde_json::Value, field: &str) -> BTreeMap<String, u64> {
    let rows = report[field].as_object().cloned().unwrap_or_default();
    rows.into_iter().map(|(model, n)| (model, n.as_u64().unwrap_or(0))).filter(|(_, n)| *n > 0).collect()
}

on_each_database!(
    random_schemas_delete_what_the_database_would_cascade_on_sqlite,
    random_schemas_delete_what_the_database_would_cascade_on_postgres,
    |databases| compare_with_the_database_s_own_cascade(&databases)
);

#[test]
fn random_schemas_delete_what_the_database_would_cascade_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    compare_with_the_database_s_own_cascade(&databases);
}

fn compare_with_the_database_s_own_cascade(databases: &Databases) {
    let (mut deletions, mut cyclic, mut loops, mut guarded, mut nullify_compared) = (0, 0, 0, 0, 0);
    for seed in 0..SCHEMAS {
        let mut random = Random::seeded(seed);
        let generated = generate(&mut random, Dialect::of(databases));
        guarded += generated.guarded;
        let url = databases.create(&format!("{}{}", generated.ddl, generated.inserts));
        let oracle = databases.create(&format!("{}{}", generated.oracle_ddl, generated.inserts));
        let context = format!("seed {seed}, schema:\n{}", generated.ddl);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("cascades");
        let init = cascade(dir.path())
            .args(["init", "--database-url", &url, "--out"])
            .arg(&config)
            .output()
            .expect("run init");
        assert!(init.status.success(), "init failed ({context}): {}", String::from_utf8_lossy(&init.stderr));
        let written = std::fs::read_to_string(config.join("cascade.toml")).expect("init wrote the config");
        cyclic += u64::from(written.contains("# closes the cycle"));
        loops += generated.loops;
        assert_eq!(
            written.contains("on_delete = \"database\""),
            generated.guarded > 0,
            "a guarded table's foreign keys are left to the database ({context}\nconfig:\n{written})"
        );
        let validate = cascade(dir.path())
            .args(["validate", "--database-url", &url, "--config"])
            .arg(&config)
            .output()
            .expect("run validate");
        assert!(
            validate.status.success(),
            "validate is not clean ({context}\nconfig:\n{written}): {}",
            String::from_utf8_lossy(&validate.stdout)
        );
        let mut roots = generated.roots.clone();
        let mut deleted_here = 0;
        while deleted_here < ROOTS_PER_SCHEMA && !roots.is_empty() {
            let (table, id) = roots.swap_remove(random.below(roots.len() as u64) as usize);
            if texts(&url, &format!("SELECT 'x' FROM {table} WHERE id = {id}")).is_empty() {
                continue; // gone with an earlier root
            }
            let plan = json_output(
                cascade(dir.path())
                    .args(["plan", &table, "--id", &id.to_string(), "--format", "json", "--database-url", &url])
                    .arg("--config")
                    .arg(&config),
            );
            let delete = cascade(dir.path())
                .args(["delete", &table, &id.to_string(), "--confirm", "--format", "json", "--database-url", &url])
                .arg("--config")
                .arg(&config)
                .output()
                .expect("run delete");
            assert!(
                delete.status.success(),
                "delete {table} {id} failed ({context}\nconfig:\n{written}): {}",
                String::from_utf8_lossy(&delete.stderr)
            );
            let run: serde_json::Value = serde_json::from_slice(&delete.stdout).expect("the run's JSON");
            assert_eq!(
                deleted_rows(&plan, "totals"),
                deleted_rows(&run, "deleted"),
                "the plan's counts are not the run's for {table} {id} ({context}\nconfig:\n{written})"
            );
            let nullified = deleted_rows(&run, "nullified");
            assert_eq!(
                deleted_rows(&plan, "nullify"),
                nullified,
                "the plan's nullified rows are not the run's for {table} {id} ({context}\nconfig:\n{written})\n\
                 plan: {plan}"
            );
            nullify_compared += u64::from(!nullified.is_empty());
            texts(&oracle, &format!("DELETE FROM {table} WHERE id = {id}"));
            assert_eq!(
                user_rows(&url),
                user_rows(&oracle),
                "deleting {table} {id} differs from the database's own cascade ({context}\n\
                 config:\n{written})"
            );
            deletions += 1;
            deleted_here += 1;
        }
    }
    assert!(deletions >= 300, "only {deletions} deletions were compared");
    assert!(cyclic >= 10, "only {cyclic} schemas have a delete cycle through several tables");
    assert!(loops >= 10, "only {loops} rows close a loop of rows");
    assert!(guarded >= SCHEMAS as usize / 4, "only {guarded} tables were guarded by a trigger");
    assert!(nullify_compared >= 50, "only {nullify_compared} deletions nullified any row");
    println!(
        "{deletions} deletions compared with the database's own cascade, {nullify_compared} of which nullified rows \
         ({cyclic} schemas with a cycle of tables, {loops} rows closing a loop of rows, {guarded} tables guarded by \
         a trigger that lets only the database delete)"
    );
}
