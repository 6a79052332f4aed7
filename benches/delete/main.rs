//! Deleting large trees: `cascade delete` against the database's own `ON DELETE CASCADE` and a
//! hand-written batch loop, on SQLite, PostgreSQL and MariaDB (there also against `pt-archiver`
//! purging table by table). Run: `cargo bench --bench delete`
//! (`-- --rows N` for another size, the default is 1,000,000; `-- --repeat N` rounds of every
//! method, default 3, the tables showing each method's median). Progress goes to stderr, the
//! markdown tables to stdout. `-- --databases sqlite,postgres,mariadb` and `-- --methods loop,cascade,...`
//! (the words of `Method::slug`) and `-- --trees realistic,deep,forest` run a part of it, for looking
//! into one number.
//!
//! Two trees, each a section of the output (see `tree.rs`):
//!
//! - **realistic**: `org` → 20 `project` → `grp` → 1 `hash` and 8 `event` per group, each org
//!   holding half of the rows; org 1 is deleted and every row of org 2 must survive. At `--rows`
//!   and a fifth of it. Ten methods, each on its own fresh copy of the database (see
//!   `methods.rs`): the native DELETE (foreign keys `ON DELETE CASCADE`), the same after
//!   inserting the outbox's tombstones by hand (the limit with the outbox), into a bare table, or
//!   through an `AFTER DELETE` trigger per outbox table, a hand-written sqlx
//!   loop, `cascade delete` with the defaults, with a status check and outbox tombstones, and
//!   with those and `--archive`, all on enforced `NO ACTION` foreign keys; then cascade and the
//!   loop again on tables without foreign keys.
//! - **deep**: `root` → 100 `l1` → `l2` (rows / 100) → `l3` (the rest), about 99 leaves per
//!   per_row parent; the native DELETE against `cascade delete`, at `--rows` and a tenth of it.
//! - **forest**: `post` → `reply`, whose `parent_id` references `reply` itself: threads of 50
//!   replies, every other one a chain 50 deep; the native DELETE (both keys `ON DELETE CASCADE`)
//!   against `cascade delete` following the tree, at `--rows`.
//!
//! The methods run interleaved (round 1 of every method, then round 2, ...), so that a slow
//! stretch of the machine falls on all of them. Every table is indexed on its parent column. A
//! tree is built once per kind of foreign keys (in one transaction, PostgreSQL's keys added after
//! loading) and copied for each run.
//! Every method's result is checked: exactly root 1's rows deleted from each table, and every
//! row under root 2 still there.

#[path = "../common/args.rs"]
mod args;
#[path = "../common/disk.rs"]
mod disk;
mod methods;
mod report;
#[path = "../common/server.rs"]
mod server;
mod store;
mod tree;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use args::{list_argument, number_argument};
use methods::{Cascade, Method, Outcome};
use server::Server;
use store::{Conn, Store};
use tree::Tree;

const DEFAULT_ROWS: u64 = 1_000_000;
const DEFAULT_REPEAT: u64 = 3;

/// One tree, the sizes it is built at and the methods that delete it.
pub struct Section {
    pub tree: fn(u64) -> Tree,
    pub sizes: Vec<u64>,
    pub methods: Vec<Method>,
}

/// The methods of one tree at one size on one database.
pub struct Measured {
    pub database: &'static str,
    /// Rows in the whole tree, and the rows under root 1.
    pub tree_rows: u64,
    pub deleted_rows: u64,
    pub build: Duration,
    pub outcomes: Vec<Outcome>,
}

impl Measured {
    pub fn outcome(&self, method: Method) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.method == method)
    }
}

fn main() {
    let rows = number_argument("--rows").unwrap_or(DEFAULT_ROWS);
    let repeat = number_argument("--repeat").unwrap_or(DEFAULT_REPEAT).max(1);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cascade = Cascade { binary: PathBuf::from(env!("CARGO_BIN_EXE_cascade")), dir: dir.path().join("cascade") };
    std::fs::create_dir(&cascade.dir).expect("the cascade directory");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    eprintln!("cascade binary: {}", cascade.binary.display());

    let databases =
        list_argument("--databases").unwrap_or_else(|| vec!["sqlite".into(), "postgres".into(), "mariadb".into()]);
    let mut stores = Vec::new();
    if databases.iter().any(|name| name == "sqlite") {
        stores.push(Store::Sqlite(dir.path().to_owned()));
    }
    if databases.iter().any(|name| name == "postgres") {
        stores.extend(Server::postgres().map(Store::Postgres));
    }
    if databases.iter().any(|name| name == "mariadb") {
        stores.extend(Server::mariadb().map(Store::Mysql));
    }
    let methods = list_argument("--methods");
    let chosen = |all: &[Method]| -> Vec<Method> {
        all.iter()
            .copied()
            .filter(|m| methods.as_ref().is_none_or(|names| names.iter().any(|n| n == m.slug())))
            .collect()
    };
    // `--trees realistic` (or `deep`) runs one of the two trees.
    let trees = list_argument("--trees");
    let tree_chosen = |name: &str| trees.as_ref().is_none_or(|names| names.iter().any(|n| n == name));
    let realistic = Section {
        tree: Tree::realistic,
        sizes: vec![rows, rows / 5],
        methods: chosen(&[
            Method::Native,
            Method::Loop,
            Method::Cascade,
            Method::NativeWithTombstones,
            Method::NativeWithBareTombstones,
            Method::NativeWithTrigger,
            Method::Outbox,
            Method::Archive,
            Method::CascadeWithoutKeys,
            Method::LoopWithoutKeys,
            Method::PtArchiver,
        ])
        .into_iter()
        .filter(|_| tree_chosen("realistic"))
        .collect(),
    };
    let deep_methods = chosen(&[Method::Native, Method::Cascade]).into_iter().filter(|_| tree_chosen("deep")).collect();
    let deep = Section { tree: Tree::deep, sizes: vec![rows, rows / 10], methods: deep_methods };
    let forest_methods =
        chosen(&[Method::Native, Method::Cascade]).into_iter().filter(|_| tree_chosen("forest")).collect();
    let forest = Section { tree: Tree::forest, sizes: vec![rows], methods: forest_methods };

    let started = Instant::now();
    let mut durability = Vec::new();
    let realistic = runtime.block_on(run_section(&stores, &realistic, &cascade, repeat, &mut durability));
    let deep = runtime.block_on(run_section(&stores, &deep, &cascade, repeat, &mut Vec::new()));
    let forest = runtime.block_on(run_section(&stores, &forest, &cascade, repeat, &mut Vec::new()));
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    drop(stores);
    report::realistic(&realistic, &durability, repeat);
    report::deep(&deep, repeat);
    report::forest(&forest, repeat);
}

/// Builds the section's tree at each size on each database and runs every method `repeat` times,
/// interleaved, each run on its own copy.
async fn run_section(
    stores: &[Store],
    section: &Section,
    cascade: &Cascade,
    repeat: u64,
    durability: &mut Vec<(&'static str, String)>,
) -> Vec<Measured> {
    let mut results = Vec::new();
    if section.methods.is_empty() {
        return results;
    }
    for store in stores {
        for &size in &section.sizes {
            let tree = (section.tree)(size);
            let methods: Vec<Method> =
                section.methods.iter().copied().filter(|method| method.runs_on(store.dialect(), &tree)).collect();
            let label = format!("{} {} tree, {} rows", store.name(), tree.name, tree.total());
            eprintln!("{label}: building…");
            let start = Instant::now();
            let mut templates = Vec::new();
            for method in &methods {
                let keys = method.keys();
                if templates.iter().all(|(k, _)| *k != keys) {
                    let name = format!("cascade_bench_{}_{size}_{}", tree.name, keys.slug());
                    templates.push((keys, store.build(&name, &tree, keys).await));
                }
            }
            let build = start.elapsed();
            eprintln!("{label}: built in {:.1} s", build.as_secs_f64());
            let (all, _) = tree.count_queries();
            for (keys, template) in &templates {
                let mut connection = Conn::connect(&template.url).await;
                assert_eq!(connection.counts(&all).await, tree.before(), "{label}: rows built ({})", keys.describe());
                connection.close().await;
            }
            if durability.iter().all(|(name, _)| *name != store.name()) {
                durability.push((store.name(), store.durability(&templates[0].1).await));
            }
            let mut runs: Vec<Vec<Outcome>> = methods.iter().map(|_| Vec::new()).collect();
            for round in 1..=repeat {
                for (&method, runs) in methods.iter().zip(&mut runs) {
                    let (_, template) = templates.iter().find(|(k, _)| *k == method.keys()).expect("a template");
                    let copy = store.copy(template, "cascade_bench_run").await;
                    let of = format!("{label}, round {round}/{repeat}: {}", method.name());
                    eprintln!("{of} ({})…", method.keys().describe());
                    let outcome = methods::run(method, cascade, &tree, store.dialect(), &copy.url).await;
                    check(&label, &tree, &outcome, &copy.url).await;
                    eprintln!(
                        "{of}: {:.0} ms, {} transactions, longest {:.1} ms",
                        outcome.wall.as_secs_f64() * 1e3,
                        outcome.transactions,
                        outcome.max_ms
                    );
                    store.remove(copy).await;
                    runs.push(outcome);
                }
            }
            let outcomes = runs.into_iter().map(Outcome::median_of).collect();
            for (_, template) in templates {
                store.remove(template).await;
            }
            let deleted_rows = tree.deleted.iter().sum();
            results.push(Measured { database: store.name(), tree_rows: tree.total(), deleted_rows, build, outcomes });
        }
    }
    results
}

/// The method deleted exactly root 1's rows: each table holds root 2's rows, all of them.
async fn check(label: &str, tree: &Tree, outcome: &Outcome, url: &str) {
    let what = format!("{label}, {} ({})", outcome.method.name(), outcome.method.keys().describe());
    assert_eq!(outcome.rows, tree.deleted.iter().sum::<u64>(), "{what}: rows deleted");
    let (all, surviving) = tree.count_queries();
    let mut connection = Conn::connect(url).await;
    assert_eq!(connection.counts(&all).await, tree.survivors, "{what}: rows left per table");
    assert_eq!(connection.counts(&surviving).await, tree.survivors, "{what}: rows of root 2 per table");
    connection.close().await;
}
