//! The drainer's statements on `cascade_outbox_entry` (the outbox's rows, naming their scope,
//! category and model by code) and `cascade_outbox_shard`. Each is one statement
//! that commits by itself (no transaction is held while a sink runs): a claim is a conditional
//! upsert of the shard's row, so two drainers never hold one shard, on SQLite and PostgreSQL alike.
//! A scope with cells is claimed, read and backed off per cell; what only cells need (recording a
//! cell's deliveries, deleting what every cell has) is in `cells.rs`.

use std::time::SystemTime;

use crate::db::outbox::{Codes, push_identifier};
use crate::db::sql::{Param, SqlBuilder, Statement};
use crate::db::{Database, DbError, Transaction};

/// Messages with the same `(scope, shard_identifier)` are delivered in order by one drainer, to
/// each cell of a scope with cells on its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Shard {
    pub scope: String,
    /// The scope's code in `cascade_outbox_name`.
    pub scope_code: i64,
    /// NULL when the deleted row's shard key was NULL.
    pub identifier: Option<String>,
    /// The cell delivered to: `''` for a scope without cells.
    pub cell: String,
}

impl Shard {
    /// The shard's key in `cascade_outbox_shard`, where a NULL identifier is `''`.
    fn claim_key(&self) -> &str {
        self.identifier.as_deref().unwrap_or("")
    }
}

/// A scope a drainer delivers: its categories that have a sink, narrowed by `--scope` and
/// `--category`, and its cells (none for a scope without cells).
#[derive(Debug, Clone)]
pub(crate) struct DeliverableScope {
    pub name: String,
    pub categories: Vec<String>,
    pub cells: Vec<String>,
}

/// The scopes a drainer delivers, and the codes of their names as last read (see
/// [`Codes::read`]). Rows of other scopes and categories stay where they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deliverable {
    pub scopes: Vec<DeliverableScope>,
    pub codes: Codes,
}

impl Deliverable {
    /// The scopes with cells (`true`) or without.
    pub(super) fn scopes(&self, with_cells: bool) -> impl Iterator<Item = &DeliverableScope> {
        self.scopes.iter().filter(move |scope| scope.cells.is_empty() != with_cells)
    }

    /// `alias`'s row has a deliverable scope and category, of a scope with cells or without.
    fn push(&self, sql: &mut SqlBuilder, alias: &str, with_cells: bool) {
        sql.push("(1 = 0");
        for scope in self.scopes(with_cells) {
            // A name with no code yet has no rows.
            let Some(code) = self.codes.get(&scope.name) else { continue };
            let categories: Vec<Param> =
                scope.categories.iter().filter_map(|category| self.codes.get(category)).map(Param::integer).collect();
            if categories.is_empty() {
                continue;
            }
            sql.push(&format!(" OR ({alias}.scope_code = ")).bind(Param::integer(code));
            sql.push(&format!(" AND {alias}.category_code IN (")).binds(categories).push("))");
        }
        sql.push(")");
    }

    /// `(scope, cell)` rows: every cell of every deliverable scope with cells, for a join (see
    /// [`SqlBuilder::values_table`]).
    pub(super) fn push_cells(&self, sql: &mut SqlBuilder) {
        let cells: Vec<(&str, &str)> = self
            .scopes(true)
            .flat_map(|scope| scope.cells.iter().map(move |cell| (scope.name.as_str(), cell.as_str())))
            .collect();
        push_cell_rows(sql, &cells);
    }
}

/// `(scope, cell)` rows as a table whose columns are `column1` and `column2` (see
/// [`SqlBuilder::values_table`]).
pub(super) fn push_cell_rows(sql: &mut SqlBuilder, cells: &[(&str, &str)]) {
    sql.values_table(2, cells.len(), |sql, row, column| {
        sql.bind_text(if column == 0 { cells[row].0 } else { cells[row].1 });
    });
}

/// `alias`'s row of `cascade_outbox_entry` is one `cell` has not received (`cell` is SQL: a bound value
/// or a column).
pub(super) fn push_not_received(sql: &mut SqlBuilder, alias: &str, cell: impl FnOnce(&mut SqlBuilder)) {
    sql.push(&format!(
        " AND NOT EXISTS (SELECT 1 FROM cascade_outbox_delivered d WHERE d.outbox_id = {alias}.id AND d.cell = "
    ));
    cell(sql);
    sql.push(")");
}

/// `alias`'s row belongs to `shard` (whichever cell).
pub(super) fn push_shard(sql: &mut SqlBuilder, alias: &str, shard: &Shard) {
    sql.push(&format!("{alias}.scope_code = ")).bind(Param::integer(shard.scope_code));
    match &shard.identifier {
        Some(identifier) => {
            sql.push(&format!(" AND {alias}.shard_identifier = "));
            push_identifier(sql, identifier);
            sql
        }
        None => sql.push(&format!(" AND {alias}.shard_identifier IS NULL")),
    };
}

/// `alias`'s row is due by `due` (a NULL `scheduled_for` is its `date_added`). Written without
/// `COALESCE`, whose selectivity PostgreSQL can only guess: with a guess of a third it probes an
/// object's later rows row by row instead of hashing the shard's (5 ms against 1 ms a batch).
fn push_scheduled_by(sql: &mut SqlBuilder, alias: &str, due: SystemTime) {
    sql.push(&format!("({alias}.scheduled_for <= ")).timestamp(due);
    sql.push(&format!(" OR ({alias}.scheduled_for IS NULL AND {alias}.date_added <= ")).timestamp(due).push("))");
}

/// `cascade_outbox_shard`'s row of `claim`'s shard, still held by the claim.
fn push_claimed(sql: &mut SqlBuilder, claim: &ShardClaim) {
    sql.push(" WHERE scope = ").bind_text(&claim.shard.scope);
    sql.push(" AND shard_identifier = ").bind_text(claim.shard.claim_key());
    sql.push(" AND cell = ").bind_text(&claim.shard.cell);
    sql.push(" AND claim_token = ").bind_text(&claim.token);
}

/// A shard's row may be claimed: no claim alive at `now`, and its backoff over by `due` (the
/// start of the pass, so a shard that fails during a pass waits for the next one).
fn push_claimable(sql: &mut SqlBuilder, alias: &str, now: SystemTime, due: SystemTime) {
    sql.push(&format!("({alias}.claim_expires_at IS NULL OR {alias}.claim_expires_at <= ")).timestamp(now);
    sql.push(&format!(") AND ({alias}.next_attempt_at IS NULL OR {alias}.next_attempt_at <= ")).timestamp(due);
    sql.push(")");
}

/// Up to `limit` shards (each cell of a shard of a scope with cells on its own) with
/// deliverable rows due by `due` that are not claimed at `now` and whose backoff is over by
/// `due`, oldest first.
pub(crate) async fn due_shards(
    database: &Database,
    deliverable: &Deliverable,
    due: SystemTime,
    now: SystemTime,
    limit: u64,
) -> Result<Vec<Shard>, DbError> {
    let mut found = Vec::new();
    for with_cells in [false, true] {
        if deliverable.scopes(with_cells).next().is_none() {
            continue;
        }
        let mut sql = database.sql();
        sql.push("SELECT n.name AS scope, ").text("o.shard_identifier").push(" AS shard_identifier, ");
        sql.push(if with_cells { "c.column2" } else { "''" })
            .push(" AS cell, ")
            .text("MIN(o.id)")
            .push(" AS first_id, ");
        sql.text("o.scope_code").push(" AS scope_code FROM cascade_outbox_entry o ");
        sql.push("JOIN cascade_outbox_name n ON n.code = o.scope_code ");
        if with_cells {
            sql.push("JOIN ");
            deliverable.push_cells(&mut sql);
            sql.push(" AS c ON c.column1 = n.name ");
        }
        sql.push("LEFT JOIN cascade_outbox_shard s ON s.scope = n.name ");
        sql.push("AND s.shard_identifier = COALESCE(").text("o.shard_identifier").push(", '') AND s.cell = ");
        sql.push(if with_cells { "c.column2" } else { "''" }).push(" WHERE ");
        push_scheduled_by(&mut sql, "o", due);
        sql.push(" AND ");
        deliverable.push(&mut sql, "o", with_cells);
        if with_cells {
            push_not_received(&mut sql, "o", |sql| {
                sql.push("c.column2");
            });
        }
        sql.push(" AND (s.scope IS NULL OR (");
        push_claimable(&mut sql, "s", now, due);
        sql.push(")) GROUP BY o.scope_code, n.name, o.shard_identifier");
        sql.push(if with_cells { ", c.column2" } else { "" });
        sql.push(" ORDER BY MIN(o.id) LIMIT ").bind(Param::integer(clamp(limit)));
        for row in database.fetch_records(&sql.finish()).await? {
            let shard = Shard {
                scope: row.text("scope")?,
                scope_code: row.parsed("scope_code")?,
                identifier: row.optional_text("shard_identifier")?,
                cell: row.text("cell")?,
            };
            found.push((row.parsed::<i64>("first_id")?, shard));
        }
    }
    // Both kinds together, oldest first.
    found.sort_by_key(|(first, _)| *first);
    found.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(found.into_iter().map(|(_, shard)| shard).collect())
}

fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A shard this drainer holds until `claim_expires_at`; every later statement names the token.
#[derive(Debug, Clone)]
pub(crate) struct ShardClaim {
    pub shard: Shard,
    pub token: String,
    /// Failed deliveries of the shard so far.
    pub attempts: u64,
}

/// Claims `shard` until `until` when no one holds it at `now` and its backoff was over by `due`.
pub(crate) async fn claim(
    database: &Database,
    shard: &Shard,
    now: SystemTime,
    due: SystemTime,
    until: SystemTime,
) -> Result<Option<ShardClaim>, DbError> {
    let token = uuid::Uuid::new_v4().to_string();
    let mut sql = database.sql();
    sql.push(
        "INSERT INTO cascade_outbox_shard (scope, shard_identifier, cell, claim_token, claim_expires_at) VALUES (",
    );
    sql.bind_text(&shard.scope).push(", ").bind_text(shard.claim_key()).push(", ").bind_text(&shard.cell).push(", ");
    sql.bind_text(&token).push(", ").timestamp(until);
    sql.push(")");
    let backend = database.backend();
    let (key, updated) = (["scope", "shard_identifier", "cell"], ["claim_token", "claim_expires_at"]);
    backend.on_duplicate_when(&mut sql, &key, &updated, &mut |sql| {
        push_claimable(sql, "cascade_outbox_shard", now, due);
    });
    sql.push(" RETURNING ").text("attempts").push(" AS attempts, claim_token");
    let rows = database.fetch_records(&sql.finish()).await?;
    let Some(row) = rows.first() else { return Ok(None) };
    if row.optional_text("claim_token")?.as_deref() != Some(token.as_str()) {
        return Ok(None);
    }
    Ok(Some(ShardClaim { shard: shard.clone(), token, attempts: row.parsed("attempts")? }))
}

/// Extends the claim to `until`; false when it is no longer this drainer's.
pub(crate) async fn renew(database: &Database, claim: &ShardClaim, until: SystemTime) -> Result<bool, DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_outbox_shard SET claim_expires_at = ").timestamp(until);
    push_claimed(&mut sql, claim);
    Ok(database.execute(&sql.finish()).await? == 1)
}

/// The shard is delivered: its row goes, and with it any backoff.
pub(crate) async fn finish(database: &Database, claim: &ShardClaim) -> Result<(), DbError> {
    database.execute(&finished(database, claim)).await.map(drop)
}

fn finished(database: &Database, claim: &ShardClaim) -> Statement {
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_outbox_shard");
    push_claimed(&mut sql, claim);
    sql.finish()
}

/// Gives the shard back without a failure (the drainer is stopping, or met a database error).
/// A shard whose failures in a row are over (none, or a delivery went through since) keeps no
/// row, as a delivered one; one still failing keeps its attempts and backoff.
pub(crate) async fn release(database: &Database, claim: &ShardClaim) -> Result<(), DbError> {
    if claim.attempts == 0 {
        return finish(database, claim).await;
    }
    let mut sql = database.sql();
    sql.push("UPDATE cascade_outbox_shard SET claim_token = NULL, claim_expires_at = NULL");
    push_claimed(&mut sql, claim);
    database.execute(&sql.finish()).await.map(drop)
}

/// Records a failed delivery and gives the shard back until `next_attempt`. The shard has been
/// failing since `now` when this is the first failure in a row.
pub(crate) async fn fail(
    database: &Database,
    claim: &ShardClaim,
    now: SystemTime,
    next_attempt: SystemTime,
    error: &str,
) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_outbox_shard SET claim_token = NULL, claim_expires_at = NULL, attempts = ");
    sql.bind(Param::integer(clamp(claim.attempts + 1))).push(", next_attempt_at = ").timestamp(next_attempt);
    sql.push(", last_attempt_at = ").timestamp(now).push(", last_error = ").bind_text(&crate::secret::redact(error));
    sql.push(", failing_since = ");
    if claim.attempts == 0 {
        sql.timestamp(now);
    } else {
        sql.push("COALESCE(failing_since, ").timestamp(now).push(")");
    }
    push_claimed(&mut sql, claim);
    database.execute(&sql.finish()).await.map(drop)
}

/// One coalesced message: the newest row of its `(category, model, object_identifier)` in the
/// shard.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub id: i64,
    pub category: String,
    pub category_code: i64,
    /// The model the row is about (`''` for rows written before tombstones named it).
    pub model: String,
    pub model_code: i64,
    pub object_identifier: String,
    pub payload: Option<String>,
    pub date_added: String,
}

/// The shard's first `limit` coalesced messages due by `due` with an id above `after`, in id
/// order: rows that no later row of the same object due by then supersedes. A drainer reads a
/// shard forward from its last delivered id, so rows waiting for a later row of their object are
/// not read again and again. For a cell, the rows it has received count as gone.
pub(crate) async fn next_messages(
    database: &Database,
    shard: &Shard,
    deliverable: &Deliverable,
    due: SystemTime,
    after: i64,
    limit: u64,
) -> Result<Vec<Row>, DbError> {
    let backend = database.backend();
    let mut sql = database.sql();
    sql.push("SELECT ").text("o.id").push(" AS id, ").text("o.category_code").push(" AS category_code, ");
    sql.text("o.model_code").push(" AS model_code, ").text("o.object_identifier").push(" AS object_identifier, ");
    sql.push("o.payload AS payload, ").push(&backend.timestamp_text("o.date_added"));
    sql.push(" AS date_added FROM cascade_outbox_entry o WHERE ");
    push_shard(&mut sql, "o", shard);
    sql.push(" AND o.id > ").bind(Param::integer(after)).push(" AND ");
    push_scheduled_by(&mut sql, "o", due);
    sql.push(" AND ");
    deliverable.push(&mut sql, "o", !shard.cell.is_empty());
    let not_received = |sql: &mut SqlBuilder, alias: &str| {
        if !shard.cell.is_empty() {
            push_not_received(sql, alias, |sql| {
                sql.bind_text(&shard.cell);
            });
        }
    };
    not_received(&mut sql, "o");
    sql.push(" AND NOT EXISTS (SELECT 1 FROM cascade_outbox_entry later WHERE ");
    push_shard(&mut sql, "later", shard);
    sql.push(" AND later.category_code = o.category_code AND later.model_code = o.model_code");
    sql.push(" AND later.object_identifier = o.object_identifier AND later.id > o.id AND ");
    push_scheduled_by(&mut sql, "later", due);
    not_received(&mut sql, "later");
    sql.push(")");
    sql.push(" ORDER BY o.id LIMIT ").bind(Param::integer(clamp(limit)));
    let rows = database.fetch_records(&sql.finish()).await?;
    let rows = rows.into_iter().map(|row| {
        Ok(Row {
            id: row.parsed("id")?,
            category_code: row.parsed("category_code")?,
            model_code: row.parsed("model_code")?,
            object_identifier: row.text("object_identifier")?,
            payload: row.optional_text("payload")?,
            date_added: row.text("date_added")?,
            category: String::new(),
            model: String::new(),
        })
    });
    let mut rows = rows.collect::<Result<Vec<Row>, DbError>>()?;
    // The names come from the codes read before the look; a name registered since (a new model
    // writing a category already delivered) is read now. Joining the names in the statement
    // cost a fifth of its time.
    let codes = &deliverable.codes;
    if rows.iter().any(|row| codes.name(row.category_code).is_none() || codes.name(row.model_code).is_none()) {
        codes.read(database).await?;
    }
    for row in &mut rows {
        row.category = codes.name(row.category_code).unwrap_or_default();
        row.model = codes.name(row.model_code).unwrap_or_default();
    }
    Ok(rows)
}

/// Messages whose rows one statement deletes: four parameters each, well under the most a
/// statement may bind on SQLite (32,766) and PostgreSQL (65,535).
pub(super) const DELETED_PER_STATEMENT: usize = 1000;

/// Deletes the delivered messages' rows and every older row of the same category, model and
/// object in the shard; how many rows went.
pub(crate) async fn delete_delivered(database: &Database, shard: &Shard, delivered: &[Row]) -> Result<u64, DbError> {
    let mut deleted = 0;
    for part in delivered.chunks(DELETED_PER_STATEMENT) {
        let mut transaction = database.begin_write().await?;
        deleted += delete_part(database, &mut transaction, shard, part).await?;
        transaction.commit().await?;
    }
    Ok(deleted)
}

/// [`delete_delivered`] of a shard's last batch and [`finish`] in one transaction: one commit
/// where there were two (each a few `fsync`s on SQLite). Nothing of it happens unless all of it
/// does, so a failure leaves the batch for another delivery, as before.
pub(crate) async fn delete_last_delivered(
    database: &Database,
    claim: &ShardClaim,
    delivered: &[Row],
) -> Result<u64, DbError> {
    let mut transaction = database.begin_write().await?;
    let mut deleted = 0;
    for part in delivered.chunks(DELETED_PER_STATEMENT) {
        deleted += delete_part(database, &mut transaction, &claim.shard, part).await?;
    }
    transaction.execute(&finished(database, claim)).await?;
    transaction.commit().await?;
    Ok(deleted)
}

async fn delete_part(
    database: &Database,
    transaction: &mut Transaction,
    shard: &Shard,
    delivered: &[Row],
) -> Result<u64, DbError> {
    let ids = covered_ids(database, transaction, shard, delivered, false).await?;
    let mut deleted = 0;
    // A message stands for every older row of its object, however many: the ids go in parts.
    for part in ids.chunks(DELETED_PER_STATEMENT) {
        let mut sql = database.sql();
        sql.push("DELETE FROM cascade_outbox_entry WHERE id IN (").binds(part.iter().cloned()).push(")");
        deleted += transaction.execute(&sql.finish()).await?;
    }
    Ok(deleted)
}

/// The ids of the rows of `shard` that the `delivered` messages stand for, each message's row
/// and every older row of its category, model and object, in id order; `locked`, locked until
/// the transaction ends where the database locks rows (cells of one shard share its rows; a
/// shard without cells has one drainer). Read first, the rows are then written by
/// id: MariaDB runs a `DELETE` whose `IN` sub-select reads its own table as a scan of the whole
/// table, locking every row it reads.
pub(super) async fn covered_ids(
    database: &Database,
    transaction: &mut Transaction,
    shard: &Shard,
    delivered: &[Row],
    locked: bool,
) -> Result<Vec<Param>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT ").text("o.id").push(" FROM cascade_outbox_entry o JOIN ");
    sql.values_table(4, delivered.len(), |sql, row, column| {
        let row = &delivered[row];
        match column {
            0 => sql.bind(Param::integer(row.category_code)),
            1 => sql.bind(Param::integer(row.model_code)),
            2 => {
                push_identifier(sql, &row.object_identifier);
                sql
            }
            _ => sql.bind(Param::integer(row.id)),
        };
    });
    sql.push(" AS delivered ON o.category_code = delivered.column1 AND o.model_code = delivered.column2 ");
    sql.push("AND o.object_identifier = delivered.column3 AND o.id <= delivered.column4 WHERE ");
    push_shard(&mut sql, "o", shard);
    sql.push(" ORDER BY o.id");
    if locked {
        sql.push(&database.backend().lock_rows_of("o"));
    }
    let rows = transaction.fetch_texts(&sql.finish()).await?;
    Ok(rows.into_iter().filter_map(|row| row.into_iter().next().flatten()?.parse().ok()).map(Param::integer).collect())
}

/// Rows waiting per scope, and the oldest row's `date_added` as text.
pub(crate) async fn backlog(database: &Database) -> Result<Vec<(String, u64, String)>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT n.name AS scope, ").text("COUNT(*)").push(" AS waiting, ");
    sql.push(&database.backend().timestamp_text("MIN(o.date_added)")).push(" AS oldest");
    sql.push(" FROM cascade_outbox_entry o JOIN cascade_outbox_name n ON n.code = o.scope_code GROUP BY n.name");
    let rows = database.fetch_records(&sql.finish()).await?;
    rows.iter().map(|row| Ok((row.text("scope")?, row.parsed("waiting")?, row.text("oldest")?))).collect()
}

/// The shards of one `(scope, cell)` whose latest delivery failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failing {
    pub scope: String,
    /// `''` for a scope without cells.
    pub cell: String,
    pub shards: u64,
    /// When the earliest of their current runs of failures began, as text.
    pub since: Option<String>,
}

/// The failing shards per `(scope, cell)` (a pair with none has no entry).
pub(crate) async fn failing(database: &Database) -> Result<Vec<Failing>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT scope, cell, ").text("COUNT(*)").push(" AS shards, ");
    sql.push(&database.backend().timestamp_text("MIN(failing_since)"));
    sql.push(" AS since FROM cascade_outbox_shard WHERE attempts > 0 GROUP BY scope, cell");
    let rows = database.fetch_records(&sql.finish()).await?;
    let failing = rows.iter().map(|row| {
        Ok(Failing {
            scope: row.text("scope")?,
            cell: row.text("cell")?,
            shards: row.parsed("shards")?,
            since: row.optional_text("since")?,
        })
    });
    failing.collect()
}
