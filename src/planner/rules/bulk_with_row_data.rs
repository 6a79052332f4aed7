//! `bulk-with-row-data`: a status check or an outbox payload needs the rows loaded, which a bulk
//! (set-based) delete never does.

use crate::config::Strategy;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values() {
        let Some(strategy) = model.strategy.as_ref().filter(|s| s.value == Strategy::Bulk) else {
            continue;
        };
        let mut needs_rows = Vec::new();
        if model.status.is_some() {
            needs_rows.push("a status check");
        }
        if !model.outbox_payload.is_empty() {
            needs_rows.push("an outbox payload");
        }
        if needs_rows.is_empty() {
            continue;
        }
        diagnostics.push(
            Diagnostic::new(
                Code::BulkWithRowData,
                strategy.location.clone(),
                format!("`{}` is deleted in bulk but has {}", model.name.value, needs_rows.join(" and ")),
            )
            .label("bulk loads no rows")
            .help(r#"use `strategy = "per_row"`, which loads each chunk's rows"#),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.organization]
table = "organization"
strategy = "bulk"
status = { column = "status", proceed = [1], in_progress = 2 }
outbox = "organization_update"
outbox_payload = ["slug"]

[outbox.scopes.organization]
shard_key = "id"
categories = ["organization_update"]
"#;

    #[test]
    fn names_everything_that_needs_rows() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::BulkWithRowData, 4)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn an_outbox_category_without_payload_is_fine_in_bulk() {
        let config = CONFIG
            .replace("status = { column = \"status\", proceed = [1], in_progress = 2 }\n", "")
            .replace("outbox_payload = [\"slug\"]\n", "");
        assert_eq!(fixture::codes(&config), vec![]);
    }
}
