//! The partitions of a PostgreSQL partitioned table, from `pg_inherits`: each one's bound as the
//! catalog prints it, its row estimate and size.

use serde::Serialize;

use super::Table;
use crate::db::sql::{Param, quote_identifier};
use crate::db::{Database, DbError, first_text};

/// One partition, as `pg_inherits` and `pg_class` describe it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Partition {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// `FOR VALUES FROM (...) TO (...)` or `DEFAULT`, as `pg_get_expr(relpartbound)` prints it.
    pub bound: String,
    /// The lower bound of a range partition, as the literal's text; `None` for `MINVALUE` and
    /// for a partition that is not a one-column range.
    pub from: Option<String>,
    /// The upper bound (exclusive), likewise; `None` for `MAXVALUE`.
    pub to: Option<String>,
    /// The default partition: rows no other partition's bound takes.
    pub default: bool,
    /// `pg_class.reltuples`; `None` while the partition was never analyzed.
    pub rows_estimate: Option<u64>,
    /// `pg_total_relation_size`: table, indexes and TOAST, in bytes.
    pub bytes: u64,
    /// A `DETACH PARTITION ... CONCURRENTLY` that was interrupted: it must be finalized.
    pub detach_pending: bool,
}

impl Partition {
    /// `"schema"."name"`.
    pub fn quoted(&self) -> String {
        format!("{}.{}", quote_identifier(&self.schema), quote_identifier(&self.name))
    }

    /// `schema.name`.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// The server's version as a number (`150004` for 15.4).
pub(crate) async fn server_version(database: &Database) -> Result<u32, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT current_setting('server_version_num')");
    let rows = database.fetch_texts(&sql.finish()).await?;
    Ok(first_text(&rows).and_then(|version| version.parse().ok()).unwrap_or(0))
}

/// The partitions of `table` (a partitioned table of the live schema), range partitions by
/// bound, the default partition last. `version` is the server's ([`server_version`]):
/// `inhdetachpending` exists from 14 on.
pub(crate) async fn partitions(database: &Database, table: &Table, version: u32) -> Result<Vec<Partition>, DbError> {
    let schema = table.schema.as_deref().unwrap_or("public");
    let parent = format!("{}.{}", quote_identifier(schema), quote_identifier(&table.name));
    let pending = if version >= 140000 { "i.inhdetachpending" } else { "false" };
    let mut sql = database.sql();
    sql.push("SELECT n.nspname::text, c.relname::text, pg_get_expr(c.relpartbound, c.oid), ");
    sql.push("CAST(CAST(c.reltuples AS int8) AS text), CAST(pg_total_relation_size(c.oid) AS text), ");
    sql.push("CASE WHEN ").push(pending).push(" THEN 'true' ELSE 'false' END ");
    sql.push("FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid ");
    sql.push("JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = CAST(");
    sql.bind(Param::text(&parent)).push(" AS regclass)");
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
