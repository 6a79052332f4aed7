//! Running the built `cascade` binary as a whole process: its wall time, its output and its peak
//! RSS.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a process ended and what it printed.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From spawning the process to its exit.
    pub wall: Duration,
    /// The process's own `VmHWM`, in KiB.
    pub peak_rss_kib: u64,
}

/// Runs `command` to its end, its stdout and stderr captured. The peak RSS is the process's own
/// `VmHWM`, read every 2 ms while it runs (a peak in its last 2 ms can be missed): `wait4`'s
/// `ru_maxrss` would also count the bench's pages the child had before its `exec`. The wall time
/// ends when a thread waiting on the process sees it exit, not at the next poll.
pub fn run_measured(command: &mut Command) -> Finished {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let status_file = format!("/proc/{}/status", child.id());
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        (status, started.elapsed())
    });
    let mut peak_rss_kib = 0;
    while !waiter.is_finished() {
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        let high_water = status.lines().find_map(|line| line.strip_prefix("VmHWM:"));
        if let Some(kib) = high_water.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()) {
            peak_rss_kib = kib;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let (status, wall) = waiter.join().expect("the waiting thread");
    let status = status.expect("wait for the process");
    let text = |reader: std::thread::JoinHandle<Vec<u8>>| String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    Finished { status, stdout: text(stdout), stderr: text(stderr), wall, peak_rss_kib }
}

/// Reads `pipe` to its end on a thread of its own, so that a full pipe never stops the process.
fn read_all(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    let mut pipe = pipe.expect("a piped output");
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}
