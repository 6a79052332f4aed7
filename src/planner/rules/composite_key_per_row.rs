//! `composite-key-per-row`: a per_row step fetches and deletes its chunks by one key column, and
//! child relations reference one column, so a composite key is only for bulk models (leaves
//! deleted set-based, whose key identifies their outbox tombstones).

use crate::config::{Key, Strategy};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    for model in config.models.values() {
        let Some(key) = model.key.as_ref().filter(|key| matches!(key.value, Key::Composite(_))) else {
            continue;
        };
        let per_row = model.strategy.as_ref().is_none_or(|s| s.value == Strategy::PerRow);
        let per_row_relation = config.models.values().flat_map(|parent| &parent.children).any(|relation| {
            relation.model.value == model.name.value
                && relation.strategy.as_ref().is_some_and(|s| s.value == Strategy::PerRow)
        });
        if per_row || per_row_relation {
            diagnostics.push(
                Diagnostic::new(
                    Code::CompositeKeyPerRow,
                    key.location.clone(),
                    format!(
                        "`{}` has a composite key but is deleted per_row, which fetches and deletes rows by one \
                         key column",
                        model.name.value
                    ),
                )
                .label("composite key")
                .help(r#"use `strategy = "bulk"` for a model with a composite key (it then cannot have children)"#),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[models.playlist]
table = "playlist"
children = [{ model = "playlist_track", column = "playlist_id" }]

[models.playlist_track]
table = "playlist_track"
key = ["playlist_id", "track_id"]
"#;

    #[test]
    fn a_composite_key_needs_a_bulk_model() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::CompositeKeyPerRow, 8)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn a_bulk_model_may_have_a_composite_key() {
        let config = CONFIG.replace("key = [", "strategy = \"bulk\"\nkey = [");
        assert_eq!(fixture::codes(&config), vec![]);
        let forced = config.replace(r#"column = "playlist_id" }"#, r#"column = "playlist_id", strategy = "per_row" }"#);
        assert_eq!(fixture::codes(&forced), vec![(Code::CompositeKeyPerRow, 9)]);
    }

    #[test]
    fn a_one_column_list_is_a_plain_key() {
        let config = CONFIG.replace(r#"key = ["playlist_id", "track_id"]"#, r#"key = ["playlist_id"]"#);
        assert_eq!(fixture::codes(&config), vec![]);
    }
}
