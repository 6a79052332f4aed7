//! Seeded mutations of real config files and DDL scripts, checked the way `validate` checks them
//! (load, every rule against the parsed schema, every output format): no input makes the checks
//! panic, every diagnostic points inside its file, so a user always gets `file:line:column`, and
//! the human form prints no raw control character and starts no workflow command.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use cascade::diagnostic::{Format, Report, Sources};
use common::inert::{raw_controls, workflow_commands};
use common::mutation::{mutated_config, mutated_ddl, originals};

/// How many mutated cases of each kind.
const CASES: u64 = 1000;

/// Checks `configs` against `ddl` as `validate --schema` does; panics on a diagnostic outside
/// its file.
fn check(configs: &[(String, String)], ddl: &str) {
    let parsed = cascade::parse_ddl(ddl);
    let mut sources = Sources::default();
    for (name, text) in configs {
        sources.add(name.clone(), text.clone());
    }
    let mut loaded = cascade::load_sources(sources);
    if let Some(checked) = cascade::check(&mut loaded, Some(&parsed.schema)) {
        cascade::planner::check_deletions(&mut loaded, &parsed.schema);
        // Every root that compiles also renders.
        for model in checked.models.keys() {
            if let Ok(plan) = cascade::compile(&checked, model) {
                assert!(!plan.steps().is_empty());
            }
        }
    }
    for diagnostic in &loaded.diagnostics {
        let text = loaded.sources.text(diagnostic.location.file);
        let span = &diagnostic.location.span;
        assert!(span.start <= span.end && span.end <= text.len(), "{diagnostic:?} lies outside its file");
        let (line, column) = loaded.sources.line_column(&diagnostic.location);
        assert!(line >= 1 && column >= 1, "{diagnostic:?} has no line and column");
    }
    let report = Report { sources: &loaded.sources, diagnostics: &loaded.diagnostics };
    for format in [Format::Json, Format::Github, Format::Sarif] {
        let _ = report.render(format, false);
    }
    let human = report.render(Format::Human, false);
    assert_eq!(raw_controls(&human), Vec::<char>::new(), "{human}");
    assert_eq!(workflow_commands(&human), Vec::<&str>::new(), "{human}");
}

/// Runs `case`; a panic fails the test with the seed and the input that caused it.
fn no_panic(seed: u64, what: &str, input: &str, case: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(case)).is_err() {
        panic!("seed {seed}: checking this {what} panicked:\n{input}");
    }
}

#[test]
fn mutated_configs_never_panic_and_every_diagnostic_has_its_place() {
    let (configs, ddl) = originals();
    for seed in 0..CASES {
        let (mutated, file) = mutated_config(&configs, seed);
        no_panic(seed, "config", &mutated[file].1, || check(&mutated, &ddl));
    }
}

#[test]
fn mutated_ddl_never_panics_and_every_diagnostic_has_its_place() {
    let (configs, ddl) = originals();
    for seed in 0..CASES {
        let mutated = mutated_ddl(&ddl, seed);
        no_panic(seed, "DDL script", &mutated, || check(&configs, &mutated));
    }
}
