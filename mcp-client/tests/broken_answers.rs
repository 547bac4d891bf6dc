//! A stdio server whose answers to calls are broken: cut short, not UTF-8, under an id no
//! request has. Each call fails at once (its timeout is a minute, never waited for) with
//! an error naming the cause, and the next call on the same connection is served.

use std::time::Duration;

use mcp_client::{
    CallOptions, ChildTransport, Client, ClientError, ClientOptions, NoHandler, StdioCommand,
};
use serde_json::{json, Map, Value};

#[path = "../../mcp-proxy/tests/common/python.rs"]
mod python;

/// A 2025-06-18 server with one tool, `answer`, whose `how` argument says how to break
/// the answer; any other `how` is answered right.
fn server() -> String {
    let on_call = r#"how = msg["params"]["arguments"].get("how")
ok = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "fine"}]}}
raw = json.dumps(ok).encode()
if how == "cut":
    raw = raw[:48]
elif how == "utf8":
    raw = raw.replace(b"fine", b"f\xffne")
elif how == "wrong-id":
    ok["id"] = "nobody"
    raw = json.dumps(ok).encode()
sys.stdout.buffer.write(raw + b"\n")
sys.stdout.buffer.flush()"#;
    let tools = json!([{"name": "answer", "inputSchema": {"type": "object"}}]);
    python::python_upstream("broken", "", tools, on_call)
}

fn how(how: &str) -> Map<String, Value> {
    match json!({ "how": how }) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[tokio::test]
async fn a_broken_answer_fails_its_call_at_once_and_the_next_call_is_served() {
    let command = StdioCommand::new("python3", ["-c", &server()]);
    let transport = ChildTransport::spawn(&command).expect("python3 runs");
    let client = Client::connect(transport, NoHandler, ClientOptions::default())
        .await
        .expect("connects");
    let opts = CallOptions::default().timeout(Duration::from_secs(60));
    for (broken, cause) in [
        ("cut", "the answer could not be read: it is cut short ("),
        (
            "utf8",
            "the answer could not be read: it is not valid UTF-8 (",
        ),
        (
            "wrong-id",
            "the answer came with id \"nobody\", which no request has",
        ),
    ] {
        let call = client.call_tool_with("answer", how(broken), &opts);
        let failed = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the failure arrives well before the call's timeout");
        match failed {
            Err(ClientError::BadAnswer(e)) => {
                assert_eq!(e.code, -32603, "{broken}");
                assert!(e.message.starts_with(cause), "{broken}: {}", e.message);
            }
            other => panic!("{broken}: {other:?}"),
        }
        let next = client
            .call_tool_with("answer", how("right"), &opts)
            .await
            .expect("the next call is answered");
        assert_eq!(
            serde_json::to_value(&next.result).expect("json")["content"][0]["text"],
            "fine",
            "after {broken}"
        );
    }
    client.close().await;
}
