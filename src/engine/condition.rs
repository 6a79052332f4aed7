//! Roots by condition (`delete MODEL --where "created_at < '2020-01-01'"`): the root model's rows
//! that match a SQL condition, taken in key order a batch at a time, so a long purge resumes
//! where it stopped and each root's subtree still goes children first.

use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::schema::ddl::byte_offset;

use super::steps::node_sql;
use crate::db::sql::{Param, SqlBuilder};
use crate::db::{Database, DbError, Kind, first_column, quote_literal};
use crate::planner::Plan;
use crate::schema::Schema;

/// How many root rows one run of a purge takes: each batch is one run in the audit trail, its
/// roots listed there.
pub const ROOTS_PER_RUN: u64 = 1_000;

/// A condition on the root model's rows, checked to be one SQL expression in the database's
/// dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootCondition {
    /// As the user wrote it: what the plan shows and the audit trail records.
    pub written: String,
    /// As the tool runs it.
    sql: String,
}

/// A condition that is not one SQL expression.
#[derive(Debug, thiserror::Error)]
#[error("`--where {written}` is not one SQL condition in {dialect}'s dialect: {reason}")]
pub struct ConditionError {
    written: String,
    dialect: &'static str,
    reason: String,
}

/// What of a MySQL condition MariaDB would read otherwise than the tool does, if anything: a
/// comment (MariaDB runs `/*M! ... */` and `/*! ... */`, which sqlparser skips or moves), a
/// backslash (the connections read it as itself, where MySQL's default mode escapes with it: a
/// `LIKE 'a\_%'` would match other rows), or a string literal of another kind than `'...'` and
/// `"..."` (`N'...'`, `X'...'`, kept as written).
fn read_otherwise_by_mariadb(text: &str, tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> Option<String> {
    use sqlparser::tokenizer::Whitespace;
    if text.contains('\\') {
        return Some(
            "a backslash reads differently on cascade's connections: write the condition without one (for LIKE, \
             name an escape: LIKE 'a!_%' ESCAPE '!')"
                .to_owned(),
        );
    }
    let comment = || "write the condition without comments".to_owned();
    tokens
        .iter()
        .find_map(|token| match &token.token {
            Token::Whitespace(Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_)) => {
                Some(comment())
            }
            Token::Whitespace(_)
            | Token::Word(_)
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::Comma
            | Token::Period
            | Token::LParen
            | Token::RParen
            | Token::Eq
            | Token::DoubleEq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::Spaceship
            | Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
            | Token::StringConcat
            | Token::Ampersand
            | Token::Pipe
            | Token::Caret
            | Token::Tilde
            | Token::ExclamationMark
            | Token::ShiftLeft
            | Token::ShiftRight => None,
            other => Some(format!("`{other}` is not read the same way on cascade's connections")),
        })
        // `/*! ... */` hints come out of the tokenizer as their content: the text tells them.
        .or_else(|| text.contains("/*").then(comment))
}

/// `text` with each string literal written again as the tool's MySQL connections read it, the
/// rest as written: single-quoted, the quote doubled. They quote identifiers with double quotes
/// (`ANSI_QUOTES`), where a purge's `"2020-01-01"` would name a column, and take a backslash as
/// itself (`NO_BACKSLASH_ESCAPES`), where `'it\'s'` would end the string early. The literal's
/// value is the one MySQL's own reading of `text` gives it.
fn standard_strings(text: &str, tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> String {
    let (mut written, mut copied) = (String::new(), 0);
    for token in tokens {
        let (Token::SingleQuotedString(value) | Token::DoubleQuotedString(value)) = &token.token else { continue };
        let start = byte_offset(text, token.span.start);
        written.push_str(&text[copied..start]);
        written.push_str(&quote_literal(value));
        copied = byte_offset(text, token.span.end);
    }
    written.push_str(&text[copied..]);
    written
}

impl RootCondition {
    /// `text` as a condition on a `kind` database's rows: one expression, nothing after it.
    pub fn parse(kind: Kind, text: &str) -> Result<Self, ConditionError> {
        let refused = |reason: String| ConditionError { written: text.to_owned(), dialect: kind.name(), reason };
        let mut parser = Parser::new(kind.parser_dialect()).try_with_sql(text).map_err(|e| refused(e.to_string()))?;
        parser.parse_expr().map_err(|error| refused(error.to_string()))?;
        let rest = parser.peek_token();
        if rest.token != sqlparser::tokenizer::Token::EOF {
            return Err(refused(format!("`{rest}` follows the condition")));
        }
        let sql = if kind == Kind::Mysql {
            let tokens = Tokenizer::new(kind.parser_dialect(), text)
                .tokenize_with_location()
                .map_err(|error| refused(error.to_string()))?;
            if let Some(unread) = read_otherwise_by_mariadb(text, &tokens) {
                return Err(refused(unread));
            }
            standard_strings(text, &tokens)
        } else {
            text.to_owned()
        };
        Ok(Self { written: text.to_owned(), sql })
    }

    /// The keys (as text) of up to `limit` root rows of `plan` that match the condition, in key
    /// order, after the key `after` when given.
    pub async fn roots(
        &self,
        database: &Database,
        schema: &Schema,
        plan: &Plan,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<String>, DbError> {
        let root = node_sql(&plan.root, None, database.backend(), Some(schema));
        let key = root.key();
        let mut sql = SqlBuilder::new(database.backend());
        sql.push("SELECT ");
        database.backend().key_text(&mut sql, std::slice::from_ref(&key));
        // Named apart from the key: `ORDER BY` the key's name would sort the text by it.
        sql.push(" AS cascade_key FROM ").push(&root.names.quoted_table()).push(" WHERE (").push(&self.sql).push(")");
        if let Some(after) = after {
            sql.push(" AND ").identifier(&key).push(" > ");
            let key_type = root.key_types.first().cloned().unwrap_or(crate::db::KeyType::Integer);
            sql.key_value(&key_type, Param::Value(crate::db::key_value(&key_type, after)));
        }
        sql.push(" ORDER BY ").identifier(&key).push(" LIMIT ").push(&limit.to_string());
        Ok(first_column(database.fetch_texts(&sql.finish()).await?))
    }

    /// Every root row of `plan` that matches the condition, in key order: for a dry run's counts.
    pub async fn all_roots(&self, database: &Database, schema: &Schema, plan: &Plan) -> Result<Vec<String>, DbError> {
        let mut all: Vec<String> = Vec::new();
        loop {
            let batch = self.roots(database, schema, plan, all.last().map(String::as_str), ROOTS_PER_RUN).await?;
            let done = (batch.len() as u64) < ROOTS_PER_RUN;
            all.extend(batch);
            if done {
                return Ok(all);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RootCondition;
    use crate::db::Kind;

    #[test]
    fn a_condition_is_one_expression() {
        for kind in [Kind::Sqlite, Kind::Postgres, Kind::Mysql] {
            assert!(RootCondition::parse(kind, "created_at < '2020-01-01' AND status = 'closed'").is_ok());
            let error = RootCondition::parse(kind, "id > 1; DROP TABLE org").unwrap_err().to_string();
            assert!(error.contains("`;` follows the condition"), "{error}");
            assert!(RootCondition::parse(kind, "id >").is_err());
        }
    }

    #[test]
    fn mysql_double_quoted_strings_become_single_quoted() {
        let condition = RootCondition::parse(Kind::Mysql, r#"`created` < "2020-01-01""#).unwrap();
        assert_eq!(condition.sql, "`created` < '2020-01-01'");
        let quoted = RootCondition::parse(Kind::Mysql, r#"note = "it's""#).unwrap();
        assert_eq!(quoted.sql, "note = 'it''s'");
        // A doubled or escaped quote stays inside its string: nothing of it becomes SQL.
        let doubled = RootCondition::parse(Kind::Mysql, "note = 'x'' OR ''1''=''1'").unwrap();
        assert_eq!(doubled.sql, "note = 'x'' OR ''1''=''1'");
        // What MariaDB would read otherwise is refused: a backslash, a comment it runs, N'...'.
        let refused =
            [r"note = 'it\'s'", "id = 1 /*M! OR 1=1 */", "id = 1 /*! OR 1=1 */", "note = N'x'", "id = 1 -- x"];
        for condition in refused {
            let error = RootCondition::parse(Kind::Mysql, condition).unwrap_err().to_string();
            assert!(error.contains("is not one SQL condition"), "{condition}: {error}");
        }
        assert_eq!(condition.written, r#"`created` < "2020-01-01""#);
    }
}
