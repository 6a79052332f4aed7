//! Keys: the values of a key column a statement matches rows by, bound as one parameter (a JSON
//! array on SQLite, an array on PostgreSQL) so that a statement's text is the same whatever
//! the chunk holds.
//!
//! One rule turns a key's text (an id on the command line, a key read back from the database)
//! into a bound value, by the type of the column it is compared with ([`Keys::parse`]):
//! - an integer column takes the decimal form of a 64-bit integer, surrounding whitespace and
//!   leading zeros allowed, as the databases' own casts read it (`" 007"` is 7);
//! - a SQLite column declared without a type keeps each value as it was inserted: a key that reads
//!   exactly as an integer (`7`, not `007` or `+7`) is bound as the integer, any other as text, so
//!   that each matches only its own row;
//! - any other column takes the text as it is.
//!
//! A key of several columns (a composite key) is read back as one text, the JSON array of its
//! columns' values as texts (`["7","a"]`), and each part follows the rule of its column's type.

use super::values::{KeyType, SqlValue};

/// The keys of one chunk (or the root ids), typed as their column binds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Keys {
    /// Keys of an integer column.
    Integers(Vec<i64>),
    /// Keys of a text column, or of another type that travels as text and is cast to it
    /// (`uuid`, ...).
    Texts(Vec<String>),
    /// Keys of a SQLite column without a declared type (see the module's rule).
    Untyped(Vec<String>),
    /// Keys of several columns of the `types`: each key the texts of its parts, in column order.
    Tuples {
        /// The type of each column.
        types: Vec<KeyType>,
        /// The keys.
        keys: Vec<Vec<String>>,
    },
}

impl Keys {
    /// `keys` as a column of `key_type` binds them; the first key an integer column cannot take
    /// is the error.
    pub fn parse(key_type: &KeyType, keys: Vec<String>) -> Result<Self, String> {
        match key_type {
            KeyType::Integer => {
                keys.into_iter().map(|key| integer(&key).ok_or(key)).collect::<Result<Vec<_>, _>>().map(Keys::Integers)
            }
            KeyType::Untyped => Ok(Keys::Untyped(keys)),
            KeyType::Text | KeyType::Other(_) => Ok(Keys::Texts(keys)),
        }
    }

    /// Keys of the columns of `types`: [`Keys::parse`] for one column; for several, each key the
    /// JSON array of its parts as texts (`["7","a"]`), each part a key of its column's type. The
    /// first key that does not fit is the error.
    pub fn parse_for(types: &[KeyType], keys: Vec<String>) -> Result<Self, String> {
        let [key_type] = types else {
            let keys = keys
                .into_iter()
                .map(|key| match serde_json::from_str::<Vec<String>>(&key) {
                    Ok(parts) if parts.len() == types.len() && parts_fit(types, &parts) => Ok(parts),
                    _ => Err(key),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Keys::Tuples { types: types.to_vec(), keys });
        };
        Self::parse(key_type, keys)
    }

    /// [`Keys::parse`] for keys read back from the column: a key the type refuses cannot come
    /// from it, and bound as text (with the others) it matches nothing.
    pub fn read(key_type: &KeyType, keys: Vec<String>) -> Self {
        Self::parse(key_type, keys.clone()).unwrap_or(Keys::Texts(keys))
    }

    /// No keys, as the columns of `types` bind them.
    pub fn none(types: &[KeyType]) -> Self {
        Self::parse_for(types, Vec::new()).unwrap_or(Keys::Texts(Vec::new()))
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        match self {
            Keys::Integers(list) => list.len(),
            Keys::Texts(list) | Keys::Untyped(list) => list.len(),
            Keys::Tuples { keys, .. } => keys.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys from `start` on, at most `count` of them.
    pub fn slice(&self, start: usize, count: usize) -> Self {
        let range = |len: usize| start.min(len)..start.saturating_add(count).min(len);
        match self {
            Keys::Integers(list) => Keys::Integers(list[range(list.len())].to_vec()),
            Keys::Texts(list) => Keys::Texts(list[range(list.len())].to_vec()),
            Keys::Untyped(list) => Keys::Untyped(list[range(list.len())].to_vec()),
            Keys::Tuples { types, keys } => {
                Keys::Tuples { types: types.clone(), keys: keys[range(keys.len())].to_vec() }
            }
        }
    }

    /// The keys as text, as the database writes them (a composite key as its JSON array of
    /// texts).
    pub fn texts(&self) -> Vec<String> {
        match self {
            Keys::Integers(list) => list.iter().map(i64::to_string).collect(),
            Keys::Texts(list) | Keys::Untyped(list) => list.clone(),
            Keys::Tuples { keys, .. } => keys.iter().map(|parts| serde_json::json!(parts).to_string()).collect(),
        }
    }

    /// The keys as one JSON array: numbers for integers (and, for an untyped column, the keys
    /// that read exactly as one), strings otherwise. How SQLite binds them.
    pub fn json(&self) -> String {
        let values: Vec<serde_json::Value> = match self {
            Keys::Integers(list) => list.iter().map(|key| (*key).into()).collect(),
            Keys::Texts(list) => list.iter().map(|key| key.as_str().into()).collect(),
            Keys::Untyped(list) => list.iter().map(|key| key_json(key)).collect(),
            Keys::Tuples { types, keys } => keys
                .iter()
                .map(|parts| types.iter().zip(parts).map(|(key_type, part)| typed_key_json(key_type, part)).collect())
                .collect(),
        };
        serde_json::Value::from(values).to_string()
    }
}

/// One key as a column of `key_type` binds it, by the module's rule; one an integer column
/// refuses is bound as text, and matches nothing.
pub(crate) fn key_value(key_type: &KeyType, key: &str) -> SqlValue {
    match integer_key(key_type, key) {
        Some(number) => SqlValue::Integer(number),
        None => SqlValue::Text(key.to_owned()),
    }
}

/// One key as a JSON value of a record that [`crate::db::Backend::json_key_field`] reads as a
/// key of `key_type`: a number where [`key_value`] binds an integer.
pub(crate) fn typed_key_json(key_type: &KeyType, key: &str) -> serde_json::Value {
    match integer_key(key_type, key) {
        Some(number) => number.into(),
        None => key.into(),
    }
}

/// Whether each part fits its column's type (an integer column's part reads as an integer).
fn parts_fit(types: &[KeyType], parts: &[String]) -> bool {
    types.iter().zip(parts).all(|(key_type, part)| *key_type != KeyType::Integer || integer(part).is_some())
}

fn integer_key(key_type: &KeyType, key: &str) -> Option<i64> {
    match key_type {
        KeyType::Integer => integer(key),
        KeyType::Untyped => exact_integer(key),
        KeyType::Text | KeyType::Other(_) => None,
    }
}

/// `key` as an integer column reads it (the module's rule): the decimal form of a 64-bit integer,
/// surrounding whitespace and leading zeros allowed.
fn integer(key: &str) -> Option<i64> {
    key.trim().parse().ok()
}

/// `key` as an integer when it reads exactly as one: `7`, not `007` or `+7`.
pub(super) fn exact_integer(key: &str) -> Option<i64> {
    key.parse().ok().filter(|number: &i64| number.to_string() == key)
}

/// A key as a JSON value: a number when it reads exactly as an integer, else a string.
pub(super) fn key_json(key: &str) -> serde_json::Value {
    exact_integer(key).map_or_else(|| key.into(), serde_json::Value::from)
}

#[cfg(test)]
mod tests {
    use super::{KeyType, Keys};

    #[test]
    fn one_rule_by_the_column_type() {
        let keys = |texts: &[&str]| texts.iter().map(|text| text.to_string()).collect::<Vec<_>>();
        assert_eq!(Keys::parse(&KeyType::Integer, keys(&[" 7", "007", "-3"])), Ok(Keys::Integers(vec![7, 7, -3])));
        assert_eq!(Keys::parse(&KeyType::Integer, keys(&["7", "x"])), Err("x".to_owned()));
        assert_eq!(Keys::parse(&KeyType::Untyped, keys(&["007", "7"])).unwrap().json(), r#"["007",7]"#);
        assert_eq!(Keys::parse(&KeyType::Text, keys(&[" 7"])), Ok(Keys::Texts(keys(&[" 7"]))));
    }

    #[test]
    fn composite_keys_are_json_arrays_of_their_parts() {
        let types = [KeyType::Integer, KeyType::Text];
        let keys = Keys::parse_for(&types, vec![r#"["7","a"]"#.to_owned()]).unwrap();
        assert_eq!(keys.json(), r#"[[7,"a"]]"#);
        assert_eq!(keys.texts(), vec![r#"["7","a"]"#.to_owned()]);
        assert_eq!(Keys::parse_for(&types, vec![r#"["x","a"]"#.to_owned()]), Err(r#"["x","a"]"#.to_owned()));
        assert_eq!(Keys::parse_for(&types, vec!["7".to_owned()]), Err("7".to_owned()));
    }

    #[test]
    fn slices_stay_inside_the_keys() {
        let keys = Keys::Integers(vec![1, 2, 3]);
        assert_eq!(keys.slice(1, 5), Keys::Integers(vec![2, 3]));
        assert_eq!(keys.slice(7, 2), Keys::Integers(Vec::new()));
        assert_eq!(keys.slice(0, 2).len(), 2);
    }
}
