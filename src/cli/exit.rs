//! The exit codes every command shares, and their description for `--help`.

/// The exit codes, for `--help` (the README has the same table).
pub(super) const EXIT_CODES: &str = "Exit codes:
  0    success (a dry run, unless --confirm would refuse it: 1; a deletion that finished, a clean
       config, a report such as `orphans`, whether or not it found any)
  1    problems found: config errors (or warnings with --deny-warnings), a deletion refused before
       any write (a root id that does not fit the key, undeclared foreign keys, key values or a
       relation no lookup by key can match), a clean-up while the same clean-up runs, `worker
       --once` with a failed attempt, delivery (--drain) or partition prune, `outbox drain
       --once` with a failed delivery, `cancel` of a running or unknown deletion
  2    usage, I/O or database errors; a deletion that stopped on an error (what it deleted stays
       deleted: run it again); a destructive command run by a user that `[settings]
       allowed_users` does not list
  130  interrupted by Ctrl-C or SIGTERM after a complete chunk or delivery: run the same command
       again";

/// Exit code for usage and I/O problems, as opposed to problems found in the config (1).
pub const EXIT_USAGE: u8 = 2;

/// Exit code of a command stopped by Ctrl-C or SIGTERM after a complete chunk or delivery (as a
/// shell reports SIGINT).
pub(super) const EXIT_INTERRUPTED: u8 = 130;
