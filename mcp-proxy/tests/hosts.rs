//! Every host's traffic stays with that host: several hosts on one gateway in front of one
//! legacy upstream that asks questions and logs while it works. With a session per host
//! each question and log line reaches exactly the host whose call caused it; on a shared
//! connection what cannot be tied to one call is refused or kept in the gateway's log,
//! never misdelivered.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, ClientHandler, EraChoice, StdioCommand};
use mcp_proxy::{
    Aggregator, AggregatorOptions, PerHostLimits, SessionMode, UpstreamConfig, UpstreamTransport,
};
use mcp_server::{Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::python::python_upstream;
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
        listing(["ask", "chatty", "slow", "caps", "roots"].map(object_tool))
    }

    async fn call_tool(
        &self,
        ctx: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let who = arg(&p, "who").and_then(Value::as_str).unwrap_or("?");
        match p.name.as_str() {
            "ask" => {
                if let Some(a) = ctx.input_response("q") {
                    let name = a.pointer("/content/name").and_then(Value::as_str);
                    return text_outcome(format!("{who} answered by {}", name.unwrap_or("nobody")));
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
                    let line = format!("{who}:{k}");
                    ctx.log(LoggingLevel::Info, None, json!(line)).await;
                    ctx.progress((k + 1) as f64, Some(n as f64), Some(&line))
                        .await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                text_outcome("done")
            }
            "caps" => {
                let c = ctx.client_capabilities();
                text_outcome(format!(
                    "elicitation={} sampling={} roots={}",
                    c.elicitation.is_some(),
                    c.sampling.is_some(),
                    c.roots.is_some()
                ))
            }
            "roots" => {
                if let Some(a) = ctx.input_response("r") {
                    let uri = a.pointer("/roots/0/uri").and_then(Value::as_str);
                    return text_outcome(uri.unwrap_or("no roots").to_owned());
                }
                let mut requests = Map::new();
                requests.insert("r".into(), json!({"method": "roots/list", "params": {}}));
                Ok(Outcome::InputRequired(InputRequiredResult {
                    input_requests: Some(requests),
                    request_state: Some(who.into()),
                    ..Default::default()
                }))
            }
            _ => {
                let ms = arg(&p, "ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text_outcome("slept")
            }
        }
    }
}

fn upstream(session: SessionMode) -> UpstreamConfig {
    in_process("up", Upstream)
        .revision(Revision::V2025_06_18)
        .session(session)
}

/// A gateway in front of the one upstream, shared by its hosts as `session` says.
async fn gateway(session: SessionMode) -> Aggregator {
    Aggregator::start(vec![upstream(session)], Default::default())
        .await
        .expect("start")
}

/// The hosts go, then the gateway.
async fn leave(agg: Aggregator, hosts: [Client; 2]) {
    for h in hosts {
        h.close().await;
    }
    agg.shutdown().await;
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

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: format!("file:///{}", self.name),
                ..Default::default()
            }],
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

async fn call(client: &Client, tool: &str, args: Value) -> Result<String, String> {
    match client
        .call_tool(&format!("up__{tool}"), arguments(args))
        .await
    {
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

/// `rounds` rounds of [`ask_both`]: each host hears its own answer, every round.
async fn each_answered_in_turn(a: &Client, b: &Client, rounds: u64) {
    for round in 0..rounds {
        let (ra, rb) = ask_both(a, b, round).await;
        assert_eq!(ra.as_deref(), Ok("A answered by A"), "round {round}");
        assert_eq!(rb.as_deref(), Ok("B answered by B"), "round {round}");
    }
}

/// Hosts A and B each call `chatty` for `n` lines at once; both calls finish. With
/// `progress` they ask for it (a call that wants progress is relayed by a task, one that
/// does not from the upstream's read loop: both ways must keep log lines apart), and each
/// host hears all `n` of its own progress notifications and none of the other's.
async fn chat_both(a: &Client, b: &Client, n: u64, progress: bool) {
    let chat = |client: &Client, who: &'static str| {
        let client = client.clone();
        async move {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let mut opts = mcp_client::CallOptions::default();
            opts.progress = progress.then_some(tx);
            let out = client
                .call_tool_with("up__chatty", arguments(json!({"who": who, "n": n})), &opts)
                .await
                .map(|r| text(&r.result))
                .map_err(|e| e.to_string());
            drop(opts);
            // Notifications may trail the answer by a moment.
            let mut heard = Vec::new();
            while progress && (heard.len() as u64) < n {
                match tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
                    Ok(Some(p)) => heard.push(p.message.unwrap_or_default()),
                    _ => break,
                }
            }
            (out, heard)
        }
    };
    let ((ra, pa), (rb, pb)) = tokio::join!(chat(a, "A"), chat(b, "B"));
    assert_eq!((ra.as_deref(), rb.as_deref()), (Ok("done"), Ok("done")));
    assert!(pa.iter().all(|m| m.starts_with("A:")), "{pa:?}");
    assert!(pb.iter().all(|m| m.starts_with("B:")), "{pb:?}");
    let want = if progress { n } else { 0 };
    assert_eq!(
        (pa.len() as u64, pb.len() as u64),
        (want, want),
        "every progress notification reaches its host"
    );
}

/// Every question and log line that reached host A or B was its own.
fn each_heard_only_its_own(a: &Recorder, b: &Recorder) {
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    let (la, lb) = (a.logs(), b.logs());
    assert!(la.iter().all(|l| l.starts_with("A:")), "{la:?}");
    assert!(lb.iter().all(|l| l.starts_with("B:")), "{lb:?}");
}

/// A small deterministic spread of delays, so that rounds interleave differently.
fn delay(round: u64, salt: u64) -> u64 {
    (round.wrapping_mul(2_654_435_761).wrapping_add(salt * 97)) % 7
}

#[tokio::test]
async fn per_host_sessions_deliver_every_question_to_its_own_host() {
    let agg = gateway(SessionMode::default()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(
        &agg,
        a.clone(),
        answering_all(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let host_b = host(&agg, b.clone(), eliciting(EraChoice::Modern)).await;
    let rounds = 100;
    each_answered_in_turn(&host_a, &host_b, rounds).await;
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
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn per_host_sessions_deliver_every_log_line_to_its_own_host() {
    let agg = gateway(SessionMode::default()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let era = |r| eliciting(EraChoice::Legacy(r));
    let host_a = host(&agg, a.clone(), era(Revision::V2025_06_18)).await;
    let host_b = host(&agg, b.clone(), era(Revision::V2025_03_26)).await;
    for round in 0..5 {
        chat_both(&host_a, &host_b, 20, round % 2 == 1).await;
    }
    // Notifications may trail the answer by a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!(
        (a.logs().len(), b.logs().len()),
        (100, 100),
        "every line reaches its host"
    );
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn per_host_sessions_hear_each_hosts_own_capabilities_and_roots() {
    let agg = gateway(SessionMode::default()).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let host_a = host(
        &agg,
        a.clone(),
        eliciting(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let mut with_roots = eliciting(EraChoice::Legacy(Revision::V2025_11_25));
    with_roots.capabilities.roots = Some(Default::default());
    let host_b = host(&agg, b.clone(), with_roots).await;
    assert_eq!(
        call(&host_a, "caps", json!({})).await.as_deref(),
        Ok("elicitation=true sampling=false roots=false")
    );
    assert_eq!(
        call(&host_b, "caps", json!({})).await.as_deref(),
        Ok("elicitation=true sampling=false roots=true")
    );
    // The first host declared less than the connection opened at start: it has a session
    // of its own, as B does.
    assert_eq!(agg.status()[0].host_sessions, 2);
    // The upstream's roots/list during B's call is answered by B, and by nobody for A.
    assert_eq!(
        call(&host_b, "roots", json!({"who": "B"})).await.as_deref(),
        Ok("file:///B")
    );
    assert!(call(&host_a, "roots", json!({"who": "A"})).await.is_err());
    // A host that declares everything the gateway relays takes that connection.
    let c = Recorder::new("C");
    let host_c = host(
        &agg,
        c.clone(),
        answering_all(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    assert_eq!(
        call(&host_c, "caps", json!({})).await.as_deref(),
        Ok("elicitation=true sampling=true roots=true")
    );
    assert_eq!(
        call(&host_c, "roots", json!({"who": "C"})).await.as_deref(),
        Ok("file:///C")
    );
    assert_eq!(agg.status()[0].host_sessions, 2);
    host_c.close().await;
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn a_shared_connection_refuses_what_it_cannot_attribute() {
    let agg = gateway(SessionMode::Shared).await;
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    let legacy = eliciting(EraChoice::Legacy(Revision::V2025_06_18));
    let host_a = host(&agg, a.clone(), legacy.clone()).await;
    let host_b = host(&agg, b.clone(), eliciting(EraChoice::Modern)).await;

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
    chat_both(&host_a, &host_b, 30, false).await;
    chat_both(&host_a, &host_b, 30, true).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    each_heard_only_its_own(&a, &b);
    leave(agg, [host_a, host_b]).await;
}

#[tokio::test]
async fn http_hosts_each_in_a_session_of_their_own_hear_only_their_own_questions() {
    let agg = gateway(SessionMode::default()).await;
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
            mcp_client::connect_http(mcp_client::http::HttpConfig::new(url), r, eliciting(era))
                .await
                .expect("an HTTP host connects")
        }
    };
    let (a, b) = (Recorder::new("A"), Recorder::new("B"));
    // Two legacy HTTP sessions, each a host of its own.
    let host_a = connect(a.clone(), EraChoice::Legacy(Revision::V2025_06_18)).await;
    let host_b = connect(b.clone(), EraChoice::Legacy(Revision::V2025_11_25)).await;
    each_answered_in_turn(&host_a, &host_b, 50).await;
    chat_both(&host_a, &host_b, 20, false).await;
    chat_both(&host_a, &host_b, 20, true).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    each_heard_only_its_own(&a, &b);
    assert_eq!((a.logs().len(), b.logs().len()), (40, 40));
    leave(agg, [host_a, host_b]).await;
}

/// A legacy stdio upstream that lists `who` and answers a call with its own process id.
fn pids_script() -> String {
    python_upstream(
        "pids",
        "import os",
        json!([object_tool("who")]),
        r#"send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})"#,
    )
}

const MARKER: &str = "mcp-proxy-hosts-test-marker";

async fn settle(want: usize) -> usize {
    settle_marked(MARKER, want).await
}

#[tokio::test]
async fn a_stdio_upstream_runs_one_process_per_host_capped_and_reaped() {
    let limits = PerHostLimits::new(1, Duration::from_millis(1500));
    let pids = UpstreamConfig::new(
        "pids",
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c", &pids_script(), MARKER])),
    )
    .session(SessionMode::PerHost(limits));
    let agg = Aggregator::start(vec![pids], AggregatorOptions::default())
        .await
        .expect("start");
    assert_eq!(
        settle(1).await,
        1,
        "the connection opened at start, for the catalog"
    );
    let opts = || eliciting(EraChoice::Legacy(Revision::V2025_06_18));
    let first = answering_all(EraChoice::Legacy(Revision::V2025_06_18));
    let (h1, h2, h3) = (
        host(&agg, Recorder::new("1"), first).await,
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
