//! A `cascade` process running in the background, and the log events it writes, read from its
//! stderr as they come: the signals a test waits for (a committed chunk, a rate it read) instead
//! of sleeping and hoping.

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::DEADLINE;

/// What the engine logs once it has marked the roots in progress and recorded the run.
pub const DELETION_STARTED: &str = "deletion started";

/// What the engine logs after each committed chunk (with `model` and `rows`).
pub const CHUNK_COMMITTED: &str = "chunk committed";

/// What a command logs when Ctrl-C or SIGTERM reaches it.
pub const STOPPING: &str = "stopping after the current chunk or delivery";

/// What the engine logs when it reads a new value of a rate-limit option (with `option` and
/// `rows_per_second`).
pub const RATE_LIMIT_CHANGED: &str = "rate limit changed";

/// One log line of `--log-format json`.
#[derive(Debug)]
pub struct Event {
    /// When the process wrote it, by its clock.
    pub at: SystemTime,
    pub message: String,
    /// Its fields besides the message (`model`, `rows`, ...).
    pub fields: Value,
}

impl Event {
    /// The rows of a committed chunk.
    pub fn rows(&self) -> u64 {
        self.fields["rows"].as_u64().expect("a chunk event has rows")
    }
}

/// How the process ended.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    /// Every line it wrote to stderr.
    pub stderr: String,
}

pub struct Running {
    child: Child,
    events: Receiver<Event>,
    reader: Option<JoinHandle<Vec<String>>>,
}

impl Running {
    /// Starts `cascade ARGS` in `dir`, with the engine's debug events (one per committed chunk)
    /// logged as JSON lines.
    pub fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with(dir, args, &[])
    }

    /// [`Running::start`] with `variables` in its environment.
    pub fn start_with(dir: &Path, args: &[&str], variables: &[(&str, &str)]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("cascade"))
            .envs(variables.iter().copied())
            .current_dir(dir)
            .args(["--log-format", "json"])
            .args(args)
            .env_remove("CASCADE_DATABASE_URL")
            .env("CASCADE_LOG", "warn,cascade=debug")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cascade");
        let stderr = child.stderr.take().expect("a piped stderr");
        let (sender, events) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stderr).lines() {
                let line = line.expect("read cascade's stderr");
                if let Some(event) = parse(&line) {
                    // The test may have stopped listening; the lines are still kept.
                    let _ = sender.send(event);
                }
                lines.push(line);
            }
            lines
        });
        Self { child, events, reader: Some(reader) }
    }

    /// The next event logged with one of `messages`, or `None` when the process ended without
    /// one. Fails the test when neither happens by the deadline.
    fn next(&mut self, messages: &[&str]) -> Option<Event> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match self.events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) if messages.contains(&event.message.as_str()) => return Some(event),
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => panic!("no `{messages:?}` log line within {DEADLINE:?}"),
            }
        }
    }

    /// The next event logged with `message`; fails the test when the process ends first.
    pub fn expect(&mut self, message: &str) -> Event {
        self.expect_one_of(&[message])
    }

    /// The next event logged with one of `messages`; fails the test when the process ends first.
    pub fn expect_one_of(&mut self, messages: &[&str]) -> Event {
        match self.next(messages) {
            Some(event) => event,
            None => panic!("cascade ended without logging one of {messages:?}:\n{}", self.finish().stderr),
        }
    }

    /// Whether the process has ended.
    pub fn ended(&mut self) -> bool {
        self.child.try_wait().expect("check on cascade").is_some()
    }

    /// Sends SIGTERM, as a service manager does to stop it.
    pub fn terminate(&self) {
        let pid = i32::try_from(self.child.id()).expect("a pid");
        // SAFETY: signalling a child process this test started and has not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "send SIGTERM");
    }

    /// kill -9, and waits for it; fails the test when the process had already ended by itself
    /// (the kill came too late to interrupt anything).
    pub fn kill(mut self) {
        self.child.kill().expect("send SIGKILL");
        let status = self.child.wait().expect("wait for cascade");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "it had ended before the kill: {status}");
    }

    /// Waits for the process to end by itself.
    pub fn finish(&mut self) -> Finished {
        let mut stdout = String::new();
        if let Some(mut pipe) = self.child.stdout.take() {
            pipe.read_to_string(&mut stdout).expect("read cascade's stdout");
        }
        let status = self.child.wait().expect("wait for cascade");
        let stderr = self.reader.take().map(|reader| reader.join().expect("the stderr reader").join("\n"));
        Finished { status, stdout, stderr: stderr.unwrap_or_default() }
    }
}

impl Drop for Running {
    /// A test that fails while the process runs leaves nothing behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A JSON log line as an event; `None` for any other line (an error printed at the end).
fn parse(line: &str) -> Option<Event> {
    let Value::Object(mut line) = serde_json::from_str(line).ok()? else { return None };
    let at = humantime::parse_rfc3339_weak(line.get("timestamp")?.as_str()?).ok()?;
    let Value::Object(mut fields) = line.remove("fields")? else { return None };
    let message = fields.remove("message")?.as_str()?.to_owned();
    Some(Event { at, message, fields: Value::Object(fields) })
}
