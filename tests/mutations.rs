//! Seeded mutations of real config files and DDL scripts, checked the way `validate` checks them
//! (load, every rule against the parsed schema, every output format): no input makes the checks
//! panic, and every diagnostic points inside its file, so a user always gets `file:line:column`.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use cascade::diagnostic::{Format, Report, Sources};
use common::random::Random;

/// How many mutated cases of each kind.
const CASES: u64 = 1000;

/// Fragments a mutation inserts: the TOML and SQL a careless edit or a hostile file holds.
const FRAGMENTS: &[&str] = &[
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "=",
    ",",
    "\n",
    "\r",
    "\t",
    "#",
    "\\",
    "\u{0}",
    "\u{feff}",
    "é",
    "💥",
    "\"\"\"",
    "[models.x]\n",
    "children = [{ model = \"x\", column = \"x\" }]\n",
    "key = []\n",
    "columns = []",
    "references = 1",
    "chunk_size = -1\n",
    "chunk_size = 99999999999999999999\n",
    "strategy = \"bulk\"\n",
    "on_delete = \"nullify\"",
    "retention = { keep = \"99999y\", column = \"x\" }\n",
    "rate_limit = \"nope\"\n",
    "require_all_references = true\n",
    "ignore_references = [{ table = \"\", columns = [\"a\", \"a\"], reason = \"\" }]\n",
    "CREATE TABLE ",
    "PRIMARY KEY",
    "REFERENCES ",
    "FOREIGN KEY (",
    ") ON DELETE SET NULL",
    "ON DELETE SET DEFAULT",
    "UNIQUE (",
    ");\n",
    "(",
    ")",
    "PARTITION BY RANGE (",
    "PARTITION OF ",
    "\"odd \"\"name\"",
    "`tick`",
    "[bracket]",
    " integer",
    " text",
];

/// `text` with one to four random edits: a byte range removed, a fragment inserted, a line
/// repeated or dropped, or two lines swapped (always on character boundaries).
fn mutate(text: &str, random: &mut Random) -> String {
    let mut text = text.to_owned();
    for _ in 0..1 + random.below(4) {
        let boundary = |text: &str, random: &mut Random| {
            let mut at = random.below(text.len() as u64 + 1) as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        match random.below(5) {
            0 => {
                let start = boundary(&text, random);
                let mut end = (start + 1 + random.below(40) as usize).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(start..end, "");
            }
            1 => {
                let at = boundary(&text, random);
                text.insert_str(at, FRAGMENTS[random.below(FRAGMENTS.len() as u64) as usize]);
            }
            kind => {
                let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
                let a = random.below(lines.len() as u64) as usize;
                let b = random.below(lines.len() as u64) as usize;
                match kind {
                    2 => lines.insert(b, lines[a].clone()),
                    3 if lines.len() > 1 => {
                        lines.remove(a);
                    }
                    _ => lines.swap(a, b),
                }
                text = lines.join("\n");
            }
        }
    }
    text
}

/// The files a case starts from: the demo's config directory and its schema.
fn originals() -> (Vec<(String, String)>, String) {
    let root = common::repository();
    let mut configs: Vec<(String, String)> = std::fs::read_dir(root.join("cascades"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .map(|path| {
            (
                format!("cascades/{}", path.file_name().unwrap().to_string_lossy()),
                std::fs::read_to_string(&path).unwrap(),
            )
        })
        .collect();
    configs.sort();
    (configs, std::fs::read_to_string(root.join("schemas/demo.sql")).unwrap())
}

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
    for format in [Format::Human, Format::Json, Format::Github, Format::Sarif] {
        let _ = report.render(format, false);
    }
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
        let mut random = Random::seeded(seed);
        let mut mutated = configs.clone();
        let file = random.below(mutated.len() as u64) as usize;
        mutated[file].1 = mutate(&mutated[file].1, &mut random);
        no_panic(seed, "config", &mutated[file].1, || check(&mutated, &ddl));
    }
}

#[test]
fn mutated_ddl_never_panics_and_every_diagnostic_has_its_place() {
    let (configs, ddl) = originals();
    for seed in 0..CASES {
        let mut random = Random::seeded(seed);
        let mutated = mutate(&ddl, &mut random);
        no_panic(seed, "DDL script", &mutated, || check(&configs, &mutated));
    }
}
