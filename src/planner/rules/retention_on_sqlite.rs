//! `retention-on-sqlite`: `retention` drops whole partitions of a PostgreSQL or MySQL table partitioned by
//! range; SQLite has no partitions, so the policy could never run there.

use crate::db::DatabaseUrl;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let settings_url = context.config.settings.database_url.as_ref();
    let settings_kind = settings_url.and_then(|url| DatabaseUrl::parse(&url.value).ok()).map(|url| url.kind());
    let kind = context.schema.and_then(|schema| schema.kind).or(settings_kind);
    // The messages call it SQLite: the one database without range partitions.
    let without_range_partitions = kind.is_some_and(|kind| !kind.backend().tuning().range_partitions);
    if !without_range_partitions {
        return;
    }
    for model in context.config.models.values() {
        let Some(retention) = &model.retention else { continue };
        diagnostics.push(
            Diagnostic::new(
                Code::RetentionOnSqlite,
                retention.location.clone(),
                format!(
                    "model `{}` has a retention policy, which needs a PostgreSQL or MySQL table partitioned by range; \
                     the database is SQLite",
                    model.name.value
                ),
            )
            .label("SQLite has no partitions")
            .help("remove `retention`: on SQLite, delete old rows with `cascade delete` or `cascade orphans`"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.page_view]
table = "page_view"
strategy = "bulk"
retention = { keep = "90d", column = "entered_at" }
"#;

    #[test]
    fn a_sqlite_schema_or_database_url_refuses_retention() {
        let ddl = "CREATE TABLE `page_view` (`id` INTEGER PRIMARY KEY AUTOINCREMENT, `entered_at` TEXT NOT NULL);";
        assert_eq!(fixture::codes_against(CONFIG, Some(ddl)), vec![(Code::RetentionOnSqlite, 5)]);
        insta::assert_snapshot!(fixture::human_against(CONFIG, Some(ddl)));
        let with_url = format!("[settings]\ndatabase_url = \"sqlite://app.db\"\n{CONFIG}");
        assert_eq!(fixture::codes(&with_url), vec![(Code::RetentionOnSqlite, 7)]);
    }

    #[test]
    fn postgresql_or_an_unknown_database_is_not_refused() {
        assert_eq!(fixture::codes(CONFIG), vec![]);
        let with_url = format!("[settings]\ndatabase_url = \"postgres://app@db/app\"\n{CONFIG}");
        assert_eq!(fixture::codes(&with_url), vec![]);
    }
}
