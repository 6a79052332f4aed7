//! The statements of `cascade_inbox`: taking delivered tombstones in, claiming pending ones for
//! a worker, marking them applied or failed, and counting them.

use std::time::SystemTime;

use super::{Tombstone, TombstoneIn};
use crate::db::sql::{KeyType, Param, SqlBuilder, latest_time};
use crate::db::{Database, DbError, Keys, Transaction};

/// Rows per insert: seven values each. sqlx binds each numbered parameter (`?NNN`) by asking
/// SQLite its name, which walks the statement's list of them, so binding costs the square of the
/// parameters: on SQLite 100 rows took in twice as many tombstones a second as 500 did.
const ROWS_PER_INSERT: usize = 100;

/// Inserts `tombstones` from `source` in `transaction`, each once: one whose idempotency key the
/// source sent before is left as it is. The number inserted: where a skipped row counts as
/// changed (MySQL), the keys of the part not there yet, counted first in the transaction (a
/// delivery of the same key received at the same moment elsewhere may count in both).
pub(super) async fn insert(
    database: &Database,
    transaction: &mut Transaction,
    source: &str,
    tombstones: &[TombstoneIn],
) -> Result<u64, DbError> {
    let mut inserted = 0;
    for part in tombstones.chunks(ROWS_PER_INSERT) {
        let mut sql = database.sql();
        sql.push("INSERT INTO cascade_inbox (source, idempotency_key, category, model, object_key, payload, sent_at) ");
        sql.push("VALUES ");
        for (index, tombstone) in part.iter().enumerate() {
            sql.push(if index == 0 { "(" } else { ", (" });
            let texts = [source, &tombstone.idempotency_key, &tombstone.category, &tombstone.model, &tombstone.key];
            sql.binds(texts.map(Param::text)).push(", ");
            match &tombstone.payload {
                Some(payload) => sql.bind_text(payload),
                None => sql.push("NULL"),
            };
            sql.push(", ");
            match &tombstone.sent_at {
                Some(sent_at) => sql.bind_text(sent_at),
                None => sql.push("NULL"),
            };
            sql.push(")");
        }
        database.backend().on_duplicate(&mut sql, &["source", "idempotency_key"], &[], "");
        if database.backend().tuning().skipped_duplicates_count {
            let keys: std::collections::BTreeSet<&str> =
                part.iter().map(|tombstone| tombstone.idempotency_key.as_str()).collect();
            let mut there = database.sql();
            there.push("SELECT COUNT(*) FROM cascade_inbox WHERE source = ").bind_text(source).push(" AND ");
            there.one_of("idempotency_key", keys.iter().map(|key| Param::text(key)));
            let there = transaction.fetch_count(&there.finish()).await?;
            transaction.execute(&sql.finish()).await?;
            inserted += (keys.len() as u64).saturating_sub(there);
        } else {
            inserted += transaction.execute(&sql.finish()).await?;
        }
    }
    Ok(inserted)
}

/// Claims up to `limit` pending tombstones of `categories` with an id above `after` (oldest
/// first) until `until`: those not applied, not parked, with attempts left, and not claimed by
/// another worker (nor waiting to be tried again) at `now`. Each claim counts as an attempt.
/// Where an `UPDATE` returns nothing (MySQL), the rows are locked first, then claimed and read
/// by the claim's token in the same transaction.
pub(super) async fn claim(
    database: &Database,
    (categories, after, max_attempts): (&[&str], i64, u64),
    limit: u64,
    token: &str,
    now: SystemTime,
    until: SystemTime,
) -> Result<Vec<Tombstone>, DbError> {
    if categories.is_empty() {
        return Ok(Vec::new());
    }
    // Their ids, as text when they are read back rather than compared.
    let pending = |sql: &mut SqlBuilder, as_text: bool| {
        sql.push("SELECT ");
        if as_text {
            sql.text("id")
        } else {
            sql.push("id")
        };
        sql.push(" FROM cascade_inbox WHERE applied_at IS NULL AND parked_at IS NULL AND ");
        sql.one_of("category", categories.iter().map(|category| Param::text(category)));
        sql.push(" AND id > ").bind(Param::integer(after)).push(" AND attempts < ").bind(attempts_param(max_attempts));
        sql.push(" AND (claim_expires_at IS NULL OR claim_expires_at < ").timestamp(now).push(") ORDER BY id LIMIT ");
        sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX))).push(database.backend().claim_lock());
    };
    let claimed = |sql: &mut SqlBuilder| {
        sql.push("UPDATE cascade_inbox SET claim_token = ").bind_text(token).push(", claim_expires_at = ");
        sql.timestamp(until.min(latest_time())).push(", attempts = attempts + 1 WHERE ");
    };
    let fields = |sql: &mut SqlBuilder| {
        sql.text("id").push(" AS id, category, object_key, ").text("attempts").push(" AS attempts");
    };
    let rows = if database.backend().tuning().updates_return {
        let mut sql = database.sql();
        claimed(&mut sql);
        sql.push("id IN (");
        pending(&mut sql, false);
        sql.push(") RETURNING ");
        fields(&mut sql);
        database.fetch_records_alone(&sql.finish()).await?
    } else {
        let mut transaction = database.begin_write().await?;
        let mut pick = database.sql();
        pending(&mut pick, true);
        let ids = crate::db::first_column(transaction.fetch_texts(&pick.finish()).await?);
        let ids: Vec<i64> = ids.iter().filter_map(|id| id.parse().ok()).collect();
        if !ids.is_empty() {
            let mut update = database.sql();
            claimed(&mut update);
            ids_in(&mut update, &ids);
            transaction.execute(&update.finish()).await?;
        }
        let mut read = database.sql();
        read.push("SELECT ");
        fields(&mut read);
        read.push(" FROM cascade_inbox WHERE claim_token = ").bind_text(token);
        let rows = transaction.fetch_records(&read.finish()).await?;
        transaction.commit().await?;
        rows
    };
    let mut claimed = rows
        .iter()
        .map(|row| {
            Ok(Tombstone {
                id: row.parsed("id")?,
                category: row.text("category")?,
                key: row.text("object_key")?,
                attempts: row.parsed("attempts")?,
            })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    claimed.sort_by_key(|tombstone| tombstone.id);
    Ok(claimed)
}

/// Parks the tombstones that have had `max_attempts` and whose last claim lapsed at `now`: their
/// worker stopped (killed, or lost its database) while applying them, every time.
pub(super) async fn park_exhausted(database: &Database, max_attempts: u64, now: SystemTime) -> Result<u64, DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_inbox SET parked_at = CURRENT_TIMESTAMP, last_error = COALESCE(last_error, ");
    sql.bind_text("its worker stopped while applying it, on every attempt").push("), claim_token = NULL ");
    sql.push("WHERE applied_at IS NULL AND parked_at IS NULL AND attempts >= ").bind(attempts_param(max_attempts));
    sql.push(" AND claim_expires_at < ").timestamp(now);
    database.execute_alone(&sql.finish()).await
}

fn attempts_param(max_attempts: u64) -> Param {
    Param::integer(i64::try_from(max_attempts).unwrap_or(i64::MAX))
}

/// Marks the claimed tombstones `ids` applied; those another worker claimed since (this claim
/// expired) are left to it. The number marked.
pub(super) async fn applied(database: &Database, ids: &[i64], token: &str) -> Result<u64, DbError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut sql = database.sql();
    sql.push("UPDATE cascade_inbox SET applied_at = CURRENT_TIMESTAMP, last_error = NULL, claim_token = NULL, ");
    sql.push("claim_expires_at = NULL WHERE claim_token = ").bind_text(token).push(" AND ");
    ids_in(&mut sql, ids);
    database.execute_alone(&sql.finish()).await
}

/// Releases the claimed tombstones `ids` for the next run; with `give_back`, without counting
/// this claim as an attempt (their run stopped on its budget after removing rows, not on an
/// error). The number released.
pub(super) async fn release(database: &Database, ids: &[i64], token: &str, give_back: bool) -> Result<u64, DbError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut sql = database.sql();
    sql.push("UPDATE cascade_inbox SET claim_token = NULL, claim_expires_at = NULL");
    sql.push(if give_back { ", attempts = attempts - 1 " } else { " " });
    sql.push("WHERE claim_token = ").bind_text(token).push(" AND ");
    ids_in(&mut sql, ids);
    database.execute_alone(&sql.finish()).await
}

/// Records `error` on the claimed tombstones `ids` and leaves them for another attempt at
/// `retry_at` (held by no worker until then), or parks those that have had `max_attempts`.
pub(super) async fn failed(
    database: &Database,
    ids: &[i64],
    token: &str,
    error: &str,
    (max_attempts, retry_at): (u64, SystemTime),
) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_inbox SET last_error = ").bind_text(error);
    sql.push(", claim_token = NULL, claim_expires_at = ").timestamp(retry_at.min(latest_time()));
    sql.push(", parked_at = CASE WHEN attempts >= ").bind(attempts_param(max_attempts));
    sql.push(" THEN CURRENT_TIMESTAMP END WHERE claim_token = ").bind_text(token).push(" AND ");
    ids_in(&mut sql, ids);
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// Up to `limit` applied tombstones of `category` with an id above `after`, applied at `since`
/// or later: the keys the sweep looks for late children of. `(id, key)` each, by id.
pub(super) async fn kept(
    database: &Database,
    category: &str,
    (after, since): (i64, SystemTime),
    limit: u64,
) -> Result<Vec<(i64, String)>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT ").text("id").push(" AS id, object_key FROM cascade_inbox WHERE category = ").bind_text(category);
    sql.push(" AND applied_at >= ").timestamp(since).push(" AND id > ").bind(Param::integer(after));
    // By the column, not the text alias `id`, which would sort 10 before 9.
    sql.push(" ORDER BY cascade_inbox.id LIMIT ").bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let rows = database.fetch_records(&sql.finish()).await?;
    rows.iter().map(|row| Ok((row.parsed("id")?, row.text("object_key")?))).collect()
}

/// The keys of up to `limit` pending tombstones of `category` (neither applied nor parked),
/// oldest first.
pub(super) async fn pending_keys(database: &Database, category: &str, limit: u64) -> Result<Vec<String>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT object_key FROM cascade_inbox WHERE category = ").bind_text(category);
    sql.push(" AND applied_at IS NULL AND parked_at IS NULL ORDER BY id LIMIT ");
    sql.bind(Param::integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let rows = database.fetch_records(&sql.finish()).await?;
    rows.iter().map(|row| row.text("object_key")).collect()
}

/// Rows a purge removes per statement, so that no one statement holds the table for long.
const ROWS_PER_PURGE: i64 = 5_000;

/// Removes the tombstones applied before `before`: past the retention window, a late child of
/// theirs is no longer looked for. The number removed.
pub(super) async fn purge(database: &Database, before: SystemTime) -> Result<u64, DbError> {
    let mut purged = 0;
    loop {
        let selector = database.backend().row_selector(false, &["id".to_owned()]);
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_inbox WHERE ").push(&selector.matched).push(selector.open);
        sql.push(&selector.select).push(" FROM cascade_inbox WHERE applied_at < ").timestamp(before);
        sql.push(" ORDER BY id LIMIT ").bind(Param::integer(ROWS_PER_PURGE)).push(selector.close);
        let removed = database.execute_alone(&sql.finish()).await?;
        purged += removed;
        if removed < ROWS_PER_PURGE as u64 {
            return Ok(purged);
        }
    }
}

/// Per category: pending, applied and parked tombstones, and the oldest pending one's
/// `received_at` (UTC, as text).
pub(super) async fn counts(database: &Database) -> Result<Vec<(String, u64, u64, u64, Option<String>)>, DbError> {
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT category, CAST(SUM(CASE WHEN applied_at IS NULL AND parked_at IS NULL THEN 1 ELSE 0 END)");
    sql.as_text()
        .push(" AS pending, ")
        .text("SUM(CASE WHEN applied_at IS NOT NULL THEN 1 ELSE 0 END)")
        .push(" AS applied, ");
    sql.text("SUM(CASE WHEN parked_at IS NOT NULL THEN 1 ELSE 0 END)").push(" AS parked, ");
    sql.push(&backend.timestamp_text("MIN(CASE WHEN applied_at IS NULL AND parked_at IS NULL THEN received_at END)"));
    sql.push(" AS oldest FROM cascade_inbox GROUP BY category ORDER BY category");
    let rows = database.fetch_records(&sql.finish()).await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.text("category")?,
                row.parsed("pending")?,
                row.parsed("applied")?,
                row.parsed("parked")?,
                row.optional_text("oldest")?,
            ))
        })
        .collect()
}

/// `id IN (ids)`, the ids bound as one list: a parameter each would cost SQLite the square of
/// their number to bind (see [`ROWS_PER_INSERT`]).
fn ids_in(sql: &mut SqlBuilder, ids: &[i64]) {
    sql.key_list("id", &KeyType::Integer, Param::Keys(Keys::Integers(ids.to_vec())));
}
