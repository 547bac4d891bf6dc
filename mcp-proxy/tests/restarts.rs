//! Every upstream session the gateway starts again is counted, in the status and in the
//! metrics: an upstream that exits at start, and a host's own session whose process died.

mod common;

use std::time::Duration;

use common::python::python_upstream;
use common::*;
use mcp_client::{EraChoice, StdioCommand};
use mcp_proxy::{
    Aggregator, AggregatorOptions, PerHostLimits, SessionMode, UpstreamConfig, UpstreamTransport,
};
use mcp_server::http::Metrics as _;
use mcp_types::Revision;
use serde_json::{json, Map};

/// `agg`'s `mcp_gateway_upstream_restarts_total` for `key`, as a scrape reads it.
fn scraped_restarts(agg: &Aggregator, key: &str) -> Option<u64> {
    let prefix = format!("mcp_gateway_upstream_restarts_total{{upstream=\"{key}\"}} ");
    agg.render()
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
}

/// Waits (bounded) until upstream 0 of `agg` has been restarted at least `want` times.
async fn restarted(agg: &Aggregator, want: u64) -> u64 {
    mcp_examples::wait_until(Duration::from_secs(20), || {
        std::future::ready(agg.status()[0].restarts >= want)
    })
    .await;
    agg.status()[0].restarts
}

#[tokio::test]
async fn an_upstream_that_exits_at_start_counts_each_start_again() {
    let marker = "mcp-proxy-restarts-test-exits";
    let dies = UpstreamConfig::new(
        "dies",
        UpstreamTransport::Stdio(StdioCommand::new(
            "sh",
            ["-c", "echo started >&2; exit 3", marker],
        )),
    );
    let options = AggregatorOptions::default()
        .restart_backoff((Duration::from_millis(10), Duration::from_millis(20)));
    let agg = Aggregator::start(vec![dies], options).await.expect("start");
    assert!(!agg.status()[0].connected);
    assert!(restarted(&agg, 3).await >= 3, "{:?}", agg.status());
    let scraped = scraped_restarts(&agg, "dies").expect("the metric is there");
    assert!(scraped >= 3, "the metrics count them too: {scraped}");
    agg.shutdown().await;
}

#[tokio::test]
async fn a_hosts_own_session_that_died_counts_a_restart() {
    // `die` ends the process of the session it is called in; `pid` answers its process id.
    let script = python_upstream(
        "mortal",
        "import os",
        json!([object_tool("pid"), object_tool("die")]),
        r#"if msg["params"]["name"] == "die":
    os._exit(1)
send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}})"#,
    );
    let mortal = UpstreamConfig::new(
        "mortal",
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c", &script])),
    )
    .session(SessionMode::PerHost(PerHostLimits::new(
        4,
        Duration::from_secs(60),
    )));
    let agg = Aggregator::start(vec![mortal], AggregatorOptions::default())
        .await
        .expect("start");
    // Declaring nothing, this host gets a session (a process) of its own.
    let h = host(
        &agg,
        mcp_client::NoHandler,
        eliciting(EraChoice::Legacy(Revision::V2025_06_18)),
    )
    .await;
    let first = h.call_tool("mortal__pid", Map::new()).await.expect("pid");
    assert_eq!(agg.status()[0].restarts, 0);
    let died = h.call_tool("mortal__die", Map::new()).await;
    assert!(
        died.map(|r| r.result.is_error == Some(true))
            .unwrap_or(true),
        "the call that killed its process failed"
    );
    let next = h
        .call_tool("mortal__pid", Map::new())
        .await
        .expect("pid again");
    assert_ne!(text(&first.result), text(&next.result), "a new process");
    let status = &agg.status()[0];
    assert_eq!(status.restarts, 1, "{status:?}");
    assert!(status.connected, "the shared connection never ended");
    assert_eq!(scraped_restarts(&agg, "mortal"), Some(1));
    h.close().await;
    agg.shutdown().await;
}
