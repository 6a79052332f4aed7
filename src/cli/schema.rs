use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    print!("{}", crate::config::json_schema());
    Ok(ExitCode::SUCCESS)
}
