//! The PostgreSQL server the benches use: `CASCADE_TEST_POSTGRES_URL`, or a throwaway cluster of
//! `scripts/pg-start`.

use std::path::Path;
use std::process::Command;

/// A PostgreSQL server: `CASCADE_TEST_POSTGRES_URL`, or one started by `scripts/pg-start` and
/// stopped (also on a panic) when this is dropped.
pub struct PgServer {
    pub url: String,
    started: bool,
}

impl PgServer {
    pub fn start() -> Option<Self> {
        if let Ok(url) = std::env::var("CASCADE_TEST_POSTGRES_URL") {
            return Some(Self { url, started: false });
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-start");
        match Command::new(&script).output() {
            Ok(output) if output.status.success() => {
                let url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                Some(Self { url, started: true })
            }
            Ok(output) => {
                eprintln!("warning: no PostgreSQL (scripts/pg-start: {})", String::from_utf8_lossy(&output.stderr));
                None
            }
            Err(error) => {
                eprintln!("warning: no PostgreSQL (scripts/pg-start: {error})");
                None
            }
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.started {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-stop");
            if let Err(error) = Command::new(script).arg(&self.url).status() {
                eprintln!("warning: could not stop PostgreSQL at {}: {error}", self.url);
            }
        }
    }
}

/// `url` with its database replaced by `database` (the query string, such as `?host=`, kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").expect("a postgres:// URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    let mut result = format!("{scheme}://{authority}/{database}");
    if let Some(query) = query {
        result = format!("{result}?{query}");
    }
    result
}
