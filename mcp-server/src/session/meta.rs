//! What a session reads from a request's `_meta`, and nothing more.

use mcp_types::meta;
use mcp_types::raw::RawObject;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The keys of a request's `_meta` the session acts on: the 2026-07-28 envelope and the
/// progress token, each still raw. Every other key is the handler's to read.
#[derive(Default, Deserialize)]
pub(crate) struct RequestMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    pub(crate) protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow)]
    pub(crate) client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow)]
    pub(crate) client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow)]
    pub(crate) log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow)]
    pub(crate) progress_token: Option<&'a RawValue>,
    #[serde(rename = "traceparent", borrow)]
    pub(crate) traceparent: Option<&'a RawValue>,
    #[serde(rename = "tracestate", borrow)]
    pub(crate) tracestate: Option<&'a RawValue>,
}

// The renames above must be the crate's key names.
const _: () = {
    assert!(const_eq(
        meta::PROTOCOL_VERSION,
        "io.modelcontextprotocol/protocolVersion"
    ));
    assert!(const_eq(
        meta::CLIENT_CAPABILITIES,
        "io.modelcontextprotocol/clientCapabilities"
    ));
    assert!(const_eq(
        meta::CLIENT_INFO,
        "io.modelcontextprotocol/clientInfo"
    ));
    assert!(const_eq(
        meta::LOG_LEVEL,
        "io.modelcontextprotocol/logLevel"
    ));
    assert!(const_eq(meta::PROGRESS_TOKEN, "progressToken"));
    assert!(const_eq(meta::TRACEPARENT, "traceparent"));
    assert!(const_eq(meta::TRACESTATE, "tracestate"));
};

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl<'a> RequestMeta<'a> {
    /// The `_meta` of `params` (the request's params object, read one level deep). An
    /// absent or malformed `_meta` reads as empty.
    pub(crate) fn of(params: Option<&'a RawObject<'_>>) -> Self {
        params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_default()
    }

    /// The trace context its `traceparent` and `tracestate` give, if well formed.
    pub(crate) fn trace(&self) -> Option<crate::TraceContext> {
        let parent = mcp_types::raw::as_str(self.traceparent?)?;
        let state = self.tracestate.and_then(mcp_types::raw::as_str);
        crate::TraceContext::parse(&parent, state.as_deref())
    }

    /// The protocol version, if it is a string.
    pub(crate) fn version(&self) -> Option<String> {
        self.protocol_version
            .and_then(mcp_types::raw::as_str)
            .map(|v| v.into_owned())
    }
}
