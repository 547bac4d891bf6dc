//! What a client declares about itself: its capabilities (decoded, and as it wrote them)
//! and its `clientInfo`.
//!
//! A legacy client declares them once, at `initialize`. A 2026-07-28 client sends them in
//! every request's `_meta`, almost always the same text: [`DeclaredCache`] decodes each
//! distinct text once and hands out the shared result after that.

use std::sync::{Arc, OnceLock};

use mcp_types::protocol::{ClientCapabilities, Implementation};
use parking_lot::Mutex;
use serde_json::value::RawValue;

/// A client's declarations, shared (cheap to clone into each request's context).
#[derive(Clone)]
pub(crate) struct Declared {
    pub(crate) capabilities: Arc<ClientCapabilities>,
    /// The capabilities as the client wrote them (a relay passes them on verbatim).
    pub(crate) capabilities_raw: Arc<RawValue>,
    pub(crate) info: Option<Arc<Implementation>>,
}

impl Declared {
    /// Declarations read from their raw text. Capabilities that do not decode are an
    /// error (2026-07-28 requires them); an unreadable `clientInfo` is ignored (informative).
    pub(crate) fn read(
        capabilities: &RawValue,
        info: Option<&RawValue>,
    ) -> Result<Self, serde_json::Error> {
        Ok(Declared {
            capabilities: Arc::new(serde_json::from_str(capabilities.get())?),
            capabilities_raw: Arc::from(capabilities.to_owned()),
            info: info
                .and_then(|i| serde_json::from_str(i.get()).ok())
                .map(Arc::new),
        })
    }

    /// A client that declared nothing (`ping` before `initialize`).
    pub(crate) fn none() -> Self {
        Declared {
            capabilities: Arc::default(),
            capabilities_raw: empty_object(),
            info: None,
        }
    }
}

/// `{}`, shared.
fn empty_object() -> Arc<RawValue> {
    static EMPTY: OnceLock<Arc<RawValue>> = OnceLock::new();
    EMPTY
        .get_or_init(|| {
            let empty = serde_json::value::to_raw_value(&serde_json::Map::new())
                .unwrap_or_else(|_| RawValue::NULL.to_owned());
            Arc::from(empty)
        })
        .clone()
}

/// How many distinct declarations a session keeps decoded (one per client it serves at
/// once, for a server that serves several over one session).
const CACHED: usize = 8;

/// The declarations of the last few distinct 2026-07-28 envelopes, by exact text.
#[derive(Default)]
pub(crate) struct DeclaredCache {
    entries: Mutex<Vec<Entry>>,
}

struct Entry {
    info: Option<Box<str>>,
    declared: Declared,
}

impl DeclaredCache {
    /// The declarations of `capabilities` and `info`: decoded once per distinct text.
    pub(crate) fn get(
        &self,
        capabilities: &RawValue,
        info: Option<&RawValue>,
    ) -> Result<Declared, serde_json::Error> {
        let info_text = info.map(RawValue::get);
        let same = |e: &Entry| {
            e.declared.capabilities_raw.get() == capabilities.get()
                && e.info.as_deref() == info_text
        };
        {
            let entries = self.entries.lock();
            if let Some(e) = entries.iter().find(|e| same(e)) {
                return Ok(e.declared.clone());
            }
        }
        let declared = Declared::read(capabilities, info)?;
        {
            let mut entries = self.entries.lock();
            if entries.len() == CACHED {
                entries.remove(0);
            }
            entries.push(Entry {
                info: info_text.map(Into::into),
                declared: declared.clone(),
            });
        }
        Ok(declared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("json")
    }

    #[test]
    fn the_same_text_is_decoded_once() {
        let cache = DeclaredCache::default();
        let caps = raw(r#"{"sampling":{}}"#);
        let a = cache.get(&caps, None).expect("caps");
        let b = cache.get(&caps, None).expect("caps");
        assert!(Arc::ptr_eq(&a.capabilities, &b.capabilities));
        assert!(a.capabilities.sampling.is_some());
        let other = cache.get(&raw("{}"), None).expect("caps");
        assert!(other.capabilities.sampling.is_none());
    }

    #[test]
    fn the_raw_text_is_kept_as_written() {
        let caps = raw(r#"{"x":1.50,"sampling":{}}"#);
        let d = DeclaredCache::default().get(&caps, None).expect("caps");
        assert_eq!(d.capabilities_raw.get(), r#"{"x":1.50,"sampling":{}}"#);
    }

    #[test]
    fn info_distinguishes_entries_and_bad_info_is_ignored() {
        let cache = DeclaredCache::default();
        let caps = raw("{}");
        let a = cache
            .get(&caps, Some(&raw(r#"{"name":"a","version":"1"}"#)))
            .expect("caps");
        let b = cache
            .get(&caps, Some(&raw(r#"{"name":"b","version":"1"}"#)))
            .expect("caps");
        assert_eq!(a.info.as_deref().map(|i| i.name.as_str()), Some("a"));
        assert_eq!(b.info.as_deref().map(|i| i.name.as_str()), Some("b"));
        let bad = cache.get(&caps, Some(&raw("7"))).expect("caps");
        assert!(bad.info.is_none());
        assert!(cache.get(&raw("[1]"), None).is_err());
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = DeclaredCache::default();
        for n in 0..(CACHED * 3) {
            cache
                .get(&raw(&format!(r#"{{"n":{n}}}"#)), None)
                .expect("caps");
        }
        assert_eq!(cache.entries.lock().len(), CACHED);
    }
}
