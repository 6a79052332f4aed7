//! Text in a markdown pull-request comment that renders as written: names come from the config
//! under review, so no name may make a link, an image, an @mention, HTML or a table cell break
//! live. GitHub links mentions, issue references and bare URLs after markdown is rendered, so a
//! backslash cannot stop them; a code span can, so whatever could become one is put in a code
//! span, and everything else has its markdown punctuation escaped. What a name may hide from a
//! log is escaped first ([`shown`]), since the comment is printed to CI logs too.

use crate::diagnostic::text::shown;

/// `text` for a table cell: its code spans kept as code (each fenced anew, so no backtick in a
/// name can close one early), the rest escaped, with no line break.
pub(super) fn cell(text: &str) -> String {
    let text = shown(text);
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text.as_ref();
    while let Some(start) = rest.find('`') {
        let fence = backtick_run(&rest[start..]);
        let after = &rest[start + fence.len()..];
        match closing_run(after, fence.len()) {
            Some(end) => {
                push_plain(&mut out, &rest[..start]);
                push_code(&mut out, &after[..end]);
                rest = &after[end + fence.len()..];
            }
            // An unclosed run is literal backticks.
            None => {
                push_plain(&mut out, &rest[..start + fence.len()]);
                rest = after;
            }
        }
    }
    push_plain(&mut out, rest);
    out
}

/// `text` as inline code, whatever backticks it holds.
pub(super) fn code(text: &str) -> String {
    let mut out = String::new();
    push_code(&mut out, text);
    out
}

/// Appends `text` as inline code, apart from a code span that `out` ends with (two fences that
/// touch would read as one longer run, and leave both spans open).
fn push_code(out: &mut String, text: &str) {
    let text = shown(text).replace('|', "\\|");
    if text.is_empty() {
        return;
    }
    if out.ends_with('`') {
        out.push(' ');
    }
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    *out += &format!("{fence}{pad}{text}{pad}{fence}");
}

/// Appends text outside code: a word GitHub could link (`@name`, `#12`, `owner/repo#12`, a URL
/// or a `www.` address, an e-mail address) as code, every other character that markdown or HTML
/// reads escaped.
fn push_plain(out: &mut String, text: &str) {
    for (index, word) in text.split(' ').enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let lower = word.to_ascii_lowercase();
        if word.contains(['@', '#']) || lower.contains("://") || lower.contains("www.") {
            push_code(out, word);
            continue;
        }
        for c in word.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '\\' | '`' | '*' | '_' | '[' | ']' | '!' | '~' | '|' | '^' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
}

/// The backticks `text` starts with.
fn backtick_run(text: &str) -> &str {
    &text[..text.len() - text.trim_start_matches('`').len()]
}

/// Where in `text` a run of exactly `length` backticks starts (which closes a code span).
fn closing_run(text: &str, length: usize) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find('`') {
        let at = from + at;
        let run = backtick_run(&text[at..]).len();
        if run == length {
            return Some(at);
        }
        from = at + run;
    }
    None
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{cell, code};

    #[test]
    fn a_cell_keeps_its_code_spans_and_escapes_the_rest() {
        assert_eq!(cell("`<a>` & <b>"), "`<a>` &amp; &lt;b&gt;");
        assert_eq!(cell("``a ` <b>`` `x|y`\nz"), "``a ` <b>`` `x\\|y`\\\\nz");
        assert_eq!(cell("a ` <b>"), "a \\` &lt;b&gt;");
        assert_eq!(cell("org → member (org_id)"), "org → member (org\\_id)");
    }

    #[test]
    fn nothing_in_a_cell_links_or_mentions() {
        assert_eq!(cell("[x](https://evil.example) ![i](y)"), "`[x](https://evil.example)` \\!\\[i\\](y)");
        assert_eq!(cell("ping @octocat and #12"), "ping `@octocat` and `#12`");
        assert_eq!(cell("www.evil.example"), "`www.evil.example`");
        // A backtick in a name closes its code span early: what follows is escaped all the same.
        assert_eq!(cell("`a` [l](u) `b` deletes"), "`a` \\[l\\](u) `b` deletes");
        assert_eq!(cell("`a`@x`"), "`a` `` @x` ``");
        assert_eq!(cell("`a`@x"), "`a` `@x`");
        assert_eq!(cell("`a``b`"), "```a``b```");
    }

    #[test]
    fn code_fences_around_any_backticks() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("a|b\nc"), "`a\\|b\\nc`");
    }
}
