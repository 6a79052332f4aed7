use std::process::ExitCode;

use anyhow::bail;

use cascade::config;
use cascade::db::{Access, Database, tables};
use cascade::diagnostic::did_you_mean;

use super::Cli;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Set an option's runtime value; running deletions pick it up within a second.
    Set {
        /// An option declared in [options].
        name: String,
        /// Its new value (rows per second for a rate limit; 0 = unthrottled).
        value: f64,
    },
    /// Every declared option with its config value and its runtime value.
    List,
}

pub fn run(cli: &Cli, command: &Command) -> anyhow::Result<ExitCode> {
    let loaded = config::load(&cli.config)?;
    let declared = &loaded.config.options;
    let url = super::database_url(cli, &loaded.config);
    match command {
        Command::Set { name, value } => {
            if !declared.contains_key(name) {
                let hint = did_you_mean(name, declared.keys().map(String::as_str)).map(|h| format!(" ({h})"));
                bail!("option `{name}` is not declared in [options]{}", hint.unwrap_or_default());
            }
            if !value.is_finite() || *value < 0.0 {
                bail!("an option's value must be a number of at least 0, not {value}");
            }
            super::block_on(async {
                let database = Database::connect(&url, Access::ReadWrite).await?;
                let result = tables::set_option(&database, name, *value).await;
                database.close().await;
                result
            })?;
            println!("{name} = {value}");
        }
        Command::List => {
            let overrides = super::block_on(async {
                let database = Database::connect(&url, Access::ReadOnly).await?;
                let result = tables::option_overrides(&database).await;
                database.close().await;
                result
            })?;
            println!("{:<45} {:>12} {:>12}", "option", "config", "runtime");
            for (name, value) in declared {
                let runtime = overrides.get(name).map_or_else(|| "-".to_owned(), f64::to_string);
                println!("{name:<45} {:>12} {runtime:>12}", value.value);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
