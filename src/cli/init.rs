use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use cascade::db::{DEFAULT_DATABASE_URL, redact};
use cascade::diagnostic::{Diagnostic, Sources};
use cascade::{config, planner, schema};

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
    let config = planner::starting_config(&schema);
    refuse_clashes(&args.out, &path, &config)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out.display()))?;
    std::fs::write(&path, config).with_context(|| format!("cannot write `{}`", path.display()))?;
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

/// Refuses to write `config` to `path` when the directory it joins would then fail to load with
/// errors the file alone does not have: the other files there already declare its models.
fn refuse_clashes(dir: &Path, path: &Path, config: &str) -> anyhow::Result<()> {
    let beside = config::load_with(dir, path, config.to_owned())?;
    let mut alone = Sources::default();
    alone.add(path.display().to_string(), config);
    let alone = config::load_sources(alone);
    let new_errors: Vec<&Diagnostic> = beside
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && !alone.diagnostics.iter().any(|known| known.message == d.message))
        .collect();
    if new_errors.is_empty() {
        return Ok(());
    }
    let new_file = beside.sources.ids().find(|&id| beside.sources.name(id) == path.display().to_string());
    let clashes: Vec<String> = new_errors
        .iter()
        .map(|d| {
            // Where the other file declares it: whichever of the two places is not the new file.
            let elsewhere = std::iter::once(&d.location)
                .chain(d.related.iter().map(|(location, _)| location))
                .find(|location| Some(location.file) != new_file)
                .unwrap_or(&d.location);
            let what = d.message.split(" is declared twice").next().unwrap_or(&d.message);
            format!("  {what} (at {})", beside.sources.describe(elsewhere))
        })
        .collect();
    bail!(
        "not writing `{}`: `{}` already declares what it would, so the config would not load:\n{}\n\
         write it to a directory of its own with --out DIR, or remove those declarations first",
        path.display(),
        dir.display(),
        clashes.join("\n")
    )
}
