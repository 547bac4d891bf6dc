//! Trace context on the wire: what a request carries in `_meta` goes as headers too.

use http::HeaderMap;

/// A request's W3C trace context (`traceparent`, `tracestate` in its `_meta`) as headers
/// too, for a server or a proxy on the way that reads only those.
pub(super) fn trace_headers(h: &mut HeaderMap, r: &mcp_types::Request) {
    use mcp_types::meta::{TRACEPARENT, TRACESTATE};
    use mcp_types::raw::{as_str, KeyFinder, RawObject};
    static FINDER: std::sync::LazyLock<KeyFinder> =
        std::sync::LazyLock::new(|| KeyFinder::new(TRACEPARENT));
    let Some(params) = r.params.as_deref() else {
        return;
    };
    if !FINDER.may_be_in(params.get()) {
        return;
    }
    let meta = RawObject::from_raw(params).ok().and_then(|p| {
        p.get("_meta")
            .and_then(|m| RawObject::from_raw(m).ok().map(|m| m.into_owned()))
    });
    let Some(meta) = meta else { return };
    for key in [TRACEPARENT, TRACESTATE] {
        if let Some(v) = meta.get(key).and_then(as_str) {
            super::set(h, key, &v);
        }
    }
}
