use std::path::PathBuf;
use std::process::ExitCode;

use cascade::lsp::{ServerOptions, serve_stdio};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check against the schema in this SQL DDL file (relative to the workspace root), no
    /// database needed. Takes precedence over --database-url and `[settings] database_url`.
    #[arg(long, value_name = "FILE.sql")]
    pub schema: Option<PathBuf>,
}

/// Serves the editor until it says `exit`: 0 after `shutdown`, 1 without (as the protocol says)
/// or when the client's stream broke.
pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let options = ServerOptions {
        config: cli.config.clone(),
        schema: args.schema.clone(),
        database_url: cli.database_url.clone(),
    };
    match serve_stdio(options) {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::from(1)),
        // The client broke the connection: as for one that closed it, no `shutdown` came.
        Err(error) => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(1))
        }
    }
}
