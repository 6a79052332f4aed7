//! Generated configs of many models, the shape the validate and lsp benches time.

use std::fmt::Write as _;
use std::path::Path;

/// Models per generated file.
pub const MODELS_PER_FILE: usize = 500;

/// Models in one block: relations stay inside it, so no chain of delete relations is deeper
/// than the 1,000 models a plan may have (`plan-too-deep`).
const BLOCK: usize = 1_000;

/// Model `m{i}` has up to four children among the next models of its block of [`BLOCK`] (two
/// files), so the graph is a DAG with diamonds and relations across files; models without
/// children are bulk leaves. Every tenth model writes an outbox category and every hundredth is
/// rate limited. Returns the number of relations.
pub fn write_config(dir: &Path, models: usize) -> usize {
    let mut relations = 0;
    for (file, first) in (0..models).step_by(MODELS_PER_FILE).enumerate() {
        let mut text = String::from("#:schema ../schemas/cascade.schema.json\n");
        if file == 0 {
            text.push_str("[options]\n\"rows_per_second\" = 1000\n\n");
            text.push_str("[outbox.scopes.tenant]\nshard_key = \"tenant_id\"\ncategories = [\"update\"]\n\n");
        }
        for i in first..(first + MODELS_PER_FILE).min(models) {
            let block_end = ((i / BLOCK + 1) * BLOCK).min(models);
            let children: Vec<usize> = [1, 2, 7, 31].iter().map(|step| i + step).filter(|c| *c < block_end).collect();
            relations += children.len();
            writeln!(text, "[models.m{i}]\ntable = \"t{i}\"").unwrap();
            if children.is_empty() {
                text.push_str("strategy = \"bulk\"\n");
            }
            if i % 10 == 0 {
                text.push_str("outbox = \"update\"\n");
            }
            if i % 100 == 0 {
                text.push_str("rate_limit = \"rows_per_second\"\n");
            }
            let children: Vec<String> =
                children.iter().map(|c| format!("{{ model = \"m{c}\", column = \"m{i}_id\" }}")).collect();
            writeln!(text, "children = [{}]\n", children.join(", ")).unwrap();
        }
        std::fs::write(dir.join(format!("models_{file:03}.toml")), text).expect("write a generated config");
    }
    relations
}
