//! Delivering a batch of messages to a sink: a command that reads the JSON array on stdin and
//! exits 0, or a webhook that answers a POST of it with a 2xx status. Neither runs inside a
//! database transaction; each is bounded by the sink's timeout.

use std::process::Stdio;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use std::os::unix::process::ExitStatusExt;
use tokio::io::AsyncWriteExt;

use super::OutboxError;
use crate::config::Sink;

/// What a sink receives for each message, in a JSON array.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Message {
    /// Stable across redeliveries of this message: a sink that has seen it may skip it.
    pub idempotency_key: String,
    /// The id of the newest outbox row of this object in the shard (the one delivered).
    pub id: i64,
    /// The category's scope.
    pub scope: String,
    /// The shard: the deleted row's shard key value (null when it was NULL).
    pub shard_identifier: Option<String>,
    /// The outbox category.
    pub category: String,
    /// The model (of the config) whose row was deleted: two models may share a category, and
    /// their rows never coalesce. Empty for rows written before tombstones named their model.
    pub model: String,
    /// The deleted object's key.
    pub object_identifier: String,
    /// The columns the config copies into the payload (null without any).
    pub payload: serde_json::Value,
    /// When the newest row was written (UTC).
    pub date_added: String,
}

/// A sink ready to deliver: secrets read from the environment, an HTTP client built once.
#[derive(Debug)]
pub(crate) struct ReadySink {
    pub name: String,
    target: Target,
    pub timeout: Duration,
    pub batch_size: u64,
    /// The configured header values (those read through `env:` too), cut out of every error
    /// before it is logged, stored in `cascade_outbox_shard` or printed.
    secrets: Vec<String>,
}

#[derive(Debug)]
enum Target {
    /// `passed`: the names of the drainer's environment variables the program receives.
    Command {
        program: String,
        arguments: Vec<String>,
        passed: Vec<String>,
    },
    Webhook {
        client: reqwest::Client,
        url: String,
        headers: HeaderMap,
    },
}

/// The drainer's environment variables every command sink receives, besides its `env` list.
const PASSED_TO_EVERY_COMMAND: &[&str] = &["PATH", "HOME", "LANG"];

/// Why one delivery failed; the shard is retried after its backoff.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DeliveryError(String);

/// How much of a sink's output (a command's stderr, a webhook's response body) a failure keeps.
const OUTPUT_KEPT: usize = 512;

/// How much of a webhook's response body is read to find its kept part in: enough to redact a
/// secret that straddles the cut, never the whole of a huge body.
const BODY_READ: usize = 64 * 1024;

/// What a secret is replaced with in errors.
const REDACTED: &str = "***";

impl ReadySink {
    /// Reads the `env:NAME` header values and checks every header; a variable that is not set or
    /// a header HTTP cannot carry is an error now, not at the first delivery.
    pub(super) fn new(sink: &Sink) -> Result<Self, OutboxError> {
        let name = sink.name.value.clone();
        let command = sink.command.as_ref().and_then(|command| command.value.split_first());
        let mut secrets = Vec::new();
        let target = match (command, &sink.url) {
            (Some((program, arguments)), None) => Target::Command {
                program: program.clone(),
                arguments: arguments.to_vec(),
                passed: sink.env.iter().map(|variable| variable.value.clone()).collect(),
            },
            (None, Some(url)) => {
                let mut headers = HeaderMap::new();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                for (header, value) in &sink.headers {
                    let (header, value) = header_pair(&name, header, &value.value)?;
                    secrets.extend(secret_forms(value.to_str().unwrap_or_default()));
                    // The config's value replaces a default of the same name.
                    headers.insert(header, value);
                }
                let client = reqwest::Client::builder()
                    .timeout(sink.timeout())
                    // A redirected POST becomes a GET without the body: never a delivery.
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|error| OutboxError::Sink { sink: name.clone(), reason: error.to_string() })?;
                Target::Webhook { client, url: url.value.clone(), headers }
            }
            _ => {
                return Err(OutboxError::Sink {
                    sink: name,
                    reason: "it needs exactly one of `command` and `url` (run `cascade validate`)".into(),
                });
            }
        };
        // The longest first, so a value that holds another is cut out whole.
        secrets.sort_by_key(|secret: &String| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Ok(Self { name, target, timeout: sink.timeout(), batch_size: sink.batch_size(), secrets })
    }

    /// Delivers `messages` (one shard's, in id order) as one JSON array. The error holds no
    /// secret of the sink's.
    pub(super) async fn deliver(&self, messages: &[Message]) -> Result<(), DeliveryError> {
        self.deliver_unredacted(messages).await.map_err(|DeliveryError(error)| DeliveryError(self.redact(&error)))
    }

    /// `text` with every secret of the sink's replaced.
    fn redact(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |text, secret| text.replace(secret.as_str(), REDACTED))
    }

    async fn deliver_unredacted(&self, messages: &[Message]) -> Result<(), DeliveryError> {
        let body = serde_json::to_vec(messages).map_err(|error| DeliveryError(error.to_string()))?;
        let batch_key = batch_key(messages);
        match &self.target {
            Target::Command { program, arguments, passed } => {
                let shard = messages.first().and_then(|m| m.shard_identifier.clone()).unwrap_or_default();
                let scope = messages.first().map(|m| m.scope.clone()).unwrap_or_default();
                let mut command = tokio::process::Command::new(program);
                // A minimal environment: the drainer's holds database passwords and the secrets
                // behind `env:` headers, which are no business of the sink's.
                command.args(arguments).env_clear();
                for variable in PASSED_TO_EVERY_COMMAND.iter().copied().chain(passed.iter().map(String::as_str)) {
                    if let Some(value) = std::env::var_os(variable) {
                        command.env(variable, value);
                    }
                }
                command
                    .env("CASCADE_OUTBOX_SINK", &self.name)
                    .env("CASCADE_OUTBOX_SCOPE", scope)
                    .env("CASCADE_OUTBOX_SHARD", shard)
                    .env("CASCADE_OUTBOX_IDEMPOTENCY_KEY", &batch_key);
                run_command(command, &body, self.timeout).await
            }
            Target::Webhook { client, url, headers } => {
                let mut headers = headers.clone();
                if !headers.contains_key("idempotency-key")
                    && let Ok(key) = HeaderValue::from_str(&batch_key)
                {
                    headers.insert("idempotency-key", key);
                }
                let request = client.post(url).headers(headers).body(body);
                let response = request.send().await.map_err(|error| DeliveryError(describe_http_error(error)))?;
                let status = response.status();
                if status.is_success() {
                    return Ok(());
                }
                let text = self.redact(&read_start(response, BODY_READ).await);
                Err(DeliveryError(format!("HTTP {status}: {}", head(text.trim(), OUTPUT_KEPT))))
            }
        }
    }
}

/// The key of a whole delivery (the `Idempotency-Key` header, `CASCADE_OUTBOX_IDEMPOTENCY_KEY`):
/// the same batch retried carries the same key.
fn batch_key(messages: &[Message]) -> String {
    let first = messages.first().map_or(0, |m| m.id);
    let last = messages.last().map_or(0, |m| m.id);
    format!("cascade-outbox-{first}-{last}-{}", messages.len())
}

/// A configured header, checked: `env:NAME` reads the environment variable `NAME`; anything else
/// is literal. A name or value HTTP cannot carry is an error now, not at every delivery.
fn header_pair(sink: &str, header: &str, value: &str) -> Result<(HeaderName, HeaderValue), OutboxError> {
    let refuse = |reason: String| OutboxError::Sink { sink: sink.to_owned(), reason };
    let value = match value.strip_prefix("env:") {
        Some(variable) => std::env::var(variable).map_err(|_| {
            refuse(format!("header `{header}` reads the environment variable `{variable}`, which is not set"))
        })?,
        None => value.to_owned(),
    };
    let name = HeaderName::from_bytes(header.as_bytes())
        .map_err(|_| refuse(format!("`{header}` is not a valid HTTP header name")))?;
    let value = HeaderValue::from_str(&value)
        .map_err(|_| refuse(format!("the value of header `{header}` is not a valid HTTP header value")))?;
    Ok((name, value))
}

/// The forms in which a header value may come back in a response: whole, JSON-escaped, and its
/// credential without a scheme (`Bearer TOKEN`, `Basic TOKEN`).
fn secret_forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let escaped = serde_json::to_string(value).unwrap_or_default();
    forms.push(escaped.trim_matches('"').to_owned());
    if let Some((_scheme, credential)) = value.split_once(' ') {
        forms.push(credential.trim().to_owned());
    }
    forms.retain(|form| !form.is_empty());
    forms
}

/// The first `limit` bytes of a response's body (fewer when it ends or fails first), as text.
async fn read_start(mut response: reqwest::Response, limit: usize) -> String {
    let mut kept = Vec::new();
    while kept.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk[..chunk.len().min(limit - kept.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The error of a webhook call, without its URL (which may hold a token).
fn describe_http_error(error: reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out waiting for the webhook".to_owned();
    }
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
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

/// The end of a sink's stderr: the last `OUTPUT_KEPT` bytes, read as they come.
async fn read_kept(mut stderr: tokio::process::ChildStderr) -> String {
    use tokio::io::AsyncReadExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        kept.extend_from_slice(&buffer[..read]);
        if kept.len() > OUTPUT_KEPT * 2 {
            kept.drain(..kept.len() - OUTPUT_KEPT);
        }
    }
    tail(&String::from_utf8_lossy(&kept), OUTPUT_KEPT).to_owned()
}

/// The first `limit` bytes of `text` (at a character boundary).
fn head(text: &str, limit: usize) -> &str {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The last `limit` bytes of `text` (at a character boundary).
fn tail(text: &str, limit: usize) -> &str {
    let mut start = text.len().saturating_sub(limit);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
