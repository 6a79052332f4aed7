use std::fmt::Write as _;
use std::process::ExitCode;

use cascade::cleanup::duplicates::{self, DEFAULT_SAMPLE, Duplicates, Keep, Search, Uniqueness};
use cascade::db::Access;
use cascade::db::sql::quote_literal;

use super::Cli;
use super::delete::SummaryFormat;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model whose table is searched.
    pub model: String,
    /// Columns rows must be equal on (repeat the flag or separate with commas). A row with a
    /// NULL in any of them is in no group.
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
        by: args.by.clone(),
        keep: match args.keep {
            KeepArg::Oldest => Keep::Oldest,
            KeepArg::Newest => Keep::Newest,
        },
        order_by: args.order_by.clone(),
        sample: args.sample,
    };
    let url = super::database_url(cli, &loaded.config);
    let found = super::block_on(async {
        let database = super::connect(&url, &loaded.config, Access::ReadOnly).await?;
        let schema = cascade::schema::introspect(&database).await;
        let found = match schema {
            Ok(schema) => duplicates::find(&database, &loaded.config, &schema, &search).await.map_err(Into::into),
            Err(error) => Err(anyhow::Error::new(error)),
        };
        database.close().await;
        found
    })?;
    match args.format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&found)?),
        SummaryFormat::Human => print!("{}", human(&found)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `(a, b)`, or `a` alone.
fn columns(columns: &[String]) -> String {
    match columns {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    }
}

fn human(found: &Duplicates) -> String {
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
            plural(found.groups, "group"),
            plural(found.rows, "row"),
            found.removable,
            found.groups
        );
    }
    if found.null_rows > 0 {
        let _ = writeln!(
            text,
            "{} with a NULL in {} {} in no group (NULL equals nothing)",
            plural(found.null_rows, "row"),
            found.by.join(" or "),
            if found.null_rows == 1 { "is" } else { "are" }
        );
    }
    if !found.sample.is_empty() {
        let _ = writeln!(text, "\nthe largest groups ({} of {}):", found.sample.len(), found.groups);
        for group in &found.sample {
            let values: Vec<String> =
                group.values.iter().map(|(column, value)| format!("{column} = {}", quote_literal(value))).collect();
            let mut removed = group.removed.join(", ");
            let unlisted = group.rows.saturating_sub(1 + group.removed.len() as u64);
            if unlisted > 0 {
                let _ = write!(removed, " and {unlisted} more");
            }
            let _ = writeln!(
                text,
                "  {}: {}, keep {}, remove {removed}",
                values.join(", "),
                plural(group.rows, "row"),
                group.kept
            );
        }
    }
    let _ = writeln!(text, "\nreport only: nothing was changed");
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

fn plural(count: u64, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}
