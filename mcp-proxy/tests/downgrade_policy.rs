//! A `DowngradePolicy` given in `AggregatorOptions`: the gateway's own translations (a
//! host's call toward an older upstream) use it, and so does the server
//! `Aggregator::server` makes, unless its options give one of their own.

use std::sync::Arc;

use mcp_client::{Client, ClientOptions, EraChoice, NoHandler};
use mcp_proxy::{Aggregator, AggregatorOptions};
use mcp_revisions::shapes::ObjectShape;
use mcp_revisions::DowngradePolicy;
use mcp_server::{Outcome, RequestContext, ServerHandler, ServerOptions};
use mcp_types::protocol::*;
use mcp_types::raw::RawObject;
use mcp_types::{ErrorObject, Revision};
use serde_json::json;
use serde_json::value::RawValue;

mod common;
use common::*;

/// `link` answers a resource link (which 2025-03-26 cannot carry); `echo` its arguments.
struct Shop;

#[async_trait::async_trait]
impl ServerHandler for Shop {
    fn capabilities(&self) -> ServerCapabilities {
        tools_only()
    }
    async fn list_tools(
        &self,
        _: &RequestContext,
        _: PaginatedRequestParams,
    ) -> Result<ListToolsResult, ErrorObject> {
        listing([object_tool("link"), object_tool("echo")])
    }
    async fn call_tool(
        &self,
        _: &RequestContext,
        p: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        if p.name == "echo" {
            return text_outcome(json!(p.arguments).to_string());
        }
        let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a"});
        Ok(Outcome::Complete(CallToolResult {
            content: vec![serde_json::from_value(link).expect("a block")],
            ..Default::default()
        }))
    }
}

/// Shows a link as `<label> <uri>`; with `stamp`, also marks the arguments of a call that
/// goes to an older revision (an `adjust` needs the whole walk, so it says so).
struct Labelled {
    label: &'static str,
    stamp: bool,
}

impl DowngradePolicy for Labelled {
    fn convert_content(
        &self,
        block: &RawObject<'_>,
        _allowed: &[&str],
        _from: Revision,
        _to: Revision,
    ) -> Vec<Box<RawValue>> {
        let uri = block.get_str("uri").unwrap_or_default();
        let text = json!({"type": "text", "text": format!("{} {uri}", self.label)});
        vec![serde_json::value::to_raw_value(&text).expect("a block")]
    }

    fn adjust(
        &self,
        shape: &ObjectShape,
        object: &mut RawObject<'_>,
        _from: Revision,
        _to: Revision,
    ) -> bool {
        if !self.stamp || shape.name != "params tools/call" {
            return false;
        }
        object.insert(
            "arguments",
            mcp_types::raw::encode(&json!({"by": self.label})),
        );
        true
    }

    fn adjusts_objects(&self) -> bool {
        self.stamp
    }
}

fn labelled(label: &'static str, stamp: bool) -> Arc<dyn DowngradePolicy> {
    Arc::new(Labelled { label, stamp })
}

/// A host of `era` on the server `agg.server(options)` makes.
async fn host_of(agg: &Aggregator, options: ServerOptions, era: EraChoice) -> Client {
    let (a, b) = mcp_types::transport::memory_pair(16);
    let server = agg.server(options);
    tokio::spawn(async move { server.serve(b).await });
    Client::connect(a, NoHandler, ClientOptions::default().era(era))
        .await
        .expect("host connects")
}

/// What a 2025-03-26 host reads of `link`, through a gateway with `gateway`'s policy and a
/// server with `server`'s.
async fn link_seen(
    gateway: Option<Arc<dyn DowngradePolicy>>,
    server: Option<Arc<dyn DowngradePolicy>>,
) -> String {
    let mut options = AggregatorOptions::default();
    options.downgrade_policy = gateway;
    let agg = Aggregator::start(vec![in_process("shop", Shop)], options)
        .await
        .expect("start");
    let mut server_options = ServerOptions::default();
    server_options.downgrade_policy = server;
    let era = EraChoice::Legacy(Revision::V2025_03_26);
    let host = host_of(&agg, server_options, era).await;
    let r = host.call_tool("shop__link", Default::default()).await;
    let seen = text(&r.expect("call").result);
    host.close().await;
    agg.shutdown().await;
    seen
}

#[tokio::test]
async fn answers_reach_an_older_host_by_the_gateways_policy_unless_the_server_has_one() {
    assert_eq!(link_seen(None, None).await, "Resource link: a <file:///a>");
    let gateway = Some(labelled("gateway", false));
    assert_eq!(link_seen(gateway.clone(), None).await, "gateway file:///a");
    let server = Some(labelled("server", false));
    assert_eq!(link_seen(gateway, server).await, "server file:///a");
}

#[tokio::test]
async fn a_call_to_an_older_upstream_is_translated_by_the_gateways_policy() {
    let shop = in_process("shop", Shop).revision(Revision::V2025_06_18);
    let options = AggregatorOptions::default().downgrade_policy(labelled("gateway", true));
    let agg = Aggregator::start(vec![shop], options).await.expect("start");
    let host = host_of(&agg, ServerOptions::default(), EraChoice::Modern).await;
    let r = host
        .call_tool("shop__echo", arguments(json!({"x": 1})))
        .await
        .expect("call");
    assert_eq!(text(&r.result), r#"{"by":"gateway"}"#);
    host.close().await;
    agg.shutdown().await;
}
