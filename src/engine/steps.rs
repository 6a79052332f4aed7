//! The statements each step of a plan runs, in execution order. `plan --sql` lists them with
//! described parameters; the executor binds real values to the same statements.

use serde::Serialize;

use crate::config::Config;
use crate::db::sql::{Dialect, KeyType, NodeSql, Param, SqlValue, Statement, outbox_insert};
use crate::planner::{Plan, PlanNode};
use crate::schema::Schema;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepStatements {
    pub step: usize,
    pub model: String,
    pub statements: Vec<ListedStatement>,
}

/// A statement for people: its SQL and what each placeholder receives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedStatement {
    pub sql: String,
    pub params: Vec<String>,
}

/// Every step's statements, for a database of `dialect` (with `schema`, when known, for key
/// types and partitioned tables).
pub fn list(plan: &Plan, config: &Config, dialect: Dialect, schema: Option<&Schema>) -> Vec<StepStatements> {
    let mut steps = Vec::new();
    list_node(&plan.root, None, config, dialect, schema, &mut steps);
    steps.sort_by_key(|s| s.step);
    steps
}

fn list_node(
    node: &PlanNode,
    parent: Option<&PlanNode>,
    config: &Config,
    dialect: Dialect,
    schema: Option<&Schema>,
    out: &mut Vec<StepStatements>,
) {
    for child in &node.children {
        list_node(child, Some(node), config, dialect, schema, out);
    }
    let sql = node_sql(node, parent, dialect, schema);
    let matched = Param::Described(match parent {
        Some(parent) => format!("keys of the current `{}` chunk", parent.model),
        None => "the root ids".to_owned(),
    });
    let mut statements = Vec::new();
    if let (None, Some(status)) = (parent, config.model(&node.model).and_then(|m| m.status.as_ref())) {
        statements.push(sql.mark_in_progress(matched.clone(), status));
    }
    let outbox = outbox_columns(node, config);
    if sql.loads_rows() {
        statements.push(sql.select_chunk(matched, &outbox));
        if let Some(tombstone) = tombstone(node, dialect) {
            statements.push(tombstone);
        }
        statements.push(sql.delete_by_keys(Param::Described("the chunk's keys".to_owned())));
    } else {
        let returning: Vec<String> = match &node.outbox {
            Some(_) => std::iter::once(node.key.clone().unwrap_or_else(|| "id".to_owned())).chain(outbox).collect(),
            None => Vec::new(),
        };
        statements.push(sql.set_based_chunk(matched, &returning));
        if let Some(tombstone) = tombstone(node, dialect) {
            statements.push(tombstone);
        }
    }
    out.push(StepStatements {
        step: node.step,
        model: node.model.clone(),
        statements: statements.into_iter().map(listed).collect(),
    });
}

/// The statement builder of one node, with key types from the schema (integer when unknown).
pub fn node_sql<'a>(
    node: &'a PlanNode,
    parent: Option<&PlanNode>,
    dialect: Dialect,
    schema: Option<&Schema>,
) -> NodeSql<'a> {
    let table = schema.and_then(|s| s.table(&node.table));
    let key_type = |table: Option<&crate::schema::Table>, column: Option<&str>| {
        table
            .zip(column)
            .and_then(|(t, c)| t.column(c))
            .map_or(KeyType::Integer, |c| KeyType::of_declared(&c.data_type))
    };
    let parent_table = parent.and_then(|p| schema.and_then(|s| s.table(&p.table)));
    NodeSql {
        dialect,
        node,
        key_type: key_type(table, node.key.as_deref()),
        match_type: match parent {
            Some(parent) => key_type(parent_table, parent.key.as_deref()),
            None => key_type(table, node.key.as_deref()),
        },
        partitioned: table.is_some_and(|t| t.partitioned),
    }
}

/// Columns a tombstone needs from each deleted row besides its key: shard key and payload.
fn outbox_columns(node: &PlanNode, config: &Config) -> Vec<String> {
    let Some(target) = &node.outbox else { return Vec::new() };
    let key = node.key.as_deref().unwrap_or("id");
    let shard_key = config.outbox.scopes.get(&target.scope).map(|scope| scope.shard_key.value.clone());
    let payload = config.model(&node.model).into_iter().flat_map(|m| m.outbox_payload.iter().map(|c| c.value.clone()));
    let mut columns: Vec<String> = Vec::new();
    for column in shard_key.into_iter().chain(payload) {
        if column != key && !columns.contains(&column) {
            columns.push(column);
        }
    }
    columns
}

fn tombstone(node: &PlanNode, dialect: Dialect) -> Option<Statement> {
    let target = node.outbox.as_ref()?;
    Some(outbox_insert(
        dialect,
        [
            Param::Value(SqlValue::Text(target.scope.clone())),
            Param::Described("the row's shard key".to_owned()),
            Param::Value(SqlValue::Text(target.category.clone())),
            Param::Described("the row's key".to_owned()),
            Param::Described("the payload columns as JSON".to_owned()),
        ],
    ))
}

fn listed(statement: Statement) -> ListedStatement {
    let params = statement
        .params
        .iter()
        .map(|param| match param {
            Param::Described(what) => what.clone(),
            Param::Value(SqlValue::Integer(i)) => i.to_string(),
            Param::Value(SqlValue::Text(t)) => format!("'{}'", t.replace('\'', "''")),
            Param::Value(SqlValue::Integers(list)) => format!("{list:?}"),
            Param::Value(SqlValue::Texts(list)) => format!("{list:?}"),
        })
        .collect();
    ListedStatement { sql: statement.sql, params }
}
