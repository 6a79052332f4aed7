//! The rows each side of a review would delete and nullify for the same roots, counted as `plan`
//! counts them (in SQL, read only), so a reviewer sees what a change does to real data.

use indexmap::IndexMap;
use serde::Serialize;

use crate::db::Database;
use crate::diagnostic::Diagnostic;
use crate::engine::{self, Engine, PrepareError};
use crate::planner::{CheckedConfig, CompileError, compile};

/// What one side would do to the roots' rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SideCounts {
    /// Rows deleted per model (each row once).
    pub deleted: IndexMap<String, u64>,
    /// Rows nullified per model.
    pub nullified: IndexMap<String, u64>,
    /// The root ids with no row (deleting them deletes nothing).
    pub not_found: Vec<String>,
    /// The counts of each step of the side's plan, for drawing it (none where the side does not
    /// declare the root model: it deletes nothing).
    #[serde(skip)]
    pub steps: Option<engine::Counts>,
}

/// Both sides' counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counted {
    /// The base config's.
    pub base: SideCounts,
    /// The head config's.
    pub head: SideCounts,
}

impl Counted {
    /// The root ids with no row, as the head (else the base, when the head lacks the model) found
    /// them: both read the same table.
    pub fn not_found(&self) -> &[String] {
        if self.head.steps.is_some() { &self.head.not_found } else { &self.base.not_found }
    }

    /// Every model either side deletes or nullifies rows of, the head's first.
    pub fn models(&self) -> Vec<&str> {
        let sides = [&self.head, &self.base];
        let models: indexmap::IndexSet<&str> = sides
            .iter()
            .flat_map(|side| side.deleted.keys().chain(side.nullified.keys()))
            .map(String::as_str)
            .collect();
        models.into_iter().collect()
    }
}

/// Why a side could not be counted.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// A side's config does not match the database.
    #[error("the {side} config does not match the database")]
    Invalid {
        /// `base` or `head`.
        side: &'static str,
        /// What is wrong (against that side's files).
        diagnostics: Vec<Diagnostic>,
    },
    /// The root cannot be planned on a side.
    #[error("the {side} config cannot plan `{model}`: {error}")]
    Plan {
        /// `base` or `head`.
        side: &'static str,
        /// The root model.
        model: String,
        /// Why.
        error: CompileError,
    },
    /// Neither side declares the root model.
    #[error("neither config declares the model `{0}`")]
    UnknownModel(String),
    /// Reading the schema or counting failed.
    #[error(transparent)]
    Database(#[from] crate::db::DbError),
    /// Counting refused the ids.
    #[error(transparent)]
    Count(#[from] engine::CountError),
}

/// Counts what `base` and `head` would delete and nullify for the `model` rows `ids`.
pub async fn count(
    database: &Database,
    base: &CheckedConfig,
    head: &CheckedConfig,
    model: &str,
    ids: &[String],
) -> Result<Counted, CountError> {
    if base.model(model).is_none() && head.model(model).is_none() {
        return Err(CountError::UnknownModel(model.to_owned()));
    }
    Ok(Counted {
        base: count_side(database, base, "base", model, ids).await?,
        head: count_side(database, head, "head", model, ids).await?,
    })
}

async fn count_side(
    database: &Database,
    config: &CheckedConfig,
    side: &'static str,
    model: &str,
    ids: &[String],
) -> Result<SideCounts, CountError> {
    if config.model(model).is_none() {
        return Ok(SideCounts::default());
    }
    let engine = match Engine::prepare(database.clone(), config).await {
        Ok(engine) => engine,
        Err(PrepareError::Invalid(diagnostics)) => return Err(CountError::Invalid { side, diagnostics }),
        Err(PrepareError::Database(error)) => return Err(error.into()),
    };
    let plan = compile(config, model).map_err(|error| CountError::Plan { side, model: model.to_owned(), error })?;
    let counts = engine::count(database, config, engine.schema(), &plan, ids).await?;
    Ok(SideCounts {
        deleted: counts.totals.clone(),
        nullified: counts.nullify.clone(),
        not_found: counts.not_found.clone(),
        steps: Some(counts),
    })
}
