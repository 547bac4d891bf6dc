//! A `Switch` replaces its handler while a connection stays open: the next request is
//! served by the new handler, on the same session, with nothing asked again.

use mcp_server::{Outcome, RequestContext, Server, ServerHandler, Switch};
use mcp_types::protocol::*;
use mcp_types::transport::LineTransport;
use mcp_types::ErrorObject;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Answers every tool call with its own name.
struct Named(&'static str);

#[async_trait::async_trait]
impl ServerHandler for Named {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        _: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text(self.0)],
            ..Default::default()
        }))
    }
}

fn call(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "who", "arguments": {}}})
    .to_string()
}

#[tokio::test]
async fn the_next_request_on_an_open_connection_goes_to_the_new_handler() {
    let switch = Switch::new(Named("first"));
    let (client, end) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(end);
    let server = Server::new(switch.clone());
    let serving = tokio::spawn(async move {
        server
            .serve(LineTransport::new(BufReader::new(sr), sw))
            .await
    });
    let (cr, mut cw) = tokio::io::split(client);
    let mut lines = BufReader::new(cr).lines();
    let mut ask = async |line: String| -> Value {
        cw.write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        let got = lines.next_line().await.expect("read").expect("an answer");
        serde_json::from_str(&got).expect("JSON")
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(
        ask(init.to_string()).await["result"]["protocolVersion"],
        "2025-06-18"
    );
    assert_eq!(ask(call(1)).await["result"]["content"][0]["text"], "first");
    let before = switch.replace(Named("second"));
    assert_eq!(before.0, "first");
    assert_eq!(ask(call(2)).await["result"]["content"][0]["text"], "second");

    serving.abort();
}
