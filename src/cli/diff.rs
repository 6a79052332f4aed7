use std::path::PathBuf;

use anyhow::Context as _;
use std::process::ExitCode;

use cascade::Loaded;
use cascade::db::Access;
use cascade::diagnostic::{Format, Report, Sources};
use cascade::planner::CheckedConfig;
use cascade::review::{self, CountedRoots, DiffFormat, Review, Severity, Side};

use super::Cli;
use super::exit::EXIT_USAGE;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The base config to compare with (a directory or file), such as a checkout of the target
    /// branch.
    #[arg(long, value_name = "DIR|FILE", required_unless_present = "base_rev", conflicts_with = "base_rev")]
    pub base: Option<PathBuf>,
    /// Read the base config from this git revision (the `--config` path as that revision has
    /// it), such as `origin/main`; nothing is checked out.
    #[arg(long, value_name = "REV")]
    pub base_rev: Option<String>,
    /// With `--id`: count the rows each side would delete and nullify for these roots (read
    /// only, in the database of `--database-url`).
    #[arg(long, value_name = "MODEL", requires = "ids")]
    pub model: Option<String>,
    /// Root ids to count (repeat the flag or separate with commas); needs `--model`.
    #[arg(long = "id", value_name = "ID", value_delimiter = ',', requires = "model")]
    pub ids: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormatArg::Human)]
    pub format: DiffFormatArg,
    /// Exit 1 when a change of this severity or worse is found.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Inside GitHub Actions: create or update one comment on the pull request with the review
    /// (markdown), and append it to the job summary. Reads GITHUB_TOKEN, GITHUB_REPOSITORY,
    /// GITHUB_EVENT_PATH and GITHUB_API_URL.
    #[arg(long)]
    pub github_comment: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormatArg {
    Human,
    Markdown,
    Json,
    Github,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Destructive,
    Attention,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let mut head = cascade::config::load(&cli.config)?;
    let mut base = match (&args.base, &args.base_rev) {
        // An error of its own, so the hint about `--config` does not follow it.
        (Some(path), _) => cascade::config::load(path).map_err(|error| anyhow::anyhow!("--base: {error}"))?,
        (None, Some(revision)) => match review::git::sources_at(revision, &cli.config)? {
            Some(sources) => cascade::config::load_sources(sources),
            None => {
                eprintln!("note: `{revision}` has no config at `{}`: every model is new", cli.config.display());
                cascade::config::load_sources(Sources::default())
            }
        },
        (None, None) => anyhow::bail!("give the base config: `--base DIR|FILE` or `--base-rev REV`"),
    };
    let (Some(base_checked), Some(head_checked)) = (checked(&mut base, "base"), checked(&mut head, "head")) else {
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let review = Review::compare(
        Side { config: &base.config, sources: &base.sources },
        Side { config: &head.config, sources: &head.sources },
    );

    let counted = match (&args.model, args.ids.is_empty()) {
        (Some(model), false) => {
            let url = super::database_url(cli, &head.config);
            let counted = super::block_on(async {
                let database = super::connect(&url, &head.config, Access::ReadOnly).await?;
                let counted = review::count(&database, &base_checked, &head_checked, model, &args.ids).await;
                database.close().await;
                anyhow::Ok(counted)
            })?;
            match counted {
                Ok(counted) => Some((model.as_str(), counted)),
                Err(review::CountError::Invalid { side, diagnostics }) => {
                    let sources = if side == "base" { &base.sources } else { &head.sources };
                    eprint!("{}", Report { sources, diagnostics: &diagnostics }.render(Format::Human, false));
                    eprintln!("error: the {side} config does not match the database, so its rows cannot be counted");
                    return Ok(ExitCode::from(EXIT_USAGE));
                }
                Err(error) => return Err(error.into()),
            }
        }
        _ => None,
    };
    let roots = counted.as_ref().map(|(model, counts)| CountedRoots { model, ids: &args.ids, counts });

    let output = match DiffFormat::try_from(args.format) {
        Ok(format) => review.render(format, roots.as_ref()),
        Err(()) => {
            let configs = review::Configs { base: &base_checked, head: &head_checked };
            review.html(configs, roots.as_ref()).context("cannot render the page")?
        }
    };
    print!("{output}");
    if args.github_comment {
        comment(&review, roots.as_ref())?;
    }
    let failed = match (args.fail_on, review.worst()) {
        (Some(threshold), Some(worst)) => worst.reaches(threshold.into()),
        _ => false,
    };
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The config checked by the config-only rules, or `None` with its errors printed: a config
/// with errors is not reviewed (`validate` is the command for it).
fn checked(loaded: &mut Loaded, side: &str) -> Option<CheckedConfig> {
    let checked = cascade::planner::check(loaded, None);
    if checked.is_none() {
        let report = Report { sources: &loaded.sources, diagnostics: &loaded.diagnostics };
        eprint!("{}", report.render(Format::Human, false));
        eprintln!(
            "error: the {side} config has errors; `cascade validate` shows them, and a diff needs both to be valid"
        );
    }
    checked
}

/// Posts (or updates) the pull request's comment and appends the review to the job summary.
fn comment(review: &Review, counts: Option<&CountedRoots<'_>>) -> anyhow::Result<()> {
    let context = review::github::Context::from_env(|name| std::env::var(name).ok())?;
    let markdown = review.render(DiffFormat::Markdown, counts);
    context.append_summary(&markdown)?;
    match super::block_on(context.post_sticky(&markdown, review::MARKER))? {
        Some(review::github::Posted::Created(id)) => eprintln!("posted the review as comment {id}"),
        Some(review::github::Posted::Updated(id)) => eprintln!("updated the review in comment {id}"),
        None => eprintln!("note: the event is about no pull request: no comment posted"),
    }
    Ok(())
}

/// The text formats; HTML draws plans, so it needs the configs as well as the review.
impl TryFrom<DiffFormatArg> for DiffFormat {
    type Error = ();

    fn try_from(format: DiffFormatArg) -> Result<Self, ()> {
        match format {
            DiffFormatArg::Human => Ok(DiffFormat::Human),
            DiffFormatArg::Markdown => Ok(DiffFormat::Markdown),
            DiffFormatArg::Json => Ok(DiffFormat::Json),
            DiffFormatArg::Github => Ok(DiffFormat::Github),
            DiffFormatArg::Html => Err(()),
        }
    }
}

impl From<FailOn> for Severity {
    fn from(fail_on: FailOn) -> Self {
        match fail_on {
            FailOn::Destructive => Severity::Destructive,
            FailOn::Attention => Severity::Attention,
        }
    }
}
