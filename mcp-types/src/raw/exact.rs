//! A decoded value that keeps the exact text it was read from.
//!
//! A relay reads what it lists (a tool's name, its hints, its task support) but passes on
//! what it was sent: a JSON Schema keeps its key order and its 30-digit literals, an
//! unknown member stays. [`Exact`] holds both, the text and the decoded value; an edit
//! rewrites only the members it changes, in place, and every other member keeps its
//! bytes.
//!
//! ```
//! use mcp_types::protocol::Tool;
//! use mcp_types::raw::Exact;
//!
//! let text = r#"{"name":"a","inputSchema":{"type":"object","properties":{"z":{"maximum":123456789012345678901234567890},"a":{}}}}"#;
//! let tool: Exact<Tool> = Exact::parse(text).unwrap();
//! assert_eq!(tool.name, "a");
//! let renamed = tool.with_member("name", "ns__a", |t| t.name = "ns__a".into()).unwrap();
//! assert_eq!(renamed.name, "ns__a");
//! assert_eq!(renamed.raw().get(), text.replacen(r#""a""#, r#""ns__a""#, 1));
//! ```

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Error, Map, Value};

use super::RawObject;

/// A value of type `T` with the exact JSON text it was read from (or, for one made here,
/// its encoding). Reads go to the decoded value (it derefs to `T`); encoding writes the
/// text as it is. Cheap to clone: both are shared.
pub struct Exact<T> {
    inner: Arc<Both<T>>,
}

struct Both<T> {
    raw: Box<RawValue>,
    value: T,
}

impl<T> Clone for Exact<T> {
    fn clone(&self) -> Self {
        Exact {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> Deref for Exact<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner.value
    }
}

impl<T> Exact<T> {
    /// The text, as it was read (with the edits made since, in place).
    pub fn raw(&self) -> &RawValue {
        &self.inner.raw
    }

    /// The decoded value.
    pub fn value(&self) -> &T {
        &self.inner.value
    }

    fn of(raw: Box<RawValue>, value: T) -> Self {
        Exact {
            inner: Arc::new(Both { raw, value }),
        }
    }
}

impl<T: Clone> Exact<T> {
    /// The decoded value, owned (copied if this is shared).
    pub fn into_value(self) -> T {
        match Arc::try_unwrap(self.inner) {
            Ok(both) => both.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

impl<T: DeserializeOwned> Exact<T> {
    /// Decodes `raw`, keeping it.
    pub fn read(raw: Box<RawValue>) -> Result<Self, Error> {
        let value = serde_json::from_str(raw.get())?;
        Ok(Self::of(raw, value))
    }

    /// Decodes `text`, keeping it.
    pub fn parse(text: &str) -> Result<Self, Error> {
        Self::read(serde_json::from_str(text)?)
    }

    /// A copy whose text is edited by `edit` (which gets the object's members, raw, and
    /// says whether it changed any) and decoded again. What `edit` leaves alone keeps its
    /// bytes; `self` is given back when nothing changed or the text is not an object.
    pub fn edit(
        &self,
        edit: impl FnOnce(&mut RawObject<'_>) -> Result<bool, Error>,
    ) -> Result<Self, Error> {
        let Ok(mut obj) = RawObject::from_raw(self.raw()) else {
            return Ok(self.clone());
        };
        if !edit(&mut obj)? {
            return Ok(self.clone());
        }
        Self::read(obj.to_raw())
    }
}

impl<T: Serialize> Exact<T> {
    /// `value` with its own encoding as its text.
    pub fn encode(value: T) -> Result<Self, Error> {
        let raw = serde_json::value::to_raw_value(&value)?;
        Ok(Self::of(raw, value))
    }
}

impl<T: Serialize + Clone> Exact<T> {
    /// A copy with member `key` set to `member` in its place (or added at the end), and
    /// `apply` making the same change to the decoded value, which is not read again.
    pub fn with_member<V: Serialize + ?Sized>(
        &self,
        key: &str,
        member: &V,
        apply: impl FnOnce(&mut T),
    ) -> Result<Self, Error> {
        let mut obj = RawObject::from_raw(self.raw())?;
        obj.insert_json(key, member)?;
        let mut value = self.value().clone();
        apply(&mut value);
        Ok(Self::of(obj.to_raw(), value))
    }

    /// A copy with `change` made to the decoded value, and to the text only in the members
    /// whose encoding it changed: those are written anew in their place (a new member at
    /// the end, a removed one removed); every other member keeps its bytes.
    pub fn edit_typed(&self, change: impl FnOnce(&mut T)) -> Result<Self, Error> {
        let mut value = self.value().clone();
        change(&mut value);
        let (Value::Object(before), Value::Object(after)) = (
            serde_json::to_value(self.value())?,
            serde_json::to_value(&value)?,
        ) else {
            return Self::encode(value);
        };
        let raw = rewrite_changed(self.raw(), &before, &after)?;
        Ok(Self::of(
            raw.unwrap_or_else(|| self.raw().to_owned()),
            value,
        ))
    }
}

/// `raw` with the members that differ between `before` and `after` rewritten from
/// `after`; `None` when none differ.
fn rewrite_changed(
    raw: &RawValue,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<Option<Box<RawValue>>, Error> {
    let mut obj = RawObject::from_raw(raw)?;
    let mut changed = false;
    for (k, v) in after {
        if before.get(k) != Some(v) {
            obj.insert_json(k.as_str(), v)?;
            changed = true;
        }
    }
    for k in before.keys().filter(|k| !after.contains_key(*k)) {
        changed |= obj.remove(k).is_some();
    }
    Ok(changed.then(|| obj.to_raw()))
}

impl<T> Serialize for Exact<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.inner.raw.serialize(s)
    }
}

/// Equal when the texts are: a listing that reads the same but is written otherwise has
/// changed for whoever relays it exactly.
impl<T> PartialEq for Exact<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw().get() == other.raw().get()
    }
}

impl<T> Eq for Exact<T> {}

impl<T> fmt::Debug for Exact<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Exact").field(&self.raw().get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Tool, ToolAnnotations};

    const TOOL: &str = r#"{"name":"t","x-order":{"z":1,"a":2},"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","maximum":123456789012345678901234567890}}"#;

    #[test]
    fn typed_edits_rewrite_only_the_members_they_change() {
        let tool: Exact<Tool> = Exact::parse(TOOL).unwrap();
        let hidden = tool
            .edit_typed(|t| {
                t.annotations = Some(ToolAnnotations {
                    read_only_hint: Some(false),
                    ..Default::default()
                })
            })
            .unwrap();
        assert_eq!(
            hidden.raw().get(),
            TOOL.replace(r#""readOnlyHint":true"#, r#""readOnlyHint":false"#)
        );
        assert_eq!(
            hidden.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(false)
        );
        let unchanged = tool.edit_typed(|_| {}).unwrap();
        assert_eq!(unchanged.raw().get(), TOOL);
        let removed = tool.edit_typed(|t| t.annotations = None).unwrap();
        assert_eq!(
            removed.raw().get(),
            TOOL.replace(r#""annotations":{"readOnlyHint":true},"#, "")
        );
    }

    #[test]
    fn raw_edits_are_decoded_again_and_equality_is_textual() {
        let tool: Exact<Tool> = Exact::parse(TOOL).unwrap();
        let edited = tool
            .edit(|o| {
                o.insert_str("description", "d");
                Ok(true)
            })
            .unwrap();
        assert_eq!(edited.description.as_deref(), Some("d"));
        assert!(edited.raw().get().starts_with(&TOOL[..TOOL.len() - 1]));
        assert_ne!(edited, tool);
        assert_eq!(tool.edit(|_| Ok(false)).unwrap(), tool);
        assert_eq!(serde_json::to_string(&tool).unwrap(), TOOL);
    }
}
