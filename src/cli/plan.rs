use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use indexmap::IndexMap;

use cascade::db::{Access, Database, DatabaseUrl};
use cascade::diagnostic::Report;
use cascade::engine;
use cascade::inbox;
use cascade::planner;
use cascade::planner::CheckedConfig;
use cascade::render::{Folding, PlanFormat, PlanView};
use cascade::schema::Schema;

use super::Cli;
use super::output::SummaryFormat;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The root model.
    pub model: String,
    /// Root ids (repeat the flag or separate with commas). With a database, every step's rows
    /// are counted.
    #[arg(long = "id", value_name = "ID", value_delimiter = ',')]
    pub ids: Vec<String>,
    /// Also count the ids listed in FILE (`-`: standard input), separated by whitespace,
    /// newlines or commas.
    #[arg(long, value_name = "FILE")]
    pub ids_from: Option<PathBuf>,
    /// Count the root rows that match this SQL condition instead of ids (`--where
    /// "created_at < '2020-01-01'"`), as `delete --where` would take them.
    #[arg(long = "where", value_name = "CONDITION", conflicts_with_all = ["ids", "ids_from"])]
    pub condition: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormatArg::Text)]
    pub format: PlanFormatArg,
    /// Render this minijinja template instead of a built-in format (context: see the README).
    #[arg(long, value_name = "FILE.j2", conflicts_with = "format")]
    pub template: Option<PathBuf>,
    /// Also list the statements every step runs, with their parameters.
    #[arg(long)]
    pub sql: bool,
    /// Fold steps deeper than this (the root is depth 0) in the text, mermaid, dot and html forms.
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Fold everything below this model (repeatable) in the text, mermaid, dot and html forms.
    #[arg(long, value_name = "MODEL")]
    pub collapse: Vec<String>,
    /// MODEL is a remote model: count what its pending inbox tombstones would delete and
    /// nullify if a worker applied them now (text or json).
    #[arg(long, conflicts_with_all = ["ids", "ids_from", "condition", "template", "sql", "depth", "collapse"])]
    pub inbox: bool,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some((loaded, diagnostics)) = super::load_valid_with_diagnostics(cli)? else { return Ok(ExitCode::from(1)) };
    if args.inbox {
        return inbox_preview(cli, &loaded, args);
    }
    let plan = planner::compile(&loaded, &args.model)?;
    for model in &args.collapse {
        if loaded.model(model).is_none() {
            let hint = cascade::diagnostic::did_you_mean(model, loaded.models.keys().map(String::as_str));
            anyhow::bail!("--collapse: unknown model `{model}`{}", hint.map(|h| format!(" ({h})")).unwrap_or_default());
        }
    }
    let url = super::database_url(cli, &loaded);
    let mut rates = loaded.option_values();

    let mut ids = super::root_ids(&args.ids, args.ids_from.as_deref())?;
    let (counts, schema) = if ids.is_empty() && args.condition.is_none() {
        (None, None)
    } else {
        let counted = super::block_on(async {
            let database = super::connect(&url, &loaded, Access::ReadOnly).await?;
            let result = count(&database, &loaded, &plan, &mut ids, args.condition.as_deref(), &mut rates).await;
            database.close().await;
            result
        })?;
        match counted {
            Some((counts, schema)) => (Some(counts), Some(schema)),
            None => return Ok(ExitCode::from(1)),
        }
    };

    let kind = DatabaseUrl::parse(&url)?.kind();
    let sql = args.sql.then(|| engine::list_statements(&plan, &loaded, kind, schema.as_ref()));
    let folding = Folding { depth: args.depth, collapse: args.collapse.clone() };
    let report = Report { sources: loaded.sources(), diagnostics: &diagnostics };
    let view = PlanView::new(&plan, &ids, counts.as_ref(), &rates, &folding, sql)
        .with_diagnostics(&report)
        .with_condition(args.condition.clone());
    let output = match &args.template {
        Some(path) => {
            let source = std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))?;
            view.render_template(&path.display().to_string(), &source).context("cannot render the template")?
        }
        None => view.render(args.format.into())?,
    };
    print!("{output}");
    Ok(ExitCode::SUCCESS)
}

/// `plan MODEL --inbox`.
fn inbox_preview(cli: &Cli, loaded: &CheckedConfig, args: &Args) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        PlanFormatArg::Text => SummaryFormat::Human,
        PlanFormatArg::Json => SummaryFormat::Json,
        other => {
            let name = clap::ValueEnum::to_possible_value(&other).map(|value| value.get_name().to_owned());
            anyhow::bail!("--inbox shows text or json, not {}", name.unwrap_or_default())
        }
    };
    let url = super::database_url(cli, loaded);
    let preview = super::block_on(async {
        let database = super::connect(&url, loaded, Access::ReadOnly).await?;
        let Some(engine) = super::prepare(database.clone(), loaded).await? else { return anyhow::Ok(None) };
        let preview = inbox::preview(&engine, &args.model).await;
        database.close().await;
        Ok(Some(preview?))
    })?;
    let Some(preview) = preview else { return Ok(ExitCode::from(1)) };
    match format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&preview)?),
        SummaryFormat::Human => print!("{}", human_preview(&preview)),
    }
    Ok(ExitCode::SUCCESS)
}

fn human_preview(preview: &inbox::InboxPreview) -> String {
    let tombstones = super::table::plural(preview.pending, "pending tombstone", "pending tombstones");
    let mut out = format!("remote model `{}` (category `{}`): {tombstones}", preview.model, preview.category);
    if preview.counted < preview.pending {
        out += &format!(", the oldest {} counted", preview.counted);
    }
    out += "\n";
    let rows = |counts| super::table::per_model(counts, "nothing");
    for relation in &preview.relations {
        out += &format!(
            "  {}.{} ({}): {}\n",
            relation.model,
            relation.column,
            relation.on_delete,
            super::table::plural(relation.rows, "row names one of them", "rows name one of them")
        );
        if relation.on_delete == "delete" {
            out += &format!("    deletes: {}\n", rows(&relation.deleted));
        }
        if !relation.nullified.is_empty() {
            out += &format!("    nullifies: {}\n", rows(&relation.nullified));
        }
    }
    out
}

/// Counts against the live schema, after checking the config against it, the roots being `ids`
/// or, with a `condition`, the root rows that match it (then put in `ids`). `None` when the
/// config does not match the database (the diagnostics are printed).
async fn count(
    database: &Database,
    loaded: &CheckedConfig,
    plan: &planner::Plan,
    ids: &mut Vec<String>,
    condition: Option<&str>,
    rates: &mut IndexMap<String, f64>,
) -> anyhow::Result<Option<(engine::Counts, Schema)>> {
    let Some(engine) = super::prepare(database.clone(), loaded).await? else {
        return Ok(None);
    };
    if let Some(condition) = condition {
        let condition = engine::RootCondition::parse(database.kind(), condition)?;
        *ids = condition.all_roots(database, engine.schema(), plan).await?;
    }
    *rates = engine::current_options(loaded, database).await?;
    let counts = engine::count(database, loaded, engine.schema(), plan, ids).await?;
    Ok(Some((counts, engine.schema().clone())))
}

/// `--format` of `plan`: the library's plan formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormatArg {
    Text,
    Mermaid,
    Dot,
    Json,
    Html,
}

impl From<PlanFormatArg> for PlanFormat {
    fn from(format: PlanFormatArg) -> Self {
        match format {
            PlanFormatArg::Text => PlanFormat::Text,
            PlanFormatArg::Mermaid => PlanFormat::Mermaid,
            PlanFormatArg::Dot => PlanFormat::Dot,
            PlanFormatArg::Json => PlanFormat::Json,
            PlanFormatArg::Html => PlanFormat::Html,
        }
    }
}
