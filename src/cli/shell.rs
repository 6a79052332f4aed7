//! `completions` and `man`: shell completions and the man page, generated from the same clap
//! definitions that parse the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
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

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write every page into DIR (created when missing): `cascade.1` and one per command, such as
    /// `cascade-plan.1` and `cascade-option-set.1`, which the pages refer to.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the main man page, in roff (`cascade man > cascade.1`), or writes every page into
/// `--dir`.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    // Each page lists its commands' pages (`cascade-plan(1)`); `help` gets none, so it is left out.
    let command = Cli::command().disable_help_subcommand(true);
    let Some(dir) = &args.dir else {
        clap_mangen::Man::new(command).render(&mut std::io::stdout())?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("cannot write the man pages into `{}`", dir.display()))?;
    println!("wrote cascade.1 and a page per command into {}", dir.display());
    Ok(ExitCode::SUCCESS)
}
