//! The tables a script declares, and what each statement adds to them: columns, keys, indexes,
//! foreign keys, and the partitions folded into their partitioned table.

use std::collections::HashMap;

use sqlparser::ast::{ColumnDef, ColumnOption, Expr, Ident, IndexColumn, TableConstraint};

use crate::db::Kind;
use crate::db::sql::KeyType;
use crate::schema::{Column, ForeignKey, Index, OWN_TABLE_PREFIX, PartitionKey, Table};

use super::flavor::{Flavor, TableRef};

/// A partition and the table it belongs to, as declared.
#[derive(Debug, Clone)]
pub(super) struct Partition {
    pub(super) child: TableRef,
    pub(super) parent: TableRef,
}

/// The tables read so far, in declared order, with their positions by name: a script declares
/// thousands of tables and each statement looks its table up, so a scan per lookup made reading
/// a script quadratic.
pub(super) struct DeclaredTables {
    kind: Kind,
    tables: Vec<Table>,
    /// The position of each table by its schema and name as declared (unique: a table declared
    /// again replaces the one it names).
    by_qualified_name: HashMap<(Option<String>, String), usize>,
    /// The positions of the tables with a name, in declared order, by the name's
    /// [`Kind::identifier_key`] (SQLite's folded to ASCII lower case).
    by_name: HashMap<String, Vec<usize>>,
}

impl DeclaredTables {
    pub(super) fn new(kind: Kind) -> Self {
        Self { kind, tables: Vec::new(), by_qualified_name: HashMap::new(), by_name: HashMap::new() }
    }

    /// The position of the table a statement names: the exact name, else the first table of the
    /// same name where one side leaves the schema out (`ALTER TABLE x` after `CREATE TABLE
    /// public.x`).
    pub(super) fn find(&self, target: &TableRef) -> Option<usize> {
        if let Some(&position) = self.by_qualified_name.get(&(target.schema.clone(), target.name.clone())) {
            return Some(position);
        }
        self.by_name.get(&self.kind.identifier_key(&target.name))?.iter().copied().find(|&position| {
            let schema = &self.tables[position].schema;
            schema.is_none() || target.schema.is_none() || *schema == target.schema
        })
    }

    /// Adds `table` at the end, or in place of the table at `existing`, which [`Self::find`]
    /// found by this table's name: the name keeps its key, only the exact entry changes.
    pub(super) fn put(&mut self, existing: Option<usize>, table: Table) {
        let qualified_name = (table.schema.clone(), table.name.clone());
        match existing {
            Some(position) => {
                let replaced = std::mem::replace(&mut self.tables[position], table);
                self.by_qualified_name.remove(&(replaced.schema, replaced.name));
                self.by_qualified_name.insert(qualified_name, position);
            }
            None => {
                let position = self.tables.len();
                self.by_name.entry(self.kind.identifier_key(&table.name)).or_default().push(position);
                self.by_qualified_name.insert(qualified_name, position);
                self.tables.push(table);
            }
        }
    }

    /// The tables, with each of the `partitions` folded into the table it belongs to.
    pub(super) fn fold_partitions(mut self, partitions: &[Partition]) -> Vec<Table> {
        let roots = self.partition_roots(partitions);
        // Before merging, so that references to two partitions of one table merge as well.
        self.point_references_at_roots(&roots);
        for (child, root) in roots.iter().enumerate() {
            let Some(root) = *root else { continue };
            let foreign_keys = std::mem::take(&mut self.tables[child].foreign_keys);
            let indexes = std::mem::take(&mut self.tables[child].indexes);
            let parent = &mut self.tables[root];
            parent.partitioned = true;
            for fk in foreign_keys {
                add_foreign_key(parent, fk);
            }
            for index in indexes {
                // Every partition carries its own copy of an index under its own name.
                if !parent.indexes.iter().any(|known| known.columns == index.columns && known.unique == index.unique) {
                    parent.indexes.push(index);
                }
            }
        }
        self.tables.into_iter().zip(&roots).filter(|(_, root)| root.is_none()).map(|(table, _)| table).collect()
    }

    /// For each table, the partitioned table at the top of its partition chain (a partition may
    /// be partitioned further); `None` for a table that is not a known partition, or is caught in
    /// a cycle.
    fn partition_roots(&self, partitions: &[Partition]) -> Vec<Option<usize>> {
        let mut parent_of = vec![None; self.tables.len()];
        for partition in partitions {
            let child = self.find(&partition.child);
            let parent = self.find(&partition.parent);
            if let (Some(child), Some(parent)) = (child, parent)
                && child != parent
            {
                parent_of[child] = Some(parent);
            }
        }
        (0..self.tables.len())
            .map(|table| {
                let mut current = parent_of[table]?;
                for _ in 0..self.tables.len() {
                    match parent_of[current] {
                        Some(parent) => current = parent,
                        None => return Some(current),
                    }
                }
                None
            })
            .collect()
    }

    /// A foreign key that references a partition directly references its partitioned table once
    /// the partitions are gone.
    fn point_references_at_roots(&mut self, roots: &[Option<usize>]) {
        let mut retargets = Vec::new();
        for (table, fks) in self.tables.iter().map(|table| &table.foreign_keys).enumerate() {
            for (position, fk) in fks.iter().enumerate() {
                let target = TableRef { schema: fk.referenced_schema.clone(), name: fk.referenced_table.clone() };
                if let Some(root) = self.find(&target).and_then(|found| roots[found]) {
                    let root = &self.tables[root];
                    retargets.push((table, position, root.schema.clone(), root.name.clone()));
                }
            }
        }
        for (table, position, schema, name) in retargets {
            let fk = &mut self.tables[table].foreign_keys[position];
            fk.referenced_schema = schema;
            fk.referenced_table = name;
        }
    }
}

/// The tables are read and changed in place as a slice: only [`DeclaredTables::put`] adds one,
/// and nothing renames one, so the positions by name stay true.
impl std::ops::Deref for DeclaredTables {
    type Target = [Table];

    fn deref(&self) -> &[Table] {
        &self.tables
    }
}

impl std::ops::DerefMut for DeclaredTables {
    fn deref_mut(&mut self) -> &mut [Table] {
        &mut self.tables
    }
}

/// The key of `PARTITION BY RANGE (entered_at)` from the clause as the parser prints it
/// (`RANGE(entered_at)`): a quoted name as written, an unquoted one folded to lowercase (as
/// PostgreSQL does), anything else an expression.
pub(super) fn partition_key(clause: &str) -> Option<PartitionKey> {
    let (strategy, rest) = clause.split_once('(')?;
    let inner = rest.strip_suffix(')')?;
    let column = |part: &str| {
        let part = part.trim();
        if let Some(quoted) = part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            return Some(quoted.replace("\"\"", "\""));
        }
        let simple = part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        simple.then(|| part.to_ascii_lowercase())
    };
    Some(PartitionKey {
        strategy: strategy.trim().to_ascii_lowercase(),
        columns: inner.split(',').map(column).collect(),
        function: None,
    })
}

pub(super) fn is_own_table(name: &str) -> bool {
    name.get(..OWN_TABLE_PREFIX.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(OWN_TABLE_PREFIX))
}

/// Whether some key part of an index is an expression rather than a column.
pub(super) fn has_expression(columns: &[IndexColumn]) -> bool {
    columns.iter().any(|column| !matches!(column.column.expr, Expr::Identifier(_)))
}

/// Adds an index unless the very same one is already there (`CREATE INDEX IF NOT EXISTS`, a
/// constraint repeated by hand).
pub(super) fn add_index(table: &mut Table, index: Index) {
    if !table.indexes.contains(&index) {
        table.indexes.push(index);
    }
}

/// Whether two foreign keys are the same reference, whatever their actions or names.
fn add_foreign_key(table: &mut Table, fk: ForeignKey) {
    if !table.foreign_keys.iter().any(|existing| existing.same_reference(&fk)) {
        table.foreign_keys.push(fk);
    }
}

fn set_primary_key(table: &mut Table, columns: Vec<String>) {
    for column in &mut table.columns {
        if columns.iter().any(|key| key == &column.name) {
            column.nullable = false;
        }
    }
    table.primary_key = columns;
}

/// The first name among those a constraint may carry (`CONSTRAINT name`, MySQL's index name).
fn constraint_name(flavor: Flavor, names: &[Option<&Ident>]) -> Option<String> {
    names.iter().flatten().next().map(|ident| flavor.ident(ident))
}

/// Applies a table-level constraint (from `CREATE TABLE` or `ALTER TABLE ... ADD`); `false` when
/// it is of a kind the schema does not record (CHECK, EXCLUDE, ...).
pub(super) fn add_constraint(flavor: Flavor, table: &mut Table, constraint: &TableConstraint) -> bool {
    match constraint {
        TableConstraint::PrimaryKey(pk) => {
            let columns = flavor.index_columns(&pk.columns);
            let name = constraint_name(flavor, &[pk.name.as_ref(), pk.index_name.as_ref()]);
            add_index(table, Index::new(name, columns.clone(), true));
            set_primary_key(table, columns);
        }
        TableConstraint::Unique(unique) => {
            let name = constraint_name(flavor, &[unique.name.as_ref(), unique.index_name.as_ref()]);
            add_index(
                table,
                Index {
                    expression: has_expression(&unique.columns),
                    ..Index::new(name, flavor.index_columns(&unique.columns), true)
                },
            );
        }
        TableConstraint::ForeignKey(fk) => {
            let Some(fk) = flavor.foreign_key(None, flavor.idents(&fk.columns), fk) else {
                return false;
            };
            add_foreign_key(table, fk);
        }
        TableConstraint::Index(index) => {
            let name = constraint_name(flavor, &[index.name.as_ref()]);
            add_index(
                table,
                Index {
                    expression: has_expression(&index.columns),
                    ..Index::new(name, flavor.index_columns(&index.columns), false)
                },
            );
        }
        TableConstraint::PrimaryKeyUsingIndex(using) | TableConstraint::UniqueUsingIndex(using) => {
            // `ADD CONSTRAINT c PRIMARY KEY USING INDEX i` promotes an index declared earlier:
            // its columns are only known from that index.
            let index_name = flavor.ident(&using.index_name);
            let Some(index) = table.indexes.iter_mut().find(|index| index.name.as_deref() == Some(index_name.as_str()))
            else {
                return false;
            };
            index.unique = true;
            let columns = index.columns.clone();
            if matches!(constraint, TableConstraint::PrimaryKeyUsingIndex(_)) {
                set_primary_key(table, columns);
            }
        }
        _ => return false,
    }
    true
}

/// One column, and what its inline constraints add to the table.
pub(super) fn add_column(flavor: Flavor, table: &mut Table, column: &ColumnDef) {
    let name = flavor.ident(&column.name);
    let mut nullable = true;
    for option in &column.options {
        let option_name = option.name.as_ref();
        match &option.option {
            ColumnOption::NotNull => nullable = false,
            ColumnOption::PrimaryKey(pk) => {
                nullable = false;
                let index_name = constraint_name(flavor, &[option_name, pk.name.as_ref()]);
                add_index(table, Index::new(index_name, vec![name.clone()], true));
                table.primary_key = vec![name.clone()];
            }
            ColumnOption::Unique(unique) => {
                let index_name = constraint_name(flavor, &[option_name, unique.name.as_ref()]);
                add_index(table, Index::new(index_name, vec![name.clone()], true));
            }
            ColumnOption::ForeignKey(fk) => {
                let constraint = option_name.map(|name| flavor.ident(name));
                if let Some(fk) = flavor.foreign_key(constraint, vec![name.clone()], fk) {
                    add_foreign_key(table, fk);
                }
            }
            _ => {}
        }
    }
    let data_type = lowercase_outside_quotes(&column.data_type.to_string());
    table.columns.push(Column { name, key_type: KeyType::of_declared(&data_type), data_type, nullable });
}

/// A declared type in lower case (`VARCHAR(20)` → `varchar(20)`), except quoted type names,
/// which are case-sensitive.
fn lowercase_outside_quotes(text: &str) -> String {
    let mut quoted = false;
    text.chars()
        .map(|ch| {
            if ch == '"' {
                quoted = !quoted;
            }
            if quoted { ch } else { ch.to_ascii_lowercase() }
        })
        .collect()
}
