//! `[settings] allowed_users`: who may run the destructive commands.

use super::Config;
use crate::diagnostic::Sources;
use crate::user::OsUser;

/// A destructive command refused because the user running it is not in `allowed_users`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "user `{user}` may not run `{command}`: `[settings] allowed_users` ({place}) allows only {}; \
     run it as one of them, or add `{user}` to the list",
    allowed.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
)]
pub struct UserNotAllowed {
    /// Who runs the process (as `OsUser::display_name` writes it).
    pub user: String,
    /// The command refused, such as `delete --confirm`.
    pub command: String,
    /// The users the setting allows.
    pub allowed: Vec<String>,
    /// Where the setting is written, `file:line:column`.
    pub place: String,
}

/// Refuses the destructive `command` (for messages: `delete --confirm`, `worker`, ...) unless
/// the operating-system user running this process is in `[settings] allowed_users`, or the
/// setting is absent. Every destructive command calls this before it connects to the database.
pub fn check_allowed_user(config: &Config, sources: &Sources, command: &str) -> Result<(), UserNotAllowed> {
    allow_user(config, sources, &crate::user::current(), command)
}

/// [`check_allowed_user`] for a given `user`.
pub(crate) fn allow_user(
    config: &Config,
    sources: &Sources,
    user: &OsUser,
    command: &str,
) -> Result<(), UserNotAllowed> {
    let Some(allowed) = &config.settings.allowed_users else { return Ok(()) };
    let name = user.display_name();
    if allowed.value.iter().any(|allowed| allowed.value == name) {
        return Ok(());
    }
    Err(UserNotAllowed {
        user: name,
        command: command.to_owned(),
        allowed: allowed.value.iter().map(|user| user.value.clone()).collect(),
        place: sources.describe(&allowed.location),
    })
}

#[cfg(test)]
mod tests {
    use super::allow_user;
    use crate::diagnostic::{Code, Sources};
    use crate::planner::fixture;
    use crate::user::OsUser;

    fn loaded(text: &str) -> crate::config::Loaded {
        let mut sources = Sources::default();
        sources.add("cascades/cascade.toml", text);
        crate::config::load_sources(sources)
    }

    fn user(name: &str) -> OsUser {
        OsUser { uid: Some(1000), name: Some(name.to_owned()) }
    }

    #[test]
    fn only_listed_users_pass_and_the_refusal_names_user_setting_and_place() {
        let loaded = loaded("[settings]\nallowed_users = [\"deploy\", \"postgres\"]\n");
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let allow = |name: &str| allow_user(&loaded.config, &loaded.sources, &user(name), "delete --confirm");
        assert_eq!(allow("deploy"), Ok(()));
        assert_eq!(allow("postgres"), Ok(()));
        assert_eq!(
            allow("alice").unwrap_err().to_string(),
            "user `alice` may not run `delete --confirm`: `[settings] allowed_users` \
             (cascades/cascade.toml:2:17) allows only `deploy`, `postgres`; run it as one of them, or add \
             `alice` to the list"
        );
        assert!(allow("Deploy").is_err(), "user names are compared exactly");
    }

    #[test]
    fn without_the_setting_anyone_may() {
        let loaded = loaded("[settings]\nbulk_chunk_size = 10\n");
        assert_eq!(allow_user(&loaded.config, &loaded.sources, &user("alice"), "worker"), Ok(()));
    }

    #[test]
    fn a_user_without_a_name_is_matched_as_uid_n() {
        let loaded = loaded("[settings]\nallowed_users = [\"uid 1000\"]\n");
        let nameless = OsUser { uid: Some(1000), name: None };
        assert_eq!(allow_user(&loaded.config, &loaded.sources, &nameless, "worker"), Ok(()));
    }

    #[test]
    fn an_empty_list_or_name_is_an_error() {
        assert_eq!(fixture::codes("[settings]\nallowed_users = []\n"), vec![(Code::InvalidValue, 2)]);
        assert_eq!(fixture::codes("[settings]\nallowed_users = [\"ok\", \" \"]\n"), vec![(Code::InvalidValue, 2)]);
        assert_eq!(fixture::codes("[settings]\nallowed_users = \"deploy\"\n"), vec![(Code::InvalidType, 2)]);
        assert_eq!(fixture::codes("[settings]\nallowed_users = [\"deploy\", 7]\n"), vec![(Code::InvalidType, 2)]);
    }
}
