//! A legacy upstream that asks its client questions and logs while it works, and hosts
//! that record what reaches them: what the tests of hosts sharing an upstream are made of.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, ClientHandler};
use mcp_proxy::{Aggregator, SessionMode, UpstreamConfig};
use mcp_server::{Outcome, RequestContext, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

use super::*;

/// The upstream: `ask {who, delay_ms}` waits, then asks its client a question naming
/// `who`; `chatty {who, n}` logs `n` lines naming `who`; `slow {ms}` only waits.
pub struct Upstream;

pub fn arg<'a>(p: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
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

pub fn upstream(session: SessionMode) -> UpstreamConfig {
    in_process("up", Upstream)
        .revision(Revision::V2025_06_18)
        .session(session)
}

/// A gateway in front of the one upstream, shared by its hosts as `session` says.
pub async fn gateway(session: SessionMode) -> Aggregator {
    Aggregator::start(vec![upstream(session)], Default::default())
        .await
        .expect("start")
}

/// The hosts go, then the gateway.
pub async fn leave(agg: Aggregator, hosts: [Client; 2]) {
    for h in hosts {
        h.close().await;
    }
    agg.shutdown().await;
}

/// A host that answers every question with its own name and records what reached it.
#[derive(Clone, Default)]
pub struct Recorder {
    pub name: &'static str,
    questions: Arc<Mutex<Vec<String>>>,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    pub fn new(name: &'static str) -> Self {
        Recorder {
            name,
            ..Default::default()
        }
    }

    pub fn questions(&self) -> Vec<String> {
        self.questions.lock().map(|q| q.clone()).unwrap_or_default()
    }

    pub fn logs(&self) -> Vec<String> {
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

pub async fn call(client: &Client, tool: &str, args: Value) -> Result<String, String> {
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
pub async fn ask_both(
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
pub async fn each_answered_in_turn(a: &Client, b: &Client, rounds: u64) {
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
pub async fn chat_both(a: &Client, b: &Client, n: u64, progress: bool) {
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
pub fn each_heard_only_its_own(a: &Recorder, b: &Recorder) {
    assert!(a.questions().iter().all(|q| q == "question for A"));
    assert!(b.questions().iter().all(|q| q == "question for B"));
    let (la, lb) = (a.logs(), b.logs());
    assert!(la.iter().all(|l| l.starts_with("A:")), "{la:?}");
    assert!(lb.iter().all(|l| l.starts_with("B:")), "{lb:?}");
}

/// A small deterministic spread of delays, so that rounds interleave differently.
pub fn delay(round: u64, salt: u64) -> u64 {
    (round.wrapping_mul(2_654_435_761).wrapping_add(salt * 97)) % 7
}

/// Hosts A (elicitation, 2025-06-18) and B (elicitation and roots, 2025-11-25) on `agg`,
/// recording into `a` and `b`.
pub async fn hosts_declaring_differently(
    agg: &Aggregator,
    a: &Recorder,
    b: &Recorder,
) -> (Client, Client) {
    let legacy = |r| eliciting(mcp_client::EraChoice::Legacy(r));
    let host_a = host(agg, a.clone(), legacy(Revision::V2025_06_18)).await;
    let mut with_roots = legacy(Revision::V2025_11_25);
    with_roots.capabilities.roots = Some(Default::default());
    let host_b = host(agg, b.clone(), with_roots).await;
    (host_a, host_b)
}

/// `rounds` times, the upstream hears each of [`hosts_declaring_differently`]'s calls
/// with that host's own capabilities; then its `roots/list` during B's call is answered
/// by B, and by nobody for A, which declared no roots.
pub async fn each_heard_with_its_own_capabilities(a: &Client, b: &Client, rounds: usize) {
    for _ in 0..rounds {
        assert_eq!(
            call(a, "caps", json!({})).await.as_deref(),
            Ok("elicitation=true sampling=false roots=false")
        );
        assert_eq!(
            call(b, "caps", json!({})).await.as_deref(),
            Ok("elicitation=true sampling=false roots=true")
        );
    }
    assert_eq!(
        call(b, "roots", json!({"who": "B"})).await.as_deref(),
        Ok("file:///B")
    );
    assert!(call(a, "roots", json!({"who": "A"})).await.is_err());
}
