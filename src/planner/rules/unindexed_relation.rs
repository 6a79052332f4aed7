//! `unindexed-relation` (warning): finding a parent chunk's children by a column that no index
//! leads with scans the whole child table once per chunk.

use crate::diagnostic::{Code, Diagnostic, Fix};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let local = context.schema_relations().map(|found| (&found.parent.name, found.relation, found.child, found.child_table));
    let remote = context.remote_relations().filter_map(|(remote, relation, child_table)| {
        Some((&remote.name, relation, context.config.model(&relation.model.value)?, child_table))
    });
    for (parent, relation, child, child_table) in local.chain(remote) {
        let columns = relation.column_names();
        if columns.iter().any(|column| child_table.column(column).is_none()) {
            continue;
        }
        let kind = context.schema.and_then(|schema| schema.kind);
        let Some(advice) = child_table.index_advice(&columns, &child.table.value, kind) else {
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
                    parent.value
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

    #[test]
    fn a_remote_models_relation_is_checked_too() {
        let config = "[models.organization]\nremote = { category = \"organization_deleted\" }\n\
                      children = [{ model = \"member\", column = \"organization_id\" }]\n\n\
                      [models.member]\ntable = \"member\"\n";
        let ddl = "CREATE TABLE member (id integer PRIMARY KEY, organization_id integer NOT NULL);";
        assert_eq!(fixture::codes_against(config, Some(ddl)), vec![(Code::UnindexedRelation, 3)]);
        let indexed = format!("{ddl} CREATE INDEX member_organization ON member (organization_id);");
        assert_eq!(fixture::codes_against(config, Some(&indexed)), vec![]);
    }

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
