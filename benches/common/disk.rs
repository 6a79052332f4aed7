//! The page cache, written out before a measured run.

/// Writes every dirty page of the machine to disk (`sync`). A throwaway PostgreSQL cluster runs
/// with `fsync = off`: a freshly built or copied database then stays dirty in the page cache,
/// hundreds of MiB, and the kernel wrote it back in the middle of a later measured run, stalling
/// that run's writes (transactions of 110-370 ms that no run on a quiet cache showed).
pub fn sync_page_cache() {
    match std::process::Command::new("sync").status() {
        Ok(status) if status.success() => {}
        failed => eprintln!("warning: `sync` failed ({failed:?})"),
    }
}
