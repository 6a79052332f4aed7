//! `invalid-chunk-size`: 0 rows per chunk never finishes; more than the maximum holds one
//! transaction open far too long.

use crate::config::{DEFAULT_BULK_CHUNK_SIZE, DEFAULT_PER_ROW_CHUNK_SIZE, Located, MAX_CHUNK_SIZE};
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

pub fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let config = context.config;
    let settings = [&config.settings.per_row_chunk_size, &config.settings.bulk_chunk_size];
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
                    "use a chunk size from 1 to {MAX_CHUNK_SIZE}; the defaults are {DEFAULT_PER_ROW_CHUNK_SIZE} (per_row) \
                     and {DEFAULT_BULK_CHUNK_SIZE} (bulk)"
                )),
            );
        }
    }
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
            vec![(Code::InvalidChunkSize, 3), (Code::InvalidChunkSize, 7), (Code::InvalidChunkSize, 8)]
        );
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn a_negative_size_is_an_invalid_value() {
        let config = CONFIG.replace("bulk_chunk_size = 0", "bulk_chunk_size = -5");
        assert!(fixture::codes(&config).contains(&(Code::InvalidValue, 3)));
    }
}
