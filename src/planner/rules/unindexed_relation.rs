//! `unindexed-relation` (warning): finding a parent chunk's children by a column that no index
//! leads with scans the whole child table once per chunk.

use crate::db::sql::quote_qualified;
use crate::diagnostic::{Code, Diagnostic, Fix};
use crate::planner::{Context, SchemaRelation};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for SchemaRelation { parent, relation, child, child_table, .. } in context.schema_relations() {
        let columns = relation.column_names();
        if columns.iter().any(|column| child_table.column(column).is_none()) {
            continue;
        }
        let Some(advice) = child_table.index_advice(&columns, &quote_qualified(&child.table.value)) else {
            continue;
        };
        diagnostics.push(
            Diagnostic::new(
                Code::UnindexedRelation,
                relation.columns_location(),
                format!(
                    "no index of `{}` leads with `{}`: every chunk of `{}` would scan the table",
                    child_table.name,
                    columns.join(", "),
                    parent.name.value
                ),
            )
            .label("unindexed relation column")
            .help(advice.clone())
            .fix(Fix::CreateIndex { statement: advice }),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE project (id integer PRIMARY KEY);
        CREATE TABLE event (id integer PRIMARY KEY, project_id integer, release text);
        CREATE TABLE tag (project_id integer, key text, PRIMARY KEY (project_id, key));
        CREATE TABLE env (id integer, project_id integer);
        CREATE INDEX env_id_project ON env (id, project_id);";

    const CONFIG: &str = r#"
[models.project]
table = "project"
children = [
  { model = "event", column = "project_id" },
  { model = "tag", column = "project_id" },
  { model = "env", column = "project_id" },
]

[models.event]
table = "event"
strategy = "bulk"

[models.tag]
table = "tag"
strategy = "bulk"

[models.env]
table = "env"
strategy = "bulk"
"#;

    #[test]
    fn warns_with_the_index_to_create_unless_an_index_leads_with_the_column() {
        assert_eq!(
            fixture::codes_against(CONFIG, Some(DDL)),
            vec![(Code::UnindexedRelation, 5), (Code::UnindexedRelation, 7)]
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
