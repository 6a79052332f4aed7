//! The output formats the commands share: of a summary or report (`--format human|json`), of
//! `validate`'s diagnostics, and of the log.

use cascade::diagnostic::Format;
use clap::ValueEnum;

/// `--format` of the commands that print a summary or a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    Human,
    Json,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// `--format` of `validate`: the library's report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Human,
    Json,
    Github,
    Sarif,
}

impl From<ReportFormat> for Format {
    fn from(format: ReportFormat) -> Self {
        match format {
            ReportFormat::Human => Format::Human,
            ReportFormat::Json => Format::Json,
            ReportFormat::Github => Format::Github,
            ReportFormat::Sarif => Format::Sarif,
        }
    }
}
