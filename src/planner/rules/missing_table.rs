//! `missing-table`: a model's table does not exist in the schema.

use crate::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    for model in context.config.models.values() {
        if context.table_of(model).is_some() {
            continue;
        }
        let table = &model.table;
        let help = did_you_mean(&table.value, schema.tables.iter().map(|t| t.name.as_str()))
            .unwrap_or_else(|| "check the table name, or remove the model".to_owned());
        diagnostics.push(
            Diagnostic::new(
                Code::MissingTable,
                table.location.clone(),
                format!("table `{}` of model `{}` is not in the schema", table.value, model.name.value),
            )
            .label("no such table")
            .help(help),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "CREATE TABLE organization (id integer PRIMARY KEY);";
    const CONFIG: &str = r#"
[models.organization]
table = "organisation"
"#;

    #[test]
    fn reports_the_table_with_the_nearest_name() {
        assert_eq!(fixture::codes_against(CONFIG, Some(DDL)), vec![(Code::MissingTable, 3)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }

    #[test]
    fn without_a_schema_nothing_is_checked() {
        assert_eq!(fixture::codes(CONFIG), vec![]);
    }
}
