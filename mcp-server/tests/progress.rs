//! Progress a handler reports reaches the client only while it increases (and is a finite
//! number), as the spec requires of each notification for one request.

use mcp_server::{NoArgs, Outcome, Server, ToolRegistry};
use mcp_types::protocol::{CallToolResult, ContentBlock};
use mcp_types::transport::LineTransport;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn progress_that_does_not_increase_or_is_not_finite_is_not_sent() {
    let mut tools = ToolRegistry::new();
    tools.tool("steps", "Reports progress.", |_: NoArgs, ctx| async move {
        for p in [1.0, 1.0, 0.5, f64::NAN, 2.0, f64::INFINITY, 3.0] {
            ctx.progress(p, Some(2.0), None).await;
        }
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text("done")],
            ..Default::default()
        }))
    });
    let (client, server) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server);
    let transport = LineTransport::new(BufReader::new(sr), sw);
    tokio::spawn(async move { Server::new(tools).serve(transport).await });
    let (cr, mut cw) = tokio::io::split(client);
    let mut lines = BufReader::new(cr).lines();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "steps", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "t"}}});
    cw.write_all(format!("{call}\n").as_bytes())
        .await
        .expect("write");
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(5), lines.next_line())
            .await
            .expect("an answer")
            .expect("read")
            .expect("a line");
        let m: Value = serde_json::from_str(&line).expect("JSON");
        if m.get("id").is_some() {
            assert_eq!(m["result"]["content"][0]["text"], "done", "{m}");
            break;
        }
        if m["method"] == "notifications/progress" {
            seen.push(m["params"]["progress"].as_f64().expect("a number"));
        }
    }
    assert_eq!(seen, [1.0, 2.0, 3.0]);
}
