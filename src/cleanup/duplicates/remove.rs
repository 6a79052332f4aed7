//! The confirmed removal of duplicates: all but the kept row of each group deleted batch after
//! batch, each as the root of its own cascade, in one run.

use super::merge::Merger;
use super::queries::Queries;
use super::{DuplicatesError, Resolved, Search};
use crate::audit::Alone;
use crate::cleanup::batches::{BatchOptions, BatchRun, CleanupSummary, Next, Read, Scan};
use crate::config::{Located, StatusValue, describe_columns};
use crate::db::sql::KeyType;
use crate::engine::Engine;
use crate::planner::Plan;

/// Removes the duplicates of `search` in batches (see `batches`): all
/// but the kept row of each group, in key order, each as the root of its own cascade through
/// the model's plan. With `merge`, the rows that reference a batch's duplicates through a
/// declared relation are first re-pointed at their group's kept row, in one transaction per
/// batch; when that would break a unique constraint, the batch is rolled back and the first
/// group at fault is named.
pub async fn remove(
    engine: &Engine,
    search: &Search,
    merge: bool,
    options: BatchOptions,
) -> Result<CleanupSummary, DuplicatesError> {
    let (config, schema) = (engine.config(), engine.schema());
    let resolved = Resolved::of(config, schema, search)?;
    let not_removable = |reason: String| DuplicatesError::NotRemovable { model: search.model.clone(), reason };
    let [key] = resolved.key.as_slice() else {
        return Err(not_removable("its key is composite: a clean-up deletes rows by a single-column key".to_owned()));
    };
    let key_type = resolved.table.column(key).map_or(KeyType::Integer, |column| column.key_type.clone());
    if merge && let Some(model) = config.model(&search.model) {
        let unmergeable = model
            .children
            .iter()
            .find(|relation| relation.columns().len() > 1 || relation.references_other_than_key(model));
        if let Some(relation) = unmergeable {
            return Err(not_removable(format!(
                "`--merge` re-points references to the key, and `{}.{}` references {}",
                relation.model.value,
                relation.describe_columns(),
                describe_columns(&relation.referenced(model))
            )));
        }
    }
    let plan = crate::planner::compile(config, &search.model).map_err(|error| not_removable(error.to_string()))?;
    let queries = Queries {
        table: resolved.names.quoted_table(),
        by: &resolved.by,
        key: &resolved.key,
        order_by: &resolved.order_by,
        keep: search.keep,
    };
    let may_go = config.model(&search.model).and_then(|model| model.status.as_ref()).and_then(|status| {
        let column = resolved.table.column(&status.column.value)?.name.clone();
        Some((column, status.proceed_or_in_progress()))
    });
    let merger = merge.then(|| Merger::new(engine, &search.model, &key_type));
    let target = format!("{} by {}", search.model, resolved.by.join(","));
    let name = format!("duplicates:{target}:{}:{}", search.keep.as_str(), resolved.order_by.join(","));
    let mut run = BatchRun::start(engine, (&search.model, &[target]), Alone::SameModel, options).await?;
    let mut scan = DuplicateScan {
        engine,
        queries: &queries,
        key_type: &key_type,
        may_go: may_go.as_ref(),
        plan: &plan,
        merger,
        checkpoint: name,
        after: None,
        exhausted: false,
    };
    let removed = async {
        if scan.merger.is_some() {
            run.refuse_undeletable(&plan).await?;
        }
        run.scan(&mut scan).await
    }
    .await;
    let error = removed.as_ref().err().map(ToString::to_string);
    let finished = run.finish(error.as_deref()).await;
    removed?;
    Ok(finished?)
}

/// The rows of a removal, in key order: each (duplicate, its group's kept row), as text.
struct DuplicateScan<'a> {
    engine: &'a Engine,
    queries: &'a Queries<'a>,
    key_type: &'a KeyType,
    /// The status column and the values that allow a row's deletion (see [`Queries::removable`]).
    may_go: Option<&'a (String, Vec<Located<StatusValue>>)>,
    plan: &'a Plan,
    /// With `--merge`: re-points each batch's children first.
    merger: Option<Merger<'a>>,
    checkpoint: String,
    /// The last key read: the next read starts after it.
    after: Option<String>,
    /// The last read found fewer rows than it asked for: none are left after `after`.
    exhausted: bool,
}

impl Scan for DuplicateScan<'_> {
    type Batch = Vec<(String, String)>;
    type Error = DuplicatesError;

    fn checkpoint(&self) -> &str {
        &self.checkpoint
    }

    fn start_after(&mut self, after: Option<String>) {
        self.after = after;
    }

    async fn read(&mut self, size: u64) -> Result<Read<Self::Batch>, DuplicatesError> {
        let database = self.engine.database();
        let statement = self.queries.removable(database.sql(), self.key_type, self.may_go, self.after.as_deref(), size);
        let pairs = database.fetch_pairs(&statement).await?;
        self.exhausted = (pairs.len() as u64) < size;
        let Some((last, _)) = pairs.last() else { return Ok(Read::Through) };
        self.after = Some(last.clone());
        Ok(Read::Batch(pairs))
    }

    /// A batch shorter than asked for was the scan's last.
    fn through(&self) -> bool {
        self.exhausted
    }

    async fn clean(&self, run: &mut BatchRun<'_>, pairs: Self::Batch) -> Result<Next, DuplicatesError> {
        if let Some(merger) = &self.merger {
            let started = std::time::Instant::now();
            let re_pointed = merger.repoint(&pairs).await?;
            run.transaction_done(started.elapsed());
            run.re_pointed(re_pointed);
        }
        let keys: Vec<String> = pairs.into_iter().map(|(duplicate, _)| duplicate).collect();
        Ok(run.delete_batch(self.plan, &keys, &self.checkpoint, None).await?)
    }
}
