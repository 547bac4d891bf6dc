//! The JSON Schema of the configuration file (what `mcp-gateway --print-config-schema`
//! prints, for editors and CI linters), generated from the types of [`super::file`] that
//! the reader deserializes into.

use std::sync::LazyLock;

use serde_json::Value;

use super::file::ConfigFile;

/// The JSON Schema of the configuration file (2020-12).
pub fn schema() -> Value {
    let mut schema = generator().into_root_schema_for::<ConfigFile>().to_value();
    without_null(&mut schema);
    schema
}

/// [`schema`], made once: the reader walks it for the keys each object may hold.
pub(super) static SCHEMA: LazyLock<Value> = LazyLock::new(schema);

/// The generator: JSON Schema 2020-12.
pub(super) fn generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12().into_generator()
}

/// `schema` without the `null` an `Option` member gets: leaving a member out is how the
/// file says "default", and the reader refuses `null` for some of them.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            // An inline `Option`'s schema names `null` among its values too.
            if let Some(Value::Array(values)) = obj.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    obj.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any)) = obj.get("anyOf") {
                let null = serde_json::json!({"type": "null"});
                let rest: Vec<Value> = any.iter().filter(|s| **s != null).cloned().collect();
                if let ([one], true) = (rest.as_slice(), rest.len() < any.len()) {
                    let one = one.clone();
                    obj.remove("anyOf");
                    if let Value::Object(one) = one {
                        obj.extend(one);
                    }
                }
            }
            obj.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}
