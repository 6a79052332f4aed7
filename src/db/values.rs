//! The values statements bind: how a key column's values are bound, and one bound scalar.

/// How a key column's values are bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyType {
    /// Bound as 64-bit integers.
    Integer,
    /// Bound as text.
    Text,
    /// Another PostgreSQL type (`uuid`, ...): values travel as text and are cast to it.
    Other(String),
    /// A SQLite column declared without a type: it keeps values as they were inserted; a key
    /// that reads exactly as an integer is bound as one, any other as text (a deletion refuses a
    /// column holding a text that reads as an integer, which the two cannot tell apart).
    Untyped,
}

impl KeyType {
    /// Whether PostgreSQL compares values of the two types with `=`: only the pairs known to
    /// have no `=` between them (an integer and a text, a `uuid` and either) are refused; a type
    /// the tool does not know may have casts of its own.
    pub fn compares_on_postgres(&self, other: &KeyType) -> bool {
        let is_uuid = |key_type: &KeyType| matches!(key_type, KeyType::Other(name) if name == "uuid");
        let plain = |key_type: &KeyType| matches!(key_type, KeyType::Integer | KeyType::Text);
        match (self, other) {
            (KeyType::Integer, KeyType::Text) | (KeyType::Text, KeyType::Integer) => false,
            _ => !((is_uuid(self) && plain(other)) || (plain(self) && is_uuid(other))),
        }
    }

    /// Whether a key of this type is always found by `=` in a column of type `other` on either
    /// database: integers in integers, strings in strings, and a `uuid` in a `uuid`. A lookup
    /// between such columns needs no check by the database before a deletion.
    pub fn always_compares_with(&self, other: &KeyType) -> bool {
        match (self, other) {
            (KeyType::Integer, KeyType::Integer) | (KeyType::Text, KeyType::Text) => true,
            (KeyType::Other(left), KeyType::Other(right)) => left == "uuid" && right == "uuid",
            _ => false,
        }
    }

    /// Whether PostgreSQL converts a column of this type to `to` in `ALTER COLUMN ... TYPE ...
    /// USING column::to`: every type converts to and from a string type (its I/O conversion
    /// cast), and integers to integers; a `uuid` and an integer have no cast between them. A type
    /// the tool does not know is not assumed to have one.
    pub fn casts_on_postgres(&self, to: &KeyType) -> bool {
        matches!((self, to), (KeyType::Text, _) | (_, KeyType::Text) | (KeyType::Integer, KeyType::Integer))
    }

    /// From a column's declared type by SQLite's affinity rule (a type containing `INT` has
    /// integer affinity; `CHAR`, `CLOB` or `TEXT`, text; none, none). PostgreSQL columns get
    /// theirs from the catalog instead.
    pub fn of_declared(data_type: &str) -> Self {
        let lower = data_type.to_ascii_lowercase();
        if lower.contains("int") || lower == "serial" || lower == "bigserial" {
            KeyType::Integer
        } else if lower.trim().is_empty() {
            KeyType::Untyped
        } else if lower.contains("char") || lower.contains("text") || lower.contains("clob") {
            KeyType::Text
        } else {
            KeyType::Other(lower)
        }
    }
}

/// A bound scalar value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// One integer.
    Integer(i64),
    /// One text.
    Text(String),
}
