//! The gateway's readiness: ready while every `required` upstream is connected; an
//! upstream that dies makes it not ready until it is started again, and the details
//! count the restart; an upstream not required never holds readiness back.

use std::time::Duration;

use mcp_client::StdioCommand;
use mcp_proxy::{Aggregator, AggregatorOptions, SessionMode, UpstreamConfig, UpstreamTransport};
use mcp_server::http::Health;
use serde_json::{json, Value};

mod common;
use common::python::python_upstream;

/// A stdio upstream whose `die` tool ends its process.
fn mortal(key: &str, required: bool) -> UpstreamConfig {
    let script = python_upstream(
        key,
        "",
        json!([{"name": "die", "inputSchema": {"type": "object"}}]),
        "sys.exit(3)",
    );
    UpstreamConfig::new(
        key,
        UpstreamTransport::Stdio(StdioCommand::new("python3", ["-c".to_owned(), script])),
    )
    .required(required)
    // One process, the one readiness watches (per host, `die` would end a host's own).
    .session(SessionMode::Shared)
}

fn upstream<'a>(detail: &'a Value, key: &str) -> &'a Value {
    detail["upstreams"]
        .as_array()
        .and_then(|a| a.iter().find(|u| u["key"] == key))
        .unwrap_or(&Value::Null)
}

/// Calls `name` from a host of its own; the upstream may die answering.
async fn call(agg: &Aggregator, name: &str) {
    let host = common::host(agg, mcp_client::NoHandler, Default::default()).await;
    let _ = host.call_tool(name, common::arguments(json!({}))).await;
    host.close().await;
}

/// Whether readiness becomes `want` within three seconds.
async fn until(agg: &Aggregator, want: bool) -> bool {
    mcp_examples::wait_until(Duration::from_secs(3), || {
        std::future::ready(agg.readiness().ready == want)
    })
    .await
}

#[tokio::test]
async fn readiness_follows_the_required_upstreams_through_a_death_and_a_restart() {
    let options = AggregatorOptions::default()
        .restart_backoff((Duration::from_millis(300), Duration::from_secs(1)));
    let agg = Aggregator::start(vec![mortal("core", true), mortal("extra", false)], options)
        .await
        .expect("start");
    let r = agg.readiness();
    assert!(r.ready, "{}", r.detail);
    let core = upstream(&r.detail, "core");
    assert_eq!(core["connected"], true);
    assert_eq!(core["required"], true);
    assert_eq!(core["revision"], "2025-06-18");
    assert_eq!(core["restarts"], 0);

    // The one not required dies: still ready.
    call(&agg, "extra__die").await;
    let gone = mcp_examples::wait_until(Duration::from_secs(3), || {
        let extra = upstream(&agg.readiness().detail, "extra").clone();
        std::future::ready(extra["connected"] == false || extra["restarts"] != 0)
    })
    .await;
    assert!(gone, "`extra` died: {}", agg.readiness().detail);
    let r = agg.readiness();
    assert!(r.ready, "{}", r.detail);

    // The required one dies: not ready until it is back, with one restart counted.
    call(&agg, "core__die").await;
    assert!(until(&agg, false).await, "not ready once `core` is gone");
    let core = upstream(&agg.readiness().detail, "core").clone();
    assert_eq!(core["connected"], false);
    assert!(core["lastError"].is_string(), "{core}");
    assert!(until(&agg, true).await, "ready again once `core` restarted");
    let r = agg.readiness();
    assert_eq!(upstream(&r.detail, "core")["restarts"], 1, "{}", r.detail);
    agg.shutdown().await;
}
