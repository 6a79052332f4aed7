//! What a printed text must not hold when a name in it comes from a hostile config: a raw
//! control character (a terminal or a CI log acts on it), a line the GitHub Actions runner reads
//! as a workflow command, or markdown that GitHub renders as a link, an image, HTML or a mention.

/// The raw control characters of `text`, but for line feeds.
pub fn raw_controls(text: &str) -> Vec<char> {
    text.chars().filter(|&c| c.is_control() && c != '\n').collect()
}

/// The lines of `text` that the runner reads as a workflow command: one that starts with `::`
/// after spaces, or that holds `##[` anywhere (the older form). Lines end at LF or CR, as the
/// runner reads them.
pub fn workflow_commands(text: &str) -> Vec<&str> {
    text.split(['\n', '\r']).filter(|line| line.trim_start().starts_with("::") || line.contains("##[")).collect()
}

/// What in `markdown` GitHub could render live: outside code spans (read as CommonMark reads
/// them: a run of backticks opens one that a run of the same length closes, and a backslash
/// makes the punctuation after it literal), a `[`, `]`, `<` or `@`, a `://` or a `www.`. The
/// review's hidden marker (its first line) is left out.
pub fn live_markdown(markdown: &str) -> Vec<String> {
    let body = markdown.strip_prefix("<!-- cascade-diff -->\n").unwrap_or(markdown);
    let mut live = Vec::new();
    // Line by line, as a table reads its rows: no code span runs from one row into the next.
    for line in body.lines() {
        let outside = outside_code(line).to_ascii_lowercase();
        for marker in ["[", "]", "<", "@", "://", "www."] {
            if outside.contains(marker) {
                live.push(format!("{marker} in: {line}"));
            }
        }
    }
    live
}

/// `line` with its code spans and backslash-escaped characters blanked out.
fn outside_code(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let run_at = |at: usize| chars[at..].iter().take_while(|&&c| c == '`').count();
    let mut outside = String::new();
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '\\' if chars.get(at + 1).is_some_and(char::is_ascii_punctuation) => {
                outside.push(' ');
                at += 2;
            }
            '`' => {
                let run = run_at(at);
                let mut next = at + run;
                let mut end = None;
                while let Some(offset) = chars[next..].iter().position(|&c| c == '`') {
                    let length = run_at(next + offset);
                    if length == run {
                        end = Some(next + offset + length);
                        break;
                    }
                    next += offset + length;
                }
                outside.push(' ');
                at = end.unwrap_or(at + run);
            }
            c => {
                outside.push(c);
                at += 1;
            }
        }
    }
    outside
}
