//! `schedule`, `cancel` and `scheduled`: the scheduled deletions a worker runs.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;

use cascade::db::{Access, Database, db_time};
use cascade::scheduler::{self, ScheduleError};
use cascade::{config, engine, planner};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct ScheduleArgs {
    /// The root model to delete.
    pub model: String,
    /// The id of the root row.
    pub id: String,
    /// When, from now: `30d`, `12h`, `90min`, `0s` (now). Default 30 days.
    #[arg(long = "in", value_name = "DURATION", conflicts_with = "at", value_parser = humantime::parse_duration)]
    pub delay: Option<Duration>,
    /// When, as a time: `2026-12-24T18:00:00Z`, `2026-12-24 18:00:00+02:00` (UTC without an offset).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<SystemTime>,
    /// Who asked for the deletion (recorded in cascade_run when it runs).
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Extra data kept with the scheduled deletion, as JSON.
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct CancelArgs {
    /// The model of the scheduled deletion.
    pub model: String,
    /// The id of its root row.
    pub id: String,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Output format: human, or json (a list of objects).
    #[arg(long, value_enum, default_value_t = super::output::SummaryFormat::Human)]
    pub format: super::output::SummaryFormat,
}

pub fn schedule(cli: &Cli, args: &ScheduleArgs) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let plan = planner::compile(&loaded, &args.model)?;
    if let Some(data) = &args.data {
        serde_json::from_str::<serde_json::Value>(data).context("--data must be JSON")?;
    }
    let at = match args.at {
        Some(at) => at,
        None => SystemTime::now()
            .checked_add(args.delay.unwrap_or(scheduler::DEFAULT_DELAY))
            .filter(|at| *at <= cascade::db::latest_time())
            .context("--in is too far in the future: the latest date that can be scheduled is 9999-12-31")?,
    };
    let url = super::database_url(cli, &loaded);
    super::block_on(async {
        let database = super::connect(&url, &loaded, Access::ReadWrite).await?;
        let checked = engine::check_root_ids(&database, &plan, std::slice::from_ref(&args.id)).await;
        database.close().await;
        checked
    })?;
    let guid = with_database(&url, &loaded, |database| async move {
        scheduler::schedule(&database, &args.model, &args.id, at, args.actor.as_deref(), args.data.as_deref()).await
    })?;
    println!("scheduled the deletion of {} {} for {} UTC (guid {guid})", args.model, args.id, db_time(at));
    Ok(ExitCode::SUCCESS)
}

pub fn cancel(cli: &Cli, args: &CancelArgs) -> anyhow::Result<ExitCode> {
    // A config that no longer checks still lets an operator cancel what it scheduled.
    let loaded = config::load(&cli.config)?;
    // An unknown model is a typo, not "nothing scheduled".
    planner::declared_model(&loaded.config, &args.model)?;
    let url = super::database_url(cli, &loaded.config);
    match with_database(&url, &loaded.config, |database| async move {
        scheduler::cancel(&database, &args.model, &args.id).await
    }) {
        Ok(guid) => {
            println!("cancelled the deletion of {} {} (guid {guid})", args.model, args.id);
            Ok(ExitCode::SUCCESS)
        }
        Err(error @ (ScheduleError::InProgress { .. } | ScheduleError::NotScheduled { .. })) => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(1))
        }
        Err(error) => Err(error.into()),
    }
}

pub fn list(cli: &Cli, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let loaded = config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let settings = &loaded.config.settings;
    let rows =
        with_database(&url, &loaded.config, |database| async move { scheduler::list(&database, settings).await })?;
    if args.format == super::output::SummaryFormat::Json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("no scheduled deletions");
    }
    for row in &rows {
        println!(
            "{}  {:<11} {} {}  at {} UTC  attempts {}{}",
            row.guid,
            row.state,
            row.model,
            row.object_id,
            row.date_scheduled,
            row.attempts,
            row.last_error.as_deref().map(|e| format!("  last error: {e}")).unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Connects (read-write: the tool's tables may need creating), runs `work`, closes.
fn with_database<T, F, Fut>(url: &str, config: &config::Config, work: F) -> Result<T, ScheduleError>
where
    F: FnOnce(Database) -> Fut,
    Fut: std::future::Future<Output = Result<T, ScheduleError>>,
{
    super::block_on(async {
        let database = super::connect(url, config, Access::ReadWrite).await.map_err(ScheduleError::Database)?;
        let result = work(database.clone()).await;
        database.close().await;
        result
    })
}

/// An RFC 3339 time, with `Z`, an offset such as `+02:00`, or none (UTC), from 1970 to 9999.
fn parse_time(text: &str) -> Result<SystemTime, String> {
    let time = parse_time_with_offset(text)?;
    if time < SystemTime::UNIX_EPOCH || time > cascade::db::latest_time() {
        return Err("the time must be between 1970-01-01 and 9999-12-31 (UTC)".to_owned());
    }
    Ok(time)
}

fn parse_time_with_offset(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let offset = text.len().checked_sub(6).and_then(|start| {
        let (time, offset) = text.split_at_checked(start)?;
        let sign = match offset.as_bytes()[0] {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let (hours, minutes) = offset[1..].split_once(':')?;
        let seconds = hours.parse::<u64>().ok()? * 3600 + minutes.parse::<u64>().ok()? * 60;
        Some((time, sign, Duration::from_secs(seconds)))
    });
    let parse = |time: &str| {
        humantime::parse_rfc3339_weak(time)
            .map_err(|error| format!("{error} (a time such as 2026-12-24T18:00:00Z, from 1970-01-01 to 9999-12-31)"))
    };
    match offset {
        // `+02:00` means the local time is ahead of UTC: subtract it.
        Some((time, 1, offset)) => {
            parse(time)?.checked_sub(offset).ok_or_else(|| "the time is out of range".to_owned())
        }
        Some((time, _, offset)) => {
            parse(time)?.checked_add(offset).ok_or_else(|| "the time is out of range".to_owned())
        }
        None => parse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_with_and_without_offsets() {
        let utc = parse_time("2026-12-24T18:00:00Z").unwrap();
        assert_eq!(parse_time("2026-12-24T20:00:00+02:00").unwrap(), utc);
        assert_eq!(parse_time("2026-12-24 13:00:00-05:00").unwrap(), utc);
        assert_eq!(parse_time("2026-12-24 18:00:00").unwrap(), utc);
        assert!(parse_time("tomorrow").is_err());
        assert!(parse_time("1969-12-31T23:00:00Z").is_err());
        assert!(parse_time("9999-12-31T23:59:59-05:00").is_err());
        assert!(parse_time("9999-12-31T23:59:59Z").is_ok());
        assert!(parse_time("é12345").is_err(), "not a panic on a character boundary");
    }
}
