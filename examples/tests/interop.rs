//! Interop with real peers we did not write, pinned in `examples/interop/package.json`
//! and `requirements.txt` and installed by `.ci/run`: the TypeScript SDK client and the
//! Python SDK client driving our server, and our client driving `server-everything` and a
//! Python SDK server. With `MCP_INTEROP=required` (as `.ci/run` sets) a missing peer fails
//! the test; otherwise it is skipped with a note.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::{
    CallOptions, ChildTransport, Client, ClientHandler, ClientOptions, EraChoice, OutputCheck,
    StdioCommand,
};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::{
    example, free_port, http_transport, interop_dir, server_everything_http, wait_for_port,
};

/// Runs a peer program and reads the one JSON object it prints.
async fn run_json(program: &Path, args: &[&str]) -> Value {
    common::run_json(program, args, Duration::from_secs(120)).await
}

/// The peer at `path`, or a skip (a failure when `.ci/run` requires the peers).
fn peer(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let how = "run .ci/run, or: (cd examples/interop && npm ci && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt)";
    assert!(
        std::env::var("MCP_INTEROP").as_deref() != Ok("required"),
        "{what} is not installed at {}; {how}",
        path.display()
    );
    eprintln!(
        "SKIPPED: {what} is not installed at {}; {how}",
        path.display()
    );
    None
}

fn node_modules() -> Option<PathBuf> {
    peer(
        interop_dir().join("node_modules/@modelcontextprotocol/sdk/package.json"),
        "the TypeScript SDK",
    )
    .map(|_| interop_dir().join("node_modules"))
}

fn python() -> Option<PathBuf> {
    peer(
        interop_dir().join(".venv/bin/python"),
        "the Python SDK (mcp)",
    )
}

fn echo_server() -> String {
    example("echo-server")
}

/// What both SDK clients must have seen from our echo server.
fn assert_echo_server_seen(seen: &Value, echo: &str) {
    assert_eq!(
        seen["tools"],
        json!(["echo", "pixel", "weather", "fail", "count", "greet"])
    );
    assert_eq!(
        seen["titles"],
        json!(["Echo", "Pixel", "Weather", "Fail", "Count", "Greet"])
    );
    assert_eq!(seen["echo"], json!([echo]));
    assert_eq!(seen["weather"]["structured"]["conditions"], "Partly cloudy");
    assert_eq!(seen["weather"]["isError"], false);
    assert_eq!(seen["fail"]["isError"], true);
    assert_eq!(
        seen["fail"]["text"],
        json!(["boom: this tool always fails"])
    );
    assert_eq!(seen["count"], json!(["counted to 3"]));
    let progress: Vec<f64> = seen["progress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0], "progress reached the client");
    assert_eq!(
        seen["greet"],
        json!(["Hello, Ada!"]),
        "elicitation reached the client and back"
    );
}

#[tokio::test]
async fn typescript_sdk_client_drives_our_server() {
    let Some(_) = node_modules() else { return };
    let seen = run_json(Path::new("node"), &["ts_client.mjs", &echo_server()]).await;
    assert_echo_server_seen(&seen, "hi from ts");
    assert_eq!(seen["pixel"], json!(["image"]));
}

#[tokio::test]
async fn python_sdk_client_drives_our_server_in_both_eras() {
    let Some(py) = python() else { return };
    for (mode, revision) in [
        ("legacy", "2025-11-25"),
        ("2026-07-28", "2026-07-28"),
        ("auto", "2026-07-28"),
    ] {
        let seen = run_json(&py, &["python_client.py", mode, &echo_server()]).await;
        assert_eq!(seen["protocolVersion"], revision, "mode {mode}");
        assert_echo_server_seen(&seen, "hi from python");
    }
}

/// Our echo server on Streamable HTTP (a child process on an ephemeral loopback port).
struct HttpEchoServer {
    child: tokio::process::Child,
    url: String,
}

impl HttpEchoServer {
    async fn start() -> HttpEchoServer {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(echo_server())
            .args(["--http", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start echo-server --http");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server prints its URL")
            .expect("read")
            .expect("a line");
        HttpEchoServer { child, url }
    }
}

impl Drop for HttpEchoServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[tokio::test]
async fn typescript_sdk_client_drives_our_http_server() {
    let Some(_) = node_modules() else { return };
    let server = HttpEchoServer::start().await;
    let seen = run_json(Path::new("node"), &["ts_client.mjs", &server.url]).await;
    assert_echo_server_seen(&seen, "hi from ts");
}

#[tokio::test]
async fn python_sdk_client_drives_our_http_server_in_both_eras() {
    let Some(py) = python() else { return };
    let server = HttpEchoServer::start().await;
    for (mode, revision) in [
        ("legacy", "2025-11-25"),
        ("2026-07-28", "2026-07-28"),
        ("auto", "2026-07-28"),
    ] {
        let seen = run_json(&py, &["python_client.py", mode, &server.url]).await;
        assert_eq!(seen["protocolVersion"], revision, "mode {mode}");
        assert_echo_server_seen(&seen, "hi from python");
    }
}

/// Answers elicitation and remembers that it was asked.
#[derive(Default)]
struct Recorder {
    elicited: AtomicBool,
}

#[async_trait]
impl ClientHandler for Recorder {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.elicited.store(true, Ordering::SeqCst);
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            ..Default::default()
        })
    }
}

/// Calls server-everything's `trigger-long-running-operation` (3 steps) and counts the
/// progress notifications that reached the caller.
async fn long_operation_progress(client: &Client) -> usize {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = CallOptions::default().progress(tx);
    client
        .call_tool_with(
            "trigger-long-running-operation",
            args(json!({"duration": 1, "steps": 3})),
            &opts,
        )
        .await
        .expect("long operation");
    let mut progress = 0;
    while rx.try_recv().is_ok() {
        progress += 1;
    }
    progress
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn our_client_drives_server_everything() {
    let Some(modules) = node_modules() else {
        return;
    };
    let script = modules
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string();
    let t = ChildTransport::spawn(&StdioCommand::new("node", [script.as_str(), "stdio"]))
        .expect("spawn node");
    let recorder = Arc::new(Recorder::default());
    let client = Client::connect(
        t,
        recorder.clone(),
        ClientOptions::default().with_elicitation(),
    )
    .await
    .expect("connect");
    assert_eq!(
        client.revision(),
        Revision::V2025_11_25,
        "a legacy server: the probe fell back to initialize"
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert!(
        tools
            .iter()
            .any(|t| t.name == "echo" && t.execution.is_some()),
        "execution survives decoding"
    );

    let echo = client
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .expect("echo");
    assert!(matches!(&echo.result.content[0], ContentBlock::Text(t) if t.text == "Echo: hi"));

    let structured = client
        .call_tool(
            "get-structured-content",
            args(json!({"location": "Chicago"})),
        )
        .await
        .expect("structured");
    assert!(structured.result.structured_content.is_some());
    assert_eq!(
        structured.output,
        OutputCheck::Valid,
        "checked against the declared outputSchema"
    );

    let links = client
        .call_tool("get-resource-links", args(json!({"count": 2})))
        .await
        .expect("links");
    assert_eq!(
        links
            .result
            .content
            .iter()
            .filter(|b| matches!(b, ContentBlock::ResourceLink(_)))
            .count(),
        2
    );

    let image = client
        .call_tool("get-tiny-image", Map::new())
        .await
        .expect("image");
    assert!(image
        .result
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_))));

    let progress = long_operation_progress(&client).await;
    assert!(
        progress >= 2,
        "progress notifications reached the caller ({progress})"
    );

    let elicit = client
        .call_tool("trigger-elicitation-request", Map::new())
        .await
        .expect("elicitation");
    assert!(
        recorder.elicited.load(Ordering::SeqCst),
        "the server's elicitation/create reached our handler"
    );
    assert!(!elicit.result.is_error());
    client.close().await;
}

#[tokio::test]
async fn our_client_drives_a_python_sdk_server_in_both_eras() {
    let Some(py) = python() else { return };
    let server = interop_dir().join("python_server.py").display().to_string();
    for (era, revision) in [
        (
            EraChoice::Legacy(Revision::V2025_11_25),
            Revision::V2025_11_25,
        ),
        (EraChoice::Modern, Revision::V2026_07_28),
        (EraChoice::Detect, Revision::V2026_07_28),
    ] {
        let t = ChildTransport::spawn(&StdioCommand::new(
            py.display().to_string(),
            [server.as_str()],
        ))
        .expect("spawn python");
        let client = Client::connect(t, mcp_client::NoHandler, ClientOptions::default().era(era))
            .await
            .expect("connect");
        assert_eq!(client.revision(), revision);
        let tools = client.list_tools().await.expect("tools/list");
        let weather = tools.iter().find(|t| t.name == "weather").expect("weather");
        let icons = weather.icons.as_ref().expect("icons survive");
        assert_eq!(icons[0].src, "https://example.com/weather.png");
        assert!(weather.output_schema.is_some());
        let call = client
            .call_tool("weather", args(json!({"city": "Oslo"})))
            .await
            .expect("weather");
        assert_eq!(
            call.result
                .structured_content
                .as_ref()
                .map(|s| s["conditions"].clone()),
            Some(json!("Sunny in Oslo"))
        );
        assert_eq!(call.output, OutputCheck::Valid);
        let boom = client
            .call_tool("boom", Map::new())
            .await
            .expect("boom is a result");
        assert!(boom.result.is_error(), "isError survives ({era:?})");
        client.close().await;
    }
}

#[tokio::test]
async fn our_http_client_drives_server_everything_streamable_http() {
    let Some(modules) = node_modules() else {
        return;
    };
    let script = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let (_server, port) = server_everything_http(&script, "streamableHttp").await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let recorder = Arc::new(Recorder::default());
    let client = Client::connect(
        http_transport(&url),
        recorder.clone(),
        ClientOptions::default().with_elicitation(),
    )
    .await
    .expect("connect");
    assert_eq!(
        client.revision(),
        Revision::V2025_11_25,
        "a legacy session after the modern probe"
    );
    let echo = client
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .expect("echo");
    assert!(matches!(&echo.result.content[0], ContentBlock::Text(t) if t.text == "Echo: hi"));
    client.list_tools().await.expect("tools/list");
    let structured = client
        .call_tool(
            "get-structured-content",
            args(json!({"location": "Chicago"})),
        )
        .await
        .expect("structured");
    assert_eq!(structured.output, OutputCheck::Valid);
    let progress = long_operation_progress(&client).await;
    assert!(
        progress >= 2,
        "progress over the POST's SSE stream ({progress})"
    );
    client
        .call_tool("trigger-elicitation-request", Map::new())
        .await
        .expect("elicitation");
    assert!(
        recorder.elicited.load(Ordering::SeqCst),
        "a server-to-client request over SSE reached our handler"
    );
    client.close().await;
}

#[tokio::test]
async fn our_http_client_drives_a_python_sdk_http_server_in_both_eras() {
    let Some(py) = python() else { return };
    let port = free_port();
    let _server = tokio::process::Command::new(&py)
        .args(["python_server.py", "--http", &port.to_string()])
        .current_dir(interop_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python server");
    wait_for_port(port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    for (era, revision) in [
        (
            EraChoice::Legacy(Revision::V2025_11_25),
            Revision::V2025_11_25,
        ),
        (EraChoice::Modern, Revision::V2026_07_28),
        (EraChoice::Detect, Revision::V2026_07_28),
    ] {
        let client = Client::connect(
            http_transport(&url),
            mcp_client::NoHandler,
            ClientOptions::default().era(era),
        )
        .await
        .expect("connect");
        assert_eq!(client.revision(), revision);
        let tools = client.list_tools().await.expect("tools/list");
        let weather = tools.iter().find(|t| t.name == "weather").expect("weather");
        assert_eq!(
            weather.icons.as_ref().map(|i| i[0].src.clone()),
            Some("https://example.com/weather.png".into())
        );
        let call = client
            .call_tool("weather", args(json!({"city": "Oslo"})))
            .await
            .expect("weather");
        assert_eq!(call.output, OutputCheck::Valid, "{era:?}");
        assert!(
            client
                .call_tool("boom", Map::new())
                .await
                .expect("boom")
                .result
                .is_error(),
            "{era:?}"
        );
        let traced = client
            .call_tool("traced", Map::new())
            .await
            .expect("traced");
        let meta = traced.result.meta.expect("_meta survives");
        assert_eq!(
            meta.get("com.example/trace"),
            Some(&json!({"id": 7})),
            "{era:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn our_client_speaks_the_2024_11_05_http_sse_transport_to_server_everything() {
    let Some(modules) = node_modules() else {
        return;
    };
    let script = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let (_server, port) = server_everything_http(&script, "sse").await;
    // The SSE URL is no Streamable HTTP endpoint: connect_http falls back to HTTP+SSE.
    let config = mcp_client::http::HttpConfig::new(format!("http://127.0.0.1:{port}/sse"));
    let options = ClientOptions::default().era(EraChoice::Legacy(Revision::V2024_11_05));
    let client = mcp_client::connect_http(config, mcp_client::NoHandler, options)
        .await
        .expect("connect over HTTP+SSE");
    assert_eq!(client.revision(), Revision::V2024_11_05);
    let echo = client
        .call_tool("echo", args(json!({"message": "old school"})))
        .await
        .expect("echo");
    assert!(
        matches!(&echo.result.content[0], ContentBlock::Text(t) if t.text == "Echo: old school")
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"));
    client.close().await;
}
