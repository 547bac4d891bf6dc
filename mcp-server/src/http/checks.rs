//! What a request must show before it is served: an allowed Host and Origin, and for
//! 2026-07-28 the mirrored headers that match its body.

use http::header::{self, AsHeaderName};
use http::{HeaderMap, Response, StatusCode};
use mcp_types::raw::RawObject;
use mcp_types::{codes, headers, meta, Request};

use super::reply::{rpc_error, HttpBody};
use super::HttpOptions;
use crate::session::RequestMeta;

/// A header's value as text, if it is there and visible ASCII. Given a [`HeaderName`]
/// (one of the statics below) the map does not parse the name first.
pub(super) fn header_str<K: AsHeaderName>(h: &HeaderMap, name: K) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The MCP headers by name, parsed once.
pub(super) mod names {
    use http::HeaderName;
    use mcp_types::headers;

    pub(in crate::http) static PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(headers::PROTOCOL_VERSION);
    pub(in crate::http) static SESSION_ID: HeaderName =
        HeaderName::from_static(headers::SESSION_ID);
    pub(in crate::http) static METHOD: HeaderName = HeaderName::from_static(headers::METHOD);
    pub(in crate::http) static NAME: HeaderName = HeaderName::from_static(headers::NAME);
    pub(in crate::http) static LAST_EVENT_ID: HeaderName =
        HeaderName::from_static(headers::LAST_EVENT_ID);
}

/// The media types of a header's list (`a/b;q=1, c/d`), parameters dropped; compare
/// them ignoring ASCII case.
fn media_types(value: &str) -> impl Iterator<Item = &str> + '_ {
    value.split(',').map(|m| {
        let essence = m.split(';').next().unwrap_or_default();
        essence.trim()
    })
}

/// Why a POST cannot be served as it is declared: a body whose `Content-Type` is not
/// JSON (415), or an `Accept` that allows neither `application/json` nor
/// `text/event-stream` (406; the spec requires clients to list both, and a missing one
/// allows nothing this endpoint sends). A body without `Content-Type` is read as JSON.
pub(super) fn check_post_media(h: &HeaderMap) -> Result<(), (StatusCode, String)> {
    if let Some(ct) = h.get(header::CONTENT_TYPE) {
        let json = ct.to_str().is_ok_and(|v| {
            media_types(v)
                .next()
                .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Unsupported Media Type: Content-Type {ct:?} is not application/json"),
            ));
        }
    }
    let answers = [
        "application/json",
        "text/event-stream",
        "application/*",
        "*/*",
    ];
    let acceptable = header_str(h, &header::ACCEPT)
        .is_some_and(|a| media_types(a).any(|m| answers.iter().any(|x| m.eq_ignore_ascii_case(x))));
    if !acceptable {
        return Err((
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Accept must list application/json and text/event-stream".into(),
        ));
    }
    Ok(())
}

pub(super) fn accepts_sse(h: &HeaderMap) -> bool {
    header_str(h, &header::ACCEPT).is_some_and(|a| a.contains("text/event-stream"))
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
    let Some(header_version) = header_str(h, &names::PROTOCOL_VERSION) else {
        return Err(mismatch("missing MCP-Protocol-Version header".into()));
    };
    let params = match r.params.as_deref().map(RawObject::from_raw) {
        Some(Err(e)) if mcp_types::raw::is_too_deep(&e) => {
            return Err((codes::INVALID_PARAMS, mcp_types::raw::read_error(&e)))
        }
        Some(p) => p.unwrap_or_default(),
        None => RawObject::new(),
    };
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
    match header_str(h, &names::METHOD) {
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
    let header = h.get(&names::NAME).map(|v| {
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

/// Checks the `Mcp-Param-*` headers of a 2026 `tools/call` against its arguments, for the
/// tool's mirrored arguments `params`: each present in the body must come as its header,
/// decoded equal to it; a header must not come without its value in the body. Headers
/// for arguments the tool does not mirror are not ours to judge, and are ignored.
pub(super) fn check_param_headers(
    h: &HeaderMap,
    r: &Request,
    params: &[headers::HeaderParam],
) -> Result<(), (i64, String)> {
    if params.is_empty() {
        return Ok(());
    }
    let mismatch = |why: String| (codes::HEADER_MISMATCH, format!("Header mismatch: {why}"));
    let arguments = r
        .params
        .as_deref()
        .and_then(|p| RawObject::from_raw(p).ok())
        .and_then(|p| p.get("arguments").map(|a| a.get().to_owned()))
        .and_then(|a| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&a).ok())
        .unwrap_or_default();
    for p in params {
        let name = format!("mcp-param-{}", p.header.to_ascii_lowercase());
        let header =
            match h.get(name.as_str()).map(|v| v.to_str()) {
                None => None,
                Some(Err(_)) => {
                    return Err(mismatch(format!(
                        "Mcp-Param-{} has invalid characters",
                        p.header
                    )))
                }
                Some(Ok(v)) => Some(headers::decode_value(v.trim()).ok_or_else(|| {
                    mismatch(format!("Mcp-Param-{} is malformed base64", p.header))
                })?),
            };
        match (header, headers::param_text(&arguments, &p.path)) {
            (None, None) => {}
            (Some(h), Some(Ok(b))) if h == b => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "missing Mcp-Param-{} header for argument {}",
                    p.header,
                    p.path.join(".")
                )))
            }
            (Some(h), _) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{} header value '{h}' does not match argument {}",
                    p.header,
                    p.path.join(".")
                )))
            }
        }
    }
    Ok(())
}

fn lacks(key: &str) -> (i64, String) {
    (
        codes::INVALID_PARAMS,
        format!("Invalid params: _meta lacks {key}"),
    )
}

pub(super) fn forbidden(what: &str) -> Response<HttpBody> {
    rpc_error(
        StatusCode::FORBIDDEN,
        None,
        codes::INVALID_REQUEST,
        format!("Forbidden: {what} not allowed"),
    )
}

/// The `Host` and `Origin` checks (DNS rebinding): which of the two failed, if one did
/// (logged when `log`: a probe from an orchestrator's address is no incident).
/// The `Host` half of [`origin_check`], for a browser's top-level navigation (which may
/// come from any site): `Some("Host")` when the `Host` is not allowed.
pub(super) fn origin_check_host(
    o: &HttpOptions,
    parts: &http::request::Parts,
) -> Option<&'static str> {
    let host =
        header_str(&parts.headers, &header::HOST).or(parts.uri.authority().map(|a| a.as_str()));
    if !host.is_some_and(|h| allowed(&o.allowed_hosts, host_of(h))) {
        tracing::warn!(?host, "page refused: Host not allowed");
        return Some("Host");
    }
    None
}

pub(super) fn origin_check(
    o: &HttpOptions,
    parts: &http::request::Parts,
    log: bool,
) -> Option<&'static str> {
    let headers = &parts.headers;
    let host = header_str(headers, &header::HOST).or(parts.uri.authority().map(|a| a.as_str()));
    if !host.is_some_and(|h| allowed(&o.allowed_hosts, host_of(h))) {
        if log {
            tracing::warn!(?host, "rejected: Host not allowed");
        }
        return Some("Host");
    }
    if let Some(origin) = header_str(headers, &header::ORIGIN) {
        let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
        if !allowed(&o.allowed_origins, host_of(authority)) {
            if log {
                tracing::warn!(origin, "rejected: Origin not allowed");
            }
            return Some("Origin");
        }
    }
    None
}
