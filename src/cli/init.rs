use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use cascade::db::DEFAULT_DATABASE_URL;
use cascade::{planner, schema};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write `cascade.toml` into.
    #[arg(long, value_name = "DIR", default_value = "cascades")]
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
    println!(
        "wrote {} with {} models; check it with `cascade validate --database-url ...`",
        path.display(),
        schema.tables.len()
    );
    Ok(ExitCode::SUCCESS)
}
