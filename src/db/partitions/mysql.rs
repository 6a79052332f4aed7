//! MySQL's `RANGE` and `RANGE COLUMNS` partitions: listed from `information_schema.partitions`,
//! a partition's rows swapped into a table of their own (`EXCHANGE PARTITION`) and the emptied
//! partition dropped under a brief write lock, that table archived and dropped, the next
//! partitions added (or split off a `MAXVALUE` partition with `REORGANIZE PARTITION`).

use std::time::{Duration, SystemTime};

use super::{Detach, Detaching, Partition, PartitionedTable, RangeKey, Side};
use crate::db::sql::{Param, SqlBuilder, db_time, quote_identifier, quote_literal};
use crate::db::{Database, DbError, Kind, first_text};

/// How long the swap waits for its write lock on the table before it gives up.
const SWAP_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Rows per archive batch.
const ARCHIVE_BATCH: u64 = 10_000;

/// The partitions in their order; each one's lower bound is the bound of the one before.
pub(super) async fn list(database: &Database, table: PartitionedTable<'_>) -> Result<Vec<Partition>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT CAST(partition_name AS CHAR), CAST(partition_description AS CHAR), ");
    sql.push("CAST(table_rows AS CHAR), CAST(data_length + index_length AS CHAR) ");
    sql.push("FROM information_schema.partitions WHERE table_schema = DATABASE() AND table_name = ");
    sql.bind_text(table.name).push(" AND partition_name IS NOT NULL ORDER BY partition_ordinal_position");
    let mut from = None;
    let mut partitions = Vec::new();
    for row in database.fetch_texts(&sql.finish()).await? {
        let field = |index: usize| row.get(index).cloned().flatten().unwrap_or_default();
        let description = field(1);
        let to = bound_value(&description);
        partitions.push(Partition {
            schema: table.name.to_owned(),
            name: field(0),
            bound: format!("VALUES LESS THAN ({description})"),
            from: from.clone(),
            to: to.clone(),
            default: false,
            rows_estimate: field(2).parse().ok(),
            bytes: field(3).parse().unwrap_or(0),
            detach_pending: false,
        });
        from = to;
    }
    Ok(partitions)
}

/// The value of a `LESS THAN` bound: a quoted literal's text, a number, `None` for `MAXVALUE`.
fn bound_value(description: &str) -> Option<String> {
    if description == "MAXVALUE" {
        return None;
    }
    match description.strip_prefix('\'').and_then(|quoted| quoted.strip_suffix('\'')) {
        Some(quoted) => Some(quoted.replace("''", "'")),
        None => Some(description.to_owned()),
    }
}

/// A time as a `DATETIME(6)` in the session's time zone (the tool's sessions are in UTC).
pub(super) fn time_as_datetime(sql: &mut SqlBuilder, time: SystemTime) {
    sql.push("CAST(").bind_text(&db_time(time)).push(" AS DATETIME(6))");
}

/// `time` as a value of the key: the function of it the table is partitioned by (uncast: a
/// second's fraction of `UNIX_TIMESTAMP` must not round up to the bound).
fn key_of_time(sql: &mut SqlBuilder, key: RangeKey<'_>, time: SystemTime) {
    match key.function {
        Some(function) => {
            sql.push(function).push("(");
            time_as_datetime(sql, time);
            sql.push(")");
        }
        None => time_as_datetime(sql, time),
    }
}

/// A bound (text) as the time it starts: the inverse of the key's function.
fn time_of_bound(key: RangeKey<'_>, bound: &str) -> String {
    match key.function {
        Some("to_days") => format!("CAST(FROM_DAYS({bound}) AS DATETIME(6))"),
        Some("unix_timestamp") => format!("FROM_UNIXTIME({bound})"),
        Some("year") => format!("CAST(MAKEDATE({bound}, 1) AS DATETIME(6))"),
        _ => format!("CAST({bound} AS DATETIME(6))"),
    }
}

/// A bound as the key's values compare: a number, or a time.
fn bound_as_key(key: RangeKey<'_>, bound: &str) -> String {
    match key.function {
        Some(_) => format!("CAST({bound} AS SIGNED)"),
        None => format!("CAST({bound} AS DATETIME(6))"),
    }
}

pub(super) async fn bounds_against(
    database: &Database,
    key: RangeKey<'_>,
    bounds: Vec<String>,
    side: Side,
    time: SystemTime,
) -> Result<Vec<bool>, DbError> {
    let operator = match side {
        Side::AtOrBefore => " <= ",
        Side::After => " > ",
    };
    let mut sql = database.sql();
    sql.push("SELECT CASE WHEN u.bound = '' THEN 'false' WHEN ").push(&bound_as_key(key, "u.bound"));
    sql.push(operator);
    key_of_time(&mut sql, key, time);
    sql.push(" THEN 'true' ELSE 'false' END FROM JSON_TABLE(");
    sql.bind(Param::text(&serde_json::Value::from(bounds).to_string()));
    sql.push(", '$[*]' COLUMNS (ord FOR ORDINALITY, bound LONGTEXT PATH '$')) AS u ORDER BY u.ord");
    let statement = sql.finish();
    let rows = database.fetch_texts(&statement).await?;
    Ok(rows.iter().map(|row| row.first().cloned().flatten().as_deref() == Some("true")).collect())
}

/// `cascade_detached_RUN`: the table the partition's rows are swapped into, made once per run.
pub(super) fn detaching(run: i64) -> Detaching {
    let name = format!("cascade_detached_{run}");
    Detaching { table: quote_identifier(&name), identity: name }
}

/// The swap's table is still there.
pub(super) async fn still_detached(database: &Database, detaching: &Detaching) -> Result<bool, DbError> {
    database.table_exists(&detaching.identity).await
}

/// Makes the empty table (the table's copy, unpartitioned), then under a write lock of both
/// swaps the partition's rows into it and drops the emptied partition, so no row written
/// meanwhile lands in a partition about to go. The lock waits [`SWAP_LOCK_TIMEOUT`] at most:
/// queued behind a long reader it would hold up every writer of the table. The lock not had,
/// the empty table goes again: no later prune takes it for a detached partition.
pub(super) async fn detach(
    database: &Database,
    table: PartitionedTable<'_>,
    partition: &Partition,
    detaching: &Detaching,
) -> Result<Detach, DbError> {
    let parent = table.quoted(Kind::Mysql);
    let swap = &detaching.table;
    let script = |statement: String| crate::db::sql::Statement { sql: statement, params: Vec::new() };
    database.execute(&script(format!("CREATE TABLE {swap} LIKE {parent}"))).await?;
    database.execute(&script(format!("ALTER TABLE {swap} REMOVE PARTITIONING"))).await?;
    // `LOCK TABLES` holds until `UNLOCK TABLES` on its connection: one transaction's, which it
    // ends (as does each `ALTER`), and which unlocks before it goes back to the pool whatever
    // happened.
    let mut connection = database.begin_write().await?;
    connection.execute(&script(format!("SET SESSION lock_wait_timeout = {}", SWAP_LOCK_TIMEOUT.as_secs()))).await?;
    let partition = quote_identifier(&partition.name);
    let mut locked = false;
    let swapped = async {
        connection.execute(&script(format!("LOCK TABLES {parent} WRITE, {swap} WRITE"))).await?;
        locked = true;
        connection
            .execute(&script(format!("ALTER TABLE {parent} EXCHANGE PARTITION {partition} WITH TABLE {swap}")))
            .await?;
        connection.execute(&script(format!("ALTER TABLE {parent} DROP PARTITION {partition}"))).await
    };
    let swapped = swapped.await;
    let unlocked = connection.execute(&script("UNLOCK TABLES".to_owned())).await;
    let reset = connection.execute(&script("SET SESSION lock_wait_timeout = DEFAULT".to_owned())).await;
    // Only a lock not had is sure to have swapped nothing: an exchange the client lost the answer
    // of may have moved the rows, and the next prune finishes it by the checkpoint.
    if swapped.is_err() && !locked {
        // The swap's error is the one to report.
        let _ = database.execute(&script(format!("DROP TABLE IF EXISTS {swap}"))).await;
    }
    swapped?;
    unlocked?;
    reset?;
    connection.commit().await?;
    Ok(Detach::Exchanged)
}

/// Deletes the swap table's rows a batch at a time, handing each batch to `write` before its
/// transaction commits: a batch is gone from the table only once it is in the archive.
pub(super) async fn archive<E: From<DbError>>(
    database: &Database,
    detached: &str,
    columns: &[String],
    mut write: impl FnMut(&[String]) -> Result<(), E>,
) -> Result<u64, E> {
    let mut sql = database.sql();
    sql.push("DELETE FROM ").push(detached).push(&format!(" LIMIT {ARCHIVE_BATCH} RETURNING "));
    database.backend().json_object(&mut sql, columns);
    let delete = sql.finish();
    let mut rows = 0;
    loop {
        let mut transaction = database.begin_write().await?;
        let batch = crate::db::first_column(transaction.fetch_texts(&delete).await?);
        if batch.is_empty() {
            transaction.commit().await?;
            return Ok(rows);
        }
        rows += batch.len() as u64;
        write(&batch)?;
        transaction.commit().await?;
    }
}

/// A whole number of months when the range is one (`1 MONTH`), else seconds (`604800 SECOND`).
pub(super) async fn step(database: &Database, key: RangeKey<'_>, from: &str, to: &str) -> Result<String, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT CASE WHEN r.months > 0 AND r.since + INTERVAL r.months MONTH = r.until ");
    sql.push("THEN CONCAT(r.months, ' MONTH') ELSE CONCAT(TIMESTAMPDIFF(SECOND, r.since, r.until), ' SECOND') END ");
    sql.push("FROM (SELECT t.since, t.until, TIMESTAMPDIFF(MONTH, t.since, t.until) AS months FROM (SELECT ");
    sql.push(&time_of_bound(key, "?")).push(" AS since, ").push(&time_of_bound(key, "?")).push(" AS until) AS t) AS r");
    let mut statement = sql.finish();
    statement.params = vec![Param::text(from), Param::text(to)];
    Ok(first_text(&database.fetch_texts(&statement).await?).unwrap_or_default().to_owned())
}

pub(super) async fn advance(
    database: &Database,
    key: RangeKey<'_>,
    bound: &str,
    step: &str,
) -> Result<(String, String), DbError> {
    let (count, unit) = step.split_once(' ').unwrap_or((step, "SECOND"));
    let unit = if unit == "MONTH" { "MONTH" } else { "SECOND" };
    let count: i64 = count.parse().unwrap_or(0);
    let next = format!("{} + INTERVAL ? {unit}", time_of_bound(key, "?"));
    let next = match key.function {
        Some(function) => format!("CAST({function}({next}) AS SIGNED)"),
        None => format!("CAST({next} AS {})", key.column_type),
    };
    let mut sql = database.sql();
    sql.push("SELECT CAST(").push(&next).push(" AS CHAR), DATE_FORMAT(").push(&time_of_bound(key, "?"));
    sql.push(", '%Y%m%d')");
    let mut statement = sql.finish();
    statement.params = vec![Param::text(bound), Param::integer(count), Param::text(bound)];
    let rows = database.fetch_texts(&statement).await?;
    let field = |index: usize| rows.first().and_then(|row| row.get(index).cloned().flatten()).unwrap_or_default();
    Ok((field(0), field(1)))
}

/// `pYYYYMMDD`: added after the last partition, or split off the front of a last partition
/// that reaches to `MAXVALUE` (whose rows `REORGANIZE PARTITION` copies: normally none yet).
pub(super) async fn create(
    database: &Database,
    table: PartitionedTable<'_>,
    existing: &[Partition],
    date: &str,
    to: &str,
) -> Result<String, DbError> {
    let name = format!("p{date}");
    // A number is the value of the key's function; anything else a literal of the column's type.
    let bound = if to.parse::<i64>().is_ok() { to.to_owned() } else { quote_literal(to) };
    let new = format!("PARTITION {} VALUES LESS THAN ({bound})", quote_identifier(&name));
    let parent = table.quoted(Kind::Mysql);
    let sql = match existing.last().filter(|last| last.to.is_none()) {
        Some(unbounded) => {
            let unbounded = quote_identifier(&unbounded.name);
            format!(
                "ALTER TABLE {parent} REORGANIZE PARTITION {unbounded} INTO \
                 ({new}, PARTITION {unbounded} VALUES LESS THAN (MAXVALUE))"
            )
        }
        None => format!("ALTER TABLE {parent} ADD PARTITION ({new})"),
    };
    database.execute(&crate::db::sql::Statement { sql, params: Vec::new() }).await?;
    Ok(format!("{}.{name}", table.name))
}

#[cfg(test)]
mod tests {
    use super::bound_value;

    #[test]
    fn reads_less_than_bounds() {
        assert_eq!(bound_value("'2026-02-01'"), Some("2026-02-01".to_owned()));
        assert_eq!(bound_value("'it''s'"), Some("it's".to_owned()));
        assert_eq!(bound_value("739000"), Some("739000".to_owned()));
        assert_eq!(bound_value("MAXVALUE"), None);
    }
}
