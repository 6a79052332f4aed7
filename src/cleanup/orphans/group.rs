//! A group of orphans to clean up: one child model's, by some of its relations, resolved against
//! the schema (its table and key) before any statement is written for it.

use super::relations::Candidate;
use crate::cleanup::batches::keyed_table;
use crate::config::describe_columns;
use crate::db::sql::KeyType;
use crate::engine::Engine;
use crate::schema::Table;

/// The orphans of one child model by some of its relations, resolved for deleting.
pub(super) struct Group<'a> {
    pub(super) engine: &'a Engine,
    pub(super) model: &'a str,
    pub(super) table: &'a Table,
    /// The key column as the catalog spells it, and how its values are bound.
    pub(super) key: String,
    pub(super) key_type: KeyType,
    pub(super) relations: Vec<&'a Candidate<'a>>,
}

impl<'a> Group<'a> {
    /// The group, or why its orphans cannot be cleaned up.
    pub(super) fn resolve(engine: &'a Engine, model: &'a str, relations: &[&'a Candidate<'a>]) -> Result<Self, String> {
        let (table, column) = keyed_table(engine, model)?;
        let relations = relations.to_vec();
        Ok(Self { engine, model, table, key: column.name.clone(), key_type: column.key_type.clone(), relations })
    }

    /// The checkpoint of the orphans of `relations`.
    pub(super) fn checkpoint(&self, relations: &[&Candidate<'_>]) -> String {
        let columns: Vec<String> = relations.iter().map(|relation| describe_columns(&relation.columns)).collect();
        format!("orphans:{}:{}", self.model, columns.join(","))
    }

    /// Whether the model's rows carry a `status`, which a deletion sets before deleting them.
    pub(super) fn has_status(&self) -> bool {
        self.engine.config().model(self.model).is_some_and(|model| model.status.is_some())
    }
}
