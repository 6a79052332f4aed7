use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use tracing::info;

use cascade::db::Access;
use cascade::diagnostic::{Format, Report};
use cascade::schema::{self, Schema};
use cascade::{config, engine, planner};

use super::Cli;
use super::output::ReportFormat;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check against the schema in this SQL DDL file (PostgreSQL or SQLite dialect), no
    /// database needed. Takes precedence over --database-url.
    #[arg(long, value_name = "FILE.sql")]
    pub schema: Option<PathBuf>,
    /// Output format: human (source snippets), json, github (workflow annotations), or sarif
    /// (SARIF 2.1.0, for GitHub code scanning).
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,
    /// Exit 1 on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
    /// The config (file or directory) of a database that sends this one tombstones: every
    /// remote model's category must be written there by one model keyed as the remote model
    /// reads it, in one scope, with a sink. Repeat it for several senders.
    #[arg(long, value_name = "DIR")]
    pub peer: Vec<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let mut loaded = config::load(&cli.config)?;
    info!(files = loaded.sources.len(), models = loaded.config.models.len(), "config loaded");
    let schema = load_schema(cli, args)?;
    let peers = load_peers(&args.peer)?;
    let checked = planner::check(&mut loaded, schema.as_ref());
    if !peers.is_empty() {
        planner::check_peers(&mut loaded, &peers);
    }
    if let Some(schema) = &schema {
        planner::check_deletions(&mut loaded, schema);
    }
    // A live database also answers what only it can: whether it compares each relation's column
    // with its parent's keys, as a deletion asks before its first write.
    let live = cli.database_url.as_ref().filter(|_| args.schema.is_none());
    if let (Some(checked), Some(schema), Some(url)) = (checked, &schema, live) {
        let found = super::block_on(async {
            let database = super::connect(url, &loaded.config, Access::ReadOnly).await?;
            let found = engine::check_lookups(&database, &checked, schema).await;
            database.close().await;
            found
        })?;
        planner::add_diagnostics(&mut loaded, found);
    }
    let report = Report { sources: &loaded.sources, diagnostics: &loaded.diagnostics };
    let format = Format::from(args.format);
    let color = format == Format::Human && super::color_stdout();
    print!("{}", report.render(format, color));
    if schema.is_none() && format == Format::Human {
        eprintln!(
            "note: only the rules that need no database ran; add --schema FILE.sql or --database-url URL to \
             check tables, columns and foreign keys too"
        );
    }
    let failed = report.errors() > 0 || (args.deny_warnings && report.warnings() > 0);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The configs of `--peer`, each named by its path as given; one with errors of its own is
/// refused, since what it sends cannot be known.
fn load_peers(paths: &[PathBuf]) -> anyhow::Result<Vec<(String, config::Loaded)>> {
    let mut peers = Vec::new();
    for path in paths {
        let loaded =
            config::load(path).with_context(|| format!("cannot read the peer's config `{}`", path.display()))?;
        let errors = loaded.diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
        if errors > 0 {
            anyhow::bail!(
                "the peer's config `{}` has {}: run `cascade validate --config {}` and fix it first",
                path.display(),
                super::table::plural(errors as u64, "error", "errors"),
                path.display()
            );
        }
        peers.push((path.display().to_string(), loaded));
    }
    Ok(peers)
}

/// The schema to check against: a DDL file, a live database (read only), or none.
fn load_schema(cli: &Cli, args: &Args) -> anyhow::Result<Option<Schema>> {
    if let Some(path) = &args.schema {
        let sql = std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))?;
        let parsed = schema::parse_ddl(&sql);
        info!(tables = parsed.schema.tables.len(), skipped = parsed.skipped, dialect = parsed.dialect, "schema parsed");
        return Ok(Some(parsed.schema));
    }
    let Some(url) = &cli.database_url else {
        return Ok(None);
    };
    let schema = super::block_on(schema::introspect_url(url))?;
    info!(tables = schema.tables.len(), "schema introspected");
    Ok(Some(schema))
}
