//! Request ids, kept exactly as they came.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Number;

/// A request id: a string or a number, kept exactly as received (a number keeps its
/// text, so an id too large for any Rust integer is still echoed byte for byte).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id.
    Number(IdNumber),
    /// A string id.
    String(String),
}

/// A numeric request id exactly as written: an integer that an `i64` writes back the
/// same is held as one (no allocation, cheap to copy); any other number (too large, a
/// fraction, an exponent) as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdNumber(NumberText);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum NumberText {
    Integer(i64),
    Text(Box<str>),
}

impl IdNumber {
    /// A number id from its JSON text (taken as written; the caller has checked it is a
    /// JSON number).
    pub fn from_text(text: &str) -> Self {
        match plain_integer(text) {
            Some(n) => IdNumber(NumberText::Integer(n)),
            None => IdNumber(NumberText::Text(text.into())),
        }
    }

    /// The id as an `i64`, when it is a plain integer.
    pub fn as_i64(&self) -> Option<i64> {
        match self.0 {
            NumberText::Integer(n) => Some(n),
            NumberText::Text(_) => None,
        }
    }

    /// Appends the id's JSON text to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match &self.0 {
            NumberText::Integer(n) => {
                out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes())
            }
            NumberText::Text(t) => out.extend_from_slice(t.as_bytes()),
        }
    }
}

impl From<i64> for IdNumber {
    fn from(n: i64) -> Self {
        IdNumber(NumberText::Integer(n))
    }
}

impl fmt::Display for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            NumberText::Integer(n) => write!(f, "{n}"),
            NumberText::Text(t) => f.write_str(t),
        }
    }
}

impl Default for RequestId {
    fn default() -> Self {
        RequestId::from(0)
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => n.fmt(f),
            RequestId::String(s) => f.write_str(&serde_json::to_string(s).unwrap_or_default()),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::String(t) => s.serialize_str(t),
            RequestId::Number(IdNumber(NumberText::Integer(n))) => s.serialize_i64(*n),
            RequestId::Number(IdNumber(NumberText::Text(t))) => {
                match RawValue::from_string(t.to_string()) {
                    Ok(raw) => raw.serialize(s),
                    Err(e) => Err(serde::ser::Error::custom(e)),
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or number id")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                Ok(RequestId::Number(IdNumber::from_text(&v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::from(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                Number::from_f64(v)
                    .map(|n| RequestId::Number(IdNumber::from_text(&n.to_string())))
                    .ok_or_else(|| E::custom("a non-finite number cannot be an id"))
            }
        }
        d.deserialize_any(V)
    }
}

/// `text` as an `i64` when writing that `i64` gives `text` back exactly: an optional
/// minus, then digits without a leading zero (or one zero), and no more than 18 of them.
/// One pass over the bytes: every id of every relayed message is read here.
fn plain_integer(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        // A leading zero (and so `-0`) is not how an i64 is written.
        [b'0', ..] => return None,
        _ if digits.len() > 18 => return None,
        _ => {}
    }
    // Eighteen digits at most always fit: no overflow to check.
    let mut n: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + i64::from(d);
    }
    Some(if negative { -n } else { n })
}

/// Reads an id from its raw JSON text, numbers exactly.
pub(super) fn id_from_raw(raw: &RawValue) -> Result<Option<RequestId>, String> {
    let text = raw.get().trim();
    match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str(text)
            .map(|s| Some(RequestId::String(s)))
            .map_err(|e| e.to_string()),
        Some(b'n') if text == "null" => Ok(None),
        Some(b'-' | b'0'..=b'9') => Ok(Some(RequestId::Number(IdNumber::from_text(text)))),
        _ => Err(format!("an id must be a string or a number, not {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_ids_are_written_back_as_they_were_written() {
        for text in [
            "0",
            "-1",
            "42",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "123456789012345678901234567890",
            "1.0",
            "1e3",
            "-0",
        ] {
            let mut out = Vec::new();
            IdNumber::from_text(text).write_to(&mut out);
            assert_eq!(String::from_utf8_lossy(&out), text);
        }
    }

    #[test]
    fn plain_integer_ids_are_read_as_their_value() {
        for (text, n) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("-1", Some(-1)),
            ("999999999999999999", Some(999_999_999_999_999_999)),
            ("-999999999999999999", Some(-999_999_999_999_999_999)),
            ("9223372036854775807", None),
            ("-0", None),
            ("-", None),
            ("", None),
            ("01", None),
            ("-01", None),
            ("1.0", None),
            ("1e3", None),
        ] {
            assert_eq!(IdNumber::from_text(text).as_i64(), n, "{text}");
        }
    }
}
