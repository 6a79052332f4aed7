use std::process::ExitCode;

use cascade::cleanup::BatchError;
use cascade::cleanup::orphans::OrphanCleanup;
use cascade::cleanup::{self, DeletePreview, LeftAlone, OrphanError, OrphanOptions, OrphanReport, RelationOrphans};
use cascade::config::OnDelete;
use cascade::db::{Access, Database};
use cascade::engine::DeleteError;
use cascade::planner::CheckedConfig;
use indexmap::IndexMap;

use super::Cli;
use super::output::SummaryFormat;
use super::table::{Table, plural};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only relations whose parent or child is MODEL (repeatable; a name that is no model may
    /// name a table of the database).
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Only the relation of child MODEL by its COLUMN (repeatable).
    #[arg(long = "relation", value_name = "MODEL.COLUMN")]
    pub relations: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
    pub format: SummaryFormat,
    /// List the keys of the first N orphans of each relation, lowest first.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub sample: u64,
    /// Also count what deleting the orphans would remove, each with everything below it (a dry
    /// run: nothing is deleted unless --confirm is given too).
    #[arg(long)]
    pub delete: bool,
    /// With --delete: delete for real, in batches.
    #[arg(long, requires = "delete")]
    pub confirm: bool,
    #[command(flatten)]
    pub batches: super::batch::BatchArgs,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let url = super::database_url(cli, &loaded);
    let options = OrphanOptions { models: args.models.clone(), relations: args.relations.clone(), sample: args.sample };
    if args.confirm {
        cascade::config::check_allowed_user(&loaded, loaded.sources(), "orphans --delete --confirm")?;
        return super::block_on(confirmed(&url, &loaded, &options, args));
    }
    super::block_on(async {
        let database = super::connect(&url, &loaded, Access::ReadOnly).await?;
        let result = report(&database, &loaded, &options, args.delete).await;
        database.close().await;
        let Some((report, preview, refused)) = result? else { return Ok(ExitCode::from(1)) };
        match args.format {
            SummaryFormat::Json => {
                let mut json = serde_json::to_value(&report)?;
                if let Some(preview) = &preview {
                    json["delete"] = serde_json::to_value(preview)?;
                }
                println!("{}", serde_json::to_string_pretty(&json)?);
            }
            SummaryFormat::Human => print!("{}", human(&report, preview.as_ref(), args.sample)),
        }
        // What --confirm would refuse before deleting anything, the dry run says too.
        if let Some(refused) = refused {
            if let DeleteError::UnregisteredReferences(diagnostics) = &refused {
                super::refuse_diagnostics(loaded.sources(), diagnostics);
            }
            eprintln!("error: with --confirm this clean-up would be refused: {refused}");
            return Ok(ExitCode::from(1));
        }
        // A report: orphans found are not a failure.
        Ok(ExitCode::SUCCESS)
    })
}

/// The report; with `--delete` its dry run, and what `--confirm` would refuse.
type Reported = (OrphanReport, Option<DeletePreview>, Option<DeleteError>);

/// The report, and with `--delete` the dry run of deleting. `--delete` checks the config
/// against the live schema first, as `delete` does (`None`: errors printed); the report alone
/// lists what it cannot count instead.
async fn report(
    database: &Database,
    loaded: &CheckedConfig,
    options: &OrphanOptions,
    delete: bool,
) -> anyhow::Result<Option<Reported>> {
    if delete {
        let Some(engine) = super::prepare(database.clone(), loaded).await? else { return Ok(None) };
        let report = cleanup::report(database, engine.config(), engine.schema(), options).await?;
        let preview = cleanup::preview_delete(database, engine.config(), engine.schema(), &report).await?;
        let refused = cleanup::orphans::refusal(&engine, &preview).await.err();
        return Ok(Some((report, Some(preview), refused)));
    }
    let schema = cascade::schema::introspect(database).await?;
    let report = cleanup::report(database, loaded, &schema, options).await?;
    Ok(Some((report, None, None)))
}

/// `orphans --delete --confirm`: the orphans deleted batch after batch, and what was done.
async fn confirmed(
    url: &str,
    loaded: &CheckedConfig,
    options: &OrphanOptions,
    args: &Args,
) -> anyhow::Result<ExitCode> {
    let database = super::connect(url, loaded, Access::ReadWrite).await?;
    let Some(engine) = super::prepare(database.clone(), loaded).await? else { return Ok(ExitCode::from(1)) };
    let cleaned = cleanup::orphans::delete(&engine, options, args.batches.options()).await;
    database.close().await;
    let cleaned = match cleaned {
        Err(OrphanError::Cleanup(BatchError::Delete(DeleteError::UnregisteredReferences(diagnostics)))) => {
            super::refuse_diagnostics(engine.sources(), &diagnostics);
            return Ok(ExitCode::from(1));
        }
        Err(OrphanError::Cleanup(running @ BatchError::AlreadyRunning { .. })) => {
            return Ok(super::batch::already_running(&running));
        }
        other => other.map_err(super::batch::cleanup_failed)?,
    };
    match args.format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&cleaned)?),
        SummaryFormat::Human => print!("{}", human_cleanup(&cleaned)),
    }
    Ok(super::batch::cleanup_exit(&cleaned.summary))
}

fn human_cleanup(cleaned: &OrphanCleanup) -> String {
    let mut out = super::batch::human_summary(&cleaned.summary);
    for left in &cleaned.left_alone {
        out += &format!("left alone: {}: {}\n", orphans_of(left), left.reason);
    }
    out
}

/// `3 orphans of child.column`.
fn orphans_of(left: &LeftAlone) -> String {
    format!("{} of {}.{}", plural(left.orphans, "orphan", "orphans"), left.child, columns_text(&left.column))
}

/// A relation's columns as a report's `column` writes them, for a line of text: `a`, or
/// `(a, b)` over several.
fn columns_text(column: &str) -> String {
    if column.contains(", ") { format!("({column})") } else { column.to_owned() }
}

fn parent_of(relation: &RelationOrphans) -> &str {
    relation.parent.as_deref().unwrap_or(&relation.parent_table)
}

fn child_column(relation: &RelationOrphans) -> String {
    format!("{}.{}", relation.child.as_deref().unwrap_or(&relation.child_table), columns_text(&relation.column()))
}

/// A table of the relations (one row each, with its sample and index advice below it), a total
/// line, the relations not counted, and the dry run of deleting.
fn human(report: &OrphanReport, preview: Option<&DeletePreview>, sample: u64) -> String {
    let mut out = String::new();
    if report.relations.is_empty() {
        out += "no relations to check\n";
    } else {
        let headers = ["parent", "child.column", "declared", "orphans", "indexed"];
        let rows: Vec<[String; 5]> = report
            .relations
            .iter()
            .map(|relation| {
                [
                    parent_of(relation).to_owned(),
                    child_column(relation),
                    if relation.declared { "yes" } else { "no" }.to_owned(),
                    relation.orphans.to_string(),
                    if relation.index.is_none() { "yes" } else { "no" }.to_owned(),
                ]
            })
            .collect();
        let table = Table::new(headers, &rows, &[3]);
        out += &table.line(&headers);
        for (relation, row) in report.relations.iter().zip(&rows) {
            out += &table.line(&row.each_ref().map(String::as_str));
            if !relation.sample.is_empty() {
                let keys: Vec<String> = relation.sample.iter().map(sample_text).collect();
                let more = if relation.orphans > relation.sample.len() as u64 { ", ..." } else { "" };
                out += &format!("  sample: {}{more}\n", keys.join(", "));
            } else if sample > 0 && relation.orphans > 0 && relation.key.is_empty() {
                out += &format!("  no sample: `{}` has no key to list\n", relation.child_table);
            }
            if let Some(index) = &relation.index {
                out += &format!("  no index leads with {}: {index}\n", child_column(relation));
            }
        }
        out += &format!(
            "total: {} in {}\n",
            plural(report.total, "orphan", "orphans"),
            plural(report.relations.len() as u64, "relation", "relations")
        );
    }
    if !report.skipped.is_empty() {
        out += "\nnot counted:\n";
        for skipped in &report.skipped {
            let declared = if skipped.declared { "" } else { " (undeclared foreign key)" };
            let column = columns_text(&skipped.column);
            out += &format!("  {} → {}.{column}{declared}: {}\n", skipped.parent, skipped.child, skipped.reason);
        }
    }
    if let Some(preview) = preview {
        out += &human_preview(preview);
    }
    out
}

/// `"7"` as `7`, a composite key `["1","a"]` as `(1, a)`.
fn sample_text(key: &serde_json::Value) -> String {
    match key {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(values) => {
            format!("({})", values.iter().map(sample_text).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

/// `event 3, comment 2`, leaving out models with no rows.
fn rows_per_model(rows: &IndexMap<String, u64>) -> String {
    let rows = rows.iter().filter(|(_, count)| **count > 0);
    rows.map(|(model, count)| format!("{model} {count}")).collect::<Vec<_>>().join(", ")
}

fn any_rows(rows: &IndexMap<String, u64>) -> bool {
    rows.values().any(|count| *count > 0)
}

fn human_preview(preview: &DeletePreview) -> String {
    let mut out = String::from("\n--delete would:\n");
    if preview.roots.is_empty() && preview.left_alone.is_empty() {
        out += "  change nothing: there are no orphans\n";
    }
    for root in &preview.roots {
        let columns = root.columns.iter().map(|column| columns_text(column)).collect::<Vec<_>>().join(", ");
        match root.action {
            OnDelete::Delete | OnDelete::Database => {
                out += &format!(
                    "  delete {} of {} (by {columns}) with everything below them: {}",
                    plural(root.orphans, "orphan", "orphans"),
                    root.model,
                    rows_per_model(&root.totals)
                );
                if any_rows(&root.nullify) {
                    out += &format!("; set to NULL: {}", rows_per_model(&root.nullify));
                }
                if root.skipped_by_status > 0 {
                    out += &format!(
                        " ({} skipped: their status does not allow a deletion)",
                        plural(root.skipped_by_status, "orphan", "orphans")
                    );
                }
                out += "\n";
            }
            OnDelete::Nullify => {
                out += &format!(
                    "  set {}.{columns} to NULL in {} (the relation nullifies)\n",
                    root.model,
                    plural(root.orphans, "orphan", "orphans")
                );
            }
        }
    }
    for left in &preview.left_alone {
        out += &format!("  leave {} alone: {}\n", orphans_of(left), left.reason);
    }
    if any_rows(&preview.totals) || any_rows(&preview.nullify) {
        out += "in all: ";
        let mut parts = Vec::new();
        if any_rows(&preview.totals) {
            parts.push(format!("delete {}", rows_per_model(&preview.totals)));
        }
        if any_rows(&preview.nullify) {
            parts.push(format!("set to NULL: {}", rows_per_model(&preview.nullify)));
        }
        out += &parts.join("; ");
        out += "\n";
    }
    out += "dry run: nothing was changed; add --confirm to delete them in batches\n";
    out
}
