use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use indexmap::IndexMap;

use super::Cli;
use crate::config::Loaded;
use crate::db::sql::Dialect;
use crate::db::{Access, Database, options};
use crate::engine::{self, steps};
use crate::planner;
use crate::render::{Folding, PlanFormat, PlanView};
use crate::schema::{self, Schema};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The root model.
    pub model: String,
    /// Root ids (repeat the flag or separate with commas). With a database, every step's rows
    /// are counted.
    #[arg(long = "id", value_name = "ID", value_delimiter = ',')]
    pub ids: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
    /// Render this minijinja template instead of a built-in format (context: see the README).
    #[arg(long, value_name = "FILE.j2", conflicts_with = "format")]
    pub template: Option<PathBuf>,
    /// Also list the statements every step runs, with their parameters.
    #[arg(long)]
    pub sql: bool,
    /// Fold steps deeper than this (the root is depth 0) in the text, mermaid and dot forms.
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Fold everything below this model (repeatable) in the text, mermaid and dot forms.
    #[arg(long, value_name = "MODEL")]
    pub collapse: Vec<String>,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(mut loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let plan = planner::compile(&loaded.config, &args.model)?;
    for model in &args.collapse {
        if loaded.config.model(model).is_none() {
            let hint = crate::diagnostic::did_you_mean(model, loaded.config.models.keys().map(String::as_str));
            anyhow::bail!("--collapse: unknown model `{model}`{}", hint.map(|h| format!(" ({h})")).unwrap_or_default());
        }
    }
    let url = super::database_url(cli, &loaded.config);
    let mut rates = loaded.config.option_values();

    let (counts, schema) = if args.ids.is_empty() {
        (None, None)
    } else {
        let counted = super::block_on(async {
            let database = Database::connect(&url, Access::ReadOnly).await?;
            let result = count(&database, &mut loaded, &plan, &args.ids, &mut rates).await;
            database.close().await;
            result
        })?;
        match counted {
            Some((counts, schema)) => (Some(counts), Some(schema)),
            None => return Ok(ExitCode::from(1)),
        }
    };

    let sql = args.sql.then(|| steps::list(&plan, &loaded.config, Dialect::of_url(&url), schema.as_ref()));
    let folding = Folding { depth: args.depth, collapse: args.collapse.clone() };
    let view = PlanView::new(&plan, &args.ids, counts.as_ref(), &rates, &folding, sql);
    let output = match &args.template {
        Some(path) => {
            let source = std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))?;
            view.render_template(&source).with_context(|| format!("cannot render `{}`", path.display()))?
        }
        None => view.render(args.format)?,
    };
    print!("{output}");
    Ok(ExitCode::SUCCESS)
}

/// Counts against the live schema, after checking the config against it. `None` when the
/// config does not match the database (the diagnostics are printed).
async fn count(
    database: &Database,
    loaded: &mut Loaded,
    plan: &planner::Plan,
    ids: &[String],
    rates: &mut IndexMap<String, f64>,
) -> anyhow::Result<Option<(engine::Counts, Schema)>> {
    let schema = schema::introspect(database).await?;
    if super::refuse_invalid_against(loaded, &schema) {
        return Ok(None);
    }
    *rates = options::current(&loaded.config, database).await?;
    let counts = engine::count(database, &loaded.config, &schema, plan, ids).await?;
    Ok(Some((counts, schema)))
}
