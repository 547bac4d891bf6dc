//! List changes as hosts hear them: a flood from an upstream is coalesced, only the lists
//! that changed are announced, and an upstream that restarts keeps its tools meanwhile.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use mcp_client::NoHandler;
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::{ListChanged, Outcome, RequestContext, Server, ServerHandler};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::Map;

/// Lists `tool-{n}` for its current `n`.
#[derive(Clone, Default)]
struct Counting {
    n: Arc<AtomicUsize>,
}

#[async_trait]
impl ServerHandler for Counting {
    fn capabilities(&self) -> ServerCapabilities {
        changing_tools()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        let n = self.n.load(Ordering::SeqCst);
        listing([object_tool(format!("tool-{n}"))])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        text_outcome(p.name)
    }
}

/// Counts the list changes the gateway announces to its hosts, by list (what its server
/// sends every host, each in its own era).
#[derive(Clone)]
struct Heard {
    tools: Arc<tokio::sync::watch::Sender<usize>>,
    other: Arc<AtomicUsize>,
}

impl Heard {
    /// Tools list changes heard so far.
    fn tools(&self) -> usize {
        *self.tools.borrow()
    }

    /// Whether `n` tools list changes have been heard within `limit` (on paused time, a
    /// virtual limit: it ends once every task is idle that long).
    async fn tools_reach(&self, n: usize, limit: Duration) -> bool {
        let mut said = self.tools.subscribe();
        let reached = tokio::time::timeout(limit, said.wait_for(|t| *t >= n)).await;
        matches!(reached, Ok(Ok(_)))
    }
}

fn listen(agg: &Aggregator) -> Heard {
    let heard = Heard {
        tools: Arc::new(tokio::sync::watch::Sender::new(0)),
        other: Arc::default(),
    };
    let h = heard.clone();
    agg.on_list_changed(move |what| match what {
        ListChanged::Tools => h.tools.send_modify(|n| *n += 1),
        _ => {
            h.other.fetch_add(1, Ordering::SeqCst);
        }
    });
    heard
}

async fn flood(upstream_revision: Option<Revision>) {
    let up = Counting::default();
    let server = Server::new(up.clone());
    let mut config = UpstreamConfig::new("up", UpstreamTransport::InProcess(server.clone()));
    if let Some(r) = upstream_revision {
        config = config.revision(r);
    }
    let agg = Aggregator::start(vec![config], AggregatorOptions::default())
        .await
        .expect("start");
    let legacy = host(&agg, NoHandler, Default::default()).await;
    let heard = listen(&agg);
    assert_eq!(tool_names(&legacy).await, ["up__tool-0"]);
    // Twenty a second for five seconds, each a real change.
    for n in 1..=100 {
        up.n.store(n, Ordering::SeqCst);
        server.notify_list_changed(ListChanged::Tools);
        // The flood's pace is the scenario; on paused time the 50 ms are virtual.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The last change is followed within the coalescing interval.
    let last = mcp_examples::wait_until(Duration::from_secs(2), || async {
        tool_names(&legacy).await == ["up__tool-100"]
    })
    .await;
    assert!(
        last,
        "ends on the final list: {:?}",
        tool_names(&legacy).await
    );
    // And no more than 15 announcements, then or in the (virtual) two seconds after.
    let too_many = heard.tools_reach(16, Duration::from_secs(2)).await;
    let tools = heard.tools();
    assert!(
        !too_many && (1..=15).contains(&tools),
        "{upstream_revision:?}: {tools} tools list changes heard for 100 sent"
    );
    assert_eq!(
        heard.other.load(Ordering::SeqCst),
        0,
        "no prompts or resources list change: those lists did not change"
    );
    agg.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_list_changes_from_a_2026_upstream_is_coalesced() {
    flood(None).await;
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_list_changes_from_a_legacy_upstream_is_coalesced() {
    flood(Some(Revision::V2025_11_25)).await;
}

#[tokio::test(start_paused = true)]
async fn a_tools_list_change_is_announced_as_that_list_only() {
    let up = Counting::default();
    let server = Server::new(up.clone());
    let config = UpstreamConfig::new("up", UpstreamTransport::InProcess(server.clone()))
        .revision(Revision::V2025_11_25);
    let agg = Aggregator::start(vec![config], AggregatorOptions::default())
        .await
        .expect("start");
    let legacy = host(&agg, NoHandler, Default::default()).await;
    let heard = listen(&agg);
    // Said, though the list reads the same: passed on, as a 2026 listen stream must hear.
    server.notify_list_changed(ListChanged::Tools);
    // Each announcement within two (virtual) seconds, and no other in the two after.
    let two = Duration::from_secs(2);
    assert!(heard.tools_reach(1, two).await, "the change was announced");
    assert!(!heard.tools_reach(2, two).await, "announced once");
    up.n.store(1, Ordering::SeqCst);
    server.notify_list_changed(ListChanged::Tools);
    assert!(heard.tools_reach(2, two).await, "the change was announced");
    assert!(!heard.tools_reach(3, two).await, "one per change said");
    assert_eq!(tool_names(&legacy).await, ["up__tool-1"]);
    assert_eq!(heard.tools(), 2, "one per change said");
    assert_eq!(
        heard.other.load(Ordering::SeqCst),
        0,
        "prompts and resources were not"
    );
    let r = legacy
        .call_tool("up__tool-1", Map::new())
        .await
        .expect("call");
    assert_eq!(text(&r.result), "tool-1");
    agg.shutdown().await;
}

#[tokio::test]
async fn an_upstream_restarting_keeps_its_tools_and_says_so() {
    let script = common::python::python_upstream(
        "mortal",
        "import os",
        serde_json::json!([object_tool("pid"), object_tool("die")]),
        r#"if msg["params"]["name"] == "die":
    os._exit(1)
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})"#,
    );
    let mortal = UpstreamConfig::new(
        "mortal",
        UpstreamTransport::Stdio(mcp_client::StdioCommand::new("python3", ["-c", &script])),
    )
    .session(mcp_proxy::SessionMode::Shared);
    // A restart slow enough for a call to land in the middle of it.
    let options = AggregatorOptions::default()
        .restart_backoff((Duration::from_millis(1500), Duration::from_millis(1500)));
    let agg = Aggregator::start(vec![mortal], options)
        .await
        .expect("start");
    let heard = listen(&agg);
    let h = host(&agg, NoHandler, Default::default()).await;
    let first = h.call_tool("mortal__pid", Map::new()).await.expect("pid");
    let _ = h.call_tool("mortal__die", Map::new()).await;
    // Its connection ended; it is not back yet.
    mcp_examples::wait_until(Duration::from_secs(5), || {
        std::future::ready(!agg.status()[0].connected)
    })
    .await;
    assert!(
        !agg.status()[0].connected,
        "the upstream's connection ended"
    );
    assert_eq!(
        tool_names(&h).await,
        ["mortal__die", "mortal__pid"],
        "its tools stay listed while it restarts"
    );
    let during = h.call_tool("mortal__pid", Map::new()).await;
    let during = match during {
        Ok(r) => text(&r.result),
        Err(e) => e.to_string(),
    };
    assert!(!during.contains("Unknown tool"), "{during}");
    assert!(during.contains("restarting"), "{during}");
    // Back: the same tools, and nobody was told a list changed.
    mcp_examples::wait_until(Duration::from_secs(20), || {
        std::future::ready(agg.status()[0].connected)
    })
    .await;
    let next = h.call_tool("mortal__pid", Map::new()).await.expect("pid");
    assert_ne!(text(&first.result), text(&next.result), "a new process");
    assert_eq!(heard.tools(), 0, "no tools list change");
    assert_eq!(heard.other.load(Ordering::SeqCst), 0);
    h.close().await;
    agg.shutdown().await;
}

/// A legacy stdio upstream whose lists differ per session (per process): `grow` adds the
/// tool `extra` and the prompt `more` to its own lists and says so on its own connection;
/// every call answers with the tool's name and the process id.
fn growing_script() -> String {
    common::python::python_upstream(
        "grow",
        r#"import os
CAPS = {"tools": {"listChanged": True}, "prompts": {"listChanged": True}}
PROMPTS = []"#,
        serde_json::json!([object_tool("grow"), object_tool("who")]),
        r#"name = msg["params"]["name"]
if name == "grow":
    TOOLS.append({"name": "extra", "inputSchema": {"type": "object"}})
    PROMPTS.append({"name": "more"})
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"{name} {os.getpid()}"}]}})"#,
    )
}

async fn prompt_names(host: &mcp_client::Client) -> Vec<String> {
    let prompts = host.list_prompts().await.expect("prompts/list");
    prompts.into_iter().map(|p| p.name).collect()
}

/// A host of `options` on `server`, in memory.
async fn host_on(server: &Server, options: mcp_client::ClientOptions) -> mcp_client::Client {
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = server.clone();
    tokio::spawn(async move { server.serve(b).await });
    mcp_client::Client::connect(a, NoHandler, options)
        .await
        .expect("host connects")
}

async fn answer(host: &mcp_client::Client, tool: &str) -> Result<String, String> {
    match host.call_tool(tool, Map::new()).await {
        Ok(r) if r.result.is_error() => Err(text(&r.result)),
        Ok(r) => Ok(text(&r.result)),
        Err(e) => Err(e.to_string()),
    }
}

/// Waits for a tools list change to reach a host.
async fn hears_tools_changed(
    host: &mcp_client::Client,
    notes: &mut tokio::sync::broadcast::Receiver<TypedNotification>,
) {
    let heard = async {
        loop {
            match notes.recv().await {
                Ok(TypedNotification::Bare(_)) if host.take_list_changes().tools => return,
                Ok(_) => {}
                Err(e) => panic!("notifications ended: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), heard)
        .await
        .expect("a tools list change within 10 s");
}

#[tokio::test]
async fn a_host_with_a_session_of_its_own_sees_and_hears_that_sessions_lists() {
    let grow = UpstreamConfig::new(
        "grow",
        UpstreamTransport::Stdio(mcp_client::StdioCommand::new(
            "python3",
            ["-c", &growing_script()],
        )),
    )
    .session(mcp_proxy::SessionMode::PerHost(Default::default()));
    let agg = Aggregator::start(vec![grow], AggregatorOptions::default())
        .await
        .expect("start");
    let server = agg.server(Default::default());
    let legacy = || eliciting(mcp_client::EraChoice::Legacy(Revision::V2025_06_18));
    // A and B each have a session (a process) of their own; C, declaring everything the
    // gateway relays, takes the connection opened at start, which lists the catalog.
    let (a, b) = (
        host_on(&server, legacy()).await,
        host_on(&server, legacy()).await,
    );
    let c = host_on(
        &server,
        answering_all(mcp_client::EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let (mut a_notes, mut b_notes, mut c_notes) =
        (a.notifications(), b.notifications(), c.notifications());
    let pid = |s: String| s.rsplit(' ').next().map(str::to_owned).unwrap_or_default();
    let b_pid = pid(answer(&b, "grow__who").await.expect("B's own session"));

    // A's call makes A's session add a tool: A hears of it, lists it and calls it there.
    let a_pid = pid(answer(&a, "grow__grow").await.expect("A grows"));
    assert_ne!(a_pid, b_pid, "a process each");
    hears_tools_changed(&a, &mut a_notes).await;
    assert!(tool_names(&a).await.contains(&"grow__extra".to_owned()));
    assert_eq!(prompt_names(&a).await, ["grow__more"], "its prompts too");
    assert_eq!(
        answer(&a, "grow__extra").await,
        Ok(format!("extra {a_pid}"))
    );
    // B and C see only what their own sessions offer.
    assert!(!tool_names(&b).await.contains(&"grow__extra".to_owned()));
    assert!(!tool_names(&c).await.contains(&"grow__extra".to_owned()));
    assert!(prompt_names(&b).await.is_empty() && prompt_names(&c).await.is_empty());
    let unknown = answer(&b, "grow__extra").await;
    assert!(
        unknown.as_ref().is_err_and(|e| e.contains("Unknown tool")),
        "{unknown:?}"
    );

    // C's call grows the connection the catalog is listed from: C hears of it and lists
    // `extra`; B, which sees its own session's listing, neither hears of it nor sees it.
    let c_says = answer(&c, "grow__grow").await.expect("C grows");
    assert_ne!(pid(c_says), b_pid);
    hears_tools_changed(&c, &mut c_notes).await;
    assert!(tool_names(&c).await.contains(&"grow__extra".to_owned()));
    assert!(!tool_names(&b).await.contains(&"grow__extra".to_owned()));
    assert_eq!(prompt_names(&c).await, ["grow__more"]);
    assert!(prompt_names(&b).await.is_empty());
    assert!(
        !b.take_list_changes().tools,
        "B heard of another session's tools"
    );
    assert!(
        matches!(
            b_notes.try_recv(),
            Err(tokio::sync::broadcast::error::TryRecvError::Empty)
        ),
        "B heard nothing"
    );
    for h in [a, b, c] {
        h.close().await;
    }
    agg.shutdown().await;
}
