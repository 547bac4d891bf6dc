//! A handler that has sent a call's arguments on can let go of them while the call waits
//! (`Call::forget_arguments`), keeping the rest of the params; one that keeps them reads
//! them again from the task it hands the call to.

use mcp_server::{Call, Outcome, RawResult, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use serde_json::json;

mod common;

/// Answers a call, from a task, with the names of the params the task can still read;
/// `forget`: after letting go of the arguments where it took the call.
struct Reads {
    forget: bool,
}

#[async_trait::async_trait]
impl ServerHandler for Reads {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(Default::default()),
            ..Default::default()
        }
    }

    fn call_tool_raw(&self, mut call: Call, params: RawObject<'_>) {
        assert!(
            params.contains_key("name"),
            "the handler is given the params"
        );
        if self.forget {
            assert!(call.forget_arguments(), "there were arguments");
            assert!(!call.forget_arguments(), "and they are gone");
        }
        call.spawn(|req| async move {
            let params = req.params()?;
            let mut names: Vec<&str> = params.keys().collect();
            names.sort_unstable();
            let result = CallToolResult {
                content: vec![ContentBlock::text(names.join(","))],
                ..Default::default()
            };
            let body = serde_json::value::to_raw_value(&result).expect("a result");
            Ok(Outcome::Complete(RawResult {
                revision: None,
                body,
            }))
        });
    }
}

/// What a 2025-06-18 client's call to `handler` gives as text.
async fn answer(handler: Reads) -> String {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"k": 1}}}),
    ]
    .map(|l| l.to_string());
    let answers = common::converse(Server::new(handler), &lines, 1 << 16).await;
    answers[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn forgotten_arguments_leave_the_other_params_and_kept_ones_are_read_as_sent() {
    assert_eq!(
        answer(Reads { forget: false }).await,
        "_meta,arguments,name"
    );
    assert_eq!(answer(Reads { forget: true }).await, "_meta,name");
}
