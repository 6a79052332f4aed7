//! The database schema as the planner needs it: tables, columns, primary keys, foreign keys with
//! their ON DELETE action, and indexes. Read from a live SQLite or PostgreSQL database, or parsed
//! from SQL DDL files without any database.

pub mod ddl;
mod mysql;
mod postgres;
mod predicate;
mod sqlite;

use serde::Serialize;

use crate::db::partitions::ORDERED_PARTITION_FUNCTIONS;
use crate::db::sql::{KeyType, quote_identifier, quote_qualified};
use crate::db::{Access, Database, DbError, Kind, Pool};

pub use crate::db::partitions::Partition;
pub use ddl::parse_ddl;

/// Tables of the tool itself, never part of a user's schema.
pub(crate) const OWN_TABLE_PREFIX: &str = "cascade_";

/// A database schema: its tables.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Schema {
    /// In a stable order: as declared (DDL) or by name (introspection). Tables are not added,
    /// removed or renamed after the first [`Schema::table`] lookup, which indexes their names.
    pub tables: Vec<Table>,
    /// The database the schema is of (the dialect a DDL script was read in), when known.
    #[serde(skip)]
    pub kind: Option<Kind>,
    #[serde(skip)]
    names: NameIndex,
}

/// The positions of the tables by name in ASCII lower case (the case rule of [`Schema::table`]),
/// built at the first lookup: a plan of hundreds of tables looks names up hundreds of thousands
/// of times, and a search through every table each time was most of a small deletion's work.
#[derive(Debug, Clone, Default)]
struct NameIndex(std::sync::OnceLock<std::collections::HashMap<String, Vec<usize>>>);

impl Schema {
    /// The schema of `tables`, of a `kind` of database when known.
    pub fn new(tables: Vec<Table>, kind: Option<Kind>) -> Self {
        Self { tables, kind, names: NameIndex::default() }
    }
}

impl NameIndex {
    /// The tables of `tables` named `name` in any case, in their order.
    fn named<'t>(&self, tables: &'t [Table], name: &str) -> impl Iterator<Item = &'t Table> {
        let positions = self.0.get_or_init(|| {
            let mut positions: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
            for (position, table) in tables.iter().enumerate() {
                positions.entry(table.name.to_ascii_lowercase()).or_default().push(position);
            }
            positions
        });
        let found = positions.get(&name.to_ascii_lowercase()).map_or(&[][..], Vec::as_slice);
        found.iter().map(move |position| &tables[*position])
    }
}

impl PartialEq for NameIndex {
    /// An index says nothing the tables do not.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One table with its columns, keys and indexes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Table {
    /// PostgreSQL schema (`public`, ...); `None` for SQLite and unqualified DDL.
    pub schema: Option<String>,
    /// The table's name, without its schema.
    pub name: String,
    /// The columns, in declared order.
    pub columns: Vec<Column>,
    /// Primary-key columns in key order; empty when the table has none.
    pub primary_key: Vec<String>,
    /// Foreign keys declared on this table (for a partitioned table, also those declared on its
    /// partitions), each once.
    pub foreign_keys: Vec<ForeignKey>,
    /// Indexes, including those behind primary-key and unique constraints.
    pub indexes: Vec<Index>,
    /// A PostgreSQL partitioned table: a row's `ctid` is unique only within its partition.
    pub partitioned: bool,
    /// How a partitioned table is partitioned, when that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition_key: Option<PartitionKey>,
    /// A PostgreSQL table in a schema that is not on the search_path: only `schema.table`
    /// names it.
    #[serde(skip)]
    pub off_search_path: bool,
    /// The names of the table's own `BEFORE DELETE` triggers (not the database's internal ones),
    /// read from a live database: such a trigger often lets only the database's own cascade
    /// delete the table's rows (`on_delete = "database"`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delete_triggers: Vec<String>,
}

/// How a table is partitioned: `PARTITION BY RANGE (entered_at)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionKey {
    /// `range`, `list` or `hash`, as PostgreSQL calls them (lowercase; MySQL's `RANGE COLUMNS`
    /// is `range` too).
    pub strategy: String,
    /// The key's parts in order; `None` for an expression.
    pub columns: Vec<Option<String>>,
    /// MySQL: the function of the one column the table is partitioned by (`to_days` in
    /// `RANGE (TO_DAYS(entered_at))`), lowercase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

impl PartitionKey {
    /// Whether the table is partitioned by range on `column` alone, or on a function of it
    /// that keeps the order of times ([`ORDERED_PARTITION_FUNCTIONS`]).
    pub fn is_range_on(&self, column: &str) -> bool {
        let ordered = self.function.as_deref().is_none_or(|function| ORDERED_PARTITION_FUNCTIONS.contains(&function));
        self.strategy == "range"
            && ordered
            && matches!(&self.columns[..], [Some(only)] if only.eq_ignore_ascii_case(column))
    }

    /// `RANGE (entered_at)`, as in `PARTITION BY ...`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .columns
            .iter()
            .map(|column| match (column, &self.function) {
                (Some(column), Some(function)) => format!("{function}({column})"),
                (Some(column), None) => column.clone(),
                (None, _) => "an expression".to_owned(),
            })
            .collect();
        format!("{} ({})", self.strategy.to_uppercase(), parts.join(", "))
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// The declared type as written or reported by the database (`integer`, `text`, ...).
    pub data_type: String,
    /// Whether the column accepts NULL.
    pub nullable: bool,
    /// How values of the column are bound as keys: from the catalog on PostgreSQL (domains
    /// resolved), by SQLite's type-affinity rule otherwise.
    #[serde(skip)]
    pub key_type: KeyType,
}

/// A foreign key declared on a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForeignKey {
    /// The constraint's name, where the database or the script gives one (SQLite's catalog
    /// does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Referencing columns of this table.
    pub columns: Vec<String>,
    /// PostgreSQL schema of the referenced table; `None` for SQLite and unqualified DDL.
    pub referenced_schema: Option<String>,
    /// The referenced table's name, without its schema.
    pub referenced_table: String,
    /// Referenced columns; empty when the DDL left them implicit (the referenced primary key).
    pub referenced_columns: Vec<String>,
    /// What the database does to the referencing rows when a referenced row is deleted.
    pub on_delete: ReferentialAction,
}

/// A foreign key's ON DELETE action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferentialAction {
    /// Deleting a still-referenced row fails (the default; the check may be deferred).
    NoAction,
    /// Deleting a still-referenced row fails, checked at once.
    Restrict,
    /// The referencing rows are deleted too.
    Cascade,
    /// The referencing columns are set to NULL.
    SetNull,
    /// The referencing columns are set to their default values.
    SetDefault,
}

impl ReferentialAction {
    /// The action as written in SQL, such as `SET NULL`.
    pub fn as_sql(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// An index on a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Index {
    /// The index's name, when it has one (an unnamed constraint's may not be known).
    pub name: Option<String>,
    /// Indexed columns in order; expressions are left out, so an index on an expression has
    /// none and leads no column.
    pub columns: Vec<String>,
    /// Whether the index enforces uniqueness.
    pub unique: bool,
    /// Whether the index covers only the rows of a `WHERE` predicate (a partial index), so its
    /// uniqueness holds only among them.
    #[serde(skip_serializing_if = "is_false")]
    pub partial: bool,
    /// For a partial index whose predicate asks only that columns are not NULL
    /// (`WHERE a IS NOT NULL [AND ...]`): those columns. A lookup by them implies the predicate,
    /// so the index serves it; empty for a whole-table index and any other predicate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_null_predicate: Vec<String>,
    /// Whether some key part is an expression (`columns` then ends before the first one).
    #[serde(skip_serializing_if = "is_false")]
    pub expression: bool,
    /// A PostgreSQL index left INVALID by a `CREATE INDEX CONCURRENTLY` that failed: queries do
    /// not use it and it must be dropped before it can be built again.
    #[serde(skip_serializing_if = "is_false")]
    pub invalid: bool,
}

impl Index {
    /// A plain index on `columns`: whole-table, no expressions, valid.
    pub fn new(name: Option<String>, columns: Vec<String>, unique: bool) -> Self {
        Index {
            name,
            columns,
            unique,
            partial: false,
            not_null_predicate: Vec::new(),
            expression: false,
            invalid: false,
        }
    }

    /// Whether the index makes every combination of its columns unique in the whole table
    /// (unique, not partial, no expression, valid).
    pub fn enforces_uniqueness(&self) -> bool {
        self.unique && !self.partial && !self.expression && !self.invalid
    }

    /// Whether a lookup by `columns` (`column = ANY($1)`) may use the index as far as its rows
    /// go: it covers the whole table, or only rows where columns of the lookup are not NULL
    /// (which the lookup implies). An index `WHERE deleted_at IS NULL` lacks the other rows.
    pub fn covers_lookup_by(&self, columns: &[String]) -> bool {
        !self.partial
            || (!self.not_null_predicate.is_empty()
                && self
                    .not_null_predicate
                    .iter()
                    .all(|column| columns.iter().any(|looked_up| looked_up.eq_ignore_ascii_case(column))))
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ForeignKey {
    /// Each referencing column with the column of `parent` (the table it points at) it
    /// references: the referenced columns, or the parent's primary key where they are implicit.
    pub fn pairs<'a>(&'a self, parent: &'a Table) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let referenced =
            if self.referenced_columns.is_empty() { &parent.primary_key } else { &self.referenced_columns };
        self.columns.iter().map(String::as_str).zip(referenced.iter().map(String::as_str))
    }

    /// Whether `other` is the same reference (columns, table and referenced columns), whatever
    /// its name and action.
    pub fn same_reference(&self, other: &ForeignKey) -> bool {
        self.columns == other.columns
            && self.referenced_schema == other.referenced_schema
            && self.referenced_table == other.referenced_table
            && self.referenced_columns == other.referenced_columns
    }

    /// The key as people read it: its name, or `table(columns) -> parent(columns)`.
    pub fn describe(&self, table: &str) -> String {
        match &self.name {
            Some(name) => format!("`{name}`"),
            None => format!(
                "`{table}({}) -> {}({})`",
                self.columns.join(", "),
                self.referenced_table,
                self.referenced_columns.join(", ")
            ),
        }
    }
}

/// Whether the names `a` and `b` are the same set of column names (ignoring ASCII case).
fn same_columns(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().all(|column| b.iter().any(|other| other.eq_ignore_ascii_case(column)))
}

impl Table {
    /// Whether `column` alone is unique: the primary key, or a unique index that enforces it on
    /// the whole table.
    pub fn column_is_unique(&self, column: &str) -> bool {
        self.columns_are_unique(&[column.to_owned()])
    }

    /// Whether the combination of `columns` is unique: the primary key or a unique index that
    /// enforces uniqueness on the whole table covers some of them and no other column.
    pub fn columns_are_unique(&self, columns: &[String]) -> bool {
        let within = |key: &[String]| {
            !key.is_empty() && key.iter().all(|part| columns.iter().any(|column| column.eq_ignore_ascii_case(part)))
        };
        within(&self.primary_key)
            || self.indexes.iter().any(|index| index.enforces_uniqueness() && within(&index.columns))
    }

    /// The column named `name`, compared case-insensitively when there is no exact match.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name).or_else(|| {
            // SQLite and unquoted PostgreSQL names are case-insensitive.
            self.columns.iter().find(|c| c.name.eq_ignore_ascii_case(name))
        })
    }

    /// Whether some index (or the primary key) starts with `columns` (in any order) and holds
    /// every row a lookup by them may find ([`Index::covers_lookup_by`]), so finding a parent's
    /// children by them does not scan the whole table.
    pub fn has_index_leading_with(&self, columns: &[String]) -> bool {
        let leads = |key: &[String]| key.len() >= columns.len() && same_columns(&key[..columns.len()], columns);
        leads(&self.primary_key)
            || self.indexes.iter().any(|index| index.covers_lookup_by(columns) && leads(&index.columns))
    }

    /// The statement that creates an index leading with `columns` (as a config spells them), or
    /// `None` when the table already has one. `table` is the table as the statement should name
    /// it (as a config does), quoted the way the `kind` of database's own client reads it; the
    /// index is called `TABLE_COLUMNS_idx`. `validate` (the `unindexed-relation` warning) and
    /// `cascade orphans` give the same advice.
    pub fn index_advice(&self, columns: &[String], table: &str, kind: Option<Kind>) -> Option<String> {
        (!self.has_index_leading_with(columns)).then(|| {
            let index = format!("{}_{}_idx", self.name, columns.join("_"));
            let quote =
                |name: &str| kind.map_or_else(|| quote_identifier(name), |kind| kind.quote_part_for_clients(name));
            let table = kind.map_or_else(|| quote_qualified(table), |kind| kind.quote_for_clients(table));
            let quoted: Vec<String> = columns.iter().map(|column| quote(column)).collect();
            format!("CREATE INDEX {} ON {table} ({});", quote(&index), quoted.join(", "))
        })
    }

    /// Whether the table is partitioned by range on `column` alone (or on an ordered function of
    /// it, MySQL), the partitions a retention policy can drop; on MySQL (`kind`) also a column
    /// that holds times (`date`, `datetime`, `timestamp`), where a range on numbers or text would
    /// have bounds that read as no time (PostgreSQL casts the cut-off to the column's type, and
    /// refuses one that is no time with its own error).
    pub fn is_range_partitioned_by_time(&self, column: &str, kind: Option<Kind>) -> bool {
        let Some(key) = self.partition_key.as_ref().filter(|key| key.is_range_on(column)) else { return false };
        let holds_time = |data_type: &str| {
            let data_type = data_type.to_ascii_lowercase();
            data_type.starts_with("date") || data_type.starts_with("timestamp")
        };
        kind != Some(Kind::Mysql)
            || key.function.is_some()
            || self.column(column).is_none_or(|found| holds_time(&found.data_type))
    }

    /// The name as a statement writes it, quoted: `"schema"."name"`, or `"name"` without a schema.
    pub(crate) fn quoted(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote_identifier(schema), quote_identifier(&self.name)),
            None => quote_identifier(&self.name),
        }
    }

    /// `schema.name`, or `name` without a schema.
    pub fn qualified_name(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What a config names (a table, its columns), spelled as the catalog spells it when the schema
/// knows the table, as written otherwise: validation and the executor resolve names the same way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CatalogNames<'a> {
    config_table: &'a str,
    table: Option<&'a Table>,
}

impl<'a> CatalogNames<'a> {
    /// The names of the table a config calls `config_table`, looked up in `schema`.
    pub(crate) fn of(schema: Option<&'a Schema>, config_table: &'a str) -> Self {
        Self { config_table, table: schema.and_then(|schema| schema.table(config_table)) }
    }

    /// The table itself, when the schema has it.
    pub(crate) fn table(&self) -> Option<&'a Table> {
        self.table
    }

    /// The table's name, quoted: `"schema"."name"` as the catalog has it, or the config's name.
    pub(crate) fn quoted_table(&self) -> String {
        self.table.map_or_else(|| quote_qualified(self.config_table), Table::quoted)
    }

    /// A column's name as the catalog spells it (or as written).
    pub(crate) fn column(&self, name: &str) -> String {
        self.table.and_then(|table| table.column(name)).map_or_else(|| name.to_owned(), |column| column.name.clone())
    }
}

impl Schema {
    /// The table a config's `table = "..."` means: `schema.name` or `name`, exactly, else
    /// ignoring ASCII case when that is unambiguous.
    pub fn table(&self, config_name: &str) -> Option<&Table> {
        let (schema, name) = match config_name.split_once('.') {
            Some((schema, name)) => (Some(schema), name),
            None => (None, config_name),
        };
        let matches = |table: &&Table, exact: bool| {
            let same = |a: &str, b: &str| {
                if exact { a == b } else { a.eq_ignore_ascii_case(b) }
            };
            let schema_matches = match schema {
                Some(schema) => table.schema.as_deref().is_some_and(|s| same(s, schema)),
                None => !table.off_search_path,
            };
            same(&table.name, name) && schema_matches
        };
        let named = || self.names.named(&self.tables, name);
        if let Some(table) = named().find(|t| matches(t, true)) {
            return Some(table);
        }
        let mut folded = named().filter(|t| matches(t, false));
        match (folded.next(), folded.next()) {
            (Some(table), None) => Some(table),
            _ => None,
        }
    }

    /// The first foreign key (with its table) into `table`, or into a table the database's
    /// cascades reach from it, that is not `ON DELETE CASCADE`: what keeps the database from
    /// deleting everything below a row of `table` when its own cascade deletes that row.
    pub fn first_not_cascading<'a>(&'a self, table: &'a Table) -> Option<(&'a Table, &'a ForeignKey)> {
        let mut seen: Vec<*const Table> = vec![table];
        let mut queue = vec![table];
        while let Some(referenced) = queue.pop() {
            for (child, key) in self.references_to(referenced) {
                if key.on_delete != ReferentialAction::Cascade {
                    return Some((child, key));
                }
                if !seen.contains(&(child as *const Table)) {
                    seen.push(child);
                    queue.push(child);
                }
            }
        }
        None
    }

    /// Every foreign key that points at `table`, with the table it is declared on.
    pub fn references_to<'a>(&'a self, table: &'a Table) -> impl Iterator<Item = (&'a Table, &'a ForeignKey)> + 'a {
        self.tables.iter().flat_map(move |child| {
            child
                .foreign_keys
                .iter()
                .filter(move |fk| {
                    names(fk, table) && self.resolve(fk).is_some_and(|target| std::ptr::eq(target, table))
                })
                .map(move |fk| (child, fk))
        })
    }

    /// The foreign keys of `child` on exactly `columns` that reference `parent`'s `referenced`
    /// columns, each column of `columns` the one of `referenced` at the same place (in the
    /// foreign key's own order, whatever it is).
    pub fn foreign_keys_on(
        &self,
        child: &str,
        columns: &[String],
        parent: &str,
        referenced: &[String],
    ) -> Vec<&ForeignKey> {
        let Some((child, parent)) = self.table(child).zip(self.table(parent)) else { return Vec::new() };
        child
            .foreign_keys
            .iter()
            .filter(|fk| {
                fk.columns.len() == columns.len()
                    && names(fk, parent)
                    && self.resolve(fk).is_some_and(|target| std::ptr::eq(target, parent))
                    && fk.pairs(parent).all(|(column, target)| {
                        let at = columns.iter().position(|c| c.eq_ignore_ascii_case(column));
                        at.is_some_and(|at| referenced.get(at).is_some_and(|r| r.eq_ignore_ascii_case(target)))
                    })
            })
            .collect()
    }

    /// Whether the schema's database (PostgreSQL) has no `=` between `child`'s `column` and the
    /// `referenced` column of `parent` it references, as far as the tool knows the types
    /// (`crate::db::Backend::can_compare`). Never where a foreign key ties the two: PostgreSQL
    /// accepts one only between comparable types (a DDL script's types are guessed from their
    /// names, and a SQLite script can read as PostgreSQL).
    pub fn cannot_compare(&self, child: &Table, column: &Column, parent: &Table, referenced: &Column) -> bool {
        self.kind.is_some_and(|kind| !kind.backend().can_compare(&referenced.key_type, &column.key_type))
            && !child.foreign_keys.iter().any(|fk| {
                self.resolve(fk).is_some_and(|target| std::ptr::eq(target, parent))
                    && fk.pairs(parent).any(|(from, to)| {
                        from.eq_ignore_ascii_case(&column.name) && to.eq_ignore_ascii_case(&referenced.name)
                    })
            })
    }

    /// Whether the database itself refuses to delete a `parent` row that a `child` row still
    /// references through `columns` (pointing at the parent's `referenced` columns): a foreign
    /// key on exactly those columns with `NO ACTION` or `RESTRICT`, declared on the table itself
    /// (not only on some partitions of it).
    pub fn refuses_orphans(&self, child: &str, columns: &[String], parent: &str, referenced: &[String]) -> bool {
        !self.table(child).is_some_and(|table| table.partitioned)
            && self
                .foreign_keys_on(child, columns, parent, referenced)
                .iter()
                .any(|fk| matches!(fk.on_delete, ReferentialAction::NoAction | ReferentialAction::Restrict))
    }

    /// Whether no foreign key of `child` references `parent`: deleting rows of `parent` neither
    /// waits on nor changes rows of `child`.
    pub fn unreferenced_by(&self, child: &str, parent: &str) -> bool {
        let (Some(child), Some(parent)) = (self.table(child), self.table(parent)) else { return false };
        !child.foreign_keys.iter().any(|fk| self.resolve(fk).is_some_and(|target| std::ptr::eq(target, parent)))
    }

    /// Whether the combination of `columns` is unique in `table` (see
    /// [`Table::columns_are_unique`]).
    pub fn unique_columns(&self, table: &str, columns: &[String]) -> bool {
        self.table(table).is_some_and(|table| table.columns_are_unique(columns))
    }

    /// The table a foreign key points at.
    pub fn resolve(&self, fk: &ForeignKey) -> Option<&Table> {
        match &fk.referenced_schema {
            Some(schema) => self.table(&format!("{schema}.{}", fk.referenced_table)),
            None => self.table(&fk.referenced_table),
        }
    }
}

/// Whether `fk` names `table` (in any case): the cheap test before resolving it, which looks the
/// name up among all tables (a large schema has hundreds of foreign keys to check each time).
fn names(fk: &ForeignKey, table: &Table) -> bool {
    fk.referenced_table.eq_ignore_ascii_case(&table.name)
}

/// Reads the schema of a live database.
pub async fn introspect(database: &Database) -> Result<Schema, DbError> {
    match database.pool() {
        Pool::Sqlite(pool) => sqlite::introspect(pool).await,
        Pool::Postgres(pool) => postgres::introspect(pool).await,
        Pool::Mysql(pool) => mysql::introspect(pool).await,
    }
}

/// The live schema's version: a text that every change of a table, column, key, index or
/// trigger changes (SQLite's `schema_version`; on PostgreSQL, the number and the transaction ids
/// of the user tables' catalog rows). Equal versions mean a schema read again would be the same,
/// so a long-running process asks for this before each piece of work instead of reading the
/// schema again.
pub async fn version(database: &Database) -> Result<String, DbError> {
    match database.pool() {
        Pool::Sqlite(pool) => sqlite::version(pool).await,
        Pool::Postgres(pool) => postgres::version(pool).await,
        Pool::Mysql(pool) => mysql::version(pool).await,
    }
}

/// Connects read-only to `url` and reads its schema.
pub async fn introspect_url(url: &str) -> Result<Schema, DbError> {
    let database = Database::connect(url, Access::ReadOnly).await?;
    let schema = introspect(&database).await;
    database.close().await;
    schema
}

#[cfg(test)]
mod tests {
    const DDL: &str = "CREATE TABLE grp (id bigint PRIMARY KEY);
        CREATE TABLE event (id bigint PRIMARY KEY, grp_id bigint NOT NULL REFERENCES grp (id));
        CREATE TABLE hash (id bigint PRIMARY KEY, grp_id bigint REFERENCES grp ON DELETE RESTRICT);
        CREATE TABLE note (id bigint PRIMARY KEY, grp_id bigint REFERENCES grp (id) ON DELETE CASCADE);
        CREATE TABLE tag (id bigint PRIMARY KEY, grp_id bigint REFERENCES grp (id) ON DELETE SET NULL);
        CREATE TABLE loose (id bigint PRIMARY KEY, grp_id bigint);";

    #[test]
    fn only_no_action_and_restrict_keys_refuse_orphans() {
        let schema = crate::schema::parse_ddl(DDL).schema;
        let refuses = |child: &str, column: &str, key: &str| {
            schema.refuses_orphans(child, &[column.to_owned()], "grp", &[key.to_owned()])
        };
        assert!(refuses("event", "grp_id", "id"));
        assert!(refuses("hash", "GRP_ID", "id"), "an implicit key, names in any case");
        assert!(!refuses("note", "grp_id", "id"), "the database would delete new rows");
        assert!(!refuses("tag", "grp_id", "id"), "the database would keep new rows");
        assert!(!refuses("loose", "grp_id", "id"), "no foreign key");
        assert!(!refuses("event", "grp_id", "uuid"), "another parent column");
        assert!(!refuses("event", "id", "id"), "another child column");
    }
}
