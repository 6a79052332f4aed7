//! The trees the bench deletes: their tables, DDL, rows, configs and the rows expected per table.

use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

impl Dialect {
    /// `column` is one of the keys bound as the statement's only parameter: a JSON array read
    /// with `json_each` on SQLite, an array on PostgreSQL.
    pub fn in_keys(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each(?))"),
            Dialect::Postgres => format!("{column} = ANY($1)"),
            Dialect::Mysql => {
                format!("{column} IN (SELECT k FROM JSON_TABLE(?, '$[*]' COLUMNS (k BIGINT PATH '$')) AS bench_keys)")
            }
        }
    }
}

/// How a copy of the schema declares its foreign keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Enforced, `ON DELETE NO ACTION`: what cascade and the hand-written loop delete from.
    Enforced,
    /// Enforced and `ON DELETE CASCADE`: what the native DELETE runs on.
    Cascading,
    /// No foreign key at all; the indexes are kept.
    Absent,
}

impl Keys {
    pub fn name(self) -> &'static str {
        match self {
            Keys::Enforced => "enforced",
            Keys::Cascading => "ON DELETE CASCADE",
            Keys::Absent => "none",
        }
    }

    /// In a sentence: "enforced foreign keys", "no foreign keys".
    pub fn describe(self) -> &'static str {
        match self {
            Keys::Enforced => "enforced foreign keys",
            Keys::Cascading => "ON DELETE CASCADE foreign keys",
            Keys::Absent => "no foreign keys",
        }
    }

    pub fn slug(self) -> &'static str {
        match self {
            Keys::Enforced => "fk",
            Keys::Cascading => "cascade",
            Keys::Absent => "nofk",
        }
    }
}

/// A table: `id` as its key and, below the root, `{parent}_id` referencing its parent.
pub struct Table {
    pub name: &'static str,
    pub parent: Option<&'static str>,
    /// More column definitions, each with a leading comma.
    pub columns: &'static str,
    /// The rows are threads: `parent_id` references the table itself (see [`Tree::forest`]).
    pub threads: bool,
}

/// The id of the root row that is deleted; root 2's rows must all survive.
pub const DELETED_ROOT: u64 = 1;
pub const SURVIVING_ROOT: u64 = 2;

/// A tree of tables (parents before their children) and its rows per table under each root.
pub struct Tree {
    pub name: &'static str,
    pub tables: &'static [Table],
    /// Rows per table under root 1, which is deleted.
    pub deleted: Vec<u64>,
    /// Rows per table under root 2, which must all survive.
    pub survivors: Vec<u64>,
}

const DEEP: &[Table] = &[
    Table { name: "root", parent: None, columns: "", threads: false },
    Table { name: "l1", parent: Some("root"), columns: "", threads: false },
    Table { name: "l2", parent: Some("l1"), columns: "", threads: false },
    Table { name: "l3", parent: Some("l2"), columns: "", threads: false },
];

const FOREST: &[Table] = &[
    Table { name: "post", parent: None, columns: "", threads: false },
    Table { name: "reply", parent: Some("post"), columns: "", threads: true },
];

/// Replies per thread in the forest.
const THREAD: u64 = 50;

const REALISTIC: &[Table] = &[
    Table { name: "org", parent: None, columns: ", status integer NOT NULL DEFAULT 0", threads: false },
    Table { name: "project", parent: Some("org"), columns: "", threads: false },
    Table { name: "grp", parent: Some("project"), columns: "", threads: false },
    Table { name: "hash", parent: Some("grp"), columns: "", threads: false },
    Table { name: "event", parent: Some("grp"), columns: "", threads: false },
];

impl Tree {
    /// `root` → 100 `l1` → `l2` (rows / 100) → `l3` (the rest) under root 1; 2, 4 and 20 rows under
    /// root 2.
    pub fn deep(rows: u64) -> Self {
        let (l1, l2) = (100, (rows / 100).max(100));
        let l3 = rows.saturating_sub(1 + l1 + l2).max(l2);
        Self { name: "deep", tables: DEEP, deleted: vec![1, l1, l2, l3], survivors: vec![1, 2, 4, 20] }
    }

    /// `post` → `reply`, the replies in threads of 50 (`reply.parent_id` → `reply`): every other
    /// thread a chain 50 deep, the others bushy (each reply under the thread's reply half its
    /// position, about 6 deep). Each post holds half the rows.
    pub fn forest(rows: u64) -> Self {
        let replies = (rows / 2).max(THREAD);
        Self { name: "forest", tables: FOREST, deleted: vec![1, replies], survivors: vec![1, replies] }
    }

    /// `org` → 20 `project` → `grp` → 1 `hash` and 8 `event` per group; each org holds half the rows.
    pub fn realistic(rows: u64) -> Self {
        let groups = (rows / 20).max(20);
        let half = vec![1, 20, groups, groups, 8 * groups];
        Self { name: "realistic", tables: REALISTIC, deleted: half.clone(), survivors: half }
    }

    pub fn root(&self) -> &'static str {
        self.tables[0].name
    }

    pub fn table(&self, name: &str) -> &'static Table {
        self.tables.iter().find(|t| t.name == name).expect("a table of the tree")
    }

    pub fn children(&self, name: &str) -> impl Iterator<Item = &'static Table> + use<'_> {
        let name = name.to_owned();
        self.tables.iter().filter(move |t| t.parent == Some(name.as_str()))
    }

    pub fn is_leaf(&self, name: &str) -> bool {
        self.children(name).next().is_none()
    }

    /// Rows in the whole tree, both roots.
    pub fn total(&self) -> u64 {
        self.deleted.iter().chain(&self.survivors).sum()
    }

    /// Rows per table before anything is deleted.
    pub fn before(&self) -> Vec<u64> {
        self.deleted.iter().zip(&self.survivors).map(|(d, s)| d + s).collect()
    }

    /// Rows deleted under root 1 in `tables`.
    pub fn deleted_in(&self, tables: &[&str]) -> u64 {
        self.tables.iter().zip(&self.deleted).filter(|(t, _)| tables.contains(&t.name)).map(|(_, rows)| rows).sum()
    }

    /// The condition that picks the rows of `table` under the root row `root`, through nested
    /// `IN (SELECT id ...)` sub-queries.
    pub fn under(&self, table: &Table, root: u64) -> String {
        let Some(parent) = table.parent else { return format!("id = {root}") };
        let column = format!("{parent}_id");
        let parent_table = self.table(parent);
        if parent_table.parent.is_none() {
            format!("{column} = {root}")
        } else {
            format!("{column} IN (SELECT id FROM {parent} WHERE {})", self.under(parent_table, root))
        }
    }

    /// `COUNT(*)` of every table, and of every table's rows under the surviving root.
    pub fn count_queries(&self) -> (Vec<String>, Vec<String>) {
        let all = self.tables.iter().map(|t| format!("SELECT COUNT(*) FROM {}", t.name)).collect();
        let surviving = self
            .tables
            .iter()
            .map(|t| format!("SELECT COUNT(*) FROM {} WHERE {}", t.name, self.under(t, SURVIVING_ROOT)))
            .collect();
        (all, surviving)
    }

    /// The DDL run before loading and the statements run after it. SQLite declares its foreign
    /// keys with the tables (it cannot add them later) and loads with enforcement off;
    /// PostgreSQL adds and validates them once the rows are in, which is much faster than a
    /// trigger per row; MariaDB adds them after the indexes (it would make an index of its own
    /// for a key without one), loaded with its checks off.
    pub fn schema(&self, dialect: Dialect, keys: Keys) -> (String, String) {
        let (key, integer) = match dialect {
            Dialect::Sqlite => ("INTEGER PRIMARY KEY", "INTEGER"),
            Dialect::Postgres | Dialect::Mysql => ("bigint PRIMARY KEY", "bigint"),
        };
        let on_delete = if keys == Keys::Cascading { " ON DELETE CASCADE" } else { "" };
        let (mut create, mut after) = (String::new(), String::new());
        for table in self.tables {
            let name = table.name;
            let Some(parent) = table.parent else {
                writeln!(create, "CREATE TABLE {name} (id {key}{});", table.columns).unwrap();
                continue;
            };
            let column = format!("{parent}_id");
            let reference = format!("REFERENCES {parent} (id){on_delete}");
            let inline = if dialect == Dialect::Sqlite && keys != Keys::Absent { &*reference } else { "" };
            let threads = if table.threads {
                let inline = if dialect == Dialect::Sqlite && keys != Keys::Absent {
                    format!(" REFERENCES {name} (id){on_delete}")
                } else {
                    String::new()
                };
                format!(", parent_id {integer}{inline}")
            } else {
                String::new()
            };
            writeln!(
                create,
                "CREATE TABLE {name} (id {key}, {column} {integer} NOT NULL {inline}{threads}{});",
                table.columns
            )
            .unwrap();
            let mut indexes = format!("CREATE INDEX {name}_{column} ON {name} ({column});\n");
            if table.threads {
                writeln!(indexes, "CREATE INDEX {name}_parent_id ON {name} (parent_id);").unwrap();
            }
            if dialect == Dialect::Mysql {
                after += &indexes;
            }
            if dialect != Dialect::Sqlite && keys != Keys::Absent {
                writeln!(after, "ALTER TABLE {name} ADD FOREIGN KEY ({column}) {reference};").unwrap();
                if table.threads {
                    writeln!(
                        after,
                        "ALTER TABLE {name} ADD FOREIGN KEY (parent_id) REFERENCES {name} (id){on_delete};"
                    )
                    .unwrap();
                }
            }
            if dialect != Dialect::Mysql {
                after += &indexes;
            }
        }
        (create, after)
    }

    /// `INSERT`s of every row: for each table, root 1's rows then root 2's, each root's children
    /// in contiguous blocks of ids spread evenly over its parent rows.
    pub fn inserts(&self, dialect: Dialect) -> String {
        let series = |table: &Table, from: u64, to: u64, parent: Option<(String, String)>| {
            let (mut column, mut value) =
                parent.map_or((String::new(), String::new()), |(c, v)| (format!(", {c}"), format!(", {v}")));
            if table.threads {
                // `p`: the reply's place among its post's; a thread starts every THREAD replies.
                let p = format!("(i - {from})");
                column += ", parent_id";
                value += &format!(
                    ", CASE WHEN {p} % {THREAD} = 0 THEN NULL WHEN ({p} / {THREAD}) % 2 = 0 THEN i - 1 \
                     ELSE i - {p} % {THREAD} + ({p} % {THREAD} - 1) / 2 END"
                );
            }
            let table = table.name;
            match dialect {
                Dialect::Sqlite => format!(
                    "INSERT INTO {table} (id{column}) WITH RECURSIVE s(i) AS (SELECT {from} UNION ALL SELECT i + 1 \
                     FROM s WHERE i < {to}) SELECT i{value} FROM s;\n"
                ),
                Dialect::Postgres => format!(
                    "INSERT INTO {table} (id{column}) SELECT i{value} FROM generate_series({from}::bigint, \
                     {to}::bigint) AS s(i);\n"
                ),
                // MariaDB's sequence tables; `/` divides exactly there, `DIV` as an integer.
                Dialect::Mysql => format!(
                    "INSERT INTO {table} (id{column}) SELECT i{} FROM (SELECT seq AS i FROM seq_{from}_to_{to}) AS s;\n",
                    value.replace(" / ", " DIV ")
                ),
            }
        };
        let mut sql = String::new();
        for (index, table) in self.tables.iter().enumerate() {
            let parent_index = table.parent.map(|p| self.tables.iter().position(|t| t.name == p).unwrap());
            let (mut offset, mut parent_offset) = (0, 0);
            for per_root in [&self.deleted, &self.survivors] {
                let rows = per_root[index];
                let parent = table.parent.zip(parent_index).map(|(name, at)| {
                    let parents = per_root[at];
                    (format!("{name}_id"), format!("{parent_offset} + (i - {offset} - 1) * {parents} / {rows} + 1"))
                });
                sql += &series(table, offset + 1, offset + rows, parent);
                offset += rows;
                parent_offset += parent_index.map_or(0, |at| per_root[at]);
            }
        }
        sql
    }

    /// The config: every model per_row but the leaves (bulk), default settings; with `status`,
    /// a status check on the root; every table of `outbox` writes the category `{table}_deleted`.
    pub fn config(&self, status: bool, outbox: &[&str]) -> String {
        let mut toml = format!("# The {} tree: default settings, no rate limit.\n", self.name);
        for table in self.tables {
            let name = table.name;
            write!(toml, "\n[models.{name}]\ntable = \"{name}\"\n").unwrap();
            if status && table.parent.is_none() {
                toml += "status = { column = \"status\", proceed = [0], in_progress = 1 }\n";
            }
            if outbox.contains(&name) {
                writeln!(toml, "outbox = \"{name}_deleted\"").unwrap();
            }
            if self.is_leaf(name) && !table.threads {
                toml += "strategy = \"bulk\"\n";
            } else {
                let mut children: Vec<String> = self
                    .children(name)
                    .map(|child| format!("{{ model = \"{}\", column = \"{name}_id\" }}", child.name))
                    .collect();
                if table.threads {
                    children.push(format!("{{ model = \"{name}\", column = \"parent_id\" }}"));
                }
                writeln!(toml, "children = [{}]", children.join(", ")).unwrap();
            }
        }
        if !outbox.is_empty() {
            let categories: Vec<String> = outbox.iter().map(|table| format!("\"{table}_deleted\"")).collect();
            write!(toml, "\n[outbox.scopes.bench]\nshard_key = \"id\"\ncategories = [{}]\n", categories.join(", "))
                .unwrap();
        }
        toml
    }

    /// The per_row table whose children are all leaves: what the hand-written loop takes in
    /// batches.
    pub fn batch_table(&self) -> &'static Table {
        self.tables
            .iter()
            .find(|t| !self.is_leaf(t.name) && self.children(t.name).all(|c| self.is_leaf(c.name)))
            .expect("a table whose children are leaves")
    }

    /// The tables from `table`'s parent up to the root.
    pub fn ancestors(&self, table: &Table) -> Vec<&'static Table> {
        let mut chain = Vec::new();
        let mut parent = table.parent;
        while let Some(name) = parent {
            let table = self.table(name);
            chain.push(table);
            parent = table.parent;
        }
        chain
    }
}
