//! Creating range partitions ahead of time, on the step of the existing bounds (the last
//! partition's width as an interval: `1 mon`, `7 days`), so retention and creation live in one
//! tool.

use std::time::SystemTime;

use serde::Serialize;
use tracing::info;

use super::{PartitionError, Policy, Side, bounds_against, quoted};
use crate::db::first_text;
use crate::db::sql::{Param, quote_identifier, quote_literal};
use crate::db::{Database, DbError};
use crate::schema::partitions::{partitions, server_version};

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
/// as wide as the last one (`TABLE_YYYYMMDD`, named by its lower bound). None when the table has
/// no range partition with both bounds to take the step from.
pub async fn create_ahead(
    database: &Database,
    policy: &Policy<'_>,
    now: SystemTime,
    ahead: u32,
) -> Result<Vec<Created>, PartitionError> {
    let listed = partitions(database, policy.table, server_version(database).await?).await?;
    let ranges: Vec<(&String, &String)> =
        listed.iter().filter_map(|partition| Some((partition.from.as_ref()?, partition.to.as_ref()?))).collect();
    let Some(last) = ranges.iter().copied().max_by(|a, b| a.1.cmp(b.1)) else {
        return Ok(Vec::new());
    };
    let froms: Vec<String> = ranges.iter().map(|(from, _)| (*from).clone()).collect();
    let existing_ahead =
        bounds_against(database, policy, froms, Side::After, now).await?.into_iter().filter(|after| *after).count();
    let step = value(
        database,
        &format!("age(CAST($1 AS {t}), CAST($2 AS {t}))", t = policy.column_type),
        [last.1.as_str(), last.0.as_str()],
    )
    .await?;
    let schema = policy.table.schema.as_deref().unwrap_or("public");
    let mut created = Vec::new();
    let mut from = last.1.clone();
    // Until `ahead` partitions start after now: after a lapse, the missing ones up to now first
    // (rows of that time would otherwise land in the default partition, or be refused).
    let mut starting_later = existing_ahead;
    while starting_later < ahead as usize {
        if created.len() >= MOST_CREATED {
            return Err(PartitionError::TooFarBehind {
                model: policy.model.name.value.clone(),
                created: created.len(),
            });
        }
        let to = value(
            database,
            &format!("CAST(CAST($1 AS {t}) + CAST($2 AS interval) AS {t})", t = policy.column_type),
            [from.as_str(), step.as_str()],
        )
        .await?;
        let suffix =
            value(database, &format!("to_char(CAST($1 AS {}), 'YYYYMMDD')", policy.column_type), [from.as_str()])
                .await?;
        let name = format!("{}_{suffix}", policy.table.name);
        let mut sql = database.sql();
        sql.push("CREATE TABLE ").push(&quote_identifier(schema)).push(".").identifier(&name);
        sql.push(" PARTITION OF ").push(&quoted(policy.table)).push(" FOR VALUES FROM (").push(&quote_literal(&from));
        sql.push(") TO (").push(&quote_literal(&to)).push(")");
        database.execute(&sql.finish()).await?;
        info!(model = %policy.model.name.value, partition = %name, %from, %to, "partition created");
        if bounds_against(database, policy, vec![from.clone()], Side::After, now).await?[..] == [true] {
            starting_later += 1;
        }
        created.push(Created {
            model: policy.model.name.value.clone(),
            partition: format!("{schema}.{name}"),
            from: from.clone(),
            to: to.clone(),
        });
        from = to;
    }
    Ok(created)
}

/// The text of one SQL expression over text parameters `$1`, `$2`, ...
async fn value<'a>(
    database: &Database,
    expression: &str,
    params: impl IntoIterator<Item = &'a str>,
) -> Result<String, DbError> {
    let mut sql = database.sql();
    // The expression numbers its own placeholders: the parameters are bound in that order.
    sql.push("SELECT CAST(").push(expression).push(" AS text)");
    let mut statement = sql.finish();
    statement.params = params.into_iter().map(Param::text).collect();
    let rows = database.fetch_texts(&statement).await?;
    Ok(first_text(&rows).unwrap_or_default().to_owned())
}
