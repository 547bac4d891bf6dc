//! What a request must show before it is served: an allowed Host and Origin, and for
//! 2026-07-28 the mirrored headers that match its body.

use http::{header, HeaderMap};
use mcp_types::raw::RawObject;
use mcp_types::{codes, headers, meta, Request};

use crate::session::RequestMeta;

pub(super) fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

pub(super) fn accepts_sse(h: &HeaderMap) -> bool {
    header_str(h, header::ACCEPT.as_str()).is_some_and(|a| a.contains("text/event-stream"))
}

/// The host part of an authority (`host:port`, `[v6]:port`).
pub(super) fn host_of(authority: &str) -> &str {
    let a = authority.trim();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split_once(']').map_or(a, |(h, _)| h);
    }
    a.rsplit_once(':')
        .filter(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
        .map_or(a, |(h, _)| h)
}

/// Whether `host` is in `list` (brackets and case aside).
pub(super) fn allowed(list: &[String], host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    list.iter().any(|a| {
        a.trim_start_matches('[')
            .trim_end_matches(']')
            .eq_ignore_ascii_case(host)
    })
}

/// Checks a 2026-07-28 request's headers and `_meta`, in the order the spec's examples
/// imply: a missing version header (`-32020`), `_meta` without the version or capabilities
/// (`-32602`), then header against body (`-32020`); the version itself is checked later.
/// The params are read one level deep, `_meta` for two keys.
pub(super) fn check_modern_headers(h: &HeaderMap, r: &Request) -> Result<(), (i64, String)> {
    let mismatch = |why: String| (codes::HEADER_MISMATCH, format!("Header mismatch: {why}"));
    let Some(header_version) = header_str(h, headers::PROTOCOL_VERSION) else {
        return Err(mismatch("missing MCP-Protocol-Version header".into()));
    };
    let params = r
        .params
        .as_deref()
        .and_then(|p| RawObject::from_raw(p).ok())
        .unwrap_or_default();
    let envelope = RequestMeta::of(Some(&params));
    if envelope.protocol_version.is_none() {
        return Err(lacks(meta::PROTOCOL_VERSION));
    }
    if envelope.client_capabilities.is_none() {
        return Err(lacks(meta::CLIENT_CAPABILITIES));
    }
    let body_version = envelope.version().unwrap_or_default();
    if header_version != body_version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{header_version}' does not match body value '{body_version}'"
        )));
    }
    match header_str(h, headers::METHOD) {
        None => return Err(mismatch("missing Mcp-Method header".into())),
        Some(m) if m != r.method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{m}' does not match body value '{}'",
                r.method
            )))
        }
        Some(_) => {}
    }
    let Some(field) = headers::name_member(&r.method) else {
        return Ok(());
    };
    let body = params.get_str(field);
    let header = h.get(headers::NAME).map(|v| {
        v.to_str()
            .map_err(|_| mismatch("Mcp-Name header has invalid characters".into()))
    });
    let Some(raw) = header.transpose()? else {
        return Err(mismatch("missing Mcp-Name header".into()));
    };
    let decoded = headers::decode_value(raw.trim())
        .ok_or_else(|| mismatch("Mcp-Name header is malformed base64".into()))?;
    if Some(decoded.as_str()) != body.as_deref() {
        return Err(mismatch(format!(
            "Mcp-Name header value '{decoded}' does not match body value '{}'",
            body.unwrap_or_default()
        )));
    }
    Ok(())
}

fn lacks(key: &str) -> (i64, String) {
    (
        codes::INVALID_PARAMS,
        format!("Invalid params: _meta lacks {key}"),
    )
}
