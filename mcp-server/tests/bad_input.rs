//! Peer input that is malformed, oversized, deeply nested, of the wrong type or for an
//! unknown method gets the spec's error, and the connection keeps working.

use mcp_server::{NoArgs, Outcome, Server, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

mod common;

async fn converse(lines: &[String], limit: usize) -> Vec<Value> {
    let mut tools = ToolRegistry::new();
    tools.tool("hello", "Says hello.", |_: NoArgs, _ctx| async move {
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text("hello")],
            ..Default::default()
        }))
    });
    common::converse(Server::new(tools), lines, limit).await
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or(0)
}

#[tokio::test]
async fn each_bad_message_gets_its_error_and_the_connection_keeps_working() {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let lines = vec![
        "this is not json".to_owned(),
        init.to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3}).to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{{"pad":"{}"}}}}"#, "x".repeat(5000)),
        deep,
        json!({"jsonrpc": "2.0", "method": "notifications/vendor/unknown"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": {}}).to_string(),
        json!([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 8, "method": "ping"}]).to_string(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "hello"}}).to_string(),
    ];
    let a = converse(&lines, 4096).await;
    assert_eq!(
        (code(&a[0]), &a[0]["id"]),
        (-32700, &Value::Null),
        "not JSON"
    );
    assert_eq!(a[1]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        (code(&a[2]), &a[2]["id"]),
        (-32601, &json!(1)),
        "unknown method"
    );
    assert_eq!(
        (code(&a[3]), &a[3]["id"]),
        (-32602, &json!(2)),
        "wrong param type"
    );
    assert_eq!(code(&a[4]), -32600, "not a request");
    assert_eq!(
        (code(&a[5]), &a[5]["id"]),
        (-32600, &Value::Null),
        "over the size limit"
    );
    assert_eq!(
        code(&a[6]),
        -32600,
        "too deep to read is invalid, never a crash"
    );
    assert_eq!(
        (code(&a[7]), &a[7]["id"]),
        (-32602, &json!(5)),
        "unknown tool"
    );
    assert_eq!(
        (code(&a[8]), &a[8]["id"]),
        (-32601, &json!(6)),
        "a server-to-client method sent to the server"
    );
    let batch = a[9].as_array().expect("a batch is answered with a batch");
    assert_eq!(batch.len(), 2);
    assert_eq!(
        a[10]["result"]["content"][0]["text"], "hello",
        "still working"
    );
}

#[tokio::test]
async fn modern_requests_with_an_unsupported_version_get_32022() {
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "1900-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let legacy_first = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let a = converse(&[req.to_string(), legacy_first.to_string()], 1 << 20).await;
    assert_eq!(code(&a[0]), -32022);
    assert_eq!(a[0]["error"]["data"]["requested"], "1900-01-01");
    assert!(a[0]["error"]["data"]["supported"]
        .as_array()
        .is_some_and(|s| s.contains(&json!("2026-07-28"))));
    assert_eq!(
        code(&a[1]),
        -32600,
        "a legacy request before initialize is refused with a reason"
    );
}

#[tokio::test]
async fn params_nested_past_the_limit_are_refused_naming_it_on_stdio() {
    let deep = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let modern_call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"hello","arguments":{{"x":{deep}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let a = converse(&[modern_call], 1 << 20).await;
    assert_eq!(code(&a[0]), -32602, "{}", a[0]);
    assert!(
        a[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nest deeper than the limit of 128")),
        "{}",
        a[0]
    );
}
