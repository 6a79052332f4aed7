//! Planning and counting a plan with hundreds of nodes. Run: `cargo bench --bench plan`.
//!
//! The config is a tree of depth 4 with fan-out 4 (341 models, one table each); every table
//! holds 5 rows per parent row (about 170,000 rows in all) in a SQLite database.

use std::fmt::Write as _;
use std::time::Instant;

use cascade::diagnostic::Sources;
use cascade::render::{Folding, PlanFormat, PlanView};

const FAN_OUT: usize = 4;
const DEPTH: usize = 4;
const ROWS_PER_PARENT: usize = 5;

fn main() {
    let (config_text, ddl, tables) = generate();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("plan.db").display());
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(seed(&url, &ddl, &tables));

    let mut sources = Sources::default();
    sources.add("bench.toml", config_text);
    let start = Instant::now();
    let mut loaded = cascade::config::load_sources(sources);
    let checked = cascade::planner::check(&mut loaded, None).expect("the config checks");
    let plan = cascade::planner::compile(&checked, "t0").expect("the plan compiles");
    let compiled = start.elapsed();
    let nodes = plan.steps().len();

    let start = Instant::now();
    let (counts, schema) = runtime.block_on(async {
        let database = cascade::db::Database::connect(&url, cascade::db::Access::ReadOnly).await.expect("connect");
        let schema = cascade::schema::introspect(&database).await.expect("introspect");
        let counts =
            cascade::engine::count(&database, &loaded.config, &schema, &plan, &["1".to_owned()]).await.expect("count");
        (counts, schema)
    });
    let counted = start.elapsed();
    assert_eq!(schema.tables.len(), nodes);
    let rows: u64 = counts.totals.values().sum();

    let start = Instant::now();
    let view = PlanView::new(&plan, &["1".to_owned()], Some(&counts), &Default::default(), &Folding::default(), None);
    let text = view.render(PlanFormat::Text).expect("text renders");
    let mermaid = view.render(PlanFormat::Mermaid).expect("mermaid renders");
    let rendered = start.elapsed();

    println!(
        "| plan nodes | rows counted | load + validate + compile | count (2 queries per node) | render text + mermaid |"
    );
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {nodes} | {rows} | {:.1} ms | {:.1} ms | {:.1} ms ({} + {} bytes) |",
        compiled.as_secs_f64() * 1e3,
        counted.as_secs_f64() * 1e3,
        rendered.as_secs_f64() * 1e3,
        text.len(),
        mermaid.len()
    );
}

/// The config, the DDL, and for each table (in creation order) its parent table index.
fn generate() -> (String, String, Vec<Option<usize>>) {
    let mut config = String::new();
    let mut ddl = String::new();
    let mut tables: Vec<Option<usize>> = vec![None];
    let mut level = vec![0];
    for _ in 0..DEPTH {
        let mut next = Vec::new();
        for &parent in &level {
            for _ in 0..FAN_OUT {
                tables.push(Some(parent));
                next.push(tables.len() - 1);
            }
        }
        level = next;
    }
    for (index, parent) in tables.iter().enumerate() {
        let children: Vec<String> = (0..tables.len())
            .filter(|c| tables[*c] == Some(index))
            .map(|c| format!("{{ model = \"t{c}\", column = \"parent_id\" }}"))
            .collect();
        writeln!(config, "[models.t{index}]\ntable = \"t{index}\"").unwrap();
        if children.is_empty() {
            config.push_str("strategy = \"bulk\"\n");
        } else {
            writeln!(config, "children = [{}]", children.join(", ")).unwrap();
        }
        match parent {
            None => writeln!(ddl, "CREATE TABLE t{index} (id INTEGER PRIMARY KEY);").unwrap(),
            Some(_) => writeln!(
                ddl,
                "CREATE TABLE t{index} (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL);\n\
                 CREATE INDEX t{index}_parent ON t{index} (parent_id);"
            )
            .unwrap(),
        }
    }
    (config, ddl, tables)
}

async fn seed(url: &str, ddl: &str, tables: &[Option<usize>]) {
    let options: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("a sqlite URL");
    let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true)).await.expect("create");
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl.to_owned())).execute(&pool).await.expect("schema");
    let mut rows_of: Vec<usize> = vec![0; tables.len()];
    let mut transaction = pool.begin().await.expect("begin");
    for (index, parent) in tables.iter().enumerate() {
        let parent_rows = parent.map_or(1, |p| rows_of[p]);
        rows_of[index] = parent.map_or(1, |_| parent_rows * ROWS_PER_PARENT);
        for id in 1..=rows_of[index] {
            let sql = match parent {
                None => format!("INSERT INTO t{index} (id) VALUES ({id})"),
                Some(_) => format!("INSERT INTO t{index} VALUES ({id}, {})", (id - 1) / ROWS_PER_PARENT + 1),
            };
            sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *transaction).await.expect("insert");
        }
    }
    transaction.commit().await.expect("commit");
    pool.close().await;
}
