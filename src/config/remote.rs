//! Remote models: parents whose rows live in another database. Their deletions arrive as that
//! database's outbox tombstones, and deleting one means deleting (or nullifying) the local rows
//! that name it, the remote model's children.

use schemars::JsonSchema;
use serde::Serialize;

use super::located::Located;
use super::types::{Key, Model, Relation};
use crate::diagnostic::Location;

/// `[models.X] remote = { category = "..." }`: a model whose rows are in another database. It
/// has no table here and is never a child; its children are local models.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RemoteModel {
    /// The model's name: its key under `[models]`.
    #[serde(skip)]
    pub name: Located<String>,
    /// Where the model's deletions come from.
    pub remote: Remote,
    /// The key column of the model's rows in the other database, whose values its tombstones
    /// carry (one column).
    #[schemars(extend("default" = "id"))]
    pub key: Option<Located<Key>>,
    /// The local rows that name a row of the model, deleted (`on_delete = "delete"`, the
    /// default) or set to NULL (`"nullify"`) when its tombstone arrives.
    #[serde(default)]
    pub children: Vec<Relation>,
}

/// `remote = { category = "..." }`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Remote {
    /// Where it is written.
    #[serde(skip)]
    pub location: Location,
    /// The other database's outbox category whose tombstones say that a row of the model was
    /// deleted there.
    pub category: Located<String>,
}

/// The JSON Schema of `[models]`: each entry a model of a local table or a remote model (the
/// config keeps the two apart, in [`Config::models`](super::Config::models) and
/// [`Config::remote_models`](super::Config::remote_models)).
pub(super) fn models_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let local = generator.subschema_for::<Model>();
    let remote = generator.subschema_for::<RemoteModel>();
    schemars::json_schema!({ "type": "object", "additionalProperties": { "anyOf": [local, remote] } })
}
