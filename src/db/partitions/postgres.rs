//! PostgreSQL's declarative range partitions: listed from `pg_inherits`, detached (`CONCURRENTLY`
//! where the server allows), archived through a cursor, created with `PARTITION OF`.

use std::time::{Duration, SystemTime};

use super::{Detach, Detaching, Partition, PartitionedTable, RangeKey, Side};
use crate::db::sql::{Param, SqlBuilder, quote_identifier, quote_literal};
use crate::db::{Database, DbError, Keys, first_text};

/// How long a plain `DETACH` waits for its lock on the parent before it gives up.
const PLAIN_DETACH_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Rows per archive batch (one cursor fetch): memory stays flat whatever the partition's size.
const ARCHIVE_BATCH: u64 = 10_000;

/// The server's version as a number (`150004` for 15.4).
async fn server_version(database: &Database) -> Result<u32, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT current_setting('server_version_num')");
    let rows = database.fetch_texts(&sql.finish()).await?;
    Ok(first_text(&rows).and_then(|version| version.parse().ok()).unwrap_or(0))
}

/// The partitions of `table`, range partitions by bound, the default partition last.
/// `inhdetachpending` exists from 14 on.
pub(super) async fn list(database: &Database, table: PartitionedTable<'_>) -> Result<Vec<Partition>, DbError> {
    let version = server_version(database).await?;
    let pending = if version >= 140000 { "i.inhdetachpending" } else { "false" };
    let mut sql = database.sql();
    sql.push("SELECT n.nspname::text, c.relname::text, pg_get_expr(c.relpartbound, c.oid), ");
    sql.push("CAST(CAST(c.reltuples AS int8) AS text), CAST(pg_total_relation_size(c.oid) AS text), ");
    sql.push("CASE WHEN ").push(pending).push(" THEN 'true' ELSE 'false' END ");
    sql.push("FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid ");
    sql.push("JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = CAST(");
    sql.bind(Param::text(&table.quoted(crate::db::Kind::Postgres))).push(" AS regclass)");
    let mut partitions: Vec<Partition> = database
        .fetch_texts(&sql.finish())
        .await?
        .into_iter()
        .map(|row| {
            let field = |index: usize| row.get(index).cloned().flatten().unwrap_or_default();
            let bound = field(2);
            let (from, to) = range_bounds(&bound).unwrap_or((None, None));
            Partition {
                schema: field(0),
                name: field(1),
                default: bound == "DEFAULT",
                from,
                to,
                bound,
                rows_estimate: field(3).parse::<i64>().ok().and_then(|rows| u64::try_from(rows).ok()),
                bytes: field(4).parse().unwrap_or(0),
                detach_pending: field(5) == "true",
            }
        })
        .collect();
    partitions.sort_by(|a, b| (a.default, &a.bound, &a.name).cmp(&(b.default, &b.bound, &b.name)));
    Ok(partitions)
}

/// The bounds of `FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-02-01 00:00:00+00')`:
/// the literals' text, `None` for `MINVALUE` / `MAXVALUE`. `None` for anything else (a list or
/// hash bound, a range on several columns).
fn range_bounds(bound: &str) -> Option<(Option<String>, Option<String>)> {
    let inner = bound.strip_prefix("FOR VALUES FROM (")?.strip_suffix(')')?;
    let (from, to) = inner.split_once(") TO (")?;
    Some((literal(from)?, literal(to)?))
}

/// A quoted literal's text (`Some(Some(text))`), an unbounded end (`Some(None)`), or `None` when
/// `value` is neither (several columns).
fn literal(value: &str) -> Option<Option<String>> {
    if matches!(value, "MINVALUE" | "MAXVALUE") {
        return Some(None);
    }
    if let Some(quoted) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return (!quoted.replace("''", "").contains('\'')).then(|| Some(quoted.replace("''", "'")));
    }
    // A bare number (an integer range): one value, no comma.
    (!value.contains(',') && !value.is_empty()).then(|| Some(value.to_owned()))
}

pub(super) async fn bounds_against(
    database: &Database,
    key: RangeKey<'_>,
    bounds: Vec<String>,
    side: Side,
    time: SystemTime,
) -> Result<Vec<bool>, DbError> {
    let operator = match side {
        Side::AtOrBefore => ") <= ",
        Side::After => ") > ",
    };
    let mut sql = database.sql();
    sql.push("SELECT CASE WHEN u.bound = '' THEN 'false' WHEN CAST(u.bound AS ").push(key.column_type);
    sql.push(operator);
    time_as_column(&mut sql, key.column_type, time);
    sql.push(" THEN 'true' ELSE 'false' END FROM unnest(CAST(").bind(Param::Keys(Keys::Texts(bounds)));
    sql.push(" AS text[])) WITH ORDINALITY u(bound, ord) ORDER BY u.ord");
    let rows = database.fetch_texts(&sql.finish()).await?;
    Ok(rows.iter().map(|row| row.first().cloned().flatten().as_deref() == Some("true")).collect())
}

/// A time as a value of a column of `column_type` (a `timestamp` or `date` column reads it in
/// the session's time zone).
pub(super) fn time_as_column(sql: &mut SqlBuilder, column_type: &str, time: SystemTime) {
    sql.push("CAST(CAST(").bind_text(&humantime::format_rfc3339_micros(time).to_string());
    sql.push(" AS timestamptz) AS ").push(column_type).push(")");
}

/// A detached partition stays the table it was: its oid tells it from a later one of the name.
pub(super) async fn detaching(database: &Database, partition: &Partition) -> Result<Detaching, DbError> {
    let quoted = format!("{}.{}", quote_identifier(&partition.schema), quote_identifier(&partition.name));
    let mut sql = database.sql();
    sql.push("SELECT CAST(CAST(to_regclass(").bind_text(&quoted).push(") AS oid) AS TEXT)");
    let oid = database.fetch_texts(&sql.finish()).await?;
    Ok(Detaching { identity: first_text(&oid).unwrap_or_default().to_owned(), table: quoted })
}

/// The table is there under the same oid, and no longer a partition.
pub(super) async fn still_detached(database: &Database, detaching: &Detaching) -> Result<bool, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass(").bind_text(&detaching.table);
    sql.push(") AND CAST(oid AS TEXT) = ").bind_text(&detaching.identity).push(" AND NOT relispartition");
    Ok(database.fetch_count(&sql.finish()).await? > 0)
}

/// Finalizes an interrupted concurrent detach, detaches concurrently where the server allows it
/// (14 and later, no default partition: `CONCURRENTLY` cannot run inside a transaction block,
/// so it runs on its own), plainly otherwise.
pub(super) async fn detach(
    database: &Database,
    table: PartitionedTable<'_>,
    partition: &Partition,
    has_default: bool,
) -> Result<Detach, DbError> {
    let how = if partition.detach_pending {
        Detach::Finalized
    } else if server_version(database).await? >= 140000 && !has_default {
        Detach::Concurrently
    } else {
        Detach::Plain
    };
    let clause = match how {
        Detach::Concurrently => " CONCURRENTLY",
        Detach::Finalized => " FINALIZE",
        Detach::Plain | Detach::Earlier | Detach::Exchanged => "",
    };
    let mut sql = database.sql();
    sql.push("ALTER TABLE ").push(&table.quoted(crate::db::Kind::Postgres)).push(" DETACH PARTITION ");
    sql.identifier(&partition.schema).push(".").identifier(&partition.name).push(clause);
    if how != Detach::Plain {
        // CONCURRENTLY and FINALIZE cannot run inside a transaction block.
        database.execute(&sql.finish()).await?;
        return Ok(how);
    }
    // A plain detach takes ACCESS EXCLUSIVE on the parent; queued behind a long reader it would
    // hold up every writer of the table meanwhile: it gives up instead, and the next prune tries again.
    let mut transaction = database.begin_write().await?;
    let mut timeout = database.sql();
    timeout.push(&format!("SET LOCAL lock_timeout = '{}ms'", PLAIN_DETACH_LOCK_TIMEOUT.as_millis()));
    transaction.execute(&timeout.finish()).await?;
    transaction.execute(&sql.finish()).await?;
    transaction.commit().await?;
    Ok(how)
}

/// Streams the rows through a cursor, [`ARCHIVE_BATCH`] at a time.
pub(super) async fn archive<E: From<DbError>>(
    database: &Database,
    detached: &str,
    mut write: impl FnMut(&[String]) -> Result<(), E>,
) -> Result<u64, E> {
    let mut transaction = database.begin_write().await?;
    let mut declare = database.sql();
    declare.push("DECLARE cascade_partition_archive NO SCROLL CURSOR FOR SELECT ");
    database.backend().row_json(&mut declare, "t", &[]);
    declare.push(" FROM ").push(detached).push(" t");
    transaction.execute(&declare.finish()).await?;
    let mut fetch = database.sql();
    fetch.push(&format!("FETCH FORWARD {ARCHIVE_BATCH} FROM cascade_partition_archive"));
    let fetch = fetch.finish();
    let mut rows = 0;
    loop {
        let batch = crate::db::first_column(transaction.fetch_texts(&fetch).await?);
        if batch.is_empty() {
            break;
        }
        rows += batch.len() as u64;
        write(&batch)?;
    }
    transaction.commit().await?;
    Ok(rows)
}

/// `age(to, from)`: `1 mon`, `7 days`.
pub(super) async fn step(database: &Database, key: RangeKey<'_>, from: &str, to: &str) -> Result<String, DbError> {
    value(database, &format!("age(CAST($1 AS {t}), CAST($2 AS {t}))", t = key.column_type), [to, from]).await
}

pub(super) async fn advance(
    database: &Database,
    key: RangeKey<'_>,
    bound: &str,
    step: &str,
) -> Result<(String, String), DbError> {
    let t = key.column_type;
    let next = value(database, &format!("CAST(CAST($1 AS {t}) + CAST($2 AS interval) AS {t})"), [bound, step]).await?;
    let date = value(database, &format!("to_char(CAST($1 AS {t}), 'YYYYMMDD')"), [bound]).await?;
    Ok((next, date))
}

/// `TABLE_YYYYMMDD`, a table of the parent's schema.
pub(super) async fn create(
    database: &Database,
    table: PartitionedTable<'_>,
    date: &str,
    (from, to): (&str, &str),
) -> Result<String, DbError> {
    let schema = table.schema.unwrap_or("public");
    let name = format!("{}_{date}", table.name);
    let mut sql = database.sql();
    sql.push("CREATE TABLE ").push(&quote_identifier(schema)).push(".").identifier(&name);
    sql.push(" PARTITION OF ").push(&table.quoted(crate::db::Kind::Postgres));
    sql.push(" FOR VALUES FROM (").push(&quote_literal(from)).push(") TO (").push(&quote_literal(to)).push(")");
    database.execute(&sql.finish()).await?;
    Ok(format!("{schema}.{name}"))
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

#[cfg(test)]
mod tests {
    use super::range_bounds;

    #[test]
    fn reads_one_column_range_bounds_only() {
        let some = |text: &str| Some(text.to_owned());
        assert_eq!(
            range_bounds("FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-02-01 00:00:00+00')"),
            Some((some("2026-01-01 00:00:00+00"), some("2026-02-01 00:00:00+00")))
        );
        assert_eq!(range_bounds("FOR VALUES FROM (MINVALUE) TO ('2026-01-01')"), Some((None, some("2026-01-01"))));
        assert_eq!(range_bounds("FOR VALUES FROM (1) TO (100)"), Some((some("1"), some("100"))));
        assert_eq!(range_bounds("FOR VALUES FROM ('a', 1) TO ('b', 2)"), None);
        assert_eq!(range_bounds("FOR VALUES IN ('a')"), None);
        assert_eq!(range_bounds("DEFAULT"), None);
    }
}
