//! What a session reads from a request's `_meta`, and nothing more.

use mcp_types::meta;
use mcp_types::raw::{BoundLayout, RawObject};
use serde_json::value::RawValue;

/// The keys of a request's `_meta` the session acts on: the 2026-07-28 envelope and the
/// progress token, each still raw. Every other key is the handler's to read.
#[derive(Default)]
pub(crate) struct RequestMeta<'a> {
    pub(crate) protocol_version: Option<&'a RawValue>,
    pub(crate) client_capabilities: Option<&'a RawValue>,
    pub(crate) client_info: Option<&'a RawValue>,
    pub(crate) log_level: Option<&'a RawValue>,
    pub(crate) progress_token: Option<&'a RawValue>,
    pub(crate) traceparent: Option<&'a RawValue>,
    pub(crate) tracestate: Option<&'a RawValue>,
}

impl<'a> RequestMeta<'a> {
    /// The `_meta` of `params` (the request's params object, read one level deep). An
    /// absent or malformed `_meta` reads as empty.
    pub(crate) fn of(params: Option<&'a RawObject<'_>>) -> Self {
        let mut out = Self::default();
        let Some(text) = params.and_then(|p| p.get("_meta")) else {
            return out;
        };
        // Read in place: the envelope is looked up once, so no object is built for it.
        let _ = mcp_types::raw::for_each_member(text, |key, value| out.note(key, value));
        out
    }

    /// The `_meta` of params whose reader laid them out: read from the layout, without
    /// walking the text again; `None` when the layout does not know `_meta`'s members.
    pub(crate) fn laid_out(params: &BoundLayout<'a, '_>) -> Option<Self> {
        let mut out = Self::default();
        params
            .for_each_meta_member(|key, value| out.note(key, value))
            .then_some(out)
    }

    /// Keeps `value` if `key` is one the session acts on.
    fn note(&mut self, key: &str, value: &'a RawValue) {
        let slot = match key {
            meta::PROTOCOL_VERSION => &mut self.protocol_version,
            meta::CLIENT_CAPABILITIES => &mut self.client_capabilities,
            meta::CLIENT_INFO => &mut self.client_info,
            meta::LOG_LEVEL => &mut self.log_level,
            meta::PROGRESS_TOKEN => &mut self.progress_token,
            meta::TRACEPARENT => &mut self.traceparent,
            meta::TRACESTATE => &mut self.tracestate,
            _ => return,
        };
        // A null is no value, as for a decoder of optional members.
        *slot = (value.get() != "null").then_some(value);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_keys_are_read_raw_and_the_rest_left_alone() {
        let text = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":12345678901234567890123,"traceparent":null,"other":{"x":1},"io.modelcontextprotocol/clientCapabilities":{"b":1,"a":2}},"name":"t"}"#;
        let params = RawObject::parse(text).expect("params");
        let m = RequestMeta::of(Some(&params));
        assert_eq!(m.version().as_deref(), Some("2026-07-28"));
        assert_eq!(
            m.progress_token.map(RawValue::get),
            Some("12345678901234567890123")
        );
        assert_eq!(
            m.client_capabilities.map(RawValue::get),
            Some(r#"{"b":1,"a":2}"#)
        );
        assert!(m.traceparent.is_none(), "a null is no value");
        assert!(m.client_info.is_none() && m.log_level.is_none());
    }

    #[test]
    fn a_missing_or_malformed_meta_reads_as_empty() {
        for text in [r#"{"name":"t"}"#, r#"{"_meta":[1]}"#, r#"{"_meta":"x"}"#] {
            let params = RawObject::parse(text).expect("params");
            let m = RequestMeta::of(Some(&params));
            assert!(
                m.protocol_version.is_none() && m.progress_token.is_none(),
                "{text}"
            );
        }
        assert!(RequestMeta::of(None).protocol_version.is_none());
    }

    #[test]
    fn a_layout_gives_the_keys_the_text_gives() {
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7,"traceparent":null,"x":[1]},"name":"t"}}"#;
        let Ok(mcp_types::Message::Request(mut req)) = mcp_types::Message::parse(text.as_bytes())
        else {
            panic!("a request");
        };
        let layout = req.take_params_layout().expect("laid out by the reader");
        let raw = req.params.as_deref().expect("params");
        let bound = layout.bind(raw).expect("bound to the text read");
        let by_layout = RequestMeta::laid_out(&bound).expect("meta known");
        let params = RawObject::from_raw(raw).expect("params");
        let by_text = RequestMeta::of(Some(&params));
        assert_eq!(by_layout.version(), by_text.version());
        assert_eq!(by_layout.version().as_deref(), Some("2026-07-28"));
        assert_eq!(
            by_layout.progress_token.map(RawValue::get),
            by_text.progress_token.map(RawValue::get)
        );
        assert!(by_layout.traceparent.is_none() && by_text.traceparent.is_none());
    }
}
