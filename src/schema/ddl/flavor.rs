//! Names and references as one dialect reads them from sqlparser's syntax tree and tokens.

use sqlparser::ast::ReferentialAction as SqlAction;
use sqlparser::ast::{Expr, ForeignKeyConstraint, Ident, IndexColumn, ObjectName};
use sqlparser::tokenizer::Word;

use crate::db::Kind;
use crate::schema::{ForeignKey, ReferentialAction};

/// The dialect a script is read in, for reading the names its statements use.
#[derive(Clone, Copy)]
pub(super) struct Flavor(Kind);

impl Flavor {
    pub(super) fn new(kind: Kind) -> Self {
        Flavor(kind)
    }

    pub(super) fn kind(self) -> Kind {
        self.0
    }

    pub(super) fn ident(self, ident: &Ident) -> String {
        self.0.stored_identifier(&ident.value, ident.quote_style)
    }

    pub(super) fn word(self, word: &Word) -> String {
        self.0.stored_identifier(&word.value, word.quote_style)
    }

    /// `schema.name` or `name`; `None` when a part is not a plain identifier.
    pub(super) fn table_ref(self, name: &ObjectName) -> Option<TableRef> {
        let mut parts = name.0.iter().rev().map(|part| part.as_ident().map(|ident| self.ident(ident)));
        let name = parts.next()??;
        let schema = match parts.next() {
            Some(schema) => Some(schema?),
            None => None,
        };
        Some(self.table_ref_from(schema, name))
    }

    pub(super) fn table_ref_from(self, qualifier: Option<String>, name: String) -> TableRef {
        let schema = if self.0.qualifier_is_schema() { qualifier } else { None };
        TableRef { schema, name }
    }

    /// The plain column names of an index or key, in order, up to the first expression: what
    /// follows an expression cannot be used as a leading column, so the list stays a correct
    /// prefix.
    pub(super) fn index_columns(self, columns: &[IndexColumn]) -> Vec<String> {
        columns
            .iter()
            .map_while(|column| match &column.column.expr {
                Expr::Identifier(ident) => Some(self.ident(ident)),
                _ => None,
            })
            .collect()
    }

    pub(super) fn idents(self, idents: &[Ident]) -> Vec<String> {
        idents.iter().map(|ident| self.ident(ident)).collect()
    }

    pub(super) fn foreign_key(
        self,
        name: Option<String>,
        columns: Vec<String>,
        fk: &ForeignKeyConstraint,
    ) -> Option<ForeignKey> {
        let target = self.table_ref(&fk.foreign_table)?;
        Some(ForeignKey {
            name: name.or_else(|| fk.name.as_ref().map(|name| self.ident(name))),
            columns,
            referenced_schema: target.schema,
            referenced_table: target.name,
            referenced_columns: self.idents(&fk.referred_columns),
            on_delete: match fk.on_delete.map_or(ReferentialAction::NoAction, referential_action) {
                // InnoDB checks `NO ACTION` at once, row by row, as `RESTRICT` (as read live).
                ReferentialAction::NoAction if self.0 == Kind::Mysql => ReferentialAction::Restrict,
                action => action,
            },
        })
    }
}

fn referential_action(action: SqlAction) -> ReferentialAction {
    match action {
        SqlAction::NoAction => ReferentialAction::NoAction,
        SqlAction::Restrict => ReferentialAction::Restrict,
        SqlAction::Cascade => ReferentialAction::Cascade,
        SqlAction::SetNull => ReferentialAction::SetNull,
        SqlAction::SetDefault => ReferentialAction::SetDefault,
    }
}

/// A table as a statement names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableRef {
    pub(super) schema: Option<String>,
    pub(super) name: String,
}
