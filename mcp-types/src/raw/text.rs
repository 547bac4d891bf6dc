//! Helpers on raw JSON text: reading a string or an array's items, quick searches that
//! decide whether a value needs reading at all, and writing text that is JSON by
//! construction without checking it again.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, MapDeserializer};
use serde::de::IntoDeserializer;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use super::{CowStr, Error};

/// A raw value's string, if it is a JSON string (borrowed when it has no escapes).
pub fn as_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    // Most strings a relay reads (names, versions) hold nothing to unescape: what is
    // between the quotes is the value, and serde's reader is not needed to say so.
    if let Some(inner) = text[1..].strip_suffix('"') {
        if is_plain(inner) {
            return Some(Cow::Borrowed(inner));
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_str(CowStr).ok()
}

/// A value written as raw JSON (`null` for what cannot be written: a map whose keys are
/// not strings, a failing `Serialize`).
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// A string as a raw JSON string literal.
pub fn string(s: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(s).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The items of a raw JSON array, each as its raw text.
pub fn array(raw: &RawValue) -> Result<Vec<&RawValue>, Error> {
    serde_json::from_str(raw.get())
}

/// Items written back as a raw JSON array: each exactly as given.
pub fn to_array(items: &[&RawValue]) -> Box<RawValue> {
    serde_json::value::to_raw_value(items).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// Whether a raw value is a JSON object (by its first character; raw values are valid JSON).
pub fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Whether a raw value is a JSON array.
pub fn is_array(raw: &RawValue) -> bool {
    raw.get().starts_with('[')
}

/// Whether `text` may contain member `key` at any depth: a quick search for `"key"` that
/// never misses one written without escapes (it may find the key as a string value, or
/// nested). A key written with escapes (`"result\u0054ype"`) is not found: a caller that
/// must not miss one treats text holding `\u` or `\/` as containing everything (see
/// [`has_key_escapes`]).
pub fn may_contain_key(text: &str, key: &str) -> bool {
    let (hay, needle) = (text.as_bytes(), key.as_bytes());
    if needle.is_empty() {
        return text.contains("\"\"");
    }
    memchr::memmem::find_iter(hay, needle).any(|i| {
        let end = i + needle.len();
        i > 0 && hay[i - 1] == b'"' && hay.get(end) == Some(&b'"')
    })
}

/// [`may_contain_key`] for one key, its searcher built once: for the names a relay looks
/// for in every message (building a searcher costs more than searching a short one).
/// Keep one in a `static` (`LazyLock`).
#[derive(Debug, Clone)]
pub struct KeyFinder {
    quoted: memchr::memmem::Finder<'static>,
}

impl KeyFinder {
    /// A searcher for member `key`.
    pub fn new(key: &str) -> Self {
        let quoted = format!("\"{key}\"");
        KeyFinder {
            quoted: memchr::memmem::Finder::new(quoted.as_bytes()).into_owned(),
        }
    }

    /// Whether `text` may contain the key, as [`may_contain_key`] says.
    pub fn may_be_in(&self, text: &str) -> bool {
        self.quoted.find(text.as_bytes()).is_some()
    }
}

/// Whether `text` holds an escape that could spell a member name differently from its
/// plain form (`\u…`, `\/`).
pub fn has_key_escapes(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\\', bytes).any(|i| matches!(bytes.get(i + 1), Some(b'u' | b'/')))
}

/// The value with the whitespace between its tokens removed; strings and numbers keep
/// their text and objects their key order. Borrowed when there was no such whitespace.
pub fn compact(raw: &RawValue) -> Cow<'_, RawValue> {
    let text = raw.get().as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            // Whitespace inside a string is part of it (raw newlines cannot occur there).
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            in_string = b == b'"';
            out.push(b);
        }
    }
    if out.len() == text.len() {
        return Cow::Borrowed(raw);
    }
    // Only ASCII whitespace was removed from valid JSON, so both checks below hold.
    String::from_utf8(out)
        .ok()
        .and_then(|s| RawValue::from_string(s).ok())
        .map_or(Cow::Borrowed(raw), Cow::Owned)
}

/// Reads the items of a raw array one by one without collecting them (for a caller that
/// stops early).
pub fn for_each_item(raw: &RawValue, mut f: impl FnMut(&RawValue) -> bool) -> Result<(), Error> {
    struct Each<'f, F>(&'f mut F);
    impl<'de, F: FnMut(&RawValue) -> bool> Visitor<'de> for Each<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut going = true;
            while let Some(item) = seq.next_element::<&'de RawValue>()? {
                if going {
                    going = (self.0)(item);
                }
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.deserialize_seq(Each(&mut f))?;
    de.end()
}

/// Appends `s` as a JSON string literal: as it is between quotes when nothing in it needs
/// escaping (the common case: names, methods, keys), else escaped by serde_json.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    if is_plain(s) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, s).is_err() {
        // Writing a string into a Vec cannot fail; keep the output JSON regardless.
        out.extend_from_slice(b"\"\"");
    }
}

/// [`write_str`] into a `String`.
pub(crate) fn push_str(out: &mut String, s: &str) {
    if is_plain(s) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
    }
}

/// Whether `s` is its own JSON string body (nothing to escape).
fn is_plain(s: &str) -> bool {
    // No early exit inside a chunk, so the compiler can test many bytes at once.
    s.as_bytes().chunks(32).all(|chunk| {
        !chunk.iter().fold(false, |bad, &b| {
            bad | (b < 0x20) | (b == b'"') | (b == b'\\')
        })
    })
}

/// `object` (a JSON object's raw text) with one member added at its end, everything
/// else as it was, without reading the object: for a caller that knows the key is absent.
/// `None` when `object` is not an object.
pub fn append_member(object: &RawValue, key: &str, value: &RawValue) -> Option<Box<RawValue>> {
    let text = object.get().trim_end();
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut out = String::with_capacity(text.len() + key.len() + value.get().len() + 4);
    out.push('{');
    out.push_str(inner);
    if !inner.trim().is_empty() {
        out.push(',');
    }
    push_str(&mut out, key);
    out.push(':');
    out.push_str(value.get());
    out.push('}');
    Some(prewritten(out))
}

/// `object` without its first member, when that member is `"key":value` written exactly
/// so (no white space, `value` as given), everything after it as it was: a cut without
/// reading the object. `None` when the object does not begin that way.
pub fn without_leading_member(object: &RawValue, key: &str, value: &str) -> Option<Box<RawValue>> {
    let text = object.get();
    let rest = text
        .strip_prefix("{\"")?
        .strip_prefix(key)?
        .strip_prefix("\":")?
        .strip_prefix(value)?;
    if let Some(after) = rest.strip_prefix(',') {
        let mut out = String::with_capacity(after.len() + 1);
        out.push('{');
        out.push_str(after);
        return Some(prewritten(out));
    }
    rest.starts_with('}').then(|| prewritten("{}".to_owned()))
}

/// Text that is JSON by construction (written here from raw values and escaped strings),
/// made a [`RawValue`] without being read again (checking it would cost a full scan) and
/// without a copy: the string's buffer becomes the value's.
pub(crate) fn prewritten(text: String) -> Box<RawValue> {
    Box::<RawValue>::deserialize(Prewritten(text)).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// A span of text already checked to be one JSON value (by [`scan`](super::scan)), as a
/// [`RawValue`] borrowing it: no second check, no copy. `None` should serde_json's
/// protocol ever change: the caller then reads the text with serde_json.
pub(crate) fn prewritten_ref(text: &str) -> Option<&RawValue> {
    <&RawValue>::deserialize(Prewritten(
        BorrowedStrDeserializer::<serde::de::value::Error>::new(text),
    ))
    .ok()
}

/// Hands serde_json's raw value decoder a string as the value it decoded: a newtype
/// struct of serde_json's private name holding a one-entry map, name to text. That is
/// serde_json's own protocol for raw values, which no public constructor offers for text
/// already known to be JSON. The test `prewritten_text_is_kept_verbatim` fails should
/// serde_json ever change it.
struct Prewritten<T>(T);

const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl<'de, T: IntoDeserializer<'de, serde::de::value::Error>> Deserializer<'de> for Prewritten<T> {
    type Error = serde::de::value::Error;

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name != RAW_VALUE_TOKEN {
            return Err(serde::de::Error::custom("not a raw value"));
        }
        visitor.visit_map(MapDeserializer::new(std::iter::once((
            RAW_VALUE_TOKEN,
            self.0,
        ))))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only a raw value"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_string_is_read_as_serde_reads_it_borrowed_when_it_has_no_escapes() {
        for text in [
            r#""""#,
            r#""2026-07-28""#,
            r#""é漢字""#,
            r#""a\"b""#,
            r#""\u00e9\n""#,
        ] {
            let raw = super::super::prewritten(text.to_owned());
            let got = super::as_str(&raw);
            assert_eq!(
                got.as_deref(),
                serde_json::from_str::<String>(text).ok().as_deref()
            );
            let borrowed = matches!(got, Some(super::Cow::Borrowed(_)));
            assert_eq!(borrowed, !text.contains('\\'), "{text}");
        }
        for text in ["1", "null", r#"["a"]"#] {
            assert!(super::as_str(&super::super::prewritten(text.to_owned())).is_none());
        }
    }

    #[test]
    fn plain_strings_are_told_from_those_needing_escapes_anywhere_in_them() {
        let long = "é".repeat(40);
        assert!(is_plain(""));
        assert!(is_plain(&long));
        for bad in ['"', '\\', '\n', '\u{1f}'] {
            for at in [0, 31, 32, 70] {
                let mut s = long.chars().take(at).collect::<String>();
                s.push(bad);
                s.push_str("tail");
                assert!(!is_plain(&s), "{bad:?} at {at}");
                let mut out = String::new();
                push_str(&mut out, &s);
                assert_eq!(
                    serde_json::from_str::<String>(&out).ok().as_deref(),
                    Some(&*s)
                );
            }
        }
    }

    use super::*;

    #[test]
    fn prewritten_spans_are_borrowed_verbatim() {
        let text = r#"{"b":1.10000000000000000000001,"a":[true,null,"\u0041"]}"#;
        let raw = prewritten_ref(text).expect("serde_json's raw value protocol");
        assert_eq!(raw.get(), text);
        assert!(std::ptr::eq(raw.get(), text), "borrowed, not copied");
    }

    #[test]
    fn prewritten_text_is_kept_verbatim() {
        let text = r#"{"b":1.10000000000000000000001,"a":[true,null,"\u0041"]}"#;
        let raw = prewritten(text.to_owned());
        assert_eq!(raw.get(), text);
        // And goes out verbatim inside other values.
        assert_eq!(
            serde_json::to_string(&[&*raw]).expect("json"),
            format!("[{text}]")
        );
    }

    #[test]
    fn a_leading_member_is_cut_and_nothing_else_moves() {
        let raw = |t: &str| RawValue::from_string(t.into()).expect("json");
        let cut = |t: &str| without_leading_member(&raw(t), "resultType", r#""complete""#);
        assert_eq!(
            cut(r#"{"resultType":"complete","n":1.50,"z":{"b":1,"a":2}}"#)
                .map(|r| r.get().to_owned()),
            Some(r#"{"n":1.50,"z":{"b":1,"a":2}}"#.to_owned())
        );
        assert_eq!(
            cut(r#"{"resultType":"complete"}"#).map(|r| r.get().to_owned()),
            Some("{}".into())
        );
        for kept in [
            r#"{"n":1,"resultType":"complete"}"#,
            r#"{ "resultType":"complete","n":1}"#,
            r#"{"resultType":"completed","n":1}"#,
            r#"{"resultType":"task","n":1}"#,
            r#"{"resultTypes":"complete"}"#,
        ] {
            assert!(cut(kept).is_none(), "{kept}");
        }
    }

    #[test]
    fn a_member_is_appended_and_nothing_else_moves() {
        let one = RawValue::from_string("1.50".into()).expect("json");
        let obj = RawValue::from_string(r#"{"z":1e2, "a":[{}]}"#.into()).expect("json");
        let out = append_member(&obj, "k", &one).expect("an object");
        assert_eq!(out.get(), r#"{"z":1e2, "a":[{}],"k":1.50}"#);
        let empty = RawValue::from_string("{ }".into()).expect("json");
        assert_eq!(
            append_member(&empty, "k", &one).expect("an object").get(),
            r#"{ "k":1.50}"#
        );
        assert!(append_member(&one, "k", &one).is_none());
    }

    #[test]
    fn strings_are_written_as_json() {
        for s in ["tools/call", "", "a\"b", "back\\slash", "tab\there", "é✓"] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            let back: String = serde_json::from_slice(&out).expect("valid JSON string");
            assert_eq!(back, s);
        }
        let mut out = Vec::new();
        write_str(&mut out, "plain");
        assert_eq!(out, br#""plain""#);
    }
}
