//! `deletes-kept-rows`: a delete relation over a foreign key whose action is `ON DELETE SET NULL`
//! or `SET DEFAULT`. The database would keep those child rows (with a NULL or the default); the
//! relation deletes them and everything below them, which is rarely what the schema's author
//! meant.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::SchemaRelation;
use crate::planner::Context;
use crate::schema::ReferentialAction;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for found in context.schema_relations() {
        if found.relation.action() != OnDelete::Delete {
            continue;
        }
        let keeping = found.foreign_keys(schema).into_iter().find(|key| {
            matches!(key.on_delete, ReferentialAction::SetNull | ReferentialAction::SetDefault)
        });
        let Some(key) = keeping else { continue };
        let SchemaRelation { parent, relation, child_table, .. } = found;
        let instead = if key.on_delete == ReferentialAction::SetNull {
            r#"add `on_delete = "nullify"` to the relation, as the database would"#
        } else {
            "leave the relation out (the database sets the default itself) if the rows are to stay"
        };
        diagnostics.push(
            Diagnostic::new(
                Code::DeletesKeptRows,
                relation.location.clone(),
                format!(
                    "the foreign key {} is ON DELETE {}: the database keeps `{}` rows when a `{}` row goes, but \
                     this relation deletes them and everything below them",
                    key.describe(&child_table.name),
                    key.on_delete.as_sql(),
                    child_table.name,
                    parent.name.value
                ),
            )
            .label("deletes what the database would keep")
            .help(format!("{instead}; keep the relation as it is only if these rows must go too")),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE account (id integer PRIMARY KEY);
        CREATE TABLE invoice (id integer PRIMARY KEY,
            account_id integer CONSTRAINT invoice_account_fkey REFERENCES account ON DELETE SET NULL,
            fallback_id integer DEFAULT 0 CONSTRAINT invoice_fallback_fkey REFERENCES account ON DELETE SET DEFAULT,
            payer_id integer REFERENCES account ON DELETE CASCADE,
            reviewer_id integer REFERENCES account ON DELETE SET NULL);
        CREATE INDEX invoice_account ON invoice (account_id);
        CREATE INDEX invoice_fallback ON invoice (fallback_id);
        CREATE INDEX invoice_payer ON invoice (payer_id);
        CREATE INDEX invoice_reviewer ON invoice (reviewer_id);";

    const CONFIG: &str = r#"
[models.account]
table = "account"
children = [
  { model = "invoice", column = "account_id" },
  { model = "invoice", column = "fallback_id" },
  { model = "invoice", column = "payer_id" },
  { model = "invoice", column = "reviewer_id", on_delete = "nullify" },
]

[models.invoice]
table = "invoice"
strategy = "bulk"
"#;

    #[test]
    fn a_delete_relation_over_set_null_or_set_default_is_named_with_its_foreign_key() {
        let codes = fixture::codes_against(CONFIG, Some(DDL));
        assert_eq!(
            codes,
            vec![(Code::DeletesKeptRows, 5), (Code::DeletesKeptRows, 6), (Code::DatabaseCascade, 7)],
            "the nullify relation and the one the database cascades are not warned about"
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
