//! A stdio upstream whose answers to calls are broken: cut short, not UTF-8, under an id
//! no request has. Each call through the gateway fails at once (its timeout is a minute,
//! never waited for) with an error result naming the upstream and the cause, and the
//! next call on the same connection is served.

use std::time::Duration;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use serde_json::json;

mod common;
use common::python::python_upstream;
use common::*;

/// How the upstream answers a call: as its `how` argument says.
const ON_CALL: &str = r#"
how = msg["params"]["arguments"].get("how")
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
sys.stdout.buffer.flush()
"#;

#[tokio::test]
async fn broken_answers_fail_their_call_at_once_and_the_next_call_is_served() {
    let script = python_upstream("broken", "", json!([object_tool("answer")]), ON_CALL);
    let command = StdioCommand::new("python3", ["-c", &script]);
    let upstream = UpstreamConfig::new("broken", UpstreamTransport::Stdio(command));
    let options = AggregatorOptions::default().call_timeout(Duration::from_secs(60));
    let agg = Aggregator::start(vec![upstream], options)
        .await
        .expect("starts");
    let host = host(&agg, mcp_client::NoHandler, Default::default()).await;
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
        let call = host.call_tool("broken__answer", arguments(json!({ "how": broken })));
        let failed = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the failure arrives well before the call's timeout")
            .expect("an error result")
            .result;
        let said = text(&failed);
        assert!(failed.is_error(), "{broken}: {said}");
        assert!(
            said.starts_with(&format!("upstream `broken` failed: {cause}")),
            "{broken}: {said}"
        );
        let next = host
            .call_tool("broken__answer", arguments(json!({ "how": "right" })))
            .await
            .expect("the next call is answered")
            .result;
        assert_eq!(text(&next), "fine", "after {broken}");
    }
    host.close().await;
    agg.shutdown().await;
}
