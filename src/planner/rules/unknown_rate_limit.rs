//! `unknown-rate-limit`: `rate_limit` names an option that `[options]` does not declare, so an
//! operator could never tune it (and a typo would silently mean unthrottled).

use crate::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let options = &context.config.options;
    for model in context.config.models.values() {
        let Some(rate_limit) = &model.rate_limit else {
            continue;
        };
        if options.contains_key(&rate_limit.value) || context.config.unreadable_options.contains(&rate_limit.value) {
            continue;
        }
        let help = did_you_mean(&rate_limit.value, options.keys().map(String::as_str))
            .unwrap_or_else(|| format!("declare it under [options], for example \"{}\" = 500", rate_limit.value));
        diagnostics.push(
            Diagnostic::new(
                Code::UnknownRateLimit,
                rate_limit.location.clone(),
                format!(
                    "model `{}` uses rate limit `{}`, which is not declared in [options]",
                    model.name.value, rate_limit.value
                ),
            )
            .label("no such option")
            .help(help),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const CONFIG: &str = r#"
[options]
"deletions.group.rows_per_second" = 500

[models.group]
table = "group"
rate_limit = "deletions.groups.rows_per_second"

[models.event]
table = "event"
rate_limit = "deletions.group.rows_per_second"
"#;

    #[test]
    fn reports_the_undeclared_option_with_the_nearest_name() {
        assert_eq!(fixture::codes(CONFIG), vec![(Code::UnknownRateLimit, 7)]);
        insta::assert_snapshot!(fixture::human(CONFIG));
    }

    #[test]
    fn an_option_declared_with_a_bad_value_is_not_also_undeclared() {
        let config = "[options]\nrate = nan\n\n[models.group]\ntable = \"group\"\nrate_limit = \"rate\"\n";
        let codes: Vec<Code> = fixture::codes(config).into_iter().map(|(code, _)| code).collect();
        assert!(!codes.contains(&Code::UnknownRateLimit), "{codes:?}");
        assert!(!codes.is_empty(), "the value itself is reported");
    }
}
