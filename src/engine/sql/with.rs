//! Statements that write through a data-modifying `WITH`, or whose one row says what several
//! writes did: a loop's rows deleted together, deleted rows' tombstones written by the delete
//! itself, and the outbox insert every way of writing tombstones shares.

use super::NodeSql;
use crate::db::Backend;
use crate::db::outbox::push_code;
use crate::db::sql::{Param, SqlBuilder, Statement};
use crate::planner::OutboxTarget;

/// Every `(node, keys)` of `deletes` deleted by key in one statement, one data-modifying `WITH`
/// each, whose one row is the rows each deleted (as text): rows that reference each other in a
/// loop, which a database that checks its keys at the end of each statement takes only together.
pub(crate) fn delete_together(backend: &'static dyn Backend, deletes: Vec<(&NodeSql<'_>, Param)>) -> Statement {
    let mut sql = SqlBuilder::new(backend);
    let count = deletes.len();
    for (index, (node, keys)) in deletes.into_iter().enumerate() {
        sql.push(if index == 0 { "WITH " } else { ", " }).identifier(&format!("cascade_loop_{index}"));
        sql.push(" AS (");
        node.write_delete_by_keys(&mut sql, keys);
        sql.push(" RETURNING 1)");
    }
    sql.push(" SELECT ");
    for index in 0..count {
        sql.push(if index == 0 { "" } else { ", " }).push("CAST((SELECT COUNT(*) FROM ");
        sql.identifier(&format!("cascade_loop_{index}")).push(")").as_text();
    }
    sql.finish()
}

/// `delete` (a delete with the tombstone `RETURNING` list) with its rows' tombstones inserted by
/// the same statement, through a data-modifying `WITH`: the deleted rows never leave the
/// database. The number of rows it reports is the tombstones', one per deleted row.
pub(crate) fn delete_with_tombstones(
    backend: &'static dyn Backend,
    delete: Statement,
    target: &OutboxTarget,
) -> Statement {
    let mut sql = with_deleted(backend, delete);
    sql.push(" ");
    insert_deleted_tombstones(&mut sql, target);
    sql.finish()
}

/// `delete` (a delete with the `RETURNING` list) through a data-modifying `WITH` that returns one
/// row: the number of rows deleted and their row objects as JSON lines, for the archive; with an
/// outbox target, the same statement inserts their tombstones. One result row
/// instead of one per deleted row.
pub(crate) fn delete_archived(
    backend: &'static dyn Backend,
    delete: Statement,
    outbox: Option<&OutboxTarget>,
) -> Statement {
    let mut sql = with_deleted(backend, delete);
    if let Some(target) = outbox {
        sql.push(", cascade_tombstones AS (");
        insert_deleted_tombstones(&mut sql, target);
        sql.push(")");
    }
    sql.push(" SELECT ")
        .text("COUNT(*)")
        .push(", string_agg(cascade_row, ")
        .bind_text("\n")
        .push(") FROM cascade_deleted");
    sql.finish()
}

fn with_deleted(backend: &'static dyn Backend, delete: Statement) -> SqlBuilder {
    let mut sql = SqlBuilder::new(backend);
    sql.push("WITH cascade_deleted (cascade_key, cascade_shard, cascade_payload, cascade_row) AS (").nest(delete);
    sql.push(")");
    sql
}

fn insert_deleted_tombstones(sql: &mut SqlBuilder, target: &OutboxTarget) {
    let backend = sql.backend();
    tombstones_select(
        sql,
        target,
        |sql| {
            sql.push(&backend.outbox_identifier("cascade_shard"));
        },
        |sql| {
            sql.push(&backend.outbox_identifier("cascade_key")).push(", cascade_payload");
        },
    );
    sql.push("cascade_deleted");
}

/// `INSERT INTO cascade_outbox_entry (...) SELECT` up to its `FROM`, which every way of writing
/// tombstones shares (the names' codes are registered before the deletion starts; `date_added`
/// is the default, and `scheduled_for` and `scheduled_from` are NULL: the same time): `shard` pushes the shard key's expression, `key_and_payload` the object
/// key's and the payload's.
pub(super) fn tombstones_select(
    sql: &mut SqlBuilder,
    target: &OutboxTarget,
    shard: impl FnOnce(&mut SqlBuilder),
    key_and_payload: impl FnOnce(&mut SqlBuilder),
) {
    sql.push("INSERT INTO cascade_outbox_entry (scope_code, shard_identifier, category_code, model_code, ");
    sql.push("object_identifier, payload) SELECT ");
    push_code(sql, &target.scope);
    sql.push(", ");
    shard(sql);
    sql.push(", ");
    push_code(sql, &target.category);
    sql.push(", ");
    push_code(sql, &target.model);
    sql.push(", ");
    key_and_payload(sql);
    sql.push(" FROM ");
}

/// The tombstones of one chunk, written in the chunk's transaction from one parameter: a JSON
/// array of `{"key", "shard", "payload"}` objects (payload a JSON text or null).
pub(crate) fn outbox_insert(backend: &'static dyn Backend, target: &OutboxTarget, rows: Param) -> Statement {
    let mut sql = SqlBuilder::new(backend);
    tombstones_select(
        &mut sql,
        target,
        |sql| {
            sql.push(&backend.outbox_identifier(&backend.json_field("shard")));
        },
        |sql| {
            sql.push(&backend.outbox_identifier(&backend.json_field("key")));
            sql.push(", ").push(&backend.json_field("payload"));
        },
    );
    backend.json_records(&mut sql, rows, &["key", "shard", "payload"]);
    sql.finish()
}
