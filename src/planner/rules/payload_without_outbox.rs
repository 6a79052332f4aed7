//! `payload-without-outbox` (warning): payload columns are only copied into outbox rows, so
//! without an `outbox` category they do nothing; usually the category was forgotten.

use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for model in context.config.models.values().filter(|model| model.outbox.is_none()) {
        let Some(first) = model.outbox_payload.first() else {
            continue;
        };
        diagnostics.push(
            Diagnostic::new(
                Code::PayloadWithoutOutbox,
                first.location.clone(),
                format!("model `{}` has an `outbox_payload` but writes no outbox category", model.name.value),
            )
            .label("payload for no outbox row")
            .help("set `outbox = \"CATEGORY\"` on the model, or remove `outbox_payload`"),
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
outbox_payload = ["slug"]
"#;

    #[test]
    fn warns_about_a_payload_without_category() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::PayloadWithoutOutbox, 4)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }
}
