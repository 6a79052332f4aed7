//! A config value with the place it was written.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use crate::diagnostic::Location;

/// A config value with the place it was written, so later checks can point at it.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value itself.
    pub value: T,
    /// Where the value was written.
    pub location: Location,
}

impl<T> Located<T> {
    /// A `value` written at `location`.
    pub fn new(value: T, location: Location) -> Self {
        Self { value, location }
    }
}

impl<T: Serialize> Serialize for Located<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for Located<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}
