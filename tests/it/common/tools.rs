//! Programs from outside the project that some tests drive for real (`pre-commit`, `chromium`):
//! a missing one skips such a test locally, and fails it in CI (`CI` set), where `.ci/run`
//! installs them.

use std::path::{Path, PathBuf};

/// The path of `program` on `PATH`; `None` (the test prints that it skips) when it is missing
/// outside CI. In CI a missing program fails the test: `install` says how `.ci/run` gets it.
pub fn required(program: &str, install: &str) -> Option<PathBuf> {
    if let Some(found) = on_path(program) {
        return Some(found);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but `{program}` is not on PATH: .ci/run installs it ({install})");
    }
    eprintln!("`{program}` is not on PATH: test skipped ({install})");
    None
}

/// `program` as found in a directory of `PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}
