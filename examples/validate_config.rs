//! Validating a config from code, then compiling the deletion plan of one root model.
//! Run: `cargo run --example validate_config [CONFIG_DIR] [ROOT_MODEL]`.

use std::path::PathBuf;

use cascade::diagnostic::{Format, Report};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "cascades".to_owned()));
    let root = args.next().unwrap_or_else(|| "organization".to_owned());

    let mut loaded = cascade::config::load(&dir)?;
    let checked = cascade::planner::check(&mut loaded, None);
    let report = Report { sources: &loaded.sources, diagnostics: &loaded.diagnostics };
    print!("{}", report.render(Format::Human, false));
    let Some(checked) = checked else { std::process::exit(1) };

    let plan = cascade::planner::compile(&checked, &root)?;
    println!("\nplan for `{root}`, in execution order:");
    for step in plan.steps() {
        println!(
            "{:>3}. {:<9} {:<18} via {:<18} {:<8} chunk {}",
            step.step,
            format!("{:?}", step.action).to_lowercase(),
            step.model,
            if step.columns.is_empty() { "(root)".to_owned() } else { step.columns.join(", ") },
            step.strategy.as_str(),
            step.chunk_size
        );
    }
    Ok(())
}
