use std::fmt::Write as _;
use std::process::ExitCode;

use cascade::cleanup::BatchError;
use cascade::cleanup::duplicates::{self, DEFAULT_SAMPLE, Duplicates, DuplicatesError, Keep, Search, Uniqueness};
use cascade::db::Access;
use cascade::db::quote_literal;
use cascade::engine::DeleteError;
use cascade::planner::CheckedConfig;

use super::Cli;
use super::output::SummaryFormat;
use super::table::plural;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model whose table is searched.
    pub model: String,
    /// Columns rows must be equal on (repeat the flag or separate with commas; spaces around a
    /// name are dropped). A row with a NULL in any of them is in no group.
    #[arg(long, required = true, value_name = "COL", value_delimiter = ',')]
    pub by: Vec<String>,
    /// Which row of each group stays: the oldest (lowest --order-by value) or the newest.
    #[arg(long, value_enum, default_value_t = KeepArg::Oldest)]
    pub keep: KeepArg,
    /// The column that says which row is oldest (default: the model's key); the key breaks ties.
    #[arg(long, value_name = "COL")]
    pub order_by: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
    pub format: SummaryFormat,
    /// How many groups to show, the largest first.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SAMPLE)]
    pub sample: usize,
    /// Remove all but the kept row of each group, in batches, each removed row with everything
    /// below it as the config says.
    #[arg(long)]
    pub confirm: bool,
    /// With --confirm: first re-point the rows that reference a removed duplicate (through the
    /// model's declared relations) at its group's kept row.
    #[arg(long, requires = "confirm")]
    pub merge: bool,
    #[command(flatten)]
    pub batches: super::batch::BatchArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepArg {
    Oldest,
    Newest,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let search = Search {
        model: args.model.clone(),
        by: args.by.iter().map(|column| column.trim().to_owned()).collect(),
        keep: match args.keep {
            KeepArg::Oldest => Keep::Oldest,
            KeepArg::Newest => Keep::Newest,
        },
        order_by: args.order_by.clone(),
        sample: args.sample,
    };
    let url = super::database_url(cli, &loaded);
    if args.confirm {
        cascade::config::check_allowed_user(&loaded, loaded.sources(), "duplicates --confirm")?;
        return super::block_on(confirmed(&url, &loaded, &search, args));
    }
    let found = super::block_on(async {
        let database = super::connect(&url, &loaded, Access::ReadOnly).await?;
        let schema = cascade::schema::introspect(&database).await;
        let found = match schema {
            Ok(schema) => duplicates::find(&database, &loaded, &schema, &search).await.map_err(Into::into),
            Err(error) => Err(anyhow::Error::new(error)),
        };
        database.close().await;
        found
    })?;
    match args.format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&found)?),
        SummaryFormat::Human => print!("{}", human(&found, true)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `duplicates --confirm`: the duplicates removed batch after batch, then what is left and the
/// index that keeps it that way.
async fn confirmed(url: &str, loaded: &CheckedConfig, search: &Search, args: &Args) -> anyhow::Result<ExitCode> {
    let database = super::connect(url, loaded, Access::ReadWrite).await?;
    let Some(engine) = super::prepare(database.clone(), loaded).await? else { return Ok(ExitCode::from(1)) };
    let removed = duplicates::remove(&engine, search, args.merge, args.batches.options()).await;
    let removed = match removed {
        Err(DuplicatesError::Cleanup(BatchError::Delete(DeleteError::UnregisteredReferences(diagnostics)))) => {
            database.close().await;
            super::refuse_diagnostics(engine.sources(), &diagnostics);
            return Ok(ExitCode::from(1));
        }
        Err(DuplicatesError::Cleanup(running @ BatchError::AlreadyRunning { .. })) => {
            database.close().await;
            return Ok(super::batch::already_running(&running));
        }
        other => other,
    };
    let after = match &removed {
        Ok(_) => Some(duplicates::find(&database, engine.config(), engine.schema(), search).await?),
        Err(_) => None,
    };
    database.close().await;
    let (removed, after) = (removed.map_err(super::batch::cleanup_failed)?, after.expect("found after a removal"));
    match args.format {
        SummaryFormat::Json => {
            let mut json = serde_json::to_value(&removed)?;
            json["after"] = serde_json::to_value(&after)?;
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
        SummaryFormat::Human => print!("{}\n{}", super::batch::human_summary(&removed), human(&after, false)),
    }
    Ok(super::batch::cleanup_exit(&removed))
}

/// A key as written, or quoted where spaces, commas or nothing at all would blur it.
fn shown_key(key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || "-_.:@+/".contains(c));
    if plain { key.to_owned() } else { quote_literal(key) }
}

/// `(a, b)`, or `a` alone.
fn columns(columns: &[String]) -> String {
    match columns {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    }
}

/// The report; `dry_run` when nothing was removed before it.
fn human(found: &Duplicates, dry_run: bool) -> String {
    let mut text = String::new();
    let by = columns(&found.by);
    let (extreme, kept_row) = match found.keep {
        Keep::Oldest => ("lowest", "oldest"),
        Keep::Newest => ("highest", "newest"),
    };
    let order = if found.order_by == found.key {
        format!("{extreme} {}", columns(&found.key))
    } else {
        format!("{extreme} {}, then {extreme} {}", columns(&found.order_by), columns(&found.key))
    };
    let _ = writeln!(text, "duplicates in {} by {by}, keeping the {kept_row} row of each group ({order})", found.table);
    if found.groups == 0 {
        let _ = writeln!(text, "no duplicates: no two rows are equal on {by}");
    } else {
        let _ = writeln!(
            text,
            "{} of equal rows, {} in them: {} would be removed, {} kept",
            plural(found.groups, "group", "groups"),
            plural(found.rows, "row", "rows"),
            found.removable,
            found.groups
        );
    }
    if found.null_rows > 0 {
        let _ = writeln!(
            text,
            "{} with a NULL in {} {} in no group (NULL equals nothing)",
            plural(found.null_rows, "row", "rows"),
            found.by.join(" or "),
            if found.null_rows == 1 { "is" } else { "are" }
        );
    }
    if !found.sample.is_empty() {
        let _ = writeln!(text, "\nthe largest groups ({} of {}):", found.sample.len(), found.groups);
        for group in &found.sample {
            let values: Vec<String> =
                group.values.iter().map(|(column, value)| format!("{column} = {}", quote_literal(value))).collect();
            let removed: Vec<String> = group.removed.iter().map(|key| shown_key(key)).collect();
            let mut removed = removed.join(", ");
            let unlisted = group.rows.saturating_sub(1 + group.removed.len() as u64);
            if unlisted > 0 {
                let _ = write!(removed, " and {unlisted} more");
            }
            let _ = writeln!(
                text,
                "  {}: {}, keep {}, remove {removed}",
                values.join(", "),
                plural(group.rows, "row", "rows"),
                shown_key(&group.kept)
            );
        }
    }
    if dry_run {
        let _ = writeln!(text, "\nreport only: nothing was changed; add --confirm to remove the duplicates");
    }
    let index = &found.unique_index;
    for invalid in &index.invalid {
        let _ = writeln!(
            text,
            "\nnote: unique index `{invalid}` on {by} is INVALID (a concurrent build that failed, on duplicates \
             perhaps): it enforces nothing reliably; drop it before creating the index"
        );
    }
    match (&index.statement, index.kind) {
        (Some(statement), _) => {
            let when = if found.groups == 0 {
                "to keep it that way, create this index:"
            } else {
                "to stop duplicates coming back, create this index once they are removed (it fails while any remain):"
            };
            let _ = writeln!(text, "\n{when}\n  {statement}");
        }
        (None, Some(kind)) => {
            let what = match kind {
                Uniqueness::PrimaryKey => "the primary key",
                Uniqueness::UniqueIndex => "unique index",
            };
            let name = index.name.as_ref().map(|name| format!(" `{name}`")).unwrap_or_default();
            let _ = writeln!(
                text,
                "\n{what}{name} on {} already keeps rows unique on {by}: no index to create",
                columns(&index.columns)
            );
        }
        (None, None) => {}
    }
    text
}
