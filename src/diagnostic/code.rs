use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A definite problem: validation fails.
    Error,
    /// A likely problem: validation fails only with `--deny-warnings`.
    Warning,
    /// Worth knowing, never a failure (not even with `--deny-warnings`).
    Note,
}

impl Severity {
    /// The severity's lowercase name, as written in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// The registry of every diagnostic code: declares the `Code` enum with, for each code, its stable
/// name, its severity, the rule that reports it (a file of `src/planner/rules/`, for the codes of
/// rules) and a one-line description, so none can drift from the others. A new rule is its file
/// and its line here: `planner::rules` registers every rule named here.
macro_rules! codes {
    ($d:tt $($variant:ident = $name:literal, $severity:ident, $(rule $rule:ident,)? $description:literal;)*) => {
        /// Every diagnostic the tool can emit. The names are stable: CI scripts may match on them.
        // Each variant's doc is its description, plain text shared with the README: `[options]`
        // there is no link.
        #[allow(rustdoc::broken_intra_doc_links)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(#[doc = $description] $variant,)*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code's stable name, such as `toml-syntax`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The severity of every diagnostic with this code.
            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }

            /// A one-line description of what the code means.
            pub fn description(self) -> &'static str {
                match self {
                    $(Code::$variant => $description,)*
                }
            }
        }

        /// Calls `$callback! { rule_module ... }` with the rule file of every code that has one,
        /// in the registry's order: how `planner::rules` declares and runs them.
        macro_rules! with_rules {
            ($d callback:ident) => {
                $d callback! { $($($rule)?)* }
            };
        }
        pub(crate) use with_rules;
    };
}

codes! { $
    TomlSyntax = "toml-syntax", Error, "The file is not valid TOML.";
    InvalidUtf8 = "invalid-utf8", Error, "The file is not valid UTF-8; the rest of it is still checked, with each invalid byte sequence read as U+FFFD.";
    UnknownKey = "unknown-key", Error, "A key that the config format does not have.";
    InvalidType = "invalid-type", Error, "A value of the wrong type, such as a string where a number belongs.";
    InvalidValue = "invalid-value", Error, "A value of the right type that the key does not accept.";
    MissingKey = "missing-key", Error, "A required key is absent.";
    DuplicateDeclaration = "duplicate-declaration", Error, "A model, scope, option or setting is declared in more than one place.";
    InvalidName = "invalid-name", Error, "A model, scope, category, sink, option or cell name (a key, or a value naming one) holds a control character, a line or paragraph separator or a bidirectional control: names are identifiers, and they reach terminals, CI logs and pull-request comments.";
    UnknownModel = "unknown-model", Error, rule unknown_model, "A relation names a model that is not declared.";
    RemoteModelChild = "remote-model-child", Error, rule remote_model_child, "A relation names a remote model as a child: its rows are in another database.";
    RemoteCategoryTwice = "remote-category-twice", Error, rule remote_category_twice, "Two remote models read the same outbox category.";
    RemoteDatabaseAction = "remote-database-action", Error, rule remote_database_action, "A remote model's relation has `on_delete = \"database\"`, but no foreign key crosses databases.";
    PeerCategoryUnsent = "peer-category-unsent", Error, "With `validate --peer`: a remote model reads a category that the peer's config never delivers: no model of it writes the category, no scope registers it, or its scope has no sink for it.";
    PeerCategoryMismatch = "peer-category-mismatch", Error, "With `validate --peer`: the peer writes a remote model's category from several models, registers it in several scopes, or keys its tombstones by another column than the remote model's `key`.";
    DuplicateRelation = "duplicate-relation", Error, rule duplicate_relation, "A model declares the same child model and column twice.";
    PlanTooDeep = "plan-too-deep", Error, rule plan_depth, "A chain of delete relations is deeper than 1,000 models, deeper than a plan may be.";
    BulkWithChildren = "bulk-with-children", Error, rule bulk_with_children, "A bulk model has children: a set-based delete loads no rows, so delete-children would be orphaned and nullify children left pointing at deleted rows.";
    BulkWithRowData = "bulk-with-row-data", Error, rule bulk_with_row_data, "A bulk model uses a status check or outbox payload, which need rows loaded (per_row).";
    InvalidChunkSize = "invalid-chunk-size", Error, rule chunk_size, "A chunk size (or `max_chunk_size`) is 0 or larger than the allowed maximum, or `target_chunk_ms` is 0.";
    UnknownRateLimit = "unknown-rate-limit", Error, rule unknown_rate_limit, "`rate_limit` names an option that is not declared in [options].";
    UnscopedCategory = "unscoped-category", Error, rule unscoped_category, "An outbox category is used by a model but registered in no scope.";
    CategoryInManyScopes = "category-in-many-scopes", Error, rule category_in_many_scopes, "An outbox category is registered in more than one scope.";
    EmptyScope = "empty-scope", Warning, rule empty_scope, "An outbox scope registers no categories.";
    PayloadWithoutOutbox = "payload-without-outbox", Warning, rule payload_without_outbox, "`outbox_payload` is set on a model that writes no outbox category.";
    UnknownSink = "unknown-sink", Error, rule unknown_sink, "A scope's `sink`, a `category_sinks` or a `cell_sinks` value names a sink that is not declared under [outbox.sinks].";
    CategorySinkOutsideScope = "category-sink-outside-scope", Error, rule category_sink_outside_scope, "A `category_sinks` entry names a category that is not one of its scope's `categories`.";
    UnusedSink = "unused-sink", Warning, rule unused_sink, "A sink is named by no scope's `sink`, `category_sinks` or `cell_sinks` entry, so it receives nothing.";
    UndeliveredCategory = "undelivered-category", Warning, rule undelivered_category, "Sinks are declared, but a scope has no `sink` and some of its categories have no `category_sinks` entry either.";
    SinkTarget = "sink-target", Error, rule sink_target, "A sink needs exactly one of `command`, `url` and `kafka`; `headers` belong to a `url` sink only, since a command or Kafka sink sends no HTTP request.";
    KafkaTopic = "kafka-topic", Error, rule kafka_topic, "A Kafka sink's `topic` uses a placeholder other than `{scope}` and `{category}`, or makes a name Kafka refuses (letters, digits, `.`, `_` and `-`, at most 249) for a scope and category it receives.";
    CellSinks = "cell-sinks", Error, rule cell_sinks, "A scope's `cells` and `cell_sinks` do not match one sink to each cell: a cell without a sink, a sink for a cell the scope does not have, a cell named twice, `cell_sinks` without `cells`, or `sink`/`category_sinks` beside `cells`.";
    KafkaProperty = "kafka-property", Error, rule kafka_property, "A Kafka sink's `properties` entry is unknown to librdkafka, has a value it refuses, or sets what the sink itself decides (`brokers`, an idempotent producer acknowledged by all replicas, `timeout`).";
    KafkaUnsupported = "kafka-unsupported", Error, rule kafka_unsupported, "A sink writes to Kafka, but this build of cascade has no Kafka support (built without the `kafka` feature), so it can neither check the sink's properties nor deliver to it. A build with the default features has it.";
    LiteralSecret = "literal-secret", Warning, rule literal_secret, "A header that looks like a credential (Authorization, Cookie, or a name with token, secret, key, password or auth) or a Kafka property that does (a name with password or secret, or `ssl.key.pem`) has a literal value instead of `env:NAME`.";
    HeaderEnvName = "header-env-name", Error, rule header_env_name, "A header or Kafka property value `env:NAME` has an empty or invalid variable name (letters, digits and `_`, not starting with a digit).";
    MissingTable = "missing-table", Error, rule missing_table, "A model's table is not in the schema.";
    IdentifierCase = "identifier-case", Warning, rule identifier_case, "A table or column name matches the database's only when case is ignored; the database's spelling is used.";
    MissingColumn = "missing-column", Error, rule missing_column, "A key, relation, status or payload column is not in its table.";
    UnregisteredReference = "unregistered-reference", Error, rule unregistered_reference, "A foreign key points at a `require_all_references` model but is neither a child relation nor ignored.";
    NullifyNotNull = "nullify-not-null", Error, rule nullify_not_null, "A nullify relation's column is NOT NULL, so it cannot be set to NULL.";
    RelationTypeMismatch = "relation-type-mismatch", Error, rule relation_type_mismatch, "A relation's column and its parent's key have types the deletion cannot match: on PostgreSQL with no `=` between them (an integer and a text, a uuid and either, unless a foreign key ties them). SQLite compares any two: a TEXT column under an INTEGER key (holding `'1'`) is matched as text.";
    UnindexedRelation = "unindexed-relation", Warning, rule unindexed_relation, "No index leads with a relation's column, so every chunk scans the child table.";
    MissingShardKey = "missing-shard-key", Error, rule missing_shard_key, "A model writes an outbox category whose scope's shard key is not a column of its table.";
    RetentionOnReferenced = "retention-on-referenced", Error, rule retention_on_referenced, "A model with `retention` has a delete relation: dropping a partition would orphan those child rows (nullify them, or give the child the same retention).";
    RetentionOnSqlite = "retention-on-sqlite", Error, rule retention_on_sqlite, "A model has `retention` on SQLite, which has no partitions: retention needs a PostgreSQL or MySQL table partitioned by range.";
    RetentionNotPartitioned = "retention-not-partitioned", Error, rule retention_not_partitioned, "A model's `retention.column` is not the range partition key of its table (checked with a schema).";
    ForeignKeyElsewhere = "foreign-key-elsewhere", Error, rule foreign_key_elsewhere, "A relation's column is a foreign key to another table than its parent's, so the relation would delete or nullify the rows whose values equal the parent's keys by chance (checked with a schema).";
    DeletesKeptRows = "deletes-kept-rows", Warning, rule deletes_kept_rows, "A delete relation runs over a foreign key whose action is ON DELETE SET NULL or SET DEFAULT: the database would keep those rows, the relation deletes them (and everything below them).";
    KeepsDeletedRows = "keeps-deleted-rows", Warning, rule keeps_deleted_rows, "A nullify relation runs over a foreign key whose action is ON DELETE CASCADE: the database deletes those rows (and everything below them), the relation keeps them with a NULL.";
    DatabaseWithoutCascade = "database-without-cascade", Error, rule database_without_cascade, "A relation with `on_delete = \"database\"` runs over a foreign key that is not ON DELETE CASCADE (or over none): the database would not delete those rows.";
    DatabaseWritesTombstones = "database-writes-tombstones", Error, rule database_writes_tombstones, "A relation with `on_delete = \"database\"` leads to a model that writes an outbox category: rows the database deletes itself get no tombstone.";
    DatabaseLeavesRows = "database-leaves-rows", Error, rule database_leaves_rows, "Below a relation with `on_delete = \"database\"`, a foreign key is not ON DELETE CASCADE: the database would refuse the delete, or keep rows no plan counts.";
    DatabaseDeletesBelow = "database-deletes-below", Note, rule database_deletes_below, "The database deletes rows below a relation with `on_delete = \"database\"` (cascading foreign keys into its table): plans count and runs report the relation's own rows only.";
    DatabaseCascade = "database-cascade", Note, rule database_cascade, "The database itself deletes (ON DELETE CASCADE) along a declared delete relation: cascade deletes those children first, the database catches rows inserted meanwhile, inside the parent's chunk.";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
