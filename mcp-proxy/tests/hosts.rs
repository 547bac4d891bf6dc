//! Every host's traffic stays with that host: several hosts on one gateway in front of one
//! legacy upstream that asks questions and logs while it works. With a session per host
//! each question and log line reaches exactly the host whose call caused it; on a shared
//! connection what cannot be tied to one call is refused or kept in the gateway's log,
//! never misdelivered.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, ClientHandler, ClientOptions, EraChoice, StdioCommand};
use mcp_proxy::{
    Aggregator, AggregatorOptions, PerHostLimits, SessionMode, UpstreamConfig, UpstreamTransport,
};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::*;

/// The upstream: `ask {who, delay_ms}` waits, then asks its client a question naming
/// `who`; `chatty {who, n}` logs `n` lines naming `who`; `slow {ms}` only waits.
struct Upstream;

fn arg<'a>(p: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    p.arguments.as_ref()?.get(key)
}

#[async_trait::async_trait]
impl ServerHandler for Upstream {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            logging: Some(Map::new()),
            ..tools_only()
        }
    }

    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        Ok(ListToolsResult {
            tools: ["ask", "chatty", "slow"]
                .into_iter()
                .map(|n| Tool::new(n, json!({"type": "object"})))
                .collect(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let who = arg(&p, "who").and_then(Value::as_str).unwrap_or("?");
        let done = |text: String| {
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(text)],
                ..Default::default()
            }))
        };
        match p.name.as_str() {
            "ask" => {
                if let Some(a) = ctx.input_response("q") {
                    let name = a.pointer("/content/name").and_then(Value::as_str);
                    return done(format!("{who} answered by {}", name.unwrap_or("nobody")));
                }
                let ms = arg(&p, "delay_ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let mut requests = Map::new();
                requests.insert(
                    "q".into(),
                    json!({"method": "elicitation/create", "params": {
                        "mode": "form", "message": format!("question for {who}"),
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }}),
                );
                Ok(Outcome::InputRequired(InputRequiredResult {
                    input_requests: Some(requests),
                    request_state: Some(who.into()),
                    ..Default::default()
                }))
            }
            "chatty" => {
                let n = arg(&p, "n").and_then(Value::as_u64).unwrap_or(1);
                for k in 0..n {
                    ctx.log(LoggingLevel::Info, None, json!(format!("{who}:{k}")))
                        .await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                done("done".into())
            }
            _ => {
                let ms = arg(&p, "ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                done("slept".into())
            }
        }
    }
}

fn upstream(session: SessionMode) -> UpstreamConfig {
    UpstreamConfig {
        revision: Some(Revision::V2025_06_18),
        session,
        ..UpstreamConfig::new("up", UpstreamTransport::InProcess(Server::new(Upstream)))
    }
}

/// A host that answers every question with its own name and records what reached it.
#[derive(Clone, Default)]
struct Recorder {
    name: &'static str,
    questions: Arc<Mutex<Vec<String>>>,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn new(name: &'static str) -> Self {
        Recorder {
            name,
            ..Default::default()
        }
    }

    fn questions(&self) -> Vec<String> {
        self.questions.lock().map(|q| q.clone()).unwrap_or_default()
    }

    fn logs(&self) -> Vec<String> {
        self.logs.lock().map(|q| q.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl ClientHandler for Recorder {
    async fn elicit(&self, p: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        if let Ok(mut q) = self.questions.lock() {
            q.push(p.message.clone());
        }
        let mut content = Map::new();
        content.insert("name".into(), json!(self.name));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }

    fn log_message(
        &self,
        params: LoggingMessageNotificationParams,
    ) -> Option<LoggingMessageNotificationParams> {
        if let Ok(mut l) = self.logs.lock() {
            l.push(params.data.as_str().unwrap_or_default().to_owned());
        }
        None
    }
}

fn host_options(era: EraChoice) -> ClientOptions {
    ClientOptions {
        era,
        capabilities: ClientCapabilities {
            elicitation: Some(Map::new()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn call(client: &Client, tool: &str, args: Value) -> Result<String, String> {
    let args = args.as_object().cloned().unwrap_or_default();
    match client.call_tool(&format!("up__{tool}"), args).await {
        Ok(r) if r.result.is_error() => Err(text(&r.result)),
        Ok(r) => Ok(text(&r.result)),
        Err(ClientError::Server(e)) => Err(e.message),
        Err(e) => Err(e.to_string()),
    }
}

/// Hosts A and B each call `ask` at once, with this round's delays.
async fn ask_both(
    a: &Client,
    b: &Client,
    round: u64,
) -> (Result<String, String>, Result<String, String>) {
    tokio::join!(
        call(a, "ask", json!({"who": "A", "delay_ms": delay(round, 1)})),
        call(b, "ask", json!({"who": "B", "delay_ms": delay(round, 2)})),
    )
}

/// A small deterministic spread of delays, so that rounds interleave differently.
fn delay(round: u64, salt: u64) -> u64 {
    (round.wrapping_mul(2_654_435_761).wrapping_add(salt * 97)) % 7
}

#[tokio::test]
async fn per_host_sessions_deliver_every_question_to_its_own_host() {
    let agg = Aggregator::start(vec![upstream(SessionMode::default())], Default::default())
        .await
        .expect("start");
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(
        &agg,
        a.clone(),
        host_options(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let host_b = host(&agg, b.clone(), host_options(EraChoice::Modern)).await;
    let rounds = 100;
    for round in 0..rounds {
        let (ra, rb) = ask_both(&host_a, &host_b, round).await;
        assert_eq!(ra.as_deref(), Ok("A answered by A"), "round {round}");
        assert_eq!(rb.as_deref(), Ok("B answered by B"), "round {round}");
    }
    // A question that arrives while the other host's plain call is in flight.
    let (ra, rb) = tokio::join!(
        call(&host_a, "ask", json!({"who": "A", "delay_ms": 100})),
        call(&host_b, "slow", json!({"ms": 300})),
    );
    assert_eq!(ra.as_deref(), Ok("A answered by A"));
    assert_eq!(rb.as_deref(), Ok("slept"));
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    assert_eq!(a.questions().len() as u64, rounds + 1);
    assert_eq!(b.questions().len() as u64, rounds);
    // The first host has the connection opened at start; the other one of its own.
    assert_eq!(
        agg.status()[0].host_sessions,
        1,
        "one upstream session per host"
    );
    host_a.close().await;
    host_b.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn per_host_sessions_deliver_every_log_line_to_its_own_host() {
    let agg = Aggregator::start(vec![upstream(SessionMode::default())], Default::default())
        .await
        .expect("start");
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let era = |r| host_options(EraChoice::Legacy(r));
    let host_a = host(&agg, a.clone(), era(Revision::V2025_06_18)).await;
    let host_b = host(&agg, b.clone(), era(Revision::V2025_03_26)).await;
    for _ in 0..5 {
        let (ra, rb) = tokio::join!(
            call(&host_a, "chatty", json!({"who": "A", "n": 20})),
            call(&host_b, "chatty", json!({"who": "B", "n": 20})),
        );
        assert_eq!((ra.as_deref(), rb.as_deref()), (Ok("done"), Ok("done")));
    }
    // Notifications may trail the answer by a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (la, lb) = (a.logs(), b.logs());
    assert!(la.iter().all(|l| l.starts_with("A:")), "{la:?}");
    assert!(lb.iter().all(|l| l.starts_with("B:")), "{lb:?}");
    assert_eq!(
        (la.len(), lb.len()),
        (100, 100),
        "every line reaches its host"
    );
    host_a.close().await;
    host_b.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn a_shared_connection_refuses_what_it_cannot_attribute() {
    let agg = Aggregator::start(vec![upstream(SessionMode::Shared)], Default::default())
        .await
        .expect("start");
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let legacy = host_options(EraChoice::Legacy(Revision::V2025_06_18));
    let host_a = host(&agg, a.clone(), legacy.clone()).await;
    let host_b = host(&agg, b.clone(), host_options(EraChoice::Modern)).await;

    // One call in flight: its question is its own.
    let alone = call(&host_a, "ask", json!({"who": "A"})).await;
    assert_eq!(alone.as_deref(), Ok("A answered by A"));

    // A's question comes while B's call is in flight too: it names neither, and is refused.
    let (ra, rb) = tokio::join!(
        call(&host_a, "ask", json!({"who": "A", "delay_ms": 100})),
        call(&host_b, "slow", json!({"ms": 300})),
    );
    assert!(
        ra.is_err(),
        "an unattributable question fails its call: {ra:?}"
    );
    assert_eq!(rb.as_deref(), Ok("slept"));

    for round in 0..100 {
        let (ra, rb) = ask_both(&host_a, &host_b, round).await;
        // Each call completes with its own host's answer, or fails; never the other's.
        assert!(
            !matches!(ra.as_deref(), Ok(t) if t != "A answered by A"),
            "{ra:?}"
        );
        assert!(
            !matches!(rb.as_deref(), Ok(t) if t != "B answered by B"),
            "{rb:?}"
        );
    }
    let (ra, rb) = tokio::join!(
        call(&host_a, "chatty", json!({"who": "A", "n": 30})),
        call(&host_b, "chatty", json!({"who": "B", "n": 30})),
    );
    assert_eq!((ra.as_deref(), rb.as_deref()), (Ok("done"), Ok("done")));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    assert!(
        a.logs().iter().all(|l| l.starts_with("A:")),
        "{:?}",
        a.logs()
    );
    assert!(
        b.logs().iter().all(|l| l.starts_with("B:")),
        "{:?}",
        b.logs()
    );
    host_a.close().await;
    host_b.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn http_hosts_each_in_a_session_of_their_own_hear_only_their_own_questions() {
    let agg = Aggregator::start(vec![upstream(SessionMode::default())], Default::default())
        .await
        .expect("start");
    let (addr, _serving) = mcp_server::http::bind(
        "127.0.0.1:0".parse().expect("addr"),
        Server::new(agg.clone()),
        mcp_server::http::HttpOptions::default(),
    )
    .await
    .expect("bind");
    let url = format!("http://{addr}/mcp");
    let connect = |r: Recorder, era| {
        let url = url.clone();
        async move {
            mcp_client::connect_http(mcp_client::http::HttpConfig::new(url), r, host_options(era))
                .await
                .expect("an HTTP host connects")
        }
    };
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    // Two legacy HTTP sessions, each a host of its own.
    let host_a = connect(a.clone(), EraChoice::Legacy(Revision::V2025_06_18)).await;
    let host_b = connect(b.clone(), EraChoice::Legacy(Revision::V2025_11_25)).await;
    for round in 0..50 {
        let (ra, rb) = ask_both(&host_a, &host_b, round).await;
        assert_eq!(ra.as_deref(), Ok("A answered by A"), "round {round}");
        assert_eq!(rb.as_deref(), Ok("B answered by B"), "round {round}");
    }
    let (ra, rb) = tokio::join!(
        call(&host_a, "chatty", json!({"who": "A", "n": 20})),
        call(&host_b, "chatty", json!({"who": "B", "n": 20})),
    );
    assert_eq!((ra.as_deref(), rb.as_deref()), (Ok("done"), Ok("done")));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    assert!(
        a.logs().iter().all(|l| l.starts_with("A:")),
        "{:?}",
        a.logs()
    );
    assert!(
        b.logs().iter().all(|l| l.starts_with("B:")),
        "{:?}",
        b.logs()
    );
    assert_eq!((a.logs().len(), b.logs().len()), (20, 20));
    host_a.close().await;
    host_b.close().await;
    agg.shutdown().await;
}

/// A legacy stdio upstream that answers `initialize`, lists `who`, and answers a call with
/// its own process id.
const PIDS: &str = r#"
import json, os, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    i, m = msg.get("id"), msg.get("method")
    if i is None:
        continue
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "pids", "version": "1"}}})
    elif m == "tools/list":
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "who", "inputSchema": {"type": "object"}}]}})
    elif m == "tools/call":
        send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
"#;

const MARKER: &str = "mcp-proxy-hosts-test-marker";

fn processes() -> usize {
    processes_marked(MARKER)
}

async fn settle(want: usize) -> usize {
    let mut n = processes();
    for _ in 0..50 {
        if n == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        n = processes();
    }
    n
}

#[tokio::test]
async fn a_stdio_upstream_runs_one_process_per_host_capped_and_reaped() {
    let limits = PerHostLimits::new(1, Duration::from_millis(1500));
    let pids = UpstreamConfig {
        session: SessionMode::PerHost(limits),
        ..UpstreamConfig::new(
            "pids",
            UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c", PIDS, MARKER])),
        )
    };
    let agg = Aggregator::start(vec![pids], AggregatorOptions::default())
        .await
        .expect("start");
    assert_eq!(
        settle(1).await,
        1,
        "the connection opened at start, for the catalog"
    );
    let opts = || host_options(EraChoice::Legacy(Revision::V2025_06_18));
    let (h1, h2, h3) = (
        host(&agg, Recorder::new("1"), opts()).await,
        host(&agg, Recorder::new("2"), opts()).await,
        host(&agg, Recorder::new("3"), opts()).await,
    );
    let pid = |c: &Client| {
        let c = c.clone();
        async move {
            c.call_tool("pids__who", Map::new())
                .await
                .map(|r| text(&r.result))
        }
    };
    let p1 = pid(&h1).await.expect("host 1");
    assert_eq!(
        settle(1).await,
        1,
        "the first host takes the connection opened at start"
    );
    let p2 = pid(&h2).await.expect("host 2");
    assert_ne!(p1, p2, "the next host has a process of its own");
    assert_eq!(pid(&h2).await.expect("host 2 again"), p2, "and keeps it");
    assert_eq!(pid(&h1).await.expect("host 1 again"), p1);
    let refused = pid(&h3).await.expect("an answer");
    assert!(
        refused.contains("limit of 1 host sessions"),
        "a host beyond the cap is told why: {refused}"
    );
    assert_eq!(agg.status()[0].host_sessions, 1);
    assert_eq!(settle(2).await, 2);

    // A host that goes takes its process with it.
    h2.close().await;
    assert_eq!(settle(1).await, 1, "the closed host's process ended");
    let p3 = pid(&h3).await.expect("host 3 fits now");
    assert!(p3 != p1 && p3 != p2, "a process of its own");
    assert_eq!(settle(2).await, 2);
    // An idle host's process is reaped, and its next call opens another.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(settle(1).await, 1, "the idle host's process was reaped");
    assert_eq!(agg.status()[0].host_sessions, 0);
    let again = pid(&h3).await.expect("host 3 after reaping");
    assert!(again != p3 && again != p1, "a new process");
    // The first host's connection is the catalog's: it stays when the host goes.
    h1.close().await;
    h3.close().await;
    assert_eq!(settle(1).await, 1);
    agg.shutdown().await;
    assert_eq!(settle(0).await, 0, "no child process is left behind");
}
