//! Exact JSON for relays: an object read one level at a time.
//!
//! [`RawObject`] holds an object's members in the order they arrived, each value as the
//! raw JSON text it came in ([`RawValue`]). Reading a member's string or number parses
//! only that member; editing replaces only the members edited. Writing the object back
//! gives every untouched member byte for byte: numbers keep their literals (a 30-digit
//! integer stays 30 digits), objects keep their key order, strings their escapes.
//!
//! This is what lets the gateway route on `params.name` and rewrite a few `_meta` keys
//! without decoding, and so without changing, what a host or an upstream sent.
//!
//! ```
//! use mcp_types::raw::RawObject;
//!
//! let text = r#"{"name":"a","arguments":{"n":123456789012345678901234567890,"z":{"b":1,"a":2}}}"#;
//! let mut params = RawObject::parse(text).unwrap();
//! assert_eq!(params.get_str("name").as_deref(), Some("a"));
//! params.insert_str("name", "b");
//! assert_eq!(
//!     params.to_raw().get(),
//!     r#"{"name":"b","arguments":{"n":123456789012345678901234567890,"z":{"b":1,"a":2}}}"#
//! );
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

mod exact;
mod json;
mod layout;
pub(crate) mod scan;
mod text;
mod valid;
pub use exact::Exact;
pub use json::RawJson;
pub(crate) use layout::read as read_laid_out;
pub use layout::{BoundLayout, ParamsLayout};
pub use text::*;
pub use valid::{for_each_member, strings, Strings, Unterminated};

/// A small deterministic generator for the readers' randomized tests.
#[cfg(test)]
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// One member: its key and its value's raw text.
pub type Member<'a> = (Cow<'a, str>, Cow<'a, RawValue>);

/// A JSON object whose member values stay raw JSON text, in arrival order.
///
/// Borrows from the text it was parsed from where it can (`'a`); members inserted later
/// are owned. Duplicate keys are kept as they came; lookups see the last one, as a
/// decoder that keeps the last value would.
#[derive(Default)]
pub struct RawObject<'a> {
    members: Vec<Member<'a>>,
    /// The raw value this was read from, while no member has changed: written back as it
    /// is, without a copy ([`RawObject::to_cow`]).
    source: Option<&'a RawValue>,
}

impl Clone for RawObject<'_> {
    /// A copy with room for a few more members: a copy is made to be edited (a relay's
    /// hop adds `_meta` or a task), and growing the copy would allocate a second time.
    fn clone(&self) -> Self {
        let mut members = Vec::with_capacity(self.members.len() + 2);
        members.extend(self.members.iter().cloned());
        RawObject {
            members,
            source: self.source,
        }
    }
}

impl PartialEq for RawObject<'_> {
    /// Equal when the members are the same, with the same text, in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.members.len() == other.members.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((k1, v1), (k2, v2))| k1 == k2 && v1.get() == v2.get())
    }
}

/// What [`RawObject::insert`] takes as a value: raw JSON text, borrowed or owned.
pub trait IntoRaw<'a> {
    /// The value as a `Cow`.
    fn into_raw(self) -> Cow<'a, RawValue>;
}

impl<'a> IntoRaw<'a> for &'a RawValue {
    fn into_raw(self) -> Cow<'a, RawValue> {
        Cow::Borrowed(self)
    }
}

impl<'a> IntoRaw<'a> for Box<RawValue> {
    fn into_raw(self) -> Cow<'a, RawValue> {
        Cow::Owned(self)
    }
}

impl<'a> IntoRaw<'a> for Cow<'a, RawValue> {
    fn into_raw(self) -> Cow<'a, RawValue> {
        self
    }
}

impl fmt::Debug for RawObject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_raw().get())
    }
}

/// Why text could not be read as a [`RawObject`].
pub type Error = serde_json::Error;

/// How deep a value read as a [`RawObject`] (or decoded) may nest: serde_json's limit,
/// which keeps a reader's stack bounded.
pub const MAX_NESTING: usize = 128;

/// Whether `e` is a value nested deeper than [`MAX_NESTING`].
pub fn is_too_deep(e: &Error) -> bool {
    e.to_string().starts_with("recursion limit exceeded")
}

/// What a peer is told when its params could not be read: for params nested deeper
/// than [`MAX_NESTING`], the limit by name (serde_json says only "recursion limit").
pub fn read_error(e: &Error) -> String {
    match is_too_deep(e) {
        true => format!("params nest deeper than the limit of {MAX_NESTING} levels"),
        false => e.to_string(),
    }
}

impl<'a> RawObject<'a> {
    /// An empty object.
    pub fn new() -> Self {
        RawObject {
            members: Vec::new(),
            source: None,
        }
    }

    /// Reads `text`, which must be one JSON object. The whole text is checked; only the
    /// top level is split into members.
    pub fn parse(text: &'a str) -> Result<Self, Error> {
        match Self::scan(text) {
            Some(o) => Ok(o),
            None => serde_json::from_str(text),
        }
    }

    /// The common object read without serde; `None` leaves it to serde_json (see
    /// [`scan`]).
    fn scan(text: &'a str) -> Option<Self> {
        let mut s = scan::Scanner::new(text);
        let mut members = Vec::with_capacity(4);
        s.object(|s, key| {
            let value = s.value()?;
            members.push((Cow::Borrowed(key), Cow::Borrowed(prewritten_ref(value)?)));
            Some(())
        })?;
        Some(RawObject {
            members,
            source: None,
        })
    }

    /// [`RawObject::parse`] of a raw value, remembered: while no member changes,
    /// [`RawObject::to_cow`] gives it back as it is. A raw value is JSON already, so it
    /// is only split here, not checked again.
    pub fn from_raw(raw: &'a RawValue) -> Result<Self, Error> {
        let mut o = match Self::split_valid(raw.get()) {
            Some(o) => o,
            None => Self::parse(raw.get())?,
        };
        o.source = Some(raw);
        Ok(o)
    }

    /// Whether a member changed since the object was read with [`RawObject::from_raw`].
    pub fn is_modified(&self) -> bool {
        self.source.is_none()
    }

    fn touch(&mut self) {
        self.source = None;
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.members.iter().rposition(|(k, _)| k == key)
    }

    /// The raw text of member `key`.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.position(key).map(|i| &*self.members[i].1)
    }

    /// Whether member `key` is present (even as `null`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Member `key` if it is a JSON string (borrowed when it has no escapes).
    pub fn get_str(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get(key).and_then(as_str)
    }

    /// Member `key` decoded as `T`: `None` when absent, `Some(Err)` when it is not a `T`.
    pub fn get_as<'s, T: Deserialize<'s>>(&'s self, key: &str) -> Option<Result<T, Error>> {
        self.get(key).map(|raw| serde_json::from_str(raw.get()))
    }

    /// Sets member `key`: in its place if present (the first of duplicates; the others are
    /// removed), else at the end. Returns the value it replaced.
    pub fn insert(
        &mut self,
        key: impl Into<Cow<'a, str>>,
        value: impl IntoRaw<'a>,
    ) -> Option<Cow<'a, RawValue>> {
        let key = key.into();
        let value = value.into_raw();
        self.touch();
        match self.members.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                let old = std::mem::replace(&mut self.members[i].1, value);
                let mut j = i + 1;
                while j < self.members.len() {
                    if self.members[j].0 == key {
                        self.members.remove(j);
                    } else {
                        j += 1;
                    }
                }
                Some(old)
            }
            None => {
                self.members.push((key, value));
                None
            }
        }
    }

    /// Sets member `key` to a string.
    pub fn insert_str(&mut self, key: impl Into<Cow<'a, str>>, value: &str) {
        self.insert(key, string(value));
    }

    /// Sets member `key` to `value` encoded as JSON (an encoding failure leaves it unset
    /// and is returned).
    pub fn insert_json<T: Serialize + ?Sized>(
        &mut self,
        key: impl Into<Cow<'a, str>>,
        value: &T,
    ) -> Result<(), Error> {
        let raw = serde_json::value::to_raw_value(value)?;
        self.insert(key, raw);
        Ok(())
    }

    /// Removes member `key` (every duplicate), keeping the order of the rest. Returns the
    /// last value it had.
    pub fn remove(&mut self, key: &str) -> Option<Cow<'a, RawValue>> {
        let mut out = None;
        let mut i = 0;
        while i < self.members.len() {
            if self.members[i].0 == key {
                out = Some(self.members.remove(i).1);
            } else {
                i += 1;
            }
        }
        if out.is_some() {
            self.touch();
        }
        out
    }

    /// Keeps only the members for which `keep` says so, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &RawValue) -> bool) {
        let before = self.members.len();
        self.members.retain(|(k, v)| keep(k, v));
        if self.members.len() != before {
            self.touch();
        }
    }

    /// The members, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.members.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The members, in order, mutably (a value may be replaced in place).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Cow<'a, RawValue>)> {
        self.touch();
        self.members.iter_mut().map(|(k, v)| (&**k, v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(k, _)| &**k)
    }

    /// Renames member `from` to `to` in its place (a member already called `to` is removed).
    pub fn rename(&mut self, from: &str, to: impl Into<Cow<'a, str>>) {
        let to = to.into();
        if from == to || self.position(from).is_none() {
            return;
        }
        self.remove(&to);
        if let Some(i) = self.position(from) {
            self.members[i].0 = to;
            self.touch();
        }
    }

    /// Edits the object held by member `key` in place: `edit` gets it parsed and says
    /// whether it changed anything; only then is the member rewritten (otherwise its text
    /// stays as it was). A member that is absent or not an object is left alone and
    /// `edit` is not called; the result says whether the member changed.
    pub fn edit_object<E>(
        &mut self,
        key: &str,
        edit: impl FnOnce(&mut RawObject<'_>) -> Result<bool, E>,
    ) -> Result<bool, E> {
        let Some(i) = self.position(key) else {
            return Ok(false);
        };
        let Ok(mut inner) = RawObject::from_raw(&self.members[i].1) else {
            return Ok(false);
        };
        if !edit(&mut inner)? {
            return Ok(false);
        }
        let raw = inner.to_raw();
        drop(inner);
        self.members[i].1 = Cow::Owned(raw);
        self.touch();
        Ok(true)
    }

    /// The object as JSON text: the text it was read from while unmodified (see
    /// [`RawObject::from_raw`]), else written anew with untouched members as they came.
    pub fn to_cow(&self) -> Cow<'a, RawValue> {
        match self.source {
            Some(raw) => Cow::Borrowed(raw),
            None => Cow::Owned(self.write()),
        }
    }

    /// The object as JSON text, owned: untouched members exactly as they came.
    pub fn to_raw(&self) -> Box<RawValue> {
        match self.source {
            Some(raw) => raw.to_owned(),
            None => self.write(),
        }
    }

    fn write(&self) -> Box<RawValue> {
        // Keys escaped where they need it, values copied as they are: JSON by construction,
        // so the text becomes a raw value without being read again.
        let len: usize = self
            .members
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum();
        // Exact (one comma fewer than members, and braces) unless a key needs escapes:
        // the boxed text then takes the buffer as it is, without a reallocation.
        let mut out = String::with_capacity(len + 2 - usize::from(len > 0));
        out.push('{');
        for (i, (k, v)) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_str(&mut out, k);
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
        prewritten(out)
    }

    /// The object with every member owned, free of the text it was read from.
    pub fn into_owned(self) -> RawObject<'static> {
        RawObject {
            members: self
                .members
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
            source: None,
        }
    }
}

impl<'a> FromIterator<Member<'a>> for RawObject<'a> {
    fn from_iter<I: IntoIterator<Item = Member<'a>>>(iter: I) -> Self {
        RawObject {
            members: iter.into_iter().collect(),
            source: None,
        }
    }
}

impl<'a> IntoIterator for RawObject<'a> {
    type Item = Member<'a>;
    type IntoIter = std::vec::IntoIter<Member<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl Serialize for RawObject<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.members.len()))?;
        for (k, v) in &self.members {
            m.serialize_entry(k, &**v)?;
        }
        m.end()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawObject<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'a>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(key) = map.next_key_seed(KeySeed)? {
                    let value: &'de RawValue = map.next_value()?;
                    members.push((key, Cow::Borrowed(value)));
                }
                Ok(RawObject {
                    members,
                    source: None,
                })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Reads a string borrowed from the input when it has no escapes (an object's key).
pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(CowStr)
    }
}

pub(crate) struct CowStr;

impl<'de> Visitor<'de> for CowStr {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXACT: &str = r#"{"n":123456789012345678901234567890,"f":1.10000000000000000000001,"z":{"b":1,"a":2},"s":"caf\u00e9"}"#;

    #[test]
    fn untouched_members_keep_their_text() {
        let o = RawObject::parse(EXACT).expect("object");
        assert_eq!(o.to_raw().get(), EXACT);
        assert_eq!(o.keys().collect::<Vec<_>>(), ["n", "f", "z", "s"]);
        assert_eq!(
            o.get("f").map(RawValue::get),
            Some("1.10000000000000000000001")
        );
        assert_eq!(o.get_str("s").as_deref(), Some("café"));
    }

    #[test]
    fn edits_stay_in_place_and_keep_the_rest() {
        let mut o = RawObject::parse(EXACT).expect("object");
        o.insert_str("n", "x");
        o.remove("f");
        o.insert_json("new", &[1, 2]).expect("encode");
        assert_eq!(
            o.to_raw().get(),
            r#"{"n":"x","z":{"b":1,"a":2},"s":"caf\u00e9","new":[1,2]}"#
        );
        let changed = o
            .edit_object("z", |z| {
                z.remove("b");
                Ok::<_, ()>(true)
            })
            .expect("edit");
        assert!(changed);
        assert_eq!(o.get("z").map(RawValue::get), Some(r#"{"a":2}"#));
        let unchanged = o.edit_object("z", |_| Ok::<_, ()>(false)).expect("edit");
        assert!(!unchanged);
        o.rename("s", "t");
        assert_eq!(o.keys().collect::<Vec<_>>(), ["n", "z", "t", "new"]);
    }

    #[test]
    fn an_unmodified_object_is_given_back_as_it_was_read() {
        let raw = RawValue::from_string("{ \"a\" : 1 }".into()).expect("raw");
        let mut o = RawObject::from_raw(&raw).expect("object");
        assert!(matches!(o.to_cow(), Cow::Borrowed(r) if r.get() == "{ \"a\" : 1 }"));
        o.remove("missing");
        assert!(!o.is_modified());
        o.insert_str("b", "x");
        assert!(o.is_modified());
        assert_eq!(o.to_cow().get(), r#"{"a":1,"b":"x"}"#);
    }

    #[test]
    fn non_objects_and_bad_json_are_errors() {
        assert!(RawObject::parse("[1]").is_err());
        assert!(RawObject::parse("{").is_err());
        assert!(RawObject::parse(r#"{"a":}"#).is_err());
    }

    #[test]
    fn arrays_keep_their_items() {
        let raw = RawValue::from_string("[1.50, {\"b\":1,\"a\":2}]".into()).expect("raw");
        let items = array(&raw).expect("array");
        assert_eq!(items.len(), 2);
        assert_eq!(to_array(&items).get(), r#"[1.50,{"b":1,"a":2}]"#);
    }

    #[test]
    fn compacting_keeps_numbers_order_and_strings() {
        let pretty = "{\n  \"n\": 123456789012345678901234567890,\n  \"f\": 1.50,\n  \"z\": {\"b\": 1, \"a\": [2, 3]},\n  \"s\": \"a b\\\" c\"\n}";
        let raw = RawValue::from_string(pretty.into()).expect("raw");
        assert_eq!(
            compact(&raw).get(),
            r#"{"n":123456789012345678901234567890,"f":1.50,"z":{"b":1,"a":[2,3]},"s":"a b\" c"}"#
        );
        let tight = RawValue::from_string(r#"{"a":"x y"}"#.into()).expect("raw");
        assert!(matches!(compact(&tight), Cow::Borrowed(_)));
    }

    #[test]
    fn key_search_never_misses() {
        assert!(may_contain_key(r#"{"a":{"_meta":1}}"#, "_meta"));
        assert!(!may_contain_key(r#"{"a":{"meta":1}}"#, "_meta"));
        assert!(!may_contain_key(r#"{"x_meta":1}"#, "_meta"));
        let long = "k".repeat(100);
        assert!(may_contain_key(&format!(r#"{{"{long}":1}}"#), &long));
        // A searcher built once answers the same.
        let pad = format!(r#""pad":"{}","#, "x".repeat(5000));
        let finder = KeyFinder::new("_meta");
        for prefix in ["", pad.as_str()] {
            let has = |t: &str| {
                let text = format!("{{{prefix}{t}}}");
                let (slow, fast) = (may_contain_key(&text, "_meta"), finder.may_be_in(&text));
                assert_eq!(slow, fast, "{t}");
                fast
            };
            assert!(has(r#""a":{"_meta":1}"#), "{}", prefix.len());
            assert!(has(r#""s":"_meta""#), "as a value it may be a key too");
            assert!(!has(r#""x_meta":1"#));
            assert!(!has(r#""_metax":1"#));
            assert!(!has(r#""s":"say \"_meta\"""#));
            assert!(!has(r#""_met":"a""#));
        }
        assert!(has_key_escapes(r#"{"result\u0054ype":1}"#));
        assert!(has_key_escapes(r#"{"a\/b":1}"#));
        assert!(!has_key_escapes(r#"{"a":"line\nbreak \\ slash"}"#));
    }
}
