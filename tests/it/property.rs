//! Random configs over random DAGs (per_row and bulk models, delete and nullify relations,
//! diamonds, tiny chunks) with random data, deleted through the library and compared with the
//! expected result computed here independently: which rows go, which columns become NULL, which
//! rows stay, and one outbox tombstone per deleted row of a model with a category. A seeded
//! generator, so a failing case can be replayed from its number.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use cascade::audit::RunOutcome;
use cascade::db::Statement;
use cascade::db::{Access, Database};
use cascade::diagnostic::Sources;
use cascade::engine::{DeleteOptions, Engine};
use cascade::render::{Folding, PlanView};
use common::random::Random;
use common::{block_on, on_each_database};

/// A table's rows: id → value of each parent column (by parent model).
type Rows = BTreeMap<i64, BTreeMap<usize, Option<i64>>>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Delete,
    Nullify,
}

/// A relation `parent → child` by the child's column `r{parent}`.
#[derive(Debug, Clone)]
struct Edge {
    parent: usize,
    child: usize,
    action: Action,
}

/// One generated case: models `m0..mN` (edges only from lower to higher index, so a DAG), the
/// rows of each table (id → value of each parent column), and the root ids to delete.
#[derive(Debug)]
struct Case {
    models: usize,
    edges: Vec<Edge>,
    bulk: Vec<bool>,
    outbox: Vec<bool>,
    chunk: Vec<u64>,
    /// Whether chunk sizes adapt (every other case); without, the run's chunk count must fall
    /// in the range the plan gives.
    adaptive: bool,
    rows: Vec<Rows>,
    roots: Vec<i64>,
}

fn generate(seed: u64) -> Case {
    let mut random = Random::seeded(seed);
    let models = 2 + random.below(5) as usize;
    let mut edges = Vec::new();
    for child in 1..models {
        // Every model but the root has at least one parent, often two (diamonds).
        let mut parents: BTreeSet<usize> = [random.below(child as u64) as usize].into();
        if child > 1 && random.chance(40) {
            parents.insert(random.below(child as u64) as usize);
        }
        for parent in parents {
            let action = if random.chance(25) { Action::Nullify } else { Action::Delete };
            edges.push(Edge { parent, child, action });
        }
    }
    let has_children = |model: usize| edges.iter().any(|e| e.parent == model);
    let bulk: Vec<bool> = (0..models).map(|m| m > 0 && !has_children(m) && random.chance(50)).collect();
    let outbox: Vec<bool> = (0..models).map(|_| random.chance(30)).collect();
    let chunk: Vec<u64> = (0..models).map(|_| 1 + random.below(4)).collect();
    let mut rows: Vec<Rows> = Vec::new();
    for model in 0..models {
        let count = if model == 0 { 4 } else { random.below(12) as i64 };
        let mut table = BTreeMap::new();
        for id in 1..=count {
            let mut columns = BTreeMap::new();
            for edge in edges.iter().filter(|e| e.child == model) {
                let parents: Vec<i64> = rows[edge.parent].keys().copied().collect();
                let nullable = edge.action == Action::Nullify;
                let value = if parents.is_empty() || (nullable && random.chance(20)) {
                    None
                } else {
                    Some(parents[random.below(parents.len() as u64) as usize])
                };
                // A NOT NULL column needs a parent row; without one the row cannot exist.
                if value.is_none() && !nullable {
                    columns.clear();
                    break;
                }
                columns.insert(edge.parent, value);
            }
            if columns.len() == edges.iter().filter(|e| e.child == model).count() {
                table.insert(id, columns);
            }
        }
        rows.push(table);
    }
    let roots = vec![1 + random.below(4) as i64, 1 + random.below(4) as i64];
    Case { models, edges, bulk, outbox, chunk, adaptive: seed.is_multiple_of(2), rows, roots }
}

impl Case {
    fn schema(&self) -> String {
        let mut sql = String::new();
        for model in 0..self.models {
            sql.push_str(&format!("CREATE TABLE m{model} (id INTEGER PRIMARY KEY"));
            for edge in self.edges.iter().filter(|e| e.child == model) {
                let null = if edge.action == Action::Nullify { "" } else { " NOT NULL" };
                sql.push_str(&format!(", r{} INTEGER{null} REFERENCES m{} (id)", edge.parent, edge.parent));
            }
            sql.push_str(");\n");
            for edge in self.edges.iter().filter(|e| e.child == model) {
                sql.push_str(&format!("CREATE INDEX m{model}_r{0} ON m{model} (r{0});\n", edge.parent));
            }
            for (id, columns) in &self.rows[model] {
                let values: Vec<String> = std::iter::once(id.to_string())
                    .chain(columns.values().map(|v| v.map_or("NULL".to_owned(), |v| v.to_string())))
                    .collect();
                let names: Vec<String> =
                    std::iter::once("id".to_owned()).chain(columns.keys().map(|p| format!("r{p}"))).collect();
                sql.push_str(&format!("INSERT INTO m{model} ({}) VALUES ({});\n", names.join(", "), values.join(", ")));
            }
        }
        sql
    }

    fn config(&self) -> String {
        let mut toml = String::from("[settings]\nper_row_chunk_size = 2\nbulk_chunk_size = 3\n");
        toml.push_str(&format!("adaptive = {}\n", self.adaptive));
        for model in 0..self.models {
            toml.push_str(&format!("\n[models.m{model}]\ntable = \"m{model}\"\nchunk_size = {}\n", self.chunk[model]));
            if self.bulk[model] {
                toml.push_str("strategy = \"bulk\"\n");
            }
            if self.outbox[model] {
                toml.push_str(&format!("outbox = \"c{model}\"\n"));
            }
            let children: Vec<String> = self
                .edges
                .iter()
                .filter(|e| e.parent == model)
                .map(|e| {
                    let nullify = if e.action == Action::Nullify { ", on_delete = \"nullify\"" } else { "" };
                    format!("  {{ model = \"m{}\", column = \"r{}\"{nullify} }},\n", e.child, e.parent)
                })
                .collect();
            if !children.is_empty() {
                toml.push_str(&format!("children = [\n{}]\n", children.concat()));
            }
        }
        let categories: Vec<String> =
            (0..self.models).filter(|m| self.outbox[*m]).map(|m| format!("\"c{m}\"")).collect();
        if !categories.is_empty() {
            toml.push_str(&format!(
                "\n[outbox.scopes.all]\nshard_key = \"id\"\ncategories = [{}]\n",
                categories.join(", ")
            ));
        }
        toml
    }

    /// The expected tables after deleting the roots, computed without the tool: a row is deleted
    /// when a delete relation leads to it from a deleted row; a surviving row's column is NULL
    /// when a nullify relation leads to it from a deleted row.
    fn expected(&self) -> (Vec<Rows>, Vec<usize>) {
        let mut deleted: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); self.models];
        deleted[0] = self.roots.iter().copied().filter(|id| self.rows[0].contains_key(id)).collect();
        for model in 1..self.models {
            for (id, columns) in &self.rows[model] {
                let doomed = self
                    .edges
                    .iter()
                    .filter(|e| e.child == model && e.action == Action::Delete)
                    .any(|e| columns[&e.parent].is_some_and(|parent| deleted[e.parent].contains(&parent)));
                if doomed {
                    deleted[model].insert(*id);
                }
            }
        }
        let mut tables = self.rows.clone();
        for model in 0..self.models {
            tables[model].retain(|id, _| !deleted[model].contains(id));
            for columns in tables[model].values_mut() {
                for edge in self.edges.iter().filter(|e| e.child == model && e.action == Action::Nullify) {
                    let value = columns.get_mut(&edge.parent).expect("a column per parent");
                    if value.is_some_and(|parent| deleted[edge.parent].contains(&parent)) {
                        *value = None;
                    }
                }
            }
        }
        (tables, deleted.iter().map(BTreeSet::len).collect())
    }
}

async fn table_rows(database: &Database, case: &Case, model: usize) -> Rows {
    let parents: Vec<usize> = case.edges.iter().filter(|e| e.child == model).map(|e| e.parent).collect();
    let columns: Vec<String> = std::iter::once("CAST(id AS TEXT)".to_owned())
        .chain(parents.iter().map(|p| format!("CAST(r{p} AS TEXT)")))
        .collect();
    let sql = format!("SELECT {} FROM m{model}", columns.join(", "));
    let rows = database.fetch_texts(&Statement { sql, params: Vec::new() }).await.unwrap();
    rows.into_iter()
        .map(|row| {
            let id = row[0].as_deref().unwrap().parse().unwrap();
            let values = parents
                .iter()
                .zip(&row[1..])
                .map(|(parent, value)| (*parent, value.as_deref().map(|v| v.parse().unwrap())))
                .collect();
            (id, values)
        })
        .collect()
}

/// What a case exercised, so the test can show it tested something.
#[derive(Debug, Default)]
struct Coverage {
    deleted_below_root: usize,
    nullified: usize,
    deleted_by_bulk: usize,
    diamonds: usize,
}

async fn run_case(number: u64, url: &str, case: &Case, coverage: &mut Coverage) {
    let mut sources = Sources::default();
    sources.add("cascade.toml", case.config());
    let mut loaded = cascade::config::load_sources(sources);
    let checked = cascade::planner::check(&mut loaded, None);
    assert!(
        loaded.diagnostics.iter().all(|d| !d.is_error()),
        "case {number}: {:?}\n{}",
        loaded.diagnostics,
        case.config()
    );
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    let engine = match Engine::prepare(database.clone(), &checked.unwrap()).await {
        Ok(engine) => engine,
        Err(error) => panic!("case {number}: {error}\n{}", case.config()),
    };
    let plan = cascade::planner::compile(engine.config(), "m0").unwrap();
    let ids: Vec<String> = case.roots.iter().map(i64::to_string).collect();
    let counts = cascade::engine::count(&database, engine.config(), engine.schema(), &plan, &ids).await.unwrap();
    let view = PlanView::new(&plan, &ids, Some(&counts), &Default::default(), &Folding::default(), None);
    let finished = engine.run_to_end(&plan, &ids, DeleteOptions::default(), |_| {}).await;
    let finished = finished.unwrap_or_else(|error| panic!("case {number}: {error}\n{}", case.config()));
    assert_eq!(finished.outcome, RunOutcome::Succeeded, "case {number}");
    let (least, most) = (view.estimate.chunks.unwrap(), view.estimate.max_chunks.unwrap());
    assert!(
        case.adaptive || (least..=most).contains(&finished.summary.chunks),
        "case {number}: the plan said {least} to {most} chunks, the run took {}\n{}",
        finished.summary.chunks,
        case.config()
    );

    let (expected, deleted) = case.expected();
    coverage.deleted_below_root += deleted[1..].iter().sum::<usize>();
    coverage.nullified += finished.summary.nullified.values().sum::<u64>() as usize;
    coverage.deleted_by_bulk += (0..case.models).filter(|m| case.bulk[*m]).map(|m| deleted[m]).sum::<usize>();
    coverage.diamonds += (1..case.models).filter(|m| case.edges.iter().filter(|e| e.child == *m).count() > 1).count();
    for model in 0..case.models {
        let actual = table_rows(&database, case, model).await;
        assert_eq!(actual, expected[model], "case {number}, table m{model}\nconfig:\n{}\n{case:?}", case.config());
        let reported = finished.summary.deleted.get(&format!("m{model}")).copied().unwrap_or(0);
        assert_eq!(reported, deleted[model] as u64, "case {number}, m{model}: rows reported as deleted");
        if case.outbox[model] {
            let tombstones = database
                .fetch_count(&Statement {
                    sql: format!(
                        "SELECT COUNT(DISTINCT object_identifier) FROM cascade_outbox WHERE category = 'c{model}'"
                    ),
                    params: Vec::new(),
                })
                .await
                .unwrap();
            assert_eq!(tombstones, deleted[model] as u64, "case {number}: one tombstone per deleted row of m{model}");
        }
    }
    database.close().await;
}

on_each_database!(
    random_cascades_on_sqlite_match_the_model(0..300),
    random_cascades_on_postgres_match_the_model(10_000..10_025),
    |databases, numbers| {
        let mut coverage = Coverage::default();
        for number in numbers {
            let case = generate(number);
            let url = databases.create(&case.schema());
            block_on(run_case(number, &url, &case, &mut coverage));
        }
        assert_covered(&coverage);
    }
);

fn assert_covered(coverage: &Coverage) {
    assert!(coverage.deleted_below_root > 0, "{coverage:?}");
    assert!(coverage.nullified > 0, "{coverage:?}");
    assert!(coverage.deleted_by_bulk > 0, "{coverage:?}");
    assert!(coverage.diamonds > 0, "{coverage:?}");
}
