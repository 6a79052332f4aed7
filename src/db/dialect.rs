//! How each dialect's SQL text reads, for scripts read without a database (a DDL file): the
//! parser's dialect and the rules for names.

use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};

use super::Kind;

impl Kind {
    /// The dialect's name as reports show it: `postgresql`, `sqlite` or `mysql`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgresql",
            Kind::Sqlite => "sqlite",
            Kind::Mysql => "mysql",
        }
    }

    /// The dialect sqlparser reads this database's SQL in.
    pub fn parser_dialect(self) -> &'static dyn Dialect {
        match self {
            Kind::Postgres => &PostgreSqlDialect {},
            Kind::Sqlite => &SQLiteDialect {},
            Kind::Mysql => &MySqlDialect {},
        }
    }

    /// An identifier as the database stores it, from its text and its quote (`None` unquoted):
    /// PostgreSQL folds unquoted names to lower case (ASCII only, as it does for UTF-8
    /// databases); SQLite and MySQL keep them as written.
    pub fn stored_identifier(self, value: &str, quote_style: Option<char>) -> String {
        match (self, quote_style) {
            (Kind::Postgres, None) => value.to_ascii_lowercase(),
            _ => value.to_string(),
        }
    }

    /// What two stored identifiers the database takes for the same name have in common: SQLite
    /// compares names ignoring ASCII case; PostgreSQL compares them exactly (its unquoted names
    /// are folded when stored, and quoted ones are case-sensitive); MySQL compares column names
    /// ignoring case, and table names too unless `lower_case_table_names` is 0, where two tables
    /// differing in case only are still one name here (the tool refuses to tell them apart).
    pub fn identifier_key(self, stored: &str) -> String {
        match self {
            Kind::Postgres => stored.to_owned(),
            Kind::Sqlite | Kind::Mysql => stored.to_ascii_lowercase(),
        }
    }

    /// A possibly `schema.`-qualified name as this database's own clients read it, in SQL the
    /// tool suggests to a user: backquoted on MySQL (which the tool's ANSI-mode connections read
    /// too), double-quoted elsewhere.
    pub fn quote_for_clients(self, name: &str) -> String {
        name.split('.').map(|part| self.quote_part_for_clients(part)).collect::<Vec<_>>().join(".")
    }

    /// One name (a `.` in it is part of the name) quoted as [`Self::quote_for_clients`] does.
    pub fn quote_part_for_clients(self, name: &str) -> String {
        match self {
            Kind::Mysql => format!("`{}`", name.replace('`', "``")),
            Kind::Sqlite | Kind::Postgres => super::sql::quote_identifier(name),
        }
    }

    /// Whether the qualifier of a table name (`x` in `x.name`) is a schema. A SQLite qualifier
    /// names an attached database, not a schema in the model's sense; a MySQL one names a
    /// database, which is MySQL's schema.
    pub fn qualifier_is_schema(self) -> bool {
        match self {
            Kind::Postgres | Kind::Mysql => true,
            Kind::Sqlite => false,
        }
    }
}
