//! `Client::requests_being_served`: a server's request is counted from the moment the read
//! loop takes it, so a request the server sent just before answering a call is counted by
//! the time that answer is seen (a relay lending the connection to one call at a time
//! relies on it), and counted out once it is answered.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::{ChildTransport, Client, ClientHandler, ClientOptions, StdioCommand};
use mcp_types::protocol::*;
use mcp_types::ErrorObject;
use serde_json::Map;
use tokio::sync::Notify;

#[path = "../../mcp-proxy/tests/common/python.rs"]
mod python;

/// A 2025-06-18 server whose one tool sends `roots/list` and answers the call at once,
/// without waiting for the roots; once the roots' answer comes, it logs `roots answered`.
fn server() -> String {
    python::python_upstream(
        "asker",
        "",
        serde_json::json!([{"name": "ask", "inputSchema": {"type": "object"}}]),
        r#"send({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"})
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "done"}]}})
for reply in sys.stdin:
    if json.loads(reply).get("id") == "roots-1":
        break
send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "roots answered"}})"#,
    )
}

/// Answers `roots/list` only when released.
struct Slow(Arc<Notify>);

#[async_trait]
impl ClientHandler for Slow {
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        self.0.notified().await;
        Ok(ListRootsResult::default())
    }
}

#[tokio::test]
async fn a_request_read_before_an_answer_is_counted_until_it_is_answered() {
    let release = Arc::new(Notify::new());
    let transport = ChildTransport::spawn(&StdioCommand::new("python3", ["-c", &server()]))
        .expect("python3 runs");
    let options = ClientOptions::default().capabilities(ClientCapabilities {
        roots: Some(Default::default()),
        ..Default::default()
    });
    let client = Client::connect(transport, Slow(release.clone()), options)
        .await
        .expect("connects");
    assert_eq!(client.requests_being_served(), 0);
    let call = client.call_tool("ask", Map::new()).await.expect("answered");
    assert!(!call.result.is_error());
    assert_eq!(
        client.requests_being_served(),
        1,
        "the roots/list read before the answer is being served"
    );
    let mut heard = client.notifications();
    release.notify_one();
    // The answer is written after it is counted out: once the server has read it, it is.
    let answered =
        async { while !matches!(heard.recv().await, Ok(TypedNotification::Log(_)) | Err(_)) {} };
    tokio::time::timeout(Duration::from_secs(5), answered)
        .await
        .expect("the server read the roots' answer");
    assert_eq!(
        client.requests_being_served(),
        0,
        "counted out once answered"
    );
    client.close().await;
}
