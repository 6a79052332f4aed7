//! The database servers the benches use: the test server of `CASCADE_TEST_POSTGRES_URL` (or
//! `CASCADE_TEST_MYSQL_URL`), or a throwaway one of `scripts/pg-start` (`scripts/mariadb-start`).

use std::path::Path;
use std::process::Command;

/// A server: the one of the environment variable, or one started by a script and stopped (also
/// on a panic) when this is dropped.
pub struct Server {
    pub url: String,
    /// The script that stops it, when the bench started it.
    stop: Option<&'static str>,
}

impl Server {
    /// PostgreSQL.
    pub fn postgres() -> Option<Self> {
        Self::start("PostgreSQL", "CASCADE_TEST_POSTGRES_URL", "scripts/pg-start", "scripts/pg-stop")
    }

    /// MariaDB.
    #[allow(dead_code)] // Only the deletion bench runs on MariaDB.
    pub fn mariadb() -> Option<Self> {
        Self::start("MariaDB", "CASCADE_TEST_MYSQL_URL", "scripts/mariadb-start", "scripts/mariadb-stop")
    }

    fn start(what: &str, variable: &str, start: &str, stop: &'static str) -> Option<Self> {
        if let Ok(url) = std::env::var(variable) {
            return Some(Self { url, stop: None });
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(start);
        match Command::new(&script).output() {
            Ok(output) if output.status.success() => {
                let url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                Some(Self { url, stop: Some(stop) })
            }
            Ok(output) => {
                eprintln!("warning: no {what} ({start}: {})", String::from_utf8_lossy(&output.stderr));
                None
            }
            Err(error) => {
                eprintln!("warning: no {what} ({start}: {error})");
                None
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(stop);
            if let Err(error) = Command::new(script).arg(&self.url).status() {
                eprintln!("warning: could not stop the server at {}: {error}", self.url);
            }
        }
    }
}

/// `url` with its database replaced by `database` (the query string, such as `?host=`, kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").expect("a database URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    let mut result = format!("{scheme}://{authority}/{database}");
    if let Some(query) = query {
        result = format!("{result}?{query}");
    }
    result
}
