use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    print!("{}", cascade_schema());
    Ok(ExitCode::SUCCESS)
}

fn cascade_schema() -> String {
    crate::config::json_schema()
}
