//! Creating range partitions ahead of time, on the step of the existing bounds (the last
//! partition's width as an interval: `1 mon`, `7 days`), so retention and creation live in one
//! tool.

use std::time::SystemTime;

use serde::Serialize;
use tracing::info;

use super::{PartitionError, Policy};
use crate::db::Database;
use crate::db::partitions::Side;

/// A partition created ahead.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    /// The model.
    pub model: String,
    /// The new partition, `schema.name`.
    pub partition: String,
    /// Its lower bound (inclusive).
    pub from: String,
    /// Its upper bound (exclusive).
    pub to: String,
}

/// The most partitions one `create` makes: a step far smaller than the gap to now (or a bound far
/// in the past) is a mistake to report, not thousands of tables to create.
const MOST_CREATED: usize = 1_000;

/// Creates range partitions after the last one until `ahead` partitions start after `now`, each
/// as wide as the last one, named by its lower bound (PostgreSQL: `TABLE_YYYYMMDD`, MySQL:
/// `pYYYYMMDD`). None when the table has
/// no range partition with both bounds to take the step from.
pub async fn create_ahead(
    database: &Database,
    policy: &Policy<'_>,
    now: SystemTime,
    ahead: u32,
) -> Result<Vec<Created>, PartitionError> {
    let partitioning = policy.partitioning;
    let listed = policy.partitions(database).await?;
    let ranges: Vec<(&String, &String)> =
        listed.iter().filter_map(|partition| Some((partition.from.as_ref()?, partition.to.as_ref()?))).collect();
    let Some(last) = ranges.iter().copied().max_by(|a, b| a.1.cmp(b.1)) else {
        return Ok(Vec::new());
    };
    let froms: Vec<String> = ranges.iter().map(|(from, _)| (*from).clone()).collect();
    let starting_after = partitioning.bounds_against(database, policy.key(), froms, Side::After, now).await?;
    let step = partitioning.step(database, policy.key(), last.0, last.1).await?;
    let mut created = Vec::new();
    let mut from = last.1.clone();
    // Until `ahead` partitions start after now: after a lapse, the missing ones up to now first
    // (rows of that time would otherwise land in the default partition, or be refused).
    let mut starting_later = starting_after.into_iter().filter(|after| *after).count();
    while starting_later < ahead as usize {
        if created.len() >= MOST_CREATED {
            return Err(PartitionError::TooFarBehind {
                model: policy.model.name.value.clone(),
                created: created.len(),
            });
        }
        let (to, date) = partitioning.advance(database, policy.key(), &from, &step).await?;
        let existing = policy.partitions(database).await?;
        let name = partitioning.create(database, policy.partitioned(), &existing, &date, (&from, &to)).await?;
        info!(model = %policy.model.name.value, partition = %name, %from, %to, "partition created");
        let later = partitioning.bounds_against(database, policy.key(), vec![from.clone()], Side::After, now).await?;
        if later[..] == [true] {
            starting_later += 1;
        }
        created.push(Created {
            model: policy.model.name.value.clone(),
            partition: name,
            from: from.clone(),
            to: to.clone(),
        });
        from = to;
    }
    Ok(created)
}
