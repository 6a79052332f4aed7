//! No secret the process knows is logged, stored or printed, in any form it may come back in:
//! each test plants secrets of one kind (a database URL's password and libpq's secret
//! parameters, a webhook URL's password and query token, a header's `env:` value, a command
//! sink's variable, a `[settings] database_url` password) and greps every output, both log
//! formats, the tool's tables and the rendered files for every form of each: as written,
//! lower- and upper-cased, percent-encoded and in base64.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Output;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::outbox::{Row, project_config, write_rows};
use common::{cascade, dump, postgres_database, project};

/// Every form a secret may come back in.
fn forms(secret: &str) -> Vec<String> {
    let encoded: String = secret
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![
        secret.to_owned(),
        secret.to_lowercase(),
        secret.to_uppercase(),
        encoded.clone(),
        encoded.to_lowercase(),
        STANDARD.encode(secret),
    ]
}

/// Fails when `text` (named `what`) holds any form of any of `secrets`.
fn assert_no_secret(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        for form in forms(secret) {
            assert!(!text.contains(&form), "{what} shows the secret {secret:?} as {form:?}:\n{text}");
        }
    }
}

fn all_output(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Every row of every table, the tool's own included, as JSON text.
fn tool_tables(url: &str) -> String {
    format!("{:#?}", dump(url))
}

/// A stand-in server (a webhook, GitHub's API) that answers every request with 500 and a body
/// echoing the request's head back as it is, lower-cased and percent-encoded (as servers and
/// proxies do in their errors), and the credential of its `Authorization` header decoded from
/// base64.
fn echoing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut head, mut length) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let basic = head
                .lines()
                .find_map(|line| line.strip_prefix("authorization: Basic "))
                .and_then(|credential| STANDARD.decode(credential.trim()).ok())
                .map(|decoded| String::from_utf8_lossy(&decoded).into_owned())
                .unwrap_or_default();
            let encoded: String = head.bytes().map(|b| format!("%{b:02x}")).collect();
            let answer = format!("bad request:\n{head}\n{}\n{encoded}\ncredential {basic}\n", head.to_lowercase());
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    format!("http://{address}")
}

/// A drain through `sinks` (the TOML of sink `out`) that fails, then `outbox stats`: neither log
/// format, nor the stats, nor the tool's tables show any of `secrets`. `env` is set for every
/// command.
fn drain_shows_no_secret(sinks: &str, env: &[(&str, &str)], secrets: &[&str], failure: &str) {
    let dir = project(&[("cascades/cascade.toml", &project_config(&["project_update"], "out", sinks))]);
    let url = format!("sqlite://{}", dir.path().join("app.db").display());
    std::fs::File::create(dir.path().join("app.db")).unwrap();
    write_rows(
        &url,
        &[Row { scope: "organization", shard: Some("7"), category: "project_update", object: "1".into() }],
    );
    let run = |args: &[&str]| {
        let mut command = cascade(dir.path());
        command.args(["--database-url", &url]).args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    };
    for log_format in ["text", "json"] {
        let drained = run(&["-vv", "--log-format", log_format, "outbox", "drain", "--once"]);
        assert_no_secret(&format!("drain ({log_format} logs)"), &all_output(&drained), secrets);
    }
    for format in ["human", "json"] {
        let stats = run(&["outbox", "stats", "--format", format]);
        let shown = all_output(&stats);
        assert!(shown.contains(failure), "the stats show the failure:\n{shown}");
        assert_no_secret(&format!("outbox stats ({format})"), &shown, secrets);
    }
    let stored = tool_tables(&url);
    assert!(stored.contains("***"), "the stored error held a secret, redacted: {stored}");
    assert_no_secret("the tool's tables", &stored, secrets);
}

#[test]
fn a_webhook_echoing_its_request_leaks_no_token_password_or_header() {
    let base = echoing_server();
    let (password, token, header) = ("Hook-Pass-4411", "Acc3ss-T0ken-9Zq", "Hdr-Secret-0077");
    let sinks = format!(
        "[outbox.sinks.out]\nurl = \"http://hook:{password}@{}/in?access_token={token}&mode=x\"\n\
         headers = {{ X-Api-Key = \"env:HOOK_KEY\" }}\n",
        base.trim_start_matches("http://")
    );
    drain_shows_no_secret(&sinks, &[("HOOK_KEY", header)], &[password, token, header], "HTTP 500");
}

#[test]
fn a_command_sink_printing_its_variables_leaks_none_of_them() {
    let token = "Cmd-Tok3n-Zz81";
    let script = "t=$SINK_TOKEN; echo \"token $t\" >&2; echo \"lower $(echo $t | tr A-Z a-z)\" >&2; \
                  echo \"b64 $(printf %s $t | base64)\" >&2; exit 3";
    let sinks = format!("[outbox.sinks.out]\ncommand = [\"sh\", \"-c\", {script:?}]\nenv = [\"SINK_TOKEN\"]\n");
    drain_shows_no_secret(&sinks, &[("SINK_TOKEN", token)], &[token], "exit");
}

/// A config whose `[settings] database_url` holds a password, with an error on the same line:
/// a config that parses (the password known once the settings are read) and one that does not.
const PARSED: &str = "settings = { database_url = \"postgres://app:Cfg-Pw-3141@db/app\", per_row_chunk_size = 0 }\n\
                      [models.org]\ntable = \"org\"\n";
const UNPARSED: &str = "[settings]\ndatabase_url = \"postgres://app:Cfg-Pw-3141@db/app\" oops\n";

#[test]
fn no_snippet_of_validate_plan_delete_or_diff_quotes_a_settings_password() {
    for config in [PARSED, UNPARSED] {
        let dir =
            project(&[("cascades/cascade.toml", config), ("base/cascade.toml", "[models.org]\ntable = \"org\"\n")]);
        let commands: [&[&str]; 4] =
            [&["validate"], &["plan", "org"], &["delete", "org", "1"], &["diff", "--base", "base"]];
        for args in commands {
            let output = cascade(dir.path()).args(args).output().unwrap();
            let shown = all_output(&output);
            assert!(shown.contains("postgres://app:"), "{args:?} shows the line:\n{shown}");
            assert_no_secret(&format!("{args:?}"), &shown, &["Cfg-Pw-3141"]);
        }
        // The rendered pages, whichever way the config went.
        for args in [&["diff", "--base", "base", "--format", "html"][..], &["plan", "org", "--format", "html"]] {
            let output = cascade(dir.path()).args(args).output().unwrap();
            assert_no_secret(&format!("{args:?}"), &all_output(&output), &["Cfg-Pw-3141"]);
        }
    }
    // A diff whose two sides differ in the URL's password says so, in every form, without either.
    let head = PARSED.replace("per_row_chunk_size = 0", "per_row_chunk_size = 5");
    let base = head.replace("Cfg-Pw-3141", "Old-Pw-2718");
    let dir = project(&[("cascades/cascade.toml", &head), ("base/cascade.toml", &base)]);
    for format in ["human", "markdown", "json", "github", "html"] {
        let output = cascade(dir.path()).args(["diff", "--base", "base", "--format", format]).output().unwrap();
        let shown = all_output(&output);
        assert!(output.status.success(), "{format}: {shown}");
        assert_no_secret(&format!("diff ({format})"), &shown, &["Cfg-Pw-3141", "Old-Pw-2718"]);
    }
}

/// libpq's `sslpassword` and `passfile`, which the PostgreSQL driver does not know and warns
/// about with their values, and the URL's password: in neither log format, at any verbosity,
/// nor in the run recorded.
#[test]
fn a_postgres_url_s_secret_parameters_reach_no_log() {
    let Some(url) = postgres_database("CREATE TABLE org (id BIGINT PRIMARY KEY); INSERT INTO org VALUES (1);") else {
        return;
    };
    let (password, ssl_password, passfile) = ("Url-Pw-2718", "Ssl-Key-Pw-1618", "/tmp/Pass-File-1414");
    let with_secrets = url.replacen("postgres://postgres@", &format!("postgres://postgres:{password}@"), 1)
        + &format!("&sslpassword={ssl_password}&passfile={passfile}");
    let dir = project(&[("cascades/cascade.toml", "[models.org]\ntable = \"org\"\n")]);
    for log_format in ["text", "json"] {
        for args in [&["plan", "org", "--id", "1"][..], &["delete", "org", "1", "--confirm"]] {
            let output = cascade(dir.path())
                .args(["-vv", "--log-format", log_format, "--database-url", &with_secrets])
                .args(args)
                .output()
                .unwrap();
            assert!(output.status.success(), "{args:?}: {}", all_output(&output));
            assert_no_secret(
                &format!("{args:?} ({log_format})"),
                &all_output(&output),
                &[password, ssl_password, passfile],
            );
        }
    }
    assert_no_secret("the tool's tables", &tool_tables(&url), &[password, ssl_password, passfile]);
}

/// `diff --github-comment` against an API that echoes the request (its `Authorization: Bearer`
/// header) in its errors: the token is in no form in the output.
#[test]
fn an_api_echoing_the_github_token_does_not_make_diff_print_it() {
    let token = "ghs_Echo3dT0ken9";
    let dir = project(&[
        ("cascades/cascade.toml", "[models.org]\ntable = \"org\"\n"),
        ("base/cascade.toml", "[models.org]\ntable = \"org\"\nchunk_size = 7\n"),
        ("event.json", r#"{"pull_request": {"number": 7}}"#),
    ]);
    let output = cascade(dir.path())
        .args(["diff", "--base", "base", "--github-comment"])
        .env("GITHUB_TOKEN", token)
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_EVENT_PATH", dir.path().join("event.json"))
        .env("GITHUB_API_URL", echoing_server())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let shown = all_output(&output);
    assert!(shown.contains("500"), "the API's error is shown: {shown}");
    assert_no_secret("diff --github-comment", &shown, &[token]);
}
