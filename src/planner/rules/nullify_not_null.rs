//! `nullify-not-null`: a nullify relation sets its column to NULL, which a NOT NULL column
//! refuses: the deletion would fail at that step.

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let local = context.schema_relations().map(|found| (found.relation, found.child_table));
    let remote = context.remote_relations().map(|(_, relation, child_table)| (relation, child_table));
    for (relation, child_table) in local.chain(remote) {
        let Some(on_delete) = relation.on_delete.as_ref().filter(|a| a.value == OnDelete::Nullify) else {
            continue;
        };
        let columns = relation.columns();
        let Some(column) = columns.iter().find_map(|c| child_table.column(&c.value).filter(|c| !c.nullable)) else {
            continue;
        };
        diagnostics.push(
            Diagnostic::new(
                Code::NullifyNotNull,
                on_delete.location.clone(),
                format!("`{}.{}` is NOT NULL, so it cannot be nullified", child_table.name, column.name),
            )
            .label("cannot set a NOT NULL column to NULL")
            .help("delete the child rows instead (`on_delete = \"delete\"`), or make the column nullable"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE employee (id integer PRIMARY KEY, reports_to integer, office_id integer NOT NULL);
        CREATE INDEX employee_reports_to ON employee (reports_to);
        CREATE INDEX employee_office ON employee (office_id);
        CREATE TABLE office (id integer PRIMARY KEY);";

    const CONFIG: &str = r#"
[models.office]
table = "office"
children = [{ model = "employee", column = "office_id", on_delete = "nullify" }]

[models.employee]
table = "employee"
children = [{ model = "employee", column = "reports_to", on_delete = "nullify" }]
"#;

    #[test]
    fn a_remote_models_relation_is_checked_too() {
        let config = "[models.organization]\nremote = { category = \"organization_deleted\" }\n\
                      children = [{ model = \"member\", column = \"organization_id\", on_delete = \"nullify\" }]\n\n\
                      [models.member]\ntable = \"member\"\n";
        let ddl = "CREATE TABLE member (id integer PRIMARY KEY, organization_id integer NOT NULL);
                   CREATE INDEX member_organization ON member (organization_id);";
        assert_eq!(fixture::codes_against(config, Some(ddl)), vec![(Code::NullifyNotNull, 3)]);
    }

    #[test]
    fn a_not_null_column_cannot_be_nullified_but_a_nullable_one_can() {
        assert_eq!(fixture::codes_against(CONFIG, Some(DDL)), vec![(Code::NullifyNotNull, 4)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
