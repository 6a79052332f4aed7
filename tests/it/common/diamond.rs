//! A small schema with a diamond, shared by the plan and delete tests.

/// `task` is reached from `org` through `project` and through
/// `member`, and `audit` rows are nullified.
pub const DIAMOND_SCHEMA: &str = "
CREATE TABLE org (id INTEGER PRIMARY KEY, status INTEGER NOT NULL);
CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
CREATE INDEX project_org_id_idx ON project (org_id);
CREATE TABLE member (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
CREATE INDEX member_org_id_idx ON member (org_id);
CREATE TABLE task (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES project (id),
                   assignee_id INTEGER REFERENCES member (id));
CREATE INDEX task_project_id_idx ON task (project_id);
CREATE INDEX task_assignee_id_idx ON task (assignee_id);
CREATE TABLE note (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL REFERENCES task (id), body TEXT);
CREATE INDEX note_task_id_idx ON note (task_id);
CREATE TABLE audit (id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES member (id));
CREATE INDEX audit_member_id_idx ON audit (member_id);
";

pub const DIAMOND_CONFIG: &str = r#"
[models.org]
table = "org"
status = { column = "status", proceed = [0], in_progress = 1 }
children = [
  { model = "project", column = "org_id" },
  { model = "member", column = "org_id" },
]

[models.project]
table = "project"
children = [{ model = "task", column = "project_id" }]

[models.member]
table = "member"
children = [
  { model = "task", column = "assignee_id" },
  { model = "audit", column = "member_id", on_delete = "nullify" },
]

[models.task]
table = "task"
outbox = "task_update"
outbox_payload = ["assignee_id"]
children = [{ model = "note", column = "task_id" }]

[models.note]
table = "note"
strategy = "bulk"

[models.audit]
table = "audit"
strategy = "bulk"

[outbox.scopes.project]
shard_key = "project_id"
categories = ["task_update"]
"#;

/// Four orgs (org 4 may not be deleted: status 9); tasks assigned across orgs, so some are
/// reached by both paths, some by one.
pub fn diamond_rows(scale: usize) -> String {
    let mut sql = String::from("INSERT INTO org VALUES (1, 0), (2, 0), (3, 0), (4, 9);\n");
    for id in 1..=12 {
        sql.push_str(&format!("INSERT INTO project VALUES ({id}, {});\n", id % 4 + 1));
        sql.push_str(&format!("INSERT INTO member VALUES ({id}, {});\n", (id + 1) % 4 + 1));
    }
    let tasks = 60 * scale;
    for id in 1..=tasks {
        let assignee = if id % 5 == 0 { "NULL".to_owned() } else { ((id * 5) % 12 + 1).to_string() };
        sql.push_str(&format!("INSERT INTO task VALUES ({id}, {}, {assignee});\n", id % 12 + 1));
    }
    for id in 1..=tasks {
        // Bodies with a line break, quotes and a backslash: the archive's JSON lines must hold them.
        let body = if id % 2 == 0 { format!("'note {id}\nsecond line, \"quoted\" \\ ✓'") } else { "NULL".to_owned() };
        let other = (id * 3) % tasks + 1;
        sql.push_str(&format!("INSERT INTO note VALUES ({id}, {id}, {body}), ({}, {other}, NULL);\n", id + tasks));
        sql.push_str(&format!("INSERT INTO audit VALUES ({id}, {});\n", id % 12 + 1));
    }
    sql.replace("INSERT INTO audit VALUES (11, 12)", "INSERT INTO audit VALUES (11, NULL)")
}

/// Hand-written counts for deleting orgs 1, 2 and 4 (4 is skipped by its status).
pub const EXPECTED: [(&str, &str); 6] = [
    ("org", "SELECT COUNT(*) FROM org WHERE id IN (1, 2, 4) AND status = 0"),
    ("project", "SELECT COUNT(*) FROM project WHERE org_id IN (1, 2)"),
    ("member", "SELECT COUNT(*) FROM member WHERE org_id IN (1, 2)"),
    (
        "task",
        "SELECT COUNT(*) FROM task WHERE project_id IN (SELECT id FROM project WHERE org_id IN (1, 2)) \
         OR assignee_id IN (SELECT id FROM member WHERE org_id IN (1, 2))",
    ),
    (
        "note",
        "SELECT COUNT(*) FROM note WHERE task_id IN (SELECT id FROM task WHERE \
         project_id IN (SELECT id FROM project WHERE org_id IN (1, 2)) \
         OR assignee_id IN (SELECT id FROM member WHERE org_id IN (1, 2)))",
    ),
    ("audit", "SELECT COUNT(*) FROM audit WHERE member_id IN (SELECT id FROM member WHERE org_id IN (1, 2))"),
];
