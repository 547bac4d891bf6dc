//! Requests an upstream cannot take fail at once, saying why: one longer than the
//! upstream's message limit is not sent, an upstream's error without an id fails the
//! call it belongs to, and each upstream's own call timeout holds.

use std::time::{Duration, Instant};

use mcp_client::{ClientError, StdioCommand};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_types::protocol::CallToolResult;
use mcp_types::ErrorObject;
use serde_json::{json, Value};

mod common;
use common::python::python_upstream;
use common::*;

/// A stdio server with `echo` and `slow` (never answers) that refuses, with an error whose
/// id is null (as a server that cannot read a message must), any line over 1,000 bytes.
fn picky() -> UpstreamConfig {
    let script = python_upstream(
        "picky",
        "import signal",
        json!([object_tool("echo"), object_tool("slow")]),
        r#"
if len(line) > 1000:
    send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "line too long for picky"}})
elif msg["params"]["name"] == "slow":
    signal.pause()
else:
    send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "ok"}]}})
"#,
    );
    let command = StdioCommand::new("python3", ["-c", &script]);
    UpstreamConfig::new("picky", UpstreamTransport::Stdio(command))
}

async fn gateway(upstream: UpstreamConfig) -> Aggregator {
    let options = AggregatorOptions::default().call_timeout(Duration::from_secs(60));
    Aggregator::start(vec![upstream], options)
        .await
        .expect("starts")
}

/// One call through the gateway as a 2026 host (its result, or the JSON-RPC error it got),
/// and how long it took.
async fn timed_call(
    agg: &Aggregator,
    name: &str,
    args: Value,
) -> (Result<CallToolResult, ErrorObject>, Duration) {
    let client = host(agg, mcp_client::NoHandler, Default::default()).await;
    let started = Instant::now();
    let out = client.call_tool(name, arguments(args)).await;
    let took = started.elapsed();
    client.close().await;
    match out {
        Ok(c) => (Ok(c.result), took),
        Err(ClientError::Server(e)) => (Err(e), took),
        Err(e) => panic!("the host's side failed: {e}"),
    }
}

/// The text of a result or the message of an error; whether it is a failure.
fn said(out: &Result<CallToolResult, ErrorObject>) -> (String, bool) {
    match out {
        Ok(r) => (text(r), r.is_error()),
        Err(e) => (e.message.clone(), true),
    }
}

fn long_text() -> Value {
    json!({"text": "x".repeat(2_000)})
}

#[tokio::test]
async fn an_error_without_an_id_fails_the_call_it_belongs_to_at_once() {
    let agg = gateway(picky()).await;
    let (out, took) = timed_call(&agg, "picky__echo", long_text()).await;
    let (what, failed) = said(&out);
    assert!(failed && what.contains("line too long for picky"), "{what}");
    assert!(
        took < Duration::from_secs(10),
        "not left to time out: {took:?}"
    );
    let (out, _) = timed_call(&agg, "picky__echo", json!({"text": "short"})).await;
    assert_eq!(
        said(&out),
        ("ok".into(), false),
        "the connection keeps working"
    );
}

#[tokio::test]
async fn a_request_over_the_upstreams_limit_is_not_sent_and_names_the_limit() {
    let agg = gateway(picky().max_message_bytes(1_000)).await;
    let (out, took) = timed_call(&agg, "picky__echo", long_text()).await;
    let (what, failed) = said(&out);
    assert!(
        failed && what.contains("1000-byte"),
        "names the limit: {what}"
    );
    assert!(
        !what.contains("line too long for picky"),
        "the upstream never saw it: {what}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (out, _) = timed_call(&agg, "picky__echo", json!({"text": "short"})).await;
    assert_eq!(said(&out), ("ok".into(), false));
}

#[tokio::test]
async fn an_upstreams_own_call_timeout_holds() {
    let agg = gateway(picky().call_timeout(Duration::from_millis(700))).await;
    let (out, took) = timed_call(&agg, "picky__slow", json!({})).await;
    let (what, failed) = said(&out);
    assert!(failed && what.contains("700ms"), "{what}");
    assert!(
        took < Duration::from_secs(10),
        "the upstream's 700 ms, not the gateway's 60 s: {took:?}"
    );
}
