//! TOOL-09 on the server side: a 2026-07-28 `tools/call` over HTTP whose tool mirrors an
//! argument into an `Mcp-Param-*` header is refused with `-32020` when that header is
//! absent, differs from the argument or is malformed, and served when it is right; by our
//! server directly and by the gateway in front of it (which learns the mirrored arguments
//! from the upstream's listing).

use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::{Outcome, Server, ToolRegistry};
use mcp_types::protocol::*;
use serde_json::{json, Map, Value};

mod common;
use common::raw_http::exchange;

/// One tool, `routed`, whose `region` argument is mirrored into `Mcp-Param-Region`.
fn routed() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}
    }});
    tools.raw_tool(
        Tool::new("routed", schema),
        |args: Map<String, Value>, _| async move {
            let region = args.get("region").and_then(Value::as_str).unwrap_or("?");
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(format!("served {region}"))],
                ..Default::default()
            }))
        },
    );
    tools
}

async fn serve(server: Server) -> String {
    let (addr, _task) = mcp_server::http::bind(
        "127.0.0.1:0".parse().expect("addr"),
        server,
        mcp_server::http::HttpOptions::default(),
    )
    .await
    .expect("bind");
    addr.to_string()
}

/// A 2026 `tools/call` of `tool` with `region` as its argument and `param` (a whole header
/// line, or none) beside the headers a 2026 request carries; the status and the body.
async fn call(addr: &str, tool: &str, param: Option<&str>) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool,
        "arguments": {"region": "eu-west"},
        "_meta": {
            mcp_types::meta::PROTOCOL_VERSION: "2026-07-28",
            mcp_types::meta::CLIENT_CAPABILITIES: {},
            mcp_types::meta::CLIENT_INFO: {"name": "t", "version": "1"},
        },
    }});
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: {tool}"
    );
    if let Some(p) = param {
        head.push_str("\r\n");
        head.push_str(p);
    }
    let addr = addr.to_owned();
    let (status, body) =
        tokio::task::spawn_blocking(move || exchange(&addr, &head, &body.to_string()))
            .await
            .expect("exchange");
    // An answer may come as one SSE event.
    let json = body
        .lines()
        .find_map(|l| {
            l.strip_prefix("data: ")
                .or(Some(l).filter(|l| l.starts_with('{')))
        })
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

/// Every case, against the server at `addr` serving the tool as `tool`.
async fn each_case_answered_as_the_spec_says(addr: &str, tool: &str) {
    let (status, ok) = call(addr, tool, Some("Mcp-Param-Region: eu-west")).await;
    assert_eq!(status, 200, "{ok}");
    assert_eq!(
        ok.pointer("/result/content/0/text").and_then(Value::as_str),
        Some("served eu-west"),
        "{ok}"
    );
    let encoded = call(
        addr,
        tool,
        Some("Mcp-Param-Region: =?base64?ZXUtd2VzdA==?="),
    )
    .await;
    assert_eq!(
        encoded
            .1
            .pointer("/result/content/0/text")
            .and_then(Value::as_str),
        Some("served eu-west"),
        "base64-encoded, the same value: {}",
        encoded.1
    );
    for (case, header) in [
        ("absent", None),
        ("unequal", Some("Mcp-Param-Region: us-east")),
        (
            "malformed",
            Some("Mcp-Param-Region: =?base64?not base64!?="),
        ),
    ] {
        let (status, refused) = call(addr, tool, header).await;
        assert_eq!(
            refused.pointer("/error/code").and_then(Value::as_i64),
            Some(-32020),
            "{case}: {status} {refused}"
        );
        assert!(refused.get("result").is_none(), "{case}: {refused}");
    }
}

#[tokio::test]
async fn our_server_checks_each_mirrored_argument_against_its_header() {
    let addr = serve(Server::new(routed())).await;
    each_case_answered_as_the_spec_says(&addr, "routed").await;
}

#[tokio::test]
async fn the_gateway_checks_each_mirrored_argument_against_its_header() {
    let upstream = UpstreamConfig::new("up", UpstreamTransport::InProcess(Server::new(routed())));
    let agg = Aggregator::start(vec![upstream], AggregatorOptions::default())
        .await
        .expect("start");
    let addr = serve(agg.server(Default::default())).await;
    each_case_answered_as_the_spec_says(&addr, "up__routed").await;
    agg.shutdown().await;
}
