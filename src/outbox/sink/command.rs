//! A command sink: the program reads the batch as a JSON array on stdin and exits 0 when it is
//! delivered. It runs with a minimal environment, in its own process group, killed whole on a
//! timeout.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::{DeliveryError, Message, OUTPUT_KEPT, batch_key, tail};

/// The drainer's environment variables every command sink receives, besides its `env` list.
const PASSED_TO_EVERY_COMMAND: &[&str] = &["PATH", "HOME", "LANG"];

#[derive(Debug)]
pub(super) struct CommandSink {
    program: String,
    arguments: Vec<String>,
    /// The names of the drainer's environment variables the program receives.
    passed: Vec<String>,
}

impl CommandSink {
    pub(super) fn new(program: &str, arguments: &[String], passed: Vec<String>) -> Self {
        Self { program: program.to_owned(), arguments: arguments.to_vec(), passed }
    }

    pub(super) async fn deliver(
        &self,
        sink: &str,
        messages: &[Message],
        timeout: Duration,
    ) -> Result<(), DeliveryError> {
        let body = serde_json::to_vec(messages).map_err(|error| DeliveryError(error.to_string()))?;
        let shard = messages.first().and_then(|m| m.shard_identifier.clone()).unwrap_or_default();
        let scope = messages.first().map(|m| m.scope.clone()).unwrap_or_default();
        let mut command = tokio::process::Command::new(&self.program);
        // A minimal environment: the drainer's holds database passwords and the secrets behind
        // `env:` settings, which are no business of the sink's.
        command.args(&self.arguments).env_clear();
        for variable in PASSED_TO_EVERY_COMMAND.iter().copied().chain(self.passed.iter().map(String::as_str)) {
            if let Some(value) = std::env::var_os(variable) {
                command.env(variable, value);
            }
        }
        command
            .env("CASCADE_OUTBOX_SINK", sink)
            .env("CASCADE_OUTBOX_SCOPE", scope)
            .env("CASCADE_OUTBOX_SHARD", shard)
            .env("CASCADE_OUTBOX_IDEMPOTENCY_KEY", batch_key(messages));
        run_command(command, &body, timeout).await
    }
}

/// Runs the sink's program with `body` on stdin; exit 0 within `timeout`, after taking its whole
/// input, is a delivery. The program's exit decides, not the end of its output or input (a helper
/// it leaves behind may hold stderr or stdin open): once it has exited, what it has not taken of
/// its input it never will, and the delivery fails at once instead of waiting for the timeout. On
/// a timeout its whole process group is killed, so a script's children go too.
async fn run_command(
    mut command: tokio::process::Command,
    body: &[u8],
    timeout: Duration,
) -> Result<(), DeliveryError> {
    let program = command.as_std().get_program().to_string_lossy().into_owned();
    command.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true).process_group(0);
    let mut child = command.spawn().map_err(|error| DeliveryError(format!("cannot start `{program}`: {error}")))?;
    let group = child.id().and_then(|pid| i32::try_from(pid).ok());
    let stdin = child.stdin.take();
    // Whether the whole body went into the pipe; the pipe closes when this ends, so the program
    // sees the end of its input. A closed pipe (the program stopped reading) is `false`.
    let feed = async move {
        match stdin {
            Some(mut stdin) => stdin.write_all(body).await.is_ok(),
            None => false,
        }
    };
    let stderr = child.stderr.take().map(|stderr| tokio::spawn(read_kept(stderr)));
    let ran = tokio::time::timeout(timeout, async {
        let mut feed = std::pin::pin!(feed);
        let mut fed = None;
        loop {
            tokio::select! {
                biased;
                whole = &mut feed, if fed.is_none() => fed = Some(whole),
                // Unwritten bytes are bytes the program never read, whoever holds the pipe now.
                status = child.wait() => break (fed.unwrap_or(false), status),
            }
        }
    })
    .await;
    let outcome = match ran {
        Ok((fed, status)) => {
            status.map_err(|error| DeliveryError(format!("`{program}` failed: {error}"))).map(|status| (fed, status))
        }
        Err(_) => {
            if let Some(group) = group {
                // SAFETY: signals the process group this drainer started for the sink, before the
                // child is reaped, so the id cannot have been reused.
                unsafe { libc::kill(-group, libc::SIGKILL) };
            }
            Err(DeliveryError(format!("`{program}` timed out after {}", humantime::format_duration(timeout))))
        }
    };
    let (fed, status) = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            stderr.inspect(tokio::task::JoinHandle::abort);
            return Err(error);
        }
    };
    if status.success() && fed {
        // A helper the program left running may hold stderr for long: nobody reads it now.
        stderr.inspect(tokio::task::JoinHandle::abort);
        return Ok(());
    }
    let stderr = match stderr {
        Some(reader) => {
            let abort = reader.abort_handle();
            let kept = tokio::time::timeout(STDERR_GRACE, reader).await.ok().and_then(Result::ok);
            abort.abort();
            kept.unwrap_or_default()
        }
        None => String::new(),
    };
    let ended = match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".to_owned(),
    };
    // A failed exit says enough; a successful one is a failure only for the input left unread.
    let unread = if status.success() && !fed { " before reading its whole input" } else { "" };
    let stderr = stderr.trim();
    let stderr = if stderr.is_empty() { String::new() } else { format!(": {stderr}") };
    Err(DeliveryError(format!("`{program}` exited with {ended}{unread}{stderr}")))
}

/// How long a failed sink's stderr is still read after it exited.
const STDERR_GRACE: Duration = Duration::from_millis(200);

/// The end of a sink's stderr: the last `OUTPUT_KEPT` bytes, read as they come, redacted before
/// they are cut (from at least twice as many), so that no piece of a secret survives the cut.
async fn read_kept(mut stderr: tokio::process::ChildStderr) -> String {
    use tokio::io::AsyncReadExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        kept.extend_from_slice(&buffer[..read]);
        if kept.len() > OUTPUT_KEPT * 4 {
            kept.drain(..kept.len() - OUTPUT_KEPT * 2);
        }
    }
    tail(&crate::secret::redact(&String::from_utf8_lossy(&kept)), OUTPUT_KEPT).to_owned()
}
