//! The roots of a deletion: which requested ids exist and may be deleted, their statuses marked
//! in progress (and remembered as they were), and the ids not yet handed to a root chunk.

use indexmap::IndexMap;

use super::super::not_found;
use super::super::steps::StepSql;
use super::DeleteError;
use crate::audit;
use crate::db::Database;
use crate::db::Keys;
use crate::db::sql::{KeyType, Param};

/// A status read back as text, as the JSON value the config's status values have.
fn status_json(text: String, status: &crate::config::StatusCheck) -> String {
    match (&status.in_progress.value, text.trim().parse::<i64>()) {
        (crate::config::StatusValue::Integer(_), Ok(number)) => number.to_string(),
        _ => serde_json::Value::from(text).to_string(),
    }
}

/// An archived root row (a JSON object) with its status as it was before the deletion marked
/// it in progress.
pub(super) fn with_status_before(line: String, key: &str, status: &str, before: &IndexMap<String, String>) -> String {
    let Ok(serde_json::Value::Object(mut row)) = serde_json::from_str::<serde_json::Value>(&line) else { return line };
    let row_key = match row.get(key) {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => return line,
    };
    let Some(original) = before.get(&row_key).and_then(|json| serde_json::from_str(json).ok()) else { return line };
    row.insert(status.to_owned(), original);
    serde_json::Value::Object(row).to_string()
}

/// The requested root `ids` sorted into those to delete, those whose status skips them and those
/// that match no row. When every id has its row (the usual case) only the count and the skipped
/// keys are read, not a row per id: with 100,000 ids that read alone took a third of the run.
/// Keys the database spells its own way (uuid, ...) are always read, so that later steps use the
/// database's spelling, unless they were `read` from the table by the caller (who then spelled
/// them so, and whose rows are there), which also spares the count.
pub(super) async fn sort_roots(
    database: &Database,
    root: &StepSql<'_>,
    ids: &Keys,
    read: bool,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), DeleteError> {
    let requested = ids.texts();
    let spelled_as_given = !root.sql.key_types.iter().any(|key_type| matches!(key_type, KeyType::Other(_)));
    if read
        || spelled_as_given
            && database.fetch_count(&root.sql.count_roots(Param::Keys(ids.clone()))).await? == requested.len() as u64
    {
        let skipped: Vec<String> = match root.status {
            Some(status) => crate::db::first_column(
                database.fetch_texts(&root.sql.skipped_roots(Param::Keys(ids.clone()), status)).await?,
            ),
            None => Vec::new(),
        };
        let left_out: std::collections::HashSet<&str> = skipped.iter().map(String::as_str).collect();
        let proceeding = requested.into_iter().filter(|id| !left_out.contains(id.as_str())).collect();
        return Ok((proceeding, skipped, Vec::new()));
    }
    let found = database.fetch_texts(&root.sql.select_roots(Param::Keys(ids.clone()), root.status)).await?;
    let (mut proceeding, mut skipped) = (Vec::new(), Vec::new());
    for row in &found {
        let (Some(key), Some(decision)) = (row.first().cloned().flatten(), row.get(1).cloned().flatten()) else {
            continue;
        };
        if decision == "proceed" { proceeding.push(key) } else { skipped.push(key) }
    }
    // In the order asked for (the database returns them in its own): a caller's checkpoint
    // relies on ascending roots staying ascending.
    let position: std::collections::HashMap<String, usize> =
        requested.iter().enumerate().map(|(index, id)| (id.to_ascii_lowercase(), index)).collect();
    proceeding.sort_by_key(|key| position.get(&key.to_ascii_lowercase()).copied().unwrap_or(usize::MAX));
    Ok((proceeding, skipped, not_found(ids, &found, &root.sql.key_types)))
}

/// Marks the root rows `proceeding` whose status allows the deletion in progress, remembering
/// (in the same transaction) the statuses they had; the statuses remembered for them, by this
/// deletion or an interrupted earlier run of it, as JSON: what the archive holds.
pub(super) async fn mark_in_progress(
    database: &Database,
    root: &StepSql<'_>,
    proceeding: &Keys,
) -> Result<IndexMap<String, String>, DeleteError> {
    let Some(status) = root.status.filter(|_| !proceeding.is_empty()) else { return Ok(IndexMap::new()) };
    let table = &root.sql.node.table;
    let mut transaction = database.begin_write().await?;
    let before =
        transaction.fetch_texts(&root.sql.statuses_before_marking(Param::Keys(proceeding.clone()), status)).await?;
    let before: Vec<(String, String)> = before
        .into_iter()
        .filter_map(|row| Some((row.first().cloned().flatten()?, status_json(row.get(1).cloned().flatten()?, status))))
        .collect();
    audit::statuses::remember(&mut transaction, table, &before).await?;
    transaction.execute(&root.sql.mark_in_progress(Param::Keys(proceeding.clone()), status)).await?;
    transaction.commit().await?;
    Ok(audit::statuses::remembered(database, table, &proceeding.texts()).await?)
}

/// Root ids not yet handed to a root frame.
pub(super) struct PendingRoots {
    keys: Keys,
    next: usize,
}

impl PendingRoots {
    pub(super) fn new(keys: Keys) -> Self {
        Self { keys, next: 0 }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.next >= self.keys.len()
    }

    /// The next `count` ids; `None` when none are left.
    pub(super) fn take(&mut self, count: u64) -> Option<Keys> {
        let count = usize::try_from(count).unwrap_or(usize::MAX).max(1);
        let batch = self.keys.slice(self.next, count);
        self.next = self.next.saturating_add(count);
        (!batch.is_empty()).then_some(batch)
    }
}
