//! [`RawJson`]: a JSON value kept as the text it came as.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON value kept as the text it came as, shared (a copy costs a reference count): for
/// what a relay passes on exactly and rarely reads, such as a tool's schemas. It is written
/// back byte for byte (key order, number literals, unknown keywords), and costs its text
/// alone: decoded, a small JSON Schema takes several times its length, for every tool.
///
/// Read it with [`RawJson::decode`] (or [`RawJson::to_value`]) where it is needed.
/// Two are equal ([`PartialEq`]) when they mean the same value, as two [`Value`]s are
/// (the same text is, at once; `{"a":1,"b":2}` and `{"b":2,"a":1}` are too): what
/// equality of the decoded field meant. [`RawJson::get`] tells the texts apart.
#[derive(Clone)]
pub struct RawJson(Arc<RawValue>);

impl RawJson {
    /// The text, as it came (or as [`serde_json`] wrote a value made here).
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The text as a [`RawValue`].
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// The value, decoded as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// The value, decoded. Fails only on a value nested deeper than the reader's limit.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.decode()
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> Self {
        RawJson(Arc::from(raw))
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        // A `Value` always encodes (its map keys are strings).
        let raw =
            serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        raw.into()
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        RawJson::from(&value)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
            || matches!((self.to_value(), other.to_value()), (Ok(a), Ok(b)) if a == b)
    }
}

impl PartialEq<Value> for RawJson {
    fn eq(&self, other: &Value) -> bool {
        self.to_value().is_ok_and(|v| v == *other)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_kept_and_written_back_exactly() {
        let text = r#"{"z":1.50,"a":[1e400,{"b":null}],"x-custom":true}"#;
        let raw: RawJson = serde_json::from_str(text).expect("json");
        assert_eq!(raw.get(), text);
        #[derive(Serialize)]
        struct Holder {
            s: RawJson,
        }
        assert_eq!(
            serde_json::to_string(&Holder { s: raw }).expect("json"),
            format!(r#"{{"s":{text}}}"#)
        );
    }

    #[test]
    fn equal_texts_are_equal_and_values_compare_by_meaning() {
        let a: RawJson = serde_json::from_str(r#"{"a":1,"b":2}"#).expect("json");
        let b: RawJson = serde_json::from_str(r#"{"b":2,"a":1}"#).expect("json");
        assert_ne!(a.get(), b.get());
        assert_eq!(a, b, "the same value");
        assert_ne!(a, RawJson::from(json!({"a": 1, "b": 3})));
        assert_eq!(a, json!({"b": 2, "a": 1}));
        assert_eq!(b, json!({"a": 1, "b": 2}));
        assert_eq!(
            RawJson::from(json!({"a": 1})),
            RawJson::from(json!({"a": 1}))
        );
        assert_eq!(b.to_value().expect("decodes"), json!({"a": 1, "b": 2}));
    }
}
