//! Generated configs of N models for the validate and diff benches: files of 500 models, each
//! model with up to four children among the later models (steps 29, 31, 97 and 211: a DAG full of
//! diamonds, at most about 700 deep at 20,000 models, inside the depth a plan may have), bulk
//! leaves, every tenth model writing one of three outbox categories of two scopes, every
//! hundredth rate limited. The edited variant is the base as a large pull request changes it: the
//! per_row default chunk size, 1 % of the relations flipped to nullify, a category moved to the
//! other scope, 2 % of the models with a chunk size of their own, 10 models added.

use std::fmt::Write as _;
use std::path::Path;

const MODELS_PER_FILE: usize = 500;

/// Writes the config of `models` models (the edited variant with `edited`) into `dir`; returns
/// the number of relations and of files.
pub fn write(dir: &Path, models: usize, edited: bool) -> (usize, usize) {
    std::fs::create_dir_all(dir).expect("a config directory");
    let mut relations = 0;
    let total = if edited { models + 10 } else { models };
    let files = total.div_ceil(MODELS_PER_FILE);
    for (file, first) in (0..total).step_by(MODELS_PER_FILE).enumerate() {
        let mut text = String::from("#:schema ../schemas/cascade.schema.json\n");
        if file == 0 {
            let chunk = if edited { 250 } else { 100 };
            writeln!(text, "[settings]\nper_row_chunk_size = {chunk}\n").unwrap();
            text.push_str("[options]\n\"rows_per_second\" = 1000\n\n");
            let (tenant, region) = if edited { ("\"a\"", "\"b\", \"c\"") } else { ("\"a\", \"b\"", "\"c\"") };
            writeln!(text, "[outbox.scopes.tenant]\nshard_key = \"tenant_id\"\ncategories = [{tenant}]\n").unwrap();
            writeln!(text, "[outbox.scopes.region]\nshard_key = \"region_id\"\ncategories = [{region}]\n").unwrap();
        }
        for i in first..(first + MODELS_PER_FILE).min(total) {
            let children: Vec<usize> = [29, 31, 97, 211].iter().map(|step| i + step).filter(|c| *c < models).collect();
            relations += children.len();
            writeln!(text, "[models.m{i}]\ntable = \"t{i}\"").unwrap();
            if children.is_empty() {
                text.push_str("strategy = \"bulk\"\n");
            }
            if edited && i % 50 == 3 {
                text.push_str("chunk_size = 20\n");
            }
            if i % 10 == 0 {
                writeln!(text, "outbox = \"{}\"", ["a", "b", "c"][i / 10 % 3]).unwrap();
            }
            if i % 100 == 0 {
                text.push_str("rate_limit = \"rows_per_second\"\n");
            }
            let children: Vec<String> = children
                .iter()
                .map(|c| {
                    let nullify = if edited && (i + c) % 100 == 0 { ", on_delete = \"nullify\"" } else { "" };
                    format!("{{ model = \"m{c}\", column = \"m{i}_id\"{nullify} }}")
                })
                .collect();
            writeln!(text, "children = [{}]\n", children.join(", ")).unwrap();
        }
        std::fs::write(dir.join(format!("models_{file:03}.toml")), text).expect("write a generated config");
    }
    (relations, files)
}
