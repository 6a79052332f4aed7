//! A PostgreSQL cluster of the test's own, which it may stop and start again (the shared test
//! server must stay up for the others): made with `initdb` in a temporary directory and reached
//! on a Unix socket there, as `scripts/pg-start` makes the shared one.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

pub struct Cluster {
    dir: TempDir,
    bin: PathBuf,
    /// `runuser -u postgres --` when running as root (PostgreSQL refuses to run as root).
    as_owner: Vec<String>,
}

impl Cluster {
    /// A new cluster, started; `None` where PostgreSQL tests are skipped (no test server is
    /// configured, outside CI: see `databases::postgres_server`).
    pub fn start() -> Option<Self> {
        super::databases::postgres_server()?;
        let bin = server_binaries();
        let dir = tempfile::Builder::new().prefix("cascade-cluster").tempdir_in("/tmp").expect("a temporary directory");
        let mut as_owner = Vec::new();
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } == 0 {
            if !Command::new("id").arg("postgres").output().unwrap().status.success() {
                run(Command::new("useradd").args(["--system", "--no-create-home", "postgres"]));
            }
            run(Command::new("chown").arg("postgres").arg(dir.path()));
            as_owner = ["runuser", "-u", "postgres", "--"].map(String::from).to_vec();
        }
        let cluster = Self { dir, bin, as_owner };
        let data = cluster.data();
        cluster.run_tool("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]);
        cluster.start_server();
        Some(cluster)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// The URL of the cluster's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@localhost/postgres?host={}", self.dir.path().display())
    }

    /// A new database on this cluster with `ddl` applied; its URL.
    pub fn database(&self, ddl: &str) -> String {
        super::databases::postgres_database_on(&self.url(), ddl)
    }

    /// Starts the server and waits until it accepts connections.
    pub fn start_server(&self) {
        let options =
            format!("-k {} -c listen_addresses='' -c fsync=off -c max_connections=100", self.dir.path().display());
        let log = self.dir.path().join("server.log").display().to_string();
        self.run_tool("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "-o", &options, "start"]);
    }

    /// Stops the server at once, as a crash would (`pg_ctl -m immediate`): connections are cut,
    /// and the next start recovers from the write-ahead log. Commits stay committed (the cluster
    /// runs with `synchronous_commit` on).
    pub fn crash(&self) {
        self.run_tool("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
    }

    fn run_tool(&self, tool: &str, args: &[&str]) {
        run(self.tool(tool).args(args));
    }

    /// `tool` of the server binaries, run as the cluster's owner.
    fn tool(&self, tool: &str) -> Command {
        match self.as_owner.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(self.bin.join(tool));
                command
            }
            None => Command::new(self.bin.join(tool)),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.tool("pg_ctl").args(["-D", &self.data(), "-m", "immediate", "-w", "stop"]).output();
    }
}

/// Runs `command`, which must succeed.
fn run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Where `initdb` and `pg_ctl` are: on the PATH, else in Debian's versioned directory.
fn server_binaries() -> PathBuf {
    let on_path =
        std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").is_file()));
    on_path
        .or_else(|| {
            let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .map(|entry| entry.unwrap().path().join("bin"))
                .filter(|bin| Path::new(bin).join("initdb").is_file())
                .collect();
            versions.sort();
            versions.pop()
        })
        .expect("initdb: install the PostgreSQL server binaries")
}
