//! A language-server client for tests and benchmarks: runs `cascade lsp` as a process and speaks
//! JSON-RPC with `Content-Length` frames over its standard input and output.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any answer may take before the test fails (a generous bound, never a sleep).
const TIMEOUT: Duration = Duration::from_secs(60);

pub struct LspClient {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    /// Messages read while waiting for another, in order.
    pending: VecDeque<Value>,
    next_id: i64,
}

impl LspClient {
    /// Starts `binary lsp ARGS` in `dir`, its log going to this process's stderr.
    pub fn start(binary: &Path, dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(binary)
            .arg("lsp")
            .args(args)
            .current_dir(dir)
            .env_remove("CASCADE_DATABASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", binary.display()));
        let stdout = child.stdout.take().expect("a piped stdout");
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, incoming, pending: VecDeque::new(), next_id: 1 }
    }

    /// `initialize` with `root` as the workspace and `options` as its initialization options,
    /// then `initialized`; the server's `InitializeResult`.
    pub fn initialize(&mut self, root: &Path, options: Value) -> Value {
        let uri = uri(root);
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri,
                    "capabilities": {},
                    "initializationOptions": options,
                    "workspaceFolders": [{ "uri": uri, "name": "root" }],
                }),
            )
            .expect("initialize succeeds");
        self.notify("initialized", json!({}));
        result
    }

    pub fn send(&mut self, message: &Value) {
        let body = message.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// Writes `bytes` to the server as they are, framed or not.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the server's input is open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request without waiting for its answer; its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The answer to request `id`: its result, or its error.
    pub fn response(&mut self, id: i64) -> Result<Value, Value> {
        let response =
            self.next_matching(|message| message.get("id") == Some(&json!(id)) && message.get("method").is_none());
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The params of the first notification `method` that `matches` (kept messages first).
    pub fn notification(&mut self, method: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let message = self.next_matching(|message| message["method"] == method && matches(&message["params"]));
        message["params"].clone()
    }

    /// The diagnostics published for `uri`: of the open document's `version`, or of the file on
    /// disk (no version) for `None`.
    pub fn diagnostics(&mut self, uri: &str, version: Option<i64>) -> Vec<Value> {
        let params = self.notification("textDocument/publishDiagnostics", |params| {
            params["uri"] == uri && params["version"] == json!(version)
        });
        params["diagnostics"].as_array().expect("a list of diagnostics").clone()
    }

    /// Takes the first message that `matches`, keeping the others for later.
    pub fn next_matching(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(index) = self.pending.iter().position(&matches) {
            return self.pending.remove(index).expect("a kept message");
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(message) if matches(&message) => return message,
                Ok(message) => self.pending.push_back(message),
                Err(RecvTimeoutError::Timeout) => panic!("no such message within {TIMEOUT:?}; got {:#?}", self.pending),
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output; got {:#?}", self.pending),
            }
        }
    }

    /// Closes the server's input and waits for it to exit.
    pub fn wait(mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.exited()
    }

    /// Waits for the server to exit on its own, its input kept open.
    pub fn exited(mut self) -> ExitStatus {
        // Its own loop: the lsp bench includes this file without the rest of `common`.
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit within {TIMEOUT:?}");
            std::thread::park_timeout(Duration::from_millis(10));
        }
    }

    /// `shutdown`, then `exit`; how the process ended.
    pub fn shutdown(mut self) -> ExitStatus {
        assert_eq!(self.request("shutdown", Value::Null), Ok(Value::Null));
        self.notify("exit", Value::Null);
        self.wait()
    }

    /// The server's process id (the lsp bench reads its memory by it; no test needs it).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The next message `reader` holds; none when it ends.
pub fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).expect("the server writes JSON"))
}

/// The `file://` URI of a path, as the server's URIs are written.
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The LSP position (line, UTF-16 character) of byte `offset` of `text`.
pub fn position(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    json!({ "line": line, "character": before[line_start..].encode_utf16().count() })
}

/// The LSP position of the start of the `nth` (from 0) `needle` in `text`, `shift` bytes on.
pub fn position_of(text: &str, needle: &str, nth: usize, shift: usize) -> Value {
    let offset = text.match_indices(needle).nth(nth).unwrap_or_else(|| panic!("no {nth}th `{needle}`")).0;
    position(text, offset + shift)
}

/// The LSP range of the `nth` `needle` in `text`.
pub fn range_of(text: &str, needle: &str, nth: usize) -> Value {
    let offset = text.match_indices(needle).nth(nth).unwrap_or_else(|| panic!("no {nth}th `{needle}`")).0;
    json!({ "start": position(text, offset), "end": position(text, offset + needle.len()) })
}
