//! Which sink each message goes to: per scope, cell and category, from the config, narrowed by
//! `--scope` and `--category`. Every sink is made ready (its `env:` values read, its client
//! built) once, however many routes lead to it.

use std::collections::HashMap;
use std::sync::Arc;

use super::OutboxError;
use super::options::DrainOptions;
use super::sink::ReadySink;
use super::store::{Deliverable, DeliverableScope, Shard};
use crate::config::{Config, Sink};

/// The routes of a drainer.
pub(super) struct Routes {
    /// By scope and cell (`''` without cells), then by category.
    sinks: HashMap<(String, String), HashMap<String, Arc<ReadySink>>>,
    /// Every sink a route leads to, once.
    pub ready: Vec<Arc<ReadySink>>,
    pub deliverable: Deliverable,
}

impl Routes {
    /// The routes of `config`'s categories that have a sink (every cell of a scope with cells
    /// must have one), narrowed by the options' scopes and categories.
    pub(super) fn new(config: &Config, options: &DrainOptions) -> Result<Self, OutboxError> {
        check_filters(config, options)?;
        let mut routes = Self { sinks: HashMap::new(), ready: Vec::new(), deliverable: Deliverable::default() };
        for scope in config.outbox.scopes.values() {
            let name = &scope.name.value;
            if !options.scopes.is_empty() && !options.scopes.contains(name) {
                continue;
            }
            if let Some(cell) = scope.cells.iter().find(|cell| {
                let sink = scope.cell_sinks.get(&cell.value);
                sink.is_none_or(|sink| !config.outbox.sinks.contains_key(&sink.value))
            }) {
                // Its rows would go once the other cells had them: never deliver such a scope.
                return Err(OutboxError::Filter(format!(
                    "cell `{}` of scope `{name}` has no sink (run `cascade validate`)",
                    cell.value
                )));
            }
            let mut categories = Vec::new();
            for category in scope.categories.iter().map(|category| &category.value) {
                if !options.categories.is_empty() && !options.categories.contains(category) {
                    continue;
                }
                let deliveries = config.deliveries_of(name, category);
                for (cell, sink) in &deliveries {
                    let ready = routes.ready(sink, options)?;
                    let by_category = routes.sinks.entry((name.clone(), (*cell).to_owned())).or_default();
                    by_category.insert(category.clone(), ready);
                }
                if !deliveries.is_empty() {
                    categories.push(category.clone());
                }
            }
            if !categories.is_empty() {
                let cells = scope.cells.iter().map(|cell| cell.value.clone()).collect();
                routes.deliverable.scopes.push(DeliverableScope { name: name.clone(), categories, cells });
            }
        }
        if routes.deliverable.scopes.is_empty() {
            let reason = if options.scopes.is_empty() && options.categories.is_empty() {
                "no outbox category has a sink to deliver to: declare one under [outbox.sinks] and name it as a scope's `sink`"
            } else {
                "no category that --scope/--category select has a sink to deliver to"
            };
            return Err(OutboxError::Filter(reason.into()));
        }
        Ok(routes)
    }

    /// `sink` made ready, once.
    fn ready(&mut self, sink: &Sink, options: &DrainOptions) -> Result<Arc<ReadySink>, OutboxError> {
        if let Some(ready) = self.ready.iter().find(|ready| ready.name == sink.name.value) {
            return Ok(ready.clone());
        }
        let ready = Arc::new(ReadySink::new(sink, &options.variables)?);
        self.ready.push(ready.clone());
        Ok(ready)
    }

    /// The sinks of the messages of `shard` (for its cell), by category.
    pub(super) fn sinks(&self, shard: &Shard) -> Option<&HashMap<String, Arc<ReadySink>>> {
        self.sinks.get(&(shard.scope.clone(), shard.cell.clone()))
    }

    /// Every cell of `scope` (none without cells).
    pub(super) fn cells(&self, scope: &str) -> &[String] {
        self.deliverable.scopes.iter().find(|deliverable| deliverable.name == scope).map_or(&[], |d| &d.cells)
    }
}

/// `--scope` and `--category` must name what the config has.
fn check_filters(config: &Config, options: &DrainOptions) -> Result<(), OutboxError> {
    let scopes = &config.outbox.scopes;
    if let Some(unknown) = options.scopes.iter().find(|scope| !scopes.contains_key(*scope)) {
        let known: Vec<&str> = scopes.keys().map(String::as_str).collect();
        return Err(OutboxError::Filter(format!("unknown scope `{unknown}` (scopes: {})", known.join(", "))));
    }
    if let Some(unknown) = options.categories.iter().find(|category| config.scope_of(category).is_none()) {
        return Err(OutboxError::Filter(format!("category `{unknown}` is in no scope of the config")));
    }
    Ok(())
}
