use std::process::ExitCode;

use anyhow::bail;

use cascade::config::{self, Located};
use cascade::db::{Access, options};
use cascade::diagnostic::did_you_mean;
use indexmap::IndexMap;

use super::Cli;
use super::output::SummaryFormat;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Set an option's runtime value; running deletions pick it up within a second.
    Set {
        /// An option declared in [options].
        name: String,
        /// Its new value (rows per second for a rate limit; 0 = unthrottled).
        value: f64,
    },
    /// Remove an option's runtime value: the config's value applies again.
    Unset {
        /// An option declared in [options].
        name: String,
    },
    /// Every declared option with its config value and its runtime value.
    List {
        /// Output format: human, or json (`{"NAME": {"config": N, "runtime": N|null}}`).
        #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
        format: SummaryFormat,
    },
}

pub fn run(cli: &Cli, command: &Command) -> anyhow::Result<ExitCode> {
    let loaded = config::load(&cli.config)?;
    let declared = &loaded.config.options;
    let url = super::database_url(cli, &loaded.config);
    match command {
        Command::Set { name, value } => {
            check_declared(declared, name)?;
            if !value.is_finite() || *value < 0.0 {
                bail!("an option's value must be a number of at least 0, not {value}");
            }
            super::block_on(async {
                let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
                let result = options::set(&database, name, *value).await;
                database.close().await;
                result
            })?;
            println!("{name} = {value}");
        }
        Command::Unset { name } => {
            check_declared(declared, name)?;
            let removed = super::block_on(async {
                let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
                let result = options::unset(&database, name).await;
                database.close().await;
                result
            })?;
            let value = declared[name.as_str()].value;
            match removed {
                true => println!("{name} = {value} (the config's value again)"),
                false => println!("{name} had no runtime value; it is {value} (the config's value)"),
            }
        }
        Command::List { format } => {
            let overrides = super::block_on(async {
                let database = super::connect(&url, &loaded.config, Access::ReadOnly).await?;
                let result = options::overrides(&database).await;
                database.close().await;
                result
            })?;
            if *format == SummaryFormat::Json {
                let listed: serde_json::Map<String, serde_json::Value> = declared
                    .iter()
                    .map(|(name, value)| {
                        let runtime = overrides.get(name).copied();
                        (name.clone(), serde_json::json!({ "config": value.value, "runtime": runtime }))
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&listed)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("{:<45} {:>12} {:>12}", "option", "config", "runtime");
            for (name, value) in declared {
                let runtime = overrides.get(name).map_or_else(|| "-".to_owned(), f64::to_string);
                println!("{name:<45} {:>12} {runtime:>12}", value.value);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check_declared(declared: &IndexMap<String, Located<f64>>, name: &str) -> anyhow::Result<()> {
    if !declared.contains_key(name) {
        let hint = did_you_mean(name, declared.keys().map(String::as_str)).map(|h| format!(" ({h})"));
        bail!("option `{name}` is not declared in [options]{}", hint.unwrap_or_default());
    }
    Ok(())
}
