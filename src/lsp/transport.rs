//! Standard input and output as the client's connection. lsp-server's own stdio transport ends
//! the server at the first frame whose body is not a message; here such a frame is answered with
//! the JSON-RPC error the protocol asks for (a parse error, or an invalid request with its id)
//! and the server goes on, since the frame's length said where the next one starts. Only a header
//! that cannot be read (the frames' boundaries are lost), one over [`MAX_HEADER`] or a body over
//! [`MAX_BODY`] ends it.

use std::io::{self, BufRead, Read, Write};
use std::thread::{self, JoinHandle};

use crossbeam_channel::bounded;
use lsp_server::{Connection, Message};
use serde_json::{Value, json};

/// The largest message body read: a config file many times over, and not so large that a
/// mistyped length makes the server allocate all the memory there is.
const MAX_BODY: usize = 256 << 20;

/// The longest header read, its lines and the empty line that ends them together: LSP's two
/// fields take under a hundred bytes, and input without a line end (or with endless lines) must
/// not have the server keep all of it while looking for the end.
const MAX_HEADER: u64 = 8 << 10;

/// The threads reading and writing the streams.
pub(super) struct Transport {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl Transport {
    /// A connection over standard input and output, and the threads serving it.
    pub(super) fn stdio() -> (Connection, Self) {
        let (sender, outgoing) = bounded::<Message>(0);
        let writer = thread::spawn(move || {
            // One frame at a time under the lock: the reader writes its error answers too.
            outgoing.into_iter().try_for_each(|message| message.write(&mut io::stdout().lock()))
        });
        let (incoming, receiver) = bounded::<Message>(0);
        let reader = thread::spawn(move || {
            let mut input = io::stdin().lock();
            while let Some(body) = read_frame(&mut input)? {
                match serde_json::from_slice::<Message>(&body) {
                    Ok(message) => {
                        let exit =
                            matches!(&message, Message::Notification(notification) if notification.method == "exit");
                        if incoming.send(message).is_err() || exit {
                            break;
                        }
                    }
                    Err(error) => write_frame(&mut io::stdout().lock(), &rejection(&body, &error).to_string())?,
                }
            }
            Ok(())
        });
        (Connection { sender, receiver }, Self { reader, writer })
    }

    /// Waits for both threads (the writer ends once the connection is dropped); the reader's
    /// error first, when the input broke.
    pub(super) fn join(self) -> io::Result<()> {
        let joined = |thread: JoinHandle<io::Result<()>>| {
            thread.join().unwrap_or_else(|_| Err(io::Error::other("a thread of the connection panicked")))
        };
        let read = joined(self.reader);
        let written = joined(self.writer);
        read.and(written)
    }
}

/// The body of the next frame; none when the input ends before one starts.
fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let mut header = input.take(MAX_HEADER);
    let mut length = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = header.read_until(b'\n', &mut line)?;
        if header.limit() == 0 && !line.ends_with(b"\n") {
            return Err(invalid(format!("a header longer than {MAX_HEADER} bytes: {:?}", shortened(&line))));
        }
        if read == 0 {
            return match length {
                None => Ok(None),
                Some(_) => Err(invalid("the input ended inside a message's header".to_owned())),
            };
        }
        let Some(field) = line.strip_suffix(b"\r\n") else {
            return Err(invalid(format!("a header line that does not end with CRLF: {:?}", shortened(&line))));
        };
        if field.is_empty() {
            break;
        }
        let field = String::from_utf8_lossy(field);
        let Some((name, value)) = field.split_once(':') else {
            return Err(invalid(format!("a header line without a name: {:?}", shortened(field.as_bytes()))));
        };
        if name.trim().eq_ignore_ascii_case("Content-Length") {
            let value = value.trim();
            let parsed = value.parse::<usize>().ok().filter(|length| *length <= MAX_BODY);
            length = Some(parsed.ok_or_else(|| {
                invalid(format!("Content-Length {:?} is no length up to {MAX_BODY} bytes", shortened(value.as_bytes())))
            })?);
        }
    }
    let length = length.ok_or_else(|| invalid("a message without Content-Length".to_owned()))?;
    let mut body = vec![0; length];
    header.into_inner().read_exact(&mut body)?;
    Ok(Some(body))
}

fn write_frame(output: &mut impl Write, body: &str) -> io::Result<()> {
    write!(output, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    output.flush()
}

/// The answer to a body that is no message: an invalid request (to its id, when it has one) if
/// it is JSON, a parse error otherwise.
fn rejection(body: &[u8], error: &serde_json::Error) -> Value {
    let (id, code, what) = match serde_json::from_slice::<Value>(body) {
        Ok(value) => {
            let id = value.get("id").filter(|id| id.is_number() || id.is_string()).cloned().unwrap_or(Value::Null);
            (id, -32600, "not a JSON-RPC message")
        }
        Err(_) => (Value::Null, -32700, "not JSON"),
    };
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": format!("{what}: {error}") } })
}

/// At most 80 characters of `text` (its bytes read as UTF-8), for a message about it.
fn shortened(text: &[u8]) -> String {
    String::from_utf8_lossy(text).chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_by_their_length_and_broken_headers_are_errors() {
        let mut input: &[u8] = b"Content-Length: 2\r\ncontent-type: x\r\n\r\n{}Content-Length:3\r\n\r\nabc";
        assert_eq!(read_frame(&mut input).unwrap(), Some(b"{}".to_vec()));
        assert_eq!(read_frame(&mut input).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut input).unwrap(), None);
        for broken in [
            "Content-Length: 2\n\n{}",
            "\r\n{}",
            "Content-Length: -1\r\n\r\n",
            "Content-Length: 99999999999999999999\r\n\r\n",
            "Content-Length: 999999999999\r\n\r\n",
            "Content-Length 2\r\n\r\n{}",
            "Content-Length: 2\r\n",
        ] {
            let error = read_frame(&mut broken.as_bytes()).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{broken:?}: {error}");
        }
        assert_eq!(
            read_frame(&mut "Content-Length: 5\r\n\r\n{}".as_bytes()).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    /// `pattern` over and over, `left` bytes of it, counting the bytes read.
    struct Repeated {
        pattern: &'static [u8],
        left: usize,
        read: usize,
    }

    impl Read for Repeated {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let size = buffer.len().min(self.left);
            for (index, byte) in buffer[..size].iter_mut().enumerate() {
                *byte = self.pattern[(self.read + index) % self.pattern.len()];
            }
            self.left -= size;
            self.read += size;
            Ok(size)
        }
    }

    #[test]
    fn a_header_without_an_end_is_refused_after_reading_a_bounded_part_of_it() {
        // One line without a line end, and lines that never end the header: 64 MiB of each.
        for pattern in [&b"a"[..], b"X-Padding: 0\r\n"] {
            let mut input = io::BufReader::new(Repeated { pattern, left: 64 << 20, read: 0 });
            let error = read_frame(&mut input).unwrap_err();
            let read = input.get_ref().read;
            assert!(read <= MAX_HEADER as usize + input.capacity(), "{read} bytes read: {error}");
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
            assert!(error.to_string().starts_with("a header longer than 8192 bytes"), "{error}");
        }
        // A header just under the bound is read.
        let padding = "X-Padding: ".to_owned() + &"0".repeat(MAX_HEADER as usize - 40) + "\r\n";
        let frame = format!("{padding}Content-Length: 2\r\n\r\n{{}}");
        assert_eq!(read_frame(&mut frame.as_bytes()).unwrap(), Some(b"{}".to_vec()));
    }

    #[test]
    fn a_body_that_is_no_message_gets_the_error_the_protocol_names() {
        let answer = |body: &[u8]| {
            let error = serde_json::from_slice::<Message>(body).unwrap_err();
            let answer = rejection(body, &error);
            (answer["id"].clone(), answer["error"]["code"].clone())
        };
        assert_eq!(answer(b"{{{{{"), (Value::Null, json!(-32700)));
        assert_eq!(answer(b"\xff\xfe"), (Value::Null, json!(-32700)));
        assert_eq!(answer(br#"{"jsonrpc":"2.0","id":77}"#), (json!(77), json!(-32600)));
        assert_eq!(answer(br#"{"jsonrpc":"2.0","id":{}}"#), (Value::Null, json!(-32600)));
        assert_eq!(answer(b"[]"), (Value::Null, json!(-32600)));
    }
}
