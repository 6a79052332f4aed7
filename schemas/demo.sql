-- The demo database: an issue tracker matching the configs in cascades/.
-- Plain DDL that SQLite and PostgreSQL both accept; `cascade demo` builds it and CI checks the
-- configs against it with `cascade validate --schema schemas/demo.sql`.

CREATE TABLE organization (
    id INTEGER PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    status INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE team (
    id INTEGER PRIMARY KEY,
    organization_id INTEGER NOT NULL REFERENCES organization (id),
    name TEXT NOT NULL
);
CREATE INDEX team_organization_id_idx ON team (organization_id);

CREATE TABLE organization_member (
    id INTEGER PRIMARY KEY,
    organization_id INTEGER NOT NULL REFERENCES organization (id),
    email TEXT NOT NULL
);
CREATE INDEX organization_member_organization_id_idx ON organization_member (organization_id);

CREATE TABLE team_member (
    id INTEGER PRIMARY KEY,
    team_id INTEGER NOT NULL REFERENCES team (id),
    member_id INTEGER NOT NULL REFERENCES organization_member (id)
);
CREATE INDEX team_member_team_id_idx ON team_member (team_id);
CREATE INDEX team_member_member_id_idx ON team_member (member_id);

CREATE TABLE audit_log_entry (
    id INTEGER PRIMARY KEY,
    organization_id INTEGER NOT NULL REFERENCES organization (id),
    event TEXT NOT NULL
);
CREATE INDEX audit_log_entry_organization_id_idx ON audit_log_entry (organization_id);

CREATE TABLE project (
    id INTEGER PRIMARY KEY,
    organization_id INTEGER NOT NULL REFERENCES organization (id),
    slug TEXT NOT NULL
);
CREATE INDEX project_organization_id_idx ON project (organization_id);

CREATE TABLE project_key (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES project (id),
    public_key TEXT NOT NULL
);
CREATE INDEX project_key_project_id_idx ON project_key (project_id);

CREATE TABLE project_team (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES project (id),
    team_id INTEGER NOT NULL REFERENCES team (id)
);
CREATE INDEX project_team_project_id_idx ON project_team (project_id);
CREATE INDEX project_team_team_id_idx ON project_team (team_id);

CREATE TABLE release (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES project (id),
    version TEXT NOT NULL
);
CREATE INDEX release_project_id_idx ON release (project_id);

CREATE TABLE release_file (
    id INTEGER PRIMARY KEY,
    release_id INTEGER NOT NULL REFERENCES release (id),
    name TEXT NOT NULL
);
CREATE INDEX release_file_release_id_idx ON release_file (release_id);

CREATE TABLE sentry_groupedmessage (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES project (id),
    first_release_id INTEGER REFERENCES release (id),
    message TEXT NOT NULL
);
CREATE INDEX sentry_groupedmessage_project_id_idx ON sentry_groupedmessage (project_id);
CREATE INDEX sentry_groupedmessage_first_release_id_idx ON sentry_groupedmessage (first_release_id);

CREATE TABLE group_hash (
    id INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES sentry_groupedmessage (id),
    hash TEXT NOT NULL
);
CREATE INDEX group_hash_group_id_idx ON group_hash (group_id);

CREATE TABLE group_assignee (
    id INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES sentry_groupedmessage (id),
    member_id INTEGER NOT NULL REFERENCES organization_member (id)
);
CREATE INDEX group_assignee_group_id_idx ON group_assignee (group_id);
CREATE INDEX group_assignee_member_id_idx ON group_assignee (member_id);

CREATE TABLE activity (
    id INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES sentry_groupedmessage (id),
    kind TEXT NOT NULL
);
CREATE INDEX activity_group_id_idx ON activity (group_id);

CREATE TABLE event (
    id INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES sentry_groupedmessage (id),
    payload TEXT NOT NULL
);
CREATE INDEX event_group_id_idx ON event (group_id);

CREATE TABLE event_attachment (
    id INTEGER PRIMARY KEY,
    event_id INTEGER NOT NULL REFERENCES event (id),
    name TEXT NOT NULL
);
CREATE INDEX event_attachment_event_id_idx ON event_attachment (event_id);

CREATE TABLE user_report (
    id INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES sentry_groupedmessage (id),
    comments TEXT NOT NULL
);
CREATE INDEX user_report_group_id_idx ON user_report (group_id);
