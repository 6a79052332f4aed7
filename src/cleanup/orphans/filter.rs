//! Which relations `--model` and `--relation` ask for: each filter resolved against the config
//! and the schema (a name that is no model may name a table), and an error, with a suggestion,
//! for one that names nothing.

use super::{OrphanError, OrphanOptions};
use crate::config::Config;
use crate::schema::{Schema, Table};

/// What a `--model` or the child of a `--relation` names.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    Model(&'a str),
    Table(&'a Table),
}

impl Target<'_> {
    fn is(&self, model: Option<&str>, table: Option<&Table>) -> bool {
        match self {
            Target::Model(name) => model == Some(*name),
            Target::Table(wanted) => table.is_some_and(|table| std::ptr::eq(table, *wanted)),
        }
    }
}

/// The filters of `options`, resolved against the config and the schema.
pub(super) struct Filter<'a> {
    models: Vec<Target<'a>>,
    relations: Vec<(String, Target<'a>, String)>,
    /// Whether each relation filter matched something.
    used: Vec<bool>,
    /// `CHILD.COLUMN` of every relation looked at, for suggestions.
    seen: Vec<String>,
}

impl<'a> Filter<'a> {
    pub(super) fn new(options: &OrphanOptions, config: &'a Config, schema: &'a Schema) -> Result<Self, OrphanError> {
        let target = |name: &str| -> Option<Target<'a>> {
            match config.models.get_key_value(name).map(|(model, _)| model) {
                Some(model) => Some(Target::Model(model.as_str())),
                None => match config.remote_models.get_key_value(name) {
                    Some((model, _)) => Some(Target::Model(model.as_str())),
                    None => schema.table(name).map(Target::Table),
                },
            }
        };
        let mut models = Vec::new();
        for name in &options.models {
            models.push(target(name).ok_or_else(|| OrphanError::UnknownModel {
                name: name.clone(),
                suggestion: model_suggestion(config, name),
            })?);
        }
        let mut relations = Vec::new();
        for relation in &options.relations {
            let (child, column) = relation
                .rsplit_once('.')
                .filter(|(child, column)| !child.is_empty() && !column.is_empty())
                .ok_or_else(|| OrphanError::NotARelation(relation.clone()))?;
            let Some(child) = target(child) else {
                return Err(OrphanError::UnknownRelation {
                    relation: relation.clone(),
                    suggestion: model_suggestion(config, child),
                });
            };
            relations.push((relation.clone(), child, column.to_owned()));
        }
        let used = vec![false; relations.len()];
        Ok(Self { models, relations, used, seen: Vec::new() })
    }

    /// Whether a relation passes the filters. A relation filter that names it counts as used
    /// even when a model filter drops it: the relation exists, the filters just exclude it.
    /// `column` is the relation's columns as a report writes them (`a, b` over several), which
    /// a filter may also write `(a, b)` or `a,b`.
    pub(super) fn keeps(
        &mut self,
        parent: (Option<&str>, Option<&Table>),
        child: (Option<&str>, Option<&Table>),
        column: &str,
    ) -> bool {
        let child_name = child.0.or(child.1.map(|table| table.name.as_str())).unwrap_or_default();
        if column.contains(", ") {
            self.seen.push(format!("{child_name}.({column})"));
        } else {
            self.seen.push(format!("{child_name}.{column}"));
        }
        let mut relation_ok = self.relations.is_empty();
        for (index, (_, target, wanted)) in self.relations.iter().enumerate() {
            if target.is(child.0, child.1) && columns_spelled(wanted).eq_ignore_ascii_case(&columns_spelled(column)) {
                self.used[index] = true;
                relation_ok = true;
            }
        }
        let model_ok = self.models.is_empty()
            || self.models.iter().any(|target| target.is(parent.0, parent.1) || target.is(child.0, child.1));
        relation_ok && model_ok
    }

    /// The error for the first relation filter that matched no relation, with a suggestion
    /// among the relations looked at; none once every filter was used.
    pub(super) fn unused(&self) -> Option<OrphanError> {
        let index = self.used.iter().position(|used| !used)?;
        let relation = self.relations[index].0.clone();
        let suggestion = crate::diagnostic::did_you_mean(&relation, self.seen.iter().map(String::as_str));
        Some(OrphanError::UnknownRelation { relation, suggestion })
    }
}

/// Columns as a filter compares them: without parentheses and blanks (`(a, b)` is `a,b`).
fn columns_spelled(columns: &str) -> String {
    columns.chars().filter(|c| !matches!(c, '(' | ')') && !c.is_whitespace()).collect()
}

fn model_suggestion(config: &Config, name: &str) -> Option<String> {
    crate::diagnostic::did_you_mean(name, config.models.keys().map(String::as_str))
}
