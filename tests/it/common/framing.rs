//! The language server's input as a broken or hostile client writes it: seeded cases of frames
//! that must be answered (an unknown method, a body that is no JSON or no message), then an end:
//! a clean `shutdown` and `exit`, a header that loses the frames' boundaries (a line ending in LF
//! alone, a line of MiBs without an end, header lines that never end the header, no or a huge
//! `Content-Length`, garbage between frames), or input that closes inside a frame. Each case says
//! what the server must do with it; [`serve`] runs the real `cascade lsp` on one, holds its memory
//! to a bound while it runs, and reports how it answered, how it ended and how much it read.

use std::io::{BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::{Value, json};

use super::lsp::read_message;
use super::random::Random;
use super::{DEADLINE, poll};

/// The largest body the server reads (`MAX_BODY` in `src/lsp/transport.rs`).
const MAX_BODY: u64 = 256 << 20;

/// Lines of `X-Fuzz: 0` (11 bytes) more than the server reads of a header (`MAX_HEADER`, 8 KiB):
/// fewer would leave it waiting for the header's end, as it must.
const HEADER_LINES_OVER_THE_BOUND: usize = 1_000;

/// How the server must end once it has read a case's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `shutdown`, answered, then `exit`: it exits 0.
    Shutdown,
    /// A header that loses the frames' boundaries: it exits 1 by itself, its input still open.
    Refused,
    /// The input closes inside a frame: it exits 1.
    Truncated,
}

/// One case: the bytes written after the initialization and how the server must take them.
pub struct Case {
    /// Its parts, named, for a failure's message (the input may be many MiB).
    pub parts: Vec<String>,
    pub input: Vec<u8>,
    /// The answers it must get, in any order: each one's id and error code (none for a result).
    pub answers: Vec<(Value, Option<i64>)>,
    pub ending: Ending,
}

/// The kinds of end a case has.
pub const ENDS: u64 = 9;

/// Seeded case `number`: up to four frames to answer, then an end of kind `number` modulo
/// [`ENDS`] (so that a run of cases has every kind).
pub fn case(random: &mut Random, number: u64) -> Case {
    let mut case = Case { parts: Vec::new(), input: Vec::new(), answers: Vec::new(), ending: Ending::Shutdown };
    for id in 1..=random.below(5) as i64 {
        let (part, bytes, answer) = answered(random, id);
        case.parts.push(part.to_owned());
        case.input.extend(bytes);
        case.answers.push(answer);
    }
    let (part, bytes, ending) = end(random, number % ENDS);
    case.parts.push(part);
    case.input.extend(bytes);
    case.ending = ending;
    if ending == Ending::Shutdown {
        case.answers.push((json!(SHUTDOWN), None));
    }
    case
}

/// The id of the `shutdown` request of a case that ends with it.
const SHUTDOWN: i64 = 1_000;

/// `initialize` (id 0) and `initialized`, framed.
pub fn initialization(dir: &Path) -> Vec<u8> {
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "processId": null, "rootUri": format!("file://{}", dir.display()), "capabilities": {} } });
    let initialized = json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} });
    [framed(&initialize.to_string()), framed(&initialized.to_string())].concat()
}

fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// `body` after a `Content-Length` header written in one of the ways the protocol allows (any
/// case, spaces around the value, a `Content-Type` before or after it).
fn frame(random: &mut Random, body: &[u8]) -> Vec<u8> {
    let name = ["Content-Length", "content-length", "CONTENT-LENGTH"][random.below(3) as usize];
    let spaces = " ".repeat(random.below(3) as usize);
    let length = format!("{name}:{spaces}{}{spaces}\r\n", body.len());
    let content_type = "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n";
    let header = match random.below(3) {
        0 => length,
        1 => format!("{content_type}{length}"),
        _ => format!("{length}{content_type}"),
    };
    [header.as_bytes(), b"\r\n", body].concat()
}

/// `length` random bytes, without `excluded` ones.
fn bytes(random: &mut Random, length: u64, excluded: &[u8]) -> Vec<u8> {
    (0..length).map(|_| random.below(256) as u8).filter(|byte| !excluded.contains(byte)).collect()
}

/// A frame the server answers and reads on after: the part's name, its bytes, and the answer.
fn answered(random: &mut Random, id: i64) -> (&'static str, Vec<u8>, (Value, Option<i64>)) {
    match random.below(4) {
        0 => {
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": "cascade/fuzz", "params": {} });
            ("a request of an unknown method", frame(random, request.to_string().as_bytes()), (json!(id), Some(-32601)))
        }
        // An object that is never closed: no JSON, whatever lies between.
        1 => {
            let length = random.below(200);
            let body = [&b"{"[..], &bytes(random, length, b""), b"{"].concat();
            ("a body that is no JSON", frame(random, &body), (Value::Null, Some(-32700)))
        }
        2 => {
            let body = json!({ "jsonrpc": "2.0", "id": id }).to_string();
            ("JSON that is no message", frame(random, body.as_bytes()), (json!(id), Some(-32600)))
        }
        _ => ("an empty body", frame(random, b""), (Value::Null, Some(-32700))),
    }
}

/// An end of kind `kind`: the part's name, its bytes, and what the server must do.
fn end(random: &mut Random, kind: u64) -> (String, Vec<u8>, Ending) {
    match kind {
        0 => {
            let shutdown = json!({ "jsonrpc": "2.0", "id": SHUTDOWN, "method": "shutdown" }).to_string();
            let exit = json!({ "jsonrpc": "2.0", "method": "exit" }).to_string();
            let bytes = [frame(random, shutdown.as_bytes()), frame(random, exit.as_bytes())].concat();
            ("shutdown and exit".to_owned(), bytes, Ending::Shutdown)
        }
        1 => ("a header line ending in LF alone".to_owned(), b"Content-Length: 2\n\n{}".to_vec(), Ending::Refused),
        2 => {
            // A pattern repeated: random bytes for MiBs would take the test longer than the server.
            let pattern = bytes(random, 64, b"\n");
            let mib = 1 + random.below(48) as usize;
            let line = pattern.iter().copied().cycle().take(mib << 20).collect();
            (format!("a header line of {mib} MiB without a line end"), line, Ending::Refused)
        }
        3 => {
            let lines = HEADER_LINES_OVER_THE_BOUND + random.below(100_000) as usize;
            (format!("{lines} header lines and no end"), b"X-Fuzz: 0\r\n".repeat(lines), Ending::Refused)
        }
        4 => {
            let body = b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}".to_vec();
            ("a header without Content-Length".to_owned(), body, Ending::Refused)
        }
        5 => {
            let over = (MAX_BODY + 1 + random.below(1 << 40)).to_string();
            let lengths = [over.as_bytes(), b"99999999999999999999", b"-1", b"0x10", b"", b"2 2", b"\xff"];
            let length = lengths[random.below(lengths.len() as u64) as usize];
            let header = [&b"Content-Length: "[..], length, b"\r\n\r\n"].concat();
            (format!("Content-Length {:?}", String::from_utf8_lossy(length)), header, Ending::Refused)
        }
        6 => ("a header line without a colon".to_owned(), b"Content-Length 2\r\n\r\n{}".to_vec(), Ending::Refused),
        7 => {
            // Bytes no header line could start with: without a colon they have no name, and
            // their first byte, which no trimming removes, spoils the name of the frame's
            // `Content-Length` line when no line end comes before it.
            let length = random.below(64);
            let garbage = [&b"x"[..], &bytes(random, length, b":")].concat();
            let part = format!("{} bytes of garbage before a frame", garbage.len());
            let request = json!({ "jsonrpc": "2.0", "id": 999, "method": "cascade/fuzz" }).to_string();
            (part, [garbage, framed(&request)].concat(), Ending::Refused)
        }
        _ => {
            let length = if random.chance(50) { 1 + random.below(100) } else { 1 + random.below(MAX_BODY) };
            let whole =
                [format!("Content-Length: {length}\r\n\r\n").as_bytes(), &bytes(random, length.min(100), b"")].concat();
            let cut = 1 + random.below(whole.len() as u64 - 1) as usize;
            let part = format!("a frame with a {length}-byte body cut after {cut} of its bytes");
            (part, whole[..cut].to_vec(), Ending::Truncated)
        }
    }
}

/// The most memory a server may hold while it runs: a few times what it starts with. A server
/// that kept an unread header would hold the header's MiBs.
pub const PEAK_KIB: u64 = 64 << 10;

/// How a server ended.
pub struct Ended {
    pub status: ExitStatus,
    /// The bytes of the input its end of the pipe took before it closed it (all of them, unless
    /// it stopped reading).
    pub taken: usize,
    /// What it wrote on its output, read as frames of JSON.
    pub messages: Vec<Value>,
    pub stderr: String,
}

/// Runs `binary lsp` in `dir` on `input` until it exits by itself, its input closed after
/// `input` when `close` and kept open otherwise (a server that waits for more then fails the
/// test at the deadline). While it runs, its peak resident set (`VmHWM`) must stay under
/// [`PEAK_KIB`] (read from `/proc` while it runs: `wait4`'s peak would count this test's own,
/// which the kernel carries into a child across `exec`); `what` names the case in failures.
pub fn serve(binary: &Path, dir: &Path, input: Vec<u8>, close: bool, what: &str) -> Ended {
    let mut child = Command::new(binary)
        .arg("lsp")
        .current_dir(dir)
        .env_remove("CASCADE_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("start {}: {error}", binary.display()));
    let mut stdin = child.stdin.take().expect("a piped stdin");
    let writer = std::thread::spawn(move || {
        // A server that refused the input stops reading it: the rest is no longer its.
        let mut taken = 0;
        for chunk in input.chunks(64 << 10) {
            if stdin.write_all(chunk).is_err() {
                return (taken, None);
            }
            taken += chunk.len();
        }
        (taken, (!close).then_some(stdin))
    });
    let mut stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
    let reader = std::thread::spawn(move || std::iter::from_fn(|| read_message(&mut stdout)).collect::<Vec<_>>());
    let mut stderr = child.stderr.take().expect("a piped stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).map(|_| text)
    });
    let status = poll(DEADLINE, || {
        if let Some(status) = child.try_wait().expect("wait for the server") {
            return Some(status);
        }
        // Gone between the two looks: the next look finds it exited.
        let peak_kib = peak_kib(child.id())?;
        if peak_kib >= PEAK_KIB {
            let _ = child.kill();
            panic!("{what}: the server holds {peak_kib} KiB at its peak");
        }
        None
    });
    let Some(status) = status else {
        let _ = child.kill();
        panic!("{what}: the server did not exit within {DEADLINE:?}");
    };
    let (taken, stdin) = writer.join().expect("the writer ends");
    drop(stdin);
    let messages = reader.join().unwrap_or_else(|_| panic!("{what}: the server writes frames of JSON"));
    let stderr = errors.join().expect("stderr is read").expect("stderr is text");
    Ended { status, taken, messages, stderr }
}

/// The peak resident set of running process `pid` in KiB (`VmHWM`); none once it has exited.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}
