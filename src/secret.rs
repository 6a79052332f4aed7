//! Every secret the process knows, registered where it is read (a URL's password and secret query
//! values, a webhook's query values, headers, `env:` values, the variables a command sink is
//! given, a GitHub token), and [`redact`]ed from every text that may carry one back out: log
//! lines, errors, stored failures, printed tables, source snippets. A secret comes back in more
//! forms than it went out in: a server echoes it lower-cased or percent-encoded, a client sends
//! it in base64 as `user:password`, JSON escapes it. Each registered secret is matched in all of
//! these forms, whatever their letters' case.

use std::sync::RwLock;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What a secret is replaced with.
pub const REDACTED: &str = "***";

/// Forms shorter than this are not matched: a value of a few characters guards nothing, and
/// replacing every occurrence of it would garble each message it appears in.
const SHORTEST: usize = 4;

/// What a URL leaves unencoded (RFC 3986's unreserved characters); everything else is encoded.
const URL_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The forms of every registered secret, ASCII lower-cased, longest first (so that a form that
/// holds another is cut out whole).
static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers `secret`: from now on [`redact`] and [`mask`] hide it in every form.
pub fn register(secret: &str) {
    register_forms(forms(secret));
}

/// Registers a user's password, and their pair in the forms HTTP's Basic authentication sends
/// it (`base64(user:password)`).
pub fn register_credentials(user: &str, password: &str) {
    register(password);
    let decoded = |text: &str| percent_decode_str(text).decode_utf8_lossy().into_owned();
    let pairs = [format!("{user}:{password}"), format!("{}:{}", decoded(user), decoded(password))];
    register_forms(pairs.iter().flat_map(|pair| base64_forms(pair.as_bytes())).collect());
}

fn register_forms(new: Vec<String>) {
    let mut known = KNOWN.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    for form in new {
        let form = form.to_ascii_lowercase();
        if form.len() >= SHORTEST && !known.contains(&form) {
            known.push(form);
        }
    }
    known.sort_by_key(|form| std::cmp::Reverse(form.len()));
}

/// The forms in which `secret` may come back: as it is, percent-decoded and percent-encoded
/// (spaces as `%20` or `+`), JSON-escaped, and in base64 (standard or URL-safe, with or without
/// padding). A credential with a scheme (`Bearer TOKEN`) also comes back without it.
fn forms(secret: &str) -> Vec<String> {
    let decoded = percent_decode_str(secret).decode_utf8_lossy().into_owned();
    let mut forms = Vec::new();
    for value in [secret.to_owned(), decoded] {
        if let Some((_scheme, credential)) = value.split_once(' ') {
            forms.extend(forms_of_one(credential.trim()));
        }
        forms.extend(forms_of_one(&value));
    }
    forms
}

fn forms_of_one(value: &str) -> Vec<String> {
    let encoded = utf8_percent_encode(value, URL_COMPONENT).to_string();
    let mut forms = vec![value.to_owned(), encoded.replace("%20", "+"), encoded];
    let escaped = serde_json::to_string(value).unwrap_or_default();
    forms.push(escaped.trim_matches('"').to_owned());
    forms.extend(base64_forms(value.as_bytes()));
    forms
}

fn base64_forms(bytes: &[u8]) -> Vec<String> {
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().map(|engine| engine.encode(bytes)).collect()
}

/// `text` with every form of every registered secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    replace_known(text, |_| REDACTED.to_owned())
}

/// `text` with every form of every registered secret, and the password of every URL written in
/// it, replaced by as many `*`s as they have bytes: every line and byte offset stays where it was
/// (source snippets point into it). A file that does not parse registers nothing, yet its
/// snippets still show its lines.
pub fn mask(text: &str) -> String {
    mask_url_passwords(&replace_known(text, |found| "*".repeat(found.len())))
}

/// `text` with the password of each `scheme://user:password@host` in it as `*`s: the user info
/// runs from `://` to the last `@` before the next white space or quote.
fn mask_url_passwords(text: &str) -> String {
    let mut masked = text.to_owned();
    for (at, _) in text.match_indices("://") {
        let start = at + 3;
        let token = &text[start..];
        let token =
            &token[..token.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`')).unwrap_or(token.len())];
        let Some(user_end) = token.find(':') else { continue };
        let Some(host_at) = token.rfind('@').filter(|host_at| *host_at > user_end) else { continue };
        let password = start + user_end + 1..start + host_at;
        masked.replace_range(password.clone(), &"*".repeat(password.len()));
    }
    masked
}

fn replace_known(text: &str, replacement: impl Fn(&str) -> String) -> String {
    let known = KNOWN.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    if known.is_empty() {
        return text.to_owned();
    }
    let mut text = text.to_owned();
    // ASCII lower-casing keeps every byte where it was, so a match in the lower-cased text is a
    // match, at the same offsets, in the text; it is lower-cased again only after a replacement.
    let mut lowered = text.to_ascii_lowercase();
    for form in known.iter() {
        if !lowered.contains(form.as_str()) {
            continue;
        }
        let mut replaced = String::with_capacity(text.len());
        let mut last = 0;
        for (at, _) in lowered.match_indices(form.as_str()) {
            if at < last || !text.is_char_boundary(at) || !text.is_char_boundary(at + form.len()) {
                continue;
            }
            replaced.push_str(&text[last..at]);
            replaced.push_str(&replacement(&text[at..at + form.len()]));
            last = at + form.len();
        }
        replaced.push_str(&text[last..]);
        text = replaced;
        lowered = text.to_ascii_lowercase();
    }
    text
}

/// A writer that redacts what it writes: the log's (each log line is written whole).
pub struct RedactingWriter<W>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::{mask, redact, register, register_credentials};

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        register("Tok/en+Sec ret");
        let forms = [
            "Tok/en+Sec ret",
            "tok/en+sec ret",
            "TOK%2FEN%2BSEC%20RET",
            "tok%2fen%2bsec+ret",
            "VG9rL2VuK1NlYyByZXQ=",
            "VG9rL2VuK1NlYyByZXQ",
        ];
        for form in forms {
            let text = format!("echo: [{form}] done");
            assert_eq!(redact(&text), "echo: [***] done", "{form}");
        }
    }

    #[test]
    fn credentials_are_redacted_in_basic_authentication_too() {
        register_credentials("app", "pa%40ss-word");
        let basic = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "app:pa@ss-word");
        assert_eq!(redact(&format!("Authorization: Basic {basic}")), "Authorization: Basic ***");
        assert_eq!(redact("password pa@ss-word and PA%40SS-WORD"), "password *** and ***");
    }

    #[test]
    fn masks_keep_every_offset() {
        register("m4sked-value");
        let text = "key = \"m4sked-value\" # é";
        let masked = mask(text);
        assert_eq!(masked.len(), text.len());
        assert_eq!(masked, "key = \"************\" # é");
    }

    #[test]
    fn passwords_of_urls_in_a_text_are_masked() {
        let text = "url = \"postgres://app:p@ss:w0rd@db/app\" # and sqlite://x.db, https://h:1/";
        assert_eq!(mask(text), "url = \"postgres://app:*********@db/app\" # and sqlite://x.db, https://h:1/");
    }

    #[test]
    fn short_values_are_not_secrets() {
        register("ab");
        assert_eq!(redact("ab cab"), "ab cab");
    }
}
