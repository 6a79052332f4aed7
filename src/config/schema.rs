use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::Value;

use super::Config;

/// The JSON Schema (draft-07, which taplo and Even Better TOML read) of one config file.
pub fn json_schema() -> String {
    let schema = SchemaSettings::draft07()
        .with_transform(RecursiveTransform(without_null))
        .into_generator()
        .into_root_schema_for::<Config>();
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serialises");
    text.push('\n');
    text
}

/// TOML has no null: an optional key is simply absent, so `Option`'s null alternative is dropped.
fn without_null(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let null = serde_json::json!({ "type": "null" });
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(alternatives)) = object.get_mut("anyOf") {
        alternatives.retain(|alternative| *alternative != null);
        if let [Value::Object(only)] = alternatives.as_slice() {
            let only = only.clone();
            object.remove("anyOf");
            object.extend(only);
        }
    }
}
