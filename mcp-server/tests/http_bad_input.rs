//! Bad HTTP input gets the specified status and JSON-RPC error, nothing panics, and other
//! sessions are unaffected. Driven in-process through the hyper service.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_server::Server;
use serde_json::{json, Value};

fn endpoint(max_body: usize) -> StreamableHttp {
    let options = HttpOptions::default().max_body_bytes(max_body);
    StreamableHttp::new(Server::new(mcp_examples::echo_tools()), options)
}

struct Answer {
    status: StatusCode,
    session: Option<String>,
    body: Option<Value>,
}

async fn send(http: &StreamableHttp, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut b = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "127.0.0.1:8080");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    let resp = http.handle(req).await;
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "text/event-stream");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = if is_sse {
        // The last event carries the answer.
        text.lines()
            .rev()
            .find_map(|l| l.strip_prefix("data: "))
            .and_then(|d| serde_json::from_str(d).ok())
    } else {
        serde_json::from_str(&text).ok()
    };
    Answer {
        status,
        session,
        body,
    }
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn modern(id: i64, method: &str, params: Value) -> String {
    let mut p = params;
    p["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": p}).to_string()
}

fn code(a: &Answer) -> i64 {
    a.body
        .as_ref()
        .and_then(|b| b["error"]["code"].as_i64())
        .unwrap_or(0)
}

#[tokio::test]
async fn forbidden_hosts_and_origins_are_403() {
    let http = endpoint(1 << 20);
    let body = modern(1, "tools/list", json!({}));
    let h = [
        ACCEPT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let req = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "evil.example:80");
    let mut req = req;
    for (k, v) in h {
        req = req.header(k, v);
    }
    let resp = http
        .handle(req.body(Full::new(Bytes::from(body.clone()))).expect("req"))
        .await;
    assert_eq!(
        resp.status(),
        StatusCode::FORBIDDEN,
        "DNS rebinding: a foreign Host"
    );
    let evil = send(
        &http,
        "POST",
        &[h[0], h[1], h[2], ("origin", "https://evil.example")],
        &body,
    )
    .await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN);
    let local = send(
        &http,
        "POST",
        &[h[0], h[1], h[2], ("origin", "http://localhost:3000")],
        &body,
    )
    .await;
    assert_eq!(local.status, StatusCode::OK);
}

#[tokio::test]
async fn malformed_and_oversized_bodies() {
    let http = endpoint(1024);
    let a = send(&http, "POST", &[ACCEPT], "{not json").await;
    assert_eq!((a.status, code(&a)), (StatusCode::BAD_REQUEST, -32700));
    let big = modern(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x".repeat(4000)}}),
    );
    let a = send(
        &http,
        "POST",
        &[
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
        &big,
    )
    .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code(&a), -32600);
}

#[tokio::test]
async fn modern_headers_must_match_the_body() {
    let http = endpoint(1 << 20);
    let call = modern(
        7,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let ok = [
        ACCEPT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let a = send(&http, "POST", &ok, &call).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.body
            .as_ref()
            .map(|b| b["result"]["content"][0]["text"].clone()),
        Some(json!("hi"))
    );
    for (broken, why) in [
        (
            vec![ACCEPT, ("mcp-method", "tools/call"), ("mcp-name", "echo")],
            "missing MCP-Protocol-Version",
        ),
        (
            vec![
                ACCEPT,
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ],
            "version mismatch",
        ),
        (
            vec![
                ACCEPT,
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "echo"),
            ],
            "method mismatch",
        ),
        (
            vec![
                ACCEPT,
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ],
            "missing Mcp-Name",
        ),
        (
            vec![
                ACCEPT,
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "other"),
            ],
            "name mismatch",
        ),
    ] {
        let a = send(&http, "POST", &broken, &call).await;
        assert_eq!(
            (a.status, code(&a)),
            (StatusCode::BAD_REQUEST, -32020),
            "{why}"
        );
        assert_eq!(
            a.body.as_ref().map(|b| b["id"].clone()),
            Some(json!(7)),
            "{why}: the error names the request"
        );
    }
    // A base64-encoded Mcp-Name is decoded before comparing.
    let a = send(
        &http,
        "POST",
        &[ok[0], ok[1], ok[2], ("mcp-name", "=?base64?ZWNobw==?=")],
        &call,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);

    let old = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "1900-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let a = send(
        &http,
        "POST",
        &[
            ACCEPT,
            ("mcp-protocol-version", "1900-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &old,
    )
    .await;
    assert_eq!((a.status, code(&a)), (StatusCode::BAD_REQUEST, -32022));
    let unknown = modern(2, "no/such", json!({}));
    let a = send(
        &http,
        "POST",
        &[
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "no/such"),
        ],
        &unknown,
    )
    .await;
    assert_eq!((a.status, code(&a)), (StatusCode::NOT_FOUND, -32601));
    let get = send(
        &http,
        "GET",
        &[ACCEPT, ("mcp-protocol-version", "2026-07-28")],
        "",
    )
    .await;
    assert_eq!(
        get.status,
        StatusCode::METHOD_NOT_ALLOWED,
        "no GET stream in 2026"
    );
}

async fn initialize(http: &StreamableHttp) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let a = send(http, "POST", &[ACCEPT], &init.to_string()).await;
    assert_eq!(a.status, StatusCode::OK);
    a.session.expect("a session id")
}

#[tokio::test]
async fn legacy_sessions_are_required_validated_and_independent() {
    let http = endpoint(1 << 20);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let a = send(&http, "POST", &[ACCEPT], &list).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "no session id");
    let a = send(&http, "POST", &[ACCEPT, ("mcp-session-id", "nope")], &list).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "unknown session");

    let one = initialize(&http).await;
    let two = initialize(&http).await;
    assert_ne!(one, two);
    assert_eq!(http.session_count(), 2);
    let a = send(
        &http,
        "POST",
        &[
            ACCEPT,
            ("mcp-session-id", &one),
            ("mcp-protocol-version", "1999-01-01"),
        ],
        &list,
    )
    .await;
    assert_eq!(
        a.status,
        StatusCode::BAD_REQUEST,
        "unsupported MCP-Protocol-Version"
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let a = send(&http, "POST", &[ACCEPT, ("mcp-session-id", &one)], &note).await;
    assert_eq!(a.status, StatusCode::ACCEPTED);

    let d = send(&http, "DELETE", &[("mcp-session-id", &one)], "").await;
    assert_eq!(d.status, StatusCode::OK);
    let a = send(&http, "POST", &[ACCEPT, ("mcp-session-id", &one)], &list).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "a deleted session is gone");
    let a = send(
        &http,
        "POST",
        &[
            ACCEPT,
            ("mcp-session-id", &two),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &list,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "the other session is unaffected");
    assert!(a.body.is_some_and(|b| b["result"]["tools"]
        .as_array()
        .is_some_and(|t| t.len() == 6)));
    // JSON-only clients get JSON.
    let a = send(
        &http,
        "POST",
        &[("accept", "application/json"), ("mcp-session-id", &two)],
        &list,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.body.is_some_and(|b| b["id"] == 1));
}

#[tokio::test]
async fn bodies_not_declared_json_are_415_and_unacceptable_answers_406() {
    let http = endpoint(1 << 20);
    let list = modern(1, "tools/list", json!({}));
    let mirrored = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = mirrored.to_vec();
        h.extend_from_slice(extra);
        h
    };
    for (headers, status, why) in [
        (
            with(&[ACCEPT, ("content-type", "text/plain")]),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "text/plain body",
        ),
        (
            with(&[
                ACCEPT,
                ("content-type", "application/x-www-form-urlencoded"),
            ]),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "form body",
        ),
        (with(&[]), StatusCode::NOT_ACCEPTABLE, "no Accept"),
        (
            with(&[("accept", "text/html")]),
            StatusCode::NOT_ACCEPTABLE,
            "Accept: text/html",
        ),
    ] {
        let a = send(&http, "POST", &headers, &list).await;
        assert_eq!((a.status, code(&a)), (status, -32600), "{why}");
    }
    for (headers, why) in [
        (
            with(&[ACCEPT, ("content-type", "application/json; charset=utf-8")]),
            "JSON with a charset",
        ),
        (
            with(&[
                ("accept", "application/json"),
                ("content-type", "Application/JSON"),
            ]),
            "JSON only, any case",
        ),
        (with(&[("accept", "*/*")]), "anything, no Content-Type"),
    ] {
        let a = send(&http, "POST", &headers, &list).await;
        assert_eq!(a.status, StatusCode::OK, "{why}");
        assert!(
            a.body
                .as_ref()
                .is_some_and(|b| b["result"]["tools"].is_array()),
            "{why}"
        );
    }
}

#[tokio::test]
async fn params_nested_past_the_limit_are_refused_naming_it() {
    let http = endpoint(1 << 20);
    let deep = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let call = modern(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    )
    .replace(r#""text":"x""#, &format!(r#""text":{deep}"#));
    let headers = [
        ACCEPT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let a = send(&http, "POST", &headers, &call).await;
    let message = a
        .body
        .as_ref()
        .and_then(|b| b["error"]["message"].as_str())
        .unwrap_or_default();
    assert_eq!(code(&a), -32602, "{:?}", a.body);
    assert!(
        message.contains("nest deeper than the limit of 128"),
        "{message}"
    );
}
