//! A `DowngradePolicy` given in `ServerOptions` decides what a client of an older revision
//! receives, in results and error codes alike; without one the spec's choices stand.

mod common;

use std::sync::Arc;

use mcp_revisions::DowngradePolicy;
use mcp_server::{NoArgs, Outcome, Server, ServerOptions, ToolError, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use mcp_types::raw::RawObject;
use mcp_types::{ErrorObject, Revision};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Links as their bare URI, and a forbidden code as `-32603` rather than the spec's
/// replacement; every other choice the spec's.
struct Terse;

impl DowngradePolicy for Terse {
    fn convert_content(
        &self,
        block: &RawObject<'_>,
        _allowed: &[&str],
        _from: Revision,
        _to: Revision,
    ) -> Vec<Box<RawValue>> {
        let uri = block.get_str("uri").unwrap_or_default();
        let text = json!({"type": "text", "text": format!("<{uri}>")});
        vec![serde_json::value::to_raw_value(&text).expect("a block")]
    }

    fn error_code(&self, _code: i64, _from: Revision, _to: Revision) -> i64 {
        -32603
    }
}

/// `link` answers a resource link (which 2025-03-26 cannot carry); `gone` fails with
/// `-32002` (which 2026-07-28 forbids).
fn server(options: ServerOptions) -> Server {
    let mut tools = ToolRegistry::new();
    tools.tool("link", "A link.", |_: NoArgs, _| async {
        let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a"});
        Ok(Outcome::Complete(CallToolResult {
            content: vec![serde_json::from_value::<ContentBlock>(link)?],
            ..Default::default()
        }))
    });
    tools.tool("gone", "Not found.", |_: NoArgs, _| async {
        Err(ToolError::Protocol(ErrorObject::new(-32002, "Not found")))
    });
    Server::with_options(tools, options)
}

/// What a 2025-03-26 client gets for `link`, and a 2026-07-28 client's error code for `gone`.
async fn what_clients_get(options: ServerOptions) -> (Value, Value) {
    let legacy = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "link"}}),
    ]
    .map(|m| m.to_string());
    let answers = common::converse(server(options.clone()), &legacy, 1 << 20).await;
    let content = answers[1]["result"]["content"].clone();
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "gone", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let answers = common::converse(server(options), &[modern.to_string()], 1 << 20).await;
    (content, answers[0]["error"]["code"].clone())
}

#[tokio::test]
async fn a_policy_in_the_options_decides_what_an_older_client_receives() {
    let (content, code) = what_clients_get(ServerOptions::default()).await;
    assert_eq!(
        content,
        json!([{"type": "text", "text": "Resource link: a <file:///a>"}])
    );
    assert_eq!(code, json!(-32602), "the spec's replacement for -32002");

    let options = ServerOptions::default().downgrade_policy(Arc::new(Terse));
    let (content, code) = what_clients_get(options).await;
    assert_eq!(content, json!([{"type": "text", "text": "<file:///a>"}]));
    assert_eq!(code, json!(-32603));
}
