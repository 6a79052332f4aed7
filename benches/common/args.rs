//! The benches' own arguments, after cargo's (its `--bench` is ignored).

/// The number after `name` among the arguments: `--rows 1_000_000` or `--rows=1_000_000`.
pub fn number_argument(name: &str) -> Option<u64> {
    let arguments: Vec<String> = std::env::args().collect();
    let joined = arguments.iter().find_map(|a| a.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')));
    let value = joined
        .or_else(|| arguments.iter().position(|a| a == name).and_then(|i| arguments.get(i + 1)).map(String::as_str))?;
    Some(value.replace(['_', ','], "").parse().unwrap_or_else(|_| panic!("{name} takes a number, not `{value}`")))
}
