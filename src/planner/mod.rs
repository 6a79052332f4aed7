//! The planner: models become nodes and relations edges of a petgraph graph; every rule runs over
//! the whole config and reports all it finds; `compile` turns a root model into a plan tree.

mod compile;
mod dag;
mod generate;
mod graph;
mod rules;

pub use compile::{CompileError, OutboxTarget, Plan, PlanNode, compile, declared_model, worked};
pub(crate) use dag::{ChildrenId, Dag, children_id};
pub use generate::starting_config;
pub(crate) use generate::toml_string;
pub(crate) use graph::ModelGraph;

use std::sync::Arc;

use crate::config::{Config, Loaded, Located, Model, Relation, RemoteModel};
use crate::diagnostic::{Diagnostic, Sources};
use crate::schema::{Column, ForeignKey, Schema, Table};

/// What every rule gets to look at.
pub(crate) struct Context<'a> {
    pub config: &'a Config,
    pub graph: &'a ModelGraph,
    pub sources: &'a Sources,
    /// The real schema, when one was given; rules that need it do nothing without it.
    pub schema: Option<&'a Schema>,
}

/// A declared relation whose child model exists and whose child table is in the schema.
pub(crate) struct SchemaRelation<'a> {
    pub parent: &'a Model,
    pub parent_table: Option<&'a Table>,
    pub relation: &'a Relation,
    pub child: &'a Model,
    pub child_table: &'a Table,
}

impl<'a> SchemaRelation<'a> {
    /// The parent's columns the relation references (`references`, else the parent's key).
    pub(crate) fn referenced(&self) -> Vec<String> {
        self.relation.referenced(self.parent)
    }

    /// Each of the relation's columns (as written, with its place) and the child table's column
    /// of that name, with the parent table's column it references, where both tables have them.
    pub(crate) fn pairs(&self) -> Vec<(&'a Located<String>, &'a Column, &'a Column)> {
        let Some(parent_table) = self.parent_table else { return Vec::new() };
        let referenced = self.referenced();
        self.relation
            .columns()
            .into_iter()
            .zip(referenced)
            .filter_map(|(written, target)| {
                Some((written, self.child_table.column(&written.value)?, parent_table.column(&target)?))
            })
            .collect()
    }

    /// The foreign keys of the child table on exactly the relation's columns that reference the
    /// parent's referenced columns.
    pub(crate) fn foreign_keys(&self, schema: &'a Schema) -> Vec<&'a ForeignKey> {
        let Some(parent_table) = self.parent_table else { return Vec::new() };
        let columns = self.relation.column_names();
        let referenced = self.referenced();
        let (child, parent) = (self.child_table.qualified_name(), parent_table.qualified_name());
        schema.foreign_keys_on(&child, &columns, &parent, &referenced)
    }
}

impl<'a> Context<'a> {
    /// The schema table of a model, when a schema is given and has it.
    pub(crate) fn table_of(&self, model: &Model) -> Option<&'a Table> {
        self.schema?.table(&model.table.value)
    }

    /// Every relation of a remote model whose child model exists and whose child table is in the
    /// schema: (remote model, relation, child table).
    pub(crate) fn remote_relations(&self) -> impl Iterator<Item = (&'a RemoteModel, &'a Relation, &'a Table)> + '_ {
        self.config.remote_models.values().flat_map(move |remote| {
            remote.children.iter().filter_map(move |relation| {
                let child = self.config.model(&relation.model.value)?;
                Some((remote, relation, self.table_of(child)?))
            })
        })
    }

    /// Every relation that can be checked against the schema (none without a schema).
    pub(crate) fn schema_relations(&self) -> impl Iterator<Item = SchemaRelation<'a>> + '_ {
        self.config.models.values().flat_map(move |parent| {
            parent.children.iter().filter_map(move |relation| {
                let child = self.config.model(&relation.model.value)?;
                Some(SchemaRelation {
                    parent,
                    parent_table: self.table_of(parent),
                    relation,
                    child,
                    child_table: self.table_of(child)?,
                })
            })
        })
    }
}

/// Runs every rule (those that need a schema only when one is given) and returns all
/// diagnostics they raise.
pub(crate) fn validate(config: &Config, sources: &Sources, schema: Option<&Schema>) -> Vec<Diagnostic> {
    let graph = ModelGraph::build(config);
    let context = Context { config, graph: &graph, sources, schema };
    let mut diagnostics = Vec::new();
    for rule in rules::ALL {
        rule(&context, &mut diagnostics);
    }
    diagnostics
}

/// The models whose tables `plan` deletes rows from, each once: all that
/// [`check_references`] depends on besides the config and the schema.
pub(crate) fn deleted_models<'c>(config: &'c Config, plan: &Plan) -> Vec<&'c Model> {
    let mut seen = std::collections::HashSet::new();
    let steps = plan.steps();
    let deleting = steps.into_iter().filter(|step| step.action.deletes() && seen.insert(step.model.as_str()));
    deleting.filter_map(|step| config.model(&step.model)).collect()
}

/// What must hold before a plan deletes anything from the live `schema` from the tables of
/// `deleted` ([`deleted_models`]): every foreign key into a table it (or the database, for it)
/// deletes from that the database enforces (`ON DELETE NO ACTION` or `RESTRICT`) is a declared
/// relation or an `ignore_references` entry, whether or not `require_all_references` is set.
/// Each one that is not is an `unregistered-reference` error.
pub(crate) fn check_references(
    config: &Config,
    sources: &Sources,
    schema: &Schema,
    deleted: Vec<&Model>,
) -> Vec<Diagnostic> {
    let graph = ModelGraph::build(config);
    let context = Context { config, graph: &graph, sources, schema: Some(schema) };
    let mut diagnostics = Vec::new();
    rules::check_deleted_tables(&context, deleted, &mut diagnostics);
    sort(&mut diagnostics);
    diagnostics
}

/// A config that every rule passed without an error (warnings allowed), with the files it was
/// read from. Only [`check`] (and `Engine::prepare`, against the live schema)
/// makes one, and only a checked config compiles into plans and runs deletions, so a program
/// cannot run a config that was never checked. Cloning it is cheap.
#[derive(Debug, Clone)]
pub struct CheckedConfig {
    config: Arc<Config>,
    sources: Arc<Sources>,
}

impl CheckedConfig {
    /// The config's files, which the diagnostics' locations point into.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// A config that passed the rules against `schema` too, or every diagnostic (errors first
    /// among equals, in source order) when it did not.
    pub(crate) fn against(&self, schema: &Schema) -> Result<Self, Vec<Diagnostic>> {
        let mut diagnostics = validate(&self.config, &self.sources, Some(schema));
        if diagnostics.iter().any(Diagnostic::is_error) {
            sort(&mut diagnostics);
            return Err(diagnostics);
        }
        Ok(self.clone())
    }

    /// A config taken as checked, for tests of what compiling does with a config the rules
    /// would refuse.
    #[cfg(test)]
    pub(crate) fn assume(config: Config) -> Self {
        Self { config: Arc::new(config), sources: Arc::default() }
    }
}

impl std::ops::Deref for CheckedConfig {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.config
    }
}

/// Adds the planner's diagnostics to those of loading and puts them all in source order; the
/// checked config when none of them is an error.
pub fn check(loaded: &mut Loaded, schema: Option<&Schema>) -> Option<CheckedConfig> {
    let found = validate(&loaded.config, &loaded.sources, schema);
    loaded.diagnostics.extend(found);
    sort(&mut loaded.diagnostics);
    (!loaded.diagnostics.iter().any(Diagnostic::is_error))
        .then(|| CheckedConfig { config: Arc::new(loaded.config.clone()), sources: Arc::new(loaded.sources.clone()) })
}

/// Adds to `loaded` what a deletion would refuse before its first write, for every model as the
/// root: each foreign key into its table that the database enforces and that is neither a
/// declared relation nor ignored (`unregistered-reference`, as `delete` reports it). `validate`
/// runs it against its schema, so that its verdict is the deletion's; the other commands check
/// the models their own plans delete.
pub fn check_deletions(loaded: &mut Loaded, schema: &Schema) {
    let graph = ModelGraph::build(&loaded.config);
    let context = Context { config: &loaded.config, graph: &graph, sources: &loaded.sources, schema: Some(schema) };
    let mut diagnostics = Vec::new();
    rules::check_every_model(&context, &mut diagnostics);
    add_diagnostics(loaded, diagnostics);
}

/// Adds to `loaded` where its remote models disagree with the configs of the databases that
/// send their tombstones, `peers` (each loaded from its directory, named as given): a category no
/// peer delivers, or one a peer keys or scopes otherwise. The peers' files join `loaded`'s
/// sources, so that each diagnostic shows the peer's side too.
pub fn check_peers(loaded: &mut Loaded, peers: &[(String, Loaded)]) {
    let mut diagnostics = Vec::new();
    let mut offsets = Vec::new();
    for (_, peer) in peers {
        offsets.push(loaded.sources.len());
        for file in peer.sources.ids() {
            loaded.sources.add(peer.sources.name(file), peer.sources.text(file));
        }
    }
    let relocators: Vec<_> = offsets
        .iter()
        .map(|&offset| {
            move |location: &crate::diagnostic::Location| {
                crate::diagnostic::Location::new(location.file + offset, location.span.clone())
            }
        })
        .collect();
    let views: Vec<rules::peer::Peer<'_>> = peers
        .iter()
        .zip(&relocators)
        .map(|((name, peer), relocate)| rules::peer::Peer { name, config: &peer.config, relocate })
        .collect();
    rules::peer::check(&loaded.config, &views, &mut diagnostics);
    add_diagnostics(loaded, diagnostics);
}

/// Adds `found` to `loaded`'s diagnostics, all of them in source order.
pub fn add_diagnostics(loaded: &mut Loaded, found: Vec<Diagnostic>) {
    loaded.diagnostics.extend(found);
    sort(&mut loaded.diagnostics);
}

/// Source order: by file, then position, then code, so output is stable between runs.
pub(crate) fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.location.file, a.location.span.start, a.code).cmp(&(b.location.file, b.location.span.start, b.code))
    });
}

/// Model names close to `name`, for "did you mean" help on unknown models.
pub(crate) fn suggest_model(config: &Config, name: &str) -> Option<String> {
    crate::diagnostic::did_you_mean(name, config.models.keys().map(String::as_str))
}

#[cfg(test)]
pub(crate) mod fixture {
    //! Runs every rule over an in-memory config (and optionally a DDL schema), for the tests at
    //! the bottom of each rule.

    use crate::config::load_sources;
    use crate::diagnostic::{Code, Format, Report, Sources};
    use crate::schema::parse_ddl;

    use super::*;

    pub(crate) fn check_files(files: &[(&str, &str)]) -> (Vec<Diagnostic>, Sources) {
        check_files_against(files, None)
    }

    pub(crate) fn check_files_against(files: &[(&str, &str)], ddl: Option<&str>) -> (Vec<Diagnostic>, Sources) {
        let mut sources = Sources::default();
        for (name, text) in files {
            sources.add(*name, *text);
        }
        let schema = ddl.map(|sql| parse_ddl(sql).schema);
        let mut loaded = load_sources(sources);
        check(&mut loaded, schema.as_ref());
        (loaded.diagnostics, loaded.sources)
    }

    /// A one-file config that every rule passes without any diagnostic.
    pub(crate) fn checked(toml: &str) -> CheckedConfig {
        let mut sources = Sources::default();
        sources.add("cascade.toml", toml);
        let mut loaded = load_sources(sources);
        let checked = check(&mut loaded, None);
        assert_eq!(loaded.diagnostics, vec![]);
        checked.expect("a config without diagnostics is checked")
    }

    /// A one-file config that reads without any diagnostic.
    pub(crate) fn config(toml: &str) -> crate::config::Config {
        let mut sources = Sources::default();
        sources.add("cascade.toml", toml);
        let loaded = load_sources(sources);
        assert_eq!(loaded.diagnostics, vec![]);
        loaded.config
    }

    /// `(code, line)` of every diagnostic of a one-file config.
    pub(crate) fn codes(toml: &str) -> Vec<(Code, usize)> {
        codes_against(toml, None)
    }

    /// `(code, line)` of every diagnostic of a one-file config checked against a DDL schema.
    pub(crate) fn codes_against(toml: &str, ddl: Option<&str>) -> Vec<(Code, usize)> {
        let (diagnostics, sources) = check_files_against(&[("cascade.toml", toml)], ddl);
        diagnostics.iter().map(|d| (d.code, sources.line_column(&d.location).0)).collect()
    }

    /// The human report of a one-file config, for snapshots.
    pub(crate) fn human(toml: &str) -> String {
        human_against(toml, None)
    }

    pub(crate) fn human_against(toml: &str, ddl: Option<&str>) -> String {
        let (diagnostics, sources) = check_files_against(&[("cascade.toml", toml)], ddl);
        Report { sources: &sources, diagnostics: &diagnostics }.render(Format::Human, false)
    }
}
