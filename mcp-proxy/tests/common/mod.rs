//! What the Aggregator tests share: a host connected in memory, the pieces their
//! upstreams are made of (in-process or a Python script on stdio), and reading results.

#![allow(dead_code)]

use mcp_client::{Client, ClientHandler, ClientOptions, EraChoice};
use mcp_proxy::{Aggregator, UpstreamConfig, UpstreamTransport};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::ErrorObject;
use serde_json::{json, Map, Value};

pub mod crowd;
pub mod python;
pub mod raw_http;
pub mod stdio_host;

/// A host (our client, with `handler` and `options`) connected to `agg` in memory.
pub async fn host<H: ClientHandler>(
    agg: &Aggregator,
    handler: H,
    options: ClientOptions,
) -> Client {
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = Server::new(agg.clone());
    tokio::spawn(async move { server.serve(b).await });
    Client::connect(a, handler, options)
        .await
        .expect("host connects")
}

/// The text blocks of a result, joined.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A host of `era` that can answer the questions a tool asks (elicitation).
pub fn eliciting(era: EraChoice) -> ClientOptions {
    ClientOptions::default()
        .era(era)
        .capabilities(ClientCapabilities {
            elicitation: Some(Map::new()),
            ..Default::default()
        })
}

/// A host of `era` that declares everything the gateway relays to a host
/// ([`mcp_proxy::start_capabilities`]): the first such host takes the upstream connection
/// the gateway opened at start.
pub fn answering_all(era: EraChoice) -> ClientOptions {
    ClientOptions::default()
        .era(era)
        .capabilities(mcp_proxy::start_capabilities())
}

/// The upstream `key`, served in process by `handler`, with the defaults.
pub fn in_process(key: &str, handler: impl ServerHandler) -> UpstreamConfig {
    UpstreamConfig::new(key, UpstreamTransport::InProcess(Server::new(handler)))
}

/// A tool that takes any object.
pub fn object_tool(name: impl Into<String>) -> Tool {
    Tool::new(name, json!({"type": "object"}))
}

/// `tools/list` with `tools`, on one page.
pub fn listing(tools: impl IntoIterator<Item = Tool>) -> Result<ListToolsResult, ErrorObject> {
    Ok(ListToolsResult {
        tools: tools.into_iter().collect(),
        ..Default::default()
    })
}

/// A call's result that is one text block.
pub fn text_outcome(text: impl Into<String>) -> Result<Outcome<CallToolResult>, ErrorObject> {
    Ok(Outcome::Complete(CallToolResult {
        content: vec![ContentBlock::text(text)],
        ..Default::default()
    }))
}

/// The object in `args`; anything else is no arguments.
pub fn arguments(args: Value) -> Map<String, Value> {
    args.as_object().cloned().unwrap_or_default()
}

/// An upstream that lists `tools` (written as JSON) and answers a call to any of them with
/// the text `ran <name>`.
pub struct Ran(pub Vec<Value>);

#[async_trait::async_trait]
impl ServerHandler for Ran {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let tools = self
            .0
            .iter()
            .map(|t| serde_json::from_value(t.clone()).expect("a tool"));
        listing(tools.collect::<Vec<Tool>>())
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        text_outcome(format!("ran {}", p.name))
    }
}

/// A server that offers tools and nothing else.
pub fn tools_only() -> ServerCapabilities {
    ServerCapabilities {
        tools: Some(Default::default()),
        ..Default::default()
    }
}

/// Tools only, whose list may change (and is announced).
pub fn changing_tools() -> ServerCapabilities {
    ServerCapabilities {
        tools: Some(ListChangedCapability {
            list_changed: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The names of the tools `host` lists, sorted.
pub async fn tool_names(host: &Client) -> Vec<String> {
    let mut n: Vec<String> = host
        .list_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    n.sort();
    n
}

/// How many processes have `marker` on their command line.
pub fn processes_marked(marker: &str) -> usize {
    let out = std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// How many processes have `marker` on their command line once that is `want`, or after
/// five seconds: processes start and end a moment after what caused it.
pub async fn settle_marked(marker: &str, want: usize) -> usize {
    // A process count has no event to wait on: the shared bounded poll.
    let five_seconds = std::time::Duration::from_secs(5);
    mcp_examples::wait_until(five_seconds, || {
        std::future::ready(processes_marked(marker) == want)
    })
    .await;
    processes_marked(marker)
}

/// A gate a Python upstream waits at before it serves: [`Gate::python`] connects to the
/// test and blocks until the test lets it through (or ends), so a "slow" upstream is as
/// slow as the test wants and no slower.
pub struct Gate {
    listener: std::net::TcpListener,
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            listener: std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port"),
        }
    }

    /// Python (for a script's head) that waits at the gate.
    pub fn python(&self) -> String {
        let port = self.listener.local_addr().expect("addr").port();
        format!(
            "import socket\n_gate = socket.create_connection((\"127.0.0.1\", {port}))\ntry:\n    _gate.recv(1)\nexcept OSError:\n    pass\n"
        )
    }

    /// Waits (at most `limit`) for an upstream to arrive at the gate; its connection,
    /// whose drop lets it through.
    pub fn arrived(&self, limit: std::time::Duration) -> std::net::TcpStream {
        let listener = self.listener.try_clone().expect("listener");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(listener.accept().map(|(s, _)| s));
        });
        rx.recv_timeout(limit)
            .expect("an upstream arrived at the gate")
            .expect("accept")
    }
}

/// The echo tools' `greet` called on `host`, which asks for a name: the question as the
/// host gets it: its requestState and its input key.
pub async fn greeted(host: &Client) -> (String, String) {
    let raw = mcp_client::CallOptions::default().return_input_required(true);
    let first = host
        .request(
            "tools/call",
            json!({"name": "echo__greet", "arguments": {}}),
            &raw,
        )
        .await
        .expect("input required");
    assert_eq!(first["resultType"], "input_required", "{first}");
    let state = first["requestState"].as_str().expect("state").to_owned();
    let key = first["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("a question");
    (state, key)
}
