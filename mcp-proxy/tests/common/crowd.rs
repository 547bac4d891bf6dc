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
use tokio::sync::{watch, Semaphore};

use super::*;

/// The upstream: `ask {who, yields, after_held}` yields `yields` times (and with
/// `after_held` first waits for a held `slow` call to begin), then asks its client a
/// question naming `who`; `chatty {who, n}` logs `n` lines naming `who`, yielding between
/// them; `slow {held}` answers at once, or with `held` once the test releases it.
pub struct Upstream(pub Held);

/// The test's hold on `slow {held: true}` calls.
#[derive(Clone)]
pub struct Held {
    entered: Arc<Semaphore>,
    release: Arc<Semaphore>,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            entered: Arc::new(Semaphore::new(0)),
            release: Arc::new(Semaphore::new(0)),
        }
    }
}

impl Held {
    /// Waits (five seconds at most) for a held call to begin; whether one did.
    pub async fn entered(&self) -> bool {
        let begun = self.entered.acquire();
        match tokio::time::timeout(Duration::from_secs(5), begun).await {
            Ok(Ok(p)) => {
                p.forget();
                true
            }
            _ => false,
        }
    }

    /// Lets one held call answer.
    pub fn release(&self) {
        self.release.add_permits(1);
    }
}

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
                if arg(&p, "after_held").is_some() && !self.0.entered().await {
                    return Err(ErrorObject::new(-32603, "no held call began"));
                }
                for _ in 0..arg(&p, "yields").and_then(Value::as_u64).unwrap_or(0) {
                    tokio::task::yield_now().await;
                }
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
                    // Lets the other host's lines in between.
                    tokio::task::yield_now().await;
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
                if arg(&p, "held").is_some() {
                    self.0.entered.add_permits(1);
                    if let Ok(p) = self.0.release.acquire().await {
                        p.forget();
                    }
                }
                text_outcome("slept")
            }
        }
    }
}

pub fn upstream(session: SessionMode, held: Held) -> UpstreamConfig {
    in_process("up", Upstream(held))
        .revision(Revision::V2025_06_18)
        .session(session)
}

/// A gateway in front of the one upstream, shared by its hosts as `session` says.
pub async fn gateway(session: SessionMode) -> Aggregator {
    gateway_holding(session).await.0
}

/// [`gateway`], and the hold on its upstream's `slow {held: true}` calls.
pub async fn gateway_holding(session: SessionMode) -> (Aggregator, Held) {
    let held = Held::default();
    let agg = Aggregator::start(vec![upstream(session, held.clone())], Default::default())
        .await
        .expect("start");
    (agg, held)
}

/// The hosts go, then the gateway.
pub async fn leave(agg: Aggregator, hosts: [Client; 2]) {
    for h in hosts {
        h.close().await;
    }
    agg.shutdown().await;
}

/// A host that answers every question with its own name and records what reached it.
#[derive(Clone)]
pub struct Recorder {
    pub name: &'static str,
    questions: Arc<Mutex<Vec<String>>>,
    logs: Arc<Mutex<Vec<String>>>,
    /// How many log lines reached it.
    logged: Arc<watch::Sender<usize>>,
}

impl Recorder {
    pub fn new(name: &'static str) -> Self {
        Recorder {
            name,
            questions: Arc::default(),
            logs: Arc::default(),
            logged: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Whether its log lines come to satisfy `cond` within `limit`: it is checked now and
    /// again as each line arrives.
    pub async fn logs_within(&self, limit: Duration, cond: impl Fn(&[String]) -> bool) -> bool {
        let mut logged = self.logged.subscribe();
        tokio::time::timeout(limit, async {
            while !cond(&self.logs()) {
                // The sender lives as long as `self`: `changed` does not fail.
                let _ = logged.changed().await;
            }
        })
        .await
        .is_ok()
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
        self.logged.send_modify(|n| *n += 1);
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

/// Hosts A and B each call `ask` at once, with this round's yields.
pub async fn ask_both(
    a: &Client,
    b: &Client,
    round: u64,
) -> (Result<String, String>, Result<String, String>) {
    tokio::join!(
        call(a, "ask", json!({"who": "A", "yields": spread(round, 1)})),
        call(b, "ask", json!({"who": "B", "yields": spread(round, 2)})),
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

/// A small deterministic spread of yields, so that rounds interleave differently.
pub fn spread(round: u64, salt: u64) -> u64 {
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
