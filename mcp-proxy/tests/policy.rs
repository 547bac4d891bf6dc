//! User policies in the Aggregator: tool filters, the confirmation gate for tools that may
//! be destructive (TOOL-17), and the dispatcher surface (TOOL-24), seen from real hosts
//! (our client, both eras) over in-memory connections.

use std::sync::{Arc, Mutex};

use mcp_client::{Client, ClientError, ClientHandler, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::policy::{AskHost, Confirm, Confirmation, GlobFilter, Surface, ToolFilter, Verdict};
use mcp_proxy::{Aggregator, AggregatorOptions, UpstreamConfig};
use mcp_types::protocol::*;
use mcp_types::{ErrorObject, Revision};
use serde_json::{json, Map, Value};

mod common;
use common::*;

/// Tools `plain` (no annotations), `reader` (read-only), `secret`; each says it ran.
fn shop_tools() -> Ran {
    Ran(vec![
        json!({"name": "plain", "inputSchema": {"type": "object"}}),
        json!({"name": "reader", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
        json!({"name": "secret", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
    ])
}

fn shop(trusted: bool, tools: impl ToolFilter) -> UpstreamConfig {
    in_process("shop", shop_tools())
        .trusted(trusted)
        .tools(tools)
}

async fn call(client: &Client, name: &str, args: Value) -> Result<CallToolResult, ClientError> {
    client
        .call_tool(name, arguments(args))
        .await
        .map(|c| c.result)
}

#[tokio::test]
async fn a_denied_tool_is_absent_and_its_call_refused_saying_so() {
    let filter = GlobFilter {
        allow: None,
        deny: vec!["sec*".into()],
    };
    let agg = Aggregator::start(vec![shop(false, filter)], Default::default())
        .await
        .expect("start");
    let client = host(&agg, NoHandler, Default::default()).await;
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["shop__plain", "shop__reader"]);
    match call(&client, "shop__secret", json!({})).await {
        Err(ClientError::Server(e)) => {
            assert_eq!(e.code, -32602);
            assert!(
                e.message.contains("not allowed by this gateway's policy"),
                "{}",
                e.message
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        text(
            &call(&client, "shop__plain", json!({}))
                .await
                .expect("allowed")
        ),
        "ran plain"
    );
    client.close().await;
    agg.shutdown().await;
}

/// A filter of the embedder's own: only tools the upstream says are read-only.
#[derive(Debug)]
struct ReadOnlyOnly;

impl ToolFilter for ReadOnlyOnly {
    fn permits(&self, tool: &Tool) -> bool {
        tool.is_read_only()
    }
}

#[tokio::test]
async fn a_custom_filter_decides_on_the_upstreams_own_definition() {
    // Hosts are shown none of its hints, yet the filter reads them: it is given the tool
    // as the upstream listed it.
    let shop = shop(false, ReadOnlyOnly).withhold_hints(true);
    let agg = Aggregator::start(vec![shop], Default::default())
        .await
        .expect("start");
    for era in [EraChoice::Legacy(Revision::V2025_06_18), EraChoice::Modern] {
        let options = ClientOptions::default().era(era);
        let client = host(&agg, NoHandler, options).await;
        let listed = client.list_tools().await.expect("list");
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["shop__reader", "shop__secret"], "{era:?}");
        assert!(
            listed.iter().all(|t| !t.is_read_only()),
            "{era:?}: hints shown"
        );
        match call(&client, "shop__plain", json!({})).await {
            Err(ClientError::Server(e)) => {
                assert_eq!(e.code, -32602);
                assert!(
                    e.message.contains("not allowed by this gateway's policy"),
                    "{era:?}: {}",
                    e.message
                );
            }
            other => panic!("{era:?}: expected a refusal, got {other:?}"),
        }
        let r = call(&client, "shop__reader", json!({})).await;
        assert_eq!(text(&r.expect("allowed")), "ran reader", "{era:?}");
        client.close().await;
    }
    agg.shutdown().await;
}

/// Records what it was asked about; refuses `plain` when told to.
struct Recorder(Arc<Mutex<Vec<String>>>, bool);

#[async_trait::async_trait]
impl Confirm for Recorder {
    async fn confirm(&self, call: &Confirmation<'_>) -> Verdict {
        if let Ok(mut v) = self.0.lock() {
            v.push(call.exposed.to_owned());
        }
        if self.1 {
            Verdict::Refuse("the operator said no".into())
        } else {
            Verdict::Allow
        }
    }
}

async fn gated(trusted: bool, refuse: bool) -> (Aggregator, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let options = AggregatorOptions::default().confirm(Arc::new(Recorder(asked.clone(), refuse)));
    let agg = Aggregator::start(vec![shop(trusted, GlobFilter::default())], options)
        .await
        .expect("start");
    (agg, asked)
}

#[tokio::test]
async fn unannotated_tools_trigger_the_confirmation_hook_and_read_only_ones_do_not() {
    let (agg, asked) = gated(true, false).await;
    let client = host(&agg, NoHandler, Default::default()).await;
    assert_eq!(
        text(
            &call(&client, "shop__reader", json!({}))
                .await
                .expect("call")
        ),
        "ran reader"
    );
    assert!(
        asked.lock().expect("lock").is_empty(),
        "a trusted read-only tool is not gated"
    );
    assert_eq!(
        text(&call(&client, "shop__plain", json!({})).await.expect("call")),
        "ran plain"
    );
    assert_eq!(*asked.lock().expect("lock"), ["shop__plain"]);
    client.close().await;
    agg.shutdown().await;

    // An untrusted upstream's readOnlyHint cannot vouch for its tool (TOOL-15).
    let (agg, asked) = gated(false, false).await;
    let client = host(&agg, NoHandler, Default::default()).await;
    call(&client, "shop__reader", json!({}))
        .await
        .expect("call");
    assert_eq!(*asked.lock().expect("lock"), ["shop__reader"]);
    client.close().await;
    agg.shutdown().await;

    let (agg, _) = gated(true, true).await;
    let client = host(&agg, NoHandler, Default::default()).await;
    let r = call(&client, "shop__plain", json!({})).await.expect("call");
    assert!(r.is_error());
    assert!(text(&r).contains("the operator said no"), "{}", text(&r));
    // A 2026 host that sends answers nobody asked for does not get past a refusal.
    let modern = host(
        &agg,
        NoHandler,
        ClientOptions::default().era(EraChoice::Modern),
    )
    .await;
    let params = json!({"name": "shop__plain", "arguments": {}, "inputResponses": {"x": {}}});
    let r = modern
        .request("tools/call", params, &Default::default())
        .await
        .expect("a result");
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(r.to_string().contains("the operator said no"), "{r}");
    client.close().await;
    agg.shutdown().await;
}

/// Answers the gateway's confirmation form.
struct User(bool);

#[async_trait::async_trait]
impl ClientHandler for User {
    async fn elicit(&self, p: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert!(p.message.contains("plain"), "{}", p.message);
        let mut content = Map::new();
        content.insert("confirm".into(), json!(self.0));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn confirm_destructive_asks_the_hosts_user_in_either_era() {
    let options = AggregatorOptions::default().confirm(Arc::new(AskHost));
    let agg = Aggregator::start(vec![shop(true, GlobFilter::default())], options)
        .await
        .expect("start");
    for era in [EraChoice::Modern, EraChoice::Legacy(Revision::V2025_06_18)] {
        let yes = host(&agg, User(true), eliciting(era)).await;
        assert_eq!(
            text(&call(&yes, "shop__plain", json!({})).await.expect("call")),
            "ran plain",
            "{era:?}"
        );
        yes.close().await;
        let no = host(&agg, User(false), eliciting(era)).await;
        let r = call(&no, "shop__plain", json!({})).await.expect("call");
        assert!(
            r.is_error() && text(&r).contains("declined"),
            "{era:?}: {}",
            text(&r)
        );
        no.close().await;
    }
    let mute = host(&agg, NoHandler, Default::default()).await;
    let r = call(&mute, "shop__plain", json!({})).await.expect("call");
    assert!(
        r.is_error() && text(&r).contains("cannot ask"),
        "{}",
        text(&r)
    );
    assert_eq!(
        text(&call(&mute, "shop__reader", json!({})).await.expect("call")),
        "ran reader"
    );
    mute.close().await;
    agg.shutdown().await;
}

#[tokio::test]
async fn the_dispatcher_surface_lists_four_tools_and_reaches_every_upstream_tool() {
    let options = AggregatorOptions::default().surface(Surface::Dispatcher);
    let filter = GlobFilter {
        allow: None,
        deny: vec!["secret".into()],
    };
    let notes = in_process("notes", mcp_examples::notes_tools());
    let agg = Aggregator::start(vec![notes, shop(true, filter)], options)
        .await
        .expect("start");
    let client = host(&agg, NoHandler, Default::default()).await;
    let listed = client.list_tools().await.expect("list");
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["search_tools", "list_tools", "describe_tool", "call_tool"]
    );
    assert!(listed[..3].iter().all(|t| t.is_read_only()));
    assert!(
        listed[3].is_destructive(),
        "call_tool can reach destructive tools"
    );

    // A search finds what the policy lets through, never what it denies.
    let found: Value = serde_json::from_str(&text(
        &call(&client, "search_tools", json!({"query": "reader secret"}))
            .await
            .expect("search"),
    ))
    .expect("JSON");
    let found: Vec<&str> = found["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(found.first(), Some(&"shop__reader"), "{found:?}");
    assert!(!found.contains(&"shop__secret"), "{found:?}");

    let catalog: Value = serde_json::from_str(&text(
        &call(&client, "list_tools", json!({})).await.expect("list"),
    ))
    .expect("JSON");
    let shop_tools: Vec<&str> = catalog["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .find(|n| n["namespace"] == "shop")
        .expect("shop")["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(shop_tools, ["shop__plain", "shop__reader"]);
    assert!(catalog["namespaces"]
        .as_array()
        .expect("array")
        .iter()
        .any(|n| n["namespace"] == "notes"));

    let described: Value = serde_json::from_str(&text(
        &call(&client, "describe_tool", json!({"name": "shop__reader"}))
            .await
            .expect("describe"),
    ))
    .expect("JSON");
    assert_eq!(described["annotations"]["readOnlyHint"], true);

    let r = call(
        &client,
        "call_tool",
        json!({"name": "shop__plain", "arguments": {}}),
    )
    .await
    .expect("call");
    assert_eq!(text(&r), "ran plain");
    let r = call(&client, "call_tool", json!({"name": "shop__secret"}))
        .await
        .expect("call");
    assert!(
        r.is_error() && text(&r).contains("not allowed"),
        "{}",
        text(&r)
    );
    let r = call(&client, "call_tool", json!({"name": "nope__x"}))
        .await
        .expect("call");
    assert!(
        r.is_error() && text(&r).contains("Unknown tool"),
        "{}",
        text(&r)
    );
    client.close().await;
    agg.shutdown().await;
}
