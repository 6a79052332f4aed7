//! The typed config. The same types describe one file (for the JSON Schema that editors use) and
//! the merged config of all files; every value remembers where it was written.

use std::collections::BTreeSet;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;

use super::located::Located;
use super::outbox::{Outbox, Scope, Sink};
use super::remote::RemoteModel;
use crate::diagnostic::Location;

/// A cascade config: models, the relations between them, and the outbox registry. All `*.toml`
/// files under the config directory are merged into one.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(title = "cascade config", deny_unknown_fields)]
pub struct Config {
    /// Defaults that apply to every model.
    #[serde(default)]
    pub settings: Settings,
    /// Runtime-tunable numbers, such as rate limits in rows per second. Rows of the table
    /// `cascade_option` override these values while a deletion runs.
    #[serde(default)]
    pub options: IndexMap<String, Located<f64>>,
    /// The models: one per table that takes part in a deletion, keyed by model name, and the
    /// remote models (`remote = { category = "..." }`), whose rows are in another database.
    #[serde(default)]
    #[schemars(schema_with = "super::remote::models_schema")]
    pub models: IndexMap<String, Model>,
    /// The remote models, declared under `[models]` with `remote`.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(skip)]
    pub remote_models: IndexMap<String, RemoteModel>,
    /// The transactional-outbox registry.
    #[serde(default)]
    pub outbox: Outbox,
    /// Models declared with errors (already reported) and so missing from `models`: a relation
    /// to one of them is not also an unknown model.
    #[serde(skip)]
    pub unreadable_models: BTreeSet<String>,
    /// Sinks whose `command` or `url` has errors (already reported) and so missing from
    /// `outbox.sinks`: a scope naming one is not also told the sink does not exist.
    #[serde(skip)]
    pub unreadable_sinks: BTreeSet<String>,
    /// Options whose value has errors (already reported) and so missing from `options`: a model
    /// naming one is not also told the option is not declared.
    #[serde(skip)]
    pub unreadable_options: BTreeSet<String>,
}

/// Default chunk size of `per_row` models when `[settings]` sets none.
pub const DEFAULT_PER_ROW_CHUNK_SIZE: u64 = 100;
/// Default chunk size of `bulk` models when `[settings]` sets none.
pub const DEFAULT_BULK_CHUNK_SIZE: u64 = 10_000;
/// Largest chunk size accepted: beyond it one transaction would hold locks for too long.
pub const MAX_CHUNK_SIZE: u64 = 1_000_000;
/// Attempts a scheduled deletion gets when `[settings] max_attempts` is not set.
pub const DEFAULT_MAX_ATTEMPTS: u64 = 5;
/// Seconds between attempts when `[settings] retry_delay_seconds` is not set.
pub const DEFAULT_RETRY_DELAY_SECONDS: u64 = 5 * 60;
/// Seconds a claim lives without a heartbeat when `[settings] lease_seconds` is not set.
pub const DEFAULT_LEASE_SECONDS: u64 = 6 * 3600;
/// Seconds a running deletion's heartbeat may be old before it counts as interrupted, when
/// `[settings] run_lease_seconds` is not set.
pub const DEFAULT_RUN_LEASE_SECONDS: u64 = 60;
/// Milliseconds a chunk's transaction aims at when `[settings] target_chunk_ms` is not set.
pub const DEFAULT_TARGET_CHUNK_MS: u64 = 50;
/// Largest chunk adaptive sizing grows to when `[settings] max_chunk_size` is not set.
pub const DEFAULT_MAX_CHUNK_SIZE: u64 = 25_000;
/// How often the worker prunes the partitions of models with `retention` when `[settings]
/// retention_interval` is not set.
pub const DEFAULT_RETENTION_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// How long applied tombstones of the inbox are kept, and swept for late children, by default.
pub const DEFAULT_INBOX_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Rows one application of inbox tombstones deletes or nullifies before it lets others go first,
/// by default.
pub const DEFAULT_INBOX_BUDGET_ROWS: u64 = 100_000;
/// How long one application of inbox tombstones runs before it lets others go first, by default.
pub const DEFAULT_INBOX_BUDGET_TIME: Duration = Duration::from_secs(60);
/// How often the inbox's kept tombstones are swept for late children by default.
pub const DEFAULT_INBOX_SWEEP_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// The longest `retention.keep`: 50 years (humantime's years of 365.25 days), so now minus
/// `keep` stays well after 1970, where the clock and the archive's timestamps begin.
pub const MAX_RETENTION_KEEP: Duration = Duration::from_secs(50 * 31_557_600);
/// Seconds a SQLite statement waits for another writer's lock when `[settings]
/// busy_timeout_seconds` is not set.
pub const DEFAULT_BUSY_TIMEOUT_SECONDS: u64 = crate::db::DEFAULT_BUSY_TIMEOUT.as_secs();

// Each key's default and range are declared here once, for the JSON Schema, the rules and the
// accessors alike.
/// Defaults that apply to every model.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Settings {
    /// Default chunk size (rows per transaction) of `per_row` models.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_PER_ROW_CHUNK_SIZE), range(min = 1, max = MAX_CHUNK_SIZE))]
    pub per_row_chunk_size: Option<Located<u64>>,
    /// Default chunk size (rows per transaction) of `bulk` models.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_BULK_CHUNK_SIZE), range(min = 1, max = MAX_CHUNK_SIZE))]
    pub bulk_chunk_size: Option<Located<u64>>,
    /// Database to use when neither `--database-url` nor `CASCADE_DATABASE_URL` is given, such
    /// as `sqlite://app.db` or `postgres://user@host/db`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_url: Option<Located<String>>,
    /// Attempts a scheduled deletion gets before the worker keeps it as failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_ATTEMPTS), range(min = 1, max = 1000))]
    pub max_attempts: Option<Located<u64>>,
    /// Seconds between a failed attempt of a scheduled deletion and the next.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_RETRY_DELAY_SECONDS))]
    pub retry_delay_seconds: Option<Located<u64>>,
    /// Seconds without a heartbeat after which a worker's claim is released for another worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_LEASE_SECONDS), range(min = 1))]
    pub lease_seconds: Option<Located<u64>>,
    /// Seconds without a heartbeat after which a running deletion counts as interrupted (its
    /// process is gone); running deletions heartbeat four times as often.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_RUN_LEASE_SECONDS), range(min = 1))]
    pub run_lease_seconds: Option<Located<u64>>,
    /// Whether chunk sizes adapt while a deletion runs so that each transaction takes about
    /// `target_chunk_ms`: a model's `chunk_size` is then where its chunks start. `false` keeps
    /// every chunk at its `chunk_size`, and the clean-up batches at 500 unless `--batch-size`
    /// says otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub adaptive: Option<Located<bool>>,
    /// Milliseconds each chunk's transaction aims at when chunk sizes adapt.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_TARGET_CHUNK_MS), range(min = 1, max = 60000))]
    pub target_chunk_ms: Option<Located<u64>>,
    /// Largest chunk (rows per transaction) adaptive sizing grows to; a model whose
    /// `chunk_size` is larger keeps that as its largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_CHUNK_SIZE), range(min = 1, max = MAX_CHUNK_SIZE))]
    pub max_chunk_size: Option<Located<u64>>,
    /// Seconds a statement on SQLite waits for another process's write lock before it fails with
    /// "database is locked".
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_BUSY_TIMEOUT_SECONDS), range(min = 0, max = 3600))]
    pub busy_timeout_seconds: Option<Located<u64>>,
    /// Operating-system users who may run the destructive commands (`delete --confirm`,
    /// `worker`, `outbox drain`); anyone else is refused before anything is touched. Names as
    /// the password database has them (a user id without a name is `uid N`); `$USER` is not
    /// consulted. Unset: anyone may. An empty list is an error (remove the key instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub allowed_users: Option<Located<Vec<Located<String>>>>,
    /// How often `cascade worker` prunes the partitions of every model with `retention`, such
    /// as `"1d"` or `"6h"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    #[schemars(extend("default" = humantime::format_duration(DEFAULT_RETENTION_INTERVAL).to_string()))]
    pub retention_interval: Option<Located<Duration>>,
    /// How long the inbox keeps an applied tombstone, such as `"7d"`: until then the worker
    /// sweeps for child rows written after it was applied (a race the sender cannot see) and
    /// deletes or nullifies them as it did the others; after it, the tombstone is removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    #[schemars(extend("default" = humantime::format_duration(DEFAULT_INBOX_RETENTION).to_string()))]
    pub inbox_retention: Option<Located<Duration>>,
    /// How often the worker sweeps the inbox's kept tombstones for late children, such as `"5m"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    #[schemars(extend("default" = humantime::format_duration(DEFAULT_INBOX_SWEEP_INTERVAL).to_string()))]
    pub inbox_sweep_interval: Option<Located<Duration>>,
    /// Rows one application of inbox tombstones (those of one remote model a worker claimed)
    /// deletes or nullifies before it stops between two batches and lets the tombstones behind
    /// it go first; what it left is continued by the next run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = DEFAULT_INBOX_BUDGET_ROWS))]
    pub inbox_budget_rows: Option<Located<u64>>,
    /// How long one application of inbox tombstones runs before it stops between two batches
    /// and lets the tombstones behind it go first, such as `"1m"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    #[schemars(extend("default" = humantime::format_duration(DEFAULT_INBOX_BUDGET_TIME).to_string()))]
    pub inbox_budget_time: Option<Located<Duration>>,
}

impl Settings {
    /// The chunk size of a model of `strategy` that sets none itself.
    pub fn chunk_size(&self, strategy: Strategy) -> u64 {
        match strategy {
            Strategy::PerRow => or_default(&self.per_row_chunk_size, DEFAULT_PER_ROW_CHUNK_SIZE),
            Strategy::Bulk => or_default(&self.bulk_chunk_size, DEFAULT_BULK_CHUNK_SIZE),
        }
    }

    /// Attempts a scheduled deletion gets.
    pub fn max_attempts(&self) -> u64 {
        or_default(&self.max_attempts, DEFAULT_MAX_ATTEMPTS)
    }

    /// Time between a failed attempt and the next.
    pub fn retry_delay(&self) -> Duration {
        Duration::from_secs(or_default(&self.retry_delay_seconds, DEFAULT_RETRY_DELAY_SECONDS))
    }

    /// How long a claim lives without a heartbeat.
    pub fn lease(&self) -> Duration {
        Duration::from_secs(or_default(&self.lease_seconds, DEFAULT_LEASE_SECONDS))
    }

    /// How old a running deletion's heartbeat may be before the run counts as interrupted.
    pub fn run_lease(&self) -> Duration {
        Duration::from_secs(or_default(&self.run_lease_seconds, DEFAULT_RUN_LEASE_SECONDS))
    }

    /// Whether chunk sizes adapt to `target_chunk_ms`.
    pub fn adaptive(&self) -> bool {
        self.adaptive.as_ref().is_none_or(|adaptive| adaptive.value)
    }

    /// How long each chunk's transaction aims to take when chunk sizes adapt.
    pub fn target_chunk(&self) -> Duration {
        Duration::from_millis(or_default(&self.target_chunk_ms, DEFAULT_TARGET_CHUNK_MS).max(1))
    }

    /// The largest chunk adaptive sizing grows to.
    pub fn max_chunk_size(&self) -> u64 {
        or_default(&self.max_chunk_size, DEFAULT_MAX_CHUNK_SIZE).clamp(1, MAX_CHUNK_SIZE)
    }

    /// How long a SQLite statement waits for another writer's lock.
    pub fn busy_timeout(&self) -> Duration {
        Duration::from_secs(or_default(&self.busy_timeout_seconds, DEFAULT_BUSY_TIMEOUT_SECONDS))
    }

    /// How often the worker prunes partitions.
    pub fn retention_interval(&self) -> Duration {
        self.retention_interval.as_ref().map_or(DEFAULT_RETENTION_INTERVAL, |interval| interval.value)
    }

    /// How long the inbox keeps applied tombstones, and sweeps them for late children.
    pub fn inbox_retention(&self) -> Duration {
        self.inbox_retention.as_ref().map_or(DEFAULT_INBOX_RETENTION, |retention| retention.value)
    }

    /// How often the worker sweeps the inbox's kept tombstones for late children.
    pub fn inbox_sweep_interval(&self) -> Duration {
        self.inbox_sweep_interval.as_ref().map_or(DEFAULT_INBOX_SWEEP_INTERVAL, |interval| interval.value)
    }

    /// What one application of inbox tombstones may use before the tombstones behind it go first.
    /// Rows, and time.
    pub fn inbox_budget(&self) -> (u64, Duration) {
        (
            or_default(&self.inbox_budget_rows, DEFAULT_INBOX_BUDGET_ROWS),
            self.inbox_budget_time.as_ref().map_or(DEFAULT_INBOX_BUDGET_TIME, |time| time.value),
        )
    }
}

impl Settings {
    /// Where the setting `key` (as written in `[settings]`) is set, if it is.
    pub fn location_of(&self, key: &str) -> Option<&Location> {
        fn at<T>(value: &Option<Located<T>>) -> Option<&Location> {
            value.as_ref().map(|value| &value.location)
        }
        match key {
            "per_row_chunk_size" => at(&self.per_row_chunk_size),
            "bulk_chunk_size" => at(&self.bulk_chunk_size),
            "database_url" => at(&self.database_url),
            "max_attempts" => at(&self.max_attempts),
            "retry_delay_seconds" => at(&self.retry_delay_seconds),
            "lease_seconds" => at(&self.lease_seconds),
            "run_lease_seconds" => at(&self.run_lease_seconds),
            "adaptive" => at(&self.adaptive),
            "target_chunk_ms" => at(&self.target_chunk_ms),
            "max_chunk_size" => at(&self.max_chunk_size),
            "busy_timeout_seconds" => at(&self.busy_timeout_seconds),
            "allowed_users" => at(&self.allowed_users),
            "retention_interval" => at(&self.retention_interval),
            _ => None,
        }
    }
}

fn or_default(value: &Option<Located<u64>>, default: u64) -> u64 {
    value.as_ref().map_or(default, |value| value.value)
}

/// One table taking part in deletions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Model {
    /// The model's name: its key under `[models]`.
    #[serde(skip)]
    pub name: Located<String>,
    /// The table this model deletes from, optionally schema-qualified (`schema.table`).
    pub table: Located<String>,
    /// Primary key: one column (integer, text or another type), or a list of columns for a
    /// composite key, which only `bulk` models can have. `bulk` models need a key only for their
    /// outbox tombstones.
    #[schemars(extend("default" = "id"))]
    pub key: Option<Located<Key>>,
    /// How rows are deleted: `per_row` (default) or `bulk`.
    pub strategy: Option<Located<Strategy>>,
    /// Rows per transaction. Defaults to `[settings]` by strategy.
    #[schemars(range(min = 1, max = MAX_CHUNK_SIZE))]
    pub chunk_size: Option<Located<u64>>,
    /// Name of an `[options]` entry giving the rate limit in rows per second. An absent option
    /// or a value of 0 means unthrottled.
    pub rate_limit: Option<Located<String>>,
    /// Should-proceed check on root rows: rows whose status is not in `proceed` are skipped,
    /// the others are set to `in_progress` before anything is deleted.
    pub status: Option<StatusCheck>,
    /// Outbox category written for every deleted row. It must be registered in exactly one
    /// scope under `[outbox.scopes]`.
    pub outbox: Option<Located<String>>,
    /// Columns of the deleted row copied into the outbox payload.
    #[serde(default)]
    pub outbox_payload: Vec<Located<String>>,
    /// Child relations, processed in this order before the model's own rows are deleted.
    #[serde(default)]
    pub children: Vec<Relation>,
    /// Every foreign key in the schema that points at this table must be a declared child
    /// relation or listed in `ignore_references`.
    #[schemars(extend("default" = false))]
    pub require_all_references: Option<Located<bool>>,
    /// Foreign keys to this table that `require_all_references` should not ask for.
    #[serde(default)]
    pub ignore_references: Vec<IgnoredReference>,
    /// Partition retention of a PostgreSQL or MySQL table partitioned by range on a time: `cascade
    /// partitions prune` drops every partition wholly older than `keep`.
    pub retention: Option<Retention>,
}

/// How long the rows of a range-partitioned table are kept.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Retention {
    /// Where the retention is written.
    #[serde(skip)]
    pub location: Location,
    /// How long rows are kept, such as `"90d"` or `"26weeks"`: a partition whose upper bound is
    /// at most now minus `keep` is dropped.
    #[schemars(with = "String")]
    pub keep: Located<Duration>,
    /// The partition key: the timestamp (or date) column the table is partitioned by range on (on
    /// MySQL, also through `TO_DAYS`, `UNIX_TIMESTAMP` or `YEAR` of it).
    pub column: Located<String>,
}

impl Retention {
    /// `keep` as people write it, such as `90d`.
    pub fn keep_text(&self) -> String {
        describe_keep(self.keep.value)
    }
}

/// A retention's `keep` as people write it: `90d` for whole days (humantime would say `2months
/// 29days 2h 52m 48s`), humantime's own words otherwise.
pub fn describe_keep(keep: Duration) -> String {
    const DAY: u64 = 86_400;
    if keep.as_secs().is_multiple_of(DAY) && keep.subsec_nanos() == 0 {
        format!("{}d", keep.as_secs() / DAY)
    } else {
        humantime::format_duration(keep).to_string()
    }
}

/// A primary key: one column, or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Key {
    /// A single-column key, such as `"id"`.
    Column(String),
    /// A composite key, such as `["playlist_id", "track_id"]`.
    Composite(Vec<String>),
}

impl Key {
    /// The key's columns, in order.
    pub fn columns(&self) -> Vec<String> {
        match self {
            Key::Column(column) => vec![column.clone()],
            Key::Composite(columns) => columns.clone(),
        }
    }

    /// The column of a single-column key.
    pub fn single(&self) -> Option<&str> {
        match self {
            Key::Column(column) => Some(column),
            Key::Composite(_) => None,
        }
    }
}

/// How a model's rows are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Rows are fetched a chunk at a time, their children processed, then the chunk is deleted
    /// by key. Needed for models with children, a status, or an outbox payload.
    PerRow,
    /// One set-based statement per chunk, no rows loaded. Only for models without
    /// delete-children.
    Bulk,
}

impl Strategy {
    /// Every strategy's name as written in a config.
    pub const NAMES: &'static [&'static str] = &["per_row", "bulk"];

    /// The strategy's name as written in a config.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::PerRow => "per_row",
            Strategy::Bulk => "bulk",
        }
    }

    /// The strategy named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "per_row" => Some(Strategy::PerRow),
            "bulk" => Some(Strategy::Bulk),
            _ => None,
        }
    }
}

/// A child relation: rows of `model` whose `column` (or `columns`) holds the parent's key, or
/// the parent's `references` column(s).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Relation {
    /// Where the relation is written.
    #[serde(skip)]
    pub location: Location,
    /// The child model.
    pub model: Located<String>,
    /// Column of the child table that references the parent's key (or `references`). A
    /// relation names `column` or `columns`, not both.
    pub column: Option<Located<String>>,
    /// Columns of the child table that together reference the parent (a composite foreign key),
    /// in the order of the parent's key columns (or of `references`).
    pub columns: Option<Vec<Located<String>>>,
    /// The parent's column (or columns, as many as `columns`) that the relation's columns
    /// reference, when not its key: a unique column (set) of the parent, such as `"login_id"`.
    pub references: Option<Located<Key>>,
    /// `delete` (default) deletes the child rows; `nullify` sets the column to NULL instead
    /// (this breaks cycles such as `employee.reports_to`); `database` leaves them to the foreign
    /// key's own `ON DELETE CASCADE` (for children only the database may delete), counted in plans
    /// and runs.
    pub on_delete: Option<Located<OnDelete>>,
    /// Overrides the child model's strategy for this relation.
    pub strategy: Option<Located<Strategy>>,
    /// Overrides the child model's chunk size for this relation.
    #[schemars(range(min = 1, max = MAX_CHUNK_SIZE))]
    pub chunk_size: Option<Located<u64>>,
}

impl Relation {
    /// What happens to the child rows: `on_delete`, or `delete` if unset.
    pub fn action(&self) -> OnDelete {
        self.on_delete.as_ref().map_or(OnDelete::Delete, |a| a.value)
    }

    /// The child's columns that reference the parent, as written (`column`, or `columns`); the
    /// reader makes sure there is at least one.
    pub fn columns(&self) -> Vec<&Located<String>> {
        match (&self.column, &self.columns) {
            (Some(column), _) => vec![column],
            (None, Some(columns)) => columns.iter().collect(),
            (None, None) => Vec::new(),
        }
    }

    /// The names of [`Relation::columns`].
    pub fn column_names(&self) -> Vec<String> {
        self.columns().into_iter().map(|column| column.value.clone()).collect()
    }

    /// The columns as people read them: `a`, or `(a, b)`.
    pub fn describe_columns(&self) -> String {
        describe_columns(&self.column_names())
    }

    /// Where the columns are written: the first one's place.
    pub fn columns_location(&self) -> Location {
        self.columns().first().map_or_else(|| self.location.clone(), |column| column.location.clone())
    }

    /// The parent's columns the relation's columns reference: `references`, else `parent`'s key
    /// (`id` when it declares none).
    pub fn referenced(&self, parent: &Model) -> Vec<String> {
        self.referenced_by(parent.key.as_ref())
    }

    /// The parent's columns the relation's columns reference, for a parent whose key is
    /// `parent_key` (`id` when `None`): `references`, else that key.
    pub fn referenced_by(&self, parent_key: Option<&Located<Key>>) -> Vec<String> {
        match (&self.references, parent_key) {
            (Some(references), _) => references.value.columns(),
            (None, Some(key)) => key.value.columns(),
            (None, None) => vec!["id".to_owned()],
        }
    }

    /// Whether the relation names `references` other than `parent`'s key.
    pub fn references_other_than_key(&self, parent: &Model) -> bool {
        let key = parent.key.as_ref().map_or_else(|| vec!["id".to_owned()], |key| key.value.columns());
        self.references.as_ref().is_some_and(|references| references.value.columns() != key)
    }
}

/// Columns as people read them: `a`, or `(a, b)`.
pub fn describe_columns(columns: &[String]) -> String {
    match columns {
        [one] => one.clone(),
        several => format!("({})", several.join(", ")),
    }
}

// Also what a plan node does to its rows.
/// What happens to child rows when their parent is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDelete {
    /// The child rows are deleted (children first).
    Delete,
    /// The child column is set to NULL.
    Nullify,
    /// The database deletes the child rows itself (the foreign key is `ON DELETE CASCADE`) when
    /// the parent's chunk goes: cascade counts them and runs no statement against their table.
    Database,
}

impl OnDelete {
    /// Every action's name as written in a config.
    pub const NAMES: &'static [&'static str] = &["delete", "nullify", "database"];

    /// The action's name as written in a config.
    pub fn as_str(self) -> &'static str {
        match self {
            OnDelete::Delete => "delete",
            OnDelete::Nullify => "nullify",
            OnDelete::Database => "database",
        }
    }

    /// Whether the rows go (deleted by cascade or by the database), not stay with a NULL: how
    /// counts, run reports and the audit trail file them.
    pub fn deletes(self) -> bool {
        self != OnDelete::Nullify
    }

    /// The action named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "delete" => Some(OnDelete::Delete),
            "nullify" => Some(OnDelete::Nullify),
            "database" => Some(OnDelete::Database),
            _ => None,
        }
    }
}

/// Should-proceed check on a status column of the root rows.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StatusCheck {
    /// The status column.
    pub column: Located<String>,
    /// Status values that allow the deletion to proceed.
    pub proceed: Vec<Located<StatusValue>>,
    /// Value written to the status column before anything is deleted.
    pub in_progress: Located<StatusValue>,
}

impl StatusCheck {
    /// The statuses a root may have and still be deleted: `proceed`, and `in_progress` so that a
    /// deletion interrupted after marking its roots resumes.
    pub fn proceed_or_in_progress(&self) -> Vec<Located<StatusValue>> {
        let mut statuses = self.proceed.clone();
        if !statuses.iter().any(|s| s.value == self.in_progress.value) {
            statuses.push(self.in_progress.clone());
        }
        statuses
    }
}

/// A status value: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusValue {
    /// An integer status, such as `2`.
    Integer(i64),
    /// A string status, such as `"active"`.
    Text(String),
}

/// A foreign key to this model's table that `require_all_references` should not ask for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IgnoredReference {
    /// The referencing table.
    pub table: Located<String>,
    /// The referencing column (or `columns`).
    pub column: Option<Located<String>>,
    /// The referencing columns of a composite foreign key.
    pub columns: Option<Vec<Located<String>>>,
    /// Why this reference is not deleted with the model.
    pub reason: Located<String>,
}

impl IgnoredReference {
    /// The referencing columns, as written (`column`, or `columns`).
    pub fn column_names(&self) -> Vec<String> {
        match (&self.column, &self.columns) {
            (Some(column), _) => vec![column.value.clone()],
            (None, Some(columns)) => columns.iter().map(|column| column.value.clone()).collect(),
            (None, None) => Vec::new(),
        }
    }
}

impl Config {
    /// The model named `name`, if there is one.
    pub fn model(&self, name: &str) -> Option<&Model> {
        self.models.get(name)
    }

    /// Every relation of every model, local and remote, with the name of the model declaring it.
    pub fn every_relation(&self) -> impl Iterator<Item = (&Located<String>, &Relation)> {
        let local = self.models.values().map(|model| (&model.name, &model.children));
        let remote = self.remote_models.values().map(|model| (&model.name, &model.children));
        local.chain(remote).flat_map(|(name, children)| children.iter().map(move |relation| (name, relation)))
    }

    /// The remote model whose tombstones are of `category`, if one reads them.
    pub fn remote_model_of(&self, category: &str) -> Option<&RemoteModel> {
        self.remote_models.values().find(|model| model.remote.category.value == category)
    }

    /// Every option's value as the config sets it (`cascade_option` rows may override them).
    pub fn option_values(&self) -> IndexMap<String, f64> {
        self.options.iter().map(|(name, value)| (name.clone(), value.value)).collect()
    }
}

impl Config {
    /// The sink that receives the messages of `category` in `scope`: the category's own sink,
    /// else the scope's. None when neither names a declared sink.
    pub fn sink_for(&self, scope: &str, category: &str) -> Option<&Sink> {
        let scope = self.outbox.scopes.get(scope)?;
        let name = scope.category_sinks.get(category).or(scope.sink.as_ref())?;
        self.outbox.sinks.get(&name.value)
    }

    /// Where the messages of `category` in `scope` go: for a scope with cells, each cell with
    /// its sink (`cell_sinks`); otherwise the one sink of [`Config::sink_for`], for the cell
    /// `""`. Cells and sinks that are not declared are left out.
    pub fn deliveries_of<'a>(&'a self, scope: &str, category: &str) -> Vec<(&'a str, &'a Sink)> {
        let Some(declared) = self.outbox.scopes.get(scope) else { return Vec::new() };
        if !declared.has_cells() {
            return self.sink_for(scope, category).map(|sink| ("", sink)).into_iter().collect();
        }
        declared
            .cells
            .iter()
            .filter_map(|cell| {
                let sink = declared.cell_sinks.get(&cell.value)?;
                Some((cell.value.as_str(), self.outbox.sinks.get(&sink.value)?))
            })
            .collect()
    }

    /// The scope a category is registered in (the first, if it is wrongly in several).
    pub fn scope_of(&self, category: &str) -> Option<&Scope> {
        self.outbox.scopes.values().find(|scope| scope.categories.iter().any(|c| c.value == category))
    }
}
