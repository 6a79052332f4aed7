//! `invalid-chunk-size`: 0 rows per chunk never finishes; more than the maximum holds one
//! transaction open far too long. The same for `max_chunk_size`, the most adaptive chunks grow
//! to, and a `target_chunk_ms` of 0, which shrinks every chunk to its least.

use crate::config::{
    DEFAULT_BULK_CHUNK_SIZE, DEFAULT_MAX_CHUNK_SIZE, DEFAULT_PER_ROW_CHUNK_SIZE, DEFAULT_TARGET_CHUNK_MS, Located,
    MAX_CHUNK_SIZE,
};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    check_target(context, diagnostics);
    let config = context.config;
    let settings =
        [&config.settings.per_row_chunk_size, &config.settings.bulk_chunk_size, &config.settings.max_chunk_size];
    let models = config.models.values().flat_map(|model| {
        std::iter::once(&model.chunk_size).chain(model.children.iter().map(|relation| &relation.chunk_size))
    });
    for size in settings.into_iter().chain(models).flatten() {
        if let Some(problem) = problem(size) {
            diagnostics.push(
                Diagnostic::new(
                    Code::InvalidChunkSize,
                    size.location.clone(),
                    format!("chunk size {} {problem}", size.value),
                )
                .label("invalid chunk size")
                .help(format!(
                    "use a chunk size from 1 to {MAX_CHUNK_SIZE}; the defaults are {DEFAULT_PER_ROW_CHUNK_SIZE} (per_row), \
                     {DEFAULT_BULK_CHUNK_SIZE} (bulk) and {DEFAULT_MAX_CHUNK_SIZE} (max_chunk_size)"
                )),
            );
        }
    }
}

fn check_target(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(target) = context.config.settings.target_chunk_ms.as_ref().filter(|target| target.value == 0) else {
        return;
    };
    diagnostics.push(
        Diagnostic::new(
            Code::InvalidChunkSize,
            target.location.clone(),
            "a target of 0 ms per chunk would shrink every chunk to a single row".to_owned(),
        )
        .label("invalid chunk target")
        .help(format!("leave it out for the default ({DEFAULT_TARGET_CHUNK_MS} ms)")),
    );
}

fn problem(size: &Located<u64>) -> Option<&'static str> {
    match size.value {
        0 => Some("would never delete a row"),
        n if n > MAX_CHUNK_SIZE => Some("would hold one transaction open for too long"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[settings]
bulk_chunk_size = 0
max_chunk_size = 0
target_chunk_ms = 0

[models.organization]
table = "organization"
chunk_size = 5000000
children = [{ model = "project", column = "organization_id", chunk_size = 0 }]

[models.project]
table = "project"
chunk_size = 1000000
"#;

    #[test]
    fn reports_zero_and_absurd_sizes_everywhere() {
        assert_eq!(
            fixture::codes(CONFIG),
            vec![
                (Code::InvalidChunkSize, 3),
                (Code::InvalidChunkSize, 4),
                (Code::InvalidChunkSize, 5),
                (Code::InvalidChunkSize, 9),
                (Code::InvalidChunkSize, 10),
            ]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn a_negative_size_is_an_invalid_value() {
        let config = CONFIG.replace("bulk_chunk_size = 0", "bulk_chunk_size = -5");
        assert!(fixture::codes(&config).contains(&(Code::InvalidValue, 3)));
    }
}
