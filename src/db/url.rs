//! Database URLs: parsed once into the backend they name, and redacted wherever they are shown.

use super::DbError;
use super::kind::Kind;

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
    /// `sqlite:...`, `postgres:`/`postgresql:...` or `mysql:`/`mariadb:...`; anything else is
    /// refused (redacted).
    pub fn parse(url: &str) -> Result<Self, DbError> {
        let kind = if url.starts_with("sqlite:") {
            Kind::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Kind::Postgres
        } else if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            Kind::Mysql
        } else {
            return Err(DbError::UnsupportedUrl(redact(url)));
        };
        register_url_secrets(url);
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
/// user info (even one holding `@`, `:`, `?` or `/` unencoded) and the values of `password`,
/// `sslpassword` and `passfile` query parameters or keywords become `***`. Text that does not
/// parse as a URL is redacted as a keyword string; when in doubt, more is redacted, never less.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = split_scheme(url) else {
        return redact_keywords(url);
    };
    let (user_info, remainder) = split_user_info(rest);
    let user_info = match user_info {
        Some(UserInfo { user, password: Some(_) }) => format!("{user}:***@"),
        Some(UserInfo { user, password: None }) => format!("{user}@"),
        None => String::new(),
    };
    let (before_query, query) = match remainder.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (remainder, None),
    };
    let mut redacted = format!("{scheme}{user_info}{before_query}");
    if let Some(query) = query {
        redacted.push('?');
        redacted.push_str(&hide_query_values(query, is_secret));
    }
    redacted
}

/// [`redact`], and the value of every query parameter as `***`: for a URL whose query may hold a
/// token under any name (a webhook's), shown where everyone reads it.
pub(crate) fn redact_with_query(url: &str) -> String {
    let redacted = redact(url);
    match redacted.split_once('?') {
        Some((before, query)) => format!("{before}?{}", hide_query_values(query, |_| true)),
        None => redacted,
    }
}

/// Registers the secrets of `url` with [`crate::secret`], so that they are redacted wherever they
/// come back (a driver's warning, a server's echo): the password of its user info, and the values
/// of the query parameters whose names are `secret`.
fn register_secrets(url: &str, secret: impl Fn(&str) -> bool) {
    let Some((_scheme, rest)) = split_scheme(url) else { return };
    let (user_info, remainder) = split_user_info(rest);
    if let Some(UserInfo { user, password: Some(password) }) = user_info {
        crate::secret::register_credentials(user, password);
    }
    let query = remainder.split_once('?').map_or("", |(_, query)| query);
    for (name, value) in query.split('&').filter_map(|pair| pair.split_once('=')) {
        if secret(name) {
            crate::secret::register(value);
        }
    }
}

/// Registers the secrets of a database URL with [`crate::secret`] (its password and libpq's secret
/// parameters), so that they are redacted wherever they come back.
pub fn register_url_secrets(url: &str) {
    register_secrets(url, is_secret);
}

/// [`register_secrets`] for a URL whose query may hold a token under any name (a webhook's).
pub(crate) fn register_secrets_with_query(url: &str) {
    register_secrets(url, |_| true);
}

/// `query` with the values of the parameters whose names are `secret` as `***`.
fn hide_query_values(query: &str, secret: impl Fn(&str) -> bool) -> String {
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret(name) => format!("{name}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    pairs.join("&")
}

/// `scheme://` (or a PostgreSQL or MySQL scheme typed without the slashes) and what follows it.
fn split_scheme(url: &str) -> Option<(&str, &str)> {
    if let Some(at) = url.find("://") {
        return Some((&url[..at + 3], &url[at + 3..]));
    }
    ["postgresql:", "postgres:", "mysql:", "mariadb:"]
        .iter()
        .find(|scheme| url.get(..scheme.len()).is_some_and(|start| start.eq_ignore_ascii_case(scheme)))
        .map(|scheme| url.split_at(scheme.len()))
}

/// The user and password of a URL.
struct UserInfo<'a> {
    user: &'a str,
    password: Option<&'a str>,
}

/// The user info at the start of `rest`, if any, and what follows it. A user name holds none
/// of `:@/?`; a password may hold anything. So a `:` that comes first starts a password, unless
/// it starts a port (digits, then the path, the query or the end, with no `@` before the
/// query), and the password ends at the first `@` after which no other `@` comes before a query
/// (a `?` followed by `name=`); failing that, at the last `@`.
fn split_user_info(rest: &str) -> (Option<UserInfo<'_>>, &str) {
    let Some(end) = rest.find([':', '@', '/', '?']) else {
        return (None, rest);
    };
    let user = &rest[..end];
    match rest.as_bytes()[end] {
        b'@' => (Some(UserInfo { user, password: None }), &rest[end + 1..]),
        b':' if !starts_with_port(&rest[end + 1..]) => {
            let ats = || rest.match_indices('@').map(|(at, _)| at).filter(|at| *at > end);
            match ats().find(|at| ends_user_info(&rest[at + 1..])).or_else(|| ats().next_back()) {
                Some(at) => (Some(UserInfo { user, password: Some(&rest[end + 1..at]) }), &rest[at + 1..]),
                None => (None, rest),
            }
        }
        _ => (None, rest),
    }
}

fn starts_with_port(after_colon: &str) -> bool {
    let digits = after_colon.bytes().take_while(u8::is_ascii_digit).count();
    let after = &after_colon[digits..];
    let before_query = after.split('?').next().unwrap_or(after);
    digits > 0 && (after.is_empty() || after.starts_with(['/', '?'])) && !before_query.contains('@')
}

/// What follows an `@` is the host and the rest of a URL: no `@` before its query, and the query
/// (if any) starts with a parameter.
fn ends_user_info(after_at: &str) -> bool {
    match after_at.split_once('?') {
        Some((host_and_path, query)) => {
            let name = query.split('=').next().unwrap_or(query);
            !host_and_path.contains('@') && query.contains('=') && !name.contains(['@', '/', '?'])
        }
        None => !after_at.contains('@'),
    }
}

fn is_secret(name: &str) -> bool {
    SECRET_PARAMETERS.iter().any(|secret| name.trim().eq_ignore_ascii_case(secret))
}

/// A libpq keyword string (`host=db password=s3cret`, `password = 's3 cret'`), or anything else
/// that is not a URL, with the values of secret keywords replaced.
fn redact_keywords(text: &str) -> String {
    let mut redacted = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(equals) = rest.find('=') {
        let before = &rest[..equals];
        let name = before.trim_end().rsplit(|c: char| c.is_whitespace()).next().unwrap_or("");
        redacted.push_str(before);
        redacted.push('=');
        let after = &rest[equals + 1..];
        if !is_secret(name) {
            rest = after;
            continue;
        }
        let value = after.trim_start();
        redacted.push_str(&after[..after.len() - value.len()]);
        redacted.push_str("***");
        rest = &value[keyword_value_len(value)..];
    }
    redacted.push_str(rest);
    redacted
}

/// The length of a keyword's value at the start of `value`: quoted (`'...'`, `\'` escaping a
/// quote) up to its closing quote, else up to the next whitespace.
fn keyword_value_len(value: &str) -> usize {
    let Some(quoted) = value.strip_prefix('\'') else {
        return value.find(char::is_whitespace).unwrap_or(value.len());
    };
    let mut escaped = false;
    for (index, c) in quoted.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => return index + 2,
            _ => {}
        }
    }
    value.len()
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
            // Unencoded `?` and `/`, and every other character a password may hold.
            ("postgres://app:p?a/ss@db/app", "postgres://app:***@db/app"),
            ("postgres://app:p/a?ss@db:5432/app?sslmode=require", "postgres://app:***@db:5432/app?sslmode=require"),
            ("postgres://app:a@b/c@db/app", "postgres://app:***@db/app"),
            ("postgres://app:p#s&s=w@db/app", "postgres://app:***@db/app"),
            ("postgres://app:5432/x@db/app", "postgres://app:***@db/app"),
            ("postgres://app:s3cret@db/app?application_name=a@b", "postgres://app:***@db/app?application_name=a@b"),
            ("postgres://db:5432/app?application_name=a:b@c", "postgres://db:5432/app?application_name=a:b@c"),
            ("postgres://app:s3cret@", "postgres://app:***@"),
            ("postgres://:s3cret@db/app", "postgres://:***@db/app"),
            // Forms that do not parse: no slashes, an upper-case scheme, keywords with spaces
            // and quotes.
            ("postgres:app:s3cret@db/app", "postgres:app:***@db/app"),
            ("mysql://app:s3cret@db/app?socket=/run/m.sock", "mysql://app:***@db/app?socket=/run/m.sock"),
            ("mysql:app:s3cret@db/app", "mysql:app:***@db/app"),
            ("mariadb:app:s3cret@db/app", "mariadb:app:***@db/app"),
            ("POSTGRES://app:s3cret@db/app", "POSTGRES://app:***@db/app"),
            ("host=db password = s3cret user=app", "host=db password = *** user=app"),
            ("host=db password='s3 c\\'ret' user=app", "host=db password=*** user=app"),
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
        assert_eq!(DatabaseUrl::parse("mysql://u@h/d?socket=/s").unwrap().kind(), Kind::Mysql);
        assert_eq!(DatabaseUrl::parse("mariadb://u@h/d").unwrap().kind(), Kind::Mysql);
        let refused = DatabaseUrl::parse("oracle://u:pw@h/d").unwrap_err().to_string();
        assert!(refused.contains("oracle://u:***@h/d"), "{refused}");
    }
}
