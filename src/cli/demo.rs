use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use cascade::audit::RunOutcome;
use cascade::db::Access;
use cascade::diagnostic::{Format, Report};
use cascade::engine::{self, DeleteOptions};
use cascade::render::{Folding, PlanFormat, PlanView};
use cascade::{demo, planner};

use super::Cli;

/// Writes the built-in demo config into `cascades-demo/` beside the database; its directory.
fn write_demo_config(db: &Path) -> anyhow::Result<PathBuf> {
    let dir = match db.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        Some(parent) => parent.join("cascades-demo"),
        None => PathBuf::from("cascades-demo"),
    };
    // Not create_dir_all: a mistyped --db directory stays an error.
    match std::fs::create_dir(&dir) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(anyhow::Error::new(error).context(format!("cannot create `{}`", dir.display())));
        }
        _ => {}
    }
    for (name, text) in demo::CONFIG_FILES {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    println!("== the demo config (built in) is in {}", dir.display());
    Ok(dir)
}

/// `cascade` with the flags the next commands need to find the demo's config and database: none
/// where the defaults find them.
fn next_command(cli: &Cli, config_dir: &Path, url: &str) -> String {
    let mut command = String::from("cascade");
    if config_dir != Path::new(super::DEFAULT_CONFIG) {
        command.push_str(&format!(" --config {}", config_dir.display()));
    }
    // `CASCADE_DATABASE_URL` would win over the default.
    if cli.database_url.is_some() || url != cascade::db::DEFAULT_DATABASE_URL {
        command.push_str(&format!(" --database-url {url}"));
    }
    command
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows to seed, in all tables.
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Where to build the demo SQLite database (replaced if it exists).
    #[arg(long, value_name = "PATH", default_value = cascade::db::DEFAULT_DATABASE_FILE)]
    pub db: PathBuf,
}

/// Builds the demo database, then walks validate → plan → delete of its first organization.
/// The config is `--config` when that exists (the checkout's `cascades/`), else the demo config
/// built into the binary, written beside the database so that the user can go on with it.
pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let config_dir = if cli.config.exists() { cli.config.clone() } else { write_demo_config(&args.db)? };
    let mut loaded = cascade::config::load(&config_dir)?;
    if planner::check(&mut loaded, None).is_none() {
        super::refuse_diagnostics(&loaded.sources, &loaded.diagnostics);
        return Ok(ExitCode::from(1));
    }
    super::block_on(async {
        println!("== building {} with about {} rows", args.db.display(), args.rows);
        let built = demo::build(&args.db, args.rows).await?;
        let organizations = built.organizations.len();
        println!("{} rows in {organizations} organization{}\n", built.rows, if organizations == 1 { "" } else { "s" });

        let url = format!("sqlite://{}", args.db.display());
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        let schema = cascade::schema::introspect(&database).await?;

        println!("== cascade validate --database-url {url}");
        let mut validated = cascade::config::load(&config_dir)?;
        let checked = planner::check(&mut validated, Some(&schema));
        let report = Report { sources: &validated.sources, diagnostics: &validated.diagnostics };
        print!("{}", report.render(Format::Human, super::color_stdout()));
        let Some(checked) = checked else { return Ok(ExitCode::from(1)) };

        let root = built.organizations[0].to_string();
        println!("\n== cascade plan organization --id {root} --depth 2");
        let plan = planner::compile(&checked, "organization")?;
        let ids = [root.clone()];
        let Some(engine) = super::prepare(database.clone(), &checked).await? else {
            return Ok(ExitCode::from(1));
        };
        let counts = engine::count(&database, &loaded.config, &schema, &plan, &ids).await?;
        let rates = loaded.config.option_values();
        let folding = Folding { depth: Some(2), collapse: Vec::new() };
        print!("{}", PlanView::new(&plan, &ids, Some(&counts), &rates, &folding, None).render(PlanFormat::Text)?);

        println!("\n== cascade delete organization {root} --confirm");
        let options = DeleteOptions::for_command(format!("cascade demo --rows {}", args.rows));
        let total = Some(counts.totals.values().sum());
        let Some(finished) = super::delete::delete(&engine, &plan, &ids, options, total).await? else {
            return Ok(ExitCode::from(1));
        };
        database.close().await;
        print!("{}", super::delete::render_summary(&finished.summary, super::output::SummaryFormat::Human));
        if finished.outcome == RunOutcome::Interrupted {
            return Ok(ExitCode::from(super::exit::EXIT_INTERRUPTED));
        }
        // The last organization's status blocks deletion; suggest one that can go.
        if let [_, next, _, ..] = built.organizations.as_slice() {
            let cascade = next_command(cli, &config_dir, &url);
            println!("\nthe other organizations are untouched: try `{cascade} plan organization --id {next}`");
        }
        Ok(ExitCode::SUCCESS)
    })
}
