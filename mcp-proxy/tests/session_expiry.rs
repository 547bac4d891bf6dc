//! An HTTP upstream that ends the gateway's sessions: the gateway starts new ones by itself
//! and sends the refused request again, for hosts of both eras.
//!
//! The upstream is our Streamable HTTP server behind a layer that speaks only the legacy
//! era (it refuses `server/discover` as a legacy server does) and ends each session after
//! it has answered five calls: the sixth call in a session gets `404` and the session is
//! deleted, as a server whose sessions expire (or that restarted) does.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use mcp_client::EraChoice;
use mcp_proxy::{Aggregator, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{HttpOptions, StreamableHttp};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Value};

/// Calls a session answers before the upstream ends it.
const CALLS_PER_SESSION: usize = 5;

struct Echo;

#[async_trait::async_trait]
impl ServerHandler for Echo {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([object_tool("echo")])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let n = p.arguments.as_ref().and_then(|a| a.get("n")).cloned();
        text_outcome(format!("echo {}", n.unwrap_or(Value::Null)))
    }
}

/// What the upstream saw.
#[derive(Default)]
struct Seen {
    initializes: AtomicUsize,
    expired: AtomicUsize,
    /// Calls answered in each session.
    calls: Mutex<HashMap<String, usize>>,
}

/// The expiring upstream on 127.0.0.1: its URL.
async fn expiring_upstream(seen: Arc<Seen>) -> String {
    let http = StreamableHttp::new(Server::new(Echo), HttpOptions::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (http, seen) = (http.clone(), seen.clone());
            let service = hyper::service::service_fn(
                move |req: http::Request<hyper::body::Incoming>| {
                    let (http, seen) = (http.clone(), seen.clone());
                    async move { Ok::<_, std::convert::Infallible>(expiring(&http, &seen, req).await) }
                },
            );
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
        }
    });
    format!("http://{addr}/mcp")
}

async fn expiring(
    http: &StreamableHttp,
    seen: &Seen,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<mcp_server::http::HttpBody> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match message["method"].as_str() {
        // A legacy server knows no server/discover.
        Some("server/discover") => {
            let error = json!({"jsonrpc": "2.0", "id": message["id"],
                "error": {"code": -32601, "message": "Method not found"}});
            return reply(400, error);
        }
        Some("initialize") => {
            seen.initializes.fetch_add(1, Ordering::SeqCst);
        }
        Some("tools/call") => {
            let s = session.clone().unwrap_or_default();
            let answered = seen.calls.lock().map(|c| c.get(&s).copied().unwrap_or(0));
            if answered.unwrap_or(0) >= CALLS_PER_SESSION {
                seen.expired.fetch_add(1, Ordering::SeqCst);
                end_session(http, &parts, &s).await;
                return reply(
                    404,
                    json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32001, "message": "Session not found"}}),
                );
            }
            if let Ok(mut c) = seen.calls.lock() {
                *c.entry(s).or_default() += 1;
            }
        }
        _ => {}
    }
    http.handle(http::Request::from_parts(parts, Full::new(body)))
        .await
}

/// Ends `session` on the server behind, as expiry would.
async fn end_session(http: &StreamableHttp, parts: &http::request::Parts, session: &str) {
    let mut delete = http::Request::builder()
        .method("DELETE")
        .uri(parts.uri.clone())
        .header("mcp-session-id", session);
    for name in ["host", "mcp-protocol-version"] {
        if let Some(v) = parts.headers.get(name) {
            delete = delete.header(name, v);
        }
    }
    let delete = delete.body(Full::new(Bytes::new())).expect("request");
    let status = http.handle(delete).await.status();
    assert!(status.is_success(), "the session ends: {status}");
}

fn reply(status: u16, body: Value) -> http::Response<mcp_server::http::HttpBody> {
    let body =
        http_body_util::combinators::UnsyncBoxBody::new(Full::new(Bytes::from(body.to_string())));
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(body)
        .expect("response")
}

#[tokio::test]
async fn expired_upstream_sessions_are_started_again_and_no_call_is_lost() {
    let seen = Arc::new(Seen::default());
    let url = expiring_upstream(seen.clone()).await;
    let upstream = UpstreamConfig::new(
        "web",
        UpstreamTransport::Http(mcp_client::http::HttpConfig::new(url)),
    );
    let agg = Aggregator::start(vec![upstream], Default::default())
        .await
        .expect("start");
    assert_eq!(
        agg.status()[0].revision.map(|r| r.era()),
        Some(mcp_types::Era::Legacy),
        "the upstream is legacy"
    );
    // Each host (an in-memory connection is a host session, as a stdio one is) declares
    // nothing, so its calls go on a pooled session, beside the shared one opened at start,
    // which lists the tools; one after the other, they take turns on one.
    let legacy = host(
        &agg,
        mcp_client::NoHandler,
        mcp_client::ClientOptions::default().era(EraChoice::Legacy(Revision::V2025_11_25)),
    )
    .await;
    let modern = host(
        &agg,
        mcp_client::NoHandler,
        mcp_client::ClientOptions::default().era(EraChoice::Modern),
    )
    .await;
    for n in 0..50 {
        for (who, h) in [("legacy", &legacy), ("2026", &modern)] {
            let args = arguments(json!({"n": n}));
            let r = h.call_tool("web__echo", args).await.expect("call answered");
            assert_eq!(r.result.is_error, None, "{who} call {n}: {r:?}");
            assert_eq!(text(&r.result), format!("echo {n}"), "{who} call {n}");
        }
    }
    // The 100 calls take twenty sessions of five calls: nineteen of them started because
    // the upstream ended one. With the shared session, 21 initializes.
    let answered = seen
        .calls
        .lock()
        .map(|c| c.values().copied().collect::<Vec<_>>());
    assert_eq!(answered.ok(), Some(vec![CALLS_PER_SESSION; 20]));
    assert_eq!(seen.initializes.load(Ordering::SeqCst), 21);
    assert_eq!(seen.expired.load(Ordering::SeqCst), 19);
    let status = &agg.status()[0];
    assert_eq!(status.session_renewals, 19, "{status:?}");
    assert!(
        status.connected && status.last_error.is_none(),
        "{status:?}"
    );
    assert_eq!(status.restarts, 0, "a new session is not a restart");
}
