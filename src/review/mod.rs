//! Reviewing a config change: what a change from a base config to a head config does to the
//! deletions they describe. Each change is classified by what it does to rows, so a reviewer (or a
//! CI gate) sees first what deletes more or other rows than before:
//!
//! - **destructive**: more or other rows deleted or changed than before (a new delete or nullify
//!   relation, nullify → delete, a status guard removed or widened, a retention added or
//!   shortened, another table, key or relation column);
//! - **attention**: the same rows, other effects (a relation or model removed, delete →
//!   nullify, a category moved to another scope, a shard key, payload or sink changed);
//! - **safe**: how fast and in what pieces (chunk sizes, strategies, rate limits, tuning).
//!
//! Each change names the root models whose deletions it reaches. The module compares the
//! configs as written (declared values, with the defaults a declaration falls back to), so a
//! comment, a reordered file or a table moved to another file is no change.

mod counts;
mod format;
pub mod git;
pub mod github;
mod html;
mod markdown;
mod models;
mod outbox;
mod relations;
mod remote;
mod roots;
mod settings;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::diagnostic::{Location, Sources};
use crate::render::html::RelationKey;

pub use counts::{CountError, Counted, SideCounts, count};
pub use format::{CountedRoots, DiffFormat, MARKER};
pub use html::{Configs, MAX_DRAWN_ROOTS};

/// What a change does to rows, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// More or other rows deleted (or nullified) than before.
    Destructive,
    /// The same rows, with other effects: outbox routing, rows kept instead of deleted.
    Attention,
    /// How fast and in what pieces the same rows go.
    Safe,
}

impl Severity {
    /// The severity's name, as JSON and `--fail-on` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Destructive => "destructive",
            Severity::Attention => "attention",
            Severity::Safe => "safe",
        }
    }

    /// Whether a change of this severity is at least as serious as `threshold`.
    pub fn reaches(self, threshold: Severity) -> bool {
        self <= threshold
    }
}

/// What changed, as one word per kind (the JSON `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A model was declared.
    ModelAdded,
    /// A model's declaration was removed.
    ModelRemoved,
    /// A model deletes from another table.
    TableChanged,
    /// A model's key columns changed.
    KeyChanged,
    /// A model's strategy (per_row or bulk) changed.
    StrategyChanged,
    /// A model's chunk size changed.
    ChunkSizeChanged,
    /// A model names another rate-limit option, or none.
    RateLimitChanged,
    /// A model's status guard was added, removed or changed.
    StatusChanged,
    /// The outbox category a model writes changed.
    OutboxChanged,
    /// The columns copied into a model's tombstones changed.
    PayloadChanged,
    /// A model's partition retention changed.
    RetentionChanged,
    /// The category a remote model reads changed.
    RemoteCategoryChanged,
    /// `require_all_references` or `ignore_references` changed.
    ReferencesCheckChanged,
    /// A relation was declared.
    RelationAdded,
    /// A relation was removed.
    RelationRemoved,
    /// A relation's `on_delete` changed.
    OnDeleteChanged,
    /// A relation's columns, or the parent columns they reference, changed.
    RelationColumnsChanged,
    /// A relation's strategy override changed.
    RelationStrategyChanged,
    /// A relation's chunk size override changed.
    RelationChunkSizeChanged,
    /// A model's relations run in another order.
    RelationOrderChanged,
    /// An outbox scope was declared.
    ScopeAdded,
    /// An outbox scope was removed.
    ScopeRemoved,
    /// A category is registered in another scope, or in none.
    CategoryScopeChanged,
    /// A scope's shard key changed.
    ShardKeyChanged,
    /// The sink a scope or category delivers to changed.
    RoutingChanged,
    /// A sink was declared.
    SinkAdded,
    /// A sink was removed.
    SinkRemoved,
    /// A sink's definition (command, URL, headers, environment, limits) changed.
    SinkChanged,
    /// An `[options]` value was added, removed or changed.
    OptionChanged,
    /// A `[settings]` value changed.
    SettingChanged,
}

/// Where a change is written: in the head config, or in the base for what the head removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// `head` or `base`.
    pub side: &'static str,
    /// The file, as the config was loaded (a `REV:path` for a base read from git).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// One change to what deletions do.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// How serious it is.
    pub severity: Severity,
    /// What changed.
    pub kind: ChangeKind,
    /// The model it is about (the parent of a relation), if any.
    pub model: Option<String>,
    /// The relation it is about, as `parent → child (column)`, if any.
    pub relation: Option<String>,
    /// What else it is about, where it is no model: a setting, an option, a scope, a sink or a
    /// category, as the config writes it (`[settings] per_row_chunk_size`).
    pub subject: Option<String>,
    /// The value before (`null`: none).
    pub before: Value,
    /// The value after (`null`: none).
    pub after: Value,
    /// One line saying what the change does to deletions.
    pub reason: String,
    /// The root models whose deletions the change reaches.
    pub roots: Vec<String>,
    /// Where it is written.
    pub location: Option<Place>,
    /// The relation it is about, as plans name relations (for drawing it).
    #[serde(skip)]
    pub relation_key: Option<RelationKey>,
    /// The models whose deletions it acts in.
    #[serde(skip)]
    pub touches: Vec<String>,
}

/// One side of a review: a config and the files its locations point into.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// The config.
    pub config: &'a Config,
    /// Its files.
    pub sources: &'a Sources,
}

impl Side<'_> {
    fn place(&self, side: &'static str, location: &Location) -> Place {
        let (line, column) = self.sources.line_column(location);
        Place { side, file: self.sources.name(location.file).to_owned(), line, column }
    }
}

/// Every change from `base` to `head`, worst first (in the head's declaration order within a
/// severity), and the roots each reaches.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The changes.
    pub changes: Vec<Change>,
}

impl Review {
    /// Compares two configs.
    pub fn compare(base: Side<'_>, head: Side<'_>) -> Review {
        let roots = roots::Roots::new(base.config, head.config);
        let mut found = Found { base, head, roots, changes: Vec::new() };
        models::compare(&mut found);
        remote::compare(&mut found);
        relations::compare(&mut found);
        outbox::compare(&mut found);
        settings::compare(&mut found);
        let mut changes = found.changes;
        // Stable: within a severity, changes keep the order they were found in.
        changes.sort_by_key(|change| change.severity);
        Review { changes }
    }

    /// The most serious severity found, if any change was.
    pub fn worst(&self) -> Option<Severity> {
        self.changes.iter().map(|change| change.severity).min()
    }

    /// How many changes of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.changes.iter().filter(|change| change.severity == severity).count()
    }

    /// Per root model, how many changes of each severity reach its deletions, in the order the
    /// roots are first reached by the worst changes.
    pub fn by_root(&self) -> IndexMap<String, [usize; 3]> {
        let mut roots: IndexMap<String, [usize; 3]> = IndexMap::new();
        for change in &self.changes {
            for root in &change.roots {
                roots.entry(root.clone()).or_default()[change.severity as usize] += 1;
            }
        }
        roots
    }
}

/// The changes found so far, with both sides to place them.
struct Found<'a> {
    base: Side<'a>,
    head: Side<'a>,
    roots: roots::Roots,
    changes: Vec<Change>,
}

/// A change under construction: what it is about and where, before its roots are known.
struct Draft {
    severity: Severity,
    kind: ChangeKind,
    model: Option<String>,
    relation: Option<String>,
    relation_key: Option<RelationKey>,
    subject: Option<String>,
    before: Value,
    after: Value,
    reason: String,
    /// The models whose deletions the change acts in (the model, unless set otherwise).
    touches: Vec<String>,
}

impl Draft {
    fn new(severity: Severity, kind: ChangeKind, reason: impl Into<String>) -> Self {
        Draft {
            severity,
            kind,
            model: None,
            relation: None,
            relation_key: None,
            subject: None,
            before: Value::Null,
            after: Value::Null,
            reason: reason.into(),
            touches: Vec::new(),
        }
    }

    fn model(mut self, model: &str) -> Self {
        self.model = Some(model.to_owned());
        self.touches = vec![model.to_owned()];
        self
    }

    fn subject(mut self, subject: String) -> Self {
        self.subject = Some(subject);
        self
    }

    fn touching(mut self, models: Vec<String>) -> Self {
        self.touches = models;
        self
    }

    fn relation(mut self, parent: &str, relation: &crate::config::Relation) -> Self {
        self.relation = Some(relations::describe(parent, relation));
        let columns = relation.column_names();
        self.relation_key =
            Some(RelationKey { parent: parent.to_owned(), child: relation.model.value.clone(), columns });
        self
    }

    fn values(mut self, before: impl Serialize, after: impl Serialize) -> Self {
        self.before = serde_json::to_value(before).unwrap_or(Value::Null);
        self.after = serde_json::to_value(after).unwrap_or(Value::Null);
        self
    }
}

impl Found<'_> {
    /// Records `draft`, written at `head` (or, for what the head no longer has, at `base`).
    fn add(&mut self, draft: Draft, head: Option<&Location>, base: Option<&Location>) {
        let location = match (head, base) {
            (Some(location), _) => Some(self.head.place("head", location)),
            (None, Some(location)) => Some(self.base.place("base", location)),
            (None, None) => None,
        };
        self.changes.push(Change {
            severity: draft.severity,
            kind: draft.kind,
            model: draft.model,
            relation: draft.relation,
            subject: draft.subject,
            before: draft.before,
            after: draft.after,
            reason: draft.reason,
            roots: self.roots.reaching(&draft.touches),
            location,
            relation_key: draft.relation_key,
            touches: draft.touches,
        });
    }
}

#[cfg(test)]
mod tests;
