//! `_meta`: kept raw, plus the reserved-key rule of each revision.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::raw::RawObject;
use crate::Revision;

/// The contents of a `_meta` member, kept exactly as received.
pub type Meta = Map<String, Value>;

/// `_meta` key carrying a request's progress token (every revision).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// 2026-07-28 request `_meta`: the protocol version of this request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// 2026-07-28 request `_meta`: the client's capabilities for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// 2026-07-28 request `_meta`: the client's self-description.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// 2026-07-28 request `_meta`: the log level wanted for this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// 2026-07-28 result `_meta`: the server's self-description.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// 2026-07-28 `subscriptions/listen` result and notification `_meta`: the subscription id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// 2025-11-25 `CreateTaskResult._meta`: text to hand the model while the task runs.
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";
/// 2025-11-25 `_meta`: the task a message belongs to.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// W3C Trace Context's `traceparent`, carried in `_meta` as the SDKs carry it (and in the
/// HTTP header of the same name).
pub const TRACEPARENT: &str = "traceparent";
/// W3C Trace Context's `tracestate`, beside [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";

/// Whether `key` is reserved for MCP's own use under `revision`'s `_meta` naming rule.
///
/// - 2024-11-05 and 2025-03-26 define no prefix rule; only `progressToken` is MCP's.
/// - 2025-06-18 reserves a prefix in which `modelcontextprotocol` or `mcp` is any label but the last
///   (`modelcontextprotocol.io/`, `tools.mcp.com/`).
/// - 2025-11-25 and 2026-07-28 reserve a prefix whose second label is `modelcontextprotocol` or `mcp`
///   (`io.modelcontextprotocol/`, but not `com.example.mcp/`).
pub fn is_reserved_key(key: &str, revision: Revision) -> bool {
    if key == PROGRESS_TOKEN {
        return true;
    }
    let Some((prefix, _name)) = key.split_once('/') else {
        return false;
    };
    let labels: Vec<&str> = prefix.split('.').collect();
    let is_mcp = |l: &&str| *l == "modelcontextprotocol" || *l == "mcp";
    match revision {
        Revision::V2024_11_05 | Revision::V2025_03_26 => false,
        Revision::V2025_06_18 => labels.len() >= 2 && labels[..labels.len() - 1].iter().any(is_mcp),
        Revision::V2025_11_25 | Revision::V2026_07_28 => labels.get(1).is_some_and(is_mcp),
    }
}

/// Whether `key` is a well-formed `_meta` key (optional dotted-label prefix ending in `/`, then a name).
/// The rule exists from 2025-06-18; a malformed key is reported, never rejected, by this crate.
pub fn is_valid_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphabetic()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    };
    let name_ok = name.is_empty() || {
        let b = name.as_bytes();
        b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
    };
    name_ok && prefix.is_none_or(|p| p.split('.').all(label_ok))
}

/// Edits the `_meta` of a params or result object still in raw form: `edit` gets the
/// `_meta` object (an empty one when absent) and says whether it changed it. A `_meta`
/// left empty by the edit is removed; one that is not an object is left alone. Only
/// `_meta` is rewritten; every other member stays as it was.
pub fn edit_raw(object: &mut RawObject<'_>, edit: impl FnOnce(&mut RawObject<'_>) -> bool) -> bool {
    match object.get("_meta") {
        None => {
            let mut m = RawObject::new();
            if !edit(&mut m) || m.is_empty() {
                return false;
            }
            object.insert("_meta", m.to_raw());
            true
        }
        Some(raw) if crate::raw::is_object(raw) => {
            let mut emptied = false;
            let changed = object
                .edit_object("_meta", |m| {
                    let changed = edit(m);
                    emptied = m.is_empty();
                    Ok::<_, std::convert::Infallible>(changed)
                })
                .unwrap_or(false);
            if changed && emptied {
                object.remove("_meta");
            }
            changed
        }
        Some(_) => false,
    }
}

/// Sets `_meta[key]` of a raw params or result object, creating `_meta` if needed; with
/// `keep`, a value already there stays. Returns whether anything changed.
pub fn set_raw(object: &mut RawObject<'_>, key: &str, value: &RawValue, keep: bool) -> bool {
    edit_raw(object, |m| {
        if keep && m.contains_key(key) {
            return false;
        }
        m.insert(key.to_owned(), value.to_owned());
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    #[test]
    fn reserved_prefixes_follow_each_revision() {
        assert!(is_reserved_key(
            "io.modelcontextprotocol/protocolVersion",
            V2026_07_28
        ));
        assert!(is_reserved_key("dev.mcp/x", V2025_11_25));
        assert!(!is_reserved_key("com.example.mcp/x", V2025_11_25));
        assert!(is_reserved_key("com.example.mcp.tools/x", V2025_06_18));
        assert!(is_reserved_key("modelcontextprotocol.io/x", V2025_06_18));
        assert!(!is_reserved_key("modelcontextprotocol.io/x", V2025_11_25));
        assert!(!is_reserved_key("io.modelcontextprotocol/x", V2024_11_05));
        assert!(is_reserved_key("progressToken", V2024_11_05));
        assert!(!is_reserved_key("com.example/trace", V2026_07_28));
    }

    #[test]
    fn raw_meta_edits_touch_only_meta() {
        let text = r#"{"arguments":{"n":1.50,"z":{"b":1,"a":2}},"_meta":{"progressToken":7}}"#;
        let raw = RawValue::from_string(text.into()).expect("raw");
        let mut o = RawObject::from_raw(&raw).expect("object");
        let v = RawValue::from_string("\"x\"".into()).expect("raw");
        assert!(set_raw(&mut o, "k", &v, true));
        assert!(!set_raw(&mut o, "k", &v, true));
        assert_eq!(
            o.to_raw().get(),
            r#"{"arguments":{"n":1.50,"z":{"b":1,"a":2}},"_meta":{"progressToken":7,"k":"x"}}"#
        );
        assert!(edit_raw(&mut o, |m| {
            m.remove("progressToken");
            m.remove("k");
            true
        }));
        assert_eq!(
            o.to_raw().get(),
            r#"{"arguments":{"n":1.50,"z":{"b":1,"a":2}}}"#
        );
        let mut bare = RawObject::from_raw(&raw).expect("object");
        bare.remove("_meta");
        assert!(set_raw(&mut bare, PROGRESS_TOKEN, &v, false));
        assert_eq!(
            bare.get("_meta").map(RawValue::get),
            Some(r#"{"progressToken":"x"}"#)
        );
    }

    #[test]
    fn key_syntax() {
        assert!(is_valid_key("com.example/trace-id"));
        assert!(is_valid_key("plain"));
        assert!(!is_valid_key("1com.example/x"));
        assert!(!is_valid_key("com.example/-x"));
    }
}
