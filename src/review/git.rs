//! A config as a git revision has it (`cascade diff --base-rev REV`), read with `git ls-tree`
//! and `git cat-file`: no checkout, the working tree untouched.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::diagnostic::Sources;
use crate::diagnostic::text::shown;

/// Why a revision's config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The config is not inside a git repository.
    #[error("`{path}` is not inside a git repository: {reason}")]
    NotARepository {
        /// The config path.
        path: PathBuf,
        /// What git said.
        reason: String,
    },
    /// The revision names no commit.
    #[error("`{}` is not a revision of this repository{}", shown(.revision), hint(.revision))]
    UnknownRevision {
        /// The revision as given.
        revision: String,
    },
    /// An empty revision (`--base-rev ''`, as an unset variable gives it).
    #[error("the revision is empty: give one such as `--base-rev origin/main`")]
    EmptyRevision,
    /// A revision that git would read as an option.
    #[error("`{}` is not a revision (it starts with `-`)", shown(.0))]
    NotARevision(String),
    /// git failed otherwise.
    #[error("`git {command}` failed: {reason}")]
    Failed {
        /// The git command.
        command: String,
        /// What git said.
        reason: String,
    },
}

fn hint(revision: &str) -> String {
    if revision.starts_with("origin/") {
        " (fetch it first: `git fetch origin`, with `fetch-depth: 0` in actions/checkout)".to_owned()
    } else {
        String::new()
    }
}

/// The `*.toml` files of the config at `config` (a directory, or one file) as `revision` has
/// them, named `REV:path`; `None` when the revision has no such path (the config is new).
pub fn sources_at(revision: &str, config: &Path) -> Result<Option<Sources>, GitError> {
    if revision.is_empty() {
        return Err(GitError::EmptyRevision);
    }
    if revision.starts_with('-') {
        return Err(GitError::NotARevision(revision.to_owned()));
    }
    let config = std::path::absolute(config).unwrap_or_else(|_| config.to_owned());
    let start = config.ancestors().find(|dir| dir.is_dir()).unwrap_or(Path::new("."));
    let top = git(start, &["rev-parse", "--show-toplevel"])
        .map_err(|reason| GitError::NotARepository { path: config.clone(), reason })?;
    let top = PathBuf::from(top.trim_end_matches(['\n', '\r']));
    let relative = relative_to(&config, &top).ok_or_else(|| GitError::NotARepository {
        path: config.clone(),
        reason: format!("it is outside the repository at `{}`", top.display()),
    })?;
    let commit =
        git(&top, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{revision}^{{commit}}")])
            .map_err(|_| GitError::UnknownRevision { revision: revision.to_owned() })?;
    let commit = commit.trim();
    let listed = git(&top, &["ls-tree", "-r", "-z", "--name-only", commit, "--", &relative])
        .map_err(|reason| GitError::Failed { command: format!("ls-tree {revision}"), reason })?;
    let is_file = |path: &str| path == relative;
    let files: Vec<&str> =
        listed.split('\0').filter(|path| !path.is_empty() && (is_file(path) || path.ends_with(".toml"))).collect();
    if files.is_empty() {
        return Ok(None);
    }
    let mut sources = Sources::default();
    for file in files {
        let text = git(&top, &["cat-file", "blob", &format!("{commit}:{file}")])
            .map_err(|reason| GitError::Failed { command: format!("cat-file {revision}:{file}"), reason })?;
        sources.add(format!("{revision}:{file}"), text);
    }
    Ok(Some(sources))
}

/// `path` relative to `top`, with `/` separators as git writes paths; both made canonical where
/// they exist, so a symlinked temporary directory still matches.
fn relative_to(path: &Path, top: &Path) -> Option<String> {
    let canonical = |path: &Path| {
        // The deepest existing ancestor is canonicalised; the rest is appended as given.
        let existing = path.ancestors().find(|p| p.exists())?;
        let rest = path.strip_prefix(existing).ok()?;
        Some(existing.canonicalize().ok()?.join(rest))
    };
    let (path, top) = (canonical(path)?, canonical(top)?);
    let relative = path.strip_prefix(&top).ok()?;
    let parts: Vec<String> =
        relative.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    Some(if parts.is_empty() { ".".to_owned() } else { parts.join("/") })
}

/// Runs git in `dir`; its standard output as text, or what it said on failure.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|error| format!("cannot run git: {error}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        return Err(if said.is_empty() { format!("git exited with {}", output.status) } else { said });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
