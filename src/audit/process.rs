//! The process that records a run in `cascade_run`: the host it runs on, its process id, and
//! what tells that process apart from any other (the boot and PID namespace it runs in, and when
//! it started), so that a later run on the same host tells at once that the process died
//! (killed, crashed) instead of waiting for its heartbeat to go stale. From another host, another
//! PID namespace (a container) or a system without `/proc`, only the heartbeat tells.

use std::sync::OnceLock;

/// This host's name.
pub(crate) fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(host_name)
}

/// This process's id.
pub(crate) fn this_pid() -> i64 {
    i64::from(std::process::id())
}

/// What tells this process apart from any other: `boot B pidns N started T`, or `None` where
/// the system does not say.
pub(crate) fn this_process() -> Option<&'static str> {
    static PROCESS: OnceLock<Option<String>> = OnceLock::new();
    PROCESS.get_or_init(|| process(this_pid())).as_deref()
}

/// Whether the process that recorded a run (`host`, `pid`, `process` as [`this_process`] wrote
/// them) is known to be gone: it ran on this host, in this boot and PID namespace, and no
/// process with that id and start time is alive any more (a zombie counts as gone). Anything
/// else is never known to be gone here.
pub(crate) fn is_gone(host: Option<&str>, pid: Option<i64>, recorded: Option<&str>) -> bool {
    let (Some(host), Some(pid), Some(recorded), Some(ours)) = (host, pid, recorded, this_process()) else {
        return false;
    };
    host == this_host() && context(recorded) == context(ours) && process(pid).as_deref() != Some(recorded)
}

/// Whether a run recorded as `host`, `pid` and `recorded` was recorded by this very process.
pub(crate) fn is_this(host: Option<&str>, pid: Option<i64>, recorded: Option<&str>) -> bool {
    host == Some(this_host()) && pid == Some(this_pid()) && recorded.is_some() && recorded == this_process()
}

/// Whether a run recorded as `host` and `recorded` ran in this host's boot and PID namespace.
pub(crate) fn is_local(host: Option<&str>, recorded: Option<&str>) -> bool {
    match (host, recorded, this_process()) {
        (Some(host), Some(recorded), Some(ours)) => host == this_host() && context(recorded) == context(ours),
        _ => false,
    }
}

/// The boot and PID namespace part of a process's description.
fn context(process: &str) -> &str {
    process.split(" started ").next().unwrap_or(process)
}

/// The description of the live process `pid` of this PID namespace, or `None` when there is
/// none (or it is a zombie) or the system does not say.
fn process(pid: i64) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: the state (field 3), ..., the start time (field 22).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let (state, started) = (*fields.first()?, *fields.get(19)?);
    if matches!(state, "Z" | "X") {
        return None;
    }
    Some(format!("boot {} pidns {} started {started}", boot.trim(), namespace.display()))
}

fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buffer = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
        if unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } == 0 {
            let end = buffer.iter().position(|byte| *byte == 0).unwrap_or(buffer.len());
            return String::from_utf8_lossy(&buffer[..end]).into_owned();
        }
    }
    std::env::var("COMPUTERNAME").unwrap_or_else(|_| "unknown host".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_gone_and_an_exited_one_or_a_zombie_is() {
        let (host, ours) = (Some(this_host()), this_process());
        assert!(ours.is_some(), "this system describes its processes");
        assert!(!is_gone(host, Some(this_pid()), ours));

        let mut child = std::process::Command::new("sleep").arg("60").spawn().expect("start `sleep`");
        let pid = i64::from(child.id());
        let recorded = process(pid);
        assert!(!is_gone(host, Some(pid), recorded.as_deref()), "a live process");
        let from_before = recorded.as_deref().map(|r| format!("{} started 1", context(r)));
        assert!(is_gone(host, Some(pid), from_before.as_deref()), "the same id, started at another time");
        child.kill().expect("kill `sleep`");
        wait_for(|| process(pid).is_none(), "a killed child not yet reaped is a zombie: gone");
        assert!(is_gone(host, Some(pid), recorded.as_deref()));
        child.wait().expect("reap `sleep`");
        assert!(is_gone(host, Some(pid), recorded.as_deref()), "reaped");

        assert!(!is_gone(Some("another host"), Some(pid), recorded.as_deref()), "another host's");
        let elsewhere = recorded.as_deref().map(|r| r.replacen("pidns ", "pidns other:", 1));
        assert!(!is_gone(host, Some(pid), elsewhere.as_deref()), "another PID namespace's");
        assert!(!is_gone(host, Some(pid), None), "recorded without its process");
    }

    /// Polls `done` (the kernel turns a killed process into a zombie asynchronously).
    fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out: {what}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
