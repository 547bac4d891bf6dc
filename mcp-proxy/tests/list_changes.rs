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
#[derive(Default, Clone)]
struct Heard {
    tools: Arc<AtomicUsize>,
    other: Arc<AtomicUsize>,
}

fn listen(agg: &Aggregator) -> Heard {
    let heard = Heard::default();
    let h = heard.clone();
    agg.on_list_changed(move |what| {
        let count = match what {
            ListChanged::Tools => &h.tools,
            _ => &h.other,
        };
        count.fetch_add(1, Ordering::SeqCst);
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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The last change is followed within the coalescing interval.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        tool_names(&legacy).await,
        ["up__tool-100"],
        "ends on the final list"
    );
    let tools = heard.tools.load(Ordering::SeqCst);
    assert!(
        (1..=15).contains(&tools),
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
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(heard.tools.load(Ordering::SeqCst), 1);
    up.n.store(1, Ordering::SeqCst);
    server.notify_list_changed(ListChanged::Tools);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(tool_names(&legacy).await, ["up__tool-1"]);
    assert_eq!(heard.tools.load(Ordering::SeqCst), 2, "one per change said");
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while agg.status()[0].connected && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !agg.status()[0].connected && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let next = h.call_tool("mortal__pid", Map::new()).await.expect("pid");
    assert_ne!(text(&first.result), text(&next.result), "a new process");
    assert_eq!(
        heard.tools.load(Ordering::SeqCst),
        0,
        "no tools list change"
    );
    assert_eq!(heard.other.load(Ordering::SeqCst), 0);
    h.close().await;
    agg.shutdown().await;
}
