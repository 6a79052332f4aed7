//! Database URLs: parsed once into the backend they name, and redacted wherever they are shown.

use super::backend::{Backend, Kind};
use super::DbError;

/// The database URL used when neither `--database-url` nor `CASCADE_DATABASE_URL` is given.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://cascade.db";

/// A database URL and the kind of database it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    kind: Kind,
    url: String,
}

impl DatabaseUrl {
    /// `sqlite:...` or `postgres:`/`postgresql:...`; anything else is refused (redacted).
    pub fn parse(url: &str) -> Result<Self, DbError> {
        let kind = if url.starts_with("sqlite:") {
            Kind::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Kind::Postgres
        } else {
            return Err(DbError::UnsupportedUrl(redact(url)));
        };
        Ok(Self { kind, url: url.to_owned() })
    }

    /// Which database this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The backend that speaks to it.
    pub fn backend(&self) -> &'static dyn Backend {
        self.kind.backend()
    }

    /// The URL as given, password included: for connecting only, never for showing.
    pub(crate) fn as_str(&self) -> &str {
        &self.url
    }

    /// The URL without its password, for messages and logs.
    pub fn redacted(&self) -> String {
        redact(&self.url)
    }

    /// The file path of a SQLite URL (`sqlite://PATH?options`), empty for an in-memory database.
    pub(crate) fn sqlite_path(&self) -> &str {
        let path = self.url.trim_start_matches("sqlite:").trim_start_matches("//");
        path.split('?').next().unwrap_or(path)
    }
}

/// The URL without its password, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{DatabaseUrl, Kind, redact};

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://app:s3cret@db:5432/app"), "postgres://app:***@db:5432/app");
        assert_eq!(redact("postgres://app@db/app"), "postgres://app@db/app");
        assert_eq!(redact("sqlite://cascade.db"), "sqlite://cascade.db");
    }

    #[test]
    fn the_scheme_names_the_backend_once() {
        assert_eq!(DatabaseUrl::parse("sqlite://a.db?mode=ro").unwrap().kind(), Kind::Sqlite);
        assert_eq!(DatabaseUrl::parse("sqlite://a.db?mode=ro").unwrap().sqlite_path(), "a.db");
        assert_eq!(DatabaseUrl::parse("postgresql://u@h/d").unwrap().kind(), Kind::Postgres);
        let refused = DatabaseUrl::parse("mysql://u:pw@h/d").unwrap_err().to_string();
        assert!(refused.contains("mysql://u:***@h/d"), "{refused}");
    }
}
