//! Database URLs: parsed once into the backend they name, and redacted wherever they are shown.

use super::DbError;
use super::backend::Kind;

/// The file of [`DEFAULT_DATABASE_FILE`] and [`DEFAULT_DATABASE_URL`], written once.
macro_rules! default_database_file {
    () => {
        "cascade-demo.db"
    };
}

/// The SQLite file `cascade demo` builds by default, which [`DEFAULT_DATABASE_URL`] names: the
/// commands after the demo need no flags, and the demo, which replaces its file, never replaces
/// a database of an application's that the default named.
pub const DEFAULT_DATABASE_FILE: &str = default_database_file!();

/// The database URL used when neither `--database-url`, `CASCADE_DATABASE_URL` nor
/// `[settings] database_url` is given: the demo's database.
pub const DEFAULT_DATABASE_URL: &str = concat!("sqlite://", default_database_file!());

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

/// Query parameters whose values are secrets (libpq's names).
const SECRET_PARAMETERS: &[&str] = &["password", "sslpassword", "passfile"];

/// The URL without its secrets, for messages, logs and the audit table: the password of the
/// user info (even one with an unencoded `@`) and the values of `password`, `sslpassword` and
/// `passfile` query parameters become `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_keywords(url);
    };
    // The user info ends at the last `@` before the path: a password may hold `@`, `:` or `?`
    // unencoded, a host never does. Without an `@` there, one before the query counts.
    let path_start = rest.find('/').unwrap_or(rest.len());
    let query_start = rest.find('?').unwrap_or(rest.len());
    let user_info_end = rest[..path_start].rfind('@').or_else(|| rest[..query_start].rfind('@'));
    let (authority, remainder) = match user_info_end {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _password)) => (format!("{user}:***@"), &rest[at + 1..]),
            None => (rest[..=at].to_owned(), &rest[at + 1..]),
        },
        None => (String::new(), rest),
    };
    let (before_query, query) = match remainder.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (remainder, None),
    };
    let mut redacted = format!("{scheme}://{authority}{before_query}");
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_secret(name) => format!("{name}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        redacted.push('?');
        redacted.push_str(&pairs.join("&"));
    }
    redacted
}

fn is_secret(name: &str) -> bool {
    SECRET_PARAMETERS.iter().any(|secret| name.trim().eq_ignore_ascii_case(secret))
}

/// A libpq keyword string (`host=db password=s3cret`), or anything else that is not a URL, with
/// the values of secret keywords replaced.
fn redact_keywords(text: &str) -> String {
    text.split(' ')
        .map(|word| match word.split_once('=') {
            Some((name, _)) if is_secret(name) => format!("{name}=***"),
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A command line with every database URL in it redacted (`URL`, `--database-url URL` and
/// `--database-url=URL` alike), as it is stored in `cascade_run`.
pub fn redact_command_line(args: impl IntoIterator<Item = String>) -> String {
    let redact_arg = |arg: String| match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => format!("{flag}={}", redact(value)),
        _ => redact(&arg),
    };
    args.into_iter().map(redact_arg).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::{DatabaseUrl, Kind, redact, redact_command_line};

    #[test]
    fn passwords_never_reach_messages() {
        let cases = [
            ("postgres://app:s3cret@db:5432/app", "postgres://app:***@db:5432/app"),
            ("postgres://app@db/app", "postgres://app@db/app"),
            ("sqlite://cascade.db", "sqlite://cascade.db"),
            ("sqlite://cascade.db?mode=ro", "sqlite://cascade.db?mode=ro"),
            // An unencoded `@` (and `:`) in the password.
            ("postgres://app:p@ss:w@rd@db/app", "postgres://app:***@db/app"),
            (
                "postgres://app@db/app?password=s3cret&sslmode=require",
                "postgres://app@db/app?password=***&sslmode=require",
            ),
            ("postgresql://db/app?sslpassword=k3y&PassFile=/p", "postgresql://db/app?sslpassword=***&PassFile=***"),
            ("postgres://db/app?application_name=a@b", "postgres://db/app?application_name=a@b"),
            // An unencoded `?` in the password, and a keyword string that is no URL at all.
            ("postgres://app:pa?ss@db/app", "postgres://app:***@db/app"),
            ("host=db password=s3cret user=app", "host=db password=*** user=app"),
        ];
        for (url, expected) in cases {
            assert_eq!(redact(url), expected, "{url}");
        }
    }

    #[test]
    fn command_lines_keep_everything_but_the_secrets() {
        let argv = [
            "cascade",
            "--database-url",
            "postgres://u:pw@h/d",
            "delete",
            "org",
            "1",
            "--database-url=postgres://u:pw2@h/d",
        ];
        let stored = redact_command_line(argv.map(String::from));
        assert_eq!(
            stored,
            "cascade --database-url postgres://u:***@h/d delete org 1 --database-url=postgres://u:***@h/d"
        );
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
