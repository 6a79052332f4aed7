//! Why a deletion stopped or was refused.

use crate::db::DbError;

/// ` (trigger `a`, function `f()`)`, as far as they are known.
fn named_triggers(triggers: &[String], function: Option<&str>) -> String {
    let mut named: Vec<String> = Vec::new();
    match triggers {
        [] => {}
        [one] => named.push(format!("trigger `{one}`")),
        several => named.push(format!("triggers `{}`", several.join("`, `"))),
    }
    if let Some(function) = function {
        named.push(format!("function `{function}`"));
    }
    if named.is_empty() { String::new() } else { format!(" ({})", named.join(", ")) }
}

/// Why a deletion stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// A statement failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// The archive could not be written.
    #[error(transparent)]
    Archive(#[from] crate::engine::ArchiveError),
    /// The database refused to delete a chunk, probably for an undeclared foreign key.
    #[error(
        "the database refused to delete a chunk of `{model}`: {reason}. A table that references it is probably not \
         declared as its child: `cascade validate --database-url ...` with `require_all_references = true` finds it"
    )]
    Refused {
        /// The model whose rows were refused.
        model: String,
        /// The database's words.
        reason: String,
    },
    /// A trigger on the table refused to let cascade delete its rows: often one that lets only
    /// the database's own `ON DELETE CASCADE` delete them.
    #[error(
        "a trigger refused to delete rows of `{model}` from the table `{table}`{}: {reason}. If the table's rows may \
         go only by the database's own cascade, set `on_delete = \"database\"` on the relation that reaches \
         `{model}` (its foreign key must be ON DELETE CASCADE): cascade then leaves them to the database and counts \
         them",
        named_triggers(.triggers, .function.as_deref())
    )]
    RefusedByTrigger {
        /// The model whose rows were refused.
        model: String,
        /// Its table.
        table: String,
        /// The table's `BEFORE DELETE` triggers, as the schema read them.
        triggers: Vec<String>,
        /// The trigger function that raised the error, where the database says it.
        function: Option<String>,
        /// The database's words.
        reason: String,
    },
    /// Rows deleted with the database's checks off are still referenced by another row (one
    /// inserted meanwhile): the chunk rolls back and is taken again, as after a foreign key's
    /// refusal.
    #[error("the `{model}` rows of a chunk are still referenced: {reason}")]
    StillReferenced {
        /// The model whose rows were deleted.
        model: String,
        /// Which rows reference them.
        reason: String,
    },
    /// The database cut the archive lines of a chunk short (fewer lines than rows, or a last
    /// line that is not whole JSON): nothing of the chunk is deleted.
    #[error(
        "the archive read of {rows} `{model}` rows came back cut short ({lines} lines, the last not whole; on \
         MariaDB, raise `max_allowed_packet`, or lower the chunk sizes); the chunk was not deleted"
    )]
    ArchiveCutShort {
        /// The model whose rows were read.
        model: String,
        /// The rows read.
        rows: u64,
        /// The lines returned.
        lines: u64,
    },
    /// `--archive` was asked for a plan with rows the database deletes itself, which pass
    /// through no statement of cascade's and could not be archived.
    #[error(
        "the database deletes the `{model}` rows of this plan itself (`on_delete = \"database\"`), so no archive \
         can hold them. Delete without --archive, or let cascade delete them (remove \
         `on_delete = \"database\"`) if the table allows it"
    )]
    ArchiveMissesDatabaseRows {
        /// The first model the database deletes.
        model: String,
    },
    /// Rows of a tree or a cycle of models reference each other in a loop (a row's parent's parent
    /// is the row): following children first never reaches a leaf.
    #[error(
        "rows reference each other in a loop: `{model}` row {key} is reached again below itself, so it is in \
         or below the loop, and no order deletes the loop's children first. The rows below the loop deleted so \
         far stay deleted; the loop's rows and those above them stay. Break the loop (set one of its references \
         to NULL, or delete one of its rows with its own foreign keys' help) and run the deletion again"
    )]
    RowLoop {
        /// The model.
        model: String,
        /// A row in or below the loop.
        key: String,
    },
    /// New child rows kept appearing under a chunk, however often it was retried.
    #[error(
        "rows keep appearing under a chunk of `{model}` (tried {attempts} times): something is still writing \
         children of the rows being deleted; stop it and run the deletion again"
    )]
    ChildrenKeepAppearing {
        /// The parent model.
        model: String,
        /// How often the chunk was tried.
        attempts: u32,
    },
    /// Foreign keys into tables the deletion deletes from that the config does not declare: the
    /// database would refuse the parents after their children were gone, so nothing is deleted.
    #[error(
        "{} foreign key(s) into the tables of this deletion are not declared in the config; nothing was deleted",
        .0.len()
    )]
    UnregisteredReferences(Vec<crate::diagnostic::Diagnostic>),
    /// A column declared without a type holds a key as text that reads as an integer: keys travel
    /// as text, so that row could not be told from the integer's.
    #[error(
        "`{table}.{column}` has no declared type and holds the text '{value}', which cascade cannot tell from the \
         integer {value}: nothing was deleted. Declare the column's type (INTEGER or TEXT) in a copy of the table, \
         or store its keys as one type"
    )]
    AmbiguousKey {
        /// The table.
        table: String,
        /// The column (a key or a relation column).
        column: String,
        /// One such value.
        value: String,
    },
    /// A relation column holds a value that SQLite's `=` matches with a parent's key but that
    /// the deletion's lookups by key would miss.
    #[error(
        "`{table}.{column}` holds '{value}', which SQLite takes for one of the parent's {key} keys but cascade \
         would not find by that key, leaving the row behind: nothing was deleted. Store the column's values as the \
         key stores its keys (UPDATE it to CAST({column} AS INTEGER) where it reads as an integer)"
    )]
    UnmatchedReference {
        /// The child table.
        table: String,
        /// Its relation column.
        column: String,
        /// One such value.
        value: String,
        /// The parent key's declared type.
        key: String,
    },
    /// The database cannot compare a relation's column with its parent's keys.
    #[error(
        "`{child}` cannot be looked up by the keys of `{parent}`: {reason}. Nothing was deleted: give the column \
         the key's type"
    )]
    UncomparableRelation {
        /// The child's table and relation column.
        child: String,
        /// The parent's table and key.
        parent: String,
        /// What the database said.
        reason: String,
    },
    /// A key met in a table's rows does not fit the key's type.
    #[error("id `{id}` is not an integer, but the key of `{table}` is")]
    NotAnInteger {
        /// The key as read.
        id: String,
        /// The table.
        table: String,
    },
    /// A root id does not fit the key's type: found before the first write.
    #[error("id `{id}` is not an integer, but the key of `{table}` is: nothing was deleted")]
    RootNotAnInteger {
        /// The id as given.
        id: String,
        /// The root's table.
        table: String,
    },
}

impl DeleteError {
    /// Whether the deletion was refused before its first write (a root id that does not fit the
    /// key, a column's values that no lookup could match, a relation the database cannot
    /// compare, an undeclared foreign key, an archive of rows the database deletes): nothing was
    /// deleted.
    pub fn refused_before_any_write(&self) -> bool {
        matches!(
            self,
            DeleteError::AmbiguousKey { .. }
                | DeleteError::ArchiveMissesDatabaseRows { .. }
                | DeleteError::RootNotAnInteger { .. }
                | DeleteError::UnmatchedReference { .. }
                | DeleteError::UncomparableRelation { .. }
                | DeleteError::UnregisteredReferences(_)
        )
    }
}
