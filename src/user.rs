//! The operating-system user running this process: whom the audit trail names
//! (`cascade_run.actor`) and whom `[settings] allowed_users` admits to destructive commands.
//!
//! The user is the real user id's name in the password database (`/etc/passwd`, LDAP, ...),
//! never an environment variable: `$USER` is whatever the caller set, and it is missing in
//! containers and cron jobs. A user id without a name is written `uid N`, never "unknown".

use std::fmt;

/// Who runs this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OsUser {
    /// The real user id (`None` where the system has none).
    pub uid: Option<u32>,
    /// The user id's name, when the password database has one.
    pub name: Option<String>,
}

impl OsUser {
    /// The name written in the audit trail and compared with `allowed_users`: the user's name,
    /// else `uid N`.
    pub(crate) fn display_name(&self) -> String {
        match (&self.name, self.uid) {
            (Some(name), _) => name.clone(),
            (None, Some(uid)) => format!("uid {uid}"),
            (None, None) => "uid ?".to_owned(),
        }
    }
}

impl fmt::Display for OsUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_name())
    }
}

/// The user running this process (its real user id and that id's name).
#[cfg(unix)]
pub(crate) fn current() -> OsUser {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    OsUser { uid: Some(uid), name: name_of(uid) }
}

/// The user running this process: on systems without user ids, the login name the system sets.
#[cfg(not(unix))]
pub fn current() -> OsUser {
    OsUser { uid: None, name: std::env::var("USERNAME").ok().filter(|name| !name.is_empty()) }
}

/// The name of `uid` in the password database, if it has one.
#[cfg(unix)]
pub(crate) fn name_of(uid: u32) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: an all-zero `passwd` is a valid value (null pointers, zero ids); getpwuid_r
        // fills it with pointers into `buffer`, which outlives every use of them below.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the length given, and `found` is written by the call.
        let status = unsafe { libc::getpwuid_r(uid, &mut entry, buffer.as_mut_ptr(), buffer.len(), &mut found) };
        if status == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        if status != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: `pw_name` points at a NUL-terminated string inside `buffer`.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
        let name = name.to_string_lossy().into_owned();
        return (!name.is_empty()).then_some(name);
    }
}

#[cfg(test)]
mod tests {
    use super::{OsUser, name_of};

    #[test]
    fn a_user_id_without_a_name_is_written_as_the_id() {
        assert_eq!(OsUser { uid: Some(1000), name: None }.to_string(), "uid 1000");
        assert_eq!(OsUser { uid: Some(1000), name: Some("deploy".into()) }.to_string(), "deploy");
    }

    #[cfg(unix)]
    #[test]
    fn names_come_from_the_password_database() {
        assert_eq!(name_of(0).as_deref(), Some("root"));
        // An id no system assigns (the largest is reserved as "no user").
        assert_eq!(name_of(u32::MAX - 1), None);
        assert!(super::current().uid.is_some());
    }
}
