//! What the outbox tests share: a clock they move by hand, a drainer made from a config's text,
//! and outbox rows written straight into `cascade_outbox`.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cascade::db::{Access, Database};
use cascade::outbox::{Clock, DrainOptions, DrainReport, Drainer, Variables};

use super::{create_tool_tables, texts};

/// A config whose model `project` writes `project_update` tombstones into scope `organization`
/// (sharded by `org_id`, registering `categories`), delivered through sink `sink`; `sinks` is the
/// TOML of the sink tables.
pub fn project_config(categories: &[&str], sink: &str, sinks: &str) -> String {
    let categories: Vec<String> = categories.iter().map(|category| format!("\"{category}\"")).collect();
    format!(
        r#"
[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "org_id"
categories = [{}]
sink = "{sink}"

{sinks}"#,
        categories.join(", ")
    )
}

/// A clock the test moves by hand.
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    /// A clock a millisecond ahead of now: the drainer binds the time rows are due at in
    /// milliseconds, and a row written in the same millisecond (PostgreSQL keeps microseconds)
    /// would be after it, never due while the clock stands still.
    pub fn after_writes() -> Arc<Self> {
        Arc::new(Self(Mutex::new(SystemTime::now() + Duration::from_millis(1))))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }

    /// Moves the clock to a millisecond past the real time (unless it is ahead already), so rows
    /// written since are due.
    pub fn catch_up(&self) {
        let mut now = self.0.lock().unwrap();
        *now = (*now).max(SystemTime::now() + Duration::from_millis(1));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }
}

/// A drainer (`--once`) of the config `text`, which must load without a diagnostic.
pub async fn drainer(url: &str, text: &str, clock: &Arc<ManualClock>) -> (Database, Drainer) {
    drainer_with_variables(url, text, clock, Variables::Process).await
}

/// A drainer (`--once`) of the config `text` that reads its sinks' `env:NAME` values from
/// `variables`: the tests share one process, whose environment they never change.
pub async fn drainer_with_variables(
    url: &str,
    text: &str,
    clock: &Arc<ManualClock>,
    variables: Variables,
) -> (Database, Drainer) {
    let database = Database::connect(url, Access::ReadWrite).await.unwrap();
    let mut sources = cascade::diagnostic::Sources::default();
    sources.add("cascade.toml", text.to_owned());
    let loaded = cascade::config::load_sources(sources);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let options = DrainOptions { once: true, variables, ..DrainOptions::default() };
    let drainer = Drainer::new(database.clone(), &loaded.config, options, clock.clone()).unwrap();
    (database, drainer)
}

/// One pass over the shards due now.
pub async fn pass(drainer: &Drainer) -> DrainReport {
    drainer.drain_due(&Arc::new(AtomicBool::new(false))).await.unwrap()
}

/// An outbox row to write: its scope, shard, category and object.
pub struct Row<'a> {
    pub scope: &'a str,
    pub shard: Option<&'a str>,
    pub category: &'a str,
    pub object: String,
}

/// Creates the tool's tables and writes `rows` in order (ids 1, 2, ...), each with the payload
/// `{"n": OBJECT}` and the model `project`, as an application would: through the `cascade_outbox`
/// view, or on MariaDB, whose view is read only, into `cascade_outbox_entry` with the names' codes.
pub fn write_rows(url: &str, rows: &[Row<'_>]) {
    create_tool_tables(url);
    let mysql = url.starts_with("mysql:");
    for chunk in rows.chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|row| {
                let shard = row.shard.map_or("NULL".to_owned(), |shard| format!("'{shard}'"));
                let payload = format!("{{\"n\": \"{}\"}}", row.object);
                if mysql {
                    let code = |name: &str| format!("(SELECT code FROM cascade_outbox_name WHERE name = '{name}')");
                    let (scope, category, model) = (code(row.scope), code(row.category), code("project"));
                    format!("({scope}, {shard}, {category}, {model}, '{}', '{payload}')", row.object)
                } else {
                    format!("('{}', {shard}, '{}', 'project', '{}', '{payload}')", row.scope, row.category, row.object)
                }
            })
            .collect();
        if mysql {
            let mut names: Vec<&str> = chunk.iter().flat_map(|row| [row.scope, row.category]).collect();
            names.push("project");
            let names: Vec<String> = names.iter().map(|name| format!("('{name}')")).collect();
            let register = "INSERT INTO cascade_outbox_name (name) VALUES";
            texts(url, &format!("{register} {} ON DUPLICATE KEY UPDATE name = name", names.join(", ")));
        }
        let table = if mysql { "cascade_outbox_entry" } else { "cascade_outbox" };
        let columns = if mysql {
            "scope_code, shard_identifier, category_code, model_code"
        } else {
            "scope, shard_identifier, category, model"
        };
        texts(
            url,
            &format!("INSERT INTO {table} ({columns}, object_identifier, payload) VALUES {}", values.join(", ")),
        );
    }
}
