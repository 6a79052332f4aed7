//! One file per rule, registered by its line in the code registry (`diagnostic::code`). Each rule
//! looks at the whole config and pushes every problem it finds; none stops the others. Each file
//! carries its own fixtures and snapshot tests.

pub(crate) mod peer;

pub(crate) use unregistered_reference::{check_deleted_tables, check_every_model};

use super::Context;
use crate::diagnostic::Diagnostic;

pub(super) type Rule = fn(&Context<'_>, &mut Vec<Diagnostic>);

/// Declares every rule's module and lists the rules in the order of the code registry
/// (`diagnostic::code`), which names each rule's file.
macro_rules! register {
    ($($rule:ident)*) => {
        $(mod $rule;)*

        /// Every rule; those that need the real schema do nothing without one.
        pub(super) const ALL: &[Rule] = &[$($rule::check,)*];
    };
}

crate::diagnostic::with_rules!(register);
