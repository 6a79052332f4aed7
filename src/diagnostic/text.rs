//! Text from a config on its way to a terminal, a CI log or a review. Names are the user's, so
//! whatever would act instead of showing (a control character, a bidirectional control, a
//! workflow command that the GitHub Actions runner obeys) is shown escaped.

use std::borrow::Cow;

/// Whether `c` displays as something other than itself or acts on the text around it: control
/// characters, line and paragraph separators, and the bidirectional controls that make text
/// display differently from what it is.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` escaped as Rust writes it: `\n`, `\t`, `\u{1b}`, `\u{202e}`, and `\u{3a}` for a printable
/// one (the `:` or `[` of a workflow command).
pub(crate) fn escaped(c: char) -> String {
    if is_hidden(c) { c.escape_default().to_string() } else { c.escape_unicode().to_string() }
}

/// Pretty JSON (a report, a plan, a review) as a CI log may show it: every `##[` written
/// `##\u005b`, the same string to a JSON reader, and no workflow command of the older form to the
/// runner, which looks for it anywhere in a line. Outside strings JSON holds no `#`, so the
/// replacement only ever touches strings; a `::` command needs the start of a line, where pretty
/// JSON has spaces and a quote.
pub fn inert_json(mut json: String) -> String {
    if json.contains("##[") {
        json = json.replace("##[", "##\\u005b");
    }
    json.push('\n');
    json
}

/// `text` as a terminal, a log or a review shows it: hidden characters escaped, and no workflow
/// command. The runner reads a line that starts with `::` (after spaces) as a command, and `##[`
/// anywhere in a line as one of the older form; their first `:` or their `[` is escaped, so
/// a name never starts either, wherever it is printed.
pub fn shown(text: &str) -> Cow<'_, str> {
    let leading_command = text.trim_start().starts_with("::");
    if !leading_command && !text.contains("##[") && !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut at_start = true;
    for (offset, c) in text.char_indices() {
        let opens_command = at_start && text[offset..].starts_with("::") || c == '[' && text[..offset].ends_with("##");
        if is_hidden(c) || opens_command {
            out.push_str(&escaped(c));
        } else {
            out.push(c);
        }
        // Escapes are visible characters, so after one nothing leads the line any more.
        at_start &= c.is_whitespace() && !is_hidden(c);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{inert_json, shown};

    #[test]
    fn json_says_the_same_and_starts_no_command() {
        let json = serde_json::to_string_pretty(&serde_json::json!({"model": "x ##[error]pwned"})).unwrap();
        let inert = inert_json(json);
        assert!(!inert.contains("##["), "{inert}");
        let read: serde_json::Value = serde_json::from_str(&inert).unwrap();
        assert_eq!(read["model"], "x ##[error]pwned");
    }

    #[test]
    fn hidden_characters_are_escaped() {
        assert_eq!(shown("org"), "org");
        assert_eq!(shown("a\nb\tc\u{1b}[31m"), "a\\nb\\tc\\u{1b}[31m");
        assert_eq!(shown("safe\u{202e}txt.exe"), "safe\\u{202e}txt.exe");
    }

    #[test]
    fn no_workflow_command_starts() {
        assert_eq!(shown("::error::pwned"), "\\u{3a}:error::pwned");
        assert_eq!(shown("  ::warning::x"), "  \\u{3a}:warning::x");
        assert_eq!(shown("a::b"), "a::b");
        assert_eq!(shown("x ##[error]y"), "x ##\\u{5b}error]y");
        assert_eq!(shown("\n::error::x"), "\\n::error::x");
    }
}
