//! Not part of the API: the header rules of 2026-07-28 requests, reachable for the fuzz
//! targets and their regression test (`mcp_proxy::fuzzing`), which cannot build a whole
//! HTTP exchange per input.

use http::{HeaderMap, HeaderName, HeaderValue};
use mcp_types::Request;

/// `checks`' check of a 2026-07-28 request's mirrored headers against its body,
/// with the headers given as name/value pairs; a pair hyper could not have parsed (an
/// invalid name or value) is left out, as it would never reach the check.
pub fn check_modern_headers(
    pairs: &[(&str, &[u8])],
    request: &Request,
) -> Result<(), (i64, String)> {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) {
            h.append(n, v);
        }
    }
    super::checks::check_modern_headers(&h, request)
}
