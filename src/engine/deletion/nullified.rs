//! The rows a deletion set to NULL, counted at its end from what it recorded
//! (`audit::nullified`): each row once however many relations set it to NULL, and none that the
//! run deleted afterwards, as the plan counts them.

use tracing::warn;

use super::{DeleteError, Deletion};
use crate::audit::nullified::{self, KEYS_PER_READ};
use crate::db::sql::Param;
use crate::db::{Keys, first_text};
use crate::engine::steps::{column_types, node_sql};
use crate::schema::CatalogNames;

impl Deletion<'_> {
    /// Sets the run's `nullified` of each model whose rows it records to those rows that are
    /// still there, then forgets them. Where they cannot be read, the count stays what the
    /// statements counted (a warning says so): the deletion itself is done either way.
    pub(super) async fn count_nullified_rows(&mut self) {
        if self.nullified_recorded.is_empty() {
            return;
        }
        let models: Vec<&str> = self.nullified_recorded.iter().copied().collect();
        for model in models {
            match self.nullified_rows_left(model).await {
                Ok(rows) => {
                    if let Some(count) = self.summary.nullified.get_mut(model) {
                        *count = rows;
                    }
                }
                Err(error) => {
                    warn!(model, %error, "could not count the rows nullified once; the count is per statement")
                }
            }
        }
        if let Err(error) = nullified::forget(self.database, self.run_id).await {
            warn!(%error, "could not forget the rows this run nullified");
        }
    }

    /// How many of the rows of `model` (one whose rows the run records) the run recorded as
    /// nullified are still there.
    async fn nullified_rows_left(&self, model: &str) -> Result<u64, DeleteError> {
        let steps = self.plan.steps();
        let Some(node) = steps.into_iter().find(|node| node.model == model) else { return Ok(0) };
        let sql = node_sql(node, None, self.database.backend(), Some(self.schema));
        let types = column_types(CatalogNames::of(Some(self.schema), &node.table).table(), &node.identity);
        let (mut after, mut rows) = (None, 0);
        loop {
            let keys = nullified::recorded(self.database, self.run_id, model, after.as_deref()).await?;
            let read = keys.len() as u64;
            if read == 0 {
                return Ok(rows);
            }
            after = keys.last().cloned();
            // A key read back from the table fits its columns.
            let keys = Keys::parse_for(&types, keys).unwrap_or_else(|_| Keys::none(&types));
            let counted = self.database.fetch_texts(&sql.count_identified(Param::Keys(keys), &types)).await?;
            rows += first_text(&counted).and_then(|count| count.parse::<u64>().ok()).unwrap_or(0);
            if read < KEYS_PER_READ {
                return Ok(rows);
            }
        }
    }
}
