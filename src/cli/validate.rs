use std::process::ExitCode;

use tracing::info;

use super::Cli;
use crate::diagnostic::{Format, Report};
use crate::{config, planner};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: human (source snippets), json, or github (workflow annotations).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 1 on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let mut loaded = config::load(&cli.config)?;
    info!(
        files = loaded.sources.len(),
        models = loaded.config.models.len(),
        "config loaded"
    );
    planner::check(&mut loaded);
    let report = Report {
        sources: &loaded.sources,
        diagnostics: &loaded.diagnostics,
    };
    let color = args.format == Format::Human && super::color_stdout();
    print!("{}", report.render(args.format, color));
    let failed = report.errors() > 0 || (args.deny_warnings && report.warnings() > 0);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
