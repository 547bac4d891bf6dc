//! Our client and our server, in every revision, over the in-memory pair and over stdio:
//! the behaviours each side promises, and every message each side writes validated
//! against that revision's official schema.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::{
    CallOptions, ChildTransport, Client, ClientError, ClientHandler, ClientOptions, EraChoice,
    OutputCheck, StdioCommand,
};
use mcp_server::Server;
use mcp_types::protocol::*;
use mcp_types::transport::{memory_pair, CloseReason};
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

use http as http_headers;

mod common;
use common::{http_transport, validate_all, Recording};

/// Answers elicitation with a name, as a person would.
struct Ada;

#[async_trait]
impl ClientHandler for Ada {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert_eq!(params.message, "What is your name?");
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
            ..Default::default()
        })
    }
}

fn options(revision: Revision) -> ClientOptions {
    let era = if revision == Revision::V2026_07_28 {
        EraChoice::Modern
    } else {
        EraChoice::Legacy(revision)
    };
    ClientOptions::default()
        .with_elicitation()
        .era(era)
        .supported(vec![revision])
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn text_of(r: &CallToolResult) -> Vec<String> {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

/// The behaviours both sides promise, in one revision.
async fn exercise(client: &Client, revision: Revision) {
    assert_eq!(client.revision(), revision);
    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "pixel", "weather", "fail", "count", "greet"],
        "deterministic order"
    );
    let pixel = tools.iter().find(|t| t.name == "pixel").expect("pixel");
    assert_eq!(
        pixel
            .input_schema
            .as_ref()
            .map(|s| s.to_value().expect("json")),
        Some(json!({"type": "object", "additionalProperties": false}))
    );

    let echo = client
        .call_tool("echo", args(json!({"text": "hi"})))
        .await
        .expect("echo");
    assert_eq!(text_of(&echo.result), ["hi"]);

    let fail = client
        .call_tool("fail", Map::new())
        .await
        .expect("fail is a result, not an error");
    assert!(fail.result.is_error());
    assert!(text_of(&fail.result)[0].contains("boom"));

    let bad = client
        .call_tool("echo", args(json!({"text": 5})))
        .await
        .expect("bad args are a result");
    assert!(bad.result.is_error());
    assert!(
        text_of(&bad.result)[0].contains("Invalid arguments for tool `echo`"),
        "{:?}",
        text_of(&bad.result)
    );

    let weather = client
        .call_tool("weather", args(json!({"city": "Oslo"})))
        .await
        .expect("weather");
    if revision >= Revision::V2025_06_18 {
        assert_eq!(weather.output, OutputCheck::Valid);
        assert_eq!(
            weather
                .result
                .structured_content
                .as_ref()
                .map(|v| v["conditions"].clone()),
            Some(json!("Partly cloudy"))
        );
    } else {
        assert!(
            weather.result.structured_content.is_none(),
            "no structuredContent before 2025-06-18"
        );
        assert!(
            text_of(&weather.result)
                .iter()
                .any(|t| t.contains("Partly cloudy")),
            "kept as text"
        );
    }

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = CallOptions::default().progress(tx);
    let count = client
        .call_tool_with("count", args(json!({"to": 3})), &opts)
        .await
        .expect("count");
    assert_eq!(text_of(&count.result), ["counted to 3"]);
    let mut steps = Vec::new();
    while let Ok(p) = rx.try_recv() {
        steps.push(p.progress);
    }
    assert_eq!(
        steps,
        [json!(1.0), json!(2.0), json!(3.0)],
        "progress reached the caller"
    );

    if revision >= Revision::V2025_06_18 {
        let greet = client.call_tool("greet", Map::new()).await.expect("greet");
        assert_eq!(text_of(&greet.result), ["Hello, Ada!"]);
    }

    let unknown = client
        .call_tool("nope", Map::new())
        .await
        .expect_err("unknown tool");
    assert!(matches!(unknown, ClientError::Server(e) if e.code == -32602));
}

#[tokio::test]
async fn client_and_server_in_every_revision_over_memory_with_valid_messages() {
    for revision in Revision::ALL {
        let (a, b) = memory_pair(64);
        let (client_sent, server_sent) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(Mutex::new(Vec::new())),
        );
        let server = Server::new(mcp_examples::echo_tools());
        let server_t = Recording {
            inner: b,
            sent: server_sent.clone(),
            received: None,
        };
        let serving = tokio::spawn(async move { server.serve(server_t).await });
        let client_t = Recording {
            inner: a,
            sent: client_sent.clone(),
            received: None,
        };
        let client = Client::connect(client_t, Ada, options(revision))
            .await
            .expect("connect");
        exercise(&client, revision).await;
        client.close().await;
        let reason = tokio::time::timeout(Duration::from_secs(5), serving)
            .await
            .expect("server ends")
            .expect("join");
        assert_eq!(reason, CloseReason::PeerClosed);
        let c = client_sent.lock().expect("lock").clone();
        let s = server_sent.lock().expect("lock").clone();
        assert!(
            c.len() > 8 && s.len() > 8,
            "{revision}: too few messages recorded"
        );
        validate_all(revision, &c, &s);
    }
}

/// The echo server example, built by `cargo test` beside this test binary.
fn echo_server_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("examples")
        .join(format!("echo-server{}", std::env::consts::EXE_SUFFIX))
}

#[tokio::test]
async fn client_and_server_in_every_revision_over_stdio() {
    let bin = echo_server_binary();
    assert!(bin.exists(), "{} is built by cargo test", bin.display());
    for revision in Revision::ALL {
        let t = ChildTransport::spawn(&StdioCommand::new(
            bin.display().to_string(),
            Vec::<String>::new(),
        ))
        .expect("spawn");
        let client = Client::connect(t, Ada, options(revision))
            .await
            .expect("connect");
        exercise(&client, revision).await;
        client.close().await;
    }
}

#[tokio::test]
async fn era_detection_finds_a_modern_server_and_falls_back_for_a_legacy_one() {
    let (a, b) = memory_pair(16);
    tokio::spawn(async move { Server::new(mcp_examples::echo_tools()).serve(b).await });
    let client = Client::connect(a, Ada, ClientOptions::default())
        .await
        .expect("connect");
    assert_eq!(client.revision(), Revision::V2026_07_28);

    // A legacy-only server: the server/discover probe fails and the client initializes.
    let (a, b) = memory_pair(16);
    let legacy = mcp_server::ServerOptions::default()
        .supported(vec![Revision::V2025_03_26, Revision::V2025_06_18]);
    tokio::spawn(async move {
        Server::with_options(mcp_examples::echo_tools(), legacy)
            .serve(b)
            .await
    });
    let client = Client::connect(a, Ada, ClientOptions::default())
        .await
        .expect("connect");
    assert_eq!(
        client.revision(),
        Revision::V2025_06_18,
        "the server counter-offered its newest"
    );
    assert!(client.list_tools().await.is_ok());
}

/// A server that answers `initialize`, then exits when it gets any other request.
const DYING_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "dying", "version": "1"}}}), flush=True)
    elif "id" in msg:
        sys.exit(3)
"#;

#[tokio::test]
async fn a_child_that_exits_mid_call_fails_the_call_clearly() {
    let t = ChildTransport::spawn(&StdioCommand::new("python3", ["-c", DYING_SERVER]))
        .expect("spawn python3");
    let client = Client::connect(t, Ada, options(Revision::V2025_06_18))
        .await
        .expect("connect");
    let (a, b) = tokio::join!(client.list_tools(), client.call_tool("x", Map::new()));
    for got in [a.map(|_| ()), b.map(|_| ())] {
        match got {
            Err(ClientError::Closed(CloseReason::ProcessExited { code: Some(3) })) => {}
            other => panic!("expected the exit to fail the call, got {other:?}"),
        }
    }
}

async fn http_server(tools: mcp_server::ToolRegistry) -> String {
    let (addr, _task) = mcp_server::http::bind(
        "127.0.0.1:0".parse().expect("addr"),
        Server::new(tools),
        mcp_server::http::HttpOptions::default(),
    )
    .await
    .expect("bind");
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn client_and_server_over_streamable_http_in_every_http_revision() {
    let url = http_server(mcp_examples::echo_tools()).await;
    // 2024-11-05 used the older HTTP+SSE transport; Streamable HTTP starts with 2025-03-26.
    for revision in &Revision::ALL[1..] {
        let t = http_transport(&url);
        let client = Client::connect(t, Ada, options(*revision))
            .await
            .expect("connect");
        exercise(&client, *revision).await;
        client.close().await;
    }
}

#[tokio::test]
async fn over_http_invalid_x_mcp_header_tools_are_dropped_and_valid_ones_mirrored() {
    use mcp_server::{Outcome, ToolRegistry};
    let mut tools = ToolRegistry::new();
    let ok = |_: Map<String, Value>, _| async move {
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text("ok")],
            ..Default::default()
        }))
    };
    let good = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    let bad = json!({"type": "object", "properties": {"amount": {"type": "number", "x-mcp-header": "Amount"}}});
    tools.raw_tool(Tool::new("routed", good), ok);
    tools.raw_tool(Tool::new("broken", bad), ok);
    // A front that records the headers of each POST, then serves as usual.
    let seen: Arc<Mutex<Vec<http_headers::HeaderMap>>> = Arc::default();
    let endpoint = mcp_server::http::StreamableHttp::new(Server::new(tools), Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let recorder = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (endpoint, recorder) = (endpoint.clone(), recorder.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: http_headers::Request<hyper::body::Incoming>| {
                        let (endpoint, recorder) = (endpoint.clone(), recorder.clone());
                        async move {
                            if let Ok(mut s) = recorder.lock() {
                                s.push(req.headers().clone());
                            }
                            Ok::<_, std::convert::Infallible>(endpoint.handle(req).await)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let t = http_transport(&url);
    let client = Client::connect(t, Ada, options(Revision::V2026_07_28))
        .await
        .expect("connect");
    let listed: Vec<String> = client
        .list_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        listed,
        ["routed"],
        "a tool whose x-mcp-header is on a number is dropped"
    );
    let call = client
        .call_tool("routed", args(json!({"region": "Hello, 世界"})))
        .await
        .expect("call");
    assert!(!call.result.is_error());
    let headers = seen
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("a request");
    assert_eq!(
        headers.get("mcp-method").and_then(|v| v.to_str().ok()),
        Some("tools/call")
    );
    assert_eq!(
        headers.get("mcp-name").and_then(|v| v.to_str().ok()),
        Some("routed")
    );
    assert_eq!(
        headers
            .get("mcp-param-region")
            .and_then(|v| v.to_str().ok()),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(
        headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok()),
        Some("2026-07-28")
    );
}

/// Two conformance scenarios report success even when the tool is missing: check the
/// fixtures' results here, in both eras.
#[tokio::test]
async fn conformance_fixtures_return_what_the_scenarios_describe() {
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let (a, b) = memory_pair(16);
        tokio::spawn(async move {
            Server::new(mcp_examples::Conformance::default())
                .serve(b)
                .await
        });
        let client = Client::connect(a, Ada, options(revision))
            .await
            .expect("connect");
        let simple = client
            .call_tool("test_simple_text", Map::new())
            .await
            .expect("simple text");
        assert_eq!(
            text_of(&simple.result),
            ["This is a simple text response for testing."]
        );
        assert!(!simple.result.is_error());
        let error = client
            .call_tool("test_error_handling", Map::new())
            .await
            .expect("error result");
        assert!(error.result.is_error(), "{revision}");
        assert_eq!(
            text_of(&error.result),
            ["This tool intentionally returns an error for testing"]
        );
        let tools = client.list_tools().await.expect("list");
        assert!(
            tools.iter().all(|t| t.description.is_some()),
            "the suite wants a description on every tool"
        );
    }
}
