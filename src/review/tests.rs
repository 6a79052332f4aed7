//! Every change kind with its severity, from a base config and an edit of it.

use super::{ChangeKind as Kind, Review, Severity, Side};
use crate::diagnostic::Sources;

const BASE: &str = r#"
[settings]
per_row_chunk_size = 100

[options]
"rate.org" = 100

[models.org]
table = "org"
status = { column = "status", proceed = [1, 3], in_progress = 2 }
outbox = "org_update"
rate_limit = "rate.org"
children = [
  { model = "project", column = "org_id" },
  { model = "member", column = "org_id", on_delete = "nullify" },
]

[models.project]
table = "project"
outbox = "project_update"
outbox_payload = ["slug"]
children = [
  { model = "task", column = "project_id", strategy = "bulk" },
  { model = "label", column = "project_id" },
]

[models.task]
table = "task"
strategy = "bulk"

[models.label]
table = "label"
strategy = "bulk"

[models.member]
table = "member"

[models.events]
table = "events"
strategy = "bulk"
retention = { keep = "90d", column = "at" }

[outbox.scopes.control]
shard_key = "id"
categories = ["org_update"]
sink = "hook"

[outbox.scopes.org]
shard_key = "org_id"
categories = ["project_update"]
sink = "hook"

[outbox.sinks.hook]
url = "https://deliver:s3cret@example.com/hook"
headers = { Authorization = "env:TOKEN" }
"#;

/// The changes from `base` to `head`: severity, kind, and what each is about.
fn changes(base: &str, head: &str) -> Vec<(Severity, Kind, String)> {
    review(base, head)
        .changes
        .into_iter()
        .map(|change| {
            let about = change.relation.or(change.model).or(change.subject).unwrap_or_default();
            (change.severity, change.kind, about)
        })
        .collect()
}

fn review(base: &str, head: &str) -> Review {
    let load = |name: &str, text: &str| {
        let mut sources = Sources::default();
        sources.add(name, text);
        let mut loaded = crate::config::load_sources(sources);
        let checked = crate::planner::check(&mut loaded, None);
        let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).map(|d| &d.message).collect();
        assert!(checked.is_some(), "{name} has errors: {errors:?}");
        loaded
    };
    let (base, head) = (load("base.toml", base), load("head.toml", head));
    Review::compare(
        Side { config: &base.config, sources: &base.sources },
        Side { config: &head.config, sources: &head.sources },
    )
}

/// The base with each `(from, to)` replaced once (and the replacement found).
fn edit(replacements: &[(&str, &str)]) -> String {
    let mut text = BASE.to_owned();
    for (from, to) in replacements {
        assert!(text.contains(from), "the base holds `{from}`");
        text = text.replacen(from, to, 1);
    }
    text
}

fn one(severity: Severity, kind: Kind, about: &str) -> Vec<(Severity, Kind, String)> {
    vec![(severity, kind, about.to_owned())]
}

use Severity::{Attention, Destructive, Safe};

#[test]
fn the_same_config_is_no_change() {
    assert_eq!(changes(BASE, BASE), []);
}

#[test]
fn comments_order_and_spelling_are_no_change() {
    // The same declarations: comments, another order of tables, an inline table spelled out.
    let events =
        "[models.events]\ntable = \"events\"\nstrategy = \"bulk\"\nretention = { keep = \"90d\", column = \"at\" }\n";
    let moved = BASE.replacen(events, "", 1);
    let head = format!(
        "# the events first\n{}\n{moved}",
        events.replace("strategy = \"bulk\"", "strategy = \"bulk\" # set-based")
    );
    assert_eq!(changes(BASE, &head), []);
}

#[test]
fn relations_added_are_destructive() {
    let head = edit(&[(
        "{ model = \"label\", column = \"project_id\" },",
        "{ model = \"label\", column = \"project_id\" },\n  { model = \"member\", column = \"project_id\" },",
    )]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::RelationAdded, "project → member (project_id)"));
    let head = edit(&[(
        "{ model = \"label\", column = \"project_id\" },",
        "{ model = \"label\", column = \"project_id\" },\n  { model = \"member\", column = \"project_id\", on_delete = \"nullify\" },",
    )]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::RelationAdded, "project → member (project_id)"));
}

#[test]
fn relations_removed_need_attention() {
    let head = edit(&[("  { model = \"member\", column = \"org_id\", on_delete = \"nullify\" },\n", "")]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::RelationRemoved, "org → member (org_id)"));
}

#[test]
fn nullify_to_delete_is_destructive_and_back_needs_attention() {
    let to_delete = edit(&[(
        "{ model = \"member\", column = \"org_id\", on_delete = \"nullify\" }",
        "{ model = \"member\", column = \"org_id\" }",
    )]);
    assert_eq!(changes(BASE, &to_delete), one(Destructive, Kind::OnDeleteChanged, "org → member (org_id)"));
    assert_eq!(changes(&to_delete, BASE), one(Attention, Kind::OnDeleteChanged, "org → member (org_id)"));
}

#[test]
fn database_relations_by_what_they_leave_to_the_database() {
    let nullify = "{ model = \"member\", column = \"org_id\", on_delete = \"nullify\" }";
    let database = "{ model = \"member\", column = \"org_id\", on_delete = \"database\" }";
    let to_database = edit(&[(nullify, database)]);
    let to_delete = edit(&[(nullify, "{ model = \"member\", column = \"org_id\" }")]);
    let about = "org → member (org_id)";
    assert_eq!(changes(BASE, &to_database), one(Destructive, Kind::OnDeleteChanged, about), "kept rows now go");
    assert_eq!(changes(&to_delete, &to_database), one(Attention, Kind::OnDeleteChanged, about));
    assert_eq!(changes(&to_database, &to_delete), one(Attention, Kind::OnDeleteChanged, about));
    let added = edit(&[(
        "{ model = \"label\", column = \"project_id\" },",
        "{ model = \"label\", column = \"project_id\" },\n  { model = \"member\", column = \"project_id\", on_delete = \"database\" },",
    )]);
    let about = "project → member (project_id)";
    assert_eq!(changes(BASE, &added), one(Attention, Kind::RelationAdded, about), "the database deleted them before");
    assert_eq!(changes(&added, BASE), one(Attention, Kind::RelationRemoved, about));
}

#[test]
fn other_relation_columns_are_destructive() {
    let head =
        edit(&[("{ model = \"project\", column = \"org_id\" }", "{ model = \"project\", column = \"owner_org_id\" }")]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::RelationColumnsChanged, "org → project (owner_org_id)"));
    let head = edit(&[(
        "{ model = \"project\", column = \"org_id\" }",
        "{ model = \"project\", column = \"org_id\", references = \"legacy_id\" }",
    )]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::RelationColumnsChanged, "org → project (org_id)"));

    // A composite relation: the same (column, referenced column) pairs in another order are no
    // change; pairs matched otherwise are.
    let composite = |columns: &str, references: &str| {
        edit(&[(
            "{ model = \"project\", column = \"org_id\" }",
            &format!("{{ model = \"project\", columns = {columns}, references = {references} }}"),
        )])
    };
    let base = composite(r#"["org_id", "org_version"]"#, r#"["id", "version"]"#);
    let reordered = composite(r#"["org_version", "org_id"]"#, r#"["version", "id"]"#);
    assert_eq!(changes(&base, &reordered), Vec::new());
    let crossed = composite(r#"["org_version", "org_id"]"#, r#"["id", "version"]"#);
    assert_eq!(
        changes(&base, &crossed),
        one(Destructive, Kind::RelationColumnsChanged, "org → project (org_version, org_id)")
    );
}

#[test]
fn relation_tuning_and_order_are_safe() {
    let head = edit(&[(
        "{ model = \"task\", column = \"project_id\", strategy = \"bulk\" }",
        "{ model = \"task\", column = \"project_id\" }",
    )]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::RelationStrategyChanged, "project → task (project_id)"));
    let head = edit(&[(
        "{ model = \"label\", column = \"project_id\" }",
        "{ model = \"label\", column = \"project_id\", chunk_size = 50 }",
    )]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::RelationChunkSizeChanged, "project → label (project_id)"));
    let head = edit(&[(
        "  { model = \"task\", column = \"project_id\", strategy = \"bulk\" },\n  { model = \"label\", column = \"project_id\" },",
        "  { model = \"label\", column = \"project_id\" },\n  { model = \"task\", column = \"project_id\", strategy = \"bulk\" },",
    )]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::RelationOrderChanged, "project"));
}

#[test]
fn models_added_are_safe_unless_they_prune() {
    let head = format!("{BASE}\n[models.audit]\ntable = \"audit\"\n");
    assert_eq!(changes(BASE, &head), one(Safe, Kind::ModelAdded, "audit"));
    let head = format!(
        "{BASE}\n[models.audit]\ntable = \"audit\"\nstrategy = \"bulk\"\nretention = {{ keep = \"30d\", column = \"at\" }}\n"
    );
    assert_eq!(
        changes(BASE, &head),
        [(Destructive, Kind::RetentionChanged, "audit".to_owned()), (Safe, Kind::ModelAdded, "audit".to_owned())]
    );
}

#[test]
fn models_removed_need_attention() {
    let head = edit(&[
        ("  { model = \"member\", column = \"org_id\", on_delete = \"nullify\" },\n", ""),
        ("[models.member]\ntable = \"member\"\n", ""),
    ]);
    assert_eq!(
        changes(BASE, &head),
        [
            (Attention, Kind::ModelRemoved, "member".to_owned()),
            (Attention, Kind::RelationRemoved, "org → member (org_id)".to_owned())
        ]
    );
}

#[test]
fn other_tables_and_keys_are_destructive() {
    let head = edit(&[("table = \"member\"", "table = \"members\"")]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::TableChanged, "member"));
    let head = edit(&[("table = \"member\"", "table = \"member\"\nkey = \"member_id\"")]);
    assert_eq!(changes(BASE, &head), one(Destructive, Kind::KeyChanged, "member"));
}

#[test]
fn strategies_chunks_and_rate_limits_are_safe() {
    let head = edit(&[("table = \"member\"", "table = \"member\"\nstrategy = \"bulk\"")]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::StrategyChanged, "member"));
    let head = edit(&[("table = \"member\"", "table = \"member\"\nchunk_size = 10")]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::ChunkSizeChanged, "member"));
    // The same number written where the default was: no change.
    let head = edit(&[("table = \"member\"", "table = \"member\"\nchunk_size = 100")]);
    assert_eq!(changes(BASE, &head), []);
    let head = edit(&[("rate_limit = \"rate.org\"\n", "")]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::RateLimitChanged, "org"));
}

#[test]
fn status_guards_by_what_they_let_through() {
    let status = "status = { column = \"status\", proceed = [1, 3], in_progress = 2 }\n";
    let cases = [
        ("", Destructive),
        ("status = { column = \"state\", proceed = [1, 3], in_progress = 2 }\n", Destructive),
        ("status = { column = \"status\", proceed = [1, 3, 4], in_progress = 2 }\n", Destructive),
        ("status = { column = \"status\", proceed = [1], in_progress = 2 }\n", Attention),
        ("status = { column = \"status\", proceed = [1, 3], in_progress = 5 }\n", Attention),
    ];
    for (replacement, severity) in cases {
        let head = edit(&[(status, replacement)]);
        assert_eq!(changes(BASE, &head), one(severity, Kind::StatusChanged, "org"), "{replacement}");
    }
    // The same values in another order let the same roots through.
    let reordered = edit(&[(status, "status = { column = \"status\", proceed = [3, 1], in_progress = 2 }\n")]);
    assert_eq!(changes(BASE, &reordered), Vec::new());
    // A guard added: some roots are now skipped.
    let without = edit(&[(status, "")]);
    assert_eq!(changes(&without, BASE), one(Attention, Kind::StatusChanged, "org"));
}

#[test]
fn outbox_categories_and_payloads_need_attention() {
    let head = edit(&[("outbox_payload = [\"slug\"]", "outbox_payload = [\"slug\", \"name\"]")]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::PayloadChanged, "project"));
    let head = edit(&[("outbox = \"project_update\"\noutbox_payload = [\"slug\"]\n", "")]);
    assert_eq!(
        changes(BASE, &head),
        [
            (Attention, Kind::OutboxChanged, "project".to_owned()),
            (Attention, Kind::PayloadChanged, "project".to_owned()),
        ]
    );
}

#[test]
fn retention_by_what_it_drops() {
    let retention = "retention = { keep = \"90d\", column = \"at\" }";
    let cases = [
        ("retention = { keep = \"30d\", column = \"at\" }", Destructive),
        ("retention = { keep = \"90d\", column = \"created_at\" }", Destructive),
        ("retention = { keep = \"180d\", column = \"at\" }", Attention),
        ("", Attention),
    ];
    for (replacement, severity) in cases {
        let head = edit(&[(retention, replacement)]);
        assert_eq!(changes(BASE, &head), one(severity, Kind::RetentionChanged, "events"), "{replacement}");
    }
    let without = edit(&[(retention, "")]);
    assert_eq!(changes(&without, BASE), one(Destructive, Kind::RetentionChanged, "events"));
}

#[test]
fn reference_checks() {
    let head = edit(&[("table = \"member\"", "table = \"member\"\nrequire_all_references = true")]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::ReferencesCheckChanged, "member"));
    assert_eq!(changes(&head, BASE), one(Attention, Kind::ReferencesCheckChanged, "member"));
    let head = edit(&[(
        "table = \"member\"",
        "table = \"member\"\nignore_references = [{ table = \"legacy\", column = \"member_id\", reason = \"archive\" }]",
    )]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::ReferencesCheckChanged, "member"));
    assert_eq!(changes(&head, BASE), one(Safe, Kind::ReferencesCheckChanged, "member"));
}

#[test]
fn scopes_and_categories() {
    // A category moved to another scope is resharded.
    let head = edit(&[
        ("categories = [\"org_update\"]", "categories = [\"org_update\", \"project_update\"]"),
        ("categories = [\"project_update\"]", "categories = []"),
    ]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::CategoryScopeChanged, "category project_update"));
    let head = edit(&[("shard_key = \"org_id\"", "shard_key = \"organization_id\"")]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::ShardKeyChanged, "[outbox.scopes.org] shard_key"));
    let head = format!("{BASE}\n[outbox.scopes.billing]\nshard_key = \"id\"\ncategories = [\"invoice_update\"]\n");
    assert_eq!(
        changes(BASE, &head),
        [
            (Safe, Kind::ScopeAdded, "[outbox.scopes.billing]".to_owned()),
            (Safe, Kind::CategoryScopeChanged, "category invoice_update".to_owned()),
        ]
    );
    let head = edit(&[
        ("categories = [\"org_update\"]", "categories = [\"org_update\", \"project_update\"]"),
        ("[outbox.scopes.org]\nshard_key = \"org_id\"\ncategories = [\"project_update\"]\nsink = \"hook\"\n", ""),
    ]);
    assert_eq!(
        changes(BASE, &head),
        [
            (Attention, Kind::ScopeRemoved, "[outbox.scopes.org]".to_owned()),
            (Attention, Kind::CategoryScopeChanged, "category project_update".to_owned()),
        ]
    );
}

#[test]
fn sinks_and_routing() {
    let other = "\n[outbox.sinks.other]\ncommand = [\"bin/forget\"]\n";
    let head = format!(
        "{}{other}",
        edit(&[(
            "categories = [\"project_update\"]\nsink = \"hook\"",
            "categories = [\"project_update\"]\nsink = \"other\""
        )])
    );
    assert_eq!(
        changes(BASE, &head),
        [
            (Attention, Kind::RoutingChanged, "category project_update".to_owned()),
            (Safe, Kind::SinkAdded, "[outbox.sinks.other]".to_owned()),
        ]
    );
    let head = edit(&[(
        "headers = { Authorization = \"env:TOKEN\" }",
        "headers = { Authorization = \"env:TOKEN\" }\ntimeout = \"5s\"",
    )]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::SinkChanged, "[outbox.sinks.hook] timeout"));
    // Every category routed to the new sink, and the old one removed.
    let head = format!(
        "{}{other}",
        edit(&[
            ("categories = [\"org_update\"]\nsink = \"hook\"", "categories = [\"org_update\"]\nsink = \"other\""),
            (
                "categories = [\"project_update\"]\nsink = \"hook\"",
                "categories = [\"project_update\"]\nsink = \"other\""
            ),
            (
                "[outbox.sinks.hook]\nurl = \"https://deliver:s3cret@example.com/hook\"\nheaders = { Authorization = \"env:TOKEN\" }\n",
                ""
            ),
        ])
    );
    assert_eq!(
        changes(BASE, &head),
        [
            (Attention, Kind::RoutingChanged, "category org_update".to_owned()),
            (Attention, Kind::RoutingChanged, "category project_update".to_owned()),
            (Attention, Kind::SinkRemoved, "[outbox.sinks.hook]".to_owned()),
            (Safe, Kind::SinkAdded, "[outbox.sinks.other]".to_owned()),
        ]
    );
}

#[test]
fn sink_secrets_are_never_shown() {
    let head = edit(&[
        (
            "url = \"https://deliver:s3cret@example.com/hook\"",
            "url = \"https://deliver:n3w-s3cret@example.com/hook?token=qu3ry-t0ken&v\"",
        ),
        ("headers = { Authorization = \"env:TOKEN\" }", "headers = { Authorization = \"Bearer literal-t0ken\" }"),
    ]);
    let review = review(BASE, &head);
    let kinds: Vec<_> =
        review.changes.iter().map(|c| (c.severity, c.kind, c.subject.clone().unwrap_or_default())).collect();
    assert_eq!(
        kinds,
        [
            (Attention, Kind::SinkChanged, "[outbox.sinks.hook] url".to_owned()),
            (Attention, Kind::SinkChanged, "[outbox.sinks.hook] headers".to_owned()),
        ]
    );
    for format in
        [super::DiffFormat::Human, super::DiffFormat::Markdown, super::DiffFormat::Json, super::DiffFormat::Github]
    {
        let text = review.render(format, None);
        for secret in ["s3cret", "n3w-s3cret", "qu3ry-t0ken", "literal-t0ken", "env:TOKEN"] {
            assert!(!text.contains(secret), "{format:?} shows `{secret}`:\n{text}");
        }
        assert!(
            text.contains("*** (changed)")
                || format == super::DiffFormat::Github && text.contains("%2A")
                || text.contains("***")
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "kafka"),
    ignore = "a config with a Kafka sink is a kafka-unsupported error without the kafka feature"
)]
fn kafka_property_values_are_never_shown() {
    let kafka = "\n[outbox.sinks.events.kafka]\nbrokers = \"kafka-1:9092\"\nproperties = { \"sasl.password\" = \"hunt3r2\", \"linger.ms\" = 5 }\n";
    let base = format!("{}{kafka}", edit(&[("sink = \"hook\"\n\n", "sink = \"events\"\n\n")]));
    let head = base.replace("hunt3r2", "n3w-hunt3r2");
    let review = review(&base, &head);
    let kinds: Vec<_> =
        review.changes.iter().map(|c| (c.severity, c.kind, c.subject.clone().unwrap_or_default())).collect();
    assert_eq!(kinds, [(Attention, Kind::SinkChanged, "[outbox.sinks.events] kafka".to_owned())]);
    for format in
        [super::DiffFormat::Human, super::DiffFormat::Markdown, super::DiffFormat::Json, super::DiffFormat::Github]
    {
        let text = review.render(format, None);
        assert!(!text.contains("hunt3r2"), "{format:?} shows the password:\n{text}");
        assert!(text.contains("sasl.password"), "{format:?} names the property:\n{text}");
    }
}

#[test]
fn options_and_settings() {
    let head = edit(&[("\"rate.org\" = 100", "\"rate.org\" = 250")]);
    let review = review(BASE, &head);
    assert_eq!(review.changes.len(), 1);
    let change = &review.changes[0];
    assert_eq!(
        (change.severity, change.kind, change.roots.clone()),
        (Safe, Kind::OptionChanged, vec!["org".to_owned()])
    );
    let head = edit(&[("per_row_chunk_size = 100", "per_row_chunk_size = 200")]);
    assert_eq!(changes(BASE, &head), one(Safe, Kind::SettingChanged, "[settings] per_row_chunk_size"));
    let head = edit(&[("per_row_chunk_size = 100", "per_row_chunk_size = 100\nallowed_users = [\"deploy\"]")]);
    assert_eq!(changes(BASE, &head), one(Attention, Kind::SettingChanged, "[settings] allowed_users"));
    let head = edit(&[(
        "per_row_chunk_size = 100",
        "per_row_chunk_size = 100\ndatabase_url = \"postgres://app:pa55word@db/app\"",
    )]);
    let review = super::tests::review(BASE, &head);
    assert_eq!(review.changes[0].kind, Kind::SettingChanged);
    assert!(!review.render(super::DiffFormat::Json, None).contains("pa55word"));
    // Only the password changed: the two sides read the same but for a mark.
    let review = super::tests::review(&head, &head.replace("pa55word", "n3w-pa55word"));
    let change = &review.changes[0];
    assert_eq!((change.kind, change.subject.as_deref()), (Kind::SettingChanged, Some("[settings] database_url")));
    assert_eq!(change.before, serde_json::json!("postgres://app:***@db/app"));
    assert_eq!(change.after, serde_json::json!("postgres://app:***@db/app (a secret changed)"));
}

#[test]
fn each_change_names_the_roots_it_reaches() {
    let head = edit(&[
        (
            "{ model = \"label\", column = \"project_id\" }",
            "{ model = \"label\", column = \"project_id\", chunk_size = 50 }",
        ),
        ("retention = { keep = \"90d\", column = \"at\" }", "retention = { keep = \"30d\", column = \"at\" }"),
    ]);
    let review = review(BASE, &head);
    let roots: Vec<(Kind, Vec<String>)> = review.changes.iter().map(|c| (c.kind, c.roots.clone())).collect();
    assert_eq!(
        roots,
        [(Kind::RetentionChanged, vec!["events".to_owned()]), (Kind::RelationChunkSizeChanged, vec!["org".to_owned()]),]
    );
    let by_root: Vec<(String, [usize; 3])> = review.by_root().into_iter().collect();
    assert_eq!(by_root, [("events".to_owned(), [1, 0, 0]), ("org".to_owned(), [0, 0, 1])]);
    // Each change is placed where the head writes it.
    let place = review.changes[0].location.as_ref().expect("a place");
    let line = 1 + head.lines().position(|line| line.starts_with("retention")).expect("a retention line");
    assert_eq!((place.side, place.file.as_str(), place.line, place.column), ("head", "head.toml", line, 13));
}

#[test]
fn a_deep_chain_is_compared_without_recursion() {
    let mut base = String::new();
    for index in 0..20_000 {
        base.push_str(&format!(
            "[models.m{index}]\ntable = \"t{index}\"\nchildren = [{{ model = \"m{}\", column = \"parent_id\" }}]\n",
            index + 1
        ));
    }
    base.push_str("[models.m20000]\ntable = \"t20000\"\n");
    let head = base.replacen(
        "[models.m20000]\ntable = \"t20000\"\n",
        "[models.m20000]\ntable = \"t20000\"\nchunk_size = 7\n",
        1,
    );
    // Deeper than `validate` allows (plan-too-deep), so loaded without the rules.
    let load = |text: &str| {
        let mut sources = Sources::default();
        sources.add("chain.toml", text);
        crate::config::load_sources(sources)
    };
    let (base, head) = (load(&base), load(&head));
    let review = Review::compare(
        Side { config: &base.config, sources: &base.sources },
        Side { config: &head.config, sources: &head.sources },
    );
    assert_eq!(review.changes.len(), 1);
    assert_eq!(review.changes[0].roots, ["m0"]);
}

/// A name that does not validate (here a control character) still reaches a review when configs
/// are compared unchecked: every text form prints it escaped, on one line, starting nothing.
#[test]
fn an_unchecked_name_is_escaped_in_every_text_form() {
    let load = |text: &str| {
        let mut sources = Sources::default();
        sources.add("c.toml", text);
        crate::config::load_sources(sources)
    };
    let (base, head) =
        (load(BASE), load(&format!("{BASE}\n[models.\"x\\n::error::pwned\\u001b[2J\"]\ntable = \"x\"\n")));
    assert!(head.diagnostics.iter().any(|d| d.code == crate::diagnostic::Code::InvalidName));
    let review = Review::compare(
        Side { config: &base.config, sources: &base.sources },
        Side { config: &head.config, sources: &head.sources },
    );
    assert_eq!(review.changes.len(), 1);
    for format in [super::DiffFormat::Human, super::DiffFormat::Markdown, super::DiffFormat::Github] {
        let text = review.render(format, None);
        assert!(text.contains("x\\n::error::pwned\\u{1b}[2J"), "{format:?}:\n{text}");
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{format:?}:\n{text}");
        let commands = text.lines().filter(|line| line.trim_start().starts_with("::")).count();
        assert_eq!(commands, usize::from(format == super::DiffFormat::Github), "{format:?}:\n{text}");
    }
}

#[test]
fn remote_models_and_their_relations_are_compared() {
    let base = r#"
[models.organization]
remote = { category = "organization_deleted" }
children = [
  { model = "member", column = "organization_id" },
  { model = "invite", column = "organization_id", on_delete = "nullify" },
]

[models.group]
remote = { category = "group_deleted" }
children = [{ model = "member", column = "group_id", on_delete = "nullify" }]

[models.member]
table = "member"

[models.invite]
table = "invite"
"#;
    let head = r#"
[models.organization]
remote = { category = "org_deleted" }
children = [{ model = "invite", column = "organization_id" }]

[models.team]
remote = { category = "team_deleted" }
children = [{ model = "member", column = "team_id" }]

[models.member]
table = "member"

[models.invite]
table = "invite"
"#;
    let found = changes(base, head);
    let expected = [
        (Destructive, Kind::RemoteCategoryChanged, "organization"),
        (Destructive, Kind::ModelAdded, "team"),
        (Destructive, Kind::OnDeleteChanged, "organization → invite (organization_id)"),
        (Attention, Kind::ModelRemoved, "group"),
        (Attention, Kind::RelationRemoved, "organization → member (organization_id)"),
    ];
    let expected: Vec<(Severity, Kind, String)> =
        expected.into_iter().map(|(severity, kind, about)| (severity, kind, about.to_owned())).collect();
    assert_eq!(found, expected);

    // A remote model is a root: its tombstones start the deletions a change below it alters.
    let roots = |base: &str, head: &str| -> Vec<(String, Vec<String>)> {
        let review = review(base, head);
        review.changes.into_iter().map(|change| (change.model.unwrap_or_default(), change.roots)).collect()
    };
    let chunked = head.replace("table = \"invite\"", "table = \"invite\"\nchunk_size = 10");
    assert_eq!(roots(head, &chunked), [("invite".to_owned(), vec!["organization".to_owned()])]);
    let chunked = head.replace("table = \"member\"", "table = \"member\"\nchunk_size = 10");
    assert_eq!(roots(head, &chunked), [("member".to_owned(), vec!["team".to_owned()])]);
}
