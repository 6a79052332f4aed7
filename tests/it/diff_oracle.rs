//! `cascade diff`'s severities checked against what deletions really do. Seeded random configs
//! over random data are edited at random (actions flipped, relations added, removed or moved to
//! other columns, status guards changed, tuning), then the same root is deleted on two copies of
//! the database, once with the base config and once with the edited one. The oracle is the
//! databases themselves: when the review finds no destructive change, the edited config deletes
//! no row the base kept and nullifies no column the base left alone; and whenever the two
//! deletions differ at all, some change names the root among the roots it reaches.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cascade::db::Statement;
use cascade::db::{Access, Database};
use cascade::diagnostic::Sources;
use cascade::engine::{DeleteOptions, Engine};
use cascade::review::{Review, Severity, Side};
use common::block_on;
use common::random::Random;

/// How many random edits are checked.
const CASES: u64 = 300;
/// Tables `m0..mN`; every table has a column `r{p}` and `s{p}` for each lower `p`.
const MAX_MODELS: usize = 6;
/// Rows per table.
const ROWS: i64 = 12;

#[derive(Debug, Clone, PartialEq)]
struct Relation {
    parent: usize,
    child: usize,
    column: String,
    nullify: bool,
    chunk: Option<u64>,
}

#[derive(Debug, Clone)]
struct Config {
    models: usize,
    relations: Vec<Relation>,
    bulk: Vec<bool>,
    chunk: Vec<Option<u64>>,
    /// The root's status guard: the statuses that proceed.
    proceed: Option<Vec<i64>>,
}

impl Config {
    fn generate(random: &mut Random) -> Self {
        let models = 2 + random.below((MAX_MODELS - 1) as u64) as usize;
        let mut relations = Vec::new();
        for child in 1..models {
            let parent = random.below(child as u64) as usize;
            relations.push(Relation::new(parent, child, random));
            if child > 1 && random.chance(30) {
                let other = random.below(child as u64) as usize;
                if other != parent {
                    relations.push(Relation::new(other, child, random));
                }
            }
        }
        let mut config = Config {
            models,
            relations,
            bulk: vec![false; models],
            chunk: vec![None; models],
            proceed: random.chance(50).then(|| vec![0, 1]),
        };
        config.bulk = (0..models).map(|m| m > 0 && config.is_leaf(m) && random.chance(50)).collect();
        config
    }

    fn is_leaf(&self, model: usize) -> bool {
        !self.relations.iter().any(|r| r.parent == model)
    }

    /// One random edit that keeps the config valid; what it was, for failure messages.
    fn edit(&mut self, random: &mut Random) -> String {
        loop {
            let before = self.clone();
            let what = match random.below(9) {
                0 if !self.relations.is_empty() => {
                    let index = random.below(self.relations.len() as u64) as usize;
                    self.relations[index].nullify = !self.relations[index].nullify;
                    "on_delete flipped"
                }
                1 if !self.relations.is_empty() => {
                    let index = random.below(self.relations.len() as u64) as usize;
                    self.relations.remove(index);
                    "relation removed"
                }
                2 => {
                    let child = 1 + random.below((self.models - 1) as u64) as usize;
                    let parent = random.below(child as u64) as usize;
                    let relation = Relation::new(parent, child, random);
                    self.relations.push(relation);
                    "relation added"
                }
                3 if !self.relations.is_empty() => {
                    let index = random.below(self.relations.len() as u64) as usize;
                    let relation = &mut self.relations[index];
                    let letter = if relation.column.starts_with('r') { 's' } else { 'r' };
                    relation.column = format!("{letter}{}", relation.parent);
                    "relation column moved"
                }
                4 => {
                    self.proceed = match (&self.proceed, random.below(3)) {
                        (None, _) => Some(vec![0]),
                        (Some(_), 0) => None,
                        (Some(_), 1) => Some(vec![0, 1, 2]),
                        (Some(_), _) => Some(vec![1]),
                    };
                    "status guard changed"
                }
                5 => {
                    let model = random.below(self.models as u64) as usize;
                    self.chunk[model] = Some(1 + random.below(5));
                    "chunk size changed"
                }
                6 if !self.relations.is_empty() => {
                    let index = random.below(self.relations.len() as u64) as usize;
                    self.relations[index].chunk = Some(1 + random.below(4));
                    "relation chunk size changed"
                }
                7 => {
                    let model = 1 + random.below((self.models - 1) as u64) as usize;
                    self.bulk[model] = !self.bulk[model];
                    "strategy flipped"
                }
                _ if self.relations.len() > 1 => {
                    let index = random.below(self.relations.len() as u64) as usize;
                    let relation = self.relations.remove(index);
                    self.relations.insert(0, relation);
                    "relations reordered"
                }
                _ => continue,
            };
            // Bulk models may have no delete-children; two relations of one pair by one column
            // are a duplicate.
            let valid = (0..self.models).all(|m| !self.bulk[m] || self.is_leaf(m))
                && self.relations.iter().enumerate().all(|(i, a)| {
                    self.relations[..i].iter().all(|b| (b.parent, b.child, &b.column) != (a.parent, a.child, &a.column))
                });
            if valid && self.toml() != before.toml() {
                return what.to_owned();
            }
            *self = before;
        }
    }

    fn toml(&self) -> String {
        let mut text = String::new();
        for model in 0..self.models {
            text.push_str(&format!("[models.m{model}]\ntable = \"m{model}\"\n"));
            if self.bulk[model] {
                text.push_str("strategy = \"bulk\"\n");
            }
            if let Some(chunk) = self.chunk[model] {
                text.push_str(&format!("chunk_size = {chunk}\n"));
            }
            if let (0, Some(proceed)) = (model, &self.proceed) {
                let proceed: Vec<String> = proceed.iter().map(ToString::to_string).collect();
                text.push_str(&format!(
                    "status = {{ column = \"status\", proceed = [{}], in_progress = 9 }}\n",
                    proceed.join(", ")
                ));
            }
            let children: Vec<String> = self
                .relations
                .iter()
                .filter(|r| r.parent == model)
                .map(|r| {
                    let mut relation = format!("{{ model = \"m{}\", column = \"{}\"", r.child, r.column);
                    if r.nullify {
                        relation.push_str(", on_delete = \"nullify\"");
                    }
                    if let Some(chunk) = r.chunk {
                        relation.push_str(&format!(", chunk_size = {chunk}"));
                    }
                    relation + " }"
                })
                .collect();
            text.push_str(&format!("children = [{}]\n\n", children.join(", ")));
        }
        text
    }
}

impl Relation {
    fn new(parent: usize, child: usize, random: &mut Random) -> Self {
        let letter = if random.chance(80) { 'r' } else { 's' };
        Relation { parent, child, column: format!("{letter}{parent}"), nullify: random.chance(30), chunk: None }
    }
}

/// The tables, with a nullable `r{p}` and `s{p}` for every lower table, and random rows.
fn schema(random: &mut Random) -> String {
    let mut sql = String::new();
    for table in 0..MAX_MODELS {
        let mut columns = vec!["id INTEGER PRIMARY KEY".to_owned(), "status INTEGER NOT NULL".to_owned()];
        for parent in 0..table {
            columns.push(format!("r{parent} INTEGER"));
            columns.push(format!("s{parent} INTEGER"));
        }
        sql.push_str(&format!("CREATE TABLE m{table} ({});\n", columns.join(", ")));
        for id in 1..=ROWS {
            let mut values = vec![id.to_string(), random.below(3).to_string()];
            for _ in 0..table * 2 {
                values.push(if random.chance(20) { "NULL".to_owned() } else { (1 + random.below(4)).to_string() });
            }
            sql.push_str(&format!("INSERT INTO m{table} VALUES ({});\n", values.join(", ")));
        }
    }
    sql
}

type Contents = BTreeMap<String, BTreeMap<i64, Vec<Option<String>>>>;

async fn contents(database: &Database) -> Contents {
    let mut tables = BTreeMap::new();
    for table in 0..MAX_MODELS {
        let mut columns = vec!["id".to_owned(), "status".to_owned()];
        columns.extend((0..table).flat_map(|parent| [format!("r{parent}"), format!("s{parent}")]));
        let columns: Vec<String> = columns.iter().map(|column| format!("CAST({column} AS TEXT)")).collect();
        let sql = format!("SELECT {} FROM m{table} ORDER BY id", columns.join(", "));
        let rows = database.fetch_texts(&Statement { sql, params: Vec::new() }).await.unwrap();
        let rows =
            rows.into_iter().map(|row| (row[0].as_deref().unwrap().parse().unwrap(), row[1..].to_vec())).collect();
        tables.insert(format!("m{table}"), rows);
    }
    tables
}

/// Deletes root `m0` 1 and 2 with `config` in the database at `url`; what is left.
async fn delete(url: &str, config: &str) -> Contents {
    let mut sources = Sources::default();
    sources.add("config.toml", config);
    let mut loaded = cascade::load_sources(sources);
    let checked = cascade::check(&mut loaded, None).unwrap_or_else(|| panic!("{:?}\n{config}", loaded.diagnostics));
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    let engine = Engine::prepare(database.clone(), &checked).await.unwrap();
    let plan = cascade::compile(engine.config(), "m0").unwrap();
    let ids = vec!["1".to_owned(), "2".to_owned()];
    engine.run_to_end(&plan, &ids, DeleteOptions::default(), |_| {}).await.unwrap();
    let left = contents(&database).await;
    database.close().await;
    left
}

/// Rows by table and id.
type RowSet = BTreeSet<(String, i64)>;
/// Columns by table, row id and position.
type CellSet = BTreeSet<(String, i64, usize)>;

/// What a deletion did to `before`: the rows it deleted, and the (row, column) it set to NULL.
fn effects(before: &Contents, after: &Contents) -> (RowSet, CellSet) {
    let (mut deleted, mut nullified) = (BTreeSet::new(), BTreeSet::new());
    for (table, rows) in before {
        for (id, values) in rows {
            match after[table].get(id) {
                None => {
                    deleted.insert((table.clone(), *id));
                }
                Some(now) => {
                    for (column, (old, new)) in values.iter().zip(now).enumerate() {
                        if old.is_some() && new.is_none() {
                            nullified.insert((table.clone(), *id, column));
                        }
                    }
                }
            }
        }
    }
    (deleted, nullified)
}

#[test]
fn no_destructive_change_deletes_or_nullifies_a_row_the_base_kept() {
    // Hundreds of small deletions: in memory where the machine has a tmpfs, since every commit
    // syncs the file and the disk's syncs would take most of the test's time.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
    let (mut more_rows_flagged, mut same_or_fewer) = (0, 0);
    for number in 0..CASES {
        let mut random = Random::seeded(number);
        let ddl = schema(&mut random);
        let base = Config::generate(&mut random);
        let mut head = base.clone();
        let edits: Vec<String> = (0..1 + random.below(2)).map(|_| head.edit(&mut random)).collect();
        let (base_toml, head_toml) = (base.toml(), head.toml());

        let load = |name: &str, text: &str| {
            let mut sources = Sources::default();
            sources.add(name, text);
            cascade::load_sources(sources)
        };
        let (base_loaded, head_loaded) = (load("base.toml", &base_toml), load("head.toml", &head_toml));
        let review = Review::compare(
            Side { config: &base_loaded.config, sources: &base_loaded.sources },
            Side { config: &head_loaded.config, sources: &head_loaded.sources },
        );

        let original = common::sqlite_database(dir.path(), &ddl);
        common::create_tool_tables(&original);
        let path = original.trim_start_matches("sqlite://");
        let (base_url, head_url) = (format!("{original}.base"), format!("{original}.head"));
        std::fs::copy(path, format!("{path}.base")).unwrap();
        std::fs::copy(path, format!("{path}.head")).unwrap();
        let (before, base_left, head_left) = block_on(async {
            let database = Database::connect(&original, Access::ReadOnly).await.unwrap();
            let before = contents(&database).await;
            database.close().await;
            (before, delete(&base_url, &base_toml).await, delete(&head_url, &head_toml).await)
        });
        let (base_deleted, base_nullified) = effects(&before, &base_left);
        let (head_deleted, head_nullified) = effects(&before, &head_left);

        let extra_deleted: Vec<_> = head_deleted.difference(&base_deleted).collect();
        let extra_nullified: Vec<_> = head_nullified
            .iter()
            .filter(|(table, id, _)| !base_deleted.contains(&(table.clone(), *id)))
            .filter(|cell| !base_nullified.contains(cell))
            .collect();
        let destructive = review.worst() == Some(Severity::Destructive);
        let context = || format!("case {number} ({edits:?})\nbase:\n{base_toml}\nhead:\n{head_toml}\n{review:#?}");
        if !destructive {
            assert!(extra_deleted.is_empty(), "{}\nrows deleted only by the head: {extra_deleted:?}", context());
            assert!(
                extra_nullified.is_empty(),
                "{}\ncolumns nullified only by the head: {extra_nullified:?}",
                context()
            );
            same_or_fewer += 1;
        } else if !extra_deleted.is_empty() || !extra_nullified.is_empty() {
            more_rows_flagged += 1;
        }
        if (&base_deleted, &base_nullified) != (&head_deleted, &head_nullified) {
            assert!(
                review.changes.iter().any(|change| change.roots.iter().any(|root| root == "m0")),
                "{}\nthe deletions differ, but no change reaches m0",
                context()
            );
        }
    }
    // The generator exercised both sides of the rule.
    assert!(more_rows_flagged >= 30, "only {more_rows_flagged} cases deleted more rows");
    assert!(same_or_fewer >= 60, "only {same_or_fewer} cases had no destructive change");
}
