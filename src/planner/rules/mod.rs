//! One file per rule. Each rule looks at the whole config and pushes every problem it finds;
//! none stops the others. Each file carries its own fixtures and snapshot tests.

mod bulk_with_children;
mod bulk_with_row_data;
mod category_in_many_scopes;
mod category_sink_outside_scope;
mod chunk_size;
mod composite_key_per_row;
mod database_cascade;
mod delete_cycle;
mod duplicate_relation;
mod empty_scope;
mod header_env_name;
mod identifier_case;
mod literal_secret;
mod missing_column;
mod missing_shard_key;
mod missing_table;
mod nullify_not_null;
mod payload_without_outbox;
mod relation_type_mismatch;
mod retention_not_partitioned;
mod retention_on_referenced;
mod retention_on_sqlite;
mod sink_target;
mod undelivered_category;
mod unindexed_relation;
mod unknown_model;
mod unknown_rate_limit;
mod unknown_sink;
mod unregistered_reference;
mod unscoped_category;
mod unused_sink;

pub(crate) use unregistered_reference::check_deleted_tables;

use super::Context;
use crate::diagnostic::Diagnostic;

pub type Rule = fn(&Context<'_>, &mut Vec<Diagnostic>);

pub const ALL: &[Rule] = &[
    unknown_model::check,
    duplicate_relation::check,
    delete_cycle::check,
    bulk_with_children::check,
    bulk_with_row_data::check,
    composite_key_per_row::check,
    chunk_size::check,
    unknown_rate_limit::check,
    unscoped_category::check,
    category_in_many_scopes::check,
    empty_scope::check,
    payload_without_outbox::check,
    unknown_sink::check,
    category_sink_outside_scope::check,
    unused_sink::check,
    undelivered_category::check,
    sink_target::check,
    literal_secret::check,
    header_env_name::check,
    retention_on_referenced::check,
    retention_on_sqlite::check,
    // These need the real schema and do nothing without one.
    missing_table::check,
    missing_column::check,
    identifier_case::check,
    unregistered_reference::check,
    nullify_not_null::check,
    relation_type_mismatch::check,
    unindexed_relation::check,
    missing_shard_key::check,
    database_cascade::check,
    retention_not_partitioned::check,
];
