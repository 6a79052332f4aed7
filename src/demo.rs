//! The demo database behind `cascade demo`: an issue tracker that matches the bundled configs in
//! `cascades/`, built from `schemas/demo.sql` and seeded with deterministic, realistic data.
//!
//! Every organization fans out like a small customer of an issue tracker. The means below are
//! drawn per organization (and per project, release and group) within ±50% by a seeded PRNG, so
//! organizations differ but the same `rows` always gives the same data:
//!
//! | table | per | mean |
//! |---|---|---|
//! | `team` | organization | 5 |
//! | `organization_member` | organization | 30 |
//! | `team_member` | team | 6 distinct members of the organization |
//! | `audit_log_entry` | organization | 40 |
//! | `project` | organization | 8 |
//! | `project_key` | project | 2 |
//! | `project_team` | project | 3 distinct teams of the organization |
//! | `release` | project | 6 |
//! | `release_file` | release | 4 |
//! | `sentry_groupedmessage` (groups) | project | 60; 60% have a `first_release_id` of their project, the rest NULL |
//! | `group_hash` | group | 2 |
//! | `group_assignee` | group | 1 member of the same organization |
//! | `activity` | group | 3 |
//! | `event` | group | 10 |
//! | `event_attachment` | event | every 5th event of an organization |
//! | `user_report` | group | every 4th group of an organization |
//!
//! That is about 9,600 rows per organization. Organizations are added until the total reaches
//! `rows`; the last one is trimmed (groups first) so the total lands just under `rows`: at most 1%
//! below it, or one minimal organization (a few hundred rows) below it when that is more. Very small targets (below about 450 rows) still get one whole minimal
//! organization, which may be larger than asked.
//!
//! Every organization has `status = 0` (deletable: the config's `proceed = [0, 1, 2]`) except the
//! **last one, when there are two or more**: it has `status = 5`, so `cascade plan` and `delete`
//! show it as skipped by its status. With a single organization, that one is deletable.

use std::fmt::{self, Display, Write as _};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection as _, SqliteConnection};

/// The demo schema, plain DDL that SQLite and PostgreSQL both accept.
pub const SCHEMA: &str = include_str!("../schemas/demo.sql");

/// The `status` of the organization that the config does not allow to be deleted.
pub const BLOCKED_STATUS: i64 = 5;

/// A seeded demo database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoDatabase {
    /// Ids of the seeded organizations, in order.
    pub organizations: Vec<i64>,
    /// Rows inserted, in all tables.
    pub rows: u64,
    /// Rows per table.
    pub tables: IndexMap<String, u64>,
}

/// The demo project's config (the files of `cascades/`), built into the binary so that the
/// demo runs anywhere, not only in a checkout.
pub const CONFIG_FILES: &[(&str, &str)] = &[
    ("issues.toml", include_str!("../cascades/issues.toml")),
    ("organization.toml", include_str!("../cascades/organization.toml")),
    ("outbox.toml", include_str!("../cascades/outbox.toml")),
    ("project.toml", include_str!("../cascades/project.toml")),
];

/// Why the demo database could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The directory does not exist, or removing an earlier database (or its `-wal`, `-shm`,
    /// `-journal` file) failed; `path` is the file or directory concerned.
    #[error("cannot prepare the demo database `{}`: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// SQLite could not create or open the database file.
    #[error("cannot open the demo database `{}`: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// The error SQLite reported.
        source: sqlx::Error,
    },
    /// Creating the schema, inserting rows or closing the database failed.
    #[error("cannot seed the demo database `{}`: {source}", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// The error the failed statement reported.
        source: sqlx::Error,
    },
}

/// Creates (or replaces) the SQLite database at `path` from `schemas/demo.sql` and seeds about
/// `rows` rows in total with a realistic fan-out (see the [module documentation](self)).
/// Deterministic: same `rows`, same data.
pub async fn build(path: &Path, rows: u64) -> Result<DemoDatabase, DemoError> {
    prepare_path(path)?;
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .foreign_keys(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal);
    let mut connection = SqliteConnection::connect_with(&options)
        .await
        .map_err(|source| DemoError::Open { path: path.to_path_buf(), source })?;
    let seeded = seed(&mut connection, rows).await;
    let closed = connection.close().await;
    let database_error = |source| DemoError::Database { path: path.to_path_buf(), source };
    let seeded = seeded.map_err(database_error)?;
    closed.map_err(database_error)?;
    Ok(seeded)
}

/// Removes an earlier database at `path` (with its `-wal`, `-shm` and `-journal` siblings). The
/// directory must exist: a mistyped path is an error, not a new directory tree.
fn prepare_path(path: &Path) -> Result<(), DemoError> {
    fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> DemoError + '_ {
        move |source| DemoError::Io { path: path.to_path_buf(), source }
    }
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty() && !parent.is_dir()) {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory");
        return Err(io_error(parent)(missing));
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let file = PathBuf::from(file);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(&file)(error)),
        }
    }
    Ok(())
}

async fn seed(connection: &mut SqliteConnection, rows: u64) -> Result<DemoDatabase, sqlx::Error> {
    sqlx::raw_sql(SCHEMA).execute(&mut *connection).await?;
    let plans = plan(rows);
    let mut writer = Writer::new();
    let mut organizations = Vec::with_capacity(plans.len());
    for plan in &plans {
        organizations.push(writer.organization(plan));
        // One transaction per organization (about 10,000 rows), one multi-statement call.
        let sql = writer.take_sql();
        let mut transaction = connection.begin().await?;
        sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut *transaction).await?;
        transaction.commit().await?;
    }
    let tables: IndexMap<String, u64> =
        writer.tables.iter().map(|table| (table.name.to_string(), table.rows)).collect();
    Ok(DemoDatabase { organizations, rows: tables.values().sum(), tables })
}

// ---------------------------------------------------------------------------------------------
// The plan: the shape of every organization, drawn before anything is written so that the last
// organization can be trimmed to the row budget.

/// The seed of the whole demo; each organization draws from its own stream.
const SEED: u64 = 0x00C0_FFEE_DE70_0001;

#[derive(Debug, Clone)]
struct OrgPlan {
    /// 0-based position, which is also the id minus one.
    index: u64,
    status: i64,
    teams: u32,
    members: u32,
    /// Per team, the (distinct) member indexes.
    team_members: Vec<Vec<u32>>,
    audit: u32,
    projects: Vec<ProjectPlan>,
}

#[derive(Debug, Clone)]
struct ProjectPlan {
    keys: u32,
    /// Distinct team indexes.
    teams: Vec<u32>,
    /// Files per release.
    releases: Vec<u32>,
    groups: Vec<GroupPlan>,
}

#[derive(Debug, Clone)]
struct GroupPlan {
    /// A release index of the same project.
    first_release: Option<u32>,
    hashes: u32,
    /// A member index of the same organization.
    assignee: u32,
    activities: u32,
    events: u32,
    /// The event number (within the organization) of this group's first event, modulo 5: every
    /// event whose number is 4 modulo 5 has an attachment.
    event_phase: u32,
    user_report: bool,
}

impl GroupPlan {
    fn has_attachment(&self, event: u32) -> bool {
        (self.event_phase + event) % 5 == 4
    }

    fn attachments(&self) -> u64 {
        (0..self.events).filter(|&event| self.has_attachment(event)).count() as u64
    }

    fn rows(&self) -> u64 {
        1 + u64::from(self.hashes)
            + 1
            + u64::from(self.activities)
            + u64::from(self.events)
            + self.attachments()
            + u64::from(self.user_report)
    }
}

impl ProjectPlan {
    /// Rows of the project without its groups.
    fn own_rows(&self) -> u64 {
        1 + u64::from(self.keys)
            + self.teams.len() as u64
            + self.releases.len() as u64
            + self.releases.iter().map(|&files| u64::from(files)).sum::<u64>()
    }

    fn rows(&self) -> u64 {
        self.own_rows() + self.groups.iter().map(GroupPlan::rows).sum::<u64>()
    }
}

impl OrgPlan {
    fn draw(index: u64) -> OrgPlan {
        let mut rng = Rng::new(SEED ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        let teams = rng.around(5);
        let members = rng.around(30);
        let team_members = (0..teams)
            .map(|_| {
                let count = rng.around(6);
                rng.sample(members, count)
            })
            .collect();
        let audit = rng.around(40);
        let mut event_number = 0u32;
        let mut group_number = 0u32;
        let projects = (0..rng.around(8))
            .map(|_| {
                let keys = rng.around(2);
                let count = rng.around(3);
                let project_teams = rng.sample(teams, count);
                let releases: Vec<u32> = (0..rng.around(6)).map(|_| rng.around(4)).collect();
                let groups = (0..rng.around(60))
                    .map(|_| {
                        let first_release = (!releases.is_empty() && rng.below(100) < 60)
                            .then(|| rng.below(releases.len() as u64) as u32);
                        let events = rng.around(10);
                        let group = GroupPlan {
                            first_release,
                            hashes: rng.around(2),
                            assignee: rng.below(u64::from(members)) as u32,
                            activities: rng.around(3),
                            events,
                            event_phase: event_number % 5,
                            user_report: group_number % 4 == 3,
                        };
                        event_number = event_number.wrapping_add(events);
                        group_number += 1;
                        group
                    })
                    .collect();
                ProjectPlan { keys, teams: project_teams, releases, groups }
            })
            .collect();
        OrgPlan { index, status: 0, teams, members, team_members, audit, projects }
    }

    fn rows(&self) -> u64 {
        1 + u64::from(self.teams)
            + u64::from(self.members)
            + self.team_members.iter().map(|members| members.len() as u64).sum::<u64>()
            + u64::from(self.audit)
            + self.projects.iter().map(ProjectPlan::rows).sum::<u64>()
    }

    /// Shrinks the organization to at most `budget` rows where it can: groups first (always from
    /// the project that has the most), then whole projects (keeping one), then audit entries
    /// (keeping one).
    fn trim(&mut self, budget: u64) {
        let mut rows = self.rows();
        while rows > budget {
            let Some(project) =
                self.projects.iter_mut().filter(|p| !p.groups.is_empty()).max_by_key(|p| p.groups.len())
            else {
                break;
            };
            rows -= project.groups.pop().map_or(0, |group| group.rows());
        }
        while rows > budget && self.projects.len() > 1 {
            rows -= self.projects.pop().map_or(0, |project| project.rows());
        }
        if rows > budget && self.audit > 1 {
            let cut = (rows - budget).min(u64::from(self.audit - 1));
            self.audit -= cut as u32;
        }
    }
}

/// The organizations for a total of about `rows` rows: whole organizations while they fit, the
/// last one trimmed to what is left; at least one. The last of two or more is not deletable.
fn plan(rows: u64) -> Vec<OrgPlan> {
    let slack = (rows / 100).max(1);
    let mut plans: Vec<OrgPlan> = Vec::new();
    let mut total = 0;
    loop {
        let remaining = rows.saturating_sub(total);
        if !plans.is_empty() && remaining < slack {
            break;
        }
        let mut plan = OrgPlan::draw(plans.len() as u64);
        plan.trim(remaining);
        if !plans.is_empty() && plan.rows() > remaining {
            break; // even a minimal organization would overshoot
        }
        total += plan.rows();
        plans.push(plan);
    }
    if plans.len() > 1 {
        plans.last_mut().expect("at least two organizations").status = BLOCKED_STATUS;
    }
    plans
}

// ---------------------------------------------------------------------------------------------
// The writer: multi-row INSERT statements with literal values, table by table in demo.sql's
// order (which puts every parent before its children).

/// Rows per INSERT statement.
const ROWS_PER_STATEMENT: usize = 500;

const TABLES: [(&str, &str); 17] = [
    ("organization", "id, slug, name, status"),
    ("team", "id, organization_id, name"),
    ("organization_member", "id, organization_id, email"),
    ("team_member", "id, team_id, member_id"),
    ("audit_log_entry", "id, organization_id, event"),
    ("project", "id, organization_id, slug"),
    ("project_key", "id, project_id, public_key"),
    ("project_team", "id, project_id, team_id"),
    ("release", "id, project_id, version"),
    ("release_file", "id, release_id, name"),
    ("sentry_groupedmessage", "id, project_id, first_release_id, message"),
    ("group_hash", "id, group_id, hash"),
    ("group_assignee", "id, group_id, member_id"),
    ("activity", "id, group_id, kind"),
    ("event", "id, group_id, payload"),
    ("event_attachment", "id, event_id, name"),
    ("user_report", "id, group_id, comments"),
];

const ORGANIZATION: usize = 0;
const TEAM: usize = 1;
const MEMBER: usize = 2;
const TEAM_MEMBER: usize = 3;
const AUDIT_LOG_ENTRY: usize = 4;
const PROJECT: usize = 5;
const PROJECT_KEY: usize = 6;
const PROJECT_TEAM: usize = 7;
const RELEASE: usize = 8;
const RELEASE_FILE: usize = 9;
const GROUP: usize = 10;
const GROUP_HASH: usize = 11;
const GROUP_ASSIGNEE: usize = 12;
const ACTIVITY: usize = 13;
const EVENT: usize = 14;
const EVENT_ATTACHMENT: usize = 15;
const USER_REPORT: usize = 16;

struct Table {
    name: &'static str,
    columns: &'static str,
    /// Pending statements, not yet run.
    sql: String,
    /// Rows in the statement being written.
    pending: usize,
    /// Rows written so far, which is also the last id given out.
    rows: u64,
}

impl Table {
    /// Appends a row whose id is the next one and returns that id; `values` are the other
    /// columns, already SQL literals.
    fn insert(&mut self, values: fmt::Arguments<'_>) -> i64 {
        if self.pending == 0 {
            write!(self.sql, "INSERT INTO \"{}\" ({}) VALUES ", self.name, self.columns).expect("writing to a String");
        } else {
            self.sql.push(',');
        }
        self.rows += 1;
        let id = self.rows as i64;
        write!(self.sql, "({id},{values})").expect("writing to a String");
        self.pending += 1;
        if self.pending == ROWS_PER_STATEMENT {
            self.finish();
        }
        id
    }

    fn finish(&mut self) {
        if self.pending > 0 {
            self.sql.push_str(";\n");
            self.pending = 0;
        }
    }
}

macro_rules! insert {
    ($writer:expr, $table:expr, $($values:tt)+) => {
        $writer.tables[$table].insert(format_args!($($values)+))
    };
}

struct Writer {
    tables: Vec<Table>,
}

impl Writer {
    fn new() -> Writer {
        let tables = TABLES
            .iter()
            .map(|&(name, columns)| Table { name, columns, sql: String::new(), pending: 0, rows: 0 })
            .collect();
        Writer { tables }
    }

    /// The statements written since the last call, parents before children.
    fn take_sql(&mut self) -> String {
        let mut sql = String::with_capacity(self.tables.iter().map(|table| table.sql.len() + 2).sum());
        for table in &mut self.tables {
            table.finish();
            sql.push_str(&table.sql);
            table.sql.clear();
        }
        sql
    }

    /// Writes one organization and everything below it; returns its id.
    fn organization(&mut self, plan: &OrgPlan) -> i64 {
        // Text comes from a stream of its own, so trimming a plan never changes other values.
        let mut rng = Rng::new(!SEED ^ plan.index.wrapping_mul(0xE703_7ED1_A0B4_28DB));
        let adjective = rng.pick(ADJECTIVES);
        let noun = rng.pick(NOUNS);
        let number = plan.index + 1;
        let slug = format!("{}-{}-{number}", adjective.to_lowercase(), noun.to_lowercase());
        let name = format!("{adjective} {noun}");
        let organization = insert!(self, ORGANIZATION, "{},{},{}", Text(&slug), Text(&name), plan.status);

        let teams: Vec<i64> = (0..plan.teams)
            .map(|team| insert!(self, TEAM, "{organization},{}", Text(&numbered(TEAMS, team as usize))))
            .collect();
        let members: Vec<i64> = (0..plan.members)
            .map(|_| {
                let (first, last) = (rng.pick(FIRST_NAMES), rng.pick(LAST_NAMES));
                let email = format!("{first}.{last}{}@{slug}.example", rng.below(100)).to_lowercase();
                insert!(self, MEMBER, "{organization},{}", Text(&email))
            })
            .collect();
        for (team, team_members) in teams.iter().zip(&plan.team_members) {
            for &member in team_members {
                insert!(self, TEAM_MEMBER, "{team},{}", members[member as usize]);
            }
        }
        for _ in 0..plan.audit {
            insert!(self, AUDIT_LOG_ENTRY, "{organization},{}", Text(rng.pick(AUDIT_EVENTS)));
        }

        let offset = rng.below(PROJECTS.len() as u64) as usize;
        for (index, project_plan) in plan.projects.iter().enumerate() {
            let project_slug = numbered(PROJECTS, offset + index);
            let project = insert!(self, PROJECT, "{organization},{}", Text(&project_slug));
            for _ in 0..project_plan.keys {
                insert!(self, PROJECT_KEY, "{project},{}", Text(&rng.hex()));
            }
            for &team in &project_plan.teams {
                insert!(self, PROJECT_TEAM, "{project},{}", teams[team as usize]);
            }
            let major = 1 + rng.below(4);
            let releases: Vec<i64> = project_plan
                .releases
                .iter()
                .enumerate()
                .map(|(minor, &files)| {
                    let version = format!("{major}.{minor}.{}", rng.below(4));
                    let release = insert!(self, RELEASE, "{project},{}", Text(&version));
                    let build = rng.hex();
                    for file in 0..files as usize {
                        let (stem, extension) = RELEASE_FILES[file % RELEASE_FILES.len()];
                        let file_name = format!("~/static/{stem}.{}.{extension}", &build[..8]);
                        insert!(self, RELEASE_FILE, "{release},{}", Text(&file_name));
                    }
                    release
                })
                .collect();
            let platform = rng.pick(PLATFORMS);
            for group_plan in &project_plan.groups {
                let first_release = Nullable(group_plan.first_release.map(|release| releases[release as usize]));
                let group = insert!(self, GROUP, "{project},{first_release},{}", Text(rng.pick(ERRORS)));
                for _ in 0..group_plan.hashes {
                    insert!(self, GROUP_HASH, "{group},{}", Text(&rng.hex()));
                }
                insert!(self, GROUP_ASSIGNEE, "{group},{}", members[group_plan.assignee as usize]);
                for activity in 0..group_plan.activities {
                    let kind = if activity == 0 { "first_seen" } else { rng.pick(ACTIVITY_KINDS) };
                    insert!(self, ACTIVITY, "{group},{}", Text(kind));
                }
                for event in 0..group_plan.events {
                    let level = rng.pick(LEVELS);
                    let payload =
                        format!(r#"{{"event_id":"{}","level":"{level}","platform":"{platform}"}}"#, rng.hex());
                    let event_id = insert!(self, EVENT, "{group},{}", Text(&payload));
                    if group_plan.has_attachment(event) {
                        insert!(self, EVENT_ATTACHMENT, "{event_id},{}", Text(rng.pick(ATTACHMENTS)));
                    }
                }
                if group_plan.user_report {
                    insert!(self, USER_REPORT, "{group},{}", Text(rng.pick(COMMENTS)));
                }
            }
        }
        organization
    }
}

/// A string as an SQL literal.
struct Text<'a>(&'a str);

impl Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('\'')?;
        for (index, part) in self.0.split('\'').enumerate() {
            if index > 0 {
                f.write_str("''")?;
            }
            f.write_str(part)?;
        }
        f.write_char('\'')
    }
}

/// An optional integer as an SQL literal.
struct Nullable(Option<i64>);

impl Display for Nullable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(value) => write!(f, "{value}"),
            None => f.write_str("NULL"),
        }
    }
}

/// The `index`th name of a list, numbered once the list runs out (`backend`, ..., `backend-2`).
fn numbered(names: &[&str], index: usize) -> String {
    let name = names[index % names.len()];
    match index / names.len() {
        0 => name.to_string(),
        round => format!("{name}-{}", round + 1),
    }
}

// ---------------------------------------------------------------------------------------------

/// SplitMix64: small, fast and stable across versions (the data must not change with a crate).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform within ±50% of `mean` (inclusive), so never 0 for a mean of 2 or more.
    fn around(&mut self, mean: u32) -> u32 {
        let low = mean - mean / 2;
        let high = mean + mean / 2;
        low + self.below(u64::from(high - low + 1)) as u32
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// `count` distinct indexes of `0..n` (fewer when `n` is smaller), in drawn order.
    fn sample(&mut self, n: u32, count: u32) -> Vec<u32> {
        let mut all: Vec<u32> = (0..n).collect();
        let count = count.min(n) as usize;
        for index in 0..count {
            let other = index + self.below((all.len() - index) as u64) as usize;
            all.swap(index, other);
        }
        all.truncate(count);
        all
    }

    /// 32 hexadecimal digits.
    fn hex(&mut self) -> String {
        format!("{:016x}{:016x}", self.next(), self.next())
    }
}

const ADJECTIVES: &[&str] = &[
    "Acme", "Blue", "Bright", "Cedar", "Copper", "Crimson", "Golden", "Granite", "Hidden", "Iron", "Lunar", "Maple",
    "Northern", "Quiet", "Rapid", "Silver", "Solar", "Swift", "Velvet", "Wild",
];
const NOUNS: &[&str] = &[
    "Analytics",
    "Bakery",
    "Bank",
    "Books",
    "Cloud",
    "Dynamics",
    "Foods",
    "Games",
    "Health",
    "Labs",
    "Logistics",
    "Media",
    "Motors",
    "Networks",
    "Robotics",
    "Studios",
    "Systems",
    "Travel",
];
const TEAMS: &[&str] =
    &["backend", "frontend", "mobile", "platform", "data", "infrastructure", "security", "design", "growth", "support"];
const FIRST_NAMES: &[&str] = &[
    "Ada", "Amir", "Ana", "Ben", "Chen", "Dara", "Elif", "Emma", "Farah", "Hugo", "Ines", "Jonas", "Kai", "Lea",
    "Liam", "Maya", "Nina", "Omar", "Priya", "Ravi", "Sara", "Tomas", "Yuki", "Zoe",
];
const LAST_NAMES: &[&str] = &[
    "Adams", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen", "Kowalski", "Lopez",
    "Moreau", "Nakamura", "Okafor", "Petrov", "Rossi", "Silva", "Tanaka", "Weber",
];
const AUDIT_EVENTS: &[&str] = &[
    "member.invite",
    "member.accept",
    "member.remove",
    "team.create",
    "team.add_member",
    "project.create",
    "project.edit",
    "project_key.create",
    "project_key.remove",
    "org.edit",
    "sso.enable",
    "release.create",
];
const PROJECTS: &[&str] = &[
    "web",
    "api",
    "ios",
    "android",
    "backend",
    "worker",
    "dashboard",
    "billing",
    "search",
    "auth",
    "cli",
    "docs",
    "checkout",
    "notifications",
];
const RELEASE_FILES: &[(&str, &str)] =
    &[("app", "js"), ("app", "js.map"), ("vendor", "js"), ("vendor", "js.map"), ("styles", "css"), ("index", "html")];
const PLATFORMS: &[&str] = &["python", "javascript", "node", "java", "go", "ruby", "cocoa", "android"];
const ERRORS: &[&str] = &[
    "TypeError: Cannot read properties of undefined (reading 'id')",
    "ZeroDivisionError: division by zero",
    "KeyError: 'user_id'",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "NullPointerException: Attempt to invoke virtual method on a null object reference",
    "OperationalError: database is locked",
    "TimeoutError: Request timed out after 30000ms",
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "panic: runtime error: index out of range [3] with length 3",
    "ReferenceError: process is not defined",
    "IntegrityError: duplicate key value violates unique constraint \"user_email_key\"",
    "NoMethodError: undefined method `name' for nil:NilClass",
    "ChunkLoadError: Loading chunk 42 failed",
    "OutOfMemoryError: Failed to allocate a 16777216 byte allocation",
    "SSLError: certificate verify failed",
];
const ACTIVITY_KINDS: &[&str] =
    &["set_resolved", "set_unresolved", "set_ignored", "set_regression", "assigned", "unassigned", "note", "merge"];
const LEVELS: &[&str] = &["error", "error", "error", "warning", "fatal", "info"];
const ATTACHMENTS: &[&str] = &["screenshot.png", "minidump.dmp", "console.log", "view-hierarchy.json", "heap.hprof"];
const COMMENTS: &[&str] = &[
    "I clicked save and nothing happened.",
    "The page went blank after I logged in.",
    "Couldn't upload my file, it says something went wrong.",
    "App crashed when I rotated the phone.",
    "Checkout failed twice, then worked on the third try.",
    "Search doesn't return anything since this morning.",
];

#[cfg(test)]
mod tests {
    use super::*;

    use sqlx::Row as _;

    async fn connect(path: &Path) -> SqliteConnection {
        let options = SqliteConnectOptions::new().filename(path).read_only(true);
        SqliteConnection::connect_with(&options).await.unwrap()
    }

    #[tokio::test]
    async fn builds_a_consistent_deterministic_database() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("demo.db");
        let demo = build(&path, 2_000).await.unwrap();

        assert!((1_800..=2_200).contains(&demo.rows), "{} rows", demo.rows);
        assert_eq!(demo.tables.values().sum::<u64>(), demo.rows);
        assert!(!demo.organizations.is_empty());
        assert_eq!(demo.organizations[0], 1);

        let mut connection = connect(&path).await;
        // Every table of demo.sql, in its order, has rows.
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")
                .fetch_all(&mut connection)
                .await
                .unwrap();
        assert_eq!(tables.len(), 17);
        assert_eq!(demo.tables.keys().collect::<Vec<_>>(), tables.iter().collect::<Vec<_>>());
        for (table, &rows) in &demo.tables {
            assert!(rows > 0, "no rows in {table}");
        }
        assert!(sqlx::query("PRAGMA foreign_key_check").fetch_all(&mut connection).await.unwrap().is_empty());
        for (table, &rows) in &demo.tables {
            let sql = format!("SELECT COUNT(*) FROM \"{table}\"");
            let count: i64 = sqlx::query_scalar(AssertSqlSafe(sql)).fetch_one(&mut connection).await.unwrap();
            assert_eq!(count as u64, rows, "{table}");
        }
        let statuses: Vec<i64> =
            sqlx::query_scalar("SELECT status FROM organization ORDER BY id").fetch_all(&mut connection).await.unwrap();
        assert_eq!(statuses[0], 0, "the first organization is deletable");
        // Assignees are members of the group's organization; first releases belong to its project.
        let foreign: i64 = sqlx::query_scalar(
            "SELECT
                (SELECT COUNT(*) FROM group_assignee a
                   JOIN sentry_groupedmessage g ON g.id = a.group_id
                   JOIN project p ON p.id = g.project_id
                   JOIN organization_member m ON m.id = a.member_id
                  WHERE m.organization_id <> p.organization_id)
              + (SELECT COUNT(*) FROM sentry_groupedmessage g JOIN release r ON r.id = g.first_release_id
                  WHERE r.project_id <> g.project_id)
              + (SELECT COUNT(*) FROM team_member tm JOIN team t ON t.id = tm.team_id
                   JOIN organization_member m ON m.id = tm.member_id WHERE m.organization_id <> t.organization_id)
              + (SELECT COUNT(*) FROM project_team pt JOIN team t ON t.id = pt.team_id
                   JOIN project p ON p.id = pt.project_id WHERE p.organization_id <> t.organization_id)",
        )
        .fetch_one(&mut connection)
        .await
        .unwrap();
        assert_eq!(foreign, 0);
        let nulls: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM sentry_groupedmessage WHERE first_release_id IS NULL")
                .fetch_one(&mut connection)
                .await
                .unwrap();
        assert!(nulls > 0 && (nulls as u64) < demo.tables["sentry_groupedmessage"]);
        let quoted = sqlx::query("SELECT message FROM sentry_groupedmessage WHERE message LIKE '%''%' LIMIT 1")
            .fetch_optional(&mut connection)
            .await
            .unwrap();
        assert!(quoted.is_some_and(|row| row.get::<String, _>(0).contains('\'')));
        connection.close().await.unwrap();

        // Same rows, same data; and the earlier file is replaced, not added to.
        let again = build(&path, 2_000).await.unwrap();
        assert_eq!(again, demo);
        let mut connection = connect(&path).await;
        let organizations: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM organization").fetch_one(&mut connection).await.unwrap();
        assert_eq!(organizations as usize, demo.organizations.len());
    }

    #[test]
    fn the_total_is_close_to_the_target() {
        for target in [1_000, 2_000, 5_000, 20_000, 100_000, 1_000_000] {
            let plans = plan(target);
            let total: u64 = plans.iter().map(OrgPlan::rows).sum();
            let error = total.abs_diff(target) as f64 / target as f64;
            assert!(error <= 0.10, "{target} rows asked, {total} planned");
            assert_eq!(plans[0].status, 0);
            let blocked = plans.iter().filter(|plan| plan.status != 0).count();
            assert_eq!(blocked, usize::from(plans.len() > 1), "{target}");
        }
        assert_eq!(plan(0).len(), 1);
    }

    #[test]
    fn organizations_differ() {
        let sizes: Vec<u64> = (0..10).map(|index| OrgPlan::draw(index).rows()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min > 1_000, "{sizes:?}");
    }

    #[tokio::test]
    async fn a_bad_path_is_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("file");
        std::fs::write(&file, "not a directory").unwrap();
        let error = build(&file.join("demo.db"), 1_000).await.unwrap_err();
        assert!(matches!(error, DemoError::Io { .. }), "{error:?}");
        assert!(error.to_string().contains("file"), "{error}");

        // A directory where the database should be.
        let error = build(directory.path(), 1_000).await.unwrap_err();
        assert!(matches!(error, DemoError::Io { .. }), "{error:?}");

        // A directory that does not exist is not created.
        let missing = directory.path().join("missing");
        let error = build(&missing.join("demo.db"), 1_000).await.unwrap_err();
        assert!(error.to_string().contains("no such directory"), "{error}");
        assert!(!missing.exists());
    }
}
