//! `identifier-case` (warning): a table or column name that matches the database's only when
//! case is ignored. Validation and the executor both use the catalog's spelling, so it works,
//! but the config should say what the database says (on PostgreSQL `"CHILD_T"` and `child_t`
//! are different names in SQL).

use crate::config::Located;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::{Context, SchemaRelation};
use crate::schema::Table;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        let Some(table) = context.table_of(model) else { continue };
        let written = model.table.value.rsplit('.').next().unwrap_or(&model.table.value);
        if written != table.name {
            diagnostics.push(diagnostic(&model.table, "table", written, &table.name));
        }
        let keys = model.key.iter().flat_map(|key| key.value.columns().into_iter().map(move |c| (key, c)));
        for (key, column) in keys {
            column_case(table, &key.location, &column, "key", diagnostics);
        }
        if let Some(status) = &model.status {
            column_case(table, &status.column.location, &status.column.value, "status column", diagnostics);
        }
        for column in &model.outbox_payload {
            column_case(table, &column.location, &column.value, "payload column", diagnostics);
        }
    }
    for SchemaRelation { relation, child_table, .. } in context.schema_relations() {
        for column in relation.columns() {
            column_case(child_table, &column.location, &column.value, "relation column", diagnostics);
        }
    }
}

fn column_case(
    table: &Table,
    location: &crate::diagnostic::Location,
    written: &str,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if let Some(column) = table.column(written).filter(|column| column.name != written) {
        diagnostics.push(diagnostic(&Located::new((), location.clone()), what, written, &column.name));
    }
}

fn diagnostic<T>(written_at: &Located<T>, what: &str, written: &str, exact: &str) -> Diagnostic {
    Diagnostic::new(
        Code::IdentifierCase,
        written_at.location.clone(),
        format!("{what} `{written}` matches `{exact}` in the database only when case is ignored"),
    )
    .label(format!("the database spells it `{exact}`"))
    .help(format!("write `{exact}`; cascade uses the database's spelling either way"))
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = r#"
CREATE TABLE parent (id integer PRIMARY KEY);
CREATE TABLE child_t (id integer PRIMARY KEY, parent_id integer REFERENCES parent (id));
CREATE INDEX child_t_parent_id ON child_t (parent_id);
"#;

    #[test]
    fn a_name_that_matches_only_by_case_gets_the_exact_spelling() {
        let config = r#"
[models.parent]
table = "parent"
children = [{ model = "child", column = "Parent_ID" }]

[models.child]
table = "CHILD_T"
key = "ID"
strategy = "bulk"
"#;
        assert_eq!(
            fixture::codes_against(config, Some(DDL)),
            vec![(Code::IdentifierCase, 4), (Code::IdentifierCase, 7), (Code::IdentifierCase, 8)]
        );
        insta::assert_snapshot!(fixture::human_against(config, Some(DDL)));
    }

    #[test]
    fn exact_names_are_quiet() {
        let config = "[models.parent]\ntable = \"parent\"\nchildren = [{ model = \"child\", column = \"parent_id\" }]\n\n\
                      [models.child]\ntable = \"child_t\"\nstrategy = \"bulk\"\n";
        assert_eq!(fixture::codes_against(config, Some(DDL)), vec![]);
    }
}
