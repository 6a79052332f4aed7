//! `cascade lsp` driven over stdio as an editor drives it: initialize, open, change, and every
//! request, each answer compared whole with what it must be.

use crate::common;

use std::path::{Path, PathBuf};

use common::lsp::{LspClient, position, position_of, range_of, uri};
use serde_json::{Value, json};

const MODELS: &str = r#"#:schema ../schemas/cascade.schema.json

[options]
"org.rows_per_second" = 500

[models.org]
table = "org"
rate_limit = "org.rows_per_second"
outbox = "org_update"
children = [
  { model = "project", column = "org_id" },
  { model = "member", column = "org_id", on_delete = "nullify" },
]

[models.project]
table = "project"
strategy = "bulk"
"#;

const OUTBOX: &str = r#"[models.member]
table = "member"
strategy = "bulk"
outbox = "member_update"

[outbox.scopes.org]
shard_key = "id"
categories = ["org_update"]
sink = "search"

[outbox.sinks.search]
command = ["bin/forget"]
"#;

/// `OUTBOX` with `member_update` registered: the config is clean.
fn outbox_fixed() -> String {
    OUTBOX.replace("[\"org_update\"]", "[\"org_update\", \"member_update\"]")
}

const DDL: &str = "CREATE TABLE org (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE project (id integer PRIMARY KEY, org_id integer NOT NULL REFERENCES org (id));
CREATE INDEX project_org ON project (org_id);
CREATE TABLE member (id integer PRIMARY KEY, org_id integer REFERENCES org (id));
CREATE TABLE audit_log (id integer PRIMARY KEY, org_id integer REFERENCES org (id));
";

const UNSCOPED: &str = "model `member` writes outbox category `member_update`, which no scope registers\nhelp: add \
                        \"member_update\" to the `categories` of one scope under [outbox.scopes]";
const UNREGISTERED: &str = "table `audit_log` references `org` by `org_id`, but model `org` declares no relation for \
                            it\nhelp: add { model = \"audit_log\", column = \"org_id\" } to the children of [models.org] \
                            and declare [models.audit_log] with table = \"audit_log\", or { table = \"audit_log\", \
                            column = \"org_id\", reason = \"...\" } to its ignore_references";
const UNINDEXED: &str = "no index of `member` leads with `org_id`: every chunk of `org` would scan the table\nhelp: \
                         CREATE INDEX \"member_org_id_idx\" ON \"member\" (\"org_id\");";

/// A project with the two config files (and the DDL beside them), a server started in it with
/// `args` and initialized with `options`.
struct Session {
    dir: tempfile::TempDir,
    client: LspClient,
}

impl Session {
    fn start(args: &[&str], options: Value) -> Self {
        let dir =
            common::project(&[("cascades/models.toml", MODELS), ("cascades/outbox.toml", OUTBOX), ("schema.sql", DDL)]);
        let mut client = LspClient::start(Path::new(env!("CARGO_BIN_EXE_cascade")), dir.path(), args);
        client.initialize(dir.path(), options);
        Self { dir, client }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join("cascades").join(name)
    }

    fn uri(&self, name: &str) -> String {
        uri(&self.path(name))
    }

    fn open(&mut self, name: &str, text: &str) {
        let uri = self.uri(name);
        self.client.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "toml", "version": 1, "text": text } }),
        );
    }

    fn change(&mut self, name: &str, version: i64, changes: Value) {
        let uri = self.uri(name);
        self.client.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
        );
    }

    fn diagnostics(&mut self, name: &str, version: Option<i64>) -> Vec<Value> {
        let uri = self.uri(name);
        self.client.diagnostics(&uri, version)
    }

    /// A request about `name` at `position`.
    fn at(&mut self, method: &str, name: &str, position: Value, extra: Value) -> Result<Value, Value> {
        let mut params = json!({ "textDocument": { "uri": self.uri(name) }, "position": position });
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        self.client.request(method, params)
    }

    fn location(&self, name: &str, text: &str, needle: &str, nth: usize) -> Value {
        json!({ "uri": self.uri(name), "range": range_of(text, needle, nth) })
    }
}

fn diagnostic(range: Value, severity: u8, code: &str, message: &str) -> Value {
    json!({ "range": range, "severity": severity, "code": code, "source": "cascade", "message": message })
}

/// `text` with `edit`'s text edits applied (edits of one file do not overlap).
fn apply(text: &str, edits: &Value) -> String {
    let offset = |position: &Value| {
        let line = position["line"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        let mut units = 0;
        let rest = &text[start..];
        let column = rest
            .char_indices()
            .find(|(_, c)| {
                let found = units >= position["character"].as_u64().unwrap() as usize;
                units += c.len_utf16();
                found
            })
            .map_or(rest.len(), |(index, _)| index);
        start + column
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .as_array()
        .unwrap()
        .iter()
        .map(|edit| {
            let range = &edit["range"];
            (offset(&range["start"]), offset(&range["end"]), edit["newText"].as_str().unwrap().to_owned())
        })
        .collect();
    spans.sort_by_key(|span| std::cmp::Reverse(span.0));
    let mut text = text.to_owned();
    for (start, end, new) in spans {
        text.replace_range(start..end, &new);
    }
    text
}

#[test]
fn initialize_announces_the_capabilities_and_shutdown_then_exit_exits_0() {
    let dir = common::project(&[("cascades/a.toml", "")]);
    let mut client = LspClient::start(Path::new(env!("CARGO_BIN_EXE_cascade")), dir.path(), &[]);
    let result = client.initialize(dir.path(), json!({}));
    assert_eq!(
        result,
        json!({
            "capabilities": {
                "textDocumentSync": { "openClose": true, "change": 2, "save": { "includeText": false } },
                "hoverProvider": true,
                "completionProvider": { "triggerCharacters": ["\"", "'", "[", ".", "=", "{", ","] },
                "definitionProvider": true,
                "referencesProvider": true,
                "codeActionProvider": { "codeActionKinds": ["quickfix"] },
                "renameProvider": { "prepareProvider": true },
                "executeCommandProvider": { "commands": ["cascade.copy"] },
            },
            "serverInfo": { "name": "cascade", "version": env!("CARGO_PKG_VERSION") },
        })
    );
    assert_eq!(client.request("shutdown", Value::Null), Ok(Value::Null));
    let after = client.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": "file:///a.toml" }, "position": { "line": 0, "character": 0 } }),
    );
    assert_eq!(after, Err(json!({ "code": -32600, "message": "the server is shutting down" })));
    client.notify("exit", Value::Null);
    assert_eq!(client.wait().code(), Some(0));
}

#[test]
fn exit_without_shutdown_exits_1_and_so_does_a_closed_input() {
    let dir = common::project(&[("cascades/a.toml", "")]);
    let binary = Path::new(env!("CARGO_BIN_EXE_cascade"));
    let mut client = LspClient::start(binary, dir.path(), &[]);
    client.initialize(dir.path(), json!({}));
    client.notify("exit", Value::Null);
    assert_eq!(client.wait().code(), Some(1));
    let mut client = LspClient::start(binary, dir.path(), &[]);
    client.initialize(dir.path(), json!({}));
    assert_eq!(client.wait().code(), Some(1));
}

#[test]
fn diagnostics_cover_every_file_of_the_config_with_open_buffers_over_the_disk() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    assert_eq!(session.diagnostics("models.toml", Some(1)), Vec::<Value>::new());
    // The other file is read from disk, where its category is in no scope.
    let unscoped = diagnostic(range_of(OUTBOX, "\"member_update\"", 0), 1, "unscoped-category", UNSCOPED);
    assert_eq!(session.diagnostics("outbox.toml", None), [unscoped]);

    // Its open buffer, unsaved, takes the disk's place.
    let fixed = outbox_fixed();
    session.open("outbox.toml", &fixed);
    assert_eq!(session.diagnostics("outbox.toml", Some(1)), Vec::<Value>::new());

    // An incremental change: a misspelt child model.
    let project = range_of(MODELS, "\"project\"", 0);
    session.change("models.toml", 2, json!([{ "range": project, "text": "\"projet\"" }]));
    let changed = MODELS.replacen("\"project\"", "\"projet\"", 1);
    let unknown = diagnostic(
        range_of(&changed, "\"projet\"", 0),
        1,
        "unknown-model",
        "model `org` has a relation to unknown model `projet`\nhelp: did you mean `project`?",
    );
    assert_eq!(session.diagnostics("models.toml", Some(2)), [unknown]);

    // A model declared in both files: reported in the second, pointing at the first.
    let twice = changed.clone() + "\n[models.member]\ntable = \"member\"\n";
    session.change("models.toml", 3, json!([{ "text": twice }]));
    let first = json!({
        "location": { "uri": session.uri("models.toml"), "range": range_of(&twice, "member", 1) },
        "message": "first declared here",
    });
    let mut duplicate = diagnostic(
        range_of(&fixed, "member", 0),
        1,
        "duplicate-declaration",
        &format!(
            "model `member` is declared twice (first at {}:19:9)\nhelp: keep one declaration of the model",
            session.path("models.toml").display()
        ),
    );
    duplicate["relatedInformation"] = json!([first]);
    assert_eq!(session.diagnostics("outbox.toml", Some(1)), [duplicate]);
    assert_eq!(session.diagnostics("models.toml", Some(3)).len(), 1);

    // Closing the buffer goes back to the file on disk.
    session.change("models.toml", 4, json!([{ "text": MODELS }]));
    assert_eq!(session.diagnostics("models.toml", Some(4)), Vec::<Value>::new());
    session.client.notify("textDocument/didClose", json!({ "textDocument": { "uri": session.uri("outbox.toml") } }));
    let unscoped = diagnostic(range_of(OUTBOX, "\"member_update\"", 0), 1, "unscoped-category", UNSCOPED);
    assert_eq!(session.diagnostics("outbox.toml", None), [unscoped]);
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn ranges_count_utf16_code_units() {
    let mut session = Session::start(&[], json!({}));
    let text = "[models.a]\ntable = \"a\"\nchildren = [{ model = \"é😀\", column = \"x\" }, { model = \"b\", column = \"y\" }]\n";
    session.open("models.toml", text);
    let diagnostics = session.diagnostics("models.toml", Some(1));
    let ranges: Vec<&Value> = diagnostics.iter().map(|d| &d["range"]).collect();
    // `é` is one unit, `😀` two: the second model's quote is at character 63, not 62 (chars)
    // nor 66 (bytes).
    assert_eq!(
        ranges,
        [
            &json!({ "start": { "line": 2, "character": 22 }, "end": { "line": 2, "character": 27 } }),
            &json!({ "start": { "line": 2, "character": 55 }, "end": { "line": 2, "character": 58 } }),
        ]
    );
    let _ = position;
}

#[test]
fn the_rules_that_need_a_schema_run_with_a_ddl_file_an_option_or_the_settings_database() {
    let expected = |session: &mut Session| {
        session.open("models.toml", MODELS);
        let models = session.diagnostics("models.toml", Some(1));
        assert_eq!(
            models,
            [
                diagnostic(range_of(MODELS, "\"org\"", 0), 1, "unregistered-reference", UNREGISTERED),
                diagnostic(range_of(MODELS, "\"org_id\"", 1), 2, "unindexed-relation", UNINDEXED),
            ]
        );
    };
    expected(&mut Session::start(&["--schema", "schema.sql"], json!({})));
    expected(&mut Session::start(&[], json!({ "schema": "schema.sql" })));

    let mut session = Session::start(&[], json!({}));
    let url = common::sqlite_database(session.dir.path(), DDL);
    let settings = format!("[settings]\ndatabase_url = \"{url}\"\n\n");
    let text = settings.clone() + MODELS;
    session.open("models.toml", &text);
    let models = session.diagnostics("models.toml", Some(1));
    let codes: Vec<&Value> = models.iter().map(|d| &d["code"]).collect();
    assert_eq!(codes, ["unregistered-reference", "unindexed-relation"]);
    assert_eq!(models[1]["range"], range_of(&text, "\"org_id\"", 1));
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// `(label, detail, new text)` of each completion item, and the range every item replaces.
fn completions(result: Result<Value, Value>) -> (Vec<(String, Value, String)>, Value) {
    let list = result.expect("completion succeeds");
    assert_eq!(list["isIncomplete"], false);
    let items = list["items"].as_array().expect("a list of items");
    let range = items.first().map_or(Value::Null, |item| item["textEdit"]["range"].clone());
    assert!(items.iter().all(|item| item["textEdit"]["range"] == range), "one range for all");
    let items = items
        .iter()
        .map(|item| {
            (
                item["label"].as_str().unwrap().to_owned(),
                item["detail"].clone(),
                item["textEdit"]["newText"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (items, range)
}

fn named(items: &[(&str, Value, &str)]) -> Vec<(String, Value, String)> {
    items.iter().map(|(label, detail, text)| ((*label).to_owned(), detail.clone(), (*text).to_owned())).collect()
}

#[test]
fn completion_offers_names_values_keys_tables_and_columns() {
    let mut session = Session::start(&["--schema", "schema.sql"], json!({}));
    session.open("models.toml", MODELS);
    session.diagnostics("models.toml", Some(1));
    let complete = |session: &mut Session, name: &str, text: &str, needle: &str, nth: usize, shift: usize| {
        completions(session.at("textDocument/completion", name, position_of(text, needle, nth, shift), json!({})))
    };
    let empty_at = |text: &str, needle: &str, nth: usize, shift: usize| {
        let at = position_of(text, needle, nth, shift);
        json!({ "start": at, "end": at })
    };

    // Inside a relation's `model` string: every model, with its table.
    let (items, range) = complete(&mut session, "models.toml", MODELS, "\"project\"", 0, 1);
    let models = [
        ("org", json!("table org"), "org"),
        ("project", json!("table project"), "project"),
        ("member", json!("table member"), "member"),
    ];
    assert_eq!((items, range), (named(&models), empty_at(MODELS, "\"project\"", 0, 1)));

    // What is typed is replaced whole, and filters the names (its characters in order).
    let (items, range) = complete(&mut session, "models.toml", MODELS, "\"project\"", 0, 4);
    assert_eq!(
        range,
        json!({ "start": position_of(MODELS, "\"project\"", 0, 1), "end": position_of(MODELS, "\"project\"", 0, 4) })
    );
    assert_eq!(items, named(&[("project", json!("table project"), "project")]));

    // Categories, registered or not, and where.
    let (items, _) = complete(&mut session, "models.toml", MODELS, "\"org_update\"", 0, 1);
    let categories =
        [("org_update", json!("scope org"), "org_update"), ("member_update", json!("in no scope"), "member_update")];
    assert_eq!(items, named(&categories));

    // In a scope's categories: the ones models write that it does not register yet.
    let (items, _) = complete(&mut session, "outbox.toml", OUTBOX, "\"org_update\"", 0, 1);
    assert_eq!(items, named(&[("member_update", Value::Null, "member_update")]));

    // Options, sinks, and the values of `on_delete`.
    let (items, _) = complete(&mut session, "models.toml", MODELS, "\"org.rows_per_second\"", 1, 1);
    assert_eq!(items, named(&[("org.rows_per_second", json!("= 500"), "org.rows_per_second")]));
    let (items, _) = complete(&mut session, "outbox.toml", OUTBOX, "\"search\"", 0, 1);
    assert_eq!(items, named(&[("search", Value::Null, "search")]));
    let (items, _) = complete(&mut session, "models.toml", MODELS, "\"nullify\"", 0, 1);
    assert_eq!(
        items,
        named(&[
            ("delete", Value::Null, "delete"),
            ("nullify", Value::Null, "nullify"),
            ("database", Value::Null, "database")
        ])
    );
    // After `=` without quotes: the quotes come with the value.
    let text = MODELS.replace("strategy = \"bulk\"", "strategy = ");
    session.change("models.toml", 2, json!([{ "text": text }]));
    let (items, _) = complete(&mut session, "models.toml", &text, "strategy = ", 0, 11);
    assert_eq!(items, named(&[("per_row", Value::Null, "\"per_row\""), ("bulk", Value::Null, "\"bulk\"")]));
    session.change("models.toml", 3, json!([{ "text": MODELS }]));

    // The keys a relation has not written yet, with their documentation.
    let result =
        session.at("textDocument/completion", "models.toml", position_of(MODELS, "{ model", 0, 2), json!({})).unwrap();
    let result = &result["items"];
    let keys: Vec<&str> = result.as_array().unwrap().iter().map(|item| item["label"].as_str().unwrap()).collect();
    assert_eq!(keys, ["columns", "references", "on_delete", "strategy", "chunk_size"]);
    assert_eq!(
        result[2]["documentation"],
        json!({
            "kind": "markdown",
            "value": "`delete` (default) deletes the child rows; `nullify` sets the column to NULL instead\n(this breaks cycles such as `employee.reports_to`); `database` leaves them to the foreign\nkey's own `ON DELETE CASCADE` (for children only the database may delete), counted in plans\nand runs.",
        })
    );
    assert_eq!(result[2]["kind"], 10);
    // A new line of a model's table: its keys but `table` and `strategy`.
    let (items, _) = complete(&mut session, "models.toml", MODELS, "strategy = \"bulk\"\n", 0, 18);
    let keys: Vec<&str> = items.iter().map(|(label, _, _)| label.as_str()).collect();
    assert_eq!(
        keys,
        [
            "key",
            "chunk_size",
            "rate_limit",
            "status",
            "outbox",
            "outbox_payload",
            "children",
            "require_all_references",
            "ignore_references",
            "retention"
        ]
    );

    // The schema's tables, and a relation's columns from its child model's table.
    let (items, _) = complete(&mut session, "models.toml", MODELS, "\"project\"", 1, 1);
    let tables = [
        ("org", json!("2 columns"), "org"),
        ("project", json!("2 columns"), "project"),
        ("member", json!("2 columns"), "member"),
        ("audit_log", json!("2 columns"), "audit_log"),
    ];
    assert_eq!(items, named(&tables));
    let (items, _) = complete(&mut session, "models.toml", MODELS, "\"org_id\"", 1, 1);
    let columns = [("id", json!("integer not null · member"), "id"), ("org_id", json!("integer · member"), "org_id")];
    assert_eq!(items, named(&columns));
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn completion_of_many_names_is_capped_and_filtered_by_what_is_typed() {
    let mut text: String =
        (0..150).map(|i| format!("[models.m{i}]\ntable = \"t{i}\"\nstrategy = \"bulk\"\n\n")).collect();
    text.push_str("[models.root]\ntable = \"root\"\nchildren = [{ model = \"m1\", column = \"root_id\" }]\n");
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", &text);
    session.diagnostics("models.toml", Some(1));
    let list = |session: &mut Session, shift: usize| {
        let list =
            session.at("textDocument/completion", "models.toml", position_of(&text, "\"m1\"", 0, shift), json!({}));
        let list = list.unwrap();
        let labels: Vec<String> =
            list["items"].as_array().unwrap().iter().map(|i| i["label"].as_str().unwrap().to_owned()).collect();
        (list["isIncomplete"].clone(), labels)
    };
    let (incomplete, labels) = list(&mut session, 1);
    assert_eq!((incomplete, labels.len()), (json!(true), 100));
    assert_eq!(labels[..3], ["m0", "m1", "m2"]);
    let (incomplete, labels) = list(&mut session, 3);
    // As editors match: `m`, then a `1` somewhere after it.
    let expected: Vec<String> = (0..150).map(|i| format!("m{i}")).filter(|name| name[1..].contains('1')).collect();
    assert_eq!((incomplete, labels), (json!(false), expected));
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn definition_and_references_reach_across_files() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    session.diagnostics("models.toml", Some(1));
    let member = position_of(MODELS, "\"member\"", 0, 3);
    let definition = session.at("textDocument/definition", "models.toml", member.clone(), json!({}));
    assert_eq!(definition, Ok(json!([session.location("outbox.toml", OUTBOX, "member", 0)])));
    let category = position_of(MODELS, "\"org_update\"", 0, 1);
    let definition = session.at("textDocument/definition", "models.toml", category, json!({}));
    assert_eq!(definition, Ok(json!([session.location("outbox.toml", OUTBOX, "\"org_update\"", 0)])));
    let option = position_of(MODELS, "\"org.rows_per_second\"", 1, 0);
    let definition = session.at("textDocument/definition", "models.toml", option, json!({}));
    assert_eq!(definition, Ok(json!([session.location("models.toml", MODELS, "\"org.rows_per_second\"", 0)])));
    let sink = position_of(OUTBOX, "\"search\"", 0, 2);
    let definition = session.at("textDocument/definition", "outbox.toml", sink, json!({}));
    assert_eq!(definition, Ok(json!([session.location("outbox.toml", OUTBOX, "search", 1)])));
    // Nothing to go to on a plain value.
    let table = position_of(MODELS, "\"org\"", 0, 1);
    assert_eq!(session.at("textDocument/definition", "models.toml", table, json!({})), Ok(json!([])));

    let with = session.at(
        "textDocument/references",
        "models.toml",
        member.clone(),
        json!({ "context": { "includeDeclaration": true } }),
    );
    let uses = session.location("models.toml", MODELS, "\"member\"", 0);
    assert_eq!(with, Ok(json!([uses, session.location("outbox.toml", OUTBOX, "member", 0)])));
    let without = session.at(
        "textDocument/references",
        "models.toml",
        member,
        json!({ "context": { "includeDeclaration": false } }),
    );
    assert_eq!(without, Ok(json!([uses])));
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// A scope with cells: its `cell_sinks` name sinks (completed, followed to their declaration) and
/// take its cells as keys.
#[test]
fn cell_sinks_complete_and_lead_to_their_sinks() {
    let mut session = Session::start(&[], json!({}));
    let cells = outbox_fixed().replace(
        "sink = \"search\"\n",
        "cells = [\"us\", \"de\"]\ncell_sinks = { us = \"search\", de = \"search\" }\n",
    );
    session.open("outbox.toml", &cells);
    assert_eq!(session.diagnostics("outbox.toml", Some(1)), Vec::<Value>::new());
    let sink = position_of(&cells, "\"search\"", 1, 1);
    let (items, _) = completions(session.at("textDocument/completion", "outbox.toml", sink.clone(), json!({})));
    assert_eq!(items, named(&[("search", Value::Null, "search")]));
    let definition = session.at("textDocument/definition", "outbox.toml", sink, json!({}));
    assert_eq!(definition, Ok(json!([session.location("outbox.toml", &cells, "search", 2)])));

    // A new line of the scope's `cell_sinks` table: the cells it has no sink for yet.
    let table = cells.replace(
        "cell_sinks = { us = \"search\", de = \"search\" }\n",
        "\n[outbox.scopes.org.cell_sinks]\nus = \"search\"\n\n",
    );
    session.change("outbox.toml", 2, json!([{ "text": table }]));
    let (items, _) = completions(session.at(
        "textDocument/completion",
        "outbox.toml",
        position_of(&table, "us = \"search\"\n", 0, 15),
        json!({}),
    ));
    let keys: Vec<&str> = items.iter().map(|(label, _, _)| label.as_str()).collect();
    assert_eq!(keys, ["de"]);
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn hover_documents_keys_and_sums_up_models_categories_and_options() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    session.open("outbox.toml", &outbox_fixed());
    session.diagnostics("outbox.toml", Some(1));
    let hover = |session: &mut Session, name: &str, text: &str, needle: &str, nth: usize, shift: usize| {
        let result = session.at("textDocument/hover", name, position_of(text, needle, nth, shift), json!({})).unwrap();
        assert_eq!(result["contents"]["kind"], "markdown");
        (result["contents"]["value"].as_str().unwrap().to_owned(), result["range"].clone())
    };
    assert_eq!(
        hover(&mut session, "models.toml", MODELS, "strategy", 0, 3),
        (
            "**`strategy`**\n\nHow rows are deleted: `per_row` (default) or `bulk`.\n\nValues: `\"per_row\"`, `\"bulk\"`".to_owned(),
            range_of(MODELS, "strategy", 0)
        )
    );
    // A value is documented by its key.
    let (text, range) = hover(&mut session, "models.toml", MODELS, "\"nullify\"", 0, 2);
    assert!(text.starts_with("**`on_delete`**\n\n`delete` (default) deletes the child rows"), "{text}");
    assert_eq!(range, range_of(MODELS, "\"nullify\"", 0));
    assert_eq!(
        hover(&mut session, "models.toml", MODELS, "[models.org]", 0, 9),
        (
            "**model `org`**: table `org`, key `id` (default), strategy `per_row` (default)\n\nDeleting its rows takes 3 \
             steps: deletes `project`, `org`; nullifies `member.org_id`"
                .to_owned(),
            range_of(MODELS, "org", 1)
        )
    );
    let (text, _) = hover(&mut session, "models.toml", MODELS, "\"org_update\"", 0, 1);
    assert_eq!(text, "**outbox category `org_update`**: registered in scope `org` (shard key `id`); written by `org`");
    let (text, _) = hover(&mut session, "models.toml", MODELS, "\"org.rows_per_second\"", 0, 1);
    assert_eq!(
        text,
        "**option `org.rows_per_second`** = 500 (rows per second; a `cascade_option` row overrides it): the rate limit of `org`"
    );
    // Nothing to say on a comment.
    assert_eq!(
        session.at("textDocument/hover", "models.toml", json!({ "line": 0, "character": 3 }), json!({})),
        Ok(Value::Null)
    );
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// A receiving database's config: a remote model, whose rows live in another database.
const RECEIVER: &str = r#"[models.organization]
remote = { category = "organization_deleted" }
children = [
  { model = "seat", column = "organization_id" },
  { model = "invite", column = "organization_id", on_delete = "nullify" },
]

[models.seat]
table = "seat"

[models.invite]
table = "invite"
"#;

/// A remote model is a model to the editor: its relations lead to their models, a hover says
/// where its deletions come from and what they do here, and renames reach it.
#[test]
fn a_remote_model_is_followed_hovered_and_renamed_like_any_model() {
    let mut session = Session::start(&[], json!({}));
    session.open("receiver.toml", RECEIVER);
    assert_eq!(session.diagnostics("receiver.toml", Some(1)), Vec::<Value>::new());
    let seat = position_of(RECEIVER, "\"seat\"", 0, 2);
    let definition = session.at("textDocument/definition", "receiver.toml", seat.clone(), json!({}));
    assert_eq!(definition, Ok(json!([session.location("receiver.toml", RECEIVER, "seat", 1)])));

    let hover =
        session.at("textDocument/hover", "receiver.toml", position_of(RECEIVER, "organization]", 0, 2), json!({}));
    assert_eq!(
        hover.unwrap()["contents"]["value"],
        "**remote model `organization`**: its rows live in another database, whose `organization_deleted` tombstones \
         reach this one's inbox; key `id` (default)\n\nApplying a tombstone deletes the rows of `seat` that name its \
         key, each with its own cascade; nullifies `invite.organization_id`"
    );

    let edit = session.at("textDocument/rename", "receiver.toml", seat, json!({ "newName": "seating" })).unwrap();
    assert_eq!(
        edit,
        json!({ "changes": { session.uri("receiver.toml"): [
            { "range": range_of(RECEIVER, "seat", 1), "newText": "seating" },
            { "range": range_of(RECEIVER, "\"seat\"", 0), "newText": "\"seating\"" },
        ]}})
    );
    let remote = position_of(RECEIVER, "organization]", 0, 2);
    let edit = session.at("textDocument/rename", "receiver.toml", remote, json!({ "newName": "company" })).unwrap();
    assert_eq!(
        edit,
        json!({ "changes": { session.uri("receiver.toml"): [
            { "range": range_of(RECEIVER, "organization", 0), "newText": "company" },
        ]}})
    );
    let renamed = apply(RECEIVER, &edit["changes"][session.uri("receiver.toml")]);
    session.change("receiver.toml", 2, json!([{ "text": renamed }]));
    assert_eq!(session.diagnostics("receiver.toml", Some(2)), Vec::<Value>::new());
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn rename_changes_every_file_quotes_as_needed_and_refuses_a_clash() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    session.open("outbox.toml", &outbox_fixed());
    session.diagnostics("outbox.toml", Some(1));
    let member = position_of(MODELS, "\"member\"", 0, 2);
    let prepared = session.at("textDocument/prepareRename", "models.toml", member.clone(), json!({}));
    let inner =
        json!({ "start": position_of(MODELS, "\"member\"", 0, 1), "end": position_of(MODELS, "\"member\"", 0, 7) });
    assert_eq!(prepared, Ok(json!({ "range": inner, "placeholder": "member" })));

    let clash = session.at("textDocument/rename", "models.toml", member.clone(), json!({ "newName": "project" }));
    assert_eq!(
        clash,
        Err(json!({ "code": -32803, "message": "model `project` exists already: renaming `member` would merge them" }))
    );
    let blank = session.at("textDocument/rename", "models.toml", member.clone(), json!({ "newName": " " }));
    assert_eq!(blank.unwrap_err()["code"], -32803);

    let edit = session.at("textDocument/rename", "models.toml", member, json!({ "newName": "team member" })).unwrap();
    let fixed = outbox_fixed();
    assert_eq!(
        edit,
        json!({ "changes": {
            session.uri("models.toml"): [{ "range": range_of(MODELS, "\"member\"", 0), "newText": "\"team member\"" }],
            session.uri("outbox.toml"): [{ "range": range_of(&fixed, "member", 0), "newText": "\"team member\"" }],
        }})
    );
    // Applied, the config is as clean as before.
    let models = apply(MODELS, &edit["changes"][session.uri("models.toml")]);
    let outbox = apply(&fixed, &edit["changes"][session.uri("outbox.toml")]);
    assert!(outbox.starts_with("[models.\"team member\"]\n"), "{outbox}");
    session.change("models.toml", 2, json!([{ "text": models }]));
    session.change("outbox.toml", 2, json!([{ "text": outbox }]));
    assert_eq!(session.diagnostics("models.toml", Some(2)), Vec::<Value>::new());
    assert_eq!(session.diagnostics("outbox.toml", Some(2)), Vec::<Value>::new());

    // A quoted option keeps its quotes; a scope's category too.
    let option = position_of(MODELS, "\"org.rows_per_second\"", 1, 1);
    let edit = session.at("textDocument/rename", "models.toml", option, json!({ "newName": "org.rows" })).unwrap();
    let edits = &edit["changes"][session.uri("models.toml")];
    assert_eq!(
        edits.as_array().unwrap().iter().map(|e| e["newText"].clone()).collect::<Vec<_>>(),
        ["\"org.rows\"", "\"org.rows\""]
    );
    assert_eq!(session.client.shutdown().code(), Some(0));
}

#[test]
fn code_actions_register_a_category_add_an_index_comment_or_copy_it_and_ignore_a_reference() {
    let mut session = Session::start(&["--schema", "schema.sql"], json!({}));
    session.open("models.toml", MODELS);
    session.open("outbox.toml", OUTBOX);
    session.diagnostics("outbox.toml", Some(1));
    let actions = |session: &mut Session, name: &str, range: Value| {
        let params =
            json!({ "textDocument": { "uri": session.uri(name) }, "range": range, "context": { "diagnostics": [] } });
        session.client.request("textDocument/codeAction", params).unwrap()
    };

    let register = actions(&mut session, "outbox.toml", range_of(OUTBOX, "member_update", 0));
    let unscoped = diagnostic(range_of(OUTBOX, "\"member_update\"", 0), 1, "unscoped-category", UNSCOPED);
    let after_org = position_of(OUTBOX, "\"org_update\"", 0, 12);
    assert_eq!(
        register,
        json!([{
            "title": "Register `member_update` in scope `org`",
            "kind": "quickfix",
            "diagnostics": [unscoped],
            "edit": { "changes": { session.uri("outbox.toml"): [
                { "range": { "start": after_org, "end": after_org }, "newText": ", \"member_update\"" }
            ]}},
        }])
    );
    let outbox = apply(OUTBOX, &register[0]["edit"]["changes"][session.uri("outbox.toml")]);
    assert_eq!(outbox, outbox_fixed());

    let index = actions(&mut session, "models.toml", position_range(MODELS, "\"org_id\"", 1));
    let unindexed = diagnostic(range_of(MODELS, "\"org_id\"", 1), 2, "unindexed-relation", UNINDEXED);
    let statement = "CREATE INDEX \"member_org_id_idx\" ON \"member\" (\"org_id\");";
    let line_start = position_of(MODELS, "  { model = \"member\"", 0, 0);
    assert_eq!(
        index,
        json!([
            {
                "title": format!("Add `{statement}` as a comment"),
                "kind": "quickfix",
                "diagnostics": [unindexed],
                "edit": { "changes": { session.uri("models.toml"): [
                    { "range": { "start": line_start, "end": line_start }, "newText": format!("  # {statement}\n") }
                ]}},
            },
            {
                "title": format!("Copy `{statement}`"),
                "kind": "quickfix",
                "diagnostics": [unindexed],
                "command": { "title": format!("Copy `{statement}`"), "command": "cascade.copy", "arguments": [statement] },
            },
        ])
    );
    let copied = session
        .client
        .request("workspace/executeCommand", json!({ "command": "cascade.copy", "arguments": [statement] }));
    assert_eq!(copied, Ok(json!(statement)));
    let shown = session.client.notification("window/showMessage", |_| true);
    assert_eq!(shown, json!({ "type": 3, "message": format!("cascade: {statement}") }));

    let ignore = actions(&mut session, "models.toml", range_of(MODELS, "table = \"org\"", 0));
    assert_eq!(ignore.as_array().unwrap().len(), 1);
    let entry = "{ table = \"audit_log\", column = \"org_id\", reason = \"...\" }";
    assert_eq!(ignore[0]["title"], format!("Add `{entry}` to `ignore_references` of model `org`"));
    assert_eq!(
        ignore[0]["diagnostics"],
        json!([diagnostic(range_of(MODELS, "\"org\"", 0), 1, "unregistered-reference", UNREGISTERED)])
    );

    // Every edit applied: only the warning of the commented index is left.
    let mut models = apply(MODELS, &index[0]["edit"]["changes"][session.uri("models.toml")]);
    let ignore = actions(&mut session, "models.toml", range_of(MODELS, "\"org\"", 0));
    models = apply(&models, &json!([shifted(&ignore[0]["edit"]["changes"][session.uri("models.toml")][0], 1)]));
    assert!(models.contains(&format!("  # {statement}\n  {{ model = \"member\"")), "{models}");
    assert!(models.contains(&format!("]\nignore_references = [{entry}]\n\n[models.project]")), "{models}");
    session.change("models.toml", 2, json!([{ "text": models }]));
    session.change("outbox.toml", 2, json!([{ "text": outbox }]));
    let left = session.diagnostics("models.toml", Some(2));
    let codes: Vec<&Value> = left.iter().map(|d| &d["code"]).collect();
    assert_eq!(codes, ["unindexed-relation"]);
    assert_eq!(session.diagnostics("outbox.toml", Some(2)), Vec::<Value>::new());
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// The empty range at the start of the `nth` `needle`.
fn position_range(text: &str, needle: &str, nth: usize) -> Value {
    let at = position_of(text, needle, nth, 0);
    json!({ "start": at, "end": at })
}

/// A text edit moved `lines` lines down (after a line was inserted above it).
fn shifted(edit: &Value, lines: u64) -> Value {
    let mut edit = edit.clone();
    for end in ["start", "end"] {
        let line = edit["range"][end]["line"].as_u64().unwrap();
        edit["range"][end]["line"] = json!(line + lines);
    }
    edit
}

#[test]
fn a_request_waits_for_the_changes_sent_before_it() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    // No waiting for diagnostics: the change and the request go out back to back.
    let text = MODELS.to_owned()
        + "\n[models.team]\ntable = \"team\"\nchildren = [{ model = \"project\", column = \"team_id\" }]\n";
    session.change("models.toml", 2, json!([{ "text": text }]));
    let at = position_of(&text, "\"project\"", 2, 2);
    let definition = session.at("textDocument/definition", "models.toml", at, json!({}));
    assert_eq!(definition, Ok(json!([session.location("models.toml", &text, "project", 1)])));
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// A body that is no JSON-RPC message gets the protocol's error and the server goes on, as it
/// does after a change whose range ends before it starts; a header it cannot read loses the
/// messages' boundaries and ends it with 1, not a crash.
#[test]
fn malformed_messages_are_answered_and_a_broken_header_ends_the_server_with_1() {
    let mut session = Session::start(&[], json!({}));
    session.open("models.toml", MODELS);
    session.diagnostics("models.toml", Some(1));
    let frame = |body: &[u8]| [format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(), body].concat();
    for (body, id, code) in [
        (&b"{{{{{"[..], Value::Null, -32700),
        (&b"\xff\xfe{"[..], Value::Null, -32700),
        (&br#"{"jsonrpc":"2.0","id":77}"#[..], json!(77), -32600),
        (&b"[]"[..], Value::Null, -32600),
    ] {
        session.client.send_raw(&frame(body));
        let answer = session.client.next_matching(|message| message.get("error").is_some());
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&id, &json!(code)), "{answer}");
    }
    let reversed = json!({ "start": { "line": 3, "character": 5 }, "end": { "line": 1, "character": 0 } });
    session.change("models.toml", 2, json!([{ "range": reversed, "text": "x" }]));
    session.diagnostics("models.toml", Some(2));
    let hover = session.at("textDocument/hover", "models.toml", position_of(MODELS, "strategy", 0, 1), json!({}));
    assert!(hover.is_ok(), "{hover:?}");

    session.client.send_raw(b"Content-Length: 2\n\n{}");
    assert_eq!(session.client.exited().code(), Some(1));
}

#[test]
fn garbage_never_crashes_the_server() {
    let mut session = Session::start(&["--schema", "schema.sql"], json!({}));
    let mut random = common::random::Random::seeded(32);
    let alphabet: Vec<char> = "[]{}\"'=.,\n #\\abmodelstchiruy1é😀\r\t_-".chars().collect();
    let mut text: String = MODELS.to_owned();
    session.open("models.toml", &text);
    session.diagnostics("models.toml", Some(1));
    for version in 2..60 {
        // Replace a random stretch with random characters, as a typist who hits anything.
        let chars: Vec<char> = text.chars().collect();
        let start = random.below(chars.len() as u64 + 1) as usize;
        let end = (start + random.below(20) as usize).min(chars.len());
        let insert: String =
            (0..random.below(30)).map(|_| alphabet[random.below(alphabet.len() as u64) as usize]).collect();
        text = chars[..start].iter().chain(insert.chars().collect::<Vec<_>>().iter()).chain(&chars[end..]).collect();
        session.change("models.toml", version, json!([{ "text": text }]));
        let offset = text
            .char_indices()
            .nth(random.below(text.chars().count() as u64 + 1) as usize)
            .map_or(text.len(), |(i, _)| i);
        let at = position(&text, offset);
        for method in
            ["textDocument/completion", "textDocument/hover", "textDocument/definition", "textDocument/prepareRename"]
        {
            let answer = session.at(method, "models.toml", at.clone(), json!({}));
            assert!(answer.is_ok(), "{method} at {at} of {text:?}: {answer:?}");
        }
        let params = json!({ "textDocument": { "uri": session.uri("models.toml") }, "range": { "start": at, "end": at }, "context": { "diagnostics": [] } });
        assert!(session.client.request("textDocument/codeAction", params).is_ok());
        let diagnostics = session.diagnostics("models.toml", Some(version));
        assert!(diagnostics.iter().all(|d| d["source"] == "cascade"));
    }
    assert_eq!(session.client.shutdown().code(), Some(0));
}

/// A header line of many MiB without a line end, its input kept open: the server refuses it
/// by itself after its first KiBs (having taken about a pipe's worth of it) and says why, after
/// the initialization and before it, where it used to read and keep the MiBs while waiting for
/// the line's end.
#[test]
fn a_header_line_of_64_mib_without_a_line_end_ends_the_server_without_holding_it() {
    let dir = common::project(&[]);
    let binary = Path::new(env!("CARGO_BIN_EXE_cascade"));
    for initialization in [common::framing::initialization(dir.path()), Vec::new()] {
        let what = format!("a line of 64 MiB after {} bytes", initialization.len());
        let input = [initialization, vec![b'a'; 64 << 20]].concat();
        let ended = common::framing::serve(binary, dir.path(), input, false, &what);
        assert_eq!(ended.status.code(), Some(1), "{what}: {:?}: {}", ended.status, ended.stderr);
        let reason = "error: cannot talk to the client: a header longer than 8192 bytes";
        assert!(ended.stderr.starts_with(reason), "{what}: {}", ended.stderr);
        assert!(ended.taken < 1 << 20, "{what}: the server took {} bytes", ended.taken);
    }
}

/// Seeded broken input, through the real server: every frame before the break is answered,
/// then it exits 0 after `shutdown` and `exit`, or 1 by itself on a header that loses the
/// frames' boundaries (its input still open, of which it takes no more than a pipe's worth), or
/// 1 when its input closes inside a frame; never a panic, and never holding more than
/// `framing::PEAK_KIB`.
#[test]
fn broken_frames_are_answered_or_end_the_server_with_1_in_bounded_memory() {
    use common::framing::Ending;
    let dir = common::project(&[]);
    let binary = Path::new(env!("CARGO_BIN_EXE_cascade"));
    let mut random = common::random::Random::seeded(1_313);
    for number in 0..6 * common::framing::ENDS {
        let case = common::framing::case(&mut random, number);
        let what = format!("case {number}: {}", case.parts.join(", "));
        let input = [common::framing::initialization(dir.path()), case.input].concat();
        let ended = common::framing::serve(binary, dir.path(), input, case.ending == Ending::Truncated, &what);
        let code = if case.ending == Ending::Shutdown { 0 } else { 1 };
        assert_eq!(ended.status.code(), Some(code), "{what}: {:?}\n{}", ended.status, ended.stderr);
        assert!(
            ended.stderr.is_empty() == (code == 0) && !ended.stderr.contains("panicked"),
            "{what}: {}",
            ended.stderr
        );
        if case.ending == Ending::Refused {
            assert!(ended.taken < 1 << 20, "{what}: the server took {} bytes", ended.taken);
        }
        // The reader answers a body that is no message itself, so answers may pass each other.
        let mut answers: Vec<(Value, Option<i64>)> = ended
            .messages
            .iter()
            .filter(|message| message.get("method").is_none() && message["id"] != json!(0))
            .map(|message| (message["id"].clone(), message["error"]["code"].as_i64()))
            .collect();
        let mut expected = case.answers;
        for list in [&mut answers, &mut expected] {
            list.sort_by_key(|(id, code)| (id.to_string(), *code));
        }
        assert_eq!(answers, expected, "{what}");
    }
}
