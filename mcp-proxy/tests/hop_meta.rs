//! The `_meta` an upstream hears is written once per host and kept while that host sends
//! the same: what changes between calls (another host, a new log level, a different
//! envelope, a key of the host's own) must reach the upstream on the very next call.

use mcp_client::{CallOptions, Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig, UpstreamTransport};
use mcp_server::{NoArgs, Outcome, RequestContext, Server, ServerHandler, ToolRegistry};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Value};

mod common;

/// A 2026-07-28 upstream whose `envelope` tool says what its request declared.
async fn gateway() -> Aggregator {
    let mut tools = ToolRegistry::new();
    tools.tool(
        "envelope",
        "The capabilities and log level this request declared.",
        |_: NoArgs, ctx: RequestContext| async move {
            let seen = json!({
                "capabilities": serde_json::from_str::<Value>(ctx.client_capabilities_raw().get())
                    .unwrap_or(Value::Null),
                "level": ctx.log_level(),
            });
            Ok(Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(seen.to_string())],
                ..Default::default()
            }))
        },
    );
    let up = UpstreamConfig::new("up", UpstreamTransport::InProcess(Server::new(tools)))
        .revision(Revision::V2026_07_28);
    Aggregator::start(vec![up], AggregatorOptions::default())
        .await
        .expect("start")
}

/// A host of `era` that declares the experimental capability `name`.
async fn host(agg: &Aggregator, era: EraChoice, name: &str) -> Client {
    let capabilities = ClientCapabilities {
        experimental: Some(serde_json::from_value(json!({ name: {} })).expect("object")),
        ..Default::default()
    };
    let options = ClientOptions::default().era(era).capabilities(capabilities);
    common::host(agg, NoHandler, options).await
}

/// What `tool`, called with `meta` as the request's own `_meta`, answers as JSON text.
async fn answer(host: &Client, tool: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    let r = host
        .request("tools/call", params, &CallOptions::default())
        .await
        .expect("call");
    let text = r["content"][0]["text"].as_str().expect("a text block");
    serde_json::from_str(text).expect("json")
}

async fn seen(host: &Client, meta: Option<Value>) -> Value {
    answer(host, "up__envelope", meta).await
}

const LEGACY: EraChoice = EraChoice::Legacy(Revision::V2025_06_18);

#[tokio::test]
async fn legacy_hosts_taking_turns_each_declare_their_own_capabilities() {
    let agg = gateway().await;
    let (a, b) = (host(&agg, LEGACY, "a").await, host(&agg, LEGACY, "b").await);
    for _ in 0..2 {
        for (host, name) in [(&a, "a"), (&b, "b"), (&b, "b"), (&a, "a")] {
            let caps = &seen(host, None).await["capabilities"];
            assert!(
                caps["experimental"][name].is_object(),
                "host {name}: {caps}"
            );
            assert_eq!(caps["experimental"].as_object().map(|o| o.len()), Some(1));
        }
    }
}

#[tokio::test]
async fn a_legacy_hosts_new_log_level_reaches_the_next_call() {
    let agg = gateway().await;
    let a = host(&agg, LEGACY, "a").await;
    assert_eq!(seen(&a, None).await["level"], Value::Null);
    for level in ["debug", "error", "debug"] {
        a.request(
            "logging/setLevel",
            json!({ "level": level }),
            &CallOptions::default(),
        )
        .await
        .expect("setLevel");
        assert_eq!(seen(&a, None).await["level"], level);
        assert_eq!(seen(&a, None).await["level"], level);
    }
}

#[tokio::test]
async fn a_2026_hosts_changed_meta_reaches_the_next_call() {
    let agg = gateway().await;
    let a = host(&agg, EraChoice::Modern, "a").await;
    let b = host(&agg, EraChoice::Modern, "b").await;
    for level in ["info", "info", "error", "info"] {
        let meta = json!({ "io.modelcontextprotocol/logLevel": level });
        let got = seen(&a, Some(meta.clone())).await;
        assert_eq!(got["level"], level);
        assert!(
            got["capabilities"]["experimental"]["a"].is_object(),
            "{got}"
        );
        let got = seen(&b, Some(meta)).await;
        assert!(
            got["capabilities"]["experimental"]["b"].is_object(),
            "{got}"
        );
    }
    assert_eq!(seen(&a, None).await["level"], Value::Null);
}

/// A 2025-06-18 upstream whose `meta` tool answers with the `_meta` its request carried
/// (`null` for none), as JSON text.
struct MetaEcho;

#[async_trait::async_trait]
impl ServerHandler for MetaEcho {
    fn capabilities(&self) -> ServerCapabilities {
        common::tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        common::listing([common::object_tool("meta")])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        common::text_outcome(serde_json::to_string(&p.meta).expect("meta"))
    }
}

async fn heard(host: &Client, meta: Value) -> Value {
    answer(host, "up__meta", Some(meta)).await
}

#[tokio::test]
async fn a_legacy_upstream_hears_each_hosts_own_meta_keys_and_no_hop_keys() {
    let up = common::in_process("up", MetaEcho).revision(Revision::V2025_06_18);
    let agg = Aggregator::start(vec![up], AggregatorOptions::default())
        .await
        .expect("start");
    let modern = host(&agg, EraChoice::Modern, "m").await;
    let legacy = host(&agg, LEGACY, "l").await;
    let level = json!({ "io.modelcontextprotocol/logLevel": "info" });
    // Repeats and alternations: a kept rewrite must never answer for another text.
    for _ in 0..2 {
        for n in [1, 1, 2] {
            let own = json!({ "x": n });
            assert_eq!(heard(&modern, own.clone()).await, own);
            assert_eq!(heard(&legacy, own.clone()).await, own);
        }
        for only_hop_keys in [json!({}), level.clone()] {
            let heard = heard(&modern, only_hop_keys).await;
            assert!(heard.as_object().is_none_or(|o| o.is_empty()), "{heard}");
        }
        assert_eq!(
            heard(&legacy, json!({ "y": [1] })).await,
            json!({ "y": [1] })
        );
    }
}
