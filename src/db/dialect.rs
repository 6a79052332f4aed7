//! How each dialect's SQL text reads, for scripts read without a database (a DDL file): the
//! parser's dialect and the rules for names.

use sqlparser::dialect::{Dialect, PostgreSqlDialect, SQLiteDialect};

use super::Kind;

impl Kind {
    /// The dialect's name as reports show it: `postgresql` or `sqlite`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgresql",
            Kind::Sqlite => "sqlite",
        }
    }

    /// The dialect sqlparser reads this database's SQL in.
    pub fn parser_dialect(self) -> &'static dyn Dialect {
        match self {
            Kind::Postgres => &PostgreSqlDialect {},
            Kind::Sqlite => &SQLiteDialect {},
        }
    }

    /// An identifier as the database stores it, from its text and its quote (`None` unquoted):
    /// PostgreSQL folds unquoted names to lower case (ASCII only, as it does for UTF-8
    /// databases); SQLite keeps them as written.
    pub fn stored_identifier(self, value: &str, quote_style: Option<char>) -> String {
        match (self, quote_style) {
            (Kind::Postgres, None) => value.to_ascii_lowercase(),
            _ => value.to_string(),
        }
    }

    /// What two stored identifiers the database takes for the same name have in common: SQLite
    /// compares names ignoring ASCII case; PostgreSQL compares them exactly (its unquoted names
    /// are folded when stored, and quoted ones are case-sensitive).
    pub fn identifier_key(self, stored: &str) -> String {
        match self {
            Kind::Postgres => stored.to_owned(),
            Kind::Sqlite => stored.to_ascii_lowercase(),
        }
    }

    /// Whether the qualifier of a table name (`x` in `x.name`) is a schema. A SQLite qualifier
    /// names an attached database, not a schema in the model's sense.
    pub fn qualifier_is_schema(self) -> bool {
        match self {
            Kind::Postgres => true,
            Kind::Sqlite => false,
        }
    }
}
