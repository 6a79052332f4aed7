use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use cascade::db::{DEFAULT_DATABASE_URL, redact};
use cascade::{planner, schema};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write `cascade.toml` into.
    #[arg(long, value_name = "DIR", default_value = super::DEFAULT_CONFIG)]
    pub out: PathBuf,
    /// Overwrite an existing `cascade.toml`.
    #[arg(long)]
    pub force: bool,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let path = args.out.join("cascade.toml");
    if path.exists() && !args.force {
        bail!("`{}` already exists: pass --force to overwrite it", path.display());
    }
    let url = cli.database_url.as_deref().unwrap_or(DEFAULT_DATABASE_URL);
    let schema = super::block_on(schema::introspect_url(url))?;
    if schema.tables.is_empty() {
        bail!("the database has no tables to write a config for");
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out.display()))?;
    std::fs::write(&path, planner::starting_config(&schema))
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    // The file's `#:schema` line points here, so editors complete and check it at once.
    let schema_path = args.out.join("cascade.schema.json");
    std::fs::write(&schema_path, cascade::config::json_schema())
        .with_context(|| format!("cannot write `{}`", schema_path.display()))?;
    let (config, url) = (args.out.display(), redact(url));
    println!(
        "wrote {} with {} models, and {} for editor completion\n\n\
         next: review the relations, then\n  \
         cascade --config {config} validate --database-url '{url}'\n  \
         cascade --config {config} plan MODEL --id ID --database-url '{url}'",
        path.display(),
        schema.tables.len(),
        schema_path.display()
    );
    Ok(ExitCode::SUCCESS)
}
