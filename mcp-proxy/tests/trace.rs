//! W3C trace context through the gateway: a host's `traceparent` in `_meta`, or (a
//! 2026-07-28 host over HTTP) in its request headers, reaches a 2026-07-28 upstream and a
//! legacy one in their requests' `_meta`, one trace id end to end.

use mcp_client::http::{HttpConfig, HttpTransport};
use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::http::{bind, HttpOptions};
use mcp_server::{NoArgs, Outcome, RequestContext, Server, ServerOptions, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use mcp_types::Revision;
use serde_json::{json, Value};

mod common;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn traceparent() -> String {
    format!("00-{TRACE}-00f067aa0ba902b7-01")
}

/// An upstream whose `trace` tool says the trace id of the request it got.
fn tracing_upstream(key: &str, revision: Revision) -> UpstreamConfig {
    let mut tools = ToolRegistry::new();
    tools.tool(
        "trace",
        "The trace id of this request.",
        |_: NoArgs, ctx: RequestContext| async move {
            let id = ctx
                .trace_context()
                .map_or("none", |t| t.trace_id())
                .to_owned();
            let state = ctx
                .trace_context()
                .and_then(|t| t.tracestate())
                .unwrap_or("-");
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(format!("{id} {state}"))],
                ..Default::default()
            }))
        },
    );
    UpstreamConfig::new(key, UpstreamTransport::InProcess(Server::new(tools))).revision(revision)
}

async fn gateway() -> Aggregator {
    let upstreams = vec![
        tracing_upstream("modern", Revision::V2026_07_28),
        tracing_upstream("legacy", Revision::V2025_06_18),
    ];
    Aggregator::start(upstreams, AggregatorOptions::default())
        .await
        .expect("start")
}

async fn traced(host: &Client, tool: &str, meta: Value) -> String {
    let params = json!({"name": tool, "arguments": {}, "_meta": meta});
    let r = host
        .request("tools/call", params, &CallOptions::default())
        .await
        .expect("call");
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_traceparent_in_meta_reaches_both_eras_of_upstream() {
    let agg = gateway().await;
    for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2025_06_18)] {
        let options = ClientOptions::default().era(era);
        let host = common::host(&agg, NoHandler, options).await;
        let meta = json!({"traceparent": traceparent(), "tracestate": "congo=t61rcWkgMzE"});
        for tool in ["modern__trace", "legacy__trace"] {
            let seen = traced(&host, tool, meta.clone()).await;
            assert_eq!(
                seen,
                format!("{TRACE} congo=t61rcWkgMzE"),
                "{era:?} host, {tool}"
            );
        }
        assert_eq!(traced(&host, "modern__trace", json!({})).await, "none -");
        host.close().await;
    }
    agg.shutdown().await;
}

#[tokio::test]
async fn a_2026_hosts_traceparent_header_continues_upstream_in_meta() {
    let agg = gateway().await;
    let server = agg.server(ServerOptions::default());
    let (addr, _task) = bind(
        "127.0.0.1:0".parse().expect("address"),
        server,
        HttpOptions::default(),
    )
    .await
    .expect("bind");
    let config = HttpConfig::new(format!("http://{addr}/mcp"))
        .headers(vec![("traceparent".into(), traceparent())]);
    let options = ClientOptions::default().era(EraChoice::Modern);
    let host = Client::connect(
        HttpTransport::new(config).expect("transport"),
        NoHandler,
        options,
    )
    .await
    .expect("connect");
    for tool in ["modern__trace", "legacy__trace"] {
        assert_eq!(
            traced(&host, tool, json!({})).await,
            format!("{TRACE} -"),
            "{tool}"
        );
    }
    host.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn an_http_upstream_gets_the_trace_context_as_headers_too() {
    let mut tools = ToolRegistry::new();
    tools.tool(
        "header",
        "The traceparent header of this request.",
        |_: NoArgs, ctx: RequestContext| async move {
            let header = ctx
                .http_request()
                .and_then(|r| r.headers.get("traceparent"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(header)],
                ..Default::default()
            }))
        },
    );
    let (addr, _task) = bind(
        "127.0.0.1:0".parse().expect("address"),
        Server::new(tools),
        HttpOptions::default(),
    )
    .await
    .expect("bind");
    let upstream = UpstreamConfig::new(
        "web",
        UpstreamTransport::Http(HttpConfig::new(format!("http://{addr}/mcp"))),
    )
    // 2026-07-28: each request's HTTP headers are its own.
    .revision(Revision::V2026_07_28);
    let agg = Aggregator::start(vec![upstream], AggregatorOptions::default())
        .await
        .expect("start");
    let host = common::host(&agg, NoHandler, ClientOptions::default()).await;
    let seen = traced(&host, "web__header", json!({"traceparent": traceparent()})).await;
    assert_eq!(seen, traceparent());
    assert_eq!(traced(&host, "web__header", json!({})).await, "none");
    host.close().await;
    agg.shutdown().await;
}
