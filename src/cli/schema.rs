use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    print!("{}", cascade::config::json_schema());
    Ok(ExitCode::SUCCESS)
}
