//! The language server on a generated config of 5,000 models (ten files of 500, the validate
//! and diff benches' shape), as an editor runs it: the release binary as a whole process over
//! stdio. Timed: from a change sent to its diagnostics received (each change waited for, so every one is
//! analysed), completion answered with nothing pending and right after a change (as while
//! typing), and the server's resident memory over the edits; beside them, `cascade validate` of
//! the same config as a process, the check the editor had before. Nothing is written anywhere.
//! Run: `cargo bench --bench lsp` (`-- --models N`, `-- --edits N`, default 1,000 edits).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common/args.rs"]
mod args;
#[path = "common/large_config.rs"]
mod large_config;
#[allow(dead_code)] // the tests use more of it
#[path = "../tests/it/common/lsp.rs"]
mod lsp_client;

use lsp_client::{LspClient, position, uri};

const COMPLETIONS: usize = 300;

fn main() {
    let models = args::number_argument("--models").unwrap_or(5_000) as usize;
    let edits = args::number_argument("--edits").unwrap_or(1_000) as usize;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("cascades");
    std::fs::create_dir(&config).expect("the config directory");
    let (relations, files) = large_config::write(&config, models, false);
    let binary = Path::new(env!("CARGO_BIN_EXE_cascade"));
    println!("{models} models, {relations} relations, {files} files; {edits} edits\n");

    let validate: Vec<Duration> = (0..7)
        .map(|_| {
            let started = Instant::now();
            let output = Command::new(binary).args(["validate", "--format", "json"]).current_dir(dir.path()).output();
            let output = output.expect("run cascade validate");
            let report = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "the generated config validates: {}", &report[..report.len().min(2000)]);
            started.elapsed()
        })
        .collect();

    // The middle file is the one being edited: its first relation's child model, misspelt and back.
    let file = config.join(format!("models_{:03}.toml", files / 2));
    let mut text = std::fs::read_to_string(&file).expect("a generated file");
    let at = text.find("{ model = ").expect("a relation in the middle file") + "{ model = ".len();
    let child = text[at + 2..].split('"').next().expect("the child's name").to_owned();
    let mut client = LspClient::start(binary, dir.path(), &[]);
    client.initialize(dir.path(), json!({}));
    let uri = uri(&file);
    let started = Instant::now();
    client.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "toml", "version": 1, "text": text } }),
    );
    let first = client.diagnostics(&uri, Some(1));
    let opened = started.elapsed();
    assert_eq!(first, Vec::<Value>::new(), "the generated config is clean");
    let rss_start = rss_kib(client.pid());

    let mut version = 1;
    let mut edit = |client: &mut LspClient, text: &mut String| {
        version += 1;
        let old = if text[at..].starts_with(&format!("\"m{child}x\"")) {
            format!("\"m{child}x\"")
        } else {
            format!("\"m{child}\"")
        };
        let new = if old.ends_with("x\"") { format!("\"m{child}\"") } else { format!("\"m{child}x\"") };
        let range = json!({ "start": position(text, at), "end": position(text, at + old.len()) });
        text.replace_range(at..at + old.len(), &new);
        client.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "range": range, "text": new }] }),
        );
        version
    };

    let mut diagnostics = Vec::with_capacity(edits);
    let mut rss = vec![(0, rss_start)];
    for round in 1..=edits {
        let started = Instant::now();
        let version = edit(&mut client, &mut text);
        let published = client.diagnostics(&uri, Some(version));
        diagnostics.push(started.elapsed());
        // Every other change misspells the model: one unknown-model error, then none.
        assert_eq!(published.len(), round % 2, "edit {round}");
        if round % 100 == 0 {
            rss.push((round, rss_kib(client.pid())));
        }
    }

    let completion_at = position(&text, at + 1);
    let complete = |client: &mut LspClient| {
        let started = Instant::now();
        let list = client
            .request("textDocument/completion", json!({ "textDocument": { "uri": uri }, "position": completion_at }))
            .expect("completion succeeds");
        let elapsed = started.elapsed();
        assert_eq!(list["items"].as_array().map(Vec::len), Some(100), "the first 100 of {models} models");
        elapsed
    };
    let settled: Vec<Duration> = (0..COMPLETIONS).map(|_| complete(&mut client)).collect();
    let mut typing = Vec::with_capacity(COMPLETIONS);
    for _ in 0..COMPLETIONS {
        let version = edit(&mut client, &mut text);
        typing.push(complete(&mut client));
        client.diagnostics(&uri, Some(version));
    }
    assert!(client.shutdown().success());

    println!("| measure | runs | p50 | p95 | max |");
    println!("|---|---:|---:|---:|---:|");
    row("`cascade validate` (whole process)", &validate);
    row("open → first diagnostics", &[opened]);
    row("change → its diagnostics", &diagnostics);
    row("completion, nothing pending", &settled);
    row("completion right after a change", &typing);
    println!("\n| edits | server RSS |");
    println!("|---:|---:|");
    for (round, kib) in &rss {
        println!("| {round} | {:.1} MiB |", *kib as f64 / 1024.0);
    }
}

fn row(name: &str, times: &[Duration]) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let at = |quantile: f64| sorted[((sorted.len() as f64 * quantile).ceil() as usize).clamp(1, sorted.len()) - 1];
    let ms = |duration: Duration| format!("{:.1} ms", duration.as_secs_f64() * 1e3);
    println!("| {name} | {} | {} | {} | {} |", sorted.len(), ms(at(0.5)), ms(at(0.95)), ms(at(1.0)));
}

/// The process's resident set, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:")).expect("a VmRSS line");
    line.trim().trim_end_matches("kB").trim().parse().expect("a number of KiB")
}
