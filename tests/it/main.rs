//! The integration tests, one binary: each file of `tests/it/` is a module, `common` their shared
//! helpers. One binary links the crate (and librdkafka) once instead of once per file; run one
//! file's tests with its module as the filter (`scripts/test --test it trees::`). The Kafka tests
//! need the `kafka` feature (on by default).

mod common;

mod action;
mod allowed_users;
mod archive;
mod cli;
mod composite_keys;
mod database_action;
mod delete;
mod demo;
mod diff;
mod diff_oracle;
mod duplicates;
mod duplicates_remove;
mod identifiers;
mod inbox;
mod inbox_faults;
#[cfg(feature = "kafka")]
mod inbox_kafka;
mod layers;
mod lsp;
mod lsp_neovim;
mod metrics;
mod migrations;
mod mutations;
mod mutations_cli;
mod mysql;
mod ops;
mod options;
mod orphans;
mod orphans_composite;
mod orphans_delete;
mod outbox;
mod outbox_cells;
mod outbox_faults;
#[cfg(feature = "kafka")]
mod outbox_kafka;
mod partitions;
mod partitions_mysql;
mod plan;
mod plan_html;
mod postgres_restart;
mod pre_commit;
mod property;
mod random_schemas;
mod real_schemas;
mod real_world;
mod root_ids;
mod sarif;
mod schema;
mod schema_validation;
mod secrets;
mod sqlite_access;
mod stacked_diamonds;
mod surface;
mod trees;
mod validate;
mod worker;
