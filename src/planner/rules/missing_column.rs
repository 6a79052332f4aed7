//! `missing-column`: a column the executor would use is not in its table: a declared key (every
//! column of a composite one), the default key `id` of a per_row model or of a bulk model that
//! writes an outbox category, a relation's column, the status column or an outbox payload column.

use crate::config::{Located, Model, Strategy};
use crate::diagnostic::{Code, Diagnostic, Location, did_you_mean};
use crate::planner::{Context, SchemaRelation};
use crate::schema::Table;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        let Some(table) = context.table_of(model) else {
            continue;
        };
        let mut missing = |column: &str, location: &Location, role: &str| {
            if table.column(column).is_none() {
                diagnostics.push(diagnostic(table, column, location, role));
            }
        };
        key_column(model, &mut missing);
        if let Some(status) = &model.status {
            missing(&status.column.value, &status.column.location, "status");
        }
        for column in &model.outbox_payload {
            missing(&column.value, &column.location, "outbox payload");
        }
    }
    for (remote, relation, child_table) in context.remote_relations() {
        for column in relation.columns() {
            if child_table.column(&column.value).is_none() {
                let role = format!("relation from remote model `{}`", remote.name.value);
                diagnostics.push(diagnostic(child_table, &column.value, &column.location, &role));
            }
        }
    }
    for SchemaRelation { parent, parent_table, relation, child_table, .. } in context.schema_relations() {
        for column in relation.columns() {
            if child_table.column(&column.value).is_none() {
                let role = format!("relation from `{}`", parent.name.value);
                diagnostics.push(diagnostic(child_table, &column.value, &column.location, &role));
            }
        }
        let (Some(references), Some(parent_table)) = (&relation.references, parent_table) else { continue };
        for column in references.value.columns() {
            if parent_table.column(&column).is_none() {
                let role = format!("column of `{}` that `references` names", parent.name.value);
                diagnostics.push(diagnostic(parent_table, &column, &references.location, &role));
            }
        }
    }
}

/// A per_row model deletes by key, so its key (declared, or the default `id`) must exist; a
/// bulk model needs one only for its outbox tombstones, but a declared key must always exist.
fn key_column(model: &Model, missing: &mut impl FnMut(&str, &Location, &str)) {
    let bulk = model.strategy.as_ref().is_some_and(|s| s.value == Strategy::Bulk);
    match &model.key {
        Some(Located { value, location }) => {
            for column in value.columns() {
                missing(&column, location, "key");
            }
        }
        None if !bulk => missing("id", &model.table.location, "the default key: set `key`"),
        None if model.outbox.is_some() => missing(
            "id",
            &model.table.location,
            "the default key, which a bulk model needs only for its outbox tombstones: set `key`",
        ),
        None => {}
    }
}

fn diagnostic(table: &Table, column: &str, location: &Location, role: &str) -> Diagnostic {
    let primary_key = match table.primary_key.as_slice() {
        [] => None,
        _ if !role.contains("key") => None,
        [key] => Some(format!("set `key = \"{key}\"`, the table's primary key")),
        columns => {
            let quoted: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
            Some(format!("set `key = [{}]`, the table's primary key", quoted.join(", ")))
        }
    };
    let help = primary_key
        .or_else(|| did_you_mean(column, table.columns.iter().map(|c| c.name.as_str())))
        .unwrap_or_else(|| {
            let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
            format!("`{}` has the columns: {}", table.name, names.join(", "))
        });
    Diagnostic::new(
        Code::MissingColumn,
        location.clone(),
        format!("`{column}` is not a column of table `{}` ({role})", table.name),
    )
    .label("no such column")
    .help(help)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    #[test]
    fn a_remote_models_relation_is_checked_too() {
        let config = "[models.organization]\nremote = { category = \"organization_deleted\" }\n\
                      children = [{ model = \"member\", column = \"org_id\" }]\n\n\
                      [models.member]\ntable = \"member\"\n";
        let ddl = "CREATE TABLE member (id integer PRIMARY KEY, organization_id integer NOT NULL);";
        assert_eq!(fixture::codes_against(config, Some(ddl)), vec![(Code::MissingColumn, 3)]);
    }

    const DDL: &str = "
        CREATE TABLE organization (organization_id integer PRIMARY KEY, state integer, slug text);
        CREATE TABLE project (id integer PRIMARY KEY, organization_id integer REFERENCES organization);
        CREATE TABLE tag (project_id integer);
        CREATE INDEX tag_project_id_idx ON tag (project_id);";

    const CONFIG: &str = r#"
[models.organization]
table = "organization"
status = { column = "status", proceed = [1], in_progress = 2 }
outbox_payload = ["slug", "name"]
children = [{ model = "project", column = "org_id" }]

[models.project]
table = "project"
key = "project_id"
children = [{ model = "tag", column = "project_id" }]

[models.tag]
table = "tag"
strategy = "bulk"
"#;

    #[test]
    fn reports_each_missing_column_where_it_is_named() {
        assert_eq!(
            fixture::codes_against(CONFIG, Some(DDL)),
            vec![
                (Code::MissingColumn, 3),
                (Code::MissingColumn, 4),
                (Code::PayloadWithoutOutbox, 5),
                (Code::MissingColumn, 5),
                (Code::MissingColumn, 6),
                (Code::MissingColumn, 10),
            ]
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
