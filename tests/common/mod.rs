//! Helpers shared by the integration tests: the binary, run in a temporary project directory.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::Path;

use assert_cmd::Command;
use tempfile::TempDir;

/// The `cascade` binary, run inside `dir` with a clean environment for its settings.
pub fn cascade(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("cascade").expect("the cascade binary is built");
    command
        .current_dir(dir)
        .env_remove("CASCADE_DATABASE_URL")
        .env_remove("CASCADE_LOG")
        .env("NO_COLOR", "1");
    command
}

/// A temporary directory holding `files` (relative paths, parents created).
pub fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create directories");
        std::fs::write(path, text).expect("write a fixture file");
    }
    dir
}

/// The repository root, where `cascades/`, `schemas/` and the README live.
pub fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
