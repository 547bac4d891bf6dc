//! What the endpoint answers with: JSON bodies, JSON-RPC errors with their HTTP status,
//! and Server-Sent Events.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use mcp_types::{codes, ErrorObject, ErrorResponse, Frame, Message, RequestId};

/// The body of every response this module writes.
pub type HttpBody = UnsyncBoxBody<Bytes, Infallible>;

pub(super) fn frame_body(frame: &Frame) -> HttpBody {
    let mut out = Vec::new();
    frame.write_to(&mut out);
    Full::new(Bytes::from(out)).boxed_unsync()
}

pub(super) fn empty() -> HttpBody {
    Full::new(Bytes::new()).boxed_unsync()
}

pub(super) fn respond(
    status: StatusCode,
    body: HttpBody,
    content_type: Option<&'static str>,
) -> Response<HttpBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut()
            .insert(header::CONTENT_TYPE, header::HeaderValue::from_static(ct));
    }
    r
}

/// A message as a JSON response.
pub(super) fn json(status: StatusCode, msg: &Message) -> Response<HttpBody> {
    let body = Full::new(Bytes::from(msg.to_bytes())).boxed_unsync();
    respond(status, body, Some("application/json"))
}

pub(super) fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response<HttpBody> {
    let e = Message::Error(ErrorResponse::new(id, ErrorObject::new(code, message)));
    json(status, &e)
}

/// A request's lone answer as a JSON response, with `status` unless the answer is a
/// rate limit's refusal ([`codes::RATE_LIMITED`]): that one goes with `429` and a
/// `Retry-After` of its `data.retryAfterMs` in whole seconds (at least 1), which every
/// HTTP client and proxy understands without reading the body.
pub(super) fn lone_answer(status: StatusCode, msg: &Message) -> Response<HttpBody> {
    let Some(retry) = rate_limited_retry(msg) else {
        return json(status, msg);
    };
    let mut r = json(StatusCode::TOO_MANY_REQUESTS, msg);
    r.headers_mut().insert(header::RETRY_AFTER, retry.into());
    r
}

/// The seconds to wait that a rate limit's refusal names.
fn rate_limited_retry(msg: &Message) -> Option<u64> {
    let Message::Error(e) = msg else {
        return None;
    };
    if e.error.code != codes::RATE_LIMITED {
        return None;
    }
    let millis = e
        .error
        .data
        .as_ref()
        .and_then(|d| d.get("retryAfterMs"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1000);
    Some(millis.div_ceil(1000).max(1))
}

/// The HTTP status a 2026-07-28 error answer travels with.
pub(super) fn modern_status(code: i64) -> StatusCode {
    match code {
        codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::PARSE_ERROR | codes::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// One SSE event, ready to write in one piece.
pub(super) fn sse_event(id: Option<&str>, msg: &Message) -> Bytes {
    let mut out = Vec::with_capacity(256);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    let start = out.len();
    msg.write_to(&mut out);
    // A payload that came pretty-printed holds line breaks only between tokens (a JSON
    // string cannot hold a raw one); in an event they would end the `data:` line.
    if memchr::memchr2(b'\n', b'\r', &out[start..]).is_some() {
        let mut i = 0;
        out.retain(|b| {
            let keep = i < start || (*b != b'\n' && *b != b'\r');
            i += 1;
            keep
        });
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The keep-alive comment an idle stream gets.
pub(super) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A keep-alive timer for an SSE body.
pub(super) fn keep_alive(every: Duration) -> tokio::time::Interval {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval
}

/// A response carrying an SSE body.
pub(super) fn sse(body: HttpBody) -> Response<HttpBody> {
    let mut r = respond(StatusCode::OK, body, Some("text/event-stream"));
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    r.headers_mut()
        .insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_data_line_even_for_a_pretty_printed_payload() {
        let msg = Message::parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r\n  \"a\": \"x y\",\n  \"b\": [1,\n 2]\n}}")
            .expect("parses");
        let event = sse_event(Some("7"), &msg);
        let text = std::str::from_utf8(&event).expect("utf-8");
        assert_eq!(
            text,
            "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{  \"a\": \"x y\",  \"b\": [1, 2]}}\n\n"
        );
    }

    #[test]
    fn a_rate_limited_answer_goes_with_429_and_retry_after_in_whole_seconds() {
        let limited = |data: serde_json::Value| {
            let mut e = ErrorObject::new(codes::RATE_LIMITED, "rate limit reached");
            e.data = Some(data);
            Message::Error(ErrorResponse::new(Some(RequestId::from(1)), e))
        };
        let r = lone_answer(
            StatusCode::OK,
            &limited(serde_json::json!({"retryAfterMs": 1200})),
        );
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        let r = lone_answer(
            StatusCode::OK,
            &limited(serde_json::json!({"retryAfterMs": 5})),
        );
        assert_eq!(
            r.headers()[header::RETRY_AFTER],
            "1",
            "never 0: that says retry at once"
        );
        let other = Message::Error(ErrorResponse::new(
            Some(RequestId::from(1)),
            ErrorObject::new(codes::INVALID_PARAMS, "no"),
        ));
        let r = lone_answer(StatusCode::OK, &other);
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers().get(header::RETRY_AFTER).is_none());
    }
}
