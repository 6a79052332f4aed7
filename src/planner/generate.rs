//! A starting config written from a schema's foreign keys (`cascade init`): a model per table,
//! every usable foreign key as a child relation (as the database would act on it: `SET NULL`
//! nullifies, every other action deletes), bulk on leaves. A table's foreign key to itself (a
//! tree of rows) and one that closes a cycle through several tables delete too, recursively, as
//! the database would: nothing is broken. A cascading key into a table with a `BEFORE DELETE`
//! trigger is left to the database (`on_delete = "database"`), as such a trigger often refuses
//! every other delete.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::config::is_identifier;
use crate::schema::{ForeignKey, ReferentialAction, Schema, Table};

/// One foreign key that can be a relation: `child_table.columns` → `parent_table`'s key, or the
/// parent columns it references.
struct Edge {
    parent: usize,
    child: usize,
    columns: Vec<String>,
    /// The parent columns referenced, when they are not the parent's key.
    references: Option<Vec<String>>,
    /// The foreign key is `ON DELETE SET NULL`: the relation nullifies, as the database would.
    set_null: bool,
    /// The foreign key is `ON DELETE CASCADE` and the child table has a `BEFORE DELETE` trigger,
    /// which often lets only the database's own cascade delete its rows.
    guard: Option<Guard>,
}

/// A child table's trigger over a cascading foreign key.
struct Guard {
    trigger: String,
    /// A foreign key below the child's rows that is not `ON DELETE CASCADE` (described), so the
    /// database cannot delete everything below them: the relation stays cascade's.
    blocked_by: Option<String>,
}

impl Edge {
    /// The relation leaves its rows to the database (`on_delete = "database"`).
    fn to_database(&self) -> bool {
        self.guard.as_ref().is_some_and(|guard| guard.blocked_by.is_none())
    }
}

impl Edge {
    /// `{ model = "child", column = "c"` (or `columns = [...]`, and `references = ...`), open.
    fn relation(&self, child: &str) -> String {
        let mut relation = format!("{{ model = {}, ", toml_string(child));
        relation.push_str(&toml_columns("column", &self.columns));
        if let Some(references) = &self.references {
            relation.push_str(&format!(", {}", toml_columns("references", references)));
        }
        relation
    }
}

/// What becomes of an edge in the written config.
enum Decision {
    Delete,
    /// The database deletes the rows (see [`Edge::to_database`]).
    Database,
    /// The foreign key is `ON DELETE SET NULL`.
    Nullify,
    /// Deletes, and closes a cycle through several tables: the path of the cycle, for a comment.
    ClosesCycle(String),
}

/// The TOML text of a config for `schema`, starting with a `#:schema` line that points at
/// `cascade.schema.json` beside it (`cascade init` writes that file too).
pub fn starting_config(schema: &Schema) -> String {
    // A table whose name a config cannot hold is left out, with the reason, before anything
    // else: its foreign keys then stay undeclared, so a deletion that reaches it is refused.
    let (nameable, unnameable): (Vec<&Table>, Vec<&Table>) =
        schema.tables.iter().partition(|table| config_can_name(table));
    let schema = &Schema::new(nameable.into_iter().cloned().collect(), schema.kind);
    let names = model_names(&schema.tables);
    let (edges, mut comments) = edges(schema);
    let decisions = decide(schema.tables.len(), &edges, &names);

    let mut children: Vec<Vec<String>> = vec![Vec::new(); schema.tables.len()];
    for (edge, decision) in edges.iter().zip(decisions) {
        let relation = edge.relation(&names[edge.child]);
        let line = match decision {
            Decision::Delete if edge.parent == edge.child => {
                format!("  {relation} }},  # a tree: each row's children go first, to its leaves")
            }
            Decision::Delete => match &edge.guard {
                Some(Guard { trigger, blocked_by: Some(key) }) => format!(
                    "  {relation} }},  # the table's trigger {trigger} may refuse deletes not from the database, \
                     but {key}, so cascade deletes these rows itself"
                ),
                _ => format!("  {relation} }},"),
            },
            Decision::Database => {
                let trigger = edge.guard.as_ref().map_or("", |guard| guard.trigger.as_str());
                format!(
                    "  {relation}, on_delete = \"database\" }},  # the table's trigger {trigger} guards its \
                     deletes: its rows go by the foreign key's ON DELETE CASCADE"
                )
            }
            Decision::Nullify => format!("  {relation}, on_delete = \"nullify\" }},  # ON DELETE SET NULL"),
            Decision::ClosesCycle(path) => {
                format!("  {relation} }},  # closes the cycle {path}: followed to its end, children first")
            }
        };
        children[edge.parent].push(line);
    }
    for (parent, comment) in comments.drain(..) {
        children[parent].push(format!("  # {comment}"));
    }

    let mut text = String::from(
        "#:schema cascade.schema.json\n\
         # Written by `cascade init` from the database's foreign keys. Review it: chunk sizes,\n\
         # rate limits, status checks and outbox categories are yours to add.\n",
    );
    for table in unnameable {
        let _ = writeln!(
            text,
            "# table {:?} left out: its name cannot be written in a config (quotes, backticks, a `.`, \
             control or invisible characters)",
            table.qualified_name()
        );
    }
    for (index, children) in children.iter().enumerate() {
        write_model(&mut text, &schema.tables, &names, index, children);
    }
    text
}

fn write_model(text: &mut String, tables: &[Table], names: &[String], index: usize, children: &[String]) {
    let table = &tables[index];
    let deletes_children = children.iter().any(|line| !line.trim_start().starts_with('#'));
    let _ =
        write!(text, "\n[models.{}]\ntable = {}\n", toml_key(&names[index]), toml_string(&table_name(table, tables)));
    match table.primary_key.as_slice() {
        [key] if key != "id" => {
            let _ = writeln!(text, "key = {}", toml_string(key));
        }
        columns @ [_, _, ..] => {
            let _ = writeln!(text, "key = {}", toml_list(columns));
        }
        _ => {}
    }
    if !deletes_children {
        text.push_str("strategy = \"bulk\"\n");
    }
    if !children.is_empty() {
        let _ = writeln!(text, "children = [\n{}\n]", children.join("\n"));
    }
}

/// The table as the config names it: qualified only when its name alone is ambiguous.
/// Whether `table = "..."` can name the table: its schema and name are identifiers the config
/// accepts, and neither holds the `.` that separates them.
fn config_can_name(table: &Table) -> bool {
    let nameable = |part: &str| is_identifier(part) && !part.contains('.');
    nameable(&table.name) && table.schema.as_deref().is_none_or(nameable)
}

/// `schema.name` for a table off the search_path or whose name another schema shares (so that
/// the config names exactly it), else the bare name.
fn table_name(table: &Table, tables: &[Table]) -> String {
    let shared = tables.iter().filter(|other| other.name == table.name).count() > 1;
    if table.off_search_path || shared { table.qualified_name() } else { table.name.clone() }
}

/// snake_case of each table name (`InvoiceLine` → `invoice_line`), prefixed with the schema
/// when that name is taken, then numbered while it still is (`InvoiceLine` and `invoice_line`
/// in one schema become `invoice_line` and `invoice_line_2`): model names are TOML keys and
/// must be unique.
fn model_names(tables: &[Table]) -> Vec<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for table in tables {
        *count.entry(snake_case(&table.name)).or_default() += 1;
    }
    let mut taken = HashSet::new();
    tables
        .iter()
        .map(|table| {
            let name = snake_case(&table.name);
            let base = match (&table.schema, count[&name]) {
                (Some(schema), n) if n > 1 => format!("{}__{name}", snake_case(schema)),
                _ => name,
            };
            let mut unique = base.clone();
            for number in 2.. {
                if taken.insert(unique.clone()) {
                    break;
                }
                unique = format!("{base}_{number}");
            }
            unique
        })
        .collect()
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() && c != '_' {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && i > 0
            && (chars[i - 1].is_lowercase() || chars.get(i + 1).is_some_and(|next| next.is_lowercase()));
        if boundary && !out.ends_with('_') {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Every foreign key as an edge, or as a comment on the parent saying why it cannot be one.
fn edges(schema: &Schema) -> (Vec<Edge>, Vec<(usize, String)>) {
    let position = |table: &Table| schema.tables.iter().position(|t| std::ptr::eq(t, table));
    let mut edges = Vec::new();
    let mut comments = Vec::new();
    for (child, table) in schema.tables.iter().enumerate() {
        for key in &table.foreign_keys {
            let Some(parent) = schema.resolve(key).and_then(position) else {
                continue;
            };
            match referenced(&schema.tables[parent], key) {
                Ok(references) => edges.push(Edge {
                    parent,
                    child,
                    set_null: key.on_delete == ReferentialAction::SetNull,
                    guard: guard(schema, table, key),
                    columns: key.columns.clone(),
                    references,
                }),
                Err(reason) => comments.push((parent, format!("`{}` {}: {reason}", table.name, key_columns(key)))),
            }
        }
    }
    (edges, comments)
}

/// The guard of a cascading `key` of `table`: its first `BEFORE DELETE` trigger, and what keeps
/// the database from deleting everything below its rows.
fn guard(schema: &Schema, table: &Table, key: &ForeignKey) -> Option<Guard> {
    let trigger = table.delete_triggers.first().filter(|_| key.on_delete == ReferentialAction::Cascade)?;
    let blocked_by = schema.first_not_cascading(table).map(|(below, key)| {
        format!("the foreign key {} below them is ON DELETE {}", key.describe(&below.name), key.on_delete.as_sql())
    });
    Some(Guard { trigger: trigger.clone(), blocked_by })
}

fn key_columns(key: &ForeignKey) -> String {
    format!("({})", key.columns.join(", "))
}

/// The parent columns a relation over `key` names in `references`: none when `key` references
/// the parent's primary key as the model's `key` lists it. A parent without a primary key has
/// no key to delete by, and `ON DELETE SET DEFAULT` is the database's to do (nullify would
/// write NULL, not the default): both are left out.
fn referenced(parent: &Table, key: &ForeignKey) -> Result<Option<Vec<String>>, String> {
    if key.on_delete == ReferentialAction::SetDefault {
        return Err("ON DELETE SET DEFAULT: the database sets the default itself (`nullify` would set NULL); \
                    left out"
            .to_owned());
    }
    if parent.primary_key.is_empty() {
        return Err(format!("`{}` has no primary key to delete by; left out", parent.name));
    }
    let referenced = if key.referenced_columns.is_empty() { &parent.primary_key } else { &key.referenced_columns };
    let is_key = referenced.len() == parent.primary_key.len()
        && referenced.iter().zip(&parent.primary_key).all(|(a, b)| a.eq_ignore_ascii_case(b));
    Ok((!is_key).then(|| referenced.clone()))
}

/// Depth-first over delete edges in declared order: an edge back to a table on the current path
/// closes a cycle through several tables, which a deletion follows as it does a table's edge to
/// itself; it is marked, for its comment.
fn decide(tables: usize, edges: &[Edge], names: &[String]) -> Vec<Decision> {
    let mut decisions: Vec<Decision> = edges
        .iter()
        .map(|edge| match (edge.set_null, edge.to_database()) {
            (true, _) => Decision::Nullify,
            (false, true) => Decision::Database,
            (false, false) => Decision::Delete,
        })
        .collect();
    let mut outgoing: Vec<Vec<usize>> = vec![Vec::new(); tables];
    // Cascade follows no relation the database deletes along: it closes no cycle.
    let followed = |edge: &Edge| !edge.set_null && !edge.to_database() && edge.parent != edge.child;
    for (index, edge) in edges.iter().enumerate().filter(|(_, edge)| followed(edge)) {
        outgoing[edge.parent].push(index);
    }
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnPath,
        Done,
    }
    let mut state = vec![State::New; tables];
    for start in 0..tables {
        if state[start] != State::New {
            continue;
        }
        // An explicit stack of (table, next outgoing edge) keeps deep schemas off the call stack.
        let mut stack = vec![(start, 0)];
        state[start] = State::OnPath;
        while let Some((table, next)) = stack.last_mut() {
            let Some(&edge_index) = outgoing[*table].get(*next) else {
                state[*table] = State::Done;
                stack.pop();
                continue;
            };
            *next += 1;
            let edge = &edges[edge_index];
            match state[edge.child] {
                State::New => {
                    state[edge.child] = State::OnPath;
                    stack.push((edge.child, 0));
                }
                State::OnPath => {
                    let path: Vec<&str> = stack
                        .iter()
                        .map(|(t, _)| names[*t].as_str())
                        .skip_while(|name| *name != names[edge.child])
                        .chain([names[edge.child].as_str()])
                        .collect();
                    decisions[edge_index] = Decision::ClosesCycle(path.join(" → "));
                }
                State::Done => {}
            }
        }
    }
    decisions
}

pub(crate) fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// `column = "a"` or `columns = ["a", "b"]` as a relation writes them (`key` is the singular
/// key; `references` is the same key either way).
pub(crate) fn toml_columns(key: &str, columns: &[String]) -> String {
    match columns {
        [one] => format!("{key} = {}", toml_string(one)),
        several if key == "column" => format!("columns = {}", toml_list(several)),
        several => format!("{key} = {}", toml_list(several)),
    }
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| toml_string(item)).collect();
    format!("[{}]", quoted.join(", "))
}

fn toml_key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_owned() } else { toml_string(name) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Sources;
    use crate::schema::parse_ddl;

    fn generated(ddl: &str) -> (String, Vec<(crate::diagnostic::Code, String)>) {
        generated_from(&parse_ddl(ddl).schema)
    }

    fn generated_from(schema: &Schema) -> (String, Vec<(crate::diagnostic::Code, String)>) {
        let schema = schema.clone();
        let text = starting_config(&schema);
        let mut sources = Sources::default();
        sources.add("cascade.toml", text.clone());
        let mut loaded = crate::config::load_sources(sources);
        crate::planner::check(&mut loaded, Some(&schema));
        let found = loaded.diagnostics.iter().filter(|d| d.is_error()).map(|d| (d.code, d.message.clone())).collect();
        (text, found)
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(snake_case("InvoiceLine"), "invoice_line");
        assert_eq!(snake_case("MediaType"), "media_type");
        assert_eq!(snake_case("film_actor"), "film_actor");
        assert_eq!(snake_case("HTTPRequest"), "http_request");
        assert_eq!(snake_case("Odd Name"), "odd_name");
    }

    #[test]
    fn cycles_are_followed_and_the_result_validates() {
        let ddl = r#"
            CREATE TABLE store (id integer PRIMARY KEY, manager_staff_id integer NOT NULL REFERENCES staff (id));
            CREATE TABLE staff (id integer PRIMARY KEY, store_id integer NOT NULL REFERENCES store (id),
                                mentor_id integer REFERENCES staff (id));
            CREATE TABLE rental (rental_id integer PRIMARY KEY, staff_id integer NOT NULL REFERENCES staff (id));
            CREATE TABLE film_actor (film_id integer, actor_id integer, PRIMARY KEY (film_id, actor_id));
        "#;
        let (text, errors) = generated(ddl);
        assert_eq!(errors, vec![]);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn foreign_keys_become_relations_as_the_database_acts_on_them() {
        let ddl = "
            CREATE TABLE a (x integer, y integer, PRIMARY KEY (x, y));
            CREATE TABLE b (id integer PRIMARY KEY, code text UNIQUE, x integer, y integer,
                            FOREIGN KEY (x, y) REFERENCES a (x, y));
            CREATE TABLE c (id integer PRIMARY KEY, parent integer REFERENCES b (id), b_code text REFERENCES b (code));
            CREATE TABLE d (id integer PRIMARY KEY, b_id integer REFERENCES b (id) ON DELETE SET NULL,
                            fallback_b integer DEFAULT 0 REFERENCES b (id) ON DELETE SET DEFAULT,
                            y integer, x integer, FOREIGN KEY (y, x) REFERENCES a (y, x) ON DELETE CASCADE);
            CREATE TABLE \"Odd Name\" (id integer PRIMARY KEY);";
        let (text, errors) = generated(ddl);
        assert_eq!(errors, vec![]);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_cascading_key_into_a_table_with_a_delete_trigger_is_left_to_the_database() {
        let mut schema = parse_ddl(
            "CREATE TABLE post (id integer PRIMARY KEY);
             CREATE TABLE comment (id integer PRIMARY KEY, post_id integer REFERENCES post ON DELETE CASCADE);
             CREATE INDEX comment_post ON comment (post_id);
             CREATE TABLE draft (id integer PRIMARY KEY, post_id integer REFERENCES post ON DELETE CASCADE);
             CREATE INDEX draft_post ON draft (post_id);
             CREATE TABLE revision (id integer PRIMARY KEY, draft_id integer CONSTRAINT revision_draft REFERENCES draft);
             CREATE INDEX revision_draft ON revision (draft_id);",
        )
        .schema;
        for table in schema.tables.iter_mut().filter(|table| table.name != "post" && table.name != "revision") {
            table.delete_triggers = vec![format!("{}_only_by_cascade", table.name)];
        }
        let (text, errors) = generated_from(&schema);
        assert_eq!(errors, vec![], "{text}");
        insta::assert_snapshot!(text);
    }
}
