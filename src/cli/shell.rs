//! `completions` and `man`: shell completions and the man page, generated from the same clap
//! definitions that parse the command line.

use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script of `shell` (for example
/// `cascade completions bash > /etc/bash_completion.d/cascade`).
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    clap_complete::generate(args.shell, &mut Cli::command(), "cascade", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page, in roff (`cascade man > cascade.1`).
pub fn man() -> anyhow::Result<ExitCode> {
    clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}
