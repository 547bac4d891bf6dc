//! `legacySession`: beside a 2026-07-28 upstream that serves both eras on one connection,
//! the gateway opens a legacy session, and legacy hosts' calls go there in their own era
//! while 2026 hosts' calls stay in 2026-07-28. Without the option, or where the upstream
//! refuses `initialize`, every call goes in 2026-07-28 as before.

use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::{NoArgs, Outcome, RequestContext, Server, ServerOptions, ToolRegistry};
use mcp_types::protocol::*;
use mcp_types::Revision;
use serde_json::json;

mod common;

/// An upstream serving `supported`, whose `era` tool says the revision its request came in.
fn upstream(supported: &[Revision], legacy_session: bool) -> UpstreamConfig {
    let mut tools = ToolRegistry::new();
    tools.tool(
        "era",
        "The revision this request came in.",
        |_: NoArgs, ctx: RequestContext| async move {
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(ctx.revision().as_str())],
                ..Default::default()
            }))
        },
    );
    let mut options = ServerOptions::default();
    options.supported = supported.to_vec();
    let server = Server::with_options(tools, options);
    UpstreamConfig::new("up", UpstreamTransport::InProcess(server)).legacy_session(legacy_session)
}

async fn gateway(up: UpstreamConfig) -> Aggregator {
    Aggregator::start(vec![up], AggregatorOptions::default())
        .await
        .expect("start")
}

async fn host(agg: &Aggregator, era: EraChoice) -> Client {
    common::host(agg, NoHandler, ClientOptions::default().era(era)).await
}

/// The revision the upstream saw `host`'s call in.
async fn era_seen(host: &Client) -> String {
    let r = host
        .request(
            "tools/call",
            json!({"name": "up__era", "arguments": {}}),
            &CallOptions::default(),
        )
        .await
        .expect("call");
    r["content"][0]["text"].as_str().expect("text").to_owned()
}

/// The revision `host`'s calls settle in once the gateway has done what it does at start
/// (the legacy session opens in the background): the first one that differs from
/// 2026-07-28, or 2026-07-28 if none does within a second.
async fn settled_era(host: &Client) -> String {
    let seen = std::sync::Mutex::new(String::new());
    mcp_examples::wait_until(Duration::from_secs(1), || async {
        let era = era_seen(host).await;
        let differs = era != Revision::V2026_07_28.as_str();
        *seen.lock().expect("lock") = era;
        differs
    })
    .await;
    seen.into_inner().expect("lock")
}

const LEGACY_HOST: EraChoice = EraChoice::Legacy(Revision::V2025_06_18);

#[tokio::test]
async fn legacy_hosts_calls_go_in_their_own_era_and_2026_hosts_in_theirs() {
    let agg = gateway(upstream(&Revision::ALL, true)).await;
    let legacy = host(&agg, LEGACY_HOST).await;
    let modern = host(&agg, EraChoice::Modern).await;
    assert_eq!(settled_era(&legacy).await, Revision::LATEST_LEGACY.as_str());
    assert_eq!(era_seen(&modern).await, Revision::V2026_07_28.as_str());
    // The shared connection still speaks 2026-07-28.
    let status = agg.status();
    assert_eq!(status[0].revision, Some(Revision::V2026_07_28));
    assert_eq!(era_seen(&legacy).await, Revision::LATEST_LEGACY.as_str());
}

#[tokio::test]
async fn without_the_option_legacy_hosts_calls_go_in_2026() {
    let agg = gateway(upstream(&Revision::ALL, false)).await;
    let legacy = host(&agg, LEGACY_HOST).await;
    assert_eq!(settled_era(&legacy).await, Revision::V2026_07_28.as_str());
}

#[tokio::test]
async fn an_upstream_that_refuses_initialize_keeps_serving_legacy_hosts_in_2026() {
    let agg = gateway(upstream(&[Revision::V2026_07_28], true)).await;
    let legacy = host(&agg, LEGACY_HOST).await;
    assert_eq!(settled_era(&legacy).await, Revision::V2026_07_28.as_str());
}

/// A host that answers the echo server's `greet` question.
struct Ada;

#[async_trait::async_trait]
impl mcp_client::ClientHandler for Ada {
    async fn elicit(&self, _: ElicitRequestParams) -> Result<ElicitResult, mcp_types::ErrorObject> {
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn a_question_asked_in_the_legacy_session_reaches_the_legacy_host_and_back() {
    let echo = Server::new(mcp_examples::echo_tools());
    let up = UpstreamConfig::new("echo", UpstreamTransport::InProcess(echo)).legacy_session(true);
    let agg = gateway(up).await;
    for era in [LEGACY_HOST, EraChoice::Modern] {
        let host = common::host(&agg, Ada, common::eliciting(era)).await;
        let r = host
            .call_tool("echo__greet", serde_json::Map::new())
            .await
            .expect("call");
        assert_eq!(common::text(&r.result), "Hello, Ada!", "{era:?} host");
        host.close().await;
    }
    agg.shutdown().await;
}
