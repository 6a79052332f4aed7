//! Which columns a partial index's predicate asks not to be NULL. A lookup by those columns
//! (`column = ANY($1)`, `column IN (...)`, which no NULL matches) implies such a predicate, so
//! both databases use the index for it; it implies no other predicate (`deleted_at IS NULL`).

use sqlparser::ast::{BinaryOperator, Expr, Statement};
use sqlparser::parser::Parser;

use crate::db::Kind;

/// The columns `predicate` asks not to be NULL when that is all it asks
/// (`a IS NOT NULL [AND b IS NOT NULL ...]`); empty for any other predicate.
pub(super) fn not_null_columns(kind: Kind, predicate: &Expr) -> Vec<String> {
    let mut columns = Vec::new();
    if collect(kind, predicate, &mut columns) { columns } else { Vec::new() }
}

/// [`not_null_columns`] of a predicate's text, as PostgreSQL's `pg_get_expr` gives it.
pub(super) fn not_null_columns_in_text(kind: Kind, predicate: &str) -> Vec<String> {
    Parser::new(kind.parser_dialect())
        .try_with_sql(predicate)
        .and_then(|mut parser| parser.parse_expr())
        .map_or_else(|_| Vec::new(), |expr| not_null_columns(kind, &expr))
}

/// [`not_null_columns`] of the predicate of a `CREATE INDEX` statement, as SQLite keeps it.
pub(super) fn not_null_columns_of_index(kind: Kind, create_index: &str) -> Vec<String> {
    match Parser::parse_sql(kind.parser_dialect(), create_index).as_deref() {
        Ok([Statement::CreateIndex(create)]) => {
            create.predicate.as_ref().map_or_else(Vec::new, |predicate| not_null_columns(kind, predicate))
        }
        _ => Vec::new(),
    }
}

fn collect(kind: Kind, expr: &Expr, columns: &mut Vec<String>) -> bool {
    match expr {
        Expr::Nested(inner) => collect(kind, inner, columns),
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            collect(kind, left, columns) && collect(kind, right, columns)
        }
        Expr::IsNotNull(operand) => match column(operand) {
            Some(ident) => {
                columns.push(kind.stored_identifier(&ident.value, ident.quote_style));
                true
            }
            None => false,
        },
        _ => false,
    }
}

fn column(expr: &Expr) -> Option<&sqlparser::ast::Ident> {
    match expr {
        Expr::Nested(inner) => column(inner),
        Expr::Identifier(ident) => Some(ident),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{not_null_columns_in_text, not_null_columns_of_index};
    use crate::db::Kind;

    #[test]
    fn only_predicates_that_ask_columns_not_to_be_null_are_implied_by_a_lookup() {
        let of = |text: &str| not_null_columns_in_text(Kind::Postgres, text);
        assert_eq!(of("(account_id IS NOT NULL)"), ["account_id"]);
        assert_eq!(of("((a IS NOT NULL) AND (\"B\" IS NOT NULL))"), ["a", "B"]);
        assert!(of("(deleted_at IS NULL)").is_empty());
        assert!(of("((a IS NOT NULL) OR (b IS NOT NULL))").is_empty());
        assert!(of("((a IS NOT NULL) AND (deleted_at IS NULL))").is_empty());
        assert!(of("not an expression (").is_empty());
        let index = "CREATE INDEX i ON t (a) WHERE a IS NOT NULL";
        assert_eq!(not_null_columns_of_index(Kind::Sqlite, index), ["a"]);
        assert!(not_null_columns_of_index(Kind::Sqlite, "CREATE INDEX i ON t (a)").is_empty());
    }
}
