//! Orphans: child rows whose relation columns are not NULL and hold values that no parent row
//! has. Reported per declared relation of the config and per foreign key of the live schema
//! that the config does not declare, over one column or several; counted in SQL by an
//! anti-join (`NOT EXISTS`,
//! which unlike `NOT IN` is not defeated by a NULL among the parent keys), so no rows are
//! loaded (only the keys of a `sample`) and nothing is changed.
//!
//! [`preview_delete`] is the dry run of deleting them: each orphan as the root of its own
//! cascade, counted through the child model's plan with the engine's counting facility.
//! [`delete`] is the confirmed clean-up, in batches.
//!
//! A remote model's relations are reported too: their orphans are the late children its applied
//! tombstones still name (`remote`), which the inbox's sweep deletes.
//!
//! `filter` resolves which relations are asked for, `relations` finds them (declared ones and
//! undeclared foreign keys), `sql` holds every statement (all built on the anti-join), and
//! `report`, `preview` and `delete` are the three things done with them.

mod delete;
mod filter;
mod group;
mod preview;
mod relations;
mod remote;
mod report;
mod sql;

use indexmap::IndexMap;
use serde::Serialize;

pub use delete::{OrphanCleanup, delete};
pub use preview::{DeletePreview, RootPreview, preview_delete, refusal};
pub use report::report;

use crate::cleanup::batches::BatchError;
use crate::config::OnDelete;
use crate::db::DbError;
use crate::engine::CountError;

/// Which relations to report, and how many orphan keys to list for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanOptions {
    /// Only relations whose parent or child is one of these models (a name that is no model may
    /// name a table of the database instead); every relation when empty.
    pub models: Vec<String>,
    /// Only these relations, each `CHILD.COLUMN`: the child model (or table) and its relation
    /// column; every relation when empty. Kept when both this and `models` match.
    pub relations: Vec<String>,
    /// How many orphan keys to list per relation, lowest first (0: none).
    pub sample: u64,
}

/// The orphans of every reported relation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OrphanReport {
    /// Declared relations in config order, then undeclared foreign keys in schema order.
    pub relations: Vec<RelationOrphans>,
    /// Orphans over all relations (a row orphaned by two relations counts in each).
    pub total: u64,
    /// Relations that could not be counted, and why.
    pub skipped: Vec<SkippedRelation>,
}

/// One relation: child columns that reference a parent's columns (its key, or those the
/// relation `references`), pair by pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelationOrphans {
    /// The parent model; for an undeclared foreign key, the model of the referenced table, or
    /// `None` when no model has that table.
    pub parent: Option<String>,
    /// The child model, or `None` when no model has the referencing table.
    pub child: Option<String>,
    /// The child's relation columns; serialized as `column`, one string (`a, b` over several).
    #[serde(rename = "column", serialize_with = "comma_separated")]
    pub columns: Vec<String>,
    /// Whether the config declares the relation (`false`: a foreign key of the schema only).
    pub declared: bool,
    /// Child rows whose columns are all not NULL and match no parent row.
    pub orphans: u64,
    /// The keys of the first orphans (by key), as text; each a list of texts for a composite key.
    pub sample: Vec<serde_json::Value>,
    /// `CREATE INDEX ...` when no index of the child table leads with the columns, else `None`.
    pub index: Option<String>,
    /// The parent's table, as the database names it (`schema.table` off the search path).
    pub parent_table: String,
    /// The parent's columns that the child's columns reference, in their order; serialized as
    /// one string, as `column` is.
    #[serde(serialize_with = "comma_separated")]
    pub parent_key: Vec<String>,
    /// The child's table, as the database names it.
    pub child_table: String,
    /// The child key columns the sample lists (empty when the table has no key to list).
    pub key: Vec<String>,
    /// What the config does to a child row when its parent is deleted (`None` when undeclared).
    pub on_delete: Option<OnDelete>,
    /// For a remote model's relation, the category of its tombstones: the orphans are the rows
    /// that name the key of an applied tombstone still kept (written after it was applied), and
    /// `parent_table` is the inbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_category: Option<String>,
}

/// Columns as the JSON report writes them: one string, `a, b` over several.
fn comma_separated<S: serde::Serializer>(columns: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&columns.join(", "))
}

impl RelationOrphans {
    /// The relation's columns as one string: `a`, or `a, b` over several.
    pub fn column(&self) -> String {
        self.columns.join(", ")
    }
}

/// A relation or foreign key that is not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedRelation {
    /// The parent model, or the referenced table when no model has it.
    pub parent: String,
    /// The child model, or the referencing table when no model has it.
    pub child: String,
    /// The child's relation column (several, comma-separated, for a composite foreign key).
    pub column: String,
    /// Whether the config declares the relation.
    pub declared: bool,
    /// Why it is not counted.
    pub reason: String,
}

/// Why the orphans could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum OrphanError {
    /// A model filter names neither a model nor a table.
    #[error("unknown model `{name}`{}", suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    UnknownModel {
        /// The name as given.
        name: String,
        /// "did you mean `x`?" when a model's name is close.
        suggestion: Option<String>,
    },
    /// A relation filter is not `CHILD.COLUMN`.
    #[error("`{0}` is not a relation: write CHILD.COLUMN, such as `event.project_id`")]
    NotARelation(String),
    /// A relation filter matches no relation and no foreign key.
    #[error("no relation `{relation}` in the config or the database{}", suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    UnknownRelation {
        /// The filter as given.
        relation: String,
        /// "did you mean `x`?" when a relation's name is close.
        suggestion: Option<String>,
    },
    /// A count or sample query failed.
    #[error("cannot count the orphans of {relation}: {source}")]
    Database {
        /// The relation, as `parent → child.column`.
        relation: String,
        /// What the database said.
        source: DbError,
    },
    /// Deleting the orphans failed or was refused.
    #[error(transparent)]
    Cleanup(#[from] BatchError),
    /// Counting what deleting the orphans would remove failed.
    #[error("cannot count what deleting the orphans of `{model}` would remove: {source}")]
    Count {
        /// The child model whose orphans were counted.
        model: String,
        /// Why.
        source: CountError,
    },
}

/// A relation whose orphans deleting would not touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftAlone {
    /// The parent model, or table.
    pub parent: String,
    /// The child model, or table.
    pub child: String,
    /// The relation column (several, comma-separated, for a relation over several).
    pub column: String,
    /// Its orphans.
    pub orphans: u64,
    /// Why they are left alone.
    pub reason: String,
}

impl LeftAlone {
    fn of(relation: &RelationOrphans, reason: &str) -> Self {
        Self {
            parent: relation.parent.clone().unwrap_or_else(|| relation.parent_table.clone()),
            child: relation.child.clone().unwrap_or_else(|| relation.child_table.clone()),
            column: relation.column(),
            orphans: relation.orphans,
            reason: reason.to_owned(),
        }
    }
}

/// Why orphans are left alone that the config says how to clean, in the dry run and the real one.
fn cannot_clean(reason: impl std::fmt::Display) -> String {
    format!("its orphans cannot be cleaned up: {reason}")
}

/// Why the orphans of an undeclared foreign key are left alone.
const UNDECLARED: &str =
    "not declared in the config, so its rows' own children are unknown: declare the relation to clean its orphans up";

/// Puts the groups that delete before those that nullify (each kind in report order): a row
/// dangling by a delete relation and by a nullify relation is then deleted, and archived, as it
/// was, rather than first having its column set to NULL by the clean-up itself.
fn deletes_first<R>(groups: &mut IndexMap<(&str, OnDelete), Vec<R>>) {
    groups.sort_by_key(|(_, action), _| *action == OnDelete::Nullify);
}

#[cfg(test)]
mod tests {
    use super::OrphanOptions;
    use super::filter::Filter;
    use super::relations::candidates;
    use crate::db::Kind;
    use crate::planner::fixture;
    use crate::schema::parse_ddl;

    const DDL: &str = "
        CREATE TABLE project (id bigint PRIMARY KEY);
        CREATE TABLE event (id bigint PRIMARY KEY, project_id bigint);
        CREATE TABLE grp (id bigint PRIMARY KEY);
        CREATE TABLE hash (id bigint PRIMARY KEY, grp_id bigint REFERENCES grp (id), project_id bigint REFERENCES project);";

    const CONFIG: &str = r#"
[models.project]
table = "project"
children = [{ model = "event", column = "project_id" }, { model = "hash", column = "project_id" }]

[models.event]
table = "event"
strategy = "bulk"

[models.hash]
table = "hash"
strategy = "bulk"
"#;

    #[test]
    fn orphans_are_counted_with_an_anti_join_and_undeclared_keys_follow_the_declared_ones() {
        let config = fixture::config(CONFIG);
        let schema = parse_ddl(DDL).schema;
        let mut filter = Filter::new(&OrphanOptions::default(), &config, &schema).unwrap();
        let (counted, skipped) = candidates(&config, &schema, &mut filter);
        assert!(skipped.is_empty());
        let found: Vec<(Option<&str>, &str, String, bool)> =
            counted.iter().map(|c| (c.parent, c.child_table.name.as_str(), c.column(), c.declared)).collect();
        // hash.project_id is declared, so its foreign key is not reported a second time.
        assert_eq!(
            found,
            [
                (Some("project"), "event", "project_id".to_owned(), true),
                (Some("project"), "hash", "project_id".to_owned(), true),
                (None, "hash", "grp_id".to_owned(), false),
            ]
        );
        let count = counted[0].count(Kind::Postgres.backend());
        assert_eq!(
            count.sql,
            r#"SELECT COUNT(*) FROM "event" AS "orphan" LEFT JOIN "project" AS "parent" ON "parent"."id" = "orphan"."project_id" WHERE "orphan"."project_id" IS NOT NULL AND "parent"."id" IS NULL"#
        );
        let sample = counted[2].sample(Kind::Sqlite.backend(), 5);
        assert!(sample.sql.ends_with(r#"ORDER BY "orphan"."id" LIMIT ?1"#), "{}", sample.sql);
        assert!(!sample.sql.contains("NOT IN"));
    }

    /// Over several columns: one equality per pair, every column tested for NULL (a row with a
    /// NULL in one of them references nothing).
    #[test]
    fn orphans_over_several_columns_match_on_every_pair() {
        let config = fixture::config(
            r#"
[models.node]
table = "node"
key = ["node_id", "version"]
children = [{ model = "edge", columns = ["node_id", "version"] }]

[models.edge]
table = "edge"
strategy = "bulk"
"#,
        );
        let schema = parse_ddl(
            "CREATE TABLE node (node_id bigint, version bigint, PRIMARY KEY (node_id, version));
             CREATE TABLE edge (id bigint PRIMARY KEY, node_id bigint, version bigint);",
        )
        .schema;
        let mut filter = Filter::new(&OrphanOptions::default(), &config, &schema).unwrap();
        let (counted, skipped) = candidates(&config, &schema, &mut filter);
        assert!(skipped.is_empty());
        assert_eq!(counted[0].column(), "node_id, version");
        assert_eq!(
            counted[0].count(Kind::Postgres.backend()).sql,
            r#"SELECT COUNT(*) FROM "edge" AS "orphan" LEFT JOIN "node" AS "parent" ON "parent"."node_id" = "orphan"."node_id" AND "parent"."version" = "orphan"."version" WHERE "orphan"."node_id" IS NOT NULL AND "orphan"."version" IS NOT NULL AND "parent"."node_id" IS NULL"#
        );
    }

    /// Under a parent key that is not unique, SQLite's join would read every parent row holding
    /// the value: the count stays a `NOT EXISTS`, which stops at the first.
    #[test]
    fn orphans_of_a_key_that_is_not_unique_are_counted_with_not_exists() {
        let config = fixture::config(&CONFIG.replace("table = \"project\"", "table = \"project\"\nkey = \"code\""));
        let schema = parse_ddl(&DDL.replace("id bigint PRIMARY KEY);", "id bigint PRIMARY KEY, code bigint);")).schema;
        let mut filter = Filter::new(&OrphanOptions::default(), &config, &schema).unwrap();
        let (counted, _) = candidates(&config, &schema, &mut filter);
        let count = counted[0].count(Kind::Sqlite.backend());
        assert_eq!(
            count.sql,
            r#"SELECT COUNT(*) FROM "event" AS "orphan" WHERE "orphan"."project_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "project" AS "parent" WHERE "parent"."code" = "orphan"."project_id")"#
        );
    }
}
