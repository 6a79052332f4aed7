//! The process that records a run in `cascade_run`: the host it runs on and its process id, so
//! that a later run on the same host tells at once that the process died (killed, crashed)
//! instead of waiting for its heartbeat to go stale. From another host only the heartbeat tells.

use std::sync::OnceLock;

/// This host while it stays up: its name and, where the system has one, its boot id (so a
/// process id from before a reboot is never taken for a process of this boot).
pub(super) fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let name = host_name();
        match std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
            Ok(boot) => format!("{name} boot {}", boot.trim()),
            Err(_) => name,
        }
    })
}

/// This process's id.
pub(super) fn this_pid() -> i64 {
    i64::from(std::process::id())
}

/// Whether the process `pid` that recorded a run on `host` is known to be gone: it ran on this
/// host and no such process exists any more. A run of another host (or of a release that did not
/// record its process) is never known to be gone here.
pub(super) fn is_gone(host: Option<&str>, pid: Option<i64>) -> bool {
    match (host, pid) {
        (Some(host), Some(pid)) if host == this_host() => !process_exists(pid),
        _ => false,
    }
}

#[cfg(unix)]
fn process_exists(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // Signal 0 only asks whether the process exists; EPERM means it does, as another user's.
    // SAFETY: kill with signal 0 sends nothing and touches no memory.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

#[cfg(not(unix))]
fn process_exists(_pid: i64) -> bool {
    true
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
    fn this_process_is_not_gone_and_an_exited_one_is() {
        assert!(!is_gone(Some(this_host()), Some(this_pid())));
        let mut child = std::process::Command::new("true").spawn().expect("start `true`");
        let pid = i64::from(child.id());
        child.wait().expect("wait for `true`");
        assert!(is_gone(Some(this_host()), Some(pid)), "an exited and reaped process is gone");
        assert!(!is_gone(Some("another host"), Some(pid)), "another host's process is never known to be gone");
        assert!(!is_gone(None, None), "a run recorded without its process");
    }
}
