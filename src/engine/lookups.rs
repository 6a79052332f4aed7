//! The lookups of every model's deletion checked on the live database, as `validate
//! --database-url` reports them: a relation whose column the database cannot compare with its
//! parent's keys refuses every deletion through it before its first write, so it is an error of
//! the config there too.

use super::deletion::uncomparable_relations;
use crate::db::{Database, DbError};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{self, CheckedConfig};
use crate::schema::Schema;

/// `relation-type-mismatch` at each relation that a deletion of some model would refuse because
/// the database cannot compare its column with its parent's keys; the message and help are the
/// deletion's. Models that cannot be a root (a composite key) are checked through their parents.
pub async fn check_lookups(
    database: &Database,
    config: &CheckedConfig,
    schema: &Schema,
) -> Result<Vec<Diagnostic>, DbError> {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    // Each relation once, however many models' plans reach it.
    let mut checked = std::collections::HashSet::new();
    for model in config.models.keys() {
        let Ok(plan) = planner::compile(config, model) else { continue };
        let (found, _) = uncomparable_relations(database, &plan, schema, &mut checked).await?;
        for uncomparable in found {
            let relation = config.model(&uncomparable.parent_model).and_then(|parent| {
                parent.children.iter().find(|relation| {
                    relation.model.value == uncomparable.child_model && relation.column_names() == uncomparable.columns
                })
            });
            let Some(relation) = relation else { continue };
            diagnostics.push(
                Diagnostic::new(
                    Code::RelationTypeMismatch,
                    relation.columns_location(),
                    format!(
                        "`{}` cannot be looked up by the keys of `{}`: {}",
                        uncomparable.child, uncomparable.parent, uncomparable.reason
                    ),
                )
                .label("the database cannot compare this with the parent's keys")
                .help("give the column the key's type"),
            );
        }
    }
    Ok(diagnostics)
}
