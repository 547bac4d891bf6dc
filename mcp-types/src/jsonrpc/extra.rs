//! [`Extra`]: the envelope members JSON-RPC does not define.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Members of an object this crate does not model (an envelope's, an error's), kept
/// verbatim. It reads and edits as a [`Map`] (through `Deref`/`DerefMut`).
///
/// Almost no message has any: the map is made only when a member is added, so the
/// envelope of every other message is made and dropped without touching one (dropping
/// even an empty `Map` walks its tree, a cost every relayed message would pay).
#[derive(Clone, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

/// What an `Extra` without members reads as.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl Extra {
    /// No members.
    pub const fn new() -> Self {
        Extra(None)
    }

    /// The members as a map, without making one for an empty `Extra`.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        match &self.0 {
            Some(m) => m,
            None => &EMPTY,
        }
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(m: Map<String, Value>) -> Self {
        Extra((!m.is_empty()).then(|| Box::new(m)))
    }
}

impl PartialEq for Extra {
    /// Equal when they hold the same members (a made but emptied map equals none).
    fn eq(&self, o: &Self) -> bool {
        **self == **o
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(Extra::from)
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extra_reads_and_edits_as_a_map_and_compares_by_members() {
        let mut e = Extra::new();
        assert!(e.is_empty());
        assert_eq!(e, Extra::from(Map::new()));
        e.insert("x".into(), Value::from(1));
        assert_eq!(e.get("x"), Some(&Value::from(1)));
        assert_eq!(e.iter().count(), 1);
        assert_ne!(e, Extra::new());
        let mut m = Map::new();
        m.insert("x".into(), Value::from(1));
        assert_eq!(e, Extra::from(m.clone()));
        assert_eq!(e.clone().into_map(), m);
        e.remove("x");
        assert_eq!(e, Extra::new());
        assert_eq!(format!("{e:?}"), "{}");
        let read: Extra = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), r#"{"a":2,"b":1}"#);
    }
}
