//! `cascade` deletes large, deeply linked relational data safely: a declarative config of models
//! and relations is validated by a graph planner and compiled into a deletion plan.
//!
//! Validating a config from code and compiling the plan of one root model:
//!
//! ```
//! use cascade::diagnostic::Sources;
//!
//! let mut sources = Sources::default();
//! sources.add(
//!     "cascade.toml",
//!     r#"
//!     [models.organization]
//!     table = "organization"
//!     children = [{ model = "project", column = "organization_id" }]
//!
//!     [models.project]
//!     table = "project"
//!     strategy = "bulk"
//!     "#,
//! );
//! let mut loaded = cascade::config::load_sources(sources);
//! let checked = cascade::planner::check(&mut loaded, None).expect("no errors");
//! assert!(loaded.diagnostics.is_empty());
//!
//! let plan = cascade::planner::compile(&checked, "organization").unwrap();
//! let order: Vec<&str> = plan.steps().iter().map(|step| step.model.as_str()).collect();
//! assert_eq!(order, ["project", "organization"]); // children before parents
//! ```
//!
//! # What is stable
//!
//! The items re-exported at the crate root are the library's interface: loading and checking
//! configs ([`load`], [`check`], [`CheckedConfig`]), plans ([`compile`], [`Plan`]), schemas
//! ([`introspect`], [`parse_ddl`], [`Schema`]), databases ([`Database`]), deletions ([`Engine`],
//! [`Deletion`], [`DeleteOptions`]), the outbox drainer ([`Drainer`]), the inbox of tombstones
//! from other databases ([`inbox::receive`], [`inbox::apply`]) and the worker service
//! ([`WorkerService`]), with the modules they live in. A change that breaks a caller of those is
//! a breaking change of the crate. The modules hidden from these docs (the renderings of plans,
//! the CI review, the language server, the demo) serve the command line only and change with it;
//! SQL building is internal. `tests/it/surface.rs` pins the documented surface: a change to it
//! shows in that test's snapshot.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod audit;
pub mod cleanup;
pub mod config;
pub mod db;
// The demo database behind `cascade demo` and the examples; not an interface for programs.
#[doc(hidden)]
pub mod demo;
pub mod diagnostic;
pub mod engine;
pub mod inbox;
// The language server behind `cascade lsp`; for the command line only.
#[doc(hidden)]
pub mod lsp;
pub mod outbox;
pub mod partitions;
pub mod planner;
// Plans as text, diagrams and HTML, and the CI review: for the command line only.
#[doc(hidden)]
pub mod render;
#[doc(hidden)]
pub mod review;
pub mod scheduler;
pub mod schema;
pub mod secret;
pub mod service;
pub(crate) mod stop;
pub mod telemetry;
pub(crate) mod user;

/// The tests' seeded generator, shared with the integration tests.
#[cfg(test)]
#[path = "../tests/it/common/random.rs"]
#[allow(dead_code, unreachable_pub)]
mod random;

pub use audit::{RunOutcome, RunRows};
pub use config::{Config, Loaded, load, load_sources};
pub use db::{Access, Database, DbError};
pub use diagnostic::{Code, Diagnostic, Severity, Sources};
pub use engine::{DeleteError, DeleteOptions, Deletion, Engine, Finished, PrepareError, Summary};
pub use outbox::{DrainOptions, Drainer};
pub use planner::{CheckedConfig, Plan, check, compile};
pub use schema::{Schema, introspect, introspect_url, parse_ddl};
pub use service::{ServiceOptions, WorkerService};
