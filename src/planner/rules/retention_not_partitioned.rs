//! `retention-not-partitioned`: `retention` drops whole partitions, so the table must be
//! partitioned by range on the retention column alone; otherwise no partition is "wholly older"
//! than the policy, and dropping one would remove rows of any age.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    // A database without range partitions (SQLite) has its own rule (`retention-on-sqlite`).
    if context.schema.and_then(|schema| schema.kind).is_some_and(|kind| !kind.backend().tuning().range_partitions) {
        return;
    }
    for model in context.config.models.values() {
        let (Some(retention), Some(table)) = (&model.retention, context.table_of(model)) else { continue };
        let column = &retention.column;
        if table.is_range_partitioned_by_time(&column.value, context.schema.and_then(|schema| schema.kind)) {
            continue;
        }
        let found = match &table.partition_key {
            Some(key) if key.is_range_on(&column.value) => {
                format!("is partitioned by {}, whose values are no times", key.describe())
            }
            Some(key) => format!("is partitioned by {}", key.describe()),
            None if table.partitioned => "is partitioned in a way the schema does not say".to_owned(),
            None => "is not partitioned".to_owned(),
        };
        diagnostics.push(
            Diagnostic::new(
                Code::RetentionNotPartitioned,
                column.location.clone(),
                format!(
                    "model `{}` keeps rows by `{}`, but table `{}` {found}",
                    model.name.value,
                    column.value,
                    table.qualified_name()
                ),
            )
            .label(format!("not the range partition key of `{}`", table.name))
            .help(format!(
                "retention drops whole partitions: the table must be `PARTITION BY RANGE ({0})` (on MySQL also \
                 `RANGE COLUMNS ({0})`, or `RANGE` over TO_DAYS, UNIX_TIMESTAMP or YEAR of it); delete old rows \
                 of other tables with `cascade delete`",
                column.value
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const DDL: &str = "
        CREATE TABLE page_view (id bigint, entered_at timestamptz NOT NULL, PRIMARY KEY (id, entered_at))
            PARTITION BY RANGE (entered_at);
        CREATE TABLE page_view_2026_01 PARTITION OF page_view
            FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
        CREATE TABLE audit (id bigint, kind text NOT NULL, at timestamptz, PRIMARY KEY (id, kind))
            PARTITION BY LIST (kind);
        CREATE TABLE login (id bigint PRIMARY KEY, at timestamptz);";

    const CONFIG: &str = r#"
[models.page_view]
table = "page_view"
strategy = "bulk"
retention = { keep = "90d", column = "entered_at" }

[models.page_view_by_id]
table = "page_view"
strategy = "bulk"
retention = { keep = "90d", column = "id" }

[models.audit]
table = "audit"
strategy = "bulk"
retention = { keep = "1y", column = "at" }

[models.login]
table = "login"
strategy = "bulk"
retention = { keep = "30d", column = "at" }
"#;

    #[test]
    fn the_table_must_be_partitioned_by_range_on_the_column() {
        assert_eq!(
            fixture::codes_against(CONFIG, Some(DDL)),
            vec![
                (Code::RetentionNotPartitioned, 10),
                (Code::RetentionNotPartitioned, 15),
                (Code::RetentionNotPartitioned, 20)
            ]
        );
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(DDL)));
    }
}
