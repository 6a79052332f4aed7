//! `unregistered-reference`: with `require_all_references = true`, every foreign key in the
//! schema that points at the model's table must be a declared child relation or be listed in
//! `ignore_references`. This is how CI catches a new table that references the model but that
//! nobody registered, whose rows would otherwise block or survive the deletion.

use crate::config::{Located, Model};
use crate::diagnostic::{Code, Diagnostic, Fix};
use crate::planner::Context;
use crate::planner::generate::{toml_columns, toml_string};
use crate::schema::{ForeignKey, ReferentialAction, Table};

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        if let Some(required) = model.require_all_references.as_ref().filter(|r| r.value) {
            report(context, model, |_| true, required, "every reference must be registered", diagnostics);
        }
    }
}

/// What a deletion of any model's rows would refuse (see [`check_deleted_tables`]), but for the
/// models that `require_all_references`, whose every reference [`check`] reports already.
pub(crate) fn check_every_model(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let models: Vec<&Model> = context.config.models.values().collect();
    for model in models.iter().filter(|model| !model.require_all_references.as_ref().is_some_and(|r| r.value)) {
        report(context, model, enforced, &model.table, DELETED_LABEL, diagnostics);
    }
    refused_below_database_cascades(context, &models, diagnostics);
}

const DELETED_LABEL: &str = "rows of this table are deleted";

/// Before a deletion writes anything: every foreign key into a table the deletion deletes from
/// (`models`) that the database would enforce against it (`ON DELETE NO ACTION` or `RESTRICT`)
/// must be declared or ignored, whether or not `require_all_references` is set; otherwise the
/// children would be deleted and the parents refused, a half-done deletion.
pub(crate) fn check_deleted_tables<'a>(
    context: &Context<'_>,
    models: impl IntoIterator<Item = &'a Model>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let models: Vec<&Model> = models.into_iter().collect();
    for model in &models {
        report(context, model, enforced, &model.table, DELETED_LABEL, diagnostics);
    }
    refused_below_database_cascades(context, &models, diagnostics);
}

fn enforced(key: &ForeignKey) -> bool {
    matches!(key.on_delete, ReferentialAction::NoAction | ReferentialAction::Restrict)
}

/// Tables the database itself deletes from (`ON DELETE CASCADE` from a deleted table, and on
/// down) are deleted from too: an enforced foreign key into one of them that is not a model of
/// the deletion would refuse the cascade, and with it the parent chunk, after the parent's
/// declared children were already gone.
fn refused_below_database_cascades(context: &Context<'_>, models: &[&Model], diagnostics: &mut Vec<Diagnostic>) {
    let Some(schema) = context.schema else { return };
    let deleted: Vec<&Table> = models.iter().filter_map(|model| context.table_of(model)).collect();
    for model in models {
        let Some(start) = context.table_of(model) else { continue };
        // (table the database cascades into, the table it cascades from)
        let mut cascaded: Vec<(&Table, &Table)> = Vec::new();
        let mut frontier = vec![start];
        while let Some(parent) = frontier.pop() {
            for (child, key) in schema.references_to(parent) {
                let known = deleted.iter().copied().chain(cascaded.iter().map(|(table, _)| *table));
                let seen = known.clone().any(|table| std::ptr::eq(table, child));
                if key.on_delete == ReferentialAction::Cascade && !seen {
                    cascaded.push((child, parent));
                    frontier.push(child);
                }
            }
        }
        for (table, from) in cascaded {
            for (child, key) in schema.references_to(table).filter(|(_, key)| enforced(key)) {
                let column = key.columns.join(", ");
                diagnostics.push(
                    Diagnostic::new(
                        Code::UnregisteredReference,
                        model.table.location.clone(),
                        format!(
                            "table `{}` references `{}` by `{column}`, which the database deletes from (ON DELETE \
                             CASCADE from `{}`) when `{}` rows go: the reference would refuse it",
                            child.name, table.name, from.name, model.name.value
                        ),
                    )
                    .label(DELETED_LABEL)
                    .help(format!(
                        "declare `{}` as a model and a child relation, so cascade deletes `{}` rows first, or make \
                         `{}.{column}` ON DELETE CASCADE too",
                        table.name, child.name, child.name
                    )),
                );
            }
        }
    }
}

/// Reports, at `location`, each foreign key into `model`'s table that passes `relevant` and is
/// neither a declared relation nor an `ignore_references` entry.
fn report<T>(
    context: &Context<'_>,
    model: &Model,
    relevant: impl Fn(&ForeignKey) -> bool,
    location: &Located<T>,
    label: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let (Some(schema), Some(table)) = (context.schema, context.table_of(model)) else { return };
    for (child_table, key) in schema.references_to(table) {
        if !relevant(key) || declared(context, model, child_table, key) || ignored(model, child_table, key) {
            continue;
        }
        let column = key.columns.join(", ");
        let mut diagnostic = Diagnostic::new(
            Code::UnregisteredReference,
            location.location.clone(),
            format!(
                "table `{}` references `{}` by `{column}`, but model `{}` declares no relation for it",
                child_table.name, table.name, model.name.value
            ),
        )
        .label(label);
        let (help, fixes) = help(context, model, child_table, key);
        diagnostic = fixes.into_iter().fold(diagnostic.help(help), Diagnostic::fix);
        diagnostics.push(diagnostic);
    }
}

/// Whether a relation of `model` declares this foreign key: the same child table and columns,
/// each referencing the column of the model the key references (its key, or the relation's
/// `references`).
fn declared(context: &Context<'_>, model: &Model, child_table: &Table, key: &ForeignKey) -> bool {
    let (Some(schema), Some(parent_table)) = (context.schema, context.table_of(model)) else { return false };
    model.children.iter().any(|relation| {
        let Some(child) = context.config.model(&relation.model.value) else { return false };
        context.table_of(child).is_some_and(|table| std::ptr::eq(table, child_table))
            && schema
                .foreign_keys_on(
                    &child_table.qualified_name(),
                    &relation.column_names(),
                    &parent_table.qualified_name(),
                    &relation.referenced(model),
                )
                .iter()
                .any(|declared| std::ptr::eq(*declared, key))
    })
}

/// Whether an `ignore_references` entry of `model` names this foreign key: its table, and its
/// columns (all of them; an entry of one column names every key that column is part of).
fn ignored(model: &Model, child_table: &Table, key: &ForeignKey) -> bool {
    model.ignore_references.iter().any(|ignored| {
        let table = &ignored.table.value;
        let columns = ignored.column_names();
        let named = |column: &String| columns.iter().any(|named| named.eq_ignore_ascii_case(column));
        (table.eq_ignore_ascii_case(&child_table.name) || table.eq_ignore_ascii_case(&child_table.qualified_name()))
            && match columns.as_slice() {
                [_] => key.columns.iter().any(named),
                _ => columns.len() == key.columns.len() && key.columns.iter().all(named),
            }
    })
}

/// The TOML to add: the relation (naming the child's model, or a model to declare; its
/// `columns` and `references` as the key has them), or the ignore entry; and the same as fixes
/// (the relation only when its model exists).
fn help(context: &Context<'_>, model: &Model, child_table: &Table, key: &ForeignKey) -> (String, Vec<Fix>) {
    let child_model = context
        .config
        .models
        .values()
        .find(|candidate| context.table_of(candidate).is_some_and(|table| std::ptr::eq(table, child_table)));
    let declare = match child_model {
        Some(_) => String::new(),
        None => format!(" and declare [models.{0}] with table = \"{0}\"", child_table.name),
    };
    let child_name = child_model.map_or(child_table.name.as_str(), |m| m.name.value.as_str());
    let columns = toml_columns("column", &key.columns);
    let model_key = model.key.as_ref().map_or_else(|| vec!["id".to_owned()], |key| key.value.columns());
    let same = |a: &[String], b: &[String]| a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.eq_ignore_ascii_case(b));
    let references = if key.referenced_columns.is_empty() || same(&key.referenced_columns, &model_key) {
        String::new()
    } else {
        format!(", {}", toml_columns("references", &key.referenced_columns))
    };
    let relation = format!("{{ model = {}, {columns}{references} }}", toml_string(child_name));
    let ignored = format!("{{ table = {}, {columns}, reason = \"...\" }}", toml_string(&child_table.name));
    let help = format!(
        "add {relation} to the children of [models.{}]{declare}, or {ignored} to its ignore_references",
        model.name.value
    );
    let add = |key, entry| Fix::AddToModel { model: model.name.value.clone(), key, entry };
    let mut fixes = vec![add("ignore_references", ignored)];
    if child_model.is_some() {
        fixes.insert(0, add("children", relation));
    }
    (help, fixes)
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::{Code, Fix};
    use crate::planner::fixture;

    /// A `group` table referenced by three tables (tests/it/schema_validation.rs has 26 of them).
    fn ddl() -> String {
        let mut ddl = String::from("CREATE TABLE \"group\" (id integer PRIMARY KEY);\n");
        for i in 1..=3 {
            ddl.push_str(&format!(
                "CREATE TABLE child_{i:02} (id integer PRIMARY KEY, group_id integer NOT NULL REFERENCES \"group\" (id));\n\
                 CREATE INDEX child_{i:02}_group ON child_{i:02} (group_id);\n"
            ));
        }
        ddl
    }

    fn config(declared: impl Fn(usize) -> bool) -> String {
        let children: Vec<String> = (1..=3)
            .filter(|i| declared(*i))
            .map(|i| format!("  {{ model = \"child_{i:02}\", column = \"group_id\" }},\n"))
            .collect();
        let mut config = format!(
            "[models.group]\ntable = \"group\"\nrequire_all_references = true\nchildren = [\n{}]\n",
            children.concat()
        );
        for i in 1..=3 {
            config.push_str(&format!("\n[models.child_{i:02}]\ntable = \"child_{i:02}\"\nstrategy = \"bulk\"\n"));
        }
        config
    }

    #[test]
    fn all_references_declared_is_clean() {
        assert_eq!(fixture::codes_against(&config(|_| true), Some(&ddl())), vec![]);
    }

    #[test]
    fn each_missing_reference_is_named() {
        let config = config(|i| i != 2);
        let (diagnostics, _) = fixture::check_files_against(&[("cascade.toml", &config)], Some(&ddl()));
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            vec!["table `child_02` references `group` by `group_id`, but model `group` declares no relation for it",]
        );
        assert!(diagnostics.iter().all(|d| d.code == Code::UnregisteredReference));
        assert_eq!(
            diagnostics[0].help.as_deref(),
            Some(
                "add { model = \"child_02\", column = \"group_id\" } to the children of [models.group], \
                 or { table = \"child_02\", column = \"group_id\", reason = \"...\" } to its ignore_references"
            )
        );
        let add = |key, entry: &str| Fix::AddToModel { model: "group".to_owned(), key, entry: entry.to_owned() };
        assert_eq!(
            diagnostics[0].fixes,
            [
                add("children", "{ model = \"child_02\", column = \"group_id\" }"),
                add("ignore_references", "{ table = \"child_02\", column = \"group_id\", reason = \"...\" }"),
            ]
        );
    }

    #[test]
    fn an_ignored_reference_is_not_reported() {
        let config = config(|i| i != 2).replace(
            "require_all_references = true",
            "require_all_references = true\nignore_references = [{ table = \"child_02\", column = \"group_id\", reason = \"archive\" }]",
        );
        assert_eq!(fixture::codes_against(&config, Some(&ddl())), vec![]);
    }

    #[test]
    fn an_unknown_child_table_gets_the_model_to_declare() {
        let ddl = "CREATE TABLE \"group\" (id integer PRIMARY KEY);\n\
                   CREATE TABLE legacy (group_id integer REFERENCES \"group\");\n\
                   CREATE INDEX legacy_group ON legacy (group_id);";
        let config = "[models.group]\ntable = \"group\"\nrequire_all_references = true\n";
        assert_eq!(fixture::codes_against(config, Some(ddl)), vec![(Code::UnregisteredReference, 3)]);
        insta::assert_snapshot!(fixture::human_against(config, Some(ddl)));
    }
}
