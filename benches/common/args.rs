//! The benches' own arguments, after cargo's (its `--bench` is ignored).

/// The number after `name` among the arguments: `--rows 1_000_000` or `--rows=1_000_000`.
pub fn number_argument(name: &str) -> Option<u64> {
    let value = argument(name)?;
    Some(value.replace(['_', ','], "").parse().unwrap_or_else(|_| panic!("{name} takes a number, not `{value}`")))
}

/// The comma-separated words after `name`: `--methods loop,cascade` or `--methods=loop,cascade`.
#[allow(dead_code)] // not every bench takes a list
pub fn list_argument(name: &str) -> Option<Vec<String>> {
    Some(argument(name)?.split(',').map(|word| word.trim().to_owned()).collect())
}

/// The word after `name`: `--baseline /tmp/cascade` or `--baseline=/tmp/cascade`.
#[allow(dead_code)] // not every bench takes one
pub fn text_argument(name: &str) -> Option<String> {
    argument(name)
}

fn argument(name: &str) -> Option<String> {
    let arguments: Vec<String> = std::env::args().collect();
    let joined = arguments.iter().find_map(|a| a.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')));
    joined
        .or_else(|| arguments.iter().position(|a| a == name).and_then(|i| arguments.get(i + 1)).map(String::as_str))
        .map(str::to_owned)
}
