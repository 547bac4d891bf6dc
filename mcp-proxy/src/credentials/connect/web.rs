//! The small pieces of HTTP the connect pages speak: a page, a redirect, a query's and a
//! cookie's values.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_server::http::HttpBody;

/// The cookie that ties a flow's steps to the browser that began it.
pub(crate) const COOKIE: &str = "mcp_connect";

/// A page saying `text` under `title`, with `status`.
pub(crate) fn page(status: StatusCode, title: &str, text: &str) -> Response<HttpBody> {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1><p>{x}</p></body></html>",
        t = escape(title),
        x = escape(text)
    );
    let mut r = Response::new(Full::new(Bytes::from(html)).boxed_unsync());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    r
}

/// A redirect to `to`, setting the flow cookie to `browser` if given (`secure`: the
/// gateway is served over https).
pub(crate) fn redirect(to: &str, browser: Option<(&str, bool)>) -> Response<HttpBody> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *r.status_mut() = StatusCode::FOUND;
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(to) {
        h.insert(header::LOCATION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if let Some((value, secure)) = browser {
        let secure = if secure { "; Secure" } else { "" };
        let cookie =
            format!("{COOKIE}={value}; Path=/connect; HttpOnly; SameSite=Lax; Max-Age=600{secure}");
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            h.insert(header::SET_COOKIE, v);
        }
    }
    r
}

/// The value of `name` in `query` (form-encoded), decoded.
pub(crate) fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k)? == name).then(|| decode(v)).flatten()
    })
}

/// The value of cookie `name` in `headers`.
pub(crate) fn cookie(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k == name).then(|| v.to_owned())
        })
}

/// `text` percent-decoded (`+` as a space); `None` if not UTF-8 once decoded.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_cookies_are_read_and_pages_escape() {
        assert_eq!(query_value("a=1&t=x%2By+z", "t").as_deref(), Some("x+y z"));
        assert_eq!(query_value("a=1", "t"), None);
        assert_eq!(query_value("t=%zz", "t"), None);
        assert_eq!(query_value("t=%4", "t"), None);
        let mut h = http::HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; mcp_connect=abc"),
        );
        assert_eq!(cookie(&h, COOKIE).as_deref(), Some("abc"));
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }
}
