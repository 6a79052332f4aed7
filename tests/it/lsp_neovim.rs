//! A real editor against `cascade lsp`: headless Neovim with its built-in LSP client, attached
//! to the server on a fixture config, receives the diagnostics (and turns their UTF-16 columns
//! into bytes) and jumps to a definition in another file. Neovim is Debian's `neovim` (`.ci/run`
//! installs it); without it the test is skipped, except in CI, where it fails.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const MODELS: &str = r#"[models.org]
table = "org"
children = [{ model = "équipe", column = "org_id" }, { model = "projet", column = "org_id" }, { model = "member", column = "org_id" }]
"#;

const MEMBERS: &str = r#"[models.member]
table = "member"
strategy = "bulk"

[models."équipe"]
table = "team"
strategy = "bulk"
"#;

#[test]
fn neovim_shows_the_diagnostics_and_goes_to_a_definition_in_another_file() {
    if Command::new("nvim").arg("--version").stdout(Stdio::null()).status().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI must have Neovim (`nvim`): .ci/run installs Debian's neovim");
        eprintln!("skipped: Neovim (`nvim`) is not installed");
        return;
    }
    let dir = common::project(&[("cascades/models.toml", MODELS), ("cascades/members.toml", MEMBERS)]);
    let result = dir.path().join("result.json");
    let script = common::repository().join("tests/neovim/lsp.lua");
    let mut neovim = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .current_dir(dir.path())
        .env("CASCADE_BIN", env!("CARGO_BIN_EXE_cascade"))
        .env("CASCADE_ROOT", dir.path())
        .env("CASCADE_MODELS", dir.path().join("cascades/models.toml"))
        .env("CASCADE_RESULT", &result)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start nvim");
    // Neovim quits when the script is done: that exit is the signal.
    let status = common::wait_for_exit(&mut neovim, "Neovim", Duration::from_secs(120));
    assert!(status.success(), "nvim exited with {status}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&result).expect("the script wrote its result"))
        .expect("the result is JSON");
    assert_eq!(result.get("error"), None, "the script failed");

    // Neovim's columns are bytes: `équipe` before it makes the UTF-16 column one less.
    let line = MODELS.lines().nth(2).unwrap();
    let start = line.find("\"projet\"").unwrap();
    assert_eq!(
        result["diagnostics"],
        json!([{
            "lnum": 2, "col": start, "end_lnum": 2, "end_col": start + "\"projet\"".len(),
            "severity": 1, "code": "unknown-model", "source": "cascade",
            "message": "model `org` has a relation to unknown model `projet`\nhelp: declare it as [models.projet] or fix the name",
        }])
    );
    let members = dir.path().join("cascades/members.toml");
    assert_eq!(result["definition"], json!({ "file": members.display().to_string(), "line": 1, "col": 8 }));
    assert_eq!(result["stopped"], true);
}
