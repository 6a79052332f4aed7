//! A script cut into statements at the token level, before any parsing: top-level semicolons,
//! trigger and function bodies, psql meta-commands, and the keywords that decide what a
//! statement is.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Whitespace};

/// Splits a script at top-level semicolons. Strings, comments and dollar-quoted bodies are
/// single tokens already; what remains are the `BEGIN ... END` bodies of SQLite triggers and
/// `BEGIN ATOMIC` functions, whose semicolons do not end the statement. psql meta-commands
/// (`\connect db`, `\restrict key`) end at the end of their line, with or without a `;`.
///
/// Each statement goes to `read` as soon as it ends, so that a large script's tokens are held
/// once, not a second time as statements; returns how many psql meta-commands were dropped.
pub(super) fn split_statements(tokens: Vec<TokenWithSpan>, mut read: impl FnMut(Vec<TokenWithSpan>)) -> usize {
    let mut read_unless_empty = |statement: Vec<TokenWithSpan>| {
        if statement.iter().any(|token| !matches!(token.token, Token::Whitespace(_))) {
            read(statement);
        }
    };
    let mut meta_commands = 0;
    let mut current: Vec<TokenWithSpan> = Vec::new();
    let mut block_depth = 0usize;
    let mut at_line_start = true;
    let mut in_meta_command = false;
    for token in tokens {
        let ends_line =
            matches!(token.token, Token::Whitespace(Whitespace::Newline | Whitespace::SingleLineComment { .. }));
        if in_meta_command {
            in_meta_command = !ends_line;
            at_line_start = ends_line;
            continue;
        }
        match &token.token {
            Token::EOF => continue,
            Token::Backslash if at_line_start => {
                meta_commands += 1;
                in_meta_command = true;
                at_line_start = false;
                continue;
            }
            Token::SemiColon if block_depth == 0 => {
                read_unless_empty(std::mem::take(&mut current));
                at_line_start = false;
                continue;
            }
            Token::Word(word) if word.quote_style.is_none() => match word.keyword {
                Keyword::BEGIN if block_depth > 0 || has_body(&current) => block_depth += 1,
                Keyword::CASE if block_depth > 0 => block_depth += 1,
                Keyword::END if block_depth > 0 => block_depth -= 1,
                _ => {}
            },
            _ => {}
        }
        if ends_line {
            at_line_start = true;
        } else if !matches!(token.token, Token::Whitespace(Whitespace::Space | Whitespace::Tab)) {
            at_line_start = false;
        }
        current.push(token);
    }
    if block_depth == 0 {
        read_unless_empty(current);
    } else {
        // A body that never ends was no body: split the rest at every semicolon rather than
        // lose it.
        let mut rest = current.into_iter().peekable();
        while rest.peek().is_some() {
            read_unless_empty(rest.by_ref().take_while(|token| token.token != Token::SemiColon).collect());
        }
    }
    meta_commands
}

/// Whether a statement is `CREATE [OR REPLACE] [TEMP] TRIGGER|FUNCTION|PROCEDURE`, whose body may
/// hold semicolons between `BEGIN` and `END`.
fn has_body(tokens: &[TokenWithSpan]) -> bool {
    let keywords = leading_keywords(tokens, 5);
    keywords.first() == Some(&Keyword::CREATE)
        && keywords.iter().any(|k| matches!(k, Keyword::TRIGGER | Keyword::FUNCTION | Keyword::PROCEDURE))
}

/// The keywords of the first `count` words of a statement (`NoKeyword` for other words).
pub(super) fn leading_keywords(tokens: &[TokenWithSpan], count: usize) -> Vec<Keyword> {
    tokens
        .iter()
        .filter(|token| !matches!(token.token, Token::Whitespace(_)))
        .take(count)
        .map(|token| match &token.token {
            Token::Word(word) if word.quote_style.is_none() => word.keyword,
            _ => Keyword::NoKeyword,
        })
        .collect()
}

/// Whether a token is the keyword, unquoted (`"on"` is an identifier).
fn is_keyword(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(word) if word.quote_style.is_none() && word.keyword == keyword)
}

/// `tokens` after the given keywords, when it starts with them.
pub(super) fn strip_keywords<'t>(tokens: &'t [&'t Token], keywords: &[Keyword]) -> Option<&'t [&'t Token]> {
    let mut rest = tokens;
    for keyword in keywords {
        match rest {
            [first, after @ ..] if is_keyword(first, *keyword) => rest = after,
            _ => return None,
        }
    }
    Some(rest)
}

/// Drops the `ONLY` of `CREATE INDEX ... ON ONLY t` (pg_dump writes it for partitioned tables),
/// which sqlparser 0.64 does not accept; for the schema it makes no difference.
pub(super) fn without_only_in_create_index(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let keywords = leading_keywords(&tokens, 3);
    if !matches!(
        keywords.as_slice(),
        [Keyword::CREATE, Keyword::INDEX, ..] | [Keyword::CREATE, Keyword::UNIQUE, Keyword::INDEX]
    ) {
        return tokens;
    }
    let words: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let only = words
        .windows(2)
        .find(|pair| is_keyword(&tokens[pair[0]].token, Keyword::ON))
        .filter(|pair| is_keyword(&tokens[pair[1]].token, Keyword::ONLY))
        .map(|pair| pair[1]);
    if let Some(only) = only {
        tokens.remove(only);
    }
    tokens
}

/// The script cut after each `;` that ends a line.
pub(super) fn pieces_ending_lines_with_semicolon(sql: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut end) = (0, 0);
    for line in sql.split_inclusive('\n') {
        end += line.len();
        if line.trim_end().ends_with(';') {
            pieces.push(&sql[start..end]);
            start = end;
        }
    }
    if start < sql.len() {
        pieces.push(&sql[start..]);
    }
    pieces
}

/// The byte offset of a tokenizer location (1-based line and character column); the end of
/// `sql` when the location lies beyond it.
pub(crate) fn byte_offset(sql: &str, location: Location) -> usize {
    let (mut line, mut column) = (1, 1);
    for (offset, ch) in sql.char_indices() {
        if line == location.line && column == location.column {
            return offset;
        }
        if ch == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    sql.len()
}
