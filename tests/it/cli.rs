//! What the command line tells about itself: the exit codes in `--help`, shell completions and
//! the man page, all generated from the same definitions.

use crate::common;

use common::{cascade, project};

#[test]
fn help_lists_the_exit_codes() {
    let dir = project(&[]);
    let output = cascade(dir.path()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    for line in ["Exit codes:", "130  interrupted by Ctrl-C or SIGTERM"] {
        assert!(help.contains(line), "{help}");
    }
}

#[test]
fn completions_and_the_man_page_cover_every_command() {
    let dir = project(&[]);
    for shell in ["bash", "zsh", "fish"] {
        let output = cascade(dir.path()).args(["completions", shell]).output().unwrap();
        assert!(output.status.success());
        let script = String::from_utf8_lossy(&output.stdout);
        for command in ["validate", "plan", "delete", "worker", "runs", "completions"] {
            assert!(script.contains(command), "{shell} completions lack `{command}`");
        }
    }
    let output = cascade(dir.path()).arg("man").output().unwrap();
    let page = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(page.contains(".TH cascade"), "{page}");
    assert!(page.contains("validate"), "{page}");
}

/// `rust-version` states the real minimum: the highest `rust-version` of the locked
/// dependencies (read from cargo's registry sources, which the build has just unpacked).
#[test]
fn rust_version_is_the_highest_the_locked_dependencies_need() {
    let root = common::repository();
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml")).unwrap().parse().unwrap();
    let ours = manifest["package"]["rust-version"].as_str().unwrap().to_owned();
    let lock: toml::Table = std::fs::read_to_string(root.join("Cargo.lock")).unwrap().parse().unwrap();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let sources: Vec<std::path::PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .expect("cargo's registry sources")
        .map(|entry| entry.unwrap().path())
        .collect();
    let version = |text: &str| -> Vec<u64> { text.split('.').map(|part| part.parse().unwrap()).collect() };
    let mut highest = (vec![0], String::new());
    let mut read = 0;
    for package in lock["package"].as_array().unwrap() {
        let (name, release) = (package["name"].as_str().unwrap(), package["version"].as_str().unwrap());
        let Some(text) = sources
            .iter()
            .find_map(|dir| std::fs::read_to_string(dir.join(format!("{name}-{release}/Cargo.toml"))).ok())
        else {
            continue;
        };
        read += 1;
        let parsed: toml::Table = text.parse().unwrap();
        if let Some(needed) = parsed.get("package").and_then(|p| p.get("rust-version")).and_then(|v| v.as_str())
            && version(needed) > highest.0
        {
            highest = (version(needed), name.to_owned());
        }
    }
    assert!(read > 50, "the locked packages' sources were found ({read})");
    let mut needed = highest.0.clone();
    needed.truncate(2);
    assert_eq!(version(&ours), needed, "rust-version {ours}, but {} needs {:?}", highest.1, highest.0);
}

/// A PostgreSQL server that refuses the connection is named as such at once, not after the
/// pool's timeout as "pool timed out".
#[test]
fn a_refused_connection_says_so() {
    let dir = project(&[("cascades/t.toml", "[models.t]\ntable = \"t\"\n")]);
    // Port 1 on the loopback: nothing listens there.
    let output = cascade(dir.path())
        .args(["plan", "t", "--id", "1", "--database-url", "postgres://app:s3cret@127.0.0.1:1/app"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot connect to `postgres://app:***@127.0.0.1:1/app`"), "{stderr}");
    assert!(stderr.to_lowercase().contains("connection refused"), "{stderr}");
    assert!(!stderr.contains("s3cret") && !stderr.contains("timed out"), "{stderr}");
}

/// Passwords holding what a URL cannot hold unencoded (`?`, `/`, `@`), or in a URL that does
/// not parse at all, stay out of every message about it.
#[test]
fn a_password_a_url_cannot_hold_is_redacted_in_connection_errors() {
    let dir = project(&[("cascades/t.toml", "[models.t]\ntable = \"t\"\n")]);
    for (url, password) in [
        ("postgres://app:p?a/ss@127.0.0.1:1/app", "p?a/ss"),
        ("postgres://app:s3/cr@t?x@127.0.0.1:1/app", "s3/cr@t?x"),
        ("postgres:app:s3cr3t-pw@127.0.0.1:1/app", "s3cr3t-pw"),
    ] {
        let output = cascade(dir.path()).args(["plan", "t", "--id", "1", "--database-url", url]).output().unwrap();
        let shown = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(2), "{shown}");
        assert!(shown.contains("app:***@"), "{url}: {shown}");
        assert!(!shown.contains(password), "{url}: {shown}");
    }
}

/// The subcommands `cascade PATH... --help` lists (its `Commands:` section, without `help`).
fn subcommands(path: &[String]) -> Vec<String> {
    let dir = project(&[]);
    let output = cascade(dir.path()).args(path).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    let Some((_, commands)) = help.split_once("\nCommands:\n") else { return Vec::new() };
    commands
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect()
}

/// `CASCADE_DATABASE_URL` holds a password: no help of any command shows the variable's value.
#[test]
fn no_help_shows_the_database_url_from_the_environment() {
    let dir = project(&[]);
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    let mut checked = 0;
    while let Some(path) = paths.pop() {
        for flag in ["--help", "-h"] {
            let output = cascade(dir.path())
                .env("CASCADE_DATABASE_URL", "postgres://u:SECRET@h/db")
                .args(&path)
                .arg(flag)
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            assert!(output.status.success(), "cascade {path:?} {flag}: {stderr}");
            assert!(stdout.contains("CASCADE_DATABASE_URL"), "cascade {path:?} {flag} names the variable: {stdout}");
            assert!(!stdout.contains("SECRET") && !stderr.contains("SECRET"), "cascade {path:?} {flag}: {stdout}");
        }
        checked += 1;
        for name in subcommands(&path) {
            paths.push(path.iter().cloned().chain([name]).collect());
        }
    }
    // Every top-level command and the nested ones (`option set`, `outbox drain`, ...).
    assert!(checked > 25, "{checked} commands checked");
}

/// The pages a man page refers to (`cascade\-plan(1)` in roff), by file name (`cascade-plan.1`).
fn referenced_pages(page: &str) -> Vec<String> {
    let text = page.replace("\\-", "-");
    text.match_indices("(1)")
        .filter_map(|(end, _)| {
            let start = text[..end].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).map_or(0, |i| i + 1);
            let name = &text[start..end];
            name.starts_with("cascade").then(|| format!("{name}.1"))
        })
        .collect()
}

/// `man --dir` writes every page the pages refer to, and its main page is the one `man` prints.
#[test]
fn every_man_page_the_pages_refer_to_is_written() {
    let dir = project(&[]);
    let output = cascade(dir.path()).args(["man", "--dir", "man/man1"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pages = dir.path().join("man/man1");
    let main = std::fs::read_to_string(pages.join("cascade.1")).unwrap();
    let printed = cascade(dir.path()).arg("man").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&printed.stdout), main, "`cascade man` prints the main page");
    let mut referenced = 0;
    for entry in std::fs::read_dir(&pages).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        for name in referenced_pages(&page) {
            assert!(pages.join(&name).is_file(), "{} refers to {name}, which is not written", path.display());
            referenced += 1;
        }
    }
    assert!(referenced_pages(&main).contains(&"cascade-validate.1".to_owned()), "{main}");
    assert!(pages.join("cascade-option-set.1").is_file() && referenced > 20, "{referenced} references");
}
