//! Which database: SQLite, PostgreSQL or MySQL (MariaDB). How each reads its SQL text is in `dialect.rs`; its
//! backend and driver are chosen in the module's root.

/// Which database: the one name for a dialect across the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// SQLite, the embedded default.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB (tested on MariaDB).
    Mysql,
}
